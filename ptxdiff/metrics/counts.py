"""One compiled spec's numbers as a record: `Metrics`.

The compile worker makes it (from the PTX, ptxas's log and cuobjdump's resource usage) and sends
its JSON; `from_json` is where that JSON (from the worker or the cache) becomes the record again,
and it refuses a value without every count. `as_json` gives the report's `old`/`new` objects:
the fields in the order declared here, which is the JSON report's order (docs/usage.md, Metrics).
Light on purpose: the diff driver's renderers read it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class Metrics:
    """What one compile of one spec on one target measured (the histograms are not to be mutated)."""

    ptx_regs: int                      # virtual registers declared in the PTX
    ptx_regs_by_type: dict[str, int]   # the same, per register type (`b32`, `pred`, ...)
    ptx_instrs: int
    ptx_opcodes: dict[str, int]        # instructions per full mnemonic
    ptx_local_bytes: int               # `.local` declared in the PTX
    ptx_shared_bytes: int              # `.shared` declared in the PTX
    regs: int                          # registers after ptxas (cuobjdump)
    spill_store_bytes: int
    spill_load_bytes: int
    stack_bytes: int
    local_bytes: int
    shared_bytes: int                  # static and dynamic shared memory of a launch
    sass_instrs: int
    occupancy: float                   # resident warps over the target's maximum
    num_warps: int
    num_stages: int
    maxnreg: int                       # 0: no cap
    num_ctas: int

    def as_json(self) -> dict[str, Any]:
        """The JSON report's object (fresh histograms: the caller may keep it)."""
        return {f.name: dict(v) if isinstance(v := getattr(self, f.name), dict) else v for f in fields(self)}

    @classmethod
    def from_json(cls, value: object) -> Metrics:
        """The record of a metrics object; ValueError where a count is missing or not a finite
        number, or a histogram is not names to counts. Other keys are ignored."""
        if not isinstance(value, dict):
            raise ValueError("metrics: not an object")
        for name in _COUNTS:
            if not is_count(value.get(name)):
                raise ValueError(f"metrics: {name} is not a count")
        for name in _HISTOGRAMS:
            got = value.get(name)
            if not isinstance(got, dict) or not all(isinstance(k, str) and is_count(v) for k, v in got.items()):
                raise ValueError(f"metrics: {name} is not a histogram")
        return cls(**{name: value[name] for name in _NAMES})


def is_count(v: object) -> bool:
    """A finite number (not a flag): what a count in JSON must be."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_NAMES = tuple(f.name for f in fields(Metrics))
_HISTOGRAMS = ("ptx_regs_by_type", "ptx_opcodes")
_COUNTS = tuple(n for n in _NAMES if n not in _HISTOGRAMS)
