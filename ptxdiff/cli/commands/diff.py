"""`ptxdiff diff [REV [REV]] [-- PATHS]`: the kernels of two revisions, compared (like git diff)."""

from __future__ import annotations

import argparse
import dataclasses

from ptxdiff.cli.common import emit, open_engine, repo_paths, user_config
from ptxdiff.compare.engine import path_matches
from ptxdiff.compare.results import Report
from ptxdiff.gate.prepush import submodule_note
from ptxdiff.git.repo import Repo


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    repo, engine = open_engine(args)
    old, new = repo.sides(args.revs)
    pathspecs = repo_paths(repo, paths)
    report = engine.compare(old, new, pathspecs, show_all=args.all, config=user_config(args))
    return emit(with_submodules(repo, report, pathspecs), args)


def with_submodules(repo: Repo, report: Report, pathspecs: list[str] | None) -> Report:
    """Say, in one line each, which submodules changed: ptxdiff does not look into them."""
    notes = [submodule_note(c) for c in repo.submodule_changes(report.base, report.head)
             if path_matches(c.path, pathspecs)]
    return dataclasses.replace(report, messages=report.messages + notes) if notes else report
