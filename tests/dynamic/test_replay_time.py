"""--time on recorded launches: one ratio per recorded launch shape, the row showing the shape
where the most time goes (the GPU measurement itself stubbed: this is about the choice)."""

from __future__ import annotations

import json

from ptxdiff.dynamic import replay, stats, timing
from ptxdiff.record import launches as recorded

GELU = {"kernel": "ops/gelu.py::gelu_kernel", "params": ["x_ptr", "n", "BLOCK"], "signature": {"x_ptr": "*fp32",
        "n": "i32"}, "constexprs": {"BLOCK": 1024}, "divisible_by_16": [], "num_warps": 4, "num_stages": 3,
        "options": {}, "autotune": None, "via": "cuda", "count": 13}


def shape(n: int, count: int) -> dict:
    return {"grid": [1, 1, 1], "args": {"x_ptr": {"dtype": "float32", "shape": [n], "stride": [1], "offset": 0,
                                                  "buffer": 0}, "n": n}, "buffers": [4 * n], "count": count}


class FakeWorker:
    gpu = True
    faulted = False


def test_each_shape_gets_a_ratio_and_the_row_the_one_where_time_goes(monkeypatch):
    launch = recorded.from_json({**GELU, "replay": [shape(1000, 12), shape(1 << 24, 1)]}, "t")
    plan = replay.ReplayPlan(GELU["kernel"], GELU["kernel"], (launch,))
    medians = iter([2.0, 900.0])           # us: 12 x 2 us < 1 x 900 us

    def measure(old, new, **kw):
        us = next(medians)
        return stats.TimingResult(1.2, 1.1, 1.3, 0.01, "slower", 30, us, us * 1.2)

    monkeypatch.setattr(replay, "load_kernels", lambda worker, plan: (None, None))
    monkeypatch.setattr(replay, "make_args", lambda r, device: {})
    monkeypatch.setattr(timing, "measure", measure)
    got = replay.time(FakeWorker(), plan, 0.01)
    assert [t["launch"] for t in got["launches"]] == ["1000 fp32", "16777216 fp32"]
    assert got["launch"] == "16777216 fp32" and got["old_median_us"] == 900.0 and got["result"] == "slower"
    assert got["summary"].startswith("replayed launch 16777216 fp32 (1 of 2 recorded launches, the most time): slower")
    json.dumps(got)                         # JSON has them all


def test_no_gpu_is_one_line():
    plan = replay.ReplayPlan("a.py::k", "a.py::k", ())
    worker = FakeWorker()
    worker.gpu = False
    assert replay.time(worker, plan, 0.0) == {"result": "not-run", "reason": "no GPU on this machine: timing needs one"}


def test_a_launch_too_large_for_the_interpreter_is_left_to_a_gpu(monkeypatch):
    big = {**shape(1 << 24, 1), "grid": [16384, 1, 1]}
    launch = recorded.from_json({**GELU, "replay": [big]}, "t")
    plan = replay.ReplayPlan(GELU["kernel"], GELU["kernel"], (launch,))
    monkeypatch.setattr(replay, "load_kernels", lambda worker, plan: (None, None))
    worker = FakeWorker()
    worker.gpu = False
    got = replay.outputs(worker, plan)
    assert got["result"] == "not-run" and got["reason"] == (
        "no recorded launch could be replayed: 16777216 fp32: 16384 programs, too many for the interpreter "
        "(a GPU replays it)")
