"""`ptxdiff notes [RANGE]`: each commit's kernel deltas, written under refs/notes/ptxdiff.

The commits are compared in batches (`Engine.compare_many`): the compile jobs of many commits
run at once, on this machine's workers or on a Ray cluster (`--executor`)."""

from __future__ import annotations

import argparse

from ptxdiff.cli.common import open_engine
from ptxdiff.errors import EXIT_OK
from ptxdiff.git.repo import Side
from ptxdiff.report import render as reportmod
from ptxdiff.report.console import clear_status

NOTES_REF = "refs/notes/ptxdiff"


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    repo, engine = open_engine(args)
    commits = list(repo.walk(*repo.range(args.range or "HEAD")))
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
