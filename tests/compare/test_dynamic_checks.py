"""Dynamic results belong to the rows that ran (issue 38): a replayed recording's result sits on
the recorded specs only, never on a guessed spec of the same kernel; the kernel's line says which
specs ran."""

from __future__ import annotations

import dataclasses

from helpers import row_metrics
from ptxdiff.compare.dynamic_checks import held, ran_rows
from ptxdiff.compare.results import Row
from ptxdiff.dynamic.synthesize import SynthPlan, plan_for
from ptxdiff.report.kernels import kernel_lines
from ptxdiff.specs.detail import SpecDetail


def row(spec: str, source: str, verdict: str = "identical") -> Row:
    return Row("ops/k.py::k", spec, "sm_90", verdict, False, row_metrics(1, 1), row_metrics(1, 1), {},
               spec_source=source)


ROWS = [row("MODE=0 w4 s3", "guessed"), row("BLOCK=1024 w4 s3", "recorded", "constants-only"),
        row("MODE=1 w4 s3", "guessed")]


def test_a_replayed_recording_lands_on_the_recorded_specs_only():
    assert ran_rows(ROWS, "recorded") == {1}
    assert ran_rows(ROWS, "config") == {0}          # a wrapper with no config spec: the first row
    assert ran_rows([row("w4 s3", "config"), *ROWS], "config") == {0}


def test_synthesised_launches_land_on_the_specs_they_were_made_for():
    detail = SpecDetail({"x": "*fp32", "n": "i32"}, {"MODE": 1}, num_warps=4, num_stages=3)
    rows = [ROWS[0], dataclasses.replace(ROWS[2], spec_detail=detail)]
    plan = plan_for("ops/k.py::k", "ops/k.py::k", ["x", "n", "MODE"], [("guessed", detail)])
    assert isinstance(plan, SynthPlan)
    assert ran_rows(rows, "fuzzed", plan) == {1}    # the MODE=1 spec ran, not the MODE=0 one


def test_the_kernels_line_says_which_specs_ran():
    equal = {"result": "outputs-equal", "checked": 2, "launches": 2}
    rows = [r if i != 1 else dataclasses.replace(r, outputs=equal) for i, r in enumerate(ROWS)]
    (line,) = kernel_lines(rows)
    assert line.ran == "outputs run on 1 of 3 specs: BLOCK=1024 w4 s3 (recorded)"
    assert [r.outputs for r in rows].count(None) == 2


def test_the_report_says_how_the_run_workers_were_confined(monkeypatch):
    from ptxdiff.compare import dynamic_checks

    assert held("Landlock ABI 7 (files)", None).startswith("the run workers ran sealed on the CPU")
    assert held(None, "--no-sandbox") == "the run workers were not sandboxed (--no-sandbox): bounded by the timeout only"
    monkeypatch.setattr(dynamic_checks, "runs_on_gpu", lambda: True)
    assert held(None, None).startswith("the run workers ran on the GPU: bounded by the timeout, not sealed")
    monkeypatch.setattr(dynamic_checks, "runs_on_gpu", lambda: False)
    assert held(None, None) == "the run workers did not start: nothing of the revisions ran"
