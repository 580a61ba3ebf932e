"""specs/detail.py: a spec as results and rows hold it, and its JSON (the cache's, the report's)."""

from __future__ import annotations

import json

import pytest

from ptxdiff.specs import guesses
from ptxdiff.specs.detail import SpecDetail
from ptxdiff.specs.resolve import Spec

SPEC = Spec(signature=(("x", "*fp32"), ("n", "i32"), ("DT", "constexpr"), ("B", "constexpr")),
            constexprs=(("DT", ("tl", "float16")), ("B", 64)), num_warps=8, num_stages=2, divisible=("x",),
            source="guessed", guessed=(guesses.value("B", 32), guesses.type_of("x", "*fp32"),
                                       guesses.read_by("n", "B", 4096), guesses.value("B", 64)),
            notes=("a note",), options=(("maxnreg", 128), ("num_ctas", 1)), heuristics=("B",))


def test_its_json_has_the_report_s_keys_in_order_and_values_json_keeps():
    got = SPEC.detail().as_json()
    assert list(got) == ["signature", "constexprs", "num_warps", "num_stages", "maxnreg", "num_ctas",
                         "divisible_by_16", "source", "guessed", "notes", "heuristics"]
    assert got["constexprs"] == {"DT": "('tl', 'float16')", "B": 64}   # a value JSON has no form for: its repr
    assert got["guessed"] == {"B": 64, "x:": "*fp32", "n (read by heuristic B)": 4096}   # one per key, the last
    assert got["divisible_by_16"] == ["x"] and got["notes"] == ["a note"] and got["heuristics"] == ["B"]
    assert "heuristics" not in Spec(SPEC.signature, SPEC.constexprs, 4, 3).detail().as_json()


def test_from_json_reads_back_the_same_record_and_the_same_text():
    detail = SPEC.detail()
    text = json.dumps(detail.as_json())
    again = SpecDetail.from_json(json.loads(text))
    assert again == detail and json.dumps(again.as_json()) == text
    assert again.guessed_values == {"B": 64}
    assert again.compile_options == (("num_warps", 8), ("num_stages", 2), ("maxnreg", 128), ("num_ctas", 1))


def test_a_key_left_out_takes_its_default():
    assert SpecDetail.from_json({"guessed": {"x:": "*fp32"}}) == SpecDetail(guessed=(guesses.type_of("x", "*fp32"),))


@pytest.mark.parametrize("value", [[], {"signature": []}, {"num_warps": "4"}, {"notes": "n"}, {"guessed": [1]}])
def test_a_key_of_the_wrong_kind_is_no_spec(value: object):
    with pytest.raises(ValueError):
        SpecDetail.from_json(value)
