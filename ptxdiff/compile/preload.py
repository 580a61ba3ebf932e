"""What the compile workers' forkserver does once, before it forks any worker.

Imported only by the forkserver (pool.py), never by the process that runs ptxdiff, so the diff
driver's warm path still imports no triton. Every worker is forked from this state: triton and
the modules a first compile would import are loaded, and triton is settled (`invoke.settle`). The
forkserver dies with ptxdiff (and its workers with it: each dies with its parent).
"""

import triton
import triton.backends.nvidia.compiler
import triton.compiler.code_generator  # noqa: F401

from ptxdiff.compile import invoke
from ptxdiff.compile import worker as compiler
from ptxdiff.sandbox import enter  # noqa: F401  (what every worker runs first: loaded once here)

invoke.settle()
compiler.die_with_parent()
