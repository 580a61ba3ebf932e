"""The lines under `git diff`: within 100 columns (a long one goes on, indented), only the counts
that changed, the verdict coloured like the table's when git colours."""

from __future__ import annotations

import re
from types import SimpleNamespace

from helpers import kernel_lines, row_metrics
from ptxdiff.compare.results import Row
from ptxdiff.report.driver_lines import WIDTH, block

ESC = re.compile(r"\x1b\[[0-9;]*m")


GELU = Row("kernels/gelu.py::gelu_kernel", "BLOCK=1024 w4 s3", "sm_90", "structural", True, row_metrics(354, 252),
           row_metrics(346, 244), {}, spec_source="guessed")
LEAKY = Row("kernels/leaky_relu.py::leaky_relu_kernel", "SLOPE=0.01 BLOCK=1024 w4 s3 → SLOPE=0.1 BLOCK=1024 w4 s3",
            "sm_90", "constants-only", False, row_metrics(79, 65), row_metrics(79, 65), {}, spec_source="guessed")
SMALL = Row("ops/k.py::k", "BLOCK=128 w4 s3", "sm_90", "structural", True, row_metrics(40, 30), row_metrics(42, 30), {})


def lines(*rows: Row, colour: bool = False) -> list[str]:
    return block(SimpleNamespace(rows=list(rows)), colour).splitlines()


def test_every_line_fits_in_100_columns_and_says_what_changed():
    out = lines(GELU, LEAKY, SMALL)
    assert all(len(ln) <= WIDTH for ln in out), out
    assert out[0] == "ptxdiff sm_90 kernels/gelu.py::gelu_kernel [BLOCK=1024 w4 s3] (guessed) structural"
    assert out[1] == "        ptx_instrs 354→346 (-8)  ptx_regs 252→244 (-8)"   # unchanged regs, spills... left out
    assert out[2].startswith("ptxdiff sm_90 kernels/leaky_relu.py::leaky_relu_kernel [SLOPE=0.01")
    assert out[3].startswith("        ") and out[3].endswith("(guessed) constants-only")
    assert out[4] == "ptxdiff sm_90 ops/k.py::k [BLOCK=128 w4 s3] structural  ptx_instrs 40→42 (+2)"   # one line
    assert len(kernel_lines("\n".join(out))) == 3                      # three rows, continuations joined


def test_a_long_error_or_note_goes_on_indented():
    failed = Row("ops/relu.py::relu_kernel", "BLOCK=1024 w4 s3", "sm_90", "failed", True, row_metrics(62, 48), None, {},
                 error="new: compile failed: ops/relu.py:12:44: NameError: zero is not defined " + "x " * 40)
    timed = Row("ops/k.py::k", "w4 s3", "sm_90", "identical", False, row_metrics(1, 1), row_metrics(1, 1), {},
                timing={"summary": "slower: new/old 1.0040 (+0.40%), 95% CI [1.0031, 1.0050], A/A band +-0.10%, "
                                   "min effect 1.00%, old 3.01 us, new 3.02 us, 30 rounds, L2 warm"})
    out = lines(failed, timed)
    assert all(len(ln) <= WIDTH for ln in out), out
    assert "ops/relu.py:12:44: NameError: zero is not defined" in " ".join(out)
    time_at = next(i for i, ln in enumerate(out) if ln.startswith("ptxdiff sm_90 ops/k.py::k time"))
    assert out[time_at + 1].startswith("        ") and "min effect 1.00%" in " ".join(out[time_at:])


def test_colours_follow_the_verdict_and_leave_the_text_alone():
    plain, coloured = lines(GELU, LEAKY), lines(GELU, LEAKY, colour=True)
    assert [ESC.sub("", ln) for ln in coloured] == plain
    assert coloured[0].startswith("\x1b[2mptxdiff sm_90 kernels/gelu.py::gelu_kernel [BLOCK=1024 w4 s3] (guessed)\x1b[m")
    assert coloured[0].endswith(" \x1b[31mstructural\x1b[m")
    assert "\x1b[33mconstants-only\x1b[m" in coloured[3]


def test_a_narrower_terminal_breaks_the_stored_lines_again_between_words():
    from ptxdiff.report.narrow import fit_text

    why = Row("src/liger_kernel/ops/cross_entropy.py::liger_cross_entropy_kernel", "BLOCK=1024 w4 s3", "sm_90",
              "constants-only", False, row_metrics(79, 65), row_metrics(79, 65), {},
              why="mul.f32 %r2, %r1, 0fBFD9DB23; -> mul.f32 %r2, %r1, 0fBFDC28F6; " + "x" * 50)
    stored = block(SimpleNamespace(rows=[why, GELU]), True)
    assert "why: mul.f32 %r2, %r1, -1.7020; -> mul.f32 %r2, %r1, -1.7200;" in ESC.sub("", stored)
    assert all(len(ESC.sub("", ln)) <= WIDTH for ln in stored.splitlines())          # the why line too
    for width in (40, 60, 80):
        narrow = fit_text(stored, width)
        assert all(len(ESC.sub("", ln)) <= width for ln in narrow.splitlines()), narrow
        assert "".join(ESC.sub("", narrow).split()) == "".join(ESC.sub("", stored).split())   # only the breaks moved
        assert "liger_cross_entropy_kernel" in narrow                                 # a word is not cut
    assert fit_text(stored, WIDTH) == stored


def test_a_kernel_id_wider_than_a_line_is_broken_after_a_folder():
    deep = Row("/".join(f"folder_{i}" for i in range(12)) + "/k.py::deep_kernel", "w4 s3", "sm_90", "structural",
               True, row_metrics(1, 1), row_metrics(2, 1), {})
    out = lines(deep, colour=True)
    assert all(len(ESC.sub("", ln)) <= WIDTH for ln in out), out
    assert "".join(ESC.sub("", "".join(out)).split()).startswith("ptxdiffsm_90folder_0/folder_1/")
    assert any(ESC.sub("", ln).rstrip().endswith("/") for ln in out)           # broken after a folder
