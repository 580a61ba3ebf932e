"""Specs pair only where their guesses agree: guessed constexprs, never types or a heuristic's inputs."""

from __future__ import annotations

import pytest

from ptxdiff.compare.pairing import agree
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.specs.detail import SpecDetail


def result(constexprs: dict, guessed: dict) -> SpecResult:
    return SpecResult(key="k", label="l", spec=SpecDetail.from_json({"constexprs": constexprs, "guessed": guessed}))


@pytest.mark.parametrize(("old", "new", "agreed"), [
    (({"T": True}, {"T": True}), ({"T": True}, {"T": True}), True),
    (({"T": True}, {"T": True}), ({"T": False}, {"T": False}), False),     # a guess against another guess
    (({"T": True}, {}), ({"T": False}, {"T": False}), True),               # a fact on one side: no guess to differ
    (({"B": 64}, {"x:": "*fp32"}), ({"B": 64}, {"x:": "*fp16"}), True),    # types are not constexprs
    (({"B": 64}, {"n (read by heuristic B)": 4096}), ({"B": 64}, {"n (read by heuristic B)": 1}), True),
    (({"B": 64}, {"B": 32}), ({"B": 128}, {"B": 32}), False),              # the values compiled, not the first guess
])
def test_agree(old: tuple[dict, dict], new: tuple[dict, dict], agreed: bool) -> None:
    assert agree(result(*old), result(*new)) is agreed


def test_agree_with_a_missing_side() -> None:
    assert agree(None, result({"T": True}, {"T": True}))
