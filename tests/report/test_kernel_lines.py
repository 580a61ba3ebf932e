"""A line per kernel (issue 38): the kernel's strongest verdict, the deltas of the spec to trust
most, how many specs agree; the spec rows unfold with --specs, the JSON keeps each."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

from test_render import demo_report

from helpers import row_metrics
from ptxdiff.compare.results import Row
from ptxdiff.report.driver_lines import block
from ptxdiff.report.kernels import kernel_lines, verdict_counts
from ptxdiff.report.layout import Layout
from ptxdiff.report.render import as_json, markdown, table

K = "ops/ce.py::ce_kernel"


def spec(name: str, verdict: str, source: str, blocking: bool = False, regs: tuple[int, int] = (30, 30),
         **kw: object) -> Row:
    return Row(K, name, "sm_90", verdict, blocking, row_metrics(100, regs[0]), row_metrics(100, regs[1]),
               {"ptx_regs": regs[1] - regs[0]}, spec_source=source, **kw)  # type: ignore[arg-type]


SIX = [spec("MODE=0 w4 s3", "identical", "guessed"), spec("MODE=1 w4 s3", "structural", "guessed", True, (30, 38),
                                                          why="mul.f32 +2"),
       spec("MODE=2 w4 s3", "identical", "guessed"), spec("BLOCK=4096 w4 s3", "structural", "call-site", True,
                                                          (22, 24), why="add.f32 +1"),
       spec("BLOCK=2048 w4 s3", "identical", "guessed"), spec("BLOCK=1 w4 s3", "unpaired", "guessed",
                                                              error="old: compile failed: too big")]


def test_a_kernel_line_has_the_strongest_verdict_the_trusted_specs_deltas_and_how_many_agree() -> None:
    (line,) = kernel_lines(SIX)
    assert (line.verdict, line.blocking, line.row.spec) == ("structural", True, "BLOCK=4096 w4 s3")  # call site first
    assert line.agree == "6 specs: 2 structural, 3 identical, 1 unpaired"
    assert line.as_row().delta == {"ptx_regs": 2}


def test_a_spec_that_compared_nothing_never_gives_the_kernel_its_verdict_unless_it_blocks() -> None:
    rows = [spec("a", "identical", "guessed"), spec("b", "unpaired", "guessed"), spec("c", "failed", "guessed")]
    assert kernel_lines(rows)[0].verdict == "identical"
    blocked = [*rows[:2], dataclasses.replace(rows[2], blocking=True)]
    assert kernel_lines(blocked)[0].verdict == "failed"          # what blocks is what the headline counts
    assert verdict_counts([*blocked, dataclasses.replace(SIX[0], kernel="k.py::k")]) == {"failed": 1, "identical": 1}


def test_the_table_has_a_line_per_kernel_and_unfolds_with_specs() -> None:
    report = demo_report([*SIX, *demo_report().rows])
    text = table(report, Layout(width=120))
    body = [ln for ln in text.splitlines() if "  sm_90  " in ln]
    assert len(body) == 3 and "BLOCK=4096" in text and "6 specs:" in text and "1 unpaired" in text
    assert "3 kernels" not in text and "2 kernels block: structural (3 rows)" in text
    assert "MODE=1" not in text.split("\n", 2)[2].split("a line per kernel")[0]    # the other specs fold away
    unfolded = table(report, Layout(width=120, specs=True))
    assert "MODE=1" in unfolded and len(unfolded.splitlines()) > len(text.splitlines())
    assert json.loads(as_json(report))["kernels"] == [r.as_json() for r in report.rows]   # every spec row, as before
    assert markdown(report).count("\n| ") == 3 + 1                                       # header and 3 kernels


def test_git_diff_shows_a_line_per_kernel_with_the_reason_of_its_verdict() -> None:
    out = block(SimpleNamespace(rows=SIX), False).splitlines()
    assert out[0].startswith(f"ptxdiff sm_90 {K} [BLOCK=4096 w4 s3] (call site) structural  ptx_regs 22→24 (+2)")
    assert "(6 specs: 2 structural, 3 identical, 1 unpaired)" in " ".join(out)
    assert any(ln.strip() == "why: add.f32 +1" for ln in out) and len(out) <= 4
    assert len(block(SimpleNamespace(rows=SIX), False, specs=True).splitlines()) > 6


def test_the_compact_log_table_shows_what_differs_between_a_commits_specs() -> None:
    """Issue 38: a narrow `ptxdiff log` used to drop the spec column, so six rows of a commit
    read the same; it keeps the words that tell them apart."""
    from ptxdiff.compare.history import Event
    from ptxdiff.git.values import CommitInfo
    from ptxdiff.report.history import table as log_table

    info = CommitInfo("1" * 40, "1" * 10, "A", 1_700_000_000, "tune", "tune", ())
    rows = [dataclasses.replace(SIX[i], spec=f"BLOCK=1024 HAS_WEIGHT=True MODE={i} w4 s3") for i in range(3)]
    text = log_table([Event(info, K, rows)], Layout(width=80))
    grid = "\n".join(ln for ln in text.splitlines() if ln.startswith("1111111  "))
    assert all(f"MODE={i}" in grid for i in range(3)) and "HAS_WEIGHT" not in grid


def test_a_kernel_lines_long_spec_is_cut_at_a_word_in_a_terminal_whole_with_wide_or_specs() -> None:
    long = "TEMPERATURE=1e-06 BETA=0.0 EPS_LOW=1e-06 EPS_HIGH=1e-06 LOSS_TYPE=0 SAPO_TEMP_POS=64 w4 s3"
    rows = [dataclasses.replace(r, spec=long) for r in SIX]
    narrow = table(demo_report(rows), Layout(width=120))
    assert "BETA=0.0 EPS_LOW=1e-06 …" in " ".join(narrow.split()) and "SAPO_TEMP_POS" not in narrow
    assert "SAPO_TEMP_POS=64" in table(demo_report(rows), Layout(width=120, wide=True))
    assert "SAPO_TEMP_POS=64" in table(demo_report(rows), Layout(width=120, specs=True))


def test_a_blocking_failure_of_another_spec_is_said_under_the_kernels_line() -> None:
    failed = spec("MODE=9 w4 s3", "failed", "guessed", True, error="new: compile failed: ops/ce.py:9:4: boom")
    rows = [SIX[3], failed]
    (line,) = kernel_lines(rows)
    assert line.verdict == "failed" and line.row.spec == "BLOCK=4096 w4 s3"
    assert "[sm_90 MODE=9 w4 s3]: new: compile failed: ops/ce.py:9:4: boom" in table(demo_report(rows))
    out = block(SimpleNamespace(rows=rows), False)
    assert "error [MODE=9 w4 s3]: new: compile failed: ops/ce.py:9:4: boom" in " ".join(out.split())


def test_the_push_gate_lists_a_line_per_blocking_kernel() -> None:
    from ptxdiff.gate.outcome import Outcome, RefUpdate
    from ptxdiff.report.gate import render

    blocking = [r for r in SIX if r.blocking]
    text = render(Outcome(RefUpdate("refs/heads/main", "a" * 40, "refs/heads/main", "b" * 40), blocking),
                  {K: ["1234567"]})
    assert "blocked: 1 kernel change in the block list: structural" in text
    assert len([ln for ln in text.splitlines() if ln.startswith(K + "  ")]) == 1 and "2 specs: 2 structural" in text
    assert text.count(f'--trailer "Ptx-Approved: {K}"') == 1


def test_the_push_gate_says_the_error_of_a_blocking_spec_its_line_does_not_show() -> None:
    from ptxdiff.gate.outcome import Outcome, RefUpdate
    from ptxdiff.report.gate import render

    pin = spec("-", "failed", "config", True, error="config ptxdiff.toml pins BLOCK = 128 where the launch site passes 256")
    text = render(Outcome(RefUpdate("refs/heads/main", "a" * 40, "refs/heads/main", "b" * 40), [SIX[3], pin]),
                  {K: ["1234567"]})
    assert "pins BLOCK = 128 where the launch site passes 256" in text
