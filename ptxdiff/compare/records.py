"""What one compile of one spec on one target gave, as the comparison reads it: `SpecResult`.

The compile workers and the cache speak JSON (one object per spec); `from_json` is where that
JSON becomes a record, and it is also the cache's check of an entry (a value that is not a list
of valid results is a miss). A result either measured the spec (metrics and normalised PTX) or
failed, and a failure has a kind (`Failure`), read from the flags the worker and the engine set.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

from ptxdiff.compare.verdict import NUMERIC


class Failure(enum.Enum):
    """Why a spec has no measurement."""

    COMPILE_ERROR = "compile error"            # triton or ptxas refused it: a fact about source and toolchain
    TIMEOUT = "timeout"                        # it compiled past its bound (`timed_out`: that bound)
    CRASH = "crash"                            # the worker died (`crashed`: its bound) or could not start
    REFUSED = "refused"                        # ptxas has no such instruction on this target
    NOT_THIS_TOOLCHAIN = "not this toolchain"  # the name is triton's own builtin under this triton
    ABSENT = "absent"                          # the module does not define the kernel here
    NO_SPECS = "no specs"                      # the specs could not be had from the source and config


def _count(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


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
    spec: dict | None = None           # the spec as the row shows it (Spec.as_dict)
    metrics: dict | None = None
    ptx: str | None = None             # normalised PTX
    loc: dict | None = None            # the source line of each PTX line (SourceLines' JSON)
    cubin: str | None = None           # the cubin, packed (compile/disassemble.py): the HTML report's SASS
    error: str | None = None
    log: str | None = None
    timed_out: float | None = None     # the bound it compiled past
    crashed: float | None = None       # the bound it crashed its worker under (a signal, out of memory)
    guarded: bool = False              # that bound was the smaller one of guessed sizes
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
        error text, or a measurement without every number the verdicts read, the opcode
        histogram and the normalised PTX."""
        if not isinstance(value, dict) or not isinstance(value.get("label"), str):
            raise ValueError("not a result")
        error = _opt(value, "error", str)
        if error is not None:
            if not error or not all(value.get(k) is None or _count(value[k]) for k in ("timed_out", "crashed")):
                raise ValueError("a failure without its error")
        else:
            metrics, opcodes = value.get("metrics"), (value.get("metrics") or {}).get("ptx_opcodes")
            if not isinstance(metrics, dict) or not isinstance(value.get("ptx"), str) \
                    or not all(_count(metrics.get(k)) for k in NUMERIC) or not isinstance(opcodes, dict) \
                    or not all(isinstance(k, str) and _count(v) for k, v in opcodes.items()):
                raise ValueError("a measurement without its numbers")
        for name, kind in _TYPES.items():
            _opt(value, name, kind)
        return cls.of(value)

    @classmethod
    def of(cls, value: dict[str, Any]) -> SpecResult:
        """The record of a result the engine holds (made by it, or read through `from_json`)."""
        return cls(key=value.get("key"), label=value["label"], spec=value.get("spec"), metrics=value.get("metrics"),
                   ptx=value.get("ptx"), loc=value.get("loc"), error=value.get("error"), log=value.get("log"),
                   timed_out=value.get("timed_out"), crashed=value.get("crashed"), guarded=bool(value.get("guarded")),
                   transient=bool(value.get("transient")), deterministic=bool(value.get("deterministic")),
                   absent=bool(value.get("absent")), tritons_own=value.get("tritons_own"),
                   retype=value.get("retype"), refit=value.get("refit"), target=value.get("target"),
                   cubin=value.get("cubin"))


_TYPES: dict[str, type | tuple[type, ...]] = {
    "key": str, "spec": dict, "metrics": dict, "ptx": str, "cubin": str, "log": str, "tritons_own": str, "retype": dict,
    "refit": dict, "target": int}


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
