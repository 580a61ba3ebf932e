"""`ptxdiff log`'s text: a kernel's rows along history as a table (with each commit's errors
after it), or as JSON."""

from __future__ import annotations

import dataclasses
import datetime
import json
from collections.abc import Callable

from ptxdiff.compare.history import Event
from ptxdiff.compare.results import Row
from ptxdiff.report import safe
from ptxdiff.report.columns import HISTORY_COLUMNS, Column, explanations
from ptxdiff.report.layout import FOLD, FULL, KEY, PLAIN, Layout, TableColumn, grid, hanging
from ptxdiff.report.render import SPEC_WORDS
from ptxdiff.report.safe import shown
from ptxdiff.report.style import VERDICT_SGR

Item = tuple[Event, Row]


def as_json(events: list[Event]) -> str:
    return json.dumps([{"commit": e.commit.id, "date": e.commit.time, "author": e.commit.author,
                        "subject": e.commit.subject, "kernel": e.kernel,
                        "rows": [r.as_json() for r in e.rows]} for e in events], indent=2) + "\n"


def _date(e: Event) -> str:
    return datetime.datetime.fromtimestamp(e.commit.time).strftime("%Y-%m-%d")


def _metric(c: Column) -> Callable[[Item], str]:
    return lambda item: c.cell(item[1])


def _changed(c: Column) -> Callable[[Item], bool]:
    return lambda item: c.changed(item[1])


COLUMNS: list[TableColumn[Item]] = [
    TableColumn("commit", lambda item: item[0].commit.short[:7], KEY),
    TableColumn("date", lambda item: _date(item[0]), FULL),
    TableColumn("author", lambda item: item[0].commit.author, FULL, wrap=12),
    TableColumn("subject", lambda item: item[0].commit.subject[:40], KEY, wrap=16),
    TableColumn("target", lambda item: item[1].target, KEY),
    TableColumn("spec", lambda item: item[1].spec, FULL, wrap=16),
    TableColumn("verdict", lambda item: item[1].verdict, KEY, style=lambda item: VERDICT_SGR.get(item[1].verdict)),
    *(TableColumn(c.label, _metric(c), FOLD, says=_changed(c)) for c in HISTORY_COLUMNS),
]


def shown_events(events: list[Event]) -> list[Event]:
    """The events as people may see them (safe.py): commit subjects and authors too."""
    return [Event(dataclasses.replace(e.commit, subject=shown(e.commit.subject), author=shown(e.commit.author)),
                  shown(e.kernel), [safe.row(r) for r in e.rows]) for e in events]


def told_apart(items: list[Item]) -> TableColumn[Item]:
    """The spec column of a log whose commits have several specs: the words that are not in
    every spec (`MODE=1`, `x_ptr:*fp16`), kept in the compact table too, so two rows of one
    commit never read the same."""
    words = [SPEC_WORDS.findall(r.spec) for _, r in items]
    common = set.intersection(*map(set, words)) if words else set()
    shown = {id(item): " ".join(w for w in ws if w not in common) or item[1].spec for item, ws in zip(items, words)}
    return TableColumn("spec", lambda item: shown[id(item)], KEY, wrap=16)


def table(events: list[Event], layout: Layout = PLAIN) -> str:
    """The rows along history, fitted to `layout` (a narrow terminal: commit, subject, target,
    verdict, what tells the commit's specs apart and what changed), then each commit's errors
    and explanations."""
    events = shown_events(events)
    items = [(e, r) for e in events for r in e.rows]
    several = any(len(e.rows) > len({r.target for r in e.rows}) for e in events)
    columns = [told_apart(items) if several and c.header == "spec" else c for c in COLUMNS]
    lines = [grid(columns, items, layout)]
    notes = [f"{e.commit.short[:7]} {r.target}: {r.error}" for e in events for r in e.rows if r.error]
    notes += [f"{e.commit.short[:7]} {line}" for e in events for line in explanations(e.rows)]
    lines += [hanging(n, layout.width) for n in notes]
    return "".join(f"{line}\n" for line in lines)
