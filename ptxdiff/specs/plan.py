"""Where the values of a kernel's specs come from, decided once per compared pair.

Precedence, strongest first: the user's config, recorded launches (`ptxdiff record`), the
repository's own launch sites, guesses from the kernel's use of each parameter. Config is
applied in the worker (resolve.py); this module gathers the rest into a `Plan` that both sides
of a comparison receive, so a guess is the same value on both sides and deltas stay
meaningful. The plan is part of the cache key. Pure: discovery facts in, a plan out.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

from ptxdiff.discovery import caps
from ptxdiff.discovery.callsites import Fact, FactKind
from ptxdiff.discovery.guards import changed_guards
from ptxdiff.discovery.hints import Hint
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.discovery.params import ParamMark
from ptxdiff.record.launches import Launch
from ptxdiff.specs import guesses as guessmod
from ptxdiff.specs.guesses import Guess, GuessKind
from ptxdiff.specs.launch import LaunchInputs
from ptxdiff.strenum import StrEnum


class SpecSource(StrEnum):
    """Where a spec's values come from, most trusted first (the JSON report's `spec_source`)."""

    CONFIG = "config"
    RECORDED = "recorded"
    CALL_SITE = "call-site"
    GUESSED = "guessed"


SOURCES = tuple(SpecSource)   # most trusted first
DEFAULT_MAX_SPECS = 6


@dataclass(frozen=True)
class Choice:
    """Candidate values for one parameter (a constexpr's values, or a runtime param's type)."""

    name: str
    values: tuple[object, ...]
    source: SpecSource        # CALL_SITE or GUESSED
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
    shrink: int = 1                       # guessed sizes divided by this (over the cost rule: specs/cost.py)
    families: tuple[str, ...] = ()        # element types guessed float pointers are compiled with, each
    # types a compile search found where guesses did not compile (compile/retype.py), per
    # combination of constexpr values (`combo_key`): a flag may make a parameter a pointer or an int
    retypes: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    # guessed constexpr values a compile search replaced because the kernel's shapes (or types)
    # could not take them (compile/refit.py): (name, guessed, compiled instead)
    refits: tuple[tuple[str, object, object], ...] = ()
    # constexprs a launch site passes an expression for that offline reading cannot tell
    # (`BLOCK=triton.next_power_of_2(n)`): their default, if any, is one value among the guesses
    unread: tuple[str, ...] = ()
    # constexprs that guard a statement the two sides differ in (discovery/guards.py): every
    # combination of their values is compiled (specs/resolve.py, bounded by GUARDED_COMBINATIONS)
    guards: tuple[str, ...] = ()
    # runtime ints a heuristic tests, with a size on each side of each test (discovery/evidence.py
    # `heuristic_sizes`): the heuristic is evaluated at each (specs/resolve.py)
    sizes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # constexprs every launch site passes one expression, with the same values: compiled together
    # (specs/resolve.py), since no launch crosses them
    alike: tuple[tuple[str, ...], ...] = ()

    def key(self) -> str:
        return json.dumps({
            "recorded": [launch.spec_text for launch in self.recorded],
            "constexprs": [[c.name, [repr(v) for v in c.values], c.source] for c in self.constexprs],
            "types": [[c.name, list(c.values), c.source] for c in self.types],
            "optional": list(self.optional), "options": [[c.name, list(c.values), c.source] for c in self.options],
            "max_specs": self.max_specs, "cover": self.cover, **({"shrink": self.shrink} if self.shrink > 1 else {}),
            **({"families": list(self.families)} if self.families else {}),
            **({"retypes": [[k, list(map(list, v))] for k, v in self.retypes]} if self.retypes else {}),
            **({"refits": [list(r) for r in self.refits]} if self.refits else {}),
            **({"unread": list(self.unread)} if self.unread else {}),
            **({"guards": list(self.guards)} if self.guards else {}),
            **({"sizes": [[n, list(v)] for n, v in self.sizes]} if self.sizes else {}),
            **({"alike": [list(g) for g in self.alike]} if self.alike else {})})

    def choice(self, name: str, kind: str = "constexprs") -> Choice | None:
        return next((c for c in getattr(self, kind) if c.name == name), None)

    def shrunk_note(self) -> str | None:
        return (f"guessed sizes divided by {self.shrink}: the guesses' largest tile is over the cost rule's "
                "elements per thread (specs/cost.py)") if self.shrink > 1 else None

    def shrunk(self, heuristic_sizes: bool = False) -> Plan:
        """This plan with its guessed sizes (powers of two from 32) divided by SHRINK, at least
        MIN_SIZE: the guesses are over the cost rule (specs/cost.py). Up to MAX_SHRINK in all
        (a rule of the specs, never a loop); facts stay. With
        `heuristic_sizes` (a heuristic computed sizes from representative ints) the sizes it
        computes are divided too (specs/resolve.py)."""
        if self.shrink >= MAX_SHRINK:
            return self
        fit = {(name, new) for name, _, new in self.refits}   # what a refit found stays: smaller, it fails again
        constexprs = tuple(Choice(c.name, tuple(v if (c.name, v) in fit else smaller(v) for v in c.values),
                                  c.source, c.why) if c.source == SpecSource.GUESSED else c for c in self.constexprs)
        changed = constexprs != self.constexprs or heuristic_sizes
        return dataclasses.replace(self, constexprs=constexprs, shrink=self.shrink * SHRINK) if changed else self

    def shrunk_size(self, value: object) -> object:
        """A size a heuristic computed from stand-ins, divided as often as this plan's guessed sizes were."""
        factor = 1
        while factor < self.shrink:
            value, factor = smaller(value), factor * SHRINK
        return value

    def matched(self, facts: dict[str, list[object]]) -> Plan:
        """This plan with the guessed constexprs that the other side of the pair has as facts
        (autotune configs, defaults) taking those values."""
        given = {c.name: c for c in self.constexprs}
        for name, values in facts.items():
            if name in self.unread and name in given:   # a computed launch value: the facts and every branch
                values = list(dict.fromkeys([*values, *given[name].values]))
            if name not in given or given[name].source == SpecSource.GUESSED:
                given[name] = Choice(name, tuple(values), SpecSource.GUESSED, "as the other side's configs give it")
        constexprs = tuple(given.values())
        return dataclasses.replace(self, constexprs=constexprs) if constexprs != self.constexprs else self

    def retyped(self, found: dict[str, dict[str, str]]) -> Plan:
        """This plan with the types a compile search found, per combination of constexpr values;
        what it had found before stays, a later search (from those types) adds params."""
        have = dict(self.retypes)
        for combo, types in found.items():
            merged = dict(have.get(combo, ()))
            for param, kind in types.items():
                merged.setdefault(param, kind)
            have[combo] = tuple(sorted(merged.items()))
        retypes = tuple(sorted(have.items()))
        return dataclasses.replace(self, retypes=retypes) if retypes != self.retypes else self

    def refitted(self, found: dict[tuple[str, object], object]) -> Plan:
        """This plan with guessed values that do not fit the kernel replaced, {(name, guessed):
        instead}: each value of the guessed choice that equals the guess."""
        constexprs, refits = list(self.constexprs), list(self.refits)
        for i, c in enumerate(constexprs):   # each value mapped once: one fit never replaces another's
            if c.source != SpecSource.GUESSED or not any((c.name, v) in found for v in c.values):
                continue
            refits += [(c.name, v, found[(c.name, v)]) for v in c.values if (c.name, v) in found]
            constexprs[i] = dataclasses.replace(c, values=tuple(dict.fromkeys(found.get((c.name, v), v)
                                                                              for v in c.values)))
        if not refits or tuple(refits) == self.refits:
            return self
        return dataclasses.replace(self, constexprs=tuple(constexprs), refits=tuple(refits))

    def refit_notes(self) -> list[str]:
        return [f"{name}: guessed {old}, which does not fit the kernel; {new} does"
                for name, old, new in self.refits]

    def retype_for(self, constexprs: Mapping[str, object], guessed: Iterable[Guess]) -> dict[str, str]:
        """The searched types of the spec with these constexprs and guesses (as `SpecDetail`
        holds them)."""
        return dict(dict(self.retypes).get(retype_key(constexprs, guessed), ()))


def combo_key(constexprs: Mapping[str, object]) -> str:
    """One spec's constexpr values as both sides and the cache see them (`SpecDetail` form)."""
    return json.dumps(sorted(constexprs.items()), default=repr)


def sixteen_bit(guessed: Iterable[Guess]) -> bool:
    """Whether a spec is of the bf16 family: a guessed pointer of its is bf16."""
    return "*bf16" in guessmod.of_kind(guessed, GuessKind.TYPE).values()


def retype_key(constexprs: Mapping[str, object], guessed: Iterable[Guess]) -> str:
    """Where a compile search's types are kept: per combination of constexpr values and family,
    so that a type the bf16 family needs (`tl.div_rn` takes fp32 only) stays its own."""
    return combo_key(constexprs) + (" bf16" if sixteen_bit(guessed) else "")


SHRINK = 4
MAX_SHRINK = SHRINK * SHRINK   # guessed sizes shrink twice at most: a square tile of 1024 ends at 64
FAMILIES = ("fp32", "bf16")
# bf16 pointers with fp64 float scalars: what torch.compile's generated code launches a kernel
# with (Inductor passes Python floats as fp64; eager launches pass fp32)
WIDE = "bf16/fp64"
FAMILY = "element types"   # the combination variable of `families` (no parameter has a space)
MIN_SIZE = 16


def smaller(value: object) -> object:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 32 and value & (value - 1) == 0:
        return max(MIN_SIZE, value // SHRINK)
    return value


def _guess(name: str, hint: Hint, kernels: list[Kernel]) -> Choice:
    """A guessed constexpr's values, the same on both sides: where a side compares it with
    literals, every branch of either side is compiled (the values of both sides, united). A flag
    the sides guess apart (one compiles it one way only, hints.required_flags) is compiled both
    ways: a branch that breaks one way of its kernel (`if not FLAG: z = ...`, z read after) does not
    thereby keep the other way from being compiled, on either side."""
    hints = [q.hint for k in kernels for q in k.params if q.name == name and q.constexpr and q.hint is not None]
    flags = [h for h in hints if all(isinstance(v, bool) for v in h.values)]
    if len(flags) == len(hints) > 1 and len({h.values for h in flags}) > 1:
        return Choice(name, (False, True), SpecSource.GUESSED, " / ".join(dict.fromkeys(h.why for h in hints)))
    if not any(h.branches for h in hints):
        return Choice(name, hint.values, SpecSource.GUESSED, hint.why)
    values: list[object] = []
    for h in hints:
        values += [v for v in h.values if not any(v == w and type(v) is type(w) for w in values)]
    whys = list(dict.fromkeys(h.why for h in hints))
    return Choice(name, tuple(values), SpecSource.GUESSED, " / ".join(whys))


def _unread(name: str, hint: Hint | None, kernels: list[Kernel], facts: list[Fact]) -> Choice:
    """A constexpr a launch site computes (`BLOCK=triton.next_power_of_2(min(n, 4096))`): the
    values other sites pass, and every value the kernel's comparisons of it separate (the
    guesses), so a change under `if BLOCK == 1024:` or its `else` is compiled either way."""
    values: list[object] = []
    guessed = _guess(name, hint, kernels).values if hint is not None else ()
    unread = [f for f in facts if f.kind in (FactKind.EXPR, FactKind.TYPE)]
    why = "the launch site computes it: every branch of its comparisons"
    branches = any(q.hint.branches for k in kernels for q in k.params if q.name == name and q.hint is not None)
    if not branches and unread and all(f.kind == FactKind.EXPR and isinstance(f.value, tuple) for f in unread):
        # every site that computes it caps it (`min(K, 16)`, discovery/caps.py): the guessed sizes
        # within the caps, or the largest size they allow, never one its launcher cannot pass (the
        # values of the kernel's own comparisons stay: a change under any branch is compiled)
        bound = caps.hull([f.value for f in unread if isinstance(f.value, tuple)])
        kept = tuple(v for v in guessed if caps.within(v, bound))
        size = caps.fitting_size(bound)
        if kept != guessed and not any(type(v) is int for v in kept) and size is not None:
            kept = (*kept, size)
        if any(type(v) is int for v in kept) or not any(type(v) is int for v in guessed):
            guessed = kept
            why += f", within the launch site's caps ({caps.shown(bound)})"
    for v in [*(f.value for f in facts if f.kind == FactKind.VALUE), *guessed]:
        if v not in values:   # 0, 0.0 and False select the same branches: one of them is enough
            values.append(v)
    return Choice(name, tuple(values), SpecSource.GUESSED, why)


def _unread_facts(facts: tuple[Fact, ...] | None) -> bool:
    return bool(facts) and any(f.kind in (FactKind.EXPR, FactKind.TYPE) for f in facts or ())


def _across(this: Kernel, other: Kernel, kernels: list[Kernel], constexprs: dict[str, Choice],
            unread: list[str]) -> None:
    """The values of a constexpr whose launch the two sides give differently, compiled on both
    sides, so each value's row compares the same value: where either side's launch site computes
    it (`B = triton.next_power_of_2(min(n, 4096))` where the other passed 1024: every branch of
    the kernel's comparisons of it, on both sides), and where the sides' sites pass values that
    overlap (a second site that passes the other value of a flag: both values on both sides).
    Sites that pass other values altogether (1024 -> 2048) keep comparing old with new."""
    mine, theirs = dict(this.launch), dict(other.launch)
    for p in this.params:
        choice = constexprs.get(p.name)
        a, b = mine.get(p.name), theirs.get(p.name)
        if not p.constexpr or choice is None or not b or a == b:
            continue
        hint = next((q.hint for q in other.params if q.name == p.name and q.constexpr), None) or p.hint
        if _unread_facts(a) or _unread_facts(b):
            values = _unread(p.name, hint, kernels, [*(a or ()), *b]).values if hint is not None else \
                tuple(f.value for f in (*(a or ()), *b) if f.kind == FactKind.VALUE)
            why = "a side's launch site computes it: every branch of its comparisons, on both sides"
        elif a and {f.value for f in a} & {f.value for f in b}:
            values, why = tuple(f.value for f in b), "a value the other side's launch site passes"
        else:
            continue
        merged = tuple(dict.fromkeys([*choice.values, *values]))
        if merged == choice.values:
            continue
        if choice.source == SpecSource.CALL_SITE and not _unread_facts(b):
            constexprs[p.name] = Choice(p.name, merged, SpecSource.CALL_SITE, f"{choice.why}; and {why}")
            continue
        constexprs[p.name] = Choice(p.name, merged, SpecSource.GUESSED, why)
        if p.name not in unread:
            unread.append(p.name)


def make(this: Kernel, old: Kernel | None, new: Kernel | None, inputs: LaunchInputs,
         max_specs: int = DEFAULT_MAX_SPECS) -> Plan:
    """The plan of one side (`this`) of a kernel pair: that side's own launch inputs (each side is
    compiled with what it is launched with), and for the rest the same guesses on both sides
    (the newer side's hints first, the older side's for params only it has)."""
    kernels = [k for k in (new, old) if k is not None]
    facts: dict[str, tuple[Fact, ...]] = dict(this.launch)
    own = {p.name for p in this.params}
    # where this side's launch cannot be read (no launch site found, or a value it cannot tell)
    # what the other side's launch sites pass is the best guess: one side never compiles a fact
    # while the other compiles a guess for the same parameter. A readable site that does not pass
    # a value means the default, a fact of its own.
    other = next((k for k in kernels if k is not this), None)
    borrowed = {name: f for name, f in (other.launch if other is not None else ())
                if not facts or name in facts and not all(x.kind in (FactKind.VALUE, FactKind.NONE) for x in facts[name])}
    constexprs: dict[str, Choice] = {}
    types: dict[str, Choice] = {}
    optional: list[str] = []
    unread: list[str] = []
    unused: set[str] = set()   # runtime params a side's use says nothing of: the other side's use types them
    for kernel in kernels:
        for p in kernel.params:
            if p.name in (constexprs if p.constexpr else types) and not (p.kind and p.name in unused):
                continue  # a param may be a constexpr on one side and a runtime param on the other
            unused.discard(p.name)
            fact = facts.get(p.name) if p.name in own else None
            if p.constexpr:
                lent = borrowed.get(p.name) if p.name in own else None
                if fact and any(f.kind in (FactKind.EXPR, FactKind.TYPE) for f in fact):   # a value we cannot tell
                    unread.append(p.name)
                    constexprs[p.name] = _unread(p.name, p.hint, kernels, [*fact, *(lent or ())])
                elif fact and all(f.kind in (FactKind.VALUE, FactKind.NONE) for f in fact):
                    constexprs[p.name] = Choice(p.name, tuple(f.value for f in fact), SpecSource.CALL_SITE,
                                                "passed by the launch site")
                elif lent and all(f.kind in (FactKind.VALUE, FactKind.NONE) for f in lent):
                    constexprs[p.name] = Choice(p.name, tuple(f.value for f in lent), SpecSource.GUESSED,
                                                "as the other side's launch site passes it")
                elif p.hint is not None:
                    constexprs[p.name] = _guess(p.name, p.hint, kernels)
                continue
            if p.kind == ParamMark.CONSTEXPR1 and not (fact and any(f.kind == FactKind.VALUE for f in fact)):
                # `x.stride(-1)` at the launch site is 1 for the contiguous tensor a descriptor needs
                types[p.name] = Choice(p.name, (ParamMark.CONSTEXPR1,), SpecSource.GUESSED, "a descriptor's innermost stride: 1")
                continue
            if fact and len(fact) == 1:
                f = fact[0]
                if f.kind == FactKind.NONE:
                    types[p.name] = Choice(p.name, ("constexpr",), SpecSource.CALL_SITE, "None passed")
                    continue
                if f.kind == FactKind.TYPE and f.value:
                    types[p.name] = Choice(p.name, (f.value,), SpecSource.CALL_SITE, "from the launch site")
                    continue
                if f.kind == FactKind.VALUE and f.value == 1 and isinstance(f.value, int) and not isinstance(f.value, bool):
                    types[p.name] = Choice(p.name, (ParamMark.CONSTEXPR1,), SpecSource.CALL_SITE,
                                           "1 passed (triton makes it a constant)")
                    continue
                if f.kind == FactKind.VALUE and isinstance(f.value, (int, float)):
                    t = "fp32" if isinstance(f.value, float) else "u1" if isinstance(f.value, bool) else "i32"
                    types[p.name] = Choice(p.name, (t,), SpecSource.CALL_SITE, f"{f.value!r} passed")
                    continue
            if p.optional and p.name not in optional:
                optional.append(p.name)
            if not p.kind:
                unused.add(p.name)
            types[p.name] = Choice(p.name, (p.kind or "i32",), SpecSource.GUESSED,
                                   "from its use in the kernel" if p.kind else "an integer (nothing says otherwise)")
    if other is not None:
        _across(this, other, kernels, constexprs, unread)
    options = tuple(Choice(name, tuple(f.value for f in given[name]), source, why)
                    for given, source, why in ((facts, SpecSource.CALL_SITE, "passed by the launch site"),
                                               (borrowed, SpecSource.GUESSED, "as the other side's launch site passes it"))
                    for name in ("num_warps", "num_stages") if name in given
                    and all(f.kind == FactKind.VALUE and isinstance(f.value, int) for f in given[name]))
    # a conversion (on either side) is a no-op under fp32 guesses: bf16 pointers (and fp64
    # scalars) too, so adding or dropping one shows
    families = _families(kernels)
    guards = changed_guards(old.guards, new.guards, frozenset(p.name for p in old.params if p.constexpr)
                            & frozenset(p.name for p in new.params if p.constexpr)) if old and new else ()
    return Plan(inputs.recorded, inputs.recorded_note, tuple(constexprs.values()), tuple(types.values()),
                tuple(optional), options, max_specs, families=families, unread=tuple(unread),
                guards=tuple(g for g in guards if g in constexprs and len(constexprs[g].values) > 1),
                sizes=_heuristic_sizes(kernels), alike=_alike(this, constexprs))


def _alike(this: Kernel, constexprs: dict[str, Choice]) -> tuple[tuple[str, ...], ...]:
    """This side's groups of constexprs passed one expression whose choices are the sites' values,
    the same for each (`Plan.alike`)."""
    def values(name: str) -> tuple[object, ...] | None:
        c = constexprs.get(name)
        return c.values if c is not None and c.source == SpecSource.CALL_SITE else None
    return tuple(g for g in this.alike if values(g[0]) is not None and all(values(n) == values(g[0]) for n in g))


def _families(kernels: list[Kernel]) -> tuple[str, ...]:
    """The element-type families guessed pointers are compiled with: where either side converts
    values (`.to(tl.float32)`, a cast, a pointer's `element_ty`), a conversion is a no-op under
    fp32 pointers, so bf16 pointers too; and where either side converts a scalar as it is
    (`eps.to(tl.float32)`: pinned against torch.compile's fp64 floats), fp64 float scalars too, so
    that fix, or its reversal, shows. Not for every float scalar: an fp64 compile of a kernel
    costs about as much again as the others together, and elsewhere a change reads alike
    under fp32 and fp64 scalars."""
    if not any(k.element_casts for k in kernels):
        return ()
    return (*FAMILIES, WIDE) if any(p.converted for k in kernels for p in k.params) else FAMILIES


def _heuristic_sizes(kernels: list[Kernel]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Runtime ints a heuristic of either side tests, with the sizes on each side of its tests
    (both sides' united, so both evaluate their heuristics at the same sizes)."""
    sizes: dict[str, list[int]] = {}
    for k in kernels:
        for p in k.params:
            if not p.constexpr and p.hint is not None:
                have = sizes.setdefault(p.name, [])
                have += [cast(int, v) for v in p.hint.values if v not in have]   # a runtime int's hints are sizes
    return tuple((name, tuple(values)) for name, values in sorted(sizes.items()))
