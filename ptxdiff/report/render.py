"""Render a Report: a terminal table (tabulate), Markdown for a review comment, or JSON."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable

from tabulate import tabulate

from ptxdiff.compare.results import Report, Row
from ptxdiff.report.columns import COLUMNS, SOURCE_MARK, outputs_cell, timing_cell


def _dynamic_columns(report: Report) -> list[tuple[str, Callable[[Row], str]]]:
    cols: list[tuple[str, Callable[[Row], str]]] = []
    if any(r.outputs for r in report.rows):
        cols.append(("outputs", lambda r: outputs_cell(r.outputs)))
    if any(r.timing for r in report.rows):
        cols.append(("time new/old [95% CI] A/A band", lambda r: timing_cell(r.timing)))
    return cols


SPEC_WIDTH = 60  # the table shortens long specs (autotune-heavy kernels); JSON keeps them whole


def _spec(text: str) -> str:
    return text if len(text) <= SPEC_WIDTH else text[:SPEC_WIDTH - 1] + "…"


def _table_rows(report: Report) -> list[list[str]]:
    dyn = _dynamic_columns(report)
    return [[r.kernel, _spec(r.spec), SOURCE_MARK.get(r.spec_source or "", "-"), r.target,
             *(c.cell(r) for c in COLUMNS), *(f(r) for _, f in dyn),
             r.verdict + (" ✗" if r.blocking else "")] for r in report.rows]


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
    tools = ", ".join(f"{k} {v}" for k, v in report.toolchain.items())
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


def table(report: Report, fmt: str = "simple") -> str:
    headers = ["kernel", "spec", "from", "target", *(c.label for c in COLUMNS),
               *(h for h, _ in _dynamic_columns(report)), "verdict"]
    lines = [_heading(report)]
    if report.rows:
        lines.append(tabulate(_table_rows(report), headers=headers, tablefmt=fmt, disable_numparse=True))
    else:
        lines.append("no Triton kernel changed" if report.base else "no Triton kernels found")
    lines += _errors(report)
    lines += spec_notes(report)
    lines += report.messages
    blocking = report.blocking
    if blocking:
        lines.append(f"{len(blocking)} blocking verdict(s) ({', '.join(report.config.block)})")
    return "\n".join(lines) + "\n"


def markdown(report: Report) -> str:
    text = table(report, fmt="github")
    head, _, rest = text.partition("\n")
    return f"**{head}**\n\n{rest}"


def as_json(report: Report) -> str:
    return json.dumps(report.as_json(), indent=2, sort_keys=False) + "\n"


def ptx_diffs(report: Report) -> str:
    """Unified diffs of the normalised PTX of every changed kernel x spec x target."""
    out: list[str] = []
    for r in report.rows:
        if r.old_ptx is None or r.new_ptx is None or r.old_ptx == r.new_ptx:
            continue
        name = f"{r.kernel} [{r.target} {r.spec}]"
        out.extend(difflib.unified_diff(r.old_ptx.splitlines(keepends=True), r.new_ptx.splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}", n=2))
    return "".join(out)


def render(report: Report, fmt: str) -> str:
    return {"table": table, "markdown": markdown, "json": as_json}[fmt](report)
