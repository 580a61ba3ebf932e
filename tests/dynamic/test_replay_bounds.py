"""Bounds before work (issue 41): a recorded launch is the repository's data, so replay checks it
before it allocates anything: a 48 GiB buffer, a stride-0 view of 12 Gi elements, a view past its
buffer, an int (a scalar, or an integer tensor's range) past every buffer, negative, or past
int64, is one line, the launch not replayed, never the machine's memory or a crashed worker;
the recording as a careless or hostile author writes it, through `ptxdiff diff --outputs`, with
the control of a recording that replays."""

from __future__ import annotations

import json

import pytest

from helpers import commit, make_repo, run_json, scale_kernel
from ptxdiff.dynamic.replay import MEMORY_BUDGET, Unreplayable, bounded
from ptxdiff.errors import ConfigError
from ptxdiff.record.replay_format import from_json

K = "ops/k.py::scale_kernel"
GIB = 1 << 30


def launch(x: dict | None = None, n: object = 128, buffers: tuple = (512, 512)) -> dict:
    x = {"dtype": "float32", "shape": [128], "stride": [1], "offset": 0, "buffer": 0, "range": [-4.0, 4.0], **(x or {})}
    return {"grid": [1, 1, 1], "args": {"x_ptr": x, "out_ptr": {"dtype": "float32", "shape": [128], "stride": [1],
                                                                   "offset": 0, "buffer": 1}, "n": n},
            "buffers": list(buffers), "count": 1}


HOSTILE = {
    "48 GiB buffer": (launch(buffers=(48 * GIB, 512)), "its buffers hold 48 GiB, over the replay budget of 4 GiB"),
    "stride-0 view of 12 Gi elements": (launch({"shape": [12 * GIB], "stride": [0]}),
                                        "argument x_ptr is a view of 12884901888 elements"),
    "view past its buffer": (launch({"shape": [256]}), "argument x_ptr (float32 [256] at 0, stride [1]) reaches past"),
    "size past the buffers": (launch(n=1 << 40), "argument n is 1099511627776, past the 128 elements"),
    "negative size": (launch(n=-(1 << 20)), "argument n is -1048576, past the 128 elements"),
    "past int64": (launch(n=2 ** 70), "argument n is 1180591620717411303424, past"),
    "index range past the buffers": (launch({"dtype": "int64", "range": [0, 10 ** 12]}, buffers=(1024, 512)),
                                     "argument x_ptr's range is 1000000000000, past the 128 elements"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_launch_past_its_bounds_is_refused_before_anything_is_allocated(name):
    obj, said = HOSTILE[name]
    with pytest.raises(Unreplayable) as e:
        bounded(from_json(obj, "launches.jsonl:1"))
    assert said in str(e.value) and "\n" not in str(e.value) and len(str(e.value)) < 300, str(e.value)


def test_the_control_replays_and_the_budget_is_what_one_side_may_take():
    bounded(from_json(launch(), "launches.jsonl:1"))
    bounded(from_json(launch({"dtype": "int64", "range": [0, 63]}, buffers=(1024, 512)), "x"))   # indices in range
    bounded(from_json(launch({"shape": [64], "stride": [2]}), "x"))                            # a strided view
    assert MEMORY_BUDGET == 4 * GIB
    with pytest.raises(ConfigError):                       # negative sizes never get this far
        from_json(launch(buffers=(-1, 512)), "launches.jsonl:1")


def line(replay: dict) -> str:
    return json.dumps({"kernel": K, "params": ["x_ptr", "out_ptr", "n", "BLOCK"],
                       "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, "constexprs": {"BLOCK": 128},
                       "divisible_by_16": ["x_ptr", "out_ptr"], "num_warps": 4, "num_stages": 3, "options": {},
                       "autotune": None, "via": "interpreter", "count": 1, "replay": [replay]}) + "\n"


@pytest.mark.integration
def test_diff_outputs_says_one_line_for_each_and_the_worker_lives(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": scale_kernel("x * 3.0")})
    base = commit(repo, "base")
    control = commit(repo, "control", {"ops/k.py": scale_kernel("x * 3.5"), ".ptxdiff/launches.jsonl": line(launch())})
    report = run_json(["-C", str(repo), "diff", "--outputs", "--target", "sm_90", base, control], capsys)
    assert {r["outputs"]["result"] for r in report["kernels"]} == {"outputs-differ"}
    for name in ("48 GiB buffer", "stride-0 view of 12 Gi elements", "size past the buffers", "past int64",
                 "index range past the buffers"):
        obj, said = HOSTILE[name]
        if name == "index range past the buffers":
            obj = launch({"range": [-4.0, 4.0]}, n=128)
            obj["args"]["out_ptr"] = {"dtype": "int64", "shape": [64], "stride": [1], "offset": 0, "buffer": 1,
                                      "range": [0, 10 ** 12]}
            said = "argument out_ptr's range is 1000000000000, past"
        hostile = commit(repo, name, {".ptxdiff/launches.jsonl": line(obj)})
        report = run_json(["-C", str(repo), "diff", "--outputs", "--target", "sm_90", base, hostile], capsys)
        (result,) = {json.dumps(r["outputs"], sort_keys=True) for r in report["kernels"]}
        result = json.loads(result)
        assert result["result"] == "not-run" and said in result["reason"], (name, result)
        assert result["reason"].startswith("no recorded launch could be replayed: ") and "\n" not in result["reason"]
