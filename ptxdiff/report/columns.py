"""The metric columns, declared once: the report table, the lines under `git diff` and `ptxdiff
log` all read this table, so a metric is added, relabelled or formatted in one place.

Also what is not a metric but that several renderers show the same way: where a spec came from,
the results of running (--outputs) and timing (--time) old against new, and the words under the
rows (what changed in a launch, why a verdict).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ptxdiff.compare.results import Row
from ptxdiff.metrics.counts import Metrics
from ptxdiff.specs.plan import SpecSource
from ptxdiff.verdict import Outputs


def _spills(metrics: Metrics) -> int:
    """Spilled bytes, stored plus loaded."""
    return metrics.spill_store_bytes + metrics.spill_load_bytes


def fmt(value: object) -> str:
    """One metric value as the renderers print it: `-` for none, floats to two decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


@dataclass(frozen=True)
class Column:
    """One metric column: its key, its header in tables, its name under `git diff`."""

    key: str
    label: str
    short: str
    history: bool = True                                # `ptxdiff log` shows it too
    read: Callable[[Metrics], object] | None = None     # how to get it from a side's metrics (default: by key)

    def value(self, metrics: Metrics | None) -> object:
        if metrics is None:
            return None
        return self.read(metrics) if self.read is not None else getattr(metrics, self.key)

    def cell(self, row: Row) -> str:
        """`new`, or `old→new (+delta)` when the two sides differ."""
        a, b = self.value(row.old), self.value(row.new)
        if row.old is None:
            return fmt(b)
        if row.new is None:
            return fmt(a)
        if a == b:
            return fmt(b)
        d = b - a if isinstance(a, (int, float)) and isinstance(b, (int, float)) else None
        sign = "" if d is None else (f" ({d:+.2f})" if isinstance(d, float) else f" ({d:+d})")
        return f"{fmt(a)}→{fmt(b)}{sign}"

    def changed(self, row: Row) -> bool:
        """Among the few deltas a narrow layout shows: the sides differ, or only one side exists."""
        if (row.old is None) != (row.new is None):
            return True
        return self.value(row.old) != self.value(row.new)


COLUMNS: tuple[Column, ...] = (
    Column("ptx_instrs", "ptx instrs", "ptx_instrs"),
    Column("ptx_regs", "ptx regs", "ptx_regs"),
    Column("regs", "regs", "regs"),
    Column("spills", "spills", "spills", read=_spills),
    Column("shared_bytes", "shared", "shared", history=False),
    Column("occupancy", "occupancy", "occ", history=False),
)

HISTORY_COLUMNS: tuple[Column, ...] = tuple(c for c in COLUMNS if c.history)

# where a spec's values came from (Row.spec_source), as the table's `from` column says it
SOURCE_MARK: dict[str, str] = {SpecSource.CONFIG: "config", SpecSource.RECORDED: "recorded",
                               SpecSource.CALL_SITE: "call site", SpecSource.GUESSED: "guessed"}


def outputs_cell(result: dict[str, Any] | None) -> str:
    """--outputs: old and new run on the same inputs."""
    if not result:
        return "-"
    if result.get("fuzzed"):   # synthesised launches (dynamic/oracle.py)
        return fuzzed_cell(result)
    replayed = "launches" in result or "argument" in result   # recorded launches replayed (dynamic/replay.py)
    if result["result"] == Outputs.EQUAL:
        return f"equal ({result['checked']} {'replayed launches' if replayed else 'runs'})"
    if result["result"] == Outputs.DIFFER:
        at = f"replayed {result['n']} {result['argument']}" if replayed else f"n={result['n']} {result['dtype']}"
        return f"DIFFER {at} abs {result['max_abs']:.2g} rel {result['max_rel']:.2g}"
    return Outputs.NOT_RUN


def fuzzed_cell(result: dict[str, Any]) -> str:
    """Synthesised launches: `equal (8 shapes, fuzzed)`, where it first differed, or the A/A's word."""
    if result["result"] == Outputs.EQUAL:
        return f"equal ({result['via']})"
    if result["result"] == Outputs.DIFFER:
        at = "" if result.get("index") is None else f"[{result['index']}]" + (
            f" ({result['guard']} guard)" if result.get("guard") else "")
        return f"DIFFER {result['buffer']}{at} {result['old']} -> {result['new']}"
    return Outputs.NONDETERMINISTIC if result["result"] == Outputs.NONDETERMINISTIC else Outputs.NOT_RUN


def fuzzed_note(result: dict[str, Any]) -> str:
    """The line under the report for a synthesised launch's difference or nondeterminism."""
    if result["result"] == Outputs.NONDETERMINISTIC:
        return f"nondeterministic at {result['shape']}: {result['reason']} ({result['device']})"
    return (f"differ ({result['via']}): first at {fuzzed_cell(result)[7:]}, input {result['shape']}, seed {result['seed']} "
            f"(rtol {result['rtol']:g}, atol {result['atol']:g}, {result['device']}; --repro DIR writes a script)")


def timing_cell(result: dict[str, Any] | None) -> str:
    """--time: new/old with its confidence interval and the A/A noise band."""
    if not result:
        return "-"
    if result["result"] == Outputs.NOT_RUN:
        return Outputs.NOT_RUN
    return (f"{(result['ratio'] - 1) * 100:+.2f}% [{(result['ci_lo'] - 1) * 100:+.2f}, {(result['ci_hi'] - 1) * 100:+.2f}]"
            f" ±{result['band'] * 100:.2f}%" + (f" min {result['floor'] * 100:g}%" if result.get("floor") else "")
            + f" {result['result']}")


PTX_FLOAT = re.compile(r"\b0([fd])([0-9A-Fa-f]{16}|[0-9A-Fa-f]{8})\b")   # PTX's f32 `0fBFD9DB23`, f64 `0d...`


def _float(m: re.Match[str]) -> str:
    kind, digits = m.group(1), m.group(2)
    if (kind == "f") != (len(digits) == 8):
        return m.group()
    raw = bytes.fromhex(digits)
    fmt_ = ">f" if kind == "f" else ">d"
    value = struct.unpack(fmt_, raw)[0]
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    # four decimals when they name the same bits (`-1.7020`), else the fewest digits that do,
    # so two different constants never read the same
    fixed = f"{value:.4f}"
    if 1e-3 <= abs(value) < 1e6 and struct.pack(fmt_, float(fixed)) == raw:
        return fixed
    return next(t for p in range(1, 18) if struct.pack(fmt_, float(t := f"{value:.{p}g}")) == raw)


def readable(why: str) -> str:
    """A reason with PTX's hex float immediates as values: `0fBFD9DB23 -> 0fBFDC28F6` reads
    `-1.7020 -> -1.7200`."""
    return PTX_FLOAT.sub(_float, why)


def explanations(rows: Sequence[Row]) -> list[str]:
    """What every renderer says under its rows: per kernel, what changed in its launch; per row,
    why its verdict (the opcode delta, or the first differing PTX lines)."""
    lines = []
    launched: set[str] = set()
    for r in rows:
        if r.launch and r.kernel not in launched:
            launched.add(r.kernel)
            lines.append(f"{r.kernel}: launch: {r.launch}")
        if r.why:
            lines.append(f"{r.kernel} [{r.target} {r.spec}] {r.verdict}: {readable(r.why)}")
    return lines
