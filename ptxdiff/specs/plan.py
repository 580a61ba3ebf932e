"""Where the values of a kernel's specs come from, decided once per compared pair.

Precedence, strongest first: the user's config, recorded launches (`ptxdiff record`), the
repository's own launch sites, guesses from the kernel's use of each parameter. Config is
applied in the worker (resolve.py); this module gathers the rest into a `Plan` that both sides
of a comparison receive, so a guess is the same value on both sides and deltas stay
meaningful. The plan is part of the cache key. Pure: discovery facts in, a plan out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ptxdiff.discovery.callsites import Fact
from ptxdiff.discovery.hints import Hint
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.record.launches import Launch
from ptxdiff.specs.launch import LaunchInputs

SOURCES = ("config", "recorded", "call-site", "guessed")
DEFAULT_MAX_SPECS = 6


@dataclass(frozen=True)
class Choice:
    """Candidate values for one parameter (a constexpr's values, or a runtime param's type)."""

    name: str
    values: tuple
    source: str        # "call-site" | "guessed"
    why: str = ""


@dataclass(frozen=True)
class Plan:
    recorded: tuple[Launch, ...] = ()
    recorded_note: str | None = None      # recorded launches exist but do not fit this kernel
    constexprs: tuple[Choice, ...] = ()
    types: tuple[Choice, ...] = ()        # runtime params: values are types ("*fp32", "i32", "constexpr")
    optional: tuple[str, ...] = ()        # runtime params the kernel tests against None: compiled both ways
    options: tuple[Choice, ...] = ()      # num_warps / num_stages from launch sites
    max_specs: int = DEFAULT_MAX_SPECS
    cover: bool = False                   # the other side has too many combinations: a covering set here too

    def key(self) -> str:
        return json.dumps({
            "recorded": [launch.spec_text for launch in self.recorded],
            "constexprs": [[c.name, [repr(v) for v in c.values], c.source] for c in self.constexprs],
            "types": [[c.name, list(c.values), c.source] for c in self.types],
            "optional": list(self.optional), "options": [[c.name, list(c.values), c.source] for c in self.options],
            "max_specs": self.max_specs, "cover": self.cover})

    def choice(self, name: str, kind: str = "constexprs") -> Choice | None:
        return next((c for c in getattr(self, kind) if c.name == name), None)


def _guess(name: str, hint: Hint, kernels: list[Kernel]) -> Choice:
    """A guessed constexpr's values, the same on both sides: where a side compares it with
    literals, every branch of either side is compiled (the values of both sides, united)."""
    hints = [q.hint for k in kernels for q in k.params if q.name == name and q.constexpr and q.hint is not None]
    if not any(h.branches for h in hints):
        return Choice(name, hint.values, "guessed", hint.why)
    values: list = []
    for h in hints:
        values += [v for v in h.values if not any(v == w and type(v) is type(w) for w in values)]
    whys = list(dict.fromkeys(h.why for h in hints))
    return Choice(name, tuple(values), "guessed", " / ".join(whys))


def make(this: Kernel, old: Kernel | None, new: Kernel | None, inputs: LaunchInputs,
         max_specs: int = DEFAULT_MAX_SPECS) -> Plan:
    """The plan of one side (`this`) of a kernel pair: that side's own launch inputs (each side is
    compiled with what it is launched with), and for the rest the same guesses on both sides
    (the newer side's hints first, the older side's for params only it has)."""
    kernels = [k for k in (new, old) if k is not None]
    facts: dict[str, tuple[Fact, ...]] = dict(this.launch)
    own = {p.name for p in this.params}
    constexprs: dict[str, Choice] = {}
    types: dict[str, Choice] = {}
    optional: list[str] = []
    for kernel in kernels:
        for p in kernel.params:
            if p.name in (constexprs if p.constexpr else types):
                continue  # a param may be a constexpr on one side and a runtime param on the other
            fact = facts.get(p.name) if p.name in own else None
            if p.constexpr:
                if fact and all(f.kind in ("value", "none") for f in fact):
                    constexprs[p.name] = Choice(p.name, tuple(f.value for f in fact), "call-site",
                                                "passed by the launch site")
                elif p.hint is not None:
                    constexprs[p.name] = _guess(p.name, p.hint, kernels)
                continue
            if fact and len(fact) == 1:
                f = fact[0]
                if f.kind == "none":
                    types[p.name] = Choice(p.name, ("constexpr",), "call-site", "None passed")
                    continue
                if f.kind == "type" and f.value:
                    types[p.name] = Choice(p.name, (f.value,), "call-site", "from the launch site")
                    continue
                if f.kind == "value" and f.value == 1 and isinstance(f.value, int) and not isinstance(f.value, bool):
                    types[p.name] = Choice(p.name, ("constexpr1",), "call-site", "1 passed (triton makes it a constant)")
                    continue
                if f.kind == "value" and isinstance(f.value, (int, float)):
                    t = "fp32" if isinstance(f.value, float) else "u1" if isinstance(f.value, bool) else "i32"
                    types[p.name] = Choice(p.name, (t,), "call-site", f"{f.value!r} passed")
                    continue
            if p.optional:
                optional.append(p.name)
            types[p.name] = Choice(p.name, (p.kind or "i32",), "guessed",
                                   "from its use in the kernel" if p.kind else "an integer (nothing says otherwise)")
    options = tuple(Choice(name, tuple(f.value for f in facts[name]), "call-site", "passed by the launch site")
                    for name in ("num_warps", "num_stages") if name in facts
                    and all(f.kind == "value" and isinstance(f.value, int) for f in facts[name]))
    return Plan(inputs.recorded, inputs.recorded_note, tuple(constexprs.values()), tuple(types.values()),
                tuple(optional), options, max_specs)
