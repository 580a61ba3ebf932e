"""`ptxdiff install`: the git diff driver, the attributes and the pre-push hook (see gitdiff/install.py)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ptxdiff.cli.options import unpacked
from ptxdiff.git.repo import Repo
from ptxdiff.gitdiff import install


@dataclass(frozen=True)
class Options:
    """`ptxdiff install`'s command line."""

    global_: bool = False        # --global: for every repository of this user
    attributes: str = "info"     # info: .git/info/attributes; commit: .gitattributes
    dry_run: bool = False
    repo: str = "."

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args)


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    repo = None if opts.global_ else Repo(opts.repo)
    return install.install(repo, opts.global_, opts.attributes, opts.dry_run)
