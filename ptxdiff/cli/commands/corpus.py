"""`ptxdiff corpus [PAIRS]`: the evidence table on the embedded corpus (see corpus/pairs.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ptxdiff.cli.common import progress, target_list
from ptxdiff.corpus import pairs as corpus
from ptxdiff.errors import EXIT_OK, UsageError
from ptxdiff.report.console import clear_status
from ptxdiff.report.evidence import evidence
from ptxdiff.report.render import as_json


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    targets = target_list(args.target) or [90]
    from ptxdiff.compile import toolchains
    asked = toolchains.asked(args.triton, None)
    if asked.old != asked.new:
        raise UsageError("ptxdiff corpus takes one triton (--triton VERSION); the upgrade diff of the corpus: "
                         "python benchmarks/upgrade.py OLD..NEW")
    from ptxdiff.settings import load
    from ptxdiff.trust import from_user
    unsandboxed = from_user(load(), no_sandbox=args.no_sandbox).unsandboxed
    pairs, report = corpus.run(targets, jobs=args.jobs, names=args.pairs or None, progress=progress(args),
                               outputs=args.outputs, tritons=toolchains.Policy(asked) if asked.new else None,
                               unsandboxed=unsandboxed)
    clear_status()
    if args.format == "json":
        sys.stdout.write(as_json(report))
        return EXIT_OK
    ev = corpus.collect(pairs, report)
    sys.stdout.write(evidence(ev, "github" if args.format == "markdown" else "simple"))
    if args.readme:
        corpus.update_readme(Path(args.readme), ev)
    return EXIT_OK
