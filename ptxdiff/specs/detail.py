"""A spec as its results and rows hold it: `SpecDetail`, the values it compiled with in JSON's terms.

A `Spec` (resolve.py) holds Python values; a result read back from the cache or a compile
worker holds what JSON keeps of them (a value JSON has no form for, as its repr). So a result,
its row and every reader after them hold this record of exactly that, made from the spec
(`Spec.detail`) or from its JSON (`from_json`: a cache entry, a worker's answer) and written back
by `as_json` (the cache, the JSON report), in the key order the report has always had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ptxdiff.specs import guesses
from ptxdiff.specs.guesses import Guess, GuessKind

# the JSON's own keys, each with its kind; any other key is a Config's compile option (between
# num_stages and divisible_by_16)
_TYPES: dict[str, type] = {"signature": dict, "constexprs": dict, "num_warps": int, "num_stages": int,
                           "divisible_by_16": list, "source": str, "guessed": dict, "notes": list, "heuristics": list}


@dataclass(frozen=True)
class SpecDetail:
    """What a result's spec compiled with: the values that tell it apart, where they came from,
    which are guesses, and the notes on it."""

    signature: Mapping[str, str] = field(default_factory=dict)     # every param in order; constexprs as "constexpr"
    constexprs: Mapping[str, object] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    options: tuple[tuple[str, object], ...] = ()   # a Config's other compile options (maxnreg, num_ctas)
    divisible: tuple[str, ...] | None = None       # params triton marks divisible by 16; None: every pointer
    source: str = "config"                         # the weakest source of its values (plan.SOURCES)
    guessed: tuple[Guess, ...] = ()                # one per key of the JSON's `guessed` (guesses.py)
    notes: tuple[str, ...] = ()
    heuristics: tuple[str, ...] = ()               # constexprs a `@triton.heuristics` function computed

    @property
    def guessed_values(self) -> dict[str, object]:
        """{name: value} of the guessed constexprs (a type or a heuristic's input is no constexpr)."""
        return guesses.of_kind(self.guessed, GuessKind.VALUE)

    @property
    def compile_options(self) -> tuple[tuple[str, object], ...]:
        """Warps, stages and the Config's other options."""
        return (("num_warps", self.num_warps), ("num_stages", self.num_stages), *self.options)

    @classmethod
    def from_json(cls, value: object) -> SpecDetail:
        """The record of a spec's JSON (`as_json`); ValueError where a key holds the wrong kind of
        value. A key left out takes its default; a key it does not know is a compile option."""
        if not isinstance(value, dict):
            raise ValueError(f"spec: {type(value).__name__}")
        for name, kind in _TYPES.items():
            if value.get(name) is not None and not isinstance(value[name], kind):
                raise ValueError(f"spec {name}: {type(value[name]).__name__}")
        divisible = value.get("divisible_by_16")
        return cls(signature=value.get("signature") or {}, constexprs=value.get("constexprs") or {},
                   num_warps=value.get("num_warps", 4), num_stages=value.get("num_stages", 3),
                   options=tuple((k, v) for k, v in value.items() if k not in _TYPES),
                   divisible=tuple(divisible) if divisible is not None else None,
                   source=value.get("source", "config"), guessed=guesses.from_json(value.get("guessed")),
                   notes=tuple(value.get("notes") or ()), heuristics=tuple(value.get("heuristics") or ()))

    def as_json(self) -> dict[str, Any]:
        """The JSON `from_json` reads back (`heuristics` only where a heuristic computed one)."""
        return {"signature": dict(self.signature), "constexprs": dict(self.constexprs),
                "num_warps": self.num_warps, "num_stages": self.num_stages, **dict(self.options),
                "divisible_by_16": list(self.divisible) if self.divisible is not None else None,
                "source": self.source, "guessed": {g.key: g.value for g in self.guessed},
                "notes": list(self.notes), **({"heuristics": list(self.heuristics)} if self.heuristics else {})}
