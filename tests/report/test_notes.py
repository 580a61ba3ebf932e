"""The notes under the table as records: each has a kind and the kernel it is about, every format
shows its text, and what a format leaves out or pins is chosen by kind."""

from __future__ import annotations

import json

import pytest

from ptxdiff.compare.notes import Note, NoteKind, as_notes, texts
from ptxdiff.compare.results import Report, Row
from ptxdiff.git.repo import Side
from ptxdiff.repo_config import Config
from ptxdiff.report import safe
from ptxdiff.report.comment import comment
from ptxdiff.report.layout import md_escape
from ptxdiff.report.render import as_json, markdown, notes, table
from ptxdiff.specs.detail import SpecDetail

K, J = "ops/k.py::k", "ops/j.py::j"
GUESSED = SpecDetail.from_json({"constexprs": {"BLOCK": 64},
                                "guessed": {"BLOCK": 64, "x:": "*fp32", "n (read by heuristic BLOCK)": 4096},
                                "notes": ["the evaluator assumed n > 0"]})
MESSAGES = [Note(NoteKind.POLICY, None, "the compared change edits ptxdiff's own policy (block)"),
            Note(NoteKind.TRITONS_OWN, J, f"{J}: not a kernel under this triton"),
            Note(NoteKind.REMOTE, None, "remote cache s3://b: down; compiled here instead"),
            Note(NoteKind.APPROVAL, K, f"{K} (structural) passes, approved by 1a2b3c4")]


def report(messages: list[Note] = MESSAGES) -> Report:
    rows = [Row(K, "BLOCK=64 w4 s3", "sm_90", "structural", True, None, None, {}, spec_detail=GUESSED, cache="local"),
            Row(J, "w4 s3", "sm_90", "failed", False, None, None, {}, error="new: boom", cache="compiled")]
    return Report(Side("a", "a" * 40), Side("b", "b" * 40), {"ptxdiff": "0.1.0"}, rows, Config(), messages=messages)


def test_every_note_has_its_kind_and_kernel_in_order() -> None:
    assert [(n.kind, n.kernel) for n in notes(report())] == [
        (NoteKind.ERROR, J), (NoteKind.GUESS, K), (NoteKind.SPEC, K),
        *((m.kind, m.kernel) for m in MESSAGES), (NoteKind.BLOCKING, None), (NoteKind.CACHE, None)]
    guess = next(n for n in notes(report()) if n.kind is NoteKind.GUESS)
    assert guess.text == (f"{K}: guessed BLOCK=64, n (read by heuristic BLOCK)=4096, the types of 1 params "
                          "(config or `ptxdiff record` make them facts)")


@pytest.mark.parametrize(("run", "left_out"), [
    (True, set()),
    (False, {NoteKind.REMOTE, NoteKind.CACHE}),      # the comment: nothing that differs between two runs
])
def test_what_differs_between_runs_is_left_out_by_kind(run: bool, left_out: set[NoteKind]) -> None:
    every = {n.kind for n in notes(report())}
    assert {n.kind for n in notes(report(), run=run)} == every - left_out


@pytest.mark.parametrize(("kind", "pinned", "listed"), [   # where the comment puts a message of each kind
    (NoteKind.POLICY, True, False),
    (NoteKind.APPROVAL, False, False),                    # pinned from the approvals ci passes: listed once
    (NoteKind.CONFIG, False, True),
    (NoteKind.TRITONS_OWN, False, True),
    (NoteKind.SUBMODULE, False, True),
    (NoteKind.REMOTE, False, False),
])
def test_the_comment_pins_or_lists_a_message_by_its_kind(kind: NoteKind, pinned: bool, listed: bool) -> None:
    said = "policy words that could be anything"
    text = comment(report([Note(kind, None, said)]))
    head, _, rest = text.partition("\n\n")
    assert (said in head, said in rest) == (pinned, listed)


def test_every_format_shows_the_texts() -> None:
    rep = report()
    lines = texts(notes(rep))
    assert table(rep).splitlines()[-len(lines):] == lines
    assert markdown(rep).rstrip("\n").split("\n\n")[-len(lines):] == [md_escape(line) for line in lines]
    assert json.loads(as_json(rep))["messages"] == texts(MESSAGES)


def test_safe_keeps_kind_and_kernel_and_shows_the_text() -> None:
    (shown,) = safe.report(report([Note(NoteKind.CONFIG, K, "a\u202eb")])).messages
    assert (shown.kind, shown.kernel, shown.text) == (NoteKind.CONFIG, K, "a\\u202eb")


def test_as_notes_one_per_line() -> None:
    assert as_notes(NoteKind.SUGGESTION, ["a", "b"]) == [Note(NoteKind.SUGGESTION, None, "a"),
                                                          Note(NoteKind.SUGGESTION, None, "b")]
