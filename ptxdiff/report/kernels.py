"""One line per kernel, what every renderer shows by default: the kernel's strongest verdict
(among its rows that block, where any does, so the headline and the gate agree), the deltas of
the spec a reader should trust most (config, then recorded, then call site, then guessed), and
how many specs agree (`6 specs: 2 structural, 4 identical`). The spec rows stay in the report
(the JSON has each, `--specs` and the HTML page unfold them).

Rows that compared nothing (`failed`, `unmeasured`, `unpaired`) give a kernel its verdict only
where nothing else does, or where they block.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ptxdiff.compare.results import Row
from ptxdiff.specs.plan import SOURCES
from ptxdiff.verdict import ORDER, Outputs, Verdict

NOT_COMPARED = (Verdict.FAILED, Verdict.UNMEASURED, Verdict.UNPAIRED)


def rank(verdict: str) -> tuple[int, str]:
    """Strongest first; a verdict not known yet goes after the known ones."""
    return (ORDER.index(verdict) if verdict in ORDER else len(ORDER), verdict)


def verdict_of(rows: Sequence[Row]) -> Verdict:
    """A kernel's one verdict: the strongest of its blocking rows; with none, the strongest of
    the rows that compared old with new; else `failed`, `unmeasured`, `unpaired` in that order.
    One guessed spec that does not fit never hides four structural ones, nor reads as a change."""
    blocking = [r.verdict for r in rows if r.blocking]
    compared = [r.verdict for r in rows if r.verdict not in NOT_COMPARED]
    pool = blocking or compared or [r.verdict for r in rows]
    return min(pool, key=rank)


def trusted(rows: Sequence[Row]) -> Row:
    """The row a reader should trust most: of the rows that compared (else all), the one whose
    spec's values are most trusted, the strongest verdict among equals, the first among those."""
    pool = [r for r in rows if r.verdict not in NOT_COMPARED] or list(rows)

    def key(ir: tuple[int, Row]) -> tuple[int, tuple[int, str], int]:
        i, r = ir
        source = SOURCES.index(r.spec_source) if r.spec_source in SOURCES else len(SOURCES)   # most trusted first
        return source, rank(r.verdict), i
    return min(enumerate(pool), key=key)[1]


def counted(verdicts: Sequence[str]) -> str:
    """`2 structural, 4 identical`, strongest first."""
    counts = Counter(verdicts)
    return ", ".join(f"{counts[v]} {v}" for v in sorted(counts, key=rank))


@dataclass(frozen=True)
class KernelLine:
    kernel: str
    verdict: Verdict
    blocking: bool
    row: Row                 # the spec to trust most: its deltas are the line's
    rows: tuple[Row, ...]    # every spec row of the kernel (every target)

    @property
    def agree(self) -> str:
        """`6 specs: 2 structural, 4 identical` (`rows` where the kernel has several targets)."""
        n = len(self.rows)
        what = "spec" if len({r.target for r in self.rows}) == 1 else "row"
        return f"1 {what}" if n == 1 else f"{n} {what}s: {counted([r.verdict for r in self.rows])}"

    @property
    def ran(self) -> str | None:
        """Which of its specs ran old against new (--outputs, --time): `outputs, time run on
        BLOCK=1024 w4 s3 (recorded)`, None where none did."""
        ran = [r for r in self.rows if _ran(r.outputs) or _ran(r.timing)]
        if not ran:
            return None
        what = [w for w, got in (("outputs", any(_ran(r.outputs) for r in ran)),
                                 ("time", any(_ran(r.timing) for r in ran))) if got]
        specs = "; ".join(dict.fromkeys(f"{r.spec} ({r.spec_source or 'config'})" for r in ran))
        return f"{' and '.join(what)} run on {len(ran)} of {len(self.rows)} specs: {specs}"

    def as_row(self, cap: int | None = None) -> Row:
        """The line as a row (the renderers' grids read rows): the trusted row with the kernel's
        verdict and blocking; its spec cut to `cap` characters at a word (`…` says so: --specs,
        --wide and the JSON have it whole)."""
        return dataclasses.replace(self.row, verdict=self.verdict, blocking=self.blocking, spec=short(self.row.spec, cap))


def short(spec: str, cap: int | None) -> str:
    """`spec` within `cap` characters, cut after a whole word, `…` where cut."""
    if cap is None or len(spec) <= cap:
        return spec
    cut = spec[:cap - 2].rsplit(" ", 1)[0] if " " in spec[:cap - 2] else spec[:cap - 2]
    return cut + " …"


def _ran(result: dict[str, Any] | None) -> bool:
    return bool(result) and result.get("result") != Outputs.NOT_RUN   # type: ignore[union-attr]


def kernel_lines(rows: Sequence[Row]) -> list[KernelLine]:
    """The rows' kernels in the order they first appear, one line each."""
    by: dict[str, list[Row]] = {}
    for r in rows:
        by.setdefault(r.kernel, []).append(r)
    return [KernelLine(k, verdict_of(rs), any(r.blocking for r in rs), trusted(rs), tuple(rs)) for k, rs in by.items()]


def verdict_counts(rows: Sequence[Row]) -> dict[str, int]:
    """How many kernels have each verdict, strongest first."""
    counts = Counter(line.verdict for line in kernel_lines(rows))
    return {v: counts[v] for v in sorted(counts, key=rank)}
