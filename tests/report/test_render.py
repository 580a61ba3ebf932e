"""The report as people read it: tables fitted to 80, 100 and 200 columns (compact below the
full table's width, --wide whatever the width), verdict colours only when asked, notes wrapped,
and Markdown that GitHub's own renderer (cmark-gfm) reads as one table and paragraphs."""

from __future__ import annotations

import re

import pytest

from helpers import html, row_metrics
from ptxdiff.compare.notes import NoteKind, as_notes
from ptxdiff.compare.results import Report, Row
from ptxdiff.git.repo import Side
from ptxdiff.repo_config import Config
from ptxdiff.report.layout import Layout
from ptxdiff.report.render import markdown, table
from ptxdiff.specs.detail import SpecDetail

ESC = re.compile(r"\x1b\[[0-9;]*m")


def demo_report(rows: list[Row] | None = None, messages: tuple[str, ...] = ()) -> Report:   # messages: a config's words
    """The demo's two kernels: a structural change, and a constants-only one with a long spec."""
    rows = rows or [
        Row("kernels/gelu.py::gelu_kernel", "BLOCK=1024 w4 s3", "sm_90", "structural", True,
            row_metrics(354, 252), row_metrics(346, 244), {"ptx_instrs": -8, "ptx_regs": -8}, spec_source="guessed"),
        Row("kernels/leaky_relu.py::leaky_relu_kernel", "SLOPE=0.01 BLOCK=1024 w4 s3 → SLOPE=0.1 BLOCK=1024 w4 s3",
            "sm_90", "constants-only", False, row_metrics(79, 65, 26), row_metrics(79, 65, 26), {}, spec_source="guessed",
            spec_detail=SpecDetail.from_json({"guessed": {"x_ptr:": "*fp32", "out_ptr:": "*fp32"}})),
    ]
    return Report(Side("a", "7a659300cc" + "0" * 30), Side("b", "90d209334d" + "0" * 30),
                  {"ptxdiff": "0.1.0", "triton": "3.9.0", "python": "3.11.7"}, rows, Config(),
                  messages=as_notes(NoteKind.CONFIG, messages))


def widest(text: str) -> int:
    return max(len(ESC.sub("", ln)) for ln in text.splitlines())


@pytest.mark.parametrize("width", [80, 100])
def test_a_narrow_terminal_gets_the_compact_table_within_its_width(width):
    text = table(demo_report(), Layout(width=width))
    assert widest(text) <= width, text
    header = text.splitlines()[1].split()
    assert header == ["kernel", "target", "verdict", "changed"]            # compact: spec, from, counts folded
    assert "ptx instrs 354→346 (-8), ptx regs 252→244 (-8)" in " ".join(text.split())
    assert "regs 31" not in text                                            # unchanged counts are left out
    assert "kernels/gelu.py::gelu_kernel" in text                           # the id is not broken when it fits
    gelu = next(ln for ln in text.splitlines() if ln.startswith("kernels/gelu.py"))
    assert "structural ✗" in gelu


def test_a_wide_terminal_gets_the_full_table_and_wraps_only_what_may_wrap():
    full = table(demo_report())                        # no width: the full table as it is (files, notes)
    assert widest(full) > 200                          # the demo's table: too wide for 200 columns as it is
    text = table(demo_report(), Layout(width=200))
    assert widest(text) <= 200, text
    header = text.splitlines()[1].split()
    assert header[:4] == ["kernel", "spec", "from", "target"] and header[-1] == "verdict"
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if "SLOPE=0.01" in ln)
    assert lines[first + 1].startswith(" ") and lines[first + 1].strip() == "s3"    # the long spec, wrapped
    wide = table(demo_report(), Layout(width=80, wide=True))          # --wide: the table whatever the terminal
    assert wide.splitlines()[:5] == full.splitlines()[:5]   # heading, header, rule, the two rows
    assert widest(wide) > 200


def test_notes_wrap_at_the_width_between_words():
    text = table(demo_report(messages=("a message " * 20).strip().split("|")), Layout(width=80))
    assert widest(text) <= 80
    note = [ln for ln in text.splitlines() if "message" in ln]
    assert len(note) > 1 and all(ln.startswith("  ") for ln in note[1:])


def test_verdicts_are_coloured_only_when_asked():
    rows = demo_report().rows + [Row("ops/k.py::same_kernel", "w4 s3", "sm_90", "identical", False, row_metrics(1, 1),
                                     row_metrics(1, 1), {})]
    plain = table(demo_report(rows), Layout(width=100))
    assert "\x1b[" not in plain
    coloured = table(demo_report(rows), Layout(width=100, colour=True))
    assert "\x1b[31mstructural ✗\x1b[m" in coloured          # red
    assert "\x1b[33mconstants-only\x1b[m" in coloured        # yellow
    assert "\x1b[2midentical\x1b[m" in coloured              # dim
    assert ESC.sub("", coloured) == plain                    # colour adds nothing but colour


def test_several_specs_of_one_kernel_keep_the_spec_in_the_compact_table():
    base = demo_report().rows[0]
    rows = [base, Row(base.kernel, "BLOCK=256 w4 s3", "sm_90", "identical", False, row_metrics(1, 1), row_metrics(1, 1), {})]
    text = table(demo_report(rows), Layout(width=80, specs=True))
    assert text.splitlines()[1].split() == ["kernel", "spec", "target", "verdict", "changed"]
    assert "BLOCK=256" in text and widest(text) <= 80


def test_a_failed_row_shows_no_metric_and_an_added_one_its_counts():
    failed = Row("ops/relu.py::relu_kernel", "BLOCK=1024 w4 s3", "sm_90", "failed", True, row_metrics(62, 48), None, {},
                 error="new: compile failed: ops/relu.py:12:44: NameError: zero is not defined")
    added = Row("ops/new.py::new_kernel", "w4 s3", "sm_90", "added", False, None, row_metrics(10, 8), {})
    text = table(demo_report([failed, added]), Layout(width=80))
    failed_line = next(ln for ln in text.splitlines() if ln.startswith("ops/relu.py") and "failed" in ln)
    assert failed_line.rstrip().endswith("-")
    assert "ptx instrs 10, ptx regs 8" in " ".join(text.split())
    assert "ops/relu.py:12:44: NameError: zero is not defined" in " ".join(text.split())


# ---------------------------------------------------------------------------------------------
# Markdown, read by GitHub's renderer

def test_markdown_is_one_table_then_paragraphs_on_github():
    report = demo_report(messages=("ops/x.py::k: guessed x_ptr=*fp32, y_ptr=*fp32 (see <ptxdiff harness>)",))
    out = html(markdown(report))
    assert out.count("<table>") == 1
    body = out.split("<tbody>")[1].split("</tbody>")[0]
    assert body.count("<tr>") == 2                                     # the two kernels, nothing else
    after = out.split("</table>")[1]
    paragraphs = re.findall(r"<p>(.*?)</p>", after, re.S)
    assert "1 kernel blocks: structural (1 row)" in paragraphs, after         # only the verdicts found
    assert any("guessed the types of 2 params" in p for p in paragraphs)
    assert any("y_ptr=*fp32 (see &lt;ptxdiff harness&gt;)" in p for p in paragraphs)  # literal, not markup
    assert "<em>" not in out and "<strong>ptxdiff" in out                # the heading is bold, nothing else is
    assert "<td>kernels/gelu.py::gelu_kernel</td>" in body


def test_markdown_keeps_a_pipe_in_a_name_inside_its_cell():
    row = Row("ops/a|b.py::k", "w4 s3", "sm_90", "structural", True, row_metrics(2, 2), row_metrics(3, 3), {"ptx_instrs": 1})
    out = html(markdown(demo_report([row])))
    assert "<td>ops/a|b.py::k</td>" in out and out.count("<table>") == 1


def test_markdown_notes_that_look_like_table_rows_stay_paragraphs_on_github():
    """A message is the repository's text: pipes or a delimiter row in it must not extend the table."""
    out = html(markdown(demo_report(messages=("| x | y |", "---|---", "ops/a.py::k: why | not a cell"))))
    assert out.count("<table>") == 1
    assert len(re.findall(r"<tr>", out.split("<tbody>")[1].split("</tbody>")[0])) == 2
    paragraphs = re.findall(r"<p>(.*?)</p>", out.split("</table>")[1], re.S)
    assert {"| x | y |", "---|---", "ops/a.py::k: why | not a cell"} <= set(paragraphs)


def test_the_footer_counts_where_the_rows_came_from():
    import dataclasses

    rows = demo_report().rows
    mixed = [dataclasses.replace(rows[0], cache="compiled"), dataclasses.replace(rows[1], cache="remote"),
             dataclasses.replace(rows[1], spec="w8", cache="local"), dataclasses.replace(rows[1], spec="w2", cache="local")]
    footer = "rows: 1 compiled, 2 from the local cache, 1 from the remote cache"
    assert table(demo_report(mixed)).splitlines()[-1] == footer
    assert markdown(demo_report(mixed)).rstrip("\n").split("\n\n")[-1] == footer
    assert "rows:" not in table(demo_report())          # rows that say nothing of it (a file that does not parse)


def test_show_has_no_verdict_column_and_the_blocking_line_names_what_was_found():
    shown = Report(None, Side("b", "90d209334d" + "0" * 30), {"ptxdiff": "0.1.0"},
                   [Row("ops/k.py::k", "BLOCK=128 w4 s3", "sm_90", "-", False, None, row_metrics(1, 1), {})], Config())
    assert "verdict" not in table(shown).splitlines()[1].split() and " - " not in table(shown).splitlines()[3][-4:]
    rows = [Row(f"ops/k.py::k{i}", "w4 s3", "sm_90", v, True, row_metrics(1, 1), row_metrics(2, 2), {})
            for i, v in enumerate(["structural", "failed", "structural"])]
    assert "3 kernels block: 1 failed, 2 structural (3 rows)" in table(demo_report(rows))
    assert "1 kernel blocks: structural (1 row)\n" in table(demo_report(rows[:1]))
    assert "failed" not in table(demo_report(rows[:1])).split("blocks")[-1]
