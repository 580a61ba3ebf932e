"""The worker protocol: each failure kind comes from its cause, where the failure happens (the
worker's compile and specs, what a request printed), and what says a request ran out of memory."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ptxdiff.compile import worker
from ptxdiff.compile.protocol import (
    CompileAnswer,
    CompileRequest,
    Failure,
    Op,
    Outcome,
    RunAnswer,
    SpecsAnswer,
    SpecsRequest,
    compile_failure,
)
from ptxdiff.errors import ToolError
from ptxdiff.specs.declared import AbsentKernel, TritonsOwn
from ptxdiff.specs.resolve import SpecError

KERNEL = SimpleNamespace(id="ops/k.py::k", name="k")
SPEC = SimpleNamespace(options=(), num_warps=4, num_stages=3)
REFUSAL = "ptxas /tmp/k.ptx, line 9; error   : Feature 'cvt.e2m1x2.f32' not supported on .target 'sm_90a'"


def compiled(monkeypatch: pytest.MonkeyPatch, error: Exception | None, printed: str = "") -> CompileAnswer:
    """compile_spec's answer where triton gave `error` (None: it compiled), printing `printed`."""
    kernel = SimpleNamespace(asm={"ptx": ".entry k", "cubin": b""}, metadata=SimpleNamespace(shared=0))
    monkeypatch.setattr(worker, "try_compile", lambda jit, spec, cc: (None if error else kernel, error, printed))
    return worker.compile_spec(None, SPEC, 90)   # type: ignore[arg-type]


def test_a_compile_error_is_one_and_a_ptxas_refusal_of_the_target_is_refused(monkeypatch):
    failed = compiled(monkeypatch, RuntimeError("boom"))
    assert failed.failure is Failure.COMPILE_ERROR and failed.result["error"].startswith("compile failed: ")
    refused = compiled(monkeypatch, RuntimeError("PTXAS error"), REFUSAL + "\n")
    assert refused.failure is Failure.REFUSED and "not supported on .target" in refused.result["error"]


def test_a_tool_that_fails_measuring_a_compiled_spec_is_a_tool_error(monkeypatch):
    def no_counts(*args: Any) -> None:
        raise ToolError("ptxas -v printed no spill counts", "the log")

    monkeypatch.setattr(worker, "measure", no_counts)
    answer = compiled(monkeypatch, None)
    assert answer == CompileAnswer({"error": "ptxas -v printed no spill counts", "log": "the log"}, Failure.TOOL_ERROR)
    assert not answer.failure.cached   # may not happen again


def test_what_a_compile_printed_may_say_ptxas_refused_the_target():
    answer = CompileAnswer({"error": "compile failed: PassManager::run failed", "log": ""}, Failure.COMPILE_ERROR)
    assert answer.printing("").failure is Failure.COMPILE_ERROR
    printed = answer.printing(f"ptxas: error: {REFUSAL}\n")
    assert printed.failure is Failure.REFUSED and printed.result["log"].startswith("ptxas: error")
    assert compile_failure(printed.result["error"]) is Failure.REFUSED


@pytest.mark.parametrize("raised, failure", [
    (AbsentKernel("ops/k.py does not define k for sm_90"), Failure.ABSENT),
    (TritonsOwn(KERNEL, "triton.language.sum"), Failure.NOT_THIS_TOOLCHAIN),   # type: ignore[arg-type]
    (SpecError("BLOCK has no value"), Failure.NO_SPECS),
])
def test_specs_that_cannot_be_had_say_why(raised: SpecError, failure: Failure):
    def load(kernel: object, cc: int) -> None:
        raise raised

    hermetic = SimpleNamespace(imports=False, load=load)
    answer = worker.Worker.specs(hermetic, KERNEL, None, 90, None)   # type: ignore[arg-type]
    assert answer.failure is failure and answer.error == str(raised) and answer.specs == ()
    assert answer.tritons_own == ("triton.language.sum" if failure is Failure.NOT_THIS_TOOLCHAIN else None)
    importing = SimpleNamespace(imports=True, load=load)   # an import failure may not happen again: raised
    with pytest.raises(SpecError):
        worker.Worker.specs(importing, KERNEL, None, 90, None)   # type: ignore[arg-type]


def test_a_request_is_asked_of_the_worker_method_its_op_names():
    seen: list[tuple] = []
    fake = SimpleNamespace(specs=lambda *a: seen.append(("specs", *a)) or SpecsAnswer(),
                           compile=lambda *a: seen.append(("compile", *a)) or CompileAnswer({}))
    assert SpecsRequest(KERNEL, None, 90, None).ask(fake) == SpecsAnswer()   # type: ignore[arg-type]
    assert CompileRequest(KERNEL, SPEC, 80).ask(fake) == CompileAnswer({})   # type: ignore[arg-type]
    assert seen == [("specs", KERNEL, None, 90, None), ("compile", KERNEL, SPEC, 80)]
    assert (SpecsRequest.op, CompileRequest.op) == (Op.SPECS, Op.COMPILE) == ("specs", "compile")
    assert str(Outcome.OK) == "ok" and Outcome("timeout") is Outcome.TIMEOUT


def test_memory_is_what_a_failure_said():
    oom = CompileAnswer({"error": "compile failed: x", "log": "LLVM ERROR: out of memory"}, Failure.COMPILE_ERROR)
    assert oom.out_of_memory
    assert oom.noting(" (alone)").result["error"] == "compile failed: x (alone)"
    assert not CompileAnswer({"metrics": {}, "log": "out of memory"}).out_of_memory
    assert not RunAnswer({"result": "not-run"}).out_of_memory
