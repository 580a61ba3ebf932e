"""`ptxdiff log KERNEL [RANGE]`: one kernel's metrics along history, as a table, JSON or a plot."""

from __future__ import annotations

import argparse
import sys

from ptxdiff.cli import htmlout
from ptxdiff.cli.common import layout, open_engine, user_config
from ptxdiff.compare.history import history
from ptxdiff.errors import EXIT_OK
from ptxdiff.report import history as historymod
from ptxdiff.report.console import clear_status, say
from ptxdiff.report.plot import plot_history, require_matplotlib


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    if args.plot:
        require_matplotlib()  # before any compile: say it now, not after minutes of work
    repo, engine = open_engine(args)
    story = history(repo, engine, args.kernel, args.range or "HEAD", config=user_config(args))
    events = story.events
    clear_status()
    if story.shallow_start is not None:
        say(f"ptxdiff: history stops at {story.shallow_start.short[:7]}, where this shallow clone begins: "
            "`git fetch --deepen=N` (or `--unshallow`) shows older commits\n", sys.stderr)
    if args.format == "json":
        text = historymod.as_json(events)
    elif args.format == "html":
        text = htmlout.history_page(events, args)
    else:
        text = historymod.table(events, layout(args))
    htmlout.deliver(text, args)
    if args.plot:
        plot_history(events, args.plot)
    return EXIT_OK
