"""The diff driver's old import path: shims installed before the package layout kept it."""
from ptxdiff.gitdiff.driver import main as main
