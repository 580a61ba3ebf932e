"""The pull-request comment as GitHub's own renderer (cmark-gfm) shows it: the marker, a summary
that counts whatever verdicts there are, the blocking rows as one table, every row in one table
inside <details>, kernels linked, notes as a list after a blank line; bounded to a comment's
65536 characters; and the sticky rule that picks the one comment to update."""

from __future__ import annotations

import json
import re

import pytest

from helpers import body_rows, html, row_metrics
from ptxdiff.compare.notes import Note, NoteKind
from ptxdiff.compare.results import Report, Row
from ptxdiff.git.repo import Side
from ptxdiff.repo_config import Config
from ptxdiff.report.comment import (
    COMMENT_MAX,
    MARKER,
    Links,
    comment,
    comments_from_json,
    sticky_action,
    summary,
    verdict_counts,
)

HEAD = "90d209334d" + "0" * 30


def row(kernel: str, verdict: str, blocking: bool, target: str = "sm_90", why: str | None = None) -> Row:
    return Row(kernel, "BLOCK=128 w4 s3", target, verdict, blocking, row_metrics(10), row_metrics(11), {"ptx_instrs": 1},
               why=why)


def report(rows: list[Row], messages: tuple[str | Note, ...] = ()) -> Report:
    """A report; a message given as text is a config's (repository text)."""
    return Report(Side("a", "7a659300cc" + "0" * 30), Side("b", HEAD), {"ptxdiff": "0.1.0", "triton": "3.9.0"},
                  rows, Config(), messages=[m if isinstance(m, Note) else Note(NoteKind.CONFIG, None, m) for m in messages])


def parts(out: str) -> tuple[str, str, str]:
    """Before <details>, inside it, after it."""
    before, _, rest = out.partition("<details>")
    inside, _, after = rest.partition("</details>")
    return before, inside, after


def test_blocking_rows_first_every_row_in_details_notes_as_a_list():
    rows = [row("ops/a.py::a_kernel", "structural", True, why="add.f32 -1, fma.rn.f32 +1"),
            row("ops/b.py::b_kernel", "constants-only", False, why="mov.f32 %r1, 0f40000000 -> 0f40400000"),
            row("ops/b.py::b_kernel", "identical", False, target="sm_80")]
    text = comment(report(rows, messages=("| not | a | row |",)))
    assert text.startswith(MARKER + "\n")
    out = html(text)
    before, inside, after = parts(out)
    assert before.count("<table>") == 1 and inside.count("<table>") == 1 and "<table>" not in after
    assert len(body_rows(before)) == 1 and "ops/a.py::a_kernel" in body_rows(before)[0]
    assert len(body_rows(inside)) == 2 and "<summary>All 2 kernels (the JSON report has each spec row)</summary>" in inside
    assert "2 rows: 1 constants-only, 1 identical" in inside     # a line per kernel: how many rows agree
    notes = re.findall(r"<li>(.*?)</li>", after, re.S)
    assert any("fma.rn.f32 +1" in n for n in notes) and "| not | a | row |" in notes
    assert "fma.rn.f32" not in before + inside          # a note is never a table row


def test_the_summary_counts_each_kernel_once_by_its_strongest_verdict_whatever_verdicts_exist():
    rows = [row("k.py::a", "structural", True), row("k.py::a", "identical", False, target="sm_80"),
            row("k.py::b", "unmeasured", True), row("k.py::c", "some-new-verdict", False)]
    counts = verdict_counts(report(rows))
    assert counts == {"structural": 1, "unmeasured": 1, "some-new-verdict": 1}
    assert list(counts).index("structural") < list(counts).index("some-new-verdict")   # unknown ones after the known
    line = summary(report(rows))
    assert line.startswith("**ptxdiff**: 3 kernels changed: ") and "1 structural" in line
    assert "1 some-new-verdict" in line and "**blocked** by 2 kernels (1 unmeasured, 1 structural; 2 spec rows)" in line
    assert summary(report([row("k.py::c", "constants-only", False)])).endswith("1 constants-only; passes")
    assert summary(report([])) == "**ptxdiff**: no Triton kernel changed; passes"


def test_without_a_blocking_row_there_is_one_table_the_details():
    out = html(comment(report([row("k.py::a", "constants-only", False)])))
    before, inside, _ = parts(out)
    assert "<table>" not in before and "No blocking verdict." in before and inside.count("<table>") == 1


def test_kernels_link_to_their_line_at_the_head_and_names_stay_in_their_cell():
    kernel = "ops/a|b c\x1b[31m.py::k"
    links = Links("https://github.com/o/r", {kernel: (HEAD, "ops/a|b c\x1b[31m.py", 12)})
    out = html(comment(report([row(kernel, "structural", True)]), links))
    before, inside, _ = parts(out)
    for table in (before, inside):
        (cells,) = body_rows(table)
        first = re.findall(r"<td>(.*?)</td>", cells, re.S)[0]
        assert first == (f'<a href="https://github.com/o/r/blob/{HEAD}/ops/a%7Cb%20c%1B%5B31m.py#L12">'
                         "ops/a|b c\\x1b[31m.py::k</a>")
        assert len(re.findall(r"<td>", cells)) == 11
    assert Links("https://gitlab.example/g/p", {"k.py::k": (HEAD, "k.py", None)}, "-/blob").url("k.py::k") == \
        f"https://gitlab.example/g/p/-/blob/{HEAD}/k.py"
    assert Links("https://github.com/o/r").url("k.py::k") is None


def test_a_large_report_fits_a_comment_and_says_what_it_left_out():
    rows = [row(f"ops/kernel_{i:04d}.py::kernel_{i:04d}", "structural" if i < 5 else "constants-only", i < 5,
                why="x" * 40) for i in range(3000)]
    text = comment(report(rows), Links("https://github.com/o/r", {r.kernel: (HEAD, r.kernel.split("::")[0], 7)
                                                                  for r in rows}))
    assert len(text) <= COMMENT_MAX
    before, inside, after = parts(html(text))
    assert len(body_rows(before)) == 5                        # every blocking row is kept
    kept = len(body_rows(inside))
    assert 0 < kept < 3000
    assert "<summary>All 3000 kernels (the JSON report has each spec row)</summary>" in inside   # compact
    assert re.findall(r"<td>(.*?)</td>", body_rows(inside)[0]) [1:] == ["structural", "1", "1"]
    assert f"{3000 - kept} of 3000 kernels left out" in inside and "has all of them" in inside
    assert "notes left out" in after                        # the 3000 why lines did not fit either
    assert text.rstrip().endswith("has all of them._\n\n</details>")


def test_the_sticky_comment_is_the_first_of_ours_that_starts_with_the_marker():
    body = f"{MARKER}\n**ptxdiff**: 1 kernel changed: 1 structural; passes\n"
    comments = [{"id": 1, "user": {"login": "alice"}, "body": "LGTM"},
                {"id": 5, "user": {"login": "mallory"}, "body": f"{MARKER} not the bot"},
                {"id": 42, "user": {"login": "github-actions[bot]"}, "body": f"{MARKER}\nthe first push"},
                {"id": 43, "user": {"login": "github-actions[bot]"}, "body": f"{MARKER}\nanother"}]
    assert sticky_action(comments, body, "github-actions[bot]") == "update 42"
    assert sticky_action(comments, body) == "update 5"                  # without an author, any marker
    same = [{"id": 42, "user": {"login": "github-actions[bot]"}, "body": body.replace("\n", "\r\n")}]
    assert sticky_action(same, body, "github-actions[bot]") == "unchanged 42"
    assert sticky_action(comments[:2], body, "github-actions[bot]") == "create"
    assert sticky_action([{"id": 9, "author": {"username": "ci-bot"}, "body": MARKER}], body, "ci-bot") == "update 9"


@pytest.mark.parametrize("saved", [
    lambda cs: json.dumps(cs),                                                  # one page
    lambda cs: json.dumps(cs[:1]) + json.dumps(cs[1:]),                         # gh api --paginate: pages back to back
    lambda cs: "\n".join(json.dumps(c) for c in cs) + "\n",                     # --jq '.[]': one per line
])
def test_comments_are_read_as_the_forges_api_saves_them(saved):
    comments = [{"id": 1, "body": "a"}, {"id": 2, "body": "b"}, {"id": 3, "body": "c"}]
    assert comments_from_json(saved(comments)) == comments
    assert comments_from_json("") == [] and comments_from_json("[]") == []


def test_a_kernel_counts_once_by_its_strongest_measured_verdict():
    def counts(*verdicts: str) -> dict[str, int]:
        return verdict_counts(report([row("k.py::k", v, False, target=f"sm_{i}") for i, v in enumerate(verdicts)]))

    assert counts("unmeasured", *["structural"] * 4) == {"structural": 1}     # one guessed spec did not fit
    assert counts("failed", "constants-only") == {"constants-only": 1}
    assert counts("unmeasured", "unmeasured") == {"unmeasured": 1}           # compiled on neither side
    assert counts("unmeasured", "failed") == {"failed": 1}                   # one side compiled somewhere
    assert counts("added") == {"added": 1}


def test_the_blocking_table_says_how_to_approve_and_the_notes_are_collapsed():
    rows = [row("ops/a.py::a_kernel", "structural", True, why="add.f32 -1"),
            row("ops/b.py::b_kernel", "constants-only", False, why="0f3F800000 -> 0f40000000")]
    text = comment(report(rows))
    out = html(text)
    before, _, _ = parts(out)
    assert "<code>Ptx-Approved: ops/a.py::a_kernel</code>" in before and "Anyone who can push to the branch" in before
    assert "b_kernel" not in before.split("To approve")[1]                  # only what blocks is named
    notes_block = out.split("<summary>Notes (")[1]
    assert "</details>" in notes_block and "add.f32 -1" in notes_block.split("</details>")[0]
    assert "1.0000 -&gt; 2.0000" in notes_block                              # constants as values
    assert "rows:" not in text                                               # nothing about this run's caches
    assert out.count("<details>") == 2 and out.count("</details>") == 2


HOSTILE = "@alice `x` | y </details> <b>bold</b> #12 https://evil.example www.evil.example \u202eevil\u200b end"


def test_repository_text_cannot_mention_link_or_leave_its_cell():
    kernel = f"ops/{HOSTILE.replace(' ', '_')}.py::k"
    rows = [Row(kernel, "BLOCK=1 w4 s3", "sm_90", "failed", True, row_metrics(10), None, {},
                error=f"new: {HOSTILE}\nsecond line | cell"),
            row("ops/b.py::b_kernel", "structural", True)]
    text = comment(report(rows, messages=(HOSTILE,)), Links("https://github.com/o/r", {kernel: (HEAD, "ops/x.py", 3)}))
    out = html(text)
    assert out.count("<details>") == 2 and out.count("</details>") == 2      # nothing closed ours early
    assert "<b>" not in out and "\u202e" not in out and "\u200b" not in out
    assert "\\u202e" in out and "\\u200b" in out                               # shown, not hidden
    hrefs = re.findall(r'<a href="([^"]+)"', out)
    assert hrefs and all(h == f"https://github.com/o/r/blob/{HEAD}/ops/x.py#L3" for h in hrefs)   # our links only
    text_nodes = re.sub(r"<code>.*?</code>", "", out, flags=re.S)              # a code span mentions nobody
    assert not re.search(r"@[A-Za-z0-9]", text_nodes) and not re.search(r"#[0-9]", text_nodes)   # nor an issue
    before, inside, _ = parts(out)
    for table in (before, inside):
        assert all(len(re.findall(r"<td>", r)) == 11 for r in body_rows(table))   # every row keeps its cells
    assert "<code>Ptx-Approved: ops/" in before                               # the trailer, a code span


def test_approvals_and_policy_notes_are_pinned_under_the_summary_and_capped():
    policy = "the compared change edits ptxdiff's own policy (block in ptxdiff.toml); " + "x" * 20000
    approval = "ops/a.py::a_kernel (structural) passes, approved by 1a2b3c4 (Ptx-Approved: a_kernel)"
    rows = [row(f"ops/k{i}.py::k{i}", "constants-only", False, why="y" * 300) for i in range(400)]
    text = comment(report(rows, messages=(Note(NoteKind.POLICY, None, policy), Note(NoteKind.APPROVAL, "ops/a.py::a_kernel",
                                                                                 approval))),
                   approvals=[approval], limit=20000)
    assert len(text) <= 20000
    head = text.split("\n\n")[0].splitlines()
    assert head[1].endswith("passes; 1 kernel approved in this pull request")
    assert head[2] == "> " + approval.replace("(", "(").replace("_", "_")
    assert head[3].startswith("> the compared change edits") and len(head[3]) <= 2 + 300
    assert text.count(approval) == 1                                          # not again among the notes
