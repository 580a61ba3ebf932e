"""What one compile of one spec on one target gave, as the comparison reads it: `SpecResult`.

The compile workers and the cache speak JSON (one object per spec); everything between them and
the rows holds records. `from_json` is where that JSON becomes a record: the cache's check of an
entry (a value that is not a list of valid results is a miss) and, through `from_worker`, the
check of what a worker sent; `as_json` is what the cache stores. A result either measured the
spec (`Metrics` and normalised PTX) or failed, and a failure has a kind (`Failure`), set where it
happened (the worker, the pool, the engine). The cache's JSON keeps the flags it has always had
(`timed_out`, `crashed`, `transient`, ...): `from_json` and `as_json` alone translate them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ptxdiff.compile.protocol import COMPILE_FAILED, CompileAnswer, Failure, SpecsAnswer, compile_failure
from ptxdiff.metrics.counts import Metrics, is_count
from ptxdiff.metrics.ptx import SourceLines
from ptxdiff.specs.detail import SpecDetail


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
    failure: Failure | None = None     # why there is no measurement (with `error`)
    bound: float | None = None         # the bound it ran past (TIMEOUT) or crashed its worker under (CRASH)
    tritons_own: str | None = None     # the triton builtin the kernel's name is bound to (NOT_THIS_TOOLCHAIN)
    other_backend: str | None = None   # the backend its configs are written for (OTHER_BACKEND)
    retype: dict[str, Any] | None = None         # types a search found that compile (compile/retype.py)
    refit: dict[str, Any] | None = None          # sizes a search found that fit (compile/refit.py)
    target: int | None = None          # the target it was measured on, where not the row's own

    @property
    def transient(self) -> bool:
        """A failure that may not happen next time (a request that raised, a worker that did not
        start, an answer that was not valid): never cached."""
        return self.failure is Failure.WORKER_ERROR

    @property
    def guarded(self) -> bool:
        """Guessed sizes over the cost rule (specs/cost.py): not compiled, the pair compiles them shrunk."""
        return self.failure is Failure.OVER_COST

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
        failure, bound = _failure_of(value) if error is not None else (None, None)
        return cls(key=value.get("key"), label=value["label"], spec=spec, metrics=metrics,
                   ptx=value.get("ptx"), loc=SourceLines.from_json(value.get("loc")), error=error,
                   log=value.get("log"), failure=failure, bound=bound,
                   tritons_own=value.get("tritons_own"), other_backend=value.get("other_backend"),
                   retype=value.get("retype"), refit=value.get("refit"),
                   target=value.get("target"), cubin=value.get("cubin"))

    def as_json(self) -> dict[str, Any]:
        """The JSON `from_json` reads back: the fields that are set, the failure as the flags the
        cache has always held (in their old places, so an entry's bytes do not change)."""
        measured = {"metrics": self.metrics.as_json() if self.metrics is not None else None, "ptx": self.ptx,
                    "loc": self.loc.as_json() if self.loc is not None else None, "cubin": self.cubin, "error": self.error,
                    "log": self.log}
        out: dict[str, Any] = {"key": self.key, "label": self.label}
        spec = self.spec.as_json() if self.spec is not None else None
        out |= {k: v for k, v in {"spec": spec, **measured}.items() if v is not None}
        out |= _flags(self.failure, self.bound)
        out |= {k: v for k, v in {"tritons_own": self.tritons_own, "other_backend": self.other_backend,
                                  "retype": self.retype, "refit": self.refit,
                                  "target": self.target}.items() if v is not None}
        return out


_TYPES: dict[str, type | tuple[type, ...]] = {
    "key": str, "ptx": str, "cubin": str, "log": str, "tritons_own": str, "other_backend": str, "retype": dict,
    "refit": dict,
    "target": int}


def _failure_of(value: dict[str, Any]) -> tuple[Failure, float | None]:
    """The kind of a failure (and its bound) from the cache's flags; where there are none, a compile
    error's text says which (what the worker decided from the same text, `compile_failure`)."""
    if value.get("timed_out") is not None:
        return Failure.TIMEOUT, value["timed_out"]
    if value.get("crashed") is not None:
        return Failure.CRASH, value["crashed"]
    for flag, failure in _FLAGGED:
        if value.get(flag):
            return failure, None
    error = value["error"]
    if value.get("key") is None:
        return Failure.NO_SPECS, None
    return compile_failure(error) if error.startswith(COMPILE_FAILED) else Failure.TOOL_ERROR, None


# the flags that say a failure's kind, in the order they are read (the first one set decides)
_FLAGGED = (("transient", Failure.WORKER_ERROR), ("absent", Failure.ABSENT), ("tritons_own", Failure.NOT_THIS_TOOLCHAIN),
            ("other_backend", Failure.OTHER_BACKEND), ("guarded", Failure.OVER_COST), ("deterministic", Failure.NO_SPECS))


def _flags(failure: Failure | None, bound: float | None) -> dict[str, Any]:
    """The cache's flags of a failure's kind, in their JSON order (timed_out, crashed, guarded,
    transient, deterministic, absent)."""
    if failure is Failure.TIMEOUT:
        return {"timed_out": bound}
    if failure is Failure.CRASH:
        return {"crashed": bound}
    return {Failure.OVER_COST: {"guarded": True, "deterministic": True}, Failure.WORKER_ERROR: {"transient": True},
            Failure.NO_SPECS: {"deterministic": True}, Failure.NOT_THIS_TOOLCHAIN: {"deterministic": True},
            Failure.OTHER_BACKEND: {"deterministic": True},
            Failure.ABSENT: {"deterministic": True, "absent": True}}.get(failure, {}) if failure else {}


def from_worker(pending: SpecResult, answer: CompileAnswer) -> SpecResult:
    """A spec's result from what its compile worker answered (`compile_spec`'s JSON: metrics, PTX
    and source lines, or an error, and its kind) over the record of the spec it compiled."""
    return _answered(pending, answer.result, answer.failure)


def from_specs(answer: SpecsAnswer) -> SpecResult:
    """The one result of a kernel whose specs the worker could not have (a fact about the source
    and config, its kind the worker's)."""
    said = {"error": answer.error, **({"tritons_own": answer.tritons_own} if answer.tritons_own else {}),
            **({"other_backend": answer.other_backend} if answer.other_backend else {})}
    return _answered(SpecResult(None, "-"), said, answer.failure)


def _answered(pending: SpecResult, value: object, failure: Failure | None) -> SpecResult:
    """`value` (a worker's JSON) over `pending`, failed as the worker said; a value that is not a
    valid result is a failure of its own, not cached (it may not happen again)."""
    try:
        if not isinstance(value, dict):
            raise ValueError(f"not a result: {type(value).__name__}")
        got = SpecResult.from_json({**pending.as_json(), **value})
    except ValueError as e:
        return replace(pending, error=f"the compile worker sent no valid result ({e})", failure=Failure.WORKER_ERROR)
    return replace(got, failure=failure or got.failure) if got.error is not None else got


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
