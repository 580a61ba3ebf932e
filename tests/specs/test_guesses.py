"""Guesses as records, and their JSON: the keys' shape is read and written in one place."""

from __future__ import annotations

import pytest

from ptxdiff.specs import guesses
from ptxdiff.specs.guesses import Guess, GuessKind

CASES = [   # (the record, its key in a spec's JSON, its name as the notes show it)
    (guesses.value("BLOCK", 1024), "BLOCK", "BLOCK"),
    (guesses.value("bias_ptr", None), "bias_ptr", "bias_ptr"),          # an optional pointer compiled as None
    (guesses.value("EPS", 1e-06), "EPS", "EPS"),
    (guesses.type_of("x_ptr", "*fp32"), "x_ptr:", "x_ptr"),
    (guesses.type_of("n", "i32"), "n:", "n"),
    (guesses.read_by("n", "BLOCK", 4096), "n (read by heuristic BLOCK)", "n (read by heuristic BLOCK)"),
]


@pytest.mark.parametrize(("guess", "key", "shown"), CASES)
def test_key_shown_and_back(guess: Guess, key: str, shown: str) -> None:
    assert (guess.key, guess.shown) == (key, shown)
    assert guesses.from_json({key: guess.value}) == (guess,)


@pytest.mark.parametrize(("guessed", "expected"), [
    (None, ()),
    ([["BLOCK", 4]], ()),                  # not an object: no guesses
    ({}, ()),
    ({"BLOCK": 4, "x:": "*fp16"}, (Guess(GuessKind.VALUE, "BLOCK", 4), Guess(GuessKind.TYPE, "x", "*fp16"))),
    ({"a:b": 1}, (Guess(GuessKind.VALUE, "a:b", 1),)),                    # a colon inside is no type
    ({"n (read by heuristic B)x": 1}, (Guess(GuessKind.VALUE, "n (read by heuristic B)x", 1),)),
])
def test_from_json(guessed: object, expected: tuple[Guess, ...]) -> None:
    assert guesses.from_json(guessed) == expected


def test_of_kind_picks_one_kind() -> None:
    got = guesses.from_json({"B": 4, "x:": "*fp32", "y:": "*fp16"})
    assert guesses.of_kind(got, GuessKind.TYPE) == {"x": "*fp32", "y": "*fp16"}
    assert guesses.of_kind(got, GuessKind.VALUE) == {"B": 4}
