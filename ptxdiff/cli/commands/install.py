"""`ptxdiff install`: the git diff driver, the attributes and the pre-push hook (see git/install.py)."""

from __future__ import annotations

import argparse

from ptxdiff.git import install
from ptxdiff.git.repo import Repo


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    repo = None if args.global_ else Repo(args.repo)
    return install.install(repo, args.global_, args.attributes, args.dry_run)
