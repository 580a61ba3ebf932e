"""`ptxdiff uninstall`: undo exactly what install did (see git/install.py)."""

from __future__ import annotations

import argparse

from ptxdiff.git import install
from ptxdiff.git.repo import Repo


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    repo = None if args.global_ else Repo(args.repo)
    return install.uninstall(repo, args.global_)
