"""`--format html`: a report (`diff`, `show`, `ci`'s artifact) or a kernel's history (`log`) as one
page a reviewer opens from disk or a CI artifact: the table as in the terminal, and per row its
verdict, why, launch, metric deltas, opcode bars and the old and new PTX side by side, each PTX
line linked to the source line it came from, and the old and new SASS the same way (folded).

Self-contained: the style and script are inline, nothing is fetched (the Content-Security-Policy
says so to the browser too: no network, and no script but the page's own, by hash). It reads
without JavaScript (the table, the notes, each row's facts); the script sorts and filters the
table and draws a row's PTX view when the row is opened, from the inert JSON block each row
carries, so a report of hundreds of rows opens at once.

Every text from the repository (kernel names, paths, errors, commit subjects, PTX, source) is
escaped; JSON inside a script block has `<`, `>` and `&` as \\u escapes, so no text can close the
block or open markup.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from html import escape
from importlib import resources
from typing import Any, TypeVar

from ptxdiff.compare.history import Event
from ptxdiff.compare.results import Report, Row
from ptxdiff.git.values import Side
from ptxdiff.report import html_texts, safe
from ptxdiff.report.columns import COLUMNS, SOURCE_MARK, Column, fmt, outputs_cell, timing_cell
from ptxdiff.report.history import COLUMNS as HISTORY_TABLE
from ptxdiff.report.history import shown_events
from ptxdiff.report.history import told_apart as log_spec
from ptxdiff.report.html_chart import Mark, Point, legend, line_chart, opcode_bars
from ptxdiff.report.html_view import Read, SourceTable, new_table, opcode_deltas, row_view, sass_view
from ptxdiff.report.kernels import counted, kernel_lines
from ptxdiff.report.layout import TableColumn
from ptxdiff.report.render import SPEC_WORDS, by_kernel, notes, report_columns
from ptxdiff.verdict import Verdict

T = TypeVar("T")

# every count a row's facts show, the table's own first
DETAIL_METRICS: tuple[Column, ...] = (
    *COLUMNS,
    Column("sass_instrs", "sass instrs", "sass"),
    Column("local_bytes", "local bytes", "local"),
    Column("stack_bytes", "stack bytes", "stack"),
    Column("num_warps", "warps", "warps"),
    Column("num_stages", "stages", "stages"),
)
# `log`'s charts: (title, column)
CHARTS: tuple[tuple[str, Column], ...] = (
    ("registers per thread", COLUMNS[2]),
    ("PTX instructions", COLUMNS[0]),
    ("SASS instructions", DETAIL_METRICS[len(COLUMNS)]),
    ("spilled bytes (stores + loads)", COLUMNS[3]),
    ("occupancy", COLUMNS[5]),
)
ASK = (Verdict.STRUCTURAL, Verdict.FAILED, Verdict.UNMEASURED)   # verdicts that ask for a look: marked on the charts


def _asset(name: str) -> str:
    return (resources.files("ptxdiff.report") / "assets" / name).read_text(encoding="utf-8")


def text(value: str) -> str:
    """Repository text as HTML text: control characters as `\\xNN` (as every renderer prints
    them), then escaped, quotes included, so it is safe in an attribute too."""
    return escape(safe.shown(value, lines=True), quote=True)


def script_json(value: object) -> str:
    """JSON for a `<script type="application/json">` block: nothing in it can end the block
    (`</script>`), open a comment (`<!--`) or read as markup."""
    return (json.dumps(value, ensure_ascii=True, separators=(",", ":"))
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _data_block(block_id: str, value: object) -> str:
    return f'<script type="application/json" id="{block_id}">{script_json(value)}</script>'


def _page(title: str, mode: str, body: str) -> str:
    """The document around `body`: inline style and script, and a policy that allows nothing else."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    policy = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; img-src data:; "
              "base-uri 'none'; form-action 'none'")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{text(title)}</title>\n<style>{_asset('report.css')}</style>\n</head>\n"
            f'<body data-mode="{mode}">\n{body}\n<script>{script}</script>\n</body></html>\n')


def _filters() -> str:
    return ('<div id="filters" hidden><label>verdict <select id="f-verdict"><option value="">all</option></select>'
            '</label><label>kernel <input id="f-kernel" type="search" placeholder="part of a kernel id"></label>'
            '<span id="f-count" class="dim"></span></div>')


def _verdict(verdict: str, blocking: bool = False) -> str:
    mark = ' <span class="blocks" title="in the block policy">✗ blocks</span>' if blocking else ""
    return f'<span class="v v-{text(verdict)}">{text(verdict)}</span>{mark}'


def kernel_name(kernel: str) -> str:
    """A kernel id as HTML that breaks after a `/` or a `::` only, never inside a name."""
    return "<wbr>".join(text(part) for part in re.split(r"(?<=/)|(?<=::)", kernel) if part)


def _cell(c: TableColumn[T], value: str, i: int, row: Row, extra: Callable[[int], str] | None) -> str:
    if c.header == "kernel":
        return f'<td class="kname"><a href="#r{i}">{kernel_name(value)}</a></td>'
    if c.header == "verdict":
        return f"<td>{_verdict(row.verdict, row.blocking)}</td>"
    if c.header == "spec":
        return f'<td class="spec" title="{text(value)}">{text(value)}</td>'
    if c.header == "specs" and extra is not None:
        return f'<td class="specs">{extra(i)}</td>'
    return f'<td class="wrap">{text(value)}</td>' if c.wrap else f"<td>{text(value)}</td>"


def _table(columns: Sequence[TableColumn[T]], items: Sequence[T], rows: Sequence[Row],
           hrefs: Sequence[int] | None = None, specs: Callable[[int], str] | None = None) -> str:
    """The terminal's table (its full layout) as a sortable HTML table; each line opens its row
    (`hrefs`: the row section each line opens, where lines are kernels; `specs`: a line's
    `specs` cell, its spec rows unfolding)."""
    head = "".join(f"<th>{text(c.header)}</th>" for c in columns)
    lines = []
    for n, (item, row) in enumerate(zip(items, rows)):
        i = hrefs[n] if hrefs is not None else n
        cells = [_cell(c, c.value(item), i, row, (lambda _i, n=n: specs(n)) if specs else None)  # type: ignore[misc]
                 for c in columns]
        lines.append(f'<tr data-href="r{i}" data-verdict="{text(row.verdict)}" data-kernel="{text(row.kernel)}">'
                     + "".join(cells) + "</tr>")
    return (f'<div class="tablewrap"><table class="rows sortable"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(lines)}</tbody></table></div>')


def _metrics_table(row: Row) -> str:
    two = row.old is not None and row.new is not None
    head = "<tr><th></th><th>old</th><th>new</th><th>Δ</th></tr>" if two else \
        f"<tr><th></th><th>{'old' if row.new is None else 'new'}</th></tr>"
    lines = []
    for c in DETAIL_METRICS:
        a, b = c.value(row.old), c.value(row.new)
        if a is None and b is None:
            continue
        if not two:
            lines.append(f"<tr><td>{text(c.label)}</td><td>{text(fmt(b if row.new is not None else a))}</td></tr>")
            continue
        d = b - a if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
        shown_d = "" if not d else f"{d:+.2f}" if isinstance(d, float) else f"{d:+d}"
        # more occupancy is better; more of every other count is worse
        better = d is not None and d != 0 and ((d > 0) == (c.key == "occupancy"))
        cls = "" if not d else ' class="down"' if better else ' class="up"'
        lines.append(f'<tr{" class=changed" if a != b else ""}><td>{text(c.label)}</td><td>{text(fmt(a))}</td>'
                     f"<td>{text(fmt(b))}</td><td{cls}>{shown_d}</td></tr>")
    return f'<table class="metrics">{head}{"".join(lines)}</table>' if lines else ""


def _facts(row: Row, extra: Sequence[tuple[str, str]]) -> str:
    """What the terminal says about a row, as a definition list (all escaped here)."""
    facts: list[tuple[str, str]] = [("verdict", _verdict(row.verdict, row.blocking))]
    for label, value in (*extra, ("why", row.why), ("launch", row.launch), ("spec", row.spec),
                         ("spec from", SOURCE_MARK.get(row.spec_source or "", row.spec_source or "")),
                         ("target", row.target), ("renamed from", row.old_kernel)):
        if value:
            facts.append((label, text(value)))
    if row.error:
        facts.append(("error", f"<pre>{text(row.error)}</pre>"))
    if row.outputs:
        facts.append(("outputs", text(outputs_cell(row.outputs))))
    if row.timing:
        facts.append(("time", text(timing_cell(row.timing))))
    if row.paths:
        facts.append(("reads", "<br>".join(f"<code>{text(p)}</code>" for p in row.paths)))
    if row.cache:
        facts.append(("results", text(row.cache)))
    return '<dl class="facts">' + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"


@dataclasses.dataclass(frozen=True)
class Sides:
    """How a row's two sides are named on the page and read from the repository."""

    labels: tuple[str, str]
    revs: tuple[str | None, str | None]


def _shared(view: dict[str, Any] | None, texts: dict[str, str] | None) -> dict[str, Any] | None:
    """A view whose sides' texts are kept once per page (`texts`: text -> its block's id): a
    log's commit is the new side of one row and the old side of the next, and a spec unchanged
    along history has the same PTX in every commit."""
    if view is None or texts is None:
        return view
    sides = []
    for side in view["sides"]:
        ref = _ref(texts, side["text"], "t")
        sides.append({**{k: v for k, v in side.items() if k != "text"}, "ref": ref})
    return {**view, "sides": sides}


def _view_block(block_id: str, view: dict[str, Any], texts: dict[str, str] | None) -> str:
    """A row's view data; on a log page (`texts`) one more text of the shared block, as the
    views of rows next to each other are alike and deflate together."""
    if texts is None:
        return _data_block(block_id, view)
    return _data_block(block_id, {"ref": _ref(texts, json.dumps(view, separators=(",", ":")), "v")})


def _ref(texts: dict[str, str], value: str, kind: str) -> str:
    """`value`'s name in its block: `t-N` the Nth of the texts (PTX, SASS, source files), `v-N`
    the Nth of the views."""
    if value not in texts:
        texts[value] = f"{kind}-{sum(r.startswith(kind) for r in texts.values())}"
    return texts[value]


def _texts_blocks(texts: dict[str, str]) -> str:
    """Each shared text once, in two deflated blocks (html_texts.py): the texts, and the views
    apart, as they deflate best beside each other; the page's script inflates a block when the
    first row that needs it is opened."""
    return "".join(_data_block(name, html_texts.bundle([t for t, r in texts.items() if r.startswith(kind)]))
                   for name, kind in (("texts", "t"), ("views", "v")) if any(r.startswith(kind) for r in texts.values()))


def _row_section(i: int, row: Row, sides: Sides, sources: SourceTable, title: str,
                 extra: Sequence[tuple[str, str]] = (), texts: dict[str, str] | None = None) -> str:
    """One row, folded: its facts, counts and opcode bars readable without script; its PTX view
    drawn by the script from the JSON block when the row is opened (`texts`: each PTX and SASS
    text kept once per page, `_shared`)."""
    moved, more = opcode_deltas(row)
    parts = [_facts(row, extra),
             f'<div class="cols">{_metrics_table(row)}{opcode_bars(moved, more, row.old is not None and row.new is not None)}'
             "</div>"]
    view = _shared(row_view(row, sides.labels, sides.revs, sources), texts)
    if view is not None:
        parts.append(f'<h3 class="dim">PTX</h3><div class="view" data-view="ptx-{i}">'
                     '<p class="nojs dim">The side-by-side PTX view needs JavaScript.</p></div>'
                     + _view_block(f"ptx-{i}", view, texts))
        parts.append(_sass_section(i, row, sides.labels, texts))
    if row.log:
        parts.append(f"<details><summary>compile log</summary><pre>{text(row.log)}</pre></details>")
    summary = f"{_verdict(row.verdict, row.blocking)} {title}"
    return (f'<details class="row" id="r{i}" data-verdict="{text(row.verdict)}" data-kernel="{text(row.kernel)}">'
            f'<summary>{summary}</summary><div class="body">{"".join(parts)}</div></details>')


def _sass_section(i: int, row: Row, labels: tuple[str, str], texts: dict[str, str] | None = None) -> str:
    """A row's SASS, folded: old and new aligned as the PTX is, drawn when opened; `no SASS`
    where neither side has it (a failed side, a cubin not kept or not disassembled)."""
    view = _shared(sass_view(row, labels), texts)
    if view is None:
        return '<p class="dim nosass">no SASS</p>'
    missing = [side for side, ptx, sass in (("old", row.old_ptx, row.old_sass), ("new", row.new_ptx, row.new_sass))
               if ptx is not None and sass is None]
    note = f'<p class="dim">no SASS on the {missing[0]} side</p>' if missing else ""
    return (f'<details class="sass"><summary>SASS</summary>{note}<div class="view" data-view="sass-{i}">'
            '<p class="nojs dim">The side-by-side SASS view needs JavaScript.</p></div>'
            + _view_block(f"sass-{i}", view, texts) + "</details>")


def _sources_blocks(sources: SourceTable, texts: dict[str, str] | None = None) -> str:
    """The source files, each a text of the shared block on a log page (`texts`): a file's
    versions along history are alike."""
    if texts is None:
        return "".join(_data_block(f["id"], f) for f in sources.files)
    return "".join(_data_block(f["id"], {**{k: v for k, v in f.items() if k != "text"}, "ref": _ref(texts, f["text"], "t")})
                   for f in sources.files)


def _kernel_counts(rows: Sequence[Row]) -> str:
    """`20 kernels: 3 structural, 17 identical (120 spec rows); 3 blocking`."""
    lines = kernel_lines(rows)
    blocking = sum(line.blocking for line in lines)
    return (f'<p class="counts">{len(lines)} kernel{"s" if len(lines) != 1 else ""}: '
            f'{text(counted([line.verdict for line in lines]))} ({len(rows)} spec rows)'
            + (f'; <span class="blocks">{blocking} blocking</span>' if blocking else "") + "</p>")


def _counts(rows: Sequence[Row]) -> str:
    by = Counter(r.verdict for r in rows)
    blocking = sum(r.blocking for r in rows)
    said = ", ".join(f"{n} {v}" for v, n in by.most_common())
    return (f'<p class="counts">{len(rows)} row{"s" if len(rows) != 1 else ""}' + (f": {text(said)}" if said else "")
            + (f'; <span class="blocks">{blocking} blocking</span>' if blocking else "") + "</p>")


def _overview(shown: Report) -> str:
    """The report's table: a line per kernel (report/kernels.py), each opening its trusted spec's
    row, its `specs` cell unfolding every spec row with its verdict (no script needed); the
    metric columns that no line changes are left out, so the table fits a reviewer's screen."""
    folded, by = by_kernel(shown)
    if by is None:
        return _table(report_columns(shown), shown.rows, shown.rows)
    index = {id(r): i for i, r in enumerate(shown.rows)}
    lines = list(by.values())
    hrefs = [index[id(line.row)] for line in lines]
    unchanged = {c.label for c in COLUMNS if not any(c.changed(r) for r in folded.rows)}
    columns = [c for c in report_columns(folded, lines=by) if c.header not in unchanged]

    def specs(n: int) -> str:
        line = lines[n]
        items = "".join(f'<li><a href="#r{index[id(r)]}">{text(r.spec)}</a> {_verdict(r.verdict, r.blocking)}</li>'
                        for r in line.rows)
        return f'<details class="specs"><summary>{text(line.agree)}</summary><ul>{items}</ul></details>'
    return _table(columns, folded.rows, folded.rows, hrefs, specs)


def _side_name(side: Side) -> str:
    """`HEAD~1 (7f2ef4dbb6)`; the work tree as itself."""
    return side.label if side.label == side.short else f"{side.label} ({side.short})"


def report_page(report: Report, read: Read) -> str:
    """`diff`, `show` and `ci`: the report as a page. `read(rev, path)` gives a source file at
    the old side (rev "base") or the new side ("head")."""
    shown = safe.report(report)
    tools = ", ".join(f"{k} {v}" for k, v in report.toolchain.items())
    if report.base is not None:
        what = f"{_side_name(report.base)} → {_side_name(report.head)}"
        labels = (f"old · {report.base.short}", f"new · {report.head.short}")
    else:
        what = _side_name(report.head)
        labels = ("", what)
    sides = Sides(labels, ("base" if report.base is not None else None, "head"))
    sources = new_table(read)
    parts = [f"<h1>ptxdiff {text(what)}</h1>", f'<p class="dim">{text(tools)}</p>']
    if report.rows:
        several = report.base is not None and len({r.kernel for r in report.rows}) < len(report.rows)
        parts += [_kernel_counts(report.rows) if several else _counts(report.rows), _filters(), _overview(shown)]
    else:
        parts.append("<p>no Triton kernel changed</p>" if report.base else "<p>no Triton kernels found</p>")
    folded, by = by_kernel(shown)
    said = notes(folded, lines=by, full=shown)
    if said:
        parts.append('<h2>Notes</h2><ul class="notes">' + "".join(f"<li>{text(n.text)}</li>" for n in said) + "</ul>")
    if report.rows:
        parts.append("<h2>Rows</h2>")
        parts += [_row_section(i, r, sides, sources, f"{text(r.kernel)} <span class=dim>[{text(r.target)} "
                               f"{text(r.spec)}]</span>") for i, r in enumerate(shown.rows)]
    parts.append(_sources_blocks(sources))
    return _page(f"ptxdiff {what}", "diff" if report.base is not None else "show", "\n".join(parts))


def _date(e: Event) -> str:
    return datetime.datetime.fromtimestamp(e.commit.time, datetime.timezone.utc).strftime("%Y-%m-%d")


def spec_key(row: Row) -> str:
    """What a spec is across commits (its new side's values: types, constexprs, warps, stages),
    so a chart follows one spec, never the first row of each commit."""
    detail = row.spec_detail.as_json() if row.spec_detail is not None else {}
    keep = {k: v for k, v in detail.items() if k not in ("source", "guessed", "notes")}
    return row.target + " " + (json.dumps(keep, sort_keys=True, default=str) if keep else row.spec)


def followed(events: Sequence[Event]) -> dict[str, str]:
    """The specs the charts follow (at most SERIES_SHOWN, those measured in the most commits, the
    first seen among equals), each with its name: the words of its label that tell it from the
    other specs followed (its target too where there are several)."""
    seen: dict[str, list[Row]] = {}
    for e in events:
        for r in e.rows:
            if r.new is not None:
                seen.setdefault(spec_key(r), []).append(r)
    keys = sorted(seen, key=lambda k: -len(seen[k]))[:SERIES_SHOWN]
    last = [seen[k][-1] for k in keys]
    words = [SPEC_WORDS.findall(r.spec.split(" -> ")[-1]) for r in last]
    common = set.intersection(*map(set, words)) if len(words) > 1 else set()
    several = len({r.target for r in last}) > 1
    out: dict[str, str] = {}
    for k, r, ws in zip(keys, last, words):
        name = (f"{r.target} " if several else "") + (" ".join(w for w in ws if w not in common) or r.spec)
        out[k] = name if name not in out.values() else f"{name} ({len(out) + 1})"
    return out


SERIES_SHOWN = 6   # the chart's colours (html_chart.SERIES)


def _charts(events: Sequence[Event], index: Callable[[int, int], int]) -> str:
    """One chart per metric: a line per spec followed (`followed`), named in the legend, a dot
    per commit (linked to its row), the commits whose launch changed marked."""
    labels = [e.commit.short[:7] for e in events]
    names = followed(events)
    marks = [Mark(x, f"{e.commit.short[:7]} launch: " + "; ".join(dict.fromkeys(r.launch for r in e.rows if r.launch)))
             for x, e in enumerate(events) if any(r.launch for r in e.rows)]
    out = []
    for title, column in CHARTS:
        series: dict[str, list[Point]] = {}
        for x, e in enumerate(events):
            for k, row in enumerate(e.rows):
                name = names.get(spec_key(row)) if row.new is not None else None
                value = column.value(row.new) if name is not None else None
                if name is None or not isinstance(value, (int, float)) or \
                        any(p.x == x for p in series.get(name, ())):
                    continue
                tip = (f"{e.commit.short[:7]} {e.commit.subject}\n{row.target} {row.spec}: {column.label} "
                       f"{fmt(value)} ({row.verdict})")
                series.setdefault(name, []).append(Point(x, float(value), f"#r{index(x, k)}", tip, row.verdict in ASK))
        if series:
            out.append(line_chart(title, labels, {n: series[n] for n in names.values() if n in series}, marks))
    if not out:
        return ""
    more = len({spec_key(r) for e in events for r in e.rows if r.new is not None}) - len(names)
    keys = legend(list(names.values())) \
        + (f'<span class="key dim">{more} more spec{"s" if more != 1 else ""} in the table</span>' if more > 0 else "") \
        + ('<span class="key"><i class="launchkey"></i>launch changed</span>' if marks else "") \
        + '<span class="key dim">ringed: structural, failed or unmeasured; click a dot for its row</span>'
    return f'<div class="legend">{keys}</div><div class="charts">{"".join(out)}</div>'


def log_columns(items: Sequence[tuple[Event, Row]]) -> list[TableColumn[tuple[Event, Row]]]:
    """The log's table: where a commit has several specs, its spec column says what tells them
    apart (`casting_mode=0 has_dS_out=False`), the row's facts the spec whole."""
    several = len(items) > len({(e.commit.id, r.target) for e, r in items})
    return [log_spec(list(items)) if several and c.header == "spec" else c for c in HISTORY_TABLE]


def history_page(events: Sequence[Event], read: Read) -> str:
    """`log`: a kernel's metrics along history as charts, then its rows. `read(rev, path)` gives
    a source file at a commit (rev: the commit's id); each row is compared with the commit before
    it in the story (the first one's older side is not read)."""
    events = shown_events(list(events))
    items = [(e, r) for e in events for r in e.rows]
    starts = [0]
    for e in events:
        starts.append(starts[-1] + len(e.rows))
    sources = new_table(read)
    texts: dict[str, str] = {}
    kernel = events[-1].kernel if events else ""
    parts = [f"<h1>ptxdiff log {text(kernel)}</h1>"]
    if not items:
        parts.append("<p>no rows</p>")
    else:
        parts += [_counts([r for _, r in items]), _charts(events, lambda x, k: starts[x] + k), _filters(),
                  _table(log_columns(items), items, [r for _, r in items])]
        said = [f"{e.commit.short[:7]} {r.target}: {r.error}" for e, r in items if r.error]
        if said:
            parts.append('<h2>Errors</h2><ul class="notes">' + "".join(f"<li>{text(n)}</li>" for n in said) + "</ul>")
        parts.append("<h2>Rows</h2>")
        for x, e in enumerate(events):
            before = events[x - 1].commit if x else None
            sides = Sides((f"old · {before.short[:7]}" if before else "old", f"new · {e.commit.short[:7]}"),
                          (before.id if before else None, e.commit.id))
            extra = [("commit", f"{e.commit.short[:10]} {e.commit.subject}"),
                     ("author", f"{e.commit.author}, {_date(e)}")]
            parts += [_row_section(starts[x] + k, r, sides, sources,
                                   f"<code>{text(e.commit.short[:7])}</code> {text(e.commit.subject[:80])} "
                                   f"<span class=dim>[{text(r.target)} {text(r.spec)}]</span>", extra, texts)
                      for k, r in enumerate(e.rows)]
    parts.append(_sources_blocks(sources, texts))
    parts.append(_texts_blocks(texts))
    return _page(f"ptxdiff log {kernel}", "diff", "\n".join(parts))

