"""`ptxdiff log KERNEL [RANGE]`: one kernel's metrics along history, as a table, JSON or a plot."""

from __future__ import annotations

import argparse

from ptxdiff.cli import htmlout
from ptxdiff.cli.common import layout, open_engine, user_config
from ptxdiff.compare.history import history
from ptxdiff.errors import EXIT_OK
from ptxdiff.report import history as historymod
from ptxdiff.report.console import clear_status
from ptxdiff.report.plot import plot_history, require_matplotlib


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    if args.plot:
        require_matplotlib()  # before any compile: say it now, not after minutes of work
    repo, engine = open_engine(args)
    events = history(repo, engine, args.kernel, args.range or "HEAD", config=user_config(args))
    clear_status()
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
