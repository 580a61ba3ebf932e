"""What the pool and a worker say to each other: one request type per worker operation, one answer
type per kind of answer, how a request ended (`Outcome`) and why a spec has no measurement
(`Failure`).

A failure's kind is decided where the failure happens (the worker that compiled, the pool that
timed a request out or saw its worker die) and travels as a value, so nothing downstream reads it
back from an error's wording. Both executors (the local pool, Ray) speak these types.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

from ptxdiff.compile import printed
from ptxdiff.strenum import StrEnum

if TYPE_CHECKING:
    from ptxdiff.discovery.kernels import Kernel
    from ptxdiff.dynamic.replay import ReplayPlan
    from ptxdiff.dynamic.runner import RunPlan
    from ptxdiff.dynamic.synthesize import SynthPlan
    from ptxdiff.repo_config import KernelConfig
    from ptxdiff.specs.plan import Plan
    from ptxdiff.specs.resolve import Spec


class Outcome(StrEnum):
    """How a request ended, and a worker's first word."""

    OK = "ok"                # the worker answered (an answer may say that the compile failed)
    ERROR = "error"          # no answer: the request raised, was skipped, or its worker did not start
    TIMEOUT = "timeout"      # it ran past its bound
    CRASH = "crash"          # its worker died
    READY = "ready"          # a worker started
    FATAL = "fatal"          # a worker could not start
    SANDBOX = "sandbox"      # the sandbox cannot hold here: the run stops
    SETUP = "setup"          # a Ray node has other versions or cannot install a toolchain: the run stops


class Failure(enum.Enum):
    """Why a spec has no measurement."""

    COMPILE_ERROR = "compile error"            # triton or ptxas refused it: a fact about source and toolchain
    REFUSED = "refused"                        # ptxas has no such instruction on this target
    TOOL_ERROR = "tool error"                  # it compiled, and measuring it failed (ptxas -v, cuobjdump)
    TIMEOUT = "timeout"                        # it ran past its bound
    CRASH = "crash"                            # its worker died
    WORKER_ERROR = "worker error"              # the request raised or was not run, or its worker did not start
    OVER_COST = "over cost"                    # guessed sizes over the cost rule (specs/cost.py): compiled shrunk
    NOT_THIS_TOOLCHAIN = "not this toolchain"  # the name is triton's own builtin under this triton
    OTHER_BACKEND = "other backend"            # its configs pass another backend's compile options
    ABSENT = "absent"                          # the module does not define the kernel here
    NO_SPECS = "no specs"                      # the specs could not be had from the source and config

    @property
    def cached(self) -> bool:
        """Whether a result that failed so is a fact about source, config and toolchain (the cache
        key; a timeout or a crash for its bound), not something that may not happen next time."""
        return self not in (Failure.TOOL_ERROR, Failure.WORKER_ERROR)


COMPILE_FAILED = "compile failed:"           # how the error of a compile that failed begins (compile_spec)
NOT_ON_TARGET = "not supported on .target"   # ptxas: an instruction this target does not have


def compile_failure(error: str) -> Failure:
    """The kind of a compile that failed, from what triton and ptxas said (the worker's error)."""
    return Failure.REFUSED if NOT_ON_TARGET in error else Failure.COMPILE_ERROR


OUT_OF_MEMORY = re.compile(r"MemoryError|[Oo]ut of memory|bad_alloc|Cannot allocate memory")


def out_of_memory(text: str) -> bool:
    """Whether what a failed request said is that it ran out of memory."""
    return bool(OUT_OF_MEMORY.search(text))


@dataclass(frozen=True)
class SpecsAnswer:
    """A kernel's specs, or why it has none (on the hermetic path a fact, cached like a result)."""

    specs: tuple[Spec, ...] = ()
    error: str | None = None
    failure: Failure | None = None     # NO_SPECS, ABSENT, NOT_THIS_TOOLCHAIN or OTHER_BACKEND where `error` is set
    tritons_own: str | None = None     # the triton builtin the kernel's name is bound to
    other_backend: str | None = None   # the backend whose compile options its configs pass ("ROCm (AMD)")

    @property
    def out_of_memory(self) -> bool:
        return self.error is not None and out_of_memory(self.error)

    def printing(self, text: str) -> SpecsAnswer:
        """What the request printed adds nothing to specs."""
        return self

    def noting(self, said: str) -> SpecsAnswer:
        return replace(self, error=f"{self.error}{said}") if self.error is not None else self


@dataclass(frozen=True)
class CompileAnswer:
    """One spec compiled: `result` is the JSON of a result (metrics, PTX, source lines and the packed
    cubin; or error, log and what the searches found: compile_spec), `failure` its kind."""

    result: dict[str, Any]
    failure: Failure | None = None     # COMPILE_ERROR, REFUSED or TOOL_ERROR where the result is an error

    @property
    def out_of_memory(self) -> bool:
        if self.failure is None:
            return False
        return out_of_memory(f"{self.result.get('error') or ''}\n{str(self.result.get('log') or '')[-4000:]}")

    def printing(self, text: str) -> CompileAnswer:
        """The answer with what the compile printed (printed.attach): its telling line may say
        that ptxas refused the target."""
        result = cast(dict[str, Any], printed.attach(self.result, text))
        if self.failure is not None:   # what leaves the worker reads the same in every run
            result = {**result, **{k: printed.without_temporary_names(result[k]) for k in ("error", "log")
                                   if isinstance(result.get(k), str)}}
        if self.failure is Failure.COMPILE_ERROR:
            return CompileAnswer(result, compile_failure(result["error"]))
        return replace(self, result=result)

    def noting(self, said: str) -> CompileAnswer:
        """The answer with `said` after its error."""
        error = self.result.get("error")
        return replace(self, result={**self.result, "error": error + said}) if isinstance(error, str) else self


@dataclass(frozen=True)
class RunAnswer:
    """What running old and new said (dynamic/): the row's `outputs` or `timing` value."""

    result: dict[str, Any]
    failure: ClassVar[None] = None     # a run that failed says so in its result

    @property
    def out_of_memory(self) -> bool:
        return False

    def printing(self, text: str) -> RunAnswer:
        return self

    def noting(self, said: str) -> RunAnswer:
        return self


Answer = SpecsAnswer | CompileAnswer | RunAnswer


class Op(StrEnum):
    """A worker's operations: the method of the worker that serves a request."""

    SPECS = "specs"
    COMPILE = "compile"
    OUTPUTS = "outputs"
    TIME = "time"
    REPLAY_OUTPUTS = "replay_outputs"
    REPLAY_TIME = "replay_time"
    SYNTH_OUTPUTS = "synth_outputs"


@dataclass(frozen=True)
class SpecsRequest:
    """The specs of one kernel on one target under a plan."""

    op: ClassVar[Op] = Op.SPECS
    kernel: Kernel
    config: KernelConfig
    cc: int
    plan: Plan

    def ask(self, worker: Any) -> SpecsAnswer:
        answer: SpecsAnswer = worker.specs(self.kernel, self.config, self.cc, self.plan)
        return answer


@dataclass(frozen=True)
class CompileRequest:
    """One spec of a kernel, compiled for one target."""

    op: ClassVar[Op] = Op.COMPILE
    kernel: Kernel
    spec: Spec
    cc: int

    def ask(self, worker: Any) -> CompileAnswer:
        answer: CompileAnswer = worker.compile(self.kernel, self.spec, self.cc)
        return answer


@dataclass(frozen=True)
class OutputsRequest:
    """Old and new run through a host wrapper, their outputs compared."""

    op: ClassVar[Op] = Op.OUTPUTS
    plan: RunPlan

    def ask(self, worker: Any) -> RunAnswer:
        return RunAnswer(worker.outputs(self.plan))


@dataclass(frozen=True)
class TimeRequest:
    """Old and new timed through a host wrapper."""

    op: ClassVar[Op] = Op.TIME
    plan: RunPlan
    min_band: float

    def ask(self, worker: Any) -> RunAnswer:
        return RunAnswer(worker.time(self.plan, self.min_band))


@dataclass(frozen=True)
class ReplayOutputsRequest:
    """Recorded launches replayed on old and new, their outputs compared."""

    op: ClassVar[Op] = Op.REPLAY_OUTPUTS
    plan: ReplayPlan

    def ask(self, worker: Any) -> RunAnswer:
        return RunAnswer(worker.replay_outputs(self.plan))


@dataclass(frozen=True)
class ReplayTimeRequest:
    """Recorded launches replayed on old and new, timed."""

    op: ClassVar[Op] = Op.REPLAY_TIME
    plan: ReplayPlan
    min_band: float

    def ask(self, worker: Any) -> RunAnswer:
        return RunAnswer(worker.replay_time(self.plan, self.min_band))


@dataclass(frozen=True)
class SynthOutputsRequest:
    """Launches synthesised from the compiled specs run on old and new, their outputs compared."""

    op: ClassVar[Op] = Op.SYNTH_OUTPUTS
    plan: SynthPlan

    def ask(self, worker: Any) -> RunAnswer:
        return RunAnswer(worker.synth_outputs(self.plan))


Request = (SpecsRequest | CompileRequest | OutputsRequest | TimeRequest | ReplayOutputsRequest | ReplayTimeRequest
           | SynthOutputsRequest)
