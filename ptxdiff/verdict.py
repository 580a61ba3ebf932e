"""Old vs new for one kernel x spec x target: the verdict, the deltas.

Strongest first: failed (one side did not compile); unmeasured (a changed kernel neither side of
which could be measured: the gate cannot tell what changed, so it blocks); added / removed;
structural (the opcode multiset or a count differs, the values computed differ, or the order of
stores, atomics, barriers, fences, branches and the loads between them changed: what a load reads
or a store leaves depends on it; or the kernel's launch hooks changed, compare/hooked.py);
reordered (same computations, only pure values or loads between
the same two memory operations in another order); constants-only (same instruction sequence, only immediates
differ); identical (normalised PTX equal, register numbering aside).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ptxdiff.metrics import ptx as ptxmod
from ptxdiff.metrics.counts import Metrics
from ptxdiff.strenum import StrEnum


class Verdict(StrEnum):
    """A row's verdict, spelled as the reports and config's `block` spell it (a str: the text is its value)."""

    FAILED = "failed"
    UNMEASURED = "unmeasured"
    ADDED = "added"
    REMOVED = "removed"
    STRUCTURAL = "structural"
    REORDERED = "reordered"
    CONSTANTS_ONLY = "constants-only"
    IDENTICAL = "identical"
    UNPAIRED = "unpaired"
    NEW = "-"          # no base to compare with: every row is new (not in ORDER, never blocks)


# strongest first: the one vocabulary, which config's `block` names too
ORDER = (Verdict.FAILED, Verdict.UNMEASURED, Verdict.ADDED, Verdict.REMOVED, Verdict.STRUCTURAL, Verdict.REORDERED,
         Verdict.CONSTANTS_ONLY, Verdict.IDENTICAL, Verdict.UNPAIRED)
DEFAULT_BLOCK = (Verdict.STRUCTURAL, Verdict.FAILED)   # what blocks without a `block` key


class Outputs(StrEnum):
    """What running old and new on the same inputs said: a row's `outputs.result`."""

    EQUAL = "outputs-equal"
    DIFFER = "outputs-differ"
    NONDETERMINISTIC = "nondeterministic"   # old against old differed: no verdict on new
    NOT_RUN = "not-run"


class Timing(StrEnum):
    """New against old on the GPU, outside or inside the measured noise band: a row's `timing.verdict`."""

    FASTER = "faster"
    SLOWER = "slower"
    WITHIN_NOISE = "within-noise"


DYNAMIC_BLOCK = (Outputs.DIFFER, Timing.SLOWER)   # what config's `block` may name besides ORDER

# Counts (Metrics fields) that make a change structural when they move. sass_instrs is reported but not here:
# ptxas schedules a mere reordering of PTX differently, which is not a structural change.
COUNTED = ("ptx_regs", "ptx_instrs", "ptx_local_bytes", "ptx_shared_bytes", "regs", "spill_store_bytes",
           "spill_load_bytes", "stack_bytes", "local_bytes", "shared_bytes", "num_warps", "num_stages", "maxnreg",
           "num_ctas")
NUMERIC = (*COUNTED, "sass_instrs", "occupancy")


def delta(old: Metrics | None, new: Metrics | None) -> dict[str, int | float]:
    """New minus old of each count (the JSON report's `delta`, in NUMERIC's order); {} without both."""
    if old is None or new is None:
        return {}
    out: dict[str, int | float] = {}
    for key in NUMERIC:
        a, b = getattr(old, key), getattr(new, key)
        out[key] = round(b - a, 4) if isinstance(a, float) or isinstance(b, float) else b - a
    return out


def classify(old_ptx: str, new_ptx: str, old: Metrics, new: Metrics) -> Verdict:
    """Verdict for two successful compiles (their metrics and normalised PTX)."""
    if old_ptx == new_ptx:
        return Verdict.IDENTICAL
    if old.ptx_opcodes != new.ptx_opcodes or any(getattr(old, k) != getattr(new, k) for k in COUNTED):
        return Verdict.STRUCTURAL
    plain_old, plain_new = ptxmod.value_numbers(old_ptx), ptxmod.value_numbers(new_ptx)
    if plain_old == plain_new:
        return Verdict.IDENTICAL
    if ptxmod.value_numbers(old_ptx, mask_immediates=True) == ptxmod.value_numbers(new_ptx, mask_immediates=True):
        return Verdict.CONSTANTS_ONLY
    if Counter(plain_old) == Counter(plain_new):
        return Verdict.STRUCTURAL if order_change(old_ptx, new_ptx) else Verdict.REORDERED
    return Verdict.STRUCTURAL


def order_change(old_ptx: str, new_ptx: str) -> str | None:
    """`bar.sync moved after ld.shared.b32`: the first memory operation, barrier or branch whose
    place among the others moved (ptxmod.memory_order), or None when their order is the same."""
    a, b = ptxmod.memory_order(old_ptx), ptxmod.memory_order(new_ptx)
    if a == b:
        return None
    for x, y in zip(a, b):
        if x != y:
            what, other = _said(x[0]), _said(y[0])
            return f"{what} moved after {'another ' if what == other else ''}{other}"
    longer, side = (a, "old") if len(a) > len(b) else (b, "new")
    return f"{_said(longer[min(len(a), len(b))][0])} only in the {side} order"


def _said(opcode: str) -> str:
    return "a branch target" if opcode == "label" else opcode


def strongest(verdicts: Iterable[str]) -> Verdict | None:
    ranked = [v for v in ORDER if v in set(verdicts)]
    return ranked[0] if ranked else None


WHY_ITEMS = 6      # opcodes or counts named in a reason; the rest are counted
WHY_WIDTH = 60     # characters of each PTX line a reason quotes


def opcode_delta(old: dict[str, Any], new: dict[str, Any]) -> str:
    """`add.f32 -1, sub.f32 +1`: the opcodes whose counts moved, by name."""
    moved = sorted((op, new.get(op, 0) - old.get(op, 0)) for op in set(old) | set(new)
                   if new.get(op, 0) != old.get(op, 0))
    shown = ", ".join(f"{op} {d:+}" for op, d in moved[:WHY_ITEMS])
    return shown + (f", {len(moved) - WHY_ITEMS} more" if len(moved) > WHY_ITEMS else "")


def _cut(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= WHY_WIDTH else line[:WHY_WIDTH - 1] + "…"


def first_difference(old_ptx: str, new_ptx: str) -> str:
    """The first pair of normalised PTX lines that differ: `old line -> new line`."""
    a, b = old_ptx.splitlines(), new_ptx.splitlines()
    for x, y in zip(a, b):
        if x != y:
            return f"{_cut(x)} -> {_cut(y)}"
    longer, extra = (a, "-") if len(a) > len(b) else (b, "+")
    return f"{extra}{_cut(longer[min(len(a), len(b))])}" if longer else ""


def signature_change(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """What the kernel's parameters did, by name, from the two specs' signatures (param -> type,
    "constexpr" for a constexpr): `offset: runtime fp32 -> constexpr`, `n: removed`,
    `k: added (i32)`, `stride: i32 -> i64`, or the order they are passed in. None when equal or
    only renamed in place (the PTX names parameters by position)."""
    if list(old.values()) == list(new.values()) and all(
            a == b for a, b in zip(old, new) if a in new or b in old):
        return None   # only renamed, each in its place with its type: no caller or PTX sees it
    parts = []
    for name in [*old, *(p for p in new if p not in old)]:
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        if b is None:
            parts.append(f"{name}: removed")
        elif a is None:
            parts.append(f"{name}: added ({b})")
        elif "constexpr" in (a, b):
            parts.append(f"{name}: {_kind(a)} -> {_kind(b)}")
        else:
            parts.append(f"{name}: {a} -> {b}")
    kept_old, kept_new = [p for p in old if p in new], [p for p in new if p in old]
    if kept_old != kept_new:
        parts.append(f"parameters reordered: {', '.join(kept_old)} -> {', '.join(kept_new)}")
    return ", ".join(parts) if parts else None


def _kind(typ: str) -> str:
    return typ if typ == "constexpr" else f"runtime {typ}"


def reason(verdict: Verdict, old_ptx: str, new_ptx: str, old: Metrics, new: Metrics,
           signature: str | None = None) -> str | None:
    """Why two successful compiles got their verdict, in one line: the opcode delta of a
    structural change (or the counts that moved), the first differing line of a reordering or a
    constants-only change (static counts are blind there). The full PTX is behind --ptx.
    `signature` (signature_change) goes first; the `.param` lines it explains are not quoted."""
    if signature:
        if verdict == Verdict.IDENTICAL:
            return signature
        rest = reason(verdict, _body(old_ptx), _body(new_ptx), old, new)
        return f"{signature}; {rest}" if rest else signature
    if verdict == Verdict.STRUCTURAL:
        ops = opcode_delta(old.ptx_opcodes, new.ptx_opcodes)
        if ops:
            return ops
        counts = [f"{k} {getattr(old, k)} -> {getattr(new, k)}" for k in COUNTED if getattr(old, k) != getattr(new, k)]
        if counts:
            return ", ".join(counts[:WHY_ITEMS])
        moved = order_change(old_ptx, new_ptx) if Counter(ptxmod.value_numbers(old_ptx)) == \
            Counter(ptxmod.value_numbers(new_ptx)) else None
        return f"order of memory operations changed: {moved}" if moved else \
            "values computed differ: " + first_difference(old_ptx, new_ptx)
    if verdict == Verdict.REORDERED:
        return what_moved(old_ptx, new_ptx) or first_difference(old_ptx, new_ptx)
    if verdict == Verdict.CONSTANTS_ONLY:
        return first_difference(old_ptx, new_ptx)
    return None


REGISTER_NUMBER = re.compile(r"(%[A-Za-z_]+?)\d+\b")


def _masked(ins: ptxmod.Instruction) -> str:
    """An instruction as a reason quotes it, register numbers masked (`ld.param.b32 %r, [K_param_12]`)."""
    text = " ".join(x for x in (ins.predicate, ins.opcode, ", ".join(ins.operands)) if x)
    return _cut(REGISTER_NUMBER.sub(r"\1", text))


def what_moved(old_ptx: str, new_ptx: str) -> str | None:
    """A reordering by what moved: the first instruction of the new order that the old order
    had later, and what it now comes before (`ld.param.b32 %r, [K_param_9] moved before
    ld.param.b32 %r, [K_param_12]`), registers masked; and how many instructions moved in all.
    None where the sides do not compute the same values (not a reordering)."""
    a, b = ptxmod.value_numbers(old_ptx), ptxmod.value_numbers(new_ptx)
    if Counter(a) != Counter(b) or a == b:
        return None
    ins_a, _ = ptxmod.statements(ptxmod.normalise(old_ptx))
    ins_b, _ = ptxmod.statements(ptxmod.normalise(new_ptx))
    places = [k for k, (x, y) in enumerate(zip(a, b)) if x != y]
    # the first place whose instructions read differently once registers are masked (an `add`
    # of two loads swapped reads the same: the loads are what moved)
    i = next((k for k in places if _masked(ins_a[k]) != _masked(ins_b[k])), None)
    more = f" ({len(places)} instructions in another place)" if len(places) > 2 else ""
    if i is None:
        return f"{len(places)} {ins_b[places[0]].opcode} … in another order, the same text once registers are masked"
    return f"{_masked(ins_b[i])} moved before {_masked(ins_a[i])}{more}"


def _body(ptx: str) -> str:
    """Normalised PTX without its `.param` declarations (signature_change names them)."""
    return "\n".join(line for line in ptx.splitlines() if not line.startswith(".param ")) + "\n"


def pair_label(old: str, new: str) -> str:
    """One label for a spec whose values changed: `BLOCK_SIZE=1024 -> 2048 w4 s3`, word by word
    where both labels have the same words, else both labels whole."""
    a, b = old.split(" "), new.split(" ")
    if len(a) != len(b):
        return f"{old} -> {new}"
    words = []
    for x, y in zip(a, b):
        key_x, eq, value_x = x.partition("=")
        key_y, _, value_y = y.partition("=")
        if x == y:
            words.append(x)
        elif eq and key_x == key_y:
            words.append(f"{key_x}={value_x} -> {value_y}")
        else:
            words.append(f"{x} -> {y}")
    return " ".join(words)
