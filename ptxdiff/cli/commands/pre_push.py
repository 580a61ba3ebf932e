"""`ptxdiff pre-push REMOTE URL`: what the pre-push hook runs, with git's ref lines on stdin."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ptxdiff.cli.common import layout, progress, tritons
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.compare.engine import Engine
from ptxdiff.git.repo import Repo
from ptxdiff.gitdiff import prepush
from ptxdiff.permissions import from_user
from ptxdiff.user_settings import load


@dataclass(frozen=True)
class Options:
    """`ptxdiff pre-push`'s command line: what git passes the hook, and -j."""

    compiling: Compiling
    shown: Shown
    remote: str = "origin"
    url: str = ""

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)

    def factory(repo: Repo) -> Engine:
        return Engine(repo, jobs=opts.compiling.jobs, progress=progress(opts.shown), permissions=from_user(load()),
                      tritons=tritons(opts.compiling, repo, gate=True))   # the base side's pin compiles both sides
    stdin = sys.stdin
    text = "" if stdin is None or stdin.isatty() else \
        getattr(stdin, "buffer", stdin).read()
    if isinstance(text, bytes):   # ref names are bytes to git; keep them as file names are kept
        text = text.decode("utf-8", "surrogateescape")
    return prepush.run(opts.remote, opts.url, text, factory, layout=layout(opts.shown, sys.stderr))
