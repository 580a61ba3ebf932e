"""A spec result's JSON and its record: what is valid, what round-trips, which failure it is."""

from __future__ import annotations

import pytest

from ptxdiff.compare.records import Failure, SpecResult, results_from_json
from ptxdiff.compare.verdict import NUMERIC

METRICS = {**dict.fromkeys(NUMERIC, 1), "ptx_opcodes": {"ld": 1}}
MEASURED = {"key": "k", "label": "BLOCK=128", "spec": {"source": "config"}, "metrics": METRICS, "ptx": ".entry k",
            "loc": {"files": [], "runs": []}}


def failed(**flags: object) -> dict:
    return {"key": "k", "label": "x", "error": "compile failed: boom", **flags}


@pytest.mark.parametrize("value, failure", [
    (MEASURED, None),
    (failed(), Failure.COMPILE_ERROR),
    (failed(timed_out=30.0, guarded=True), Failure.TIMEOUT),
    (failed(transient=True), Failure.CRASH),
    (failed(error="ptxas: Instruction 'tcgen05.mma' not supported on .target 'sm_90'"), Failure.REFUSED),
    (failed(key=None, deterministic=True, tritons_own="triton.language.sum"), Failure.NOT_THIS_TOOLCHAIN),
    (failed(key=None, deterministic=True, absent=True), Failure.ABSENT),
    (failed(key=None, error="no specs: BLOCK has no value", deterministic=True), Failure.NO_SPECS),
])
def test_a_result_says_which_failure_it_is(value: dict, failure: Failure | None) -> None:
    assert SpecResult.from_json(value).failure is failure


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
    assert (r.key, r.label, r.error, r.retype, r.log, r.timed_out, r.target, r.transient) == (
        "k", "x", "compile failed: boom", {"x_ptr": "*fp16"}, "trace", 5, 100, False)
    measured = SpecResult.from_json(MEASURED)
    assert (measured.metrics, measured.ptx, measured.loc, measured.error) == (METRICS, ".entry k", MEASURED["loc"], None)


def test_an_entry_is_its_records_or_none() -> None:
    assert [r.label for r in results_from_json([MEASURED, failed()]) or []] == ["BLOCK=128", "x"]
    assert results_from_json([MEASURED, {"label": "x"}]) is None and results_from_json([]) is None
