"""What one compile of one spec on one target gave, as the comparison reads it: `SpecResult`.

The compile workers and the cache speak JSON (one object per spec); everything between them and
the rows holds records. `from_json` is where that JSON becomes a record: the cache's check of an
entry (a value that is not a list of valid results is a miss) and, through `from_worker`, the
check of what a worker sent; `as_json` is what the cache stores. A result either measured the
spec (`Metrics` and normalised PTX) or failed, and a failure has a kind (`Failure`), read from
the flags the worker and the engine set.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from typing import Any

from ptxdiff.metrics.counts import Metrics, is_count
from ptxdiff.metrics.ptx import SourceLines
from ptxdiff.specs.detail import SpecDetail


class Failure(enum.Enum):
    """Why a spec has no measurement."""

    COMPILE_ERROR = "compile error"            # triton or ptxas refused it: a fact about source and toolchain
    TIMEOUT = "timeout"                        # it compiled past its bound (`timed_out`: that bound)
    CRASH = "crash"                            # the worker died (`crashed`: its bound) or could not start
    REFUSED = "refused"                        # ptxas has no such instruction on this target
    NOT_THIS_TOOLCHAIN = "not this toolchain"  # the name is triton's own builtin under this triton
    ABSENT = "absent"                          # the module does not define the kernel here
    NO_SPECS = "no specs"                      # the specs could not be had from the source and config


def _opt(value: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    got = value.get(name)
    if got is not None and not isinstance(got, kind):
        raise ValueError(f"{name}: {type(got).__name__}")
    return got


@dataclass(frozen=True)
class SpecResult:
    """One spec's result: measured (`metrics`, `ptx`), or failed (`error`, and why: `failure`)."""

    key: str | None                    # the spec's key (None: failed before there were specs)
    label: str
    spec: SpecDetail | None = None     # the spec as the row shows it (Spec.detail)
    metrics: Metrics | None = None
    ptx: str | None = None             # normalised PTX
    loc: SourceLines | None = None     # the source line of each PTX line (None: an older entry has none)
    cubin: str | None = None           # the cubin, packed (compile/disassemble.py): the HTML report's SASS
    error: str | None = None
    log: str | None = None
    timed_out: float | None = None     # the bound it compiled past
    crashed: float | None = None       # the bound it crashed its worker under (a signal, out of memory)
    guarded: bool = False              # guessed sizes over the cost rule (specs/cost.py): compiled shrunk instead
    transient: bool = False            # a crash or a worker that did not start: never cached
    deterministic: bool = False        # a failure that is a fact about source, config and toolchain
    absent: bool = False
    tritons_own: str | None = None     # the triton builtin the kernel's name is bound to
    retype: dict | None = None         # types a search found that compile (compile/retype.py)
    refit: dict | None = None          # sizes a search found that fit (compile/refit.py)
    target: int | None = None          # the target it was measured on, where not the row's own

    @property
    def failure(self) -> Failure | None:
        """The kind of failure, None where the spec was measured."""
        if self.error is None:
            return None
        if self.timed_out is not None:
            return Failure.TIMEOUT
        if self.crashed is not None or self.transient:
            return Failure.CRASH
        if self.absent:
            return Failure.ABSENT
        if self.tritons_own:
            return Failure.NOT_THIS_TOOLCHAIN
        if "not supported on .target" in self.error:
            return Failure.REFUSED
        if self.key is None:
            return Failure.NO_SPECS
        return Failure.COMPILE_ERROR

    @classmethod
    def from_json(cls, value: object) -> SpecResult:
        """The record of one result's JSON; ValueError where it is not one: a failure without its
        error text, or a measurement without every count (Metrics.from_json) and the normalised
        PTX. Keys it does not know are ignored."""
        if not isinstance(value, dict) or not isinstance(value.get("label"), str):
            raise ValueError("not a result")
        error = _opt(value, "error", str)
        metrics = None
        if error is not None:
            if not error or not all(value.get(k) is None or is_count(value[k]) for k in ("timed_out", "crashed")):
                raise ValueError("a failure without its error")
        else:
            if not isinstance(value.get("ptx"), str):
                raise ValueError("a measurement without its PTX")
            metrics = Metrics.from_json(value.get("metrics"))
        for name, kind in _TYPES.items():
            _opt(value, name, kind)
        spec = SpecDetail.from_json(value["spec"]) if value.get("spec") is not None else None
        return cls(key=value.get("key"), label=value["label"], spec=spec, metrics=metrics,
                   ptx=value.get("ptx"), loc=SourceLines.from_json(value.get("loc")), error=error,
                   log=value.get("log"), timed_out=value.get("timed_out"), crashed=value.get("crashed"),
                   guarded=bool(value.get("guarded")), transient=bool(value.get("transient")),
                   deterministic=bool(value.get("deterministic")), absent=bool(value.get("absent")),
                   tritons_own=value.get("tritons_own"), retype=value.get("retype"), refit=value.get("refit"),
                   target=value.get("target"), cubin=value.get("cubin"))

    def as_json(self) -> dict[str, Any]:
        """The JSON `from_json` reads back: the fields that are set (None and False left out)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("key", "label") or (value is not None and value is not False):
                out[f.name] = value.as_json() if isinstance(value, (Metrics, SourceLines, SpecDetail)) else value
        return out


_TYPES: dict[str, type | tuple[type, ...]] = {
    "key": str, "ptx": str, "cubin": str, "log": str, "tritons_own": str, "retype": dict, "refit": dict,
    "target": int}


def from_worker(pending: SpecResult, payload: object) -> SpecResult:
    """A spec's result from what its compile worker sent (`compile_spec`'s JSON: metrics, PTX and
    source lines, or an error) over the record of the spec it compiled; a payload that is not a
    valid result is a failure of its own, not cached (it may not happen again)."""
    try:
        if not isinstance(payload, dict):
            raise ValueError(f"not a result: {type(payload).__name__}")
        return SpecResult.from_json({**pending.as_json(), **payload})
    except ValueError as e:
        return replace(pending, error=f"the compile worker sent no valid result ({e})", transient=True)


def results_from_json(value: object) -> list[SpecResult] | None:
    """The records of a cache entry (one kernel on one target: a result per spec), None where
    the value is not a non-empty list of valid results."""
    if not isinstance(value, list) or not value:
        return None
    try:
        return [SpecResult.from_json(r) for r in value]
    except ValueError:
        return None


def valid_results(value: object) -> bool:
    """Whether a cache entry's value is a list of results (`results_from_json`)."""
    return results_from_json(value) is not None
