"""`ptxdiff notes [RANGE]`: each commit's kernel deltas, written under refs/notes/ptxdiff.

The commits are compared in batches (`Engine.compare_many`): the compile jobs of many commits
run at once, on this machine's workers or on a Ray cluster (`--executor`)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ptxdiff.cli.common import open_engine
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.errors import EXIT_OK
from ptxdiff.git.values import Side
from ptxdiff.report import render as reportmod
from ptxdiff.report.console import clear_status

NOTES_REF = "refs/notes/ptxdiff"


@dataclass(frozen=True)
class Options:
    """`ptxdiff notes`'s command line."""

    compiling: Compiling
    shown: Shown
    range: str | None = None     # REV or A..B (default HEAD: all its history)

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    repo, engine = open_engine(opts.compiling, opts.shown)
    commits = list(repo.walk(*repo.range(opts.range or "HEAD")))
    comparisons: list[tuple[Side | None, Side, list[str] | None]] = [
        (Side(c.parents[0][:10], c.parents[0]) if c.parents else Side("nothing", ""), Side(c.short, c.id), None)
        for c in commits]
    written = 0
    for c, report in zip(commits, engine.compare_many(comparisons)):
        if report.rows:
            repo.write_note(c.id, reportmod.table(report), NOTES_REF)
            written += 1
    clear_status()
    print(f"wrote {written} note(s) under {NOTES_REF} ({len(commits)} commits looked at); "
          "see them with: git log --notes=ptxdiff")
    return EXIT_OK
