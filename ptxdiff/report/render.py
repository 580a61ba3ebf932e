"""Render a Report: a terminal table (tabulate), Markdown for a review comment, or JSON."""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence

from ptxdiff.compare.notes import Note, NoteKind, as_notes
from ptxdiff.compare.results import Provenance, Report, Row, describe
from ptxdiff.report import safe
from ptxdiff.report.columns import COLUMNS, SOURCE_MARK, Column, explanations, fuzzed_note, outputs_cell, timing_cell
from ptxdiff.report.kernels import KernelLine, kernel_lines
from ptxdiff.report.layout import FOLD, FULL, KEY, PLAIN, Layout, TableColumn, grid, hanging, md_escape
from ptxdiff.report.style import VERDICT_SGR
from ptxdiff.specs.guesses import GuessKind
from ptxdiff.verdict import ORDER, Outputs, Verdict


def _dynamic_columns(report: Report) -> list[TableColumn[Row]]:
    cols: list[TableColumn[Row]] = []
    if any(r.outputs for r in report.rows):
        cols.append(TableColumn("outputs", lambda r: outputs_cell(r.outputs), FOLD, wrap=16))
    if any(r.timing for r in report.rows):
        cols.append(TableColumn("time new/old [95% CI] A/A band", lambda r: timing_cell(r.timing), FOLD, wrap=16,
                                label="time"))
    return cols


SPEC_WIDTH = 32   # a terminal's table shows a longer spec by what tells it apart (--wide, a pipe, JSON: whole)
SPEC_WORDS = re.compile(r"\S+(?: (?:->|→) \S+)*")   # `BLOCK=1024 -> 2048` is one word of a changed spec


def told_apart(rows: Sequence[Row]) -> list[str]:
    """Per row, its spec as a terminal's table shows it: whole when short or the only spec of its
    kernel; else the words that are not in every spec of its kernel (the ones that tell its rows
    apart), then `…`. Nothing is cut in a pipe or with --wide: they show `Row.spec`."""
    words = [SPEC_WORDS.findall(r.spec) for r in rows]
    common: dict[str, set[str]] = {}
    specs: dict[str, set[str]] = {}
    for r, ws in zip(rows, words):
        common[r.kernel] = common[r.kernel] & set(ws) if r.kernel in common else set(ws)
        specs.setdefault(r.kernel, set()).add(r.spec)
    out = []
    for r, ws in zip(rows, words):
        kept = [w for w in ws if w not in common[r.kernel]]
        short = len(r.spec) <= SPEC_WIDTH or len(specs[r.kernel]) == 1 or not kept
        out.append(r.spec if short else " ".join(kept) + " …")
    return out


def _says(column: Column) -> Callable[[Row], bool]:
    """A metric worth a place among a compact row's few deltas (a failed row's error says it all)."""
    return lambda r: not r.error and column.changed(r)


SPEC_CAP = 48   # a kernel line's spec in a terminal's table (a comment's: twice that); --wide shows it whole


def by_kernel(report: Report, layout: Layout = PLAIN,
              cap: int | None = None) -> tuple[Report, dict[str, KernelLine] | None]:
    """The report as the table shows it: a line per kernel (report/kernels.py), unless the
    layout asks for every spec (--specs), the report compares nothing (`ptxdiff show`) or each
    kernel has one row already; a line's spec within `cap` characters. The lines by kernel id,
    None where rows are shown as they are."""
    if layout.specs or report.base is None:
        return report, None
    lines = kernel_lines(report.rows)
    if len(lines) == len(report.rows):
        return report, None
    return (dataclasses.replace(report, rows=[line.as_row(cap) for line in lines]),
            {line.kernel: line for line in lines})


def report_columns(report: Report, layout: Layout = PLAIN,
                   lines: dict[str, KernelLine] | None = None) -> list[TableColumn[Row]]:
    """The report table's columns, for every layout: the compact one keeps kernel, target and
    verdict (and the spec where a kernel has several) and folds the metrics that changed. A
    terminal (a width, not --wide) shows a long spec by what tells it apart; `ptxdiff show`,
    whose rows have no verdict, has no verdict column. With `lines` (a line per kernel) a
    `specs` column says how many specs agree."""
    several_specs = len({(r.kernel, r.target) for r in report.rows}) < len(report.rows)
    specs = dict(zip(map(id, report.rows), told_apart(report.rows))) \
        if layout.width is not None and not layout.wide else {}
    compared = any(r.verdict != Verdict.NEW for r in report.rows)
    verdict: list[TableColumn[Row]] = [
        TableColumn("verdict", lambda r: r.verdict + (" ✗" if r.blocking else ""), KEY,
                    style=lambda r: VERDICT_SGR.get(r.verdict))] if compared else []
    agree: list[TableColumn[Row]] = [TableColumn("specs", lambda r: lines[r.kernel].agree, KEY, wrap=14)] \
        if lines else []
    return [TableColumn("kernel", lambda r: r.kernel, KEY, wrap=20),
            TableColumn("spec", lambda r: specs.get(id(r), r.spec), KEY if several_specs and not lines
                        or lines and (layout.width is None or layout.width >= 100) else FULL,
                        wrap=16),
            *agree,
            TableColumn("from", lambda r: SOURCE_MARK.get(r.spec_source or "", "-"), FULL),
            TableColumn("target", lambda r: r.target, KEY),
            *(TableColumn(c.label, c.cell, FOLD, says=_says(c)) for c in COLUMNS),
            *_dynamic_columns(report),
            *verdict]


def spec_notes(report: Report) -> list[Note]:
    """Per kernel, once: the values that are guesses, and what the evaluator assumed or ignored."""
    values: dict[str, dict[str, list[str]]] = {}
    types: dict[str, set[str]] = {}
    notes: dict[str, list[str]] = {}
    for r in report.rows:
        if r.spec_detail is None:
            continue
        for g in r.spec_detail.guessed:
            if g.kind is GuessKind.TYPE:
                types.setdefault(r.kernel, set()).add(g.name)
            else:
                values.setdefault(r.kernel, {}).setdefault(g.shown, []).append(str(g.value))
        for note in r.spec_detail.notes:
            if note not in notes.setdefault(r.kernel, []):
                notes[r.kernel].append(note)
    lines = []
    for kernel in dict.fromkeys(r.kernel for r in report.rows):
        parts = [f"{k}={'|'.join(dict.fromkeys(vs))}" for k, vs in values.get(kernel, {}).items()]
        if types.get(kernel):
            parts.append(f"the types of {len(types[kernel])} params")
        if parts:
            lines.append(Note(NoteKind.GUESS, kernel,
                              f"{kernel}: guessed {', '.join(parts)} (config or `ptxdiff record` make them facts)"))
        lines += [Note(NoteKind.SPEC, kernel, f"{kernel}: {note}") for note in notes.get(kernel, ())]
    return lines


def _heading(report: Report) -> str:
    base = report.base.short if report.base else None
    what = f"{base} → {report.head.short}" if base else report.head.short
    tools = describe(report.toolchain)
    return f"ptxdiff {what} ({tools})"


def _errors(report: Report) -> list[Note]:
    lines = [Note(NoteKind.ERROR, r.kernel, f"{r.kernel} [{r.target} {r.spec}]: {r.error}") for r in report.rows if r.error]
    seen = set()
    for r in report.rows:
        for what, result in (("outputs", r.outputs), ("timing", r.timing)):
            if result and (r.kernel, what) not in seen:
                seen.add((r.kernel, what))
                if result["result"] == Outputs.NOT_RUN:
                    said = f"{r.kernel}: {what} not run: {result['reason']}"
                elif result.get("fuzzed") and result["result"] in (Outputs.DIFFER, Outputs.NONDETERMINISTIC):
                    said = f"{r.kernel}: outputs {fuzzed_note(result)}"
                elif result["result"] == Outputs.DIFFER:
                    at = (f"on the replayed launch {result['n']}, argument {result['argument']}"
                          if "argument" in result else f"first at n={result['n']} {result['dtype']}")
                    said = (f"{r.kernel}: outputs differ {at}: max abs "
                            f"{result['max_abs']:.3g}, max rel {result['max_rel']:.3g} (rtol {result['rtol']:g}, "
                            f"atol {result['atol']:g}, {result['device']})")
                elif what == "timing":
                    said = f"{r.kernel}: {result['summary']}"
                else:
                    continue
                lines.append(Note(NoteKind.RESULT, r.kernel, said))
    return lines


RUN_SPECIFIC = (NoteKind.REMOTE, NoteKind.CACHE)   # what differs between two runs: said in the log, not in a comment


def notes(report: Report, run: bool = True, lines: dict[str, KernelLine] | None = None,
          full: Report | None = None) -> list[Note]:
    """What every layout says under the table: errors, dynamic results, why, guesses, messages.
    `run=False` (the pull-request comment): without what differs between two runs on the same
    commits (where rows came from, how the remote cache answered). With `lines` (`report` has a
    line per kernel; `full` every spec row): the errors and reasons of the lines' specs, which
    specs ran, and how to see the others."""
    full = full or report
    folded: list[Note] = []
    if lines:   # the errors of the rows that block, where the line shows another spec
        folded += [Note(NoteKind.ERROR, r.kernel, f"{r.kernel} [{r.target} {r.spec}]: {r.error}") for r in full.rows
                   if r.blocking and r.error and r.kernel in lines and r is not lines[r.kernel].row]
        folded += [Note(NoteKind.RESULT, k, f"{k}: {line.ran}") for k, line in lines.items() if line.ran]
        hidden = len(full.rows) - len(report.rows)
        folded.append(Note(NoteKind.EXPLANATION, None,
                           f"a line per kernel: the deltas of its spec to trust most (config, recorded, call site, "
                           f"guessed); {hidden} more spec rows: --specs shows them, the JSON report has each"))
    said = [dataclasses.replace(r, spec=s.spec) for r, s in zip((line.row for line in lines.values()), report.rows)] \
        if lines else report.rows   # a line's reason with its own spec's verdict
    out = [*_errors(report), *as_notes(NoteKind.EXPLANATION, explanations(said)), *folded, *spec_notes(full),
           *report.messages, *blocking_line(full), *cache_counts(full)]
    return [n for n in out if run or n.kind not in RUN_SPECIFIC]


def verdicts_found(rows: Sequence[Row]) -> str:
    """The rows' verdicts, strongest first: `structural` when they share one, else with counts
    (`2 structural, 1 failed`): only what was found, never the whole block list."""
    counts = Counter(r.verdict for r in rows)
    found = sorted(counts, key=lambda v: (ORDER.index(v) if v in ORDER else len(ORDER), v))
    return found[0] if len(found) == 1 else ", ".join(f"{counts[v]} {v}" for v in found)


def blocking_line(report: Report) -> list[Note]:
    """How many kernels block and with which verdicts (their own, report/kernels.py), and how
    many spec rows: `1 kernel blocks: structural (2 rows)`, `3 kernels block: 2 structural,
    1 failed (5 rows)`."""
    blocking = [line for line in kernel_lines(report.rows) if line.blocking]
    if not blocking:
        return []
    n, rows = len(blocking), len(report.blocking)
    return [Note(NoteKind.BLOCKING, None, f"{n} kernel{'s block' if n != 1 else ' blocks'}: "
                 f"{verdicts_found([line.as_row() for line in blocking])} ({rows} row{'s' if rows != 1 else ''})")]


def cache_counts(report: Report) -> list[Note]:
    """The footer: how many rows were compiled in this run and how many came from each cache."""
    counts = {c: sum(r.cache == c for r in report.rows) for c in Provenance}
    parts = [f"{n} {what}" for n, what in ((counts[Provenance.COMPILED], "compiled"),
                                           (counts[Provenance.LOCAL], "from the local cache"),
                                           (counts[Provenance.REMOTE], "from the remote cache")) if n]
    return [Note(NoteKind.CACHE, None, f"rows: {', '.join(parts)}")] if parts else []


def table(report: Report, layout: Layout = PLAIN) -> str:
    """For a terminal or a file: the table fitted to `layout.width`, the notes wrapped to it."""
    full = safe.report(report)
    report, by = by_kernel(full, layout, SPEC_CAP if layout.width is not None and not layout.wide else None)
    lines = [_heading(report)]
    if report.rows:
        one_side = report.base is None   # `ptxdiff show`: the counts themselves, all of them
        lines.append(grid(report_columns(report, layout, by), report.rows, layout,
                          changed="counts" if one_side else "changed", folds=len(COLUMNS) if one_side else 4))
    else:
        lines.append("no Triton kernel changed" if report.base else "no Triton kernels found")
    lines += [hanging(n.text, layout.width) for n in notes(report, lines=by, full=full)]
    return "\n".join(lines) + "\n"


def markdown(report: Report, layout: Layout = PLAIN) -> str:
    """For a review comment (GitHub, GitLab): the heading, one table, then each note as its own
    paragraph; blank lines keep the notes out of the table, escapes keep names literal."""
    full = safe.report(report)
    report, by = by_kernel(full, layout, 2 * SPEC_CAP)
    blocks = [f"**{md_escape(_heading(report))}**"]
    if report.rows:
        blocks.append(grid(report_columns(report, PLAIN, by), report.rows, PLAIN, fmt="github"))
    else:
        blocks.append("no Triton kernel changed" if report.base else "no Triton kernels found")
    blocks += [md_escape(" ".join(n.text.split())) for n in notes(report, lines=by, full=full)]
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
    if fmt == "markdown":
        return markdown(report, layout)
    return as_json(report)
