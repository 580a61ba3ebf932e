"""The replayable launches a recorded spec keeps (`"replay"`): read, checked, merged, chosen; a
line of the first format (no `"replay"`) still reads and writes back the same bytes."""

from __future__ import annotations

import json

import pytest

from ptxdiff.errors import ConfigError
from ptxdiff.record import launches as recorded
from ptxdiff.record import replay_format

GELU = {"kernel": "ops/gelu.py::gelu_kernel", "params": ["x_ptr", "out_ptr", "n", "BLOCK"],
        "signature": {"x_ptr": "*fp16", "out_ptr": "*fp16", "n": "i32"}, "constexprs": {"BLOCK": 1024},
        "divisible_by_16": ["x_ptr", "out_ptr", "n"], "num_warps": 4, "num_stages": 3, "options": {},
        "autotune": None, "via": "interpreter", "count": 12}


def shape(n: int, count: int = 1, low: float = -1.0, high: float = 1.0) -> dict:
    return {"grid": [n // 1024 + 1, 1, 1], "args": {
        "x_ptr": {"dtype": "float16", "shape": [n], "stride": [1], "offset": 0, "buffer": 0, "range": [low, high]},
        "out_ptr": {"dtype": "float16", "shape": [n], "stride": [1], "offset": 0, "buffer": 1}, "n": n},
        "buffers": [2 * n, 2 * n], "count": count}


def test_a_line_without_replay_reads_and_writes_back_the_same_bytes():
    text = json.dumps(GELU) + "\n"
    parsed = recorded.parse(text, "f")
    assert parsed["ops/gelu.py::gelu_kernel"][0].replay == ()
    assert recorded.dumps(parsed) == text


def test_a_line_with_replay_round_trips_and_replay_is_not_part_of_the_spec():
    text = json.dumps({**GELU, "replay": [shape(4096, 10), shape(100, 2)]}) + "\n"
    (one,) = recorded.parse(text, "f")["ops/gelu.py::gelu_kernel"]
    assert [r.count for r in one.replay] == [10, 2]
    x = dict(one.replay[0].args)["x_ptr"]
    assert (x.shape, x.stride, x.offset, x.buffer, x.low, x.high) == ((4096,), (1,), 0, 0, -1.0, 1.0)
    assert recorded.dumps(recorded.parse(text, "f")) == text
    plain = recorded.from_json(GELU, "g")
    assert plain == one and plain.spec_text == one.spec_text    # a re-recording changes no kernel
    assert one.replay[0].label() == "4096 fp16"


@pytest.mark.parametrize("bad, message", [
    ({"grid": [1, 1], "args": {}, "buffers": [], "count": 1}, "3 dimensions"),
    ({**shape(8), "count": 0}, "count must be an integer >= 1"),
    ({**shape(8), "args": {"BLOCK": 4}}, "'BLOCK', which is not a run-time parameter"),
    ({**shape(8), "args": {"x_ptr": {"dtype": "float16", "shape": [8], "stride": [1], "offset": 0, "buffer": 5}}},
     "bad offset or buffer"),
])
def test_a_bad_replay_entry_is_one_error(bad, message):
    with pytest.raises(ConfigError, match=message):
        recorded.parse(json.dumps({**GELU, "replay": [bad]}), "f")


def test_select_merges_same_shapes_and_keeps_the_most_frequent_and_the_largest():
    read = [replay_format.from_json(shape(n, c, low, high), "t")
            for n, c, low, high in ((100, 5, -1, 1), (100, 3, -2, 0.5), (200, 4, -1, 1), (300, 2, -1, 1),
                                    (99999, 1, -1, 1))]
    chosen = replay_format.select(read, 3)
    assert [(dict(r.args)["n"], r.count) for r in chosen] == [(100, 8), (200, 4), (99999, 1)]
    x = dict(chosen[0].args)["x_ptr"]
    assert (x.low, x.high) == (-2, 1)                     # ranges widen over the launches merged
    assert replay_format.select(read, 1) == chosen[:1] and replay_format.select(read, 0) == ()


def test_float_ranges_round_outward_to_powers_of_two():
    raw = replay_format.from_json(shape(8, low=-4.3, high=0.3), "t")
    x = dict(replay_format.rounded(raw).args)["x_ptr"]
    assert (x.low, x.high) == (-8.0, 0.5)
    assert replay_format.outward(3.0, True) == 4.0 and replay_format.outward(3.0, False) == 2.0
    assert replay_format.outward(1e-30, True) == 0.0
    huge = dict(replay_format.rounded(replay_format.from_json(shape(8, low=3e9, high=8e37), "t")).args)["x_ptr"]
    assert (huge.low, huge.high) == (replay_format.CAP, replay_format.CAP)   # what torch.empty held: capped


def test_combine_keeps_the_replays_of_every_process():
    a = recorded.from_json({**GELU, "count": 3, "replay": [shape(100, 3)]}, "a")
    b = recorded.from_json({**GELU, "count": 2, "replay": [shape(100, 2)]}, "b")
    c = recorded.from_json({**GELU, "count": 1, "replay": [shape(5000, 1)]}, "c")
    (one,) = recorded.combine([a, b, c], keep_launches=2)["ops/gelu.py::gelu_kernel"]
    assert one.count == 6 and [(dict(r.args)["n"], r.count) for r in one.replay] == [(100, 5), (5000, 1)]
