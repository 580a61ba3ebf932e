"""`ptxdiff log KERNEL [RANGE]`: one kernel's metrics along history, as a table, JSON or an HTML page with charts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ptxdiff.cli import htmlout
from ptxdiff.cli.common import layout, open_engine, progress, user_config
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.compare.history import history
from ptxdiff.errors import EXIT_OK
from ptxdiff.report import history as historymod
from ptxdiff.report.console import clear_status, say


@dataclass(frozen=True)
class Options:
    """`ptxdiff log`'s command line."""

    compiling: Compiling
    shown: Shown
    kernel: str | None = None    # kernel id (path::name) or function name
    range: str | None = None     # REV or A..B (default HEAD)

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args))


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    repo, engine = open_engine(opts.compiling, opts.shown)
    story = history(repo, engine, opts.kernel, opts.range or "HEAD", config=user_config(opts.compiling.config))
    events = story.events
    clear_status()
    if story.shallow_start is not None:
        say(f"ptxdiff: history stops at {story.shallow_start.short[:7]}, where this shallow clone begins: "
            "`git fetch --deepen=N` (or `--unshallow`) shows older commits\n", sys.stderr)
    if opts.shown.format == "json":
        text = historymod.as_json(events)
    elif opts.shown.format == "html":
        text = htmlout.history_page(events, opts.compiling, progress(opts.shown))
    else:
        text = historymod.table(events, layout(opts.shown))
    htmlout.deliver(text, opts.shown.output, opts.shown.quiet)
    return EXIT_OK
