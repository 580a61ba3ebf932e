"""Render a Report: a terminal table (tabulate), Markdown for a review comment, or JSON."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable

from ptxdiff.compare.results import Report, Row, describe
from ptxdiff.report import safe
from ptxdiff.report.columns import COLUMNS, SOURCE_MARK, Column, explanations, outputs_cell, timing_cell
from ptxdiff.report.layout import FOLD, FULL, KEY, PLAIN, Layout, TableColumn, grid, hanging, md_escape
from ptxdiff.report.style import VERDICT_SGR


def _dynamic_columns(report: Report) -> list[TableColumn[Row]]:
    cols: list[TableColumn[Row]] = []
    if any(r.outputs for r in report.rows):
        cols.append(TableColumn("outputs", lambda r: outputs_cell(r.outputs), FOLD, wrap=16))
    if any(r.timing for r in report.rows):
        cols.append(TableColumn("time new/old [95% CI] A/A band", lambda r: timing_cell(r.timing), FOLD, wrap=16,
                                label="time"))
    return cols


SPEC_WIDTH = 60  # the table shortens long specs (autotune-heavy kernels); JSON keeps them whole


def _spec(text: str) -> str:
    return text if len(text) <= SPEC_WIDTH else text[:SPEC_WIDTH - 1] + "…"


def _says(column: Column) -> Callable[[Row], bool]:
    """A metric worth a place among a compact row's few deltas (a failed row's error says it all)."""
    return lambda r: not r.error and column.changed(r)


def report_columns(report: Report) -> list[TableColumn[Row]]:
    """The report table's columns, for every layout: the compact one keeps kernel, target and
    verdict (and the spec where a kernel has several) and folds the metrics that changed."""
    several_specs = len({(r.kernel, r.target) for r in report.rows}) < len(report.rows)
    return [TableColumn("kernel", lambda r: r.kernel, KEY, wrap=20),
            TableColumn("spec", lambda r: _spec(r.spec), KEY if several_specs else FULL, wrap=16),
            TableColumn("from", lambda r: SOURCE_MARK.get(r.spec_source or "", "-"), FULL),
            TableColumn("target", lambda r: r.target, KEY),
            *(TableColumn(c.label, c.cell, FOLD, says=_says(c)) for c in COLUMNS),
            *_dynamic_columns(report),
            TableColumn("verdict", lambda r: r.verdict + (" ✗" if r.blocking else ""), KEY,
                        style=lambda r: VERDICT_SGR.get(r.verdict))]


def spec_notes(report: Report) -> list[str]:
    """Per kernel, once: the values that are guesses, and what the evaluator assumed or ignored."""
    values: dict[str, dict[str, list]] = {}
    types: dict[str, set[str]] = {}
    notes: dict[str, list[str]] = {}
    for r in report.rows:
        detail = r.spec_detail or {}
        for k, v in (detail.get("guessed") or {}).items():
            if k.endswith(":"):
                types.setdefault(r.kernel, set()).add(k)
            else:
                values.setdefault(r.kernel, {}).setdefault(k, []).append(str(v))
        for note in detail.get("notes") or ():
            if note not in notes.setdefault(r.kernel, []):
                notes[r.kernel].append(note)
    lines = []
    for kernel in dict.fromkeys(r.kernel for r in report.rows):
        parts = [f"{k}={'|'.join(dict.fromkeys(vs))}" for k, vs in values.get(kernel, {}).items()]
        if types.get(kernel):
            parts.append(f"the types of {len(types[kernel])} params")
        if parts:
            lines.append(f"{kernel}: guessed {', '.join(parts)} (config or `ptxdiff record` make them facts)")
        lines += [f"{kernel}: {note}" for note in notes.get(kernel, ())]
    return lines


def _heading(report: Report) -> str:
    base = report.base.short if report.base else None
    what = f"{base} → {report.head.short}" if base else report.head.short
    tools = describe(report.toolchain)
    return f"ptxdiff {what} ({tools})"


def _errors(report: Report) -> list[str]:
    lines = [f"{r.kernel} [{r.target} {r.spec}]: {r.error}" for r in report.rows if r.error]
    seen = set()
    for r in report.rows:
        for what, result in (("outputs", r.outputs), ("timing", r.timing)):
            if result and (r.kernel, what) not in seen:
                seen.add((r.kernel, what))
                if result["result"] == "not-run":
                    lines.append(f"{r.kernel}: {what} not run: {result['reason']}")
                elif result["result"] == "outputs-differ":
                    lines.append(f"{r.kernel}: outputs differ first at n={result['n']} {result['dtype']}: max abs "
                                 f"{result['max_abs']:.3g}, max rel {result['max_rel']:.3g} (rtol {result['rtol']:g}, "
                                 f"atol {result['atol']:g}, {result['device']})")
                elif what == "timing":
                    lines.append(f"{r.kernel}: {result['summary']}")
    return lines


def notes(report: Report) -> list[str]:
    """What every layout says under the table: errors, dynamic results, why, guesses, messages."""
    lines = _errors(report) + explanations(report.rows) + spec_notes(report) + list(report.messages)
    blocking = report.blocking
    if blocking:
        lines.append(f"{len(blocking)} blocking verdict(s) ({', '.join(report.config.block)})")
    return lines + cache_counts(report)


def cache_counts(report: Report) -> list[str]:
    """The footer: how many rows were compiled in this run and how many came from each cache."""
    counts = {c: sum(r.cache == c for r in report.rows) for c in ("compiled", "local", "remote")}
    parts = [f"{n} {what}" for n, what in ((counts["compiled"], "compiled"), (counts["local"], "from the local cache"),
                                           (counts["remote"], "from the remote cache")) if n]
    return [f"rows: {', '.join(parts)}"] if parts else []


def table(report: Report, layout: Layout = PLAIN) -> str:
    """For a terminal or a file: the table fitted to `layout.width`, the notes wrapped to it."""
    report = safe.report(report)
    lines = [_heading(report)]
    if report.rows:
        one_side = report.base is None   # `ptxdiff show`: the counts themselves, all of them
        lines.append(grid(report_columns(report), report.rows, layout, changed="counts" if one_side else "changed",
                          folds=len(COLUMNS) if one_side else 4))
    else:
        lines.append("no Triton kernel changed" if report.base else "no Triton kernels found")
    lines += [hanging(n, layout.width) for n in notes(report)]
    return "\n".join(lines) + "\n"


def markdown(report: Report) -> str:
    """For a review comment (GitHub, GitLab): the heading, one table, then each note as its own
    paragraph; blank lines keep the notes out of the table, escapes keep names literal."""
    report = safe.report(report)
    blocks = [f"**{md_escape(_heading(report))}**"]
    if report.rows:
        blocks.append(grid(report_columns(report), report.rows, PLAIN, fmt="github"))
    else:
        blocks.append("no Triton kernel changed" if report.base else "no Triton kernels found")
    blocks += [md_escape(" ".join(n.split())) for n in notes(report)]
    return "\n\n".join(blocks) + "\n"


def as_json(report: Report) -> str:
    return json.dumps(report.as_json(), indent=2, sort_keys=False) + "\n"


def ptx_diffs(report: Report) -> str:
    """Unified diffs of the normalised PTX of every changed kernel x spec x target."""
    out: list[str] = []
    for r in report.rows:
        if r.old_ptx is None or r.new_ptx is None or r.old_ptx == r.new_ptx:
            continue
        name = safe.shown(f"{r.kernel} [{r.target} {r.spec}]")
        out.extend(difflib.unified_diff(r.old_ptx.splitlines(keepends=True), r.new_ptx.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}", n=2))
    return "".join(out)


def render(report: Report, fmt: str, layout: Layout = PLAIN) -> str:
    if fmt == "table":
        return table(report, layout)
    return {"markdown": markdown, "json": as_json}[fmt](report)
