"""What the gate compiles a compared kernel with: the base side's word, and the branch's own code.

A config entry (`[tool.ptxdiff.kernels."..."]`) or a recorded launch (`.ptxdiff/launches.jsonl`)
replaces the values a kernel's launch sites pass. Taken from the branch, it would let a change
choose what its own review compiles: a pinned `BLOCK = 1024` hides a change under `BLOCK > 1024`
while the call site now passes 4096. So the gate compiles both sides with the base side's
entries and recordings (`gate`); what the branch adds or changes there is compiled as well for
the report (`report`: its rows never block, and one line says so). Where a pin the gate uses
gives a constexpr a value the branch's launch sites never pass, those sites' values are compiled
as well (`call-site`); a pin of the branch itself that contradicts them is said, and blocks.
Pure: kernels, inputs and entries in, pins and lines out.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ptxdiff.compare.results import Row
from ptxdiff.discovery.callsites import FactKind
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.record.launches import DEFAULT_PATH, Launch
from ptxdiff.repo_config import KernelConfig, SpecConfig
from ptxdiff.specs.launch import LaunchInputs
from ptxdiff.strenum import StrEnum


class Role(StrEnum):
    """What a compared pair's rows decide (see the module doc)."""

    GATE = "gate"
    REPORT = "report"
    CALL_SITE = "call-site"
    PIN = "pin"


NOT_THE_GATE = "branch only, used for the report, not the gate"


@dataclasses.dataclass(frozen=True)
class Contradiction:
    """A pin that gives a constexpr a value none of the kernel's launch sites passes."""

    name: str
    pinned: object
    passed: tuple[Any, ...]
    by: str              # "config FILE" or the recording's path
    sites: tuple[str, ...]

    @property
    def key(self) -> tuple[Any, ...]:
        """What the pin says, wherever its launch site is (a line number moves with an edit)."""
        return self.name, repr(self.pinned), self.passed

    def line(self) -> str:
        passed = "|".join(map(repr, self.passed))
        return (f"{self.by} pins {self.name} = {self.pinned!r} where the launch site passes {passed} "
                f"({', '.join(self.sites)}): the call site's values are compiled as well; update or drop the pin")


def _literal(kernel: Kernel) -> dict[str, tuple[Any, ...]]:
    """Constexprs every launch site of the kernel passes a literal value for: name -> facts."""
    constexprs = {p.name for p in kernel.params if p.constexpr}
    return {name: facts for name, facts in kernel.launch
            if name in constexprs and facts and all(f.kind == FactKind.VALUE for f in facts)}


def _passes(facts: tuple[Any, ...], value: object) -> bool:
    return any(value == f.value and type(value) is type(f.value) for f in facts)


def contradictions(kernel: Kernel, entry: KernelConfig | None, recorded: tuple[Launch, ...],
                   source: str) -> list[Contradiction]:
    """The pins of a config entry (its constexprs, each `specs` entry's) and of recorded launches
    that give a constexpr a value the kernel's launch sites, all literal, never pass."""
    literal = _literal(kernel)
    out: list[Contradiction] = []
    pinned = [(layer.constexprs, f"config {source}") for layer in ((entry.base, *entry.specs) if entry else ())]
    pinned += [(launch.constexprs, f"recorded launch ({DEFAULT_PATH})") for launch in recorded]
    for values, by in pinned:
        for name, value in values.items():
            facts = literal.get(name)
            found = Contradiction(name, value, tuple(f.value for f in facts or ()), by,
                                  tuple(dict.fromkeys(f.site for f in facts or () if f.site)))
            if facts and not _passes(facts, value) and found not in out:
                out.append(found)
    return out


def unpinned(entry: KernelConfig, names: set[str]) -> KernelConfig:
    """The entry without its values for `names` (its types and other values stay: they may be
    what makes the kernel compile at all)."""
    def without(layer: SpecConfig) -> SpecConfig:
        return dataclasses.replace(layer, constexprs={k: v for k, v in layer.constexprs.items() if k not in names})
    return dataclasses.replace(entry, base=without(entry.base), specs=tuple(without(s) for s in entry.specs))


def call_site_inputs(inputs: LaunchInputs, entry: KernelConfig) -> LaunchInputs:
    """A side's launch inputs with no recording and `entry` (an unpinned one) as its config."""
    text = entry.key() if entry.key() != KernelConfig().key() else ""
    return dataclasses.replace(inputs, recorded=(), config=text)


def branch_line(rows: list[Row]) -> str | None:
    """The one line that says a branch's own entries or recordings did not decide its gate (where
    they add rows to the report)."""
    kernels = sorted({r.kernel for r in rows if (r.launch or "").startswith(NOT_THE_GATE)})
    if not kernels:
        return None
    shown = ", ".join(kernels[:3]) + (f" and {len(kernels) - 3} more" if len(kernels) > 3 else "")
    return (f"the branch's own config entries or recorded launches ({shown}) differ from the base's: "
            "used for the report (rows marked 'branch only'), not the gate; the base's decide it")


def deduped(rows: list[Row]) -> list[Row]:
    """Rows without the report's that say what a gate row of the same kernel says already."""
    def same(r: Row) -> tuple[Any, ...]:
        return r.kernel, r.spec, r.target, r.verdict
    gate = {same(r) for r in rows if not (r.launch or "").startswith(NOT_THE_GATE)}
    return [r for r in rows if not (r.launch or "").startswith(NOT_THE_GATE) or same(r) not in gate]
