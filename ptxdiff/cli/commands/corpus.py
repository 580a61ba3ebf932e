"""`ptxdiff corpus [PAIRS]`: the evidence table on the embedded corpus (see corpus/pairs.py)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from ptxdiff.cli.common import progress, target_list
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.corpus import pairs as corpus
from ptxdiff.corpus.evidence import evidence
from ptxdiff.errors import EXIT_OK, UsageError
from ptxdiff.report.console import clear_status
from ptxdiff.report.render import as_json


@dataclass(frozen=True)
class Options:
    """`ptxdiff corpus`'s command line."""

    compiling: Compiling
    shown: Shown
    pairs: tuple[str, ...] = ()  # only these pairs (none: all)
    readme: str | None = None    # --readme FILE.md: also rewrite its evidence block

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args), pairs=tuple(args.pairs))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    compiling = opts.compiling
    targets = target_list(compiling.target) or [90]
    from ptxdiff.compile import toolchains
    asked = toolchains.asked(compiling.triton, None)
    if asked.old != asked.new:
        raise UsageError("ptxdiff corpus takes one triton (--triton VERSION); the upgrade diff of the corpus: "
                         "python benchmarks/upgrade.py OLD..NEW")
    from ptxdiff.permissions import from_user
    from ptxdiff.user_settings import load
    unsandboxed = from_user(load(), no_sandbox=compiling.no_sandbox).unsandboxed
    pairs, report = corpus.run(targets, jobs=compiling.jobs, names=list(opts.pairs) or None,
                               progress=progress(opts.shown), outputs=compiling.outputs,
                               tritons=toolchains.Policy(asked) if asked.new else None, unsandboxed=unsandboxed)
    clear_status()
    if opts.shown.format == "json":
        sys.stdout.write(as_json(report))
        return EXIT_OK
    ev = corpus.collect(pairs, report)
    sys.stdout.write(evidence(ev, "github" if opts.shown.format == "markdown" else "simple"))
    if opts.readme:
        corpus.update_readme(Path(opts.readme), ev)
    return EXIT_OK
