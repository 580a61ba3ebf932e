"""`ptxdiff pre-push REMOTE URL`: what the pre-push hook runs, with git's ref lines on stdin."""

from __future__ import annotations

import argparse
import sys

from ptxdiff.cli.common import layout, progress, tritons
from ptxdiff.compare.engine import Engine
from ptxdiff.gate import prepush
from ptxdiff.git.repo import Repo
from ptxdiff.settings import load
from ptxdiff.trust import from_user


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    def factory(repo: Repo) -> Engine:
        return Engine(repo, jobs=args.jobs, progress=progress(args), permissions=from_user(load()),
                      tritons=tritons(args, repo, gate=True))   # the base side's pin compiles both sides
    stdin = sys.stdin
    text = "" if stdin is None or stdin.isatty() else \
        getattr(stdin, "buffer", stdin).read()
    if isinstance(text, bytes):   # ref names are bytes to git; keep them as file names are kept
        text = text.decode("utf-8", "surrogateescape")
    return prepush.run(args.remote, args.url, text, factory, layout=layout(args, sys.stderr))
