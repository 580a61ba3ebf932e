"""Metrics as a record: its JSON round-trips in the report's order, and JSON without every count is refused."""

from __future__ import annotations

import json

import pytest

from helpers import metrics
from ptxdiff.metrics.counts import Metrics

# the JSON report's `old`/`new` object, key for key in its order (docs/usage.md, Metrics)
REPORTED = ("ptx_regs", "ptx_regs_by_type", "ptx_instrs", "ptx_opcodes", "ptx_local_bytes", "ptx_shared_bytes", "regs",
            "spill_store_bytes", "spill_load_bytes", "stack_bytes", "local_bytes", "shared_bytes", "sass_instrs",
            "occupancy", "num_warps", "num_stages", "maxnreg", "num_ctas")
MEASURED = metrics(ptx_regs=12, ptx_regs_by_type={"b32": 8, "pred": 4}, ptx_instrs=30,
                   ptx_opcodes={"ld.global.b32": 2, "st.global.b32": 1}, regs=16, spill_store_bytes=4,
                   shared_bytes=1024, sass_instrs=40, occupancy=0.875, maxnreg=128)


@pytest.mark.parametrize("record", [MEASURED, metrics(), metrics(occupancy=1, num_ctas=2)])
def test_the_json_round_trips_in_the_reports_order(record: Metrics) -> None:
    said = record.as_json()
    assert tuple(said) == REPORTED
    assert Metrics.from_json(json.loads(json.dumps(said))) == record


def test_the_json_is_a_copy_and_unknown_keys_are_left_out() -> None:
    said = MEASURED.as_json()
    said["ptx_opcodes"]["bar.sync"] = 1
    assert "bar.sync" not in MEASURED.ptx_opcodes
    assert Metrics.from_json({**MEASURED.as_json(), "retired_count": 3}) == MEASURED


def without(name: str) -> dict:
    return {k: v for k, v in MEASURED.as_json().items() if k != name}


@pytest.mark.parametrize("value", [
    None,
    [],
    "metrics",
    {},
    without("regs"),                                    # every count is there
    without("ptx_opcodes"),                             # and both histograms
    {**MEASURED.as_json(), "regs": None},              # ptxas said nothing: not a measurement
    {**MEASURED.as_json(), "regs": "16"},
    {**MEASURED.as_json(), "regs": True},               # a flag is not a count
    {**MEASURED.as_json(), "occupancy": float("inf")},
    {**MEASURED.as_json(), "ptx_opcodes": ["ld"]},
    {**MEASURED.as_json(), "ptx_opcodes": {"ld": "2"}},
    {**MEASURED.as_json(), "ptx_regs_by_type": {1: 2}},
])
def test_json_without_every_count_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="metrics"):
        Metrics.from_json(value)
