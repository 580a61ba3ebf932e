"""Old vs new for one kernel x spec x target: the verdict, the deltas.

Strongest first: failed; added / removed; structural (the opcode multiset or a count differs,
or the values computed differ); reordered (same computations, other order); constants-only
(same instruction sequence, only immediates differ); identical (normalised PTX equal, register
numbering aside).
"""

from __future__ import annotations

from collections import Counter

from ptxdiff.metrics import ptx as ptxmod

ORDER = ("failed", "added", "removed", "structural", "reordered", "constants-only", "identical")

# Counts that make a change structural when they move. sass_instrs is reported but not here:
# ptxas schedules a mere reordering of PTX differently, which is not a structural change.
COUNTED = ("ptx_regs", "ptx_instrs", "ptx_local_bytes", "ptx_shared_bytes", "regs", "spill_store_bytes",
           "spill_load_bytes", "stack_bytes", "local_bytes", "shared_bytes", "num_warps", "num_stages")
NUMERIC = (*COUNTED, "sass_instrs", "occupancy")


def delta(old: dict | None, new: dict | None) -> dict:
    if not old or not new:
        return {}
    out = {}
    for key in NUMERIC:
        a, b = old.get(key), new.get(key)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            out[key] = round(b - a, 4) if isinstance(a, float) or isinstance(b, float) else b - a
    return out


def classify(old_ptx: str, new_ptx: str, old: dict, new: dict) -> str:
    """Verdict for two successful compiles (metrics dicts and normalised PTX)."""
    if old_ptx == new_ptx:
        return "identical"
    if old.get("ptx_opcodes") != new.get("ptx_opcodes") or any(old.get(k) != new.get(k) for k in COUNTED):
        return "structural"
    plain_old, plain_new = ptxmod.value_numbers(old_ptx), ptxmod.value_numbers(new_ptx)
    if plain_old == plain_new:
        return "identical"
    if ptxmod.value_numbers(old_ptx, mask_immediates=True) == ptxmod.value_numbers(new_ptx, mask_immediates=True):
        return "constants-only"
    if Counter(plain_old) == Counter(plain_new):
        return "reordered"
    return "structural"


def strongest(verdicts) -> str | None:
    ranked = [v for v in ORDER if v in set(verdicts)]
    return ranked[0] if ranked else None
