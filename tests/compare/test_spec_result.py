"""A spec result's JSON and its record: what is valid, what round-trips, which failure it is."""

from __future__ import annotations

import json

import pytest

from helpers import metrics
from ptxdiff.compare.cache import served, stamped
from ptxdiff.compare.spec_result import SpecResult, from_specs, from_worker, results_from_json
from ptxdiff.compile.protocol import CompileAnswer, Failure, SpecsAnswer
from ptxdiff.metrics.ptx import SourceLines
from ptxdiff.specs.detail import SpecDetail

METRICS = metrics(ptx_instrs=3, ptx_opcodes={"ld": 1}, regs=8).as_json()
LOC = {"files": ["k.py"], "runs": [[2, 0, 7]]}
MEASURED = {"key": "k", "label": "BLOCK=128", "spec": SpecDetail(source="config").as_json(), "metrics": METRICS,
            "ptx": ".entry k", "loc": LOC}


def failed(**flags: object) -> dict:
    return {"key": "k", "label": "x", "error": "compile failed: boom", **flags}


@pytest.mark.parametrize("value, failure", [
    (MEASURED, None),
    (failed(), Failure.COMPILE_ERROR),
    (failed(timed_out=30.0), Failure.TIMEOUT),
    (failed(crashed=60.0), Failure.CRASH),
    (failed(transient=True), Failure.WORKER_ERROR),
    (failed(error="compile failed: ptxas: Instruction 'tcgen05.mma' not supported on .target 'sm_90'"), Failure.REFUSED),
    (failed(error="ptxas -v printed no spill counts"), Failure.TOOL_ERROR),
    (failed(error="not compiled: guessed sizes over the cost rule", guarded=True, deterministic=True), Failure.OVER_COST),
    (failed(key=None, deterministic=True, tritons_own="triton.language.sum"), Failure.NOT_THIS_TOOLCHAIN),
    (failed(key=None, deterministic=True, absent=True), Failure.ABSENT),
    (failed(key=None, error="no specs: BLOCK has no value", deterministic=True), Failure.NO_SPECS),
])
def test_a_result_says_which_failure_it_is(value: dict, failure: Failure | None) -> None:
    """The cache's flags (and, with none, a compile error's text) say the kind; the kind says the
    same flags back, and whether a result is cached."""
    record = SpecResult.from_json(value)
    assert record.failure is failure and record.as_json() == value
    assert failure is None or failure.cached is (failure not in (Failure.TOOL_ERROR, Failure.WORKER_ERROR))


@pytest.mark.parametrize("value", [
    {"key": 3, "label": "x", "error": "e"},                     # a key is text
    {**MEASURED, "retype": ["i32"]},                            # types found are a mapping
    {**MEASURED, "target": "sm_90"},                            # a target is a number
    failed(timed_out=True),                                     # a bound is a number, not a flag
])
def test_a_result_of_the_wrong_types_is_refused(value: dict) -> None:
    with pytest.raises(ValueError):
        SpecResult.from_json(value)


def test_the_record_keeps_what_the_json_says() -> None:
    r = SpecResult.from_json({**failed(retype={"x_ptr": "*fp16"}, log="trace", timed_out=5, target=100)})
    assert (r.key, r.label, r.error, r.retype, r.log, r.failure, r.bound, r.target, r.transient) == (
        "k", "x", "compile failed: boom", {"x_ptr": "*fp16"}, "trace", Failure.TIMEOUT, 5, 100, False)
    measured = SpecResult.from_json(MEASURED)
    assert (measured.metrics, measured.ptx, measured.loc, measured.error) == (
        metrics(ptx_instrs=3, ptx_opcodes={"ld": 1}, regs=8), ".entry k", SourceLines(("k.py",), ((2, 0, 7),)), None)


def test_an_entry_is_its_records_or_none() -> None:
    assert [r.label for r in results_from_json([MEASURED, failed()]) or []] == ["BLOCK=128", "x"]
    assert results_from_json([MEASURED, {"label": "x"}]) is None and results_from_json([]) is None


@pytest.mark.parametrize("value", [
    MEASURED,
    {**MEASURED, "target": 100, "log": "ptxas info"},
    failed(),
    failed(timed_out=30.0, log="the bound"),
    failed(crashed=60.0),
    failed(transient=True),
    failed(guarded=True, deterministic=True),
    failed(key=None, deterministic=True, absent=True),
    failed(key=None, deterministic=True, tritons_own="triton.language.sum"),
    failed(retype={"x_ptr": "*fp16"}, spec=SpecDetail(constexprs={"BLOCK": 128}).as_json()),
    failed(refit={"BLOCK": 64}),
])
def test_a_result_round_trips_through_its_json(value: dict) -> None:
    record = SpecResult.from_json(value)
    said = record.as_json()
    assert said == value                         # what is set, and nothing more: None and False are left out
    assert SpecResult.from_json(json.loads(json.dumps(said))) == record


def test_an_entry_with_an_invalid_result_is_a_miss() -> None:
    """The cache's read: a stamped entry comes back as records; the same entry with one result
    damaged (or stamped for another kernel) is a miss, not a partial read."""
    records = [SpecResult.from_json(MEASURED), SpecResult.from_json(failed(key="j"))]
    entry = json.loads(json.dumps(stamped(records, "fp", "k.py::k", 90)))
    assert served(entry, "fp", "k.py::k", 90) == records
    assert served(entry, "fp", "k.py::other", 90) is None
    damaged = [entry[0], {**entry[1], "error": ""}]
    assert served(damaged, "fp", "k.py::k", 90) is None
    assert served([{**entry[0], "metrics": {**METRICS, "regs": None}}, entry[1]], "fp", "k.py::k", 90) is None


PENDING = SpecResult("k", "BLOCK=128", SpecDetail(source="config"))


@pytest.mark.parametrize("answer, failure", [
    (CompileAnswer({"metrics": METRICS, "ptx": ".entry k", "loc": LOC}), None),
    (CompileAnswer({"error": "compile failed: boom", "log": "trace", "retype": {"x_ptr": "*fp16"}}, Failure.COMPILE_ERROR),
     Failure.COMPILE_ERROR),
    (CompileAnswer({"error": "compile failed: ptxas: x not supported on .target"}, Failure.REFUSED), Failure.REFUSED),
    (CompileAnswer({"error": "ptxas -v printed no spill counts", "log": "-"}, Failure.TOOL_ERROR), Failure.TOOL_ERROR),
    (CompileAnswer({"metrics": {**METRICS, "spill_store_bytes": None}, "ptx": ".entry k"}),
     Failure.WORKER_ERROR),   # not a measurement
    (CompileAnswer({"ptx": ".entry k"}), Failure.WORKER_ERROR),
    (CompileAnswer("a traceback"), Failure.WORKER_ERROR),   # type: ignore[arg-type]
])
def test_what_a_worker_sent_is_read_over_the_spec_it_compiled(answer: CompileAnswer, failure: Failure | None) -> None:
    got = from_worker(PENDING, answer)
    assert (got.key, got.label, got.spec, got.failure) == ("k", "BLOCK=128", PENDING.spec, failure)
    if failure is Failure.WORKER_ERROR:   # an invalid answer is never cached: it may not happen again
        assert got.transient and got.error and got.error.startswith("the compile worker sent no valid result")
    else:   # the kind the worker said is the kind the cache's JSON says again
        assert SpecResult.from_json(got.as_json()) == got


@pytest.mark.parametrize("answer, flags", [
    (SpecsAnswer(error="no specs: BLOCK has no value", failure=Failure.NO_SPECS), {"deterministic": True}),
    (SpecsAnswer(error="not defined here", failure=Failure.ABSENT), {"deterministic": True, "absent": True}),
    (SpecsAnswer(error="triton's own", failure=Failure.NOT_THIS_TOOLCHAIN, tritons_own="triton.language.sum"),
     {"deterministic": True, "tritons_own": "triton.language.sum"}),
    (SpecsAnswer(error="", failure=Failure.NO_SPECS), {"transient": True}),   # not a valid result
])
def test_specs_that_cannot_be_had_are_stored_with_the_flags_they_always_had(answer: SpecsAnswer, flags: dict) -> None:
    got = from_specs(answer)
    said = got.as_json()
    assert said == {"key": None, "label": "-", "error": said["error"], **flags}
    assert SpecResult.from_json(said) == got
