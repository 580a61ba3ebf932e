"""Plans made again for a compared pair from what its first compiles said: both sides get the
new plan, so the two sides still compile the same values.

A constexpr that is a fact on one side and a guess on the other (`matched`), types a compile
search found where guesses did not compile (`retyped`), guessed sizes the kernel's shapes cannot
take (`refitted`), and guessed sizes over the cost rule of specs/cost.py (`shrunk`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.git.values import Side
from ptxdiff.repo_config import KernelConfig
from ptxdiff.specs import plan as planmod
from ptxdiff.specs.plan import Plan

RETYPE_ROUNDS = 3   # type searches a pair gets, each from the types the one before found


@dataclass
class Need:
    """One (side, kernel) whose results must be produced: per target, a list of spec results.
    Each side is compiled with its own launch inputs: its plan and its config entry."""

    side: Side
    kernel: Kernel
    plan: Plan
    kcfg: KernelConfig
    pair: int                                # the compared pair it belongs to
    results: dict[int, list[SpecResult]] = field(default_factory=dict)
    keys: dict[int, str] = field(default_factory=dict)


def pairs_of(needs: list[Need]) -> list[list[Need]]:
    """The needs grouped by the compared pair they belong to (one or two each)."""
    by_pair: dict[int, list[Need]] = {}
    for need in needs:
        by_pair.setdefault(need.pair, []).append(need)
    return list(by_pair.values())


def _replanned(needs: list[Need], replan: Callable[[Plan, list[SpecResult]], Plan]) -> list[Need]:
    """The needs whose pair `replan` gives a new plan (from both sides' results, the same for
    both sides), with that plan and their results cleared."""
    out: list[Need] = []
    for group in pairs_of(needs):
        results = [r for need in group for rs in need.results.values() for r in rs]
        for need in group:
            _adopt(need, replan(need.plan, results), out)
    return out


def _adopt(need: Need, plan: Plan, out: list[Need]) -> None:
    """A new plan for a need: its results are cleared, and it is listed to compile again."""
    if plan != need.plan:
        need.plan = plan
        need.results.clear()
        out.append(need)


def matched(needs: list[Need]) -> list[Need]:
    """Pairs where a constexpr is a fact on one side (its autotune configs, its defaults) and a
    guess on the other (a launcher whose default cannot be read): the guessing side compiles
    the fact side's values instead, so the two sides differ only where the code does."""
    out: list[Need] = []
    for group in pairs_of(needs):
        if len(group) != 2:
            continue
        specs = [[r.spec for rs in n.results.values() for r in rs if r.spec is not None] for n in group]
        for need, mine, theirs in ((group[0], specs[0], specs[1]), (group[1], specs[1], specs[0])):
            guessed = {k for spec in mine for k in spec.guessed_values}
            facts: dict[str, list[Any]] = {}
            for spec in theirs:
                for k, v in spec.constexprs.items():
                    if k in guessed and k not in spec.guessed_values and isinstance(v, (int, float)) \
                            and v not in facts.setdefault(k, []):
                        facts[k].append(v)
            _adopt(need, need.plan.matched(facts) if facts else need.plan, out)
    return out


def shrunk(needs: list[Need]) -> list[Need]:
    """Pairs where a spec's guessed sizes are over the cost rule (specs/cost.py) on either side
    (`guarded`: not compiled): both sides compile the guessed sizes shrunk, those a heuristic
    computes from stood-in arguments too (plan.shrunk), and the rows say so."""
    def replan(plan: Plan, results: list[SpecResult]) -> Plan:
        return plan.shrunk(True) if any(r.guarded for r in results) else plan
    return _replanned(needs, replan)


def retyped(needs: list[Need]) -> list[Need]:
    """Pairs where a side's compile found types that compile in place of failing guesses
    (`retype`, compile/retype.py): one set of types for both sides, whichever side failed."""
    def replan(plan: Plan, results: list[SpecResult]) -> Plan:
        specs = [(r, r.spec, planmod.sixteen_bit(r.spec.guessed)) for r in results if r.spec is not None]
        found = {planmod.retype_key(spec.constexprs, spec.guessed): (r.retype, bf16) for r, spec, bf16 in specs
                 if r.retype}
        if not found:
            return plan
        # a combination that failed without finding types of its own borrows those found for the
        # others (a pointer's element type seldom follows a constexpr; its search may have stopped
        # at a later error that only its values have), its own family's first; the bf16 family
        # borrows the fp32 family's pointers as bf16
        def lent(to_bf16: bool) -> dict[str, str]:
            out: dict[str, str] = {}
            for types, bf16 in sorted(found.values(), key=lambda f: f[1] is not to_bf16):
                for param, kind in types.items():
                    out.setdefault(param, "*bf16" if to_bf16 and not bf16 and kind == "*fp32" else kind)
            return out
        kept = {key: types for key, (types, _) in found.items()}
        lent_to = {bf16: lent(bf16) for bf16 in (False, True)}
        for r, spec, bf16 in specs:
            if r.error:
                kept.setdefault(planmod.retype_key(spec.constexprs, spec.guessed), lent_to[bf16])
        return plan.retyped(kept)
    return _replanned(needs, replan)


def refitted(needs: list[Need]) -> list[Need]:
    """Pairs where a side's compile found sizes that fit the kernel's shapes in place of failing
    guesses (`refit`, compile/refit.py): both sides compile them."""
    def replan(plan: Plan, results: list[SpecResult]) -> Plan:
        # each guess that failed, by its value: a 16 and a 4 of one name may each have their own fit;
        # where specs found different fits for one (`inner_dim % BLOCK_K == 0` of configs with BLOCK_K 32
        # and 64), the largest, which a power-of-two block of each divides
        found: dict[tuple[str, object], Any] = {}
        for r in results:
            if (spec := r.spec) is None or not r.refit:
                continue
            for name, size in r.refit.items():
                guess = spec.constexprs.get(name)
                if isinstance(guess, (int, float)) and not isinstance(guess, bool):
                    found[(name, guess)] = max(found.get((name, guess), size), size)
        return plan.refitted(found) if found else plan
    return _replanned(needs, replan)


# in order: each sees the results the ones before compiled again
# (`shrunk` is no round of its own: measure.py shrinks a pair in the round that finds it over the rule;
# the last `refitted` fits what a shrink after the first changed: Fast-LLM's `inner_dim % block_size_inner`)
REPLANS: tuple[Callable[[list[Need]], list[Need]], ...] = (
    matched, *[retyped] * RETYPE_ROUNDS, refitted, retyped, refitted)
