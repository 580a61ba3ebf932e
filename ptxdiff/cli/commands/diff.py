"""`ptxdiff diff [REV [REV]] [-- PATHS]`: the kernels of two revisions, compared (like git diff)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path

from ptxdiff.cli.common import emit, open_engine, repo_paths, user_config
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.compare.notes import NoteKind, as_notes
from ptxdiff.compare.pairing import path_matches
from ptxdiff.compare.results import Report
from ptxdiff.errors import UsageError
from ptxdiff.git.repo import Repo
from ptxdiff.gitdiff.prepush import submodule_note
from ptxdiff.verdict import Outputs


@dataclass(frozen=True)
class Options:
    """`ptxdiff diff`'s command line."""

    compiling: Compiling
    shown: Shown
    revs: tuple[str, ...] = ()     # none: HEAD vs the work tree; one: REV vs the work tree; two, or A..B
    all: bool = False              # --all: unchanged kernels too
    repro: str | None = None       # --repro DIR: reproducers of fuzzed outputs-differ rows

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args), revs=tuple(args.revs))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    if opts.repro and not opts.compiling.outputs:
        raise UsageError("--repro DIR writes reproducers of --outputs results: add --outputs")
    repo, report = compare(opts.compiling, opts.shown, list(opts.revs), paths, show_all=opts.all)
    code = emit(report, opts.shown, opts.compiling)
    if opts.repro:
        written = reproducers(repo, report, Path(opts.repro))
        print(f"ptxdiff: {len(written)} reproducer{'s' if len(written) != 1 else ''} in {opts.repro}"
              + "".join(f"\n    {p}" for p in written), file=sys.stderr)
    return code


def reproducers(repo: Repo, report: Report, where: Path) -> list[Path]:
    """A standalone script per kernel whose synthesised launches differed (dynamic/repro.py)."""
    from ptxdiff.dynamic import repro

    old, new = report.base, report.head
    if old is None:
        return []
    revs = tuple((side.commit or "the work tree")[:12] for side in (old, new))
    written, seen = [], set()
    for r in report.rows:
        out = r.outputs or {}
        if r.kernel in seen or not out.get("fuzzed") or out.get("result") != Outputs.DIFFER or "launch" not in out:
            continue
        seen.add(r.kernel)
        old_id = r.old_kernel or r.kernel
        texts = [repo.snapshot(side).read(kid.partition("::")[0]).decode("utf-8", "replace")
                 for side, kid in ((old, old_id), (new, r.kernel))]
        written.append(repro.write(where, r.kernel, old_id, out, texts[0], texts[1], (revs[0], revs[1])))
    return written


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
