"""`ptxdiff diff [REV [REV]] [-- PATHS]`: the kernels of two revisions, compared (like git diff)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass

from ptxdiff.cli.common import emit, open_engine, repo_paths, user_config
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.compare.engine import path_matches
from ptxdiff.compare.notes import NoteKind, as_notes
from ptxdiff.compare.results import Report
from ptxdiff.gate.prepush import submodule_note
from ptxdiff.git.repo import Repo


@dataclass(frozen=True)
class Options:
    """`ptxdiff diff`'s command line."""

    compiling: Compiling
    shown: Shown
    revs: tuple[str, ...] = ()     # none: HEAD vs the work tree; one: REV vs the work tree; two, or A..B
    all: bool = False              # --all: unchanged kernels too

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args), revs=tuple(args.revs))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    _, report = compare(opts.compiling, opts.shown, list(opts.revs), paths, show_all=opts.all)
    return emit(report, opts.shown, opts.compiling)


def compare(opts: Compiling, shown: Shown, revs: list[str], paths: list[str] | None,
            show_all: bool = False) -> tuple[Repo, Report]:
    """The one path from the common options and `git diff`-style revs to a report (`ptxdiff ci`
    takes it too, so CI says what `ptxdiff diff` says)."""
    repo, engine = open_engine(opts, shown)
    old, new = repo.sides(revs)
    upgrade = engine.tritons is not None and engine.tritons.asked.old != engine.tritons.asked.new
    if upgrade and len(revs) <= 1 and ".." not in "".join(revs):
        old = new = repo.side(revs[0] if revs else None)   # one revision, two tritons
    pathspecs = repo_paths(repo, paths)
    report = engine.compare(old, new, pathspecs, show_all=show_all, config=user_config(opts.config))
    return repo, with_submodules(repo, report, pathspecs)


def with_submodules(repo: Repo, report: Report, pathspecs: list[str] | None) -> Report:
    """Say, in one line each, which submodules changed: ptxdiff does not look into them."""
    said = as_notes(NoteKind.SUBMODULE, [submodule_note(c) for c in repo.submodule_changes(report.base, report.head)
                                      if path_matches(c.path, pathspecs)])
    return dataclasses.replace(report, messages=report.messages + said) if said else report
