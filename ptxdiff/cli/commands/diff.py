"""`ptxdiff diff [REV [REV]] [-- PATHS]`: the kernels of two revisions, compared (like git diff)."""

from __future__ import annotations

import argparse
import dataclasses

from ptxdiff.cli.common import emit, open_engine, repo_paths, user_config
from ptxdiff.compare.engine import path_matches
from ptxdiff.compare.notes import NoteKind, as_notes
from ptxdiff.compare.results import Report
from ptxdiff.gate.prepush import submodule_note
from ptxdiff.git.repo import Repo


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    _, report = compare(args, args.revs, paths, show_all=args.all)
    return emit(report, args)


def compare(args: argparse.Namespace, revs: list[str], paths: list[str] | None,
            show_all: bool = False) -> tuple[Repo, Report]:
    """The one path from the common options and `git diff`-style revs to a report (`ptxdiff ci`
    takes it too, so CI says what `ptxdiff diff` says)."""
    repo, engine = open_engine(args)
    old, new = repo.sides(revs)
    upgrade = engine.tritons is not None and engine.tritons.asked.old != engine.tritons.asked.new
    if upgrade and len(revs) <= 1 and ".." not in "".join(revs):
        old = new = repo.side(revs[0] if revs else None)   # one revision, two tritons
    pathspecs = repo_paths(repo, paths)
    report = engine.compare(old, new, pathspecs, show_all=show_all, config=user_config(args))
    return repo, with_submodules(repo, report, pathspecs)


def with_submodules(repo: Repo, report: Report, pathspecs: list[str] | None) -> Report:
    """Say, in one line each, which submodules changed: ptxdiff does not look into them."""
    said = as_notes(NoteKind.SUBMODULE, [submodule_note(c) for c in repo.submodule_changes(report.base, report.head)
                                      if path_matches(c.path, pathspecs)])
    return dataclasses.replace(report, messages=report.messages + said) if said else report
