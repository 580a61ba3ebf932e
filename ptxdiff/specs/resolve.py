"""Concrete specialisations of a kernel: signature, constexprs, num_warps, num_stages.

Precedence, highest first: `[tool.ptxdiff.kernels."id"]` config (`specs` entries, then the
kernel's own keys), recorded launches, `@triton.autotune` Configs (one spec per Config), the
constexpr defaults of the signature, `@triton.heuristics` values computed from what is known,
then the plan's launch-site values and guesses (plan.py), the same on both sides; a launch site
that passes a constexpr overrides its default (`_launched_defaults`). A spec says
where its values came from (`source`: the weakest of config, recorded, call-site, guessed) and
which values are guesses. A value that cannot be had at all is an error naming the config key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import cast

from ptxdiff.discovery.descriptors import fill as descriptor_type
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.discovery.params import ParamMark
from ptxdiff.record.launches import Launch
from ptxdiff.repo_config import KernelConfig, SpecConfig
from ptxdiff.specs import guesses as guessmod
from ptxdiff.specs.cover import cover_combinations, pick
from ptxdiff.specs.detail import SpecDetail
from ptxdiff.specs.families import SIZES, family, size_variables, wide_scalars
from ptxdiff.specs.guesses import Guess, GuessKind
from ptxdiff.specs.plan import FAMILY, SOURCES, WIDE, Plan, SpecSource

DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3
HEURISTIC_INT = 4096   # a runtime integer a heuristic reads, when nothing says which (divisible by most blocks)
NO_PLAN = Plan()       # nothing gathered beyond the config: the default of `resolve`


class SpecError(Exception):
    """A spec cannot be built; the message names the config key that would fix it."""


@dataclass(frozen=True)
class Spec:
    signature: tuple[tuple[str, str], ...]   # every param in order; constexprs as "constexpr"
    constexprs: tuple[tuple[str, object], ...]
    num_warps: int
    num_stages: int
    divisible: tuple[str, ...] | None = None  # params triton marks divisible by 16; None: every pointer
    source: SpecSource = SpecSource.CONFIG    # the weakest source of its values (plan.SOURCES)
    guessed: tuple[Guess, ...] = ()           # values that are guesses (constexprs, types, a heuristic's inputs)
    notes: tuple[str, ...] = ()
    shown: tuple[str, ...] = ()               # signature entries its label shows (those that tell specs apart)
    options: tuple[tuple[str, object], ...] = ()  # other compile options of an autotune Config (maxnreg, num_ctas)
    # runtime ints a heuristic tested, at the size this spec evaluated it with (`plan.sizes`): part
    # of its identity, so the spec of each size pairs with the other side's of the same size
    inputs: tuple[tuple[str, object], ...] = ()
    # constexprs a `@triton.heuristics` function computed: outputs of the launch, not part of what
    # pairs an old spec with a new one (a heuristic made constant is the kernel's change)
    heuristics: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """Constexpr values, warps and stages, and the types of the runtime params that tell
        this spec from the kernel's other specs (`x_ptr:*fp16`, `n:i32%16` when divisible)."""
        parts = [f"{k}={v}" for k, v in self.constexprs]
        sig = dict(self.signature)
        extra = [f"{name}:{sig[name]}{'%16' if name in (self.divisible or ()) and not sig[name].startswith('*') else ''}"
                 for name in self.shown if sig.get(name) not in (None, "constexpr")]
        options = [f"{k}={v}" for k, v in self.options]
        inputs = [f"{k}={v}" for k, v in self.inputs]
        return " ".join([*parts, f"w{self.num_warps}", f"s{self.num_stages}", *options, *extra, *inputs])

    @property
    def key(self) -> str:
        """Identity of the spec across revisions (pairs old and new rows)."""
        return json.dumps([self.signature, [[k, repr(v)] for k, v in self.constexprs],
                           self.num_warps, self.num_stages, self.divisible] + ([list(self.options)] if self.options else [])
                          + ([["inputs", [list(i) for i in self.inputs]]] if self.inputs else []))

    def detail(self) -> SpecDetail:
        """The spec as its results hold it: what its JSON keeps (a value JSON has no form for as
        its repr; one guess per key, one option per name)."""
        return SpecDetail(dict(self.signature), {k: _jsonable(v) for k, v in self.constexprs}, self.num_warps,
                          self.num_stages, tuple(dict(self.options).items()), self.divisible, self.source,
                          tuple({g.key: replace(g, value=_jsonable(g.value)) for g in self.guessed}.values()),
                          self.notes, self.heuristics)


def _jsonable(v: object) -> object:
    return v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)


# an autotune Config: (kwargs, num_warps, num_stages, options)
Autotuned = tuple[dict[str, object], int | None, int | None, dict[str, object]]


@dataclass(frozen=True)
class Declared:
    """What the kernel's source declares: its params, constexpr defaults, decorators."""

    params: tuple[str, ...]
    constexpr_params: frozenset[str]
    defaults: dict[str, object]               # constexpr name -> default value
    autotune: tuple[Autotuned, ...]
    heuristics: dict[str, Callable[[dict[str, object]], object]]   # name -> callable(args)
    do_not_specialize: frozenset[str | int] = frozenset()
    runtime_defaults: dict[str, object] = field(default_factory=dict)   # non-constexpr params with a default
    refused: dict[str, str] = field(default_factory=dict)            # what the evaluator would not compute
    notes: tuple[str, ...] = ()
    jit_options: dict[str, object] = field(default_factory=dict)


def _key(kernel: Kernel, sub: str) -> str:
    return f'[tool.ptxdiff.kernels."{kernel.id}"] {sub}'


def _missing(kernel: Kernel, no_default: list[str], no_type: list[str]) -> str:
    """One message naming every config key still needed, so one edit of the config is enough."""
    def listed(what: str, names: list[str]) -> str:
        return f"{what}{'s' if len(names) > 1 else ''} {', '.join(repr(n) for n in names)}"
    problems = []
    if no_default:
        problems.append(listed("constexpr", no_default) + (" have" if len(no_default) > 1 else " has") + " no default")
    if no_type:
        problems.append("cannot tell the type of " + listed("parameter", no_type))
    keys = [f"constexprs.{p}" for p in no_default] + [f"signature.{p}" for p in no_type]
    hint = ' (e.g. "*fp16", "i32", "fp32")' if no_type else ""
    return "; ".join(problems) + "; set " + _key(kernel, ", ".join(keys) + hint)


class TensorArg:
    """A tensor argument as a heuristic sees it offline: it is not None, and that is all."""

    def __repr__(self) -> str:
        return "<tensor>"


class _Args(dict[str, object]):
    """What a heuristic sees: known constexprs and representative runtime args; reading an
    argument nothing can stand in for says which key to set."""

    def __init__(self, known: dict[str, object], kernel: Kernel, target: str, runtime: dict[str, object]) -> None:
        super().__init__(known)
        self.kernel, self.target, self.runtime = kernel, target, runtime
        self.stood_in: dict[str, object] = {}

    def __missing__(self, name: str) -> object:
        if name in self.runtime:
            self.stood_in[name] = self.runtime[name]
            return self.runtime[name]
        raise SpecError(f"heuristic for {self.target} reads runtime argument {name!r}; set "
                        + _key(self.kernel, f"constexprs.{self.target}"))


@dataclass
class _Variant:
    """One base of specs: a config `specs` entry, a recorded launch, or an autotune Config."""

    override: SpecConfig | None = None
    launch: Launch | None = None
    tuned: dict[str, object] = field(default_factory=dict)
    warps: int | None = None
    stages: int | None = None
    options: tuple[tuple[str, object], ...] = ()   # a Config's other compile options (maxnreg, num_ctas)


def pick_covering(specs: list[Spec], limit: int) -> list[Spec]:
    """`limit` specs that keep every combination of guessed values the covering set made, as far
    as the limit allows: first one spec of each combination (the variants, autotune configs,
    taken in turn), then the rest spread evenly; in the list's order. An even spread alone over
    configs x combinations could keep two combinations of four (attorch's `p_loss` 0 and 16, which
    the old side's `if p_loss == 1 / elif p_loss == 2` does not take) and no delta at all."""
    if len(specs) <= limit:
        return specs
    groups: dict[str, list[int]] = {}
    for i, spec in enumerate(specs):
        values = guessmod.of_kind(spec.guessed, GuessKind.VALUE)
        groups.setdefault(json.dumps(sorted(values.items()), default=repr), []).append(i)
    if len(groups) < 2:
        return pick(specs, limit)
    firsts = [members[n % len(members)] for n, members in enumerate(groups.values())]
    chosen = set(pick(firsts, limit))
    chosen |= set(pick([i for i in range(len(specs)) if i not in chosen], limit - len(chosen)) if len(chosen) < limit
                  else [])
    return [spec for i, spec in enumerate(specs) if i in chosen]


def resolve(kernel: Kernel, declared: Declared, cfg: KernelConfig, plan: Plan = NO_PLAN) -> list[Spec]:
    inferred = {p.name: p.kind for p in kernel.params}
    params = declared.params
    launches = [launch for launch in plan.recorded if tuple(launch.params) == tuple(params)]
    notes: list[str] = list(declared.notes)
    if plan.recorded and not launches:
        notes.append("recorded launches do not fit this revision's parameters: " + (plan.recorded_note or "they differ"))
    elif plan.recorded_note:
        notes.append(plan.recorded_note)
    notes += list(declared.refused.values())
    shrunk = plan.shrunk_note()
    if shrunk:
        notes.append(shrunk)
    notes += plan.refit_notes()
    if cfg.specs:
        variants = [_Variant(override=s) for s in cfg.specs]
    elif launches:
        variants = [_Variant(launch=launch) for launch in launches]
    elif declared.autotune:
        variants = [_Variant(tuned=kw, warps=w, stages=s, options=tuple(sorted(o.items())))
                    for kw, w, s, o in declared.autotune]
    else:
        variants = [_Variant()]
    specs: list[Spec] = []
    dropped: set[str] = set()
    for variant in variants:
        for spec in _specs_of(kernel, declared, cfg, plan, variant, inferred, dropped):
            specs.append(spec)
    specs = [_retyped(s, plan, dropped) for s in specs]
    unique = list({s.key: s for s in specs}.values())
    # a covering set of guesses is compiled whole (cover_combinations bounds it)
    limit = max(plan.max_specs, len(variants) if (cfg.specs or launches) else 1,
                len(specs) if len(variants) == 1 else 1)
    kept = pick_covering(unique, limit)
    notes += sorted(dropped)
    if len(kept) < len(unique):
        notes.append(f"{len(unique)} specs, {len(kept)} compiled (max_specs = {plan.max_specs})")
    return _labelled([_with_notes(s, tuple(dict.fromkeys(notes))) for s in kept])


def _retyped(spec: Spec, plan: Plan, notes: set[str]) -> Spec:
    """A spec with the types a compile search found for its constexpr values, said in the notes."""
    found = plan.retype_for(spec.detail().constexprs, spec.guessed)
    sig = dict(spec.signature)
    types = guessmod.of_kind(spec.guessed, GuessKind.TYPE)
    found = {p: t for p, t in found.items() if p in sig and sig[p] != t and types.get(p) == sig[p]}
    if not found:
        return spec
    notes.update(f"{p}: guessed {sig[p]}, which does not compile; {t} does" for p, t in found.items())
    guessed = tuple(guessmod.type_of(g.name, found[g.name]) if g.kind is GuessKind.TYPE and g.name in found else g
                    for g in spec.guessed)
    return replace(spec, signature=tuple((p, found.get(p, t)) for p, t in spec.signature), guessed=guessed)


def _with_notes(spec: Spec, notes: tuple[str, ...]) -> Spec:
    return replace(spec, notes=notes)


def _labelled(specs: list[Spec]) -> list[Spec]:
    """Labels show every signature entry that differs between the kernel's specs."""
    if len(specs) < 2:
        return specs
    varying = []
    for i, (name, _) in enumerate(specs[0].signature):
        seen = {(s.signature[i][1], name in (s.divisible or ()), dict(s.constexprs).get(name, "-")) for s in specs
                if i < len(s.signature)}
        if len(seen) > 1:
            varying.append(name)
    return [replace(s, shown=tuple(varying)) for s in specs] if varying else specs


def _specs_of(kernel: Kernel, declared: Declared, cfg: KernelConfig, plan: Plan, variant: _Variant,
              inferred: dict[str, str | None], dropped: set[str]) -> list[Spec]:
    layers = [cfg.base] + ([variant.override] if variant.override else [])
    constexprs: dict[str, object] = dict(declared.defaults)
    constexprs.update(variant.tuned)
    sources: dict[str, SpecSource] = {}
    signature_cfg: dict[str, str] = {}
    num_warps, num_stages = variant.warps, variant.stages
    launch = variant.launch
    if launch is not None:
        constexprs.update(launch.constexprs)
        sources.update(dict.fromkeys(launch.constexprs, SpecSource.RECORDED))
        num_warps, num_stages = launch.num_warps, launch.num_stages
    for layer in layers:
        signature_cfg.update(layer.signature)
        constexprs.update(layer.constexprs)
        sources.update(dict.fromkeys(layer.constexprs, SpecSource.CONFIG))
        num_warps = layer.num_warps or num_warps
        num_stages = layer.num_stages or num_stages
    unread = _launched_defaults(declared, plan, constexprs, {*variant.tuned, *sources})
    unknown = (set(signature_cfg) | set(constexprs)) - set(declared.params)
    if unknown:
        raise SpecError(f"{_key(kernel, 'signature/constexprs')} names {sorted(unknown)}, "
                        f"which {kernel.name} has no parameter for")
    if num_warps is None:
        choice = plan.choice("num_warps", "options")
        if choice:
            num_warps, sources["num_warps"] = cast(int, choice.values[0]), choice.source
    if num_stages is None:
        choice = plan.choice("num_stages", "options")
        if choice:
            num_stages, sources["num_stages"] = cast(int, choice.values[0]), choice.source
    # the types every spec of this variant shares
    types: dict[str, str] = {}
    guessed_types: dict[str, str] = {}
    for p in declared.params:
        if p in declared.constexpr_params:
            continue
        if p in signature_cfg:
            types[p], sources[p] = signature_cfg[p], SpecSource.CONFIG
        elif launch is not None and p in launch.signature:
            types[p], sources[p] = launch.signature[p], SpecSource.RECORDED
        elif launch is not None and p in launch.constexprs:
            types[p] = "constexpr"
        else:
            choice = plan.choice(p, "types")
            if choice is not None:
                types[p], sources[p] = cast(str, choice.values[0]), choice.source   # a types choice: type names
                if choice.source == SpecSource.GUESSED:
                    guessed_types[p] = cast(str, choice.values[0])
            elif inferred.get(p):
                types[p], sources[p] = cast(str, inferred[p]), SpecSource.GUESSED
                guessed_types[p] = cast(str, inferred[p])
        if types.get(p) == "constexpr":  # None passed at the launch site: a constant None, as triton makes it
            constexprs.setdefault(p, None)
    # what is still open: constexprs nothing gave, optional pointers
    variables: list[tuple[str, tuple[object, ...]]] = []
    for p in declared.params:
        if p in declared.constexpr_params and p not in constexprs and p not in declared.heuristics:
            choice = plan.choice(p)
            if choice is not None:
                variables.append((p, tuple(dict.fromkeys((unread[p], *choice.values))) if p in unread
                                  else choice.values))
    # both ways only on a side whose kernel tests the pointer against None (an older kernel that
    # always uses it gets no None variant: that spec is new, and reads `added`)
    tested = {p.name for p in kernel.params if p.optional}
    optional = [p for p in plan.optional if p in tested and p in types and sources.get(p) in (SpecSource.GUESSED, None)
                and types[p].startswith("*") and launch is None]
    for p in optional:
        variables.append((p, (types[p], None)))
    pointers = any(guessed_types.get(p) == "*fp32" and types.get(p) == "*fp32" for p in guessed_types)
    if plan.families and launch is None and (pointers or WIDE in plan.families and wide_scalars(types, sources)):
        variables.append((FAMILY, plan.families))
    variables = _together(variables, plan.alike, plan.guards) + size_variables(plan, types, launch)
    phantom = _phantoms(variables, plan, set(declared.params))
    combos, note = cover_combinations(variables + phantom, plan.max_specs, plan.cover, plan.guards)
    if phantom:   # the other side's open values: this side compiles the projections
        combos = list({json.dumps(sorted(c.items()), default=repr): c for c in
                       ({k: v for k, v in c.items() if k not in dict(phantom)} for c in combos)}.values())
    combos = [_apart(c) for c in combos]
    if note:
        dropped.add(note)
    shared = _Shared(constexprs=constexprs, types=types, sources=sources, guessed_types=guessed_types,
                     optional=tuple(optional), num_warps=num_warps, num_stages=num_stages, launch=launch,
                     layers=tuple(layers), options=variant.options)
    return [_one_spec(kernel, declared, plan, shared, combo) for combo in combos]


ALIKE = "="   # joins the names of constexprs compiled together into one variable (`BLOCK_M=BLOCK_N`)


def _together(variables: list[tuple[str, tuple[object, ...]]], alike: tuple[tuple[str, ...], ...],
              guards: tuple[str, ...]) -> list[tuple[str, tuple[object, ...]]]:
    """Constexprs a launch site passes one expression as one variable: their values go together
    (`BLOCK_M=BLOCK, BLOCK_N=BLOCK` launches 128/128 and 64/64, never 128/64). Not where one of
    them guards the change (`if BLOCK_M != BLOCK_N:` around it): every combination of those is
    compiled, launched or not, so a branch cannot hide a change where no site of its own reaches."""
    given = dict(variables)
    groups = [g for g in alike if all(n in given for n in g) and not set(g) & set(guards)]
    joined = {n for g in groups for n in g}
    return [v for v in variables if v[0] not in joined] + [(ALIKE.join(g), given[g[0]]) for g in groups]


def _apart(combo: dict[str, object]) -> dict[str, object]:
    """A combination with each joined variable's value given to each of its constexprs."""
    return {n: v for name, v in combo.items() for n in name.split(ALIKE)}


def _launched_defaults(declared: Declared, plan: Plan, constexprs: dict[str, object], given: set[str]) -> dict[str, object]:
    """Constexpr defaults a launch site overrides, taken out of `constexprs`: a site that passes
    values compiles those (the default never runs), one that passes an expression offline reading
    cannot tell compiles the default among the guesses. Returns {name: default} of the latter."""
    unread = {}
    for p, default in declared.defaults.items():
        choice = plan.choice(p)
        if p in given or p not in constexprs or choice is None:
            continue
        if p in plan.unread or choice.source == SpecSource.CALL_SITE:
            del constexprs[p]
            if p in plan.unread:
                unread[p] = default
    return unread


def _phantoms(variables: list[tuple[str, tuple[object, ...]]], plan: Plan, params: set[str]
              ) -> list[tuple[str, tuple[object, ...]]]:
    """Open values only the other side of the pair has (a flag or an optional pointer it adds):
    combined with this side's, so both sides take one covering set and this side compiles its
    projections, which pair with the other side's specs by equal values."""
    mine = {name for name, _ in variables}
    out = [(c.name, c.values) for c in plan.constexprs if c.name not in mine | params and len(c.values) > 1]
    out += [(p, ("*", None)) for p in plan.optional if p not in mine | params]
    return out


@dataclass(frozen=True)
class _Shared:
    """What every spec of one variant starts from; each combination of open values copies it."""

    constexprs: dict[str, object]
    types: dict[str, str]
    sources: dict[str, SpecSource]
    guessed_types: dict[str, str]     # runtime param -> its type, where that type is a guess
    optional: tuple[str, ...]         # pointers compiled both ways (a pointer, and None)
    num_warps: int | None
    num_stages: int | None
    launch: Launch | None
    layers: tuple[SpecConfig, ...]    # the config layers, weakest first
    options: tuple[tuple[str, object], ...] = ()


def _signature(kernel: Kernel, declared: Declared, types: dict[str, str], constexprs: dict[str, object]) -> list[tuple[str, str]]:
    """(param, type) in the kernel's order, constexprs as `constexpr`; a SpecError naming every
    constexpr without a value and every param without a type at once."""
    signature: list[tuple[str, str]] = []
    no_default: list[str] = []
    no_type: list[str] = []
    for p in declared.params:
        if p in declared.constexpr_params:
            if p not in constexprs:
                no_default.append(p)
            signature.append((p, "constexpr"))
            continue
        typ = types.get(p)
        if not typ:
            no_type.append(p)
            continue
        signature.append((p, typ))
    if no_default or no_type:
        raise SpecError(_missing(kernel, no_default, no_type))
    return signature


def _descriptor(kernel: Kernel, param: str, template: str, constexprs: dict[str, object]) -> str:
    """A descriptor's type for one spec, from the plan's template; where that names a constexpr
    this side does not have (the other side's pre_hook shapes it by a flag this side renamed), from
    this side's own reading of its descriptor."""
    own = next((q.kind for q in kernel.params if q.name == param), None)
    for candidate in dict.fromkeys(t for t in (template, own) if t):
        try:
            return descriptor_type(candidate, constexprs)
        except KeyError:
            continue
    raise SpecError(f"the block shape of {param} ({template}) names a value no spec gives; set "
                    + _key(kernel, f"signature.{param}"))


def _one_spec(kernel: Kernel, declared: Declared, plan: Plan, shared: _Shared, combo: dict[str, object]) -> Spec:
    constexprs = dict(shared.constexprs)
    types = dict(shared.types)
    sources = dict(shared.sources)
    guessed_types, launch = shared.guessed_types, shared.launch
    guessed: dict[str, Guess] = {}   # by key: a later guess of the same key replaces it, in its place

    def guess(g: Guess) -> None:
        guessed[g.key] = g
    sized: dict[str, int] = {}   # runtime ints a heuristic tests, at this combination's size
    for name, value in combo.items():
        if name == FAMILY:
            for g in family(cast(str, value), types, shared.guessed_types, sources, {p.name for p in kernel.params if p.written}):
                guess(g)
            continue
        if name.endswith(SIZES):
            sized[name[:-len(SIZES)]] = cast(int, value)   # a size variable's values are ints
            continue
        if name in shared.optional:
            if value is None:
                types[name] = "constexpr"
                constexprs[name] = None
                guess(guessmod.value(name, None))
            continue
        constexprs[name] = value
        choice = plan.choice(name)
        sources[name] = choice.source if choice else SpecSource.GUESSED
        if sources[name] == SpecSource.GUESSED:
            guess(guessmod.value(name, value))
    for p in [*types]:
        if types[p] == ParamMark.CONSTEXPR1:  # a launch site passes 1: triton makes it the constant 1
            types[p] = "constexpr"
            constexprs[p] = 1
        elif "{" in types[p] or " ? " in types[p]:  # a descriptor whose block shape names constexprs
            types[p] = _descriptor(kernel, p, types[p], constexprs)
    runtime: dict[str, object] = {p: (None if constexprs.get(p, 0) is None and types.get(p) == "constexpr" else
                   TensorArg() if t.startswith("*") else HEURISTIC_INT if t.startswith(("i", "u")) else 1.0)
               for p, t in types.items()}
    runtime.update(sized)
    inputs: dict[str, object] = {}   # the sized ints a heuristic read
    computed: list[str] = []         # the constexprs a heuristic computed
    for name, fn in declared.heuristics.items():
        if name in constexprs and any(name in layer.constexprs for layer in shared.layers):
            continue
        if launch is not None and name in launch.constexprs:
            continue
        args = _Args(dict(constexprs), kernel, name, runtime)
        try:
            constexprs[name] = fn(args)
            computed.append(name)
        except SpecError:
            choice = plan.choice(name)
            if choice is None:
                raise
            constexprs[name] = choice.values[0]
            sources[name] = choice.source
            guess(guessmod.value(name, choice.values[0]))
            continue
        except Exception as e:
            raise SpecError(f"heuristic for {name} failed ({type(e).__name__}: {e}); set "
                            + _key(kernel, f"constexprs.{name}")) from None
        ints = [v for v in args.stood_in.values() if type(v) is int]
        if ints:   # sizes computed from stand-ins: shrunk like guessed ones
            constexprs[name] = plan.shrunk_size(constexprs[name])
        for arg, value in args.stood_in.items():
            if not isinstance(value, TensorArg) and value is not None:
                guess(guessmod.read_by(arg, name, value))
            if arg in sized:
                inputs[arg] = value
    signature = _signature(kernel, declared, types, constexprs)
    for p, t in guessed_types.items():
        if types.get(p) == t:
            guess(guessmod.type_of(p, t))
    used = {sources[k] for k in sources} & set(SOURCES)
    if guessed_types or guessed:
        used.add(SpecSource.GUESSED)
    source = max(used, key=SOURCES.index) if used else SpecSource.CONFIG
    divisible = tuple(launch.divisible) if launch is not None else tuple(
        p for p, t in signature if t and t.startswith("*"))
    return Spec(
        signature=tuple(signature),
        constexprs=tuple((p, constexprs[p]) for p in declared.params if p in declared.constexpr_params
                         or types.get(p) == "constexpr"),
        num_warps=shared.num_warps or DEFAULT_NUM_WARPS,
        num_stages=shared.num_stages or DEFAULT_NUM_STAGES,
        divisible=divisible,
        source=source,
        guessed=tuple(guessed.values()),
        options=shared.options,
        inputs=tuple(sorted(inputs.items())),
        heuristics=tuple(computed),
    )
