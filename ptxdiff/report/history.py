"""`ptxdiff log`'s text: a kernel's rows along history as a table (with each commit's errors
after it), or as JSON."""

from __future__ import annotations

import datetime
import json

from tabulate import tabulate

from ptxdiff.compare.history import Event
from ptxdiff.report.columns import HISTORY_COLUMNS


def as_json(events: list[Event]) -> str:
    return json.dumps([{"commit": e.commit.id, "date": e.commit.time, "author": e.commit.author,
                        "subject": e.commit.subject, "kernel": e.kernel,
                        "rows": [r.as_json() for r in e.rows]} for e in events], indent=2) + "\n"


def table(events: list[Event]) -> str:
    rows = []
    for e in events:
        for r in e.rows:
            date = datetime.datetime.fromtimestamp(e.commit.time).strftime("%Y-%m-%d")
            rows.append([e.commit.short[:7], date, e.commit.author, e.commit.subject[:40], r.target, r.spec, r.verdict,
                         *(c.cell(r) for c in HISTORY_COLUMNS)])
    headers = ["commit", "date", "author", "subject", "target", "spec", "verdict", *(c.label for c in HISTORY_COLUMNS)]
    lines = [tabulate(rows, headers=headers, disable_numparse=True)]
    lines += [f"{e.commit.short[:7]} {r.target}: {r.error}" for e in events for r in e.rows if r.error]
    return "".join(f"{line}\n" for line in lines)
