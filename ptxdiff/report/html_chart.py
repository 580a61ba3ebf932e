"""Pictures for the HTML report, as markup the page carries inline (no script, no image file):
`ptxdiff log`'s metrics per commit as SVG line charts, and a row's opcode deltas as bars.

Every text that came from the repository (a commit subject, a kernel's opcode) is escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH_PER_POINT = 36
LEFT, RIGHT, TOP, PLOT_HEIGHT, BOTTOM = 56, 16, 22, 110, 58
SERIES = 6   # the stylesheet's series colours: s0 .. s5


@dataclass(frozen=True)
class Point:
    """One value on a chart: where it links (a row's anchor) and what its tooltip says."""

    x: int
    value: float
    href: str
    title: str
    alert: bool = False     # a verdict that asks for a look: drawn with a ring


@dataclass(frozen=True)
class Mark:
    """A vertical mark at a commit (its launch changed), with its tooltip."""

    x: int
    title: str


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.2f}".rstrip("0")


def axis(values: Sequence[float]) -> list[float]:
    """Round tick values that cover `values` (about four steps of 1, 2 or 5 times a power of ten,
    whole numbers for counts); the first and last are the axis' ends."""
    lo, hi = min(values, default=0.0), max(values, default=1.0)
    if lo == hi:
        lo, hi = (0.0, hi) if hi > 0 else (hi - 1, hi + 1) if hi < 0 else (0.0, 1.0)
    raw = (hi - lo) / 4
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if all(float(v).is_integer() for v in values):
        step = max(1.0, round(step))
    first, last = math.floor(lo / step), math.ceil(hi / step)
    return [k * step for k in range(first, last + 1)]


def line_chart(title: str, labels: Sequence[str], series: dict[str, list[Point]], marks: Sequence[Mark]) -> str:
    """One metric along history: a line per series (a target), a dot per commit linked to its row,
    a dashed line where the launch changed; `labels` name the commits along the x axis."""
    n = max(1, len(labels))
    width = LEFT + RIGHT + max(560, WIDTH_PER_POINT * n)
    step = (width - LEFT - RIGHT) / n
    ticks = axis([p.value for pts in series.values() for p in pts])
    lo, hi = ticks[0], ticks[-1]

    def x(i: int) -> float:
        return LEFT + step * (i + 0.5)

    def y(v: float) -> float:
        return TOP + PLOT_HEIGHT * (1 - (v - lo) / (hi - lo))

    out = [f'<svg class="chart" role="img" width="{width}" height="{TOP + PLOT_HEIGHT + BOTTOM}" '
           f'viewBox="0 0 {width} {TOP + PLOT_HEIGHT + BOTTOM}">',
           f'<text class="title" x="{LEFT}" y="14">{escape(title)}</text>']
    for v in ticks:
        out.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>'
                   f'<text class="tick" x="{LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{_fmt(round(v, 6))}</text>')
    for m in marks:
        out.append(f'<line class="launch" x1="{x(m.x):.1f}" x2="{x(m.x):.1f}" y1="{TOP}" y2="{TOP + PLOT_HEIGHT}">'
                   f'<title>{escape(m.title)}</title></line>')
    every = max(1, round(n / 40))
    base = TOP + PLOT_HEIGHT + 12
    for i, label in enumerate(labels):
        if i % every == 0:
            out.append(f'<text class="tick" transform="translate({x(i):.1f},{base}) rotate(-40)" '
                       f'text-anchor="end">{escape(label)}</text>')
    for k, (name, pts) in enumerate(series.items()):
        cls = f"s{k % SERIES}"
        if len(pts) > 1:
            path = " ".join(f"{x(p.x):.1f},{y(p.value):.1f}" for p in pts)
            out.append(f'<polyline class="line {cls}" points="{path}"><title>{escape(name)}</title></polyline>')
        for p in pts:
            ring = " alert" if p.alert else ""
            out.append(f'<a href="{escape(p.href)}"><circle class="dot {cls}{ring}" cx="{x(p.x):.1f}" '
                       f'cy="{y(p.value):.1f}" r="4.5"><title>{escape(p.title)}</title></circle></a>')
    out.append("</svg>")
    return "".join(out)


def legend(names: Sequence[str]) -> str:
    return "".join(f'<span class="key"><i class="sw s{k % SERIES}"></i>{escape(n)}</span>' for k, n in enumerate(names))


def opcode_bars(deltas: Sequence[tuple[str, int]], more: int, signed: bool) -> str:
    """The opcodes that moved as bars (a table: readable without styles too): removals to the left
    in red, additions to the right in green; `signed` False: one side's counts."""
    if not deltas:
        return ""
    top = max(abs(d) for _, d in deltas)
    rows = []
    for name, d in deltas:
        share = f"{max(1.0, 100 * abs(d) / top):.1f}%"
        bar = f'<span class="bar {"neg" if d < 0 else "pos"}" style="width:{share}"></span>'
        left, right = (bar, "") if d < 0 else ("", bar)
        value = f"{d:+d}" if signed else str(d)
        rows.append(f'<tr><td class="op">{escape(name)}</td>' + (f'<td class="l">{left}</td>' if signed else "")
                    + f'<td class="r">{right}</td><td class="n">{value}</td></tr>')
    tail = f'<p class="more">{more} more opcode{"s" if more > 1 else ""} {"moved" if signed else "used"}</p>' if more else ""
    head = "opcode deltas (new - old)" if signed else "opcodes"
    return f'<table class="bars"><caption>{head}</caption>{"".join(rows)}</table>{tail}'
