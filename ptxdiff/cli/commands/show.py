"""`ptxdiff show [REV]`: the metrics of every kernel at one revision (default HEAD)."""

from __future__ import annotations

import argparse

from ptxdiff.cli.common import emit, open_engine, repo_paths, user_config


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    repo, engine = open_engine(args)
    side = repo.side(args.rev) if args.rev else repo.side("HEAD")
    report = engine.compare(None, side, repo_paths(repo, paths), show_all=True, config=user_config(args))
    return emit(report, args)
