"""Concrete specialisations of a kernel: signature, constexprs, num_warps, num_stages.

Precedence, highest first: `[tool.ptxdiff.kernels."id"]` config (`specs` entries, then the
kernel's own keys), `@triton.autotune` Configs (one spec per Config), `@triton.heuristics`
values computed from what is known, the constexpr defaults of the signature, the inferred types
of runtime params. A value that cannot be known is an error naming the config key to set.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .config import KernelConfig, SpecConfig
from .discover import Kernel

DEFAULT_NUM_WARPS = 4
DEFAULT_NUM_STAGES = 3


class SpecError(Exception):
    """A spec cannot be built; the message names the config key that would fix it."""


@dataclass(frozen=True)
class Spec:
    signature: tuple[tuple[str, str], ...]   # every param in order; constexprs as "constexpr"
    constexprs: tuple[tuple[str, object], ...]
    num_warps: int
    num_stages: int

    @property
    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.constexprs]
        return " ".join([*parts, f"w{self.num_warps}", f"s{self.num_stages}"])

    @property
    def key(self) -> str:
        """Identity of the spec across revisions (pairs old and new rows)."""
        return json.dumps([self.signature, [[k, repr(v)] for k, v in self.constexprs],
                           self.num_warps, self.num_stages])

    def as_dict(self) -> dict:
        return {"signature": dict(self.signature), "constexprs": {k: _jsonable(v) for k, v in self.constexprs},
                "num_warps": self.num_warps, "num_stages": self.num_stages}


def _jsonable(v):
    return v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)


@dataclass(frozen=True)
class Declared:
    """What the kernel's source declares: its params, constexpr defaults, decorators."""

    params: tuple[str, ...]
    constexpr_params: frozenset[str]
    defaults: dict                            # constexpr name -> default value
    autotune: tuple[tuple[dict, int | None, int | None], ...]  # (kwargs, num_warps, num_stages)
    heuristics: dict                          # name -> callable(args)
    do_not_specialize: frozenset[str] = frozenset()
    runtime_defaults: dict = field(default_factory=dict)   # non-constexpr params with a default
    refused: dict = field(default_factory=dict)            # what the evaluator would not compute
    notes: tuple[str, ...] = ()
    jit_options: dict = field(default_factory=dict)


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


class _Args(dict):
    """What a heuristic sees: known constexprs; reading a runtime arg says which key to set."""

    def __init__(self, known: dict, kernel: Kernel, target: str):
        super().__init__(known)
        self.kernel, self.target = kernel, target

    def __missing__(self, name):
        raise SpecError(f"heuristic for {self.target} reads runtime argument {name!r}; set "
                        + _key(self.kernel, f"constexprs.{self.target}"))


def resolve(kernel: Kernel, declared: Declared, cfg: KernelConfig) -> list[Spec]:
    inferred = {p.name: p.kind for p in kernel.params}
    variants: list[tuple[dict, int | None, int | None, SpecConfig | None]]
    if cfg.specs:
        variants = [({}, None, None, s) for s in cfg.specs]
    elif declared.autotune:
        variants = [(kw, w, s, None) for kw, w, s in declared.autotune]
    else:
        variants = [({}, None, None, None)]
    specs: list[Spec] = []
    for tuned, warps, stages, override in variants:
        layers = [cfg.base] + ([override] if override else [])
        signature_cfg: dict = {}
        constexprs: dict = dict(declared.defaults)
        constexprs.update(tuned)
        num_warps, num_stages = warps, stages
        for layer in layers:
            signature_cfg.update(layer.signature)
            constexprs.update(layer.constexprs)
            num_warps = layer.num_warps or num_warps
            num_stages = layer.num_stages or num_stages
        for name, fn in declared.heuristics.items():
            if name in constexprs and any(name in layer.constexprs for layer in layers):
                continue
            try:
                constexprs[name] = fn(_Args(constexprs, kernel, name))
            except SpecError:
                raise
            except Exception as e:
                raise SpecError(f"heuristic for {name} failed ({type(e).__name__}: {e}); set "
                                + _key(kernel, f"constexprs.{name}")) from None
        unknown = set(signature_cfg) | set(constexprs)
        unknown -= set(declared.params)
        if unknown:
            raise SpecError(f"{_key(kernel, 'signature/constexprs')} names {sorted(unknown)}, "
                            f"which {kernel.name} has no parameter for")
        signature = []
        no_default: list[str] = []  # every missing value at once, not one per run
        no_type: list[str] = []
        for p in declared.params:
            if p in declared.constexpr_params:
                if p not in constexprs:
                    no_default.append(p)
                signature.append((p, "constexpr"))
                continue
            typ = signature_cfg.get(p) or inferred.get(p)
            if not typ:
                no_type.append(p)
            signature.append((p, typ))
        if no_default or no_type:
            raise SpecError(_missing(kernel, no_default, no_type))
        specs.append(Spec(
            signature=tuple(signature),
            constexprs=tuple((p, constexprs[p]) for p in declared.params if p in declared.constexpr_params),
            num_warps=num_warps or DEFAULT_NUM_WARPS,
            num_stages=num_stages or DEFAULT_NUM_STAGES,
        ))
    unique = {s.key: s for s in specs}
    return list(unique.values())
