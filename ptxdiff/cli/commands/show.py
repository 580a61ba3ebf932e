"""`ptxdiff show [REV]`: the metrics of every kernel at one revision (default HEAD)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ptxdiff.cli.common import emit, open_engine, repo_paths, user_config
from ptxdiff.cli.options import Compiling, Shown, unpacked


@dataclass(frozen=True)
class Options:
    """`ptxdiff show`'s command line."""

    compiling: Compiling
    shown: Shown
    rev: str | None = None       # default HEAD

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    repo, engine = open_engine(opts.compiling, opts.shown)
    side = repo.side(opts.rev) if opts.rev else repo.side("HEAD")
    report = engine.compare(None, side, repo_paths(repo, paths), show_all=True,
                            config=user_config(opts.compiling.config))
    return emit(report, opts.shown, opts.compiling)
