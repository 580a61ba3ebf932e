"""--outputs with no wrapper config: recorded launches replayed on old and new (CPU: triton's
interpreter). A repository of our own small kernels (a strided, offset view; a None argument; an
autotuned kernel; an index gather) is recorded for real by `ptxdiff record -- python run.py`,
then each kernel's body is changed in a way that keeps its values or one that does not."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import commit, git, isolate, make_repo, ptxdiff, rows_by_kernel, run_json
from ptxdiff.record import launches as recorded

pytestmark = [pytest.mark.integration, pytest.mark.module_env]

KERNELS = '''\
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs * stride, mask=m)
    tl.store(out_ptr + offs, {scale}, mask=m)


@triton.jit
def bias_kernel(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if bias_ptr is not None:
        x = {bias}
    tl.store(out_ptr + offs, x, mask=m)


@triton.autotune(configs=[triton.Config({{"BLOCK": 32}}), triton.Config({{"BLOCK": 64}})], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {tuned}, mask=m)


@triton.jit
def relu(x):
    return tl.maximum(x, 0.0)


@triton.jit
def act_kernel(x_ptr, out_ptr, n, ACT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {act}, mask=m)


@triton.jit
def gather_kernel(table_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    i = tl.load(idx_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + offs, {gather}, mask=m)
'''

ORIGINAL = {"scale": "x * 2.0", "bias": "x + tl.load(bias_ptr + offs, mask=m)", "tuned": "x * 3.0",
            "gather": "tl.load(table_ptr + i, mask=m)", "act": "ACT(x)"}
SAME = {"scale": "x + x", "bias": "tl.load(bias_ptr + offs, mask=m) + x", "tuned": "x + x + x",
        "gather": "tl.load(table_ptr + i, mask=m) * 1.0", "act": "ACT(x) * 1.0"}
WRONG = {"scale": "x * 2.5", "bias": "x - tl.load(bias_ptr + offs, mask=m)", "tuned": "x * 3.5",
         "gather": "tl.load(table_ptr + i, mask=m) * 2.0", "act": "ACT(x) + 1.0"}

RUN = '''\
import torch
import triton
from ops.k import act_kernel, bias_kernel, gather_kernel, relu, scale_kernel, tuned_kernel

torch.manual_seed(0)
x = torch.randn(64, 100)
col = x[:, 3]                                   # a strided view at storage offset 3
out = torch.empty(64)
scale_kernel[(1,)](col, out, 64, col.stride(0), BLOCK=64)
y, b, o = torch.randn(300), torch.randn(300), torch.empty(300)
bias_kernel[(3,)](y, b, o, 300, BLOCK=128)
bias_kernel[(3,)](y, None, o, 300, BLOCK=128)   # None: a constexpr, the branch compiled out
tuned_kernel[lambda meta: (triton.cdiv(300, meta["BLOCK"]),)](y, o, 300)
table, idx = torch.randn(50), torch.randint(0, 50, (300,))
gather_kernel[(3,)](table, idx, o, 300, BLOCK=128)
act_kernel[(3,)](y, o, 300, ACT=relu, BLOCK=128)   # a @triton.jit function as a constexpr
'''

NAMES = ("scale_kernel", "bias_kernel", "tuned_kernel", "gather_kernel", "act_kernel")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("replay")
    isolate(tmp, mp)
    repo = make_repo(tmp, {"ops/__init__.py": "", "ops/k.py": KERNELS.format(**ORIGINAL), "run.py": RUN})
    done = ptxdiff(["record", "--device", "interpreter", "--", sys.executable, "run.py"], repo)
    assert done.returncode == 0, done.stderr
    base = commit(repo, "record")
    same = commit(repo, "rewrites that keep the values", {"ops/k.py": KERNELS.format(**SAME)})
    wrong = commit(repo, "changes that do not", {"ops/k.py": KERNELS.format(**WRONG)})
    yield repo, base, same, wrong
    mp.undo()


def _outputs(repo: Path, old: str, new: str, capsys) -> dict[str, dict]:
    report = run_json(["diff", "-C", str(repo), old, new, "--outputs"], capsys)
    rows = rows_by_kernel(report)
    return {name: rows[f"ops/k.py::{name}"][0]["outputs"] for name in NAMES}


def test_the_recording_keeps_replayable_launches(repo):
    root = repo[0]
    launches = recorded.parse((root / recorded.DEFAULT_PATH).read_text(), "launches")
    scale = launches["ops/k.py::scale_kernel"][0].replay[0]
    args = dict(scale.args)
    assert args["x_ptr"].shape == (64,) and args["x_ptr"].stride == (100,) and args["x_ptr"].offset == 3
    assert scale.buffers[args["x_ptr"].buffer] == 64 * 100 * 4 and args["stride"] == 100
    gather = dict(launches["ops/k.py::gather_kernel"][0].replay[0].args)
    assert gather["idx_ptr"].dtype == "int64" and (gather["idx_ptr"].low, gather["idx_ptr"].high) == (0, 49)
    tuned = launches["ops/k.py::tuned_kernel"]
    assert {launch.constexprs["BLOCK"] for launch in tuned} == {32, 64}   # every Config (interpreter)
    assert {launch.replay[0].grid for launch in tuned} == {(10, 1, 1), (5, 1, 1)}
    size = (root / recorded.DEFAULT_PATH).stat().st_size
    assert size < 2000 * sum(len(v) for v in launches.values())           # small: under 2 kB a spec


def test_recording_again_gives_the_same_bytes_and_keep_launches_bounds_it(repo, tmp_path):
    root, base = repo[0], repo[1]
    committed = git(root, "show", f"{base}:{recorded.DEFAULT_PATH}").stdout
    (root / "ops" / "k.py").write_text(KERNELS.format(**ORIGINAL))   # the kernels as recorded
    for keep, name in (("3", "again.jsonl"), ("0", "none.jsonl")):
        done = ptxdiff(["record", "--device", "interpreter", "--keep-launches", keep, "-o", str(tmp_path / name),
                        "--", sys.executable, "run.py"], root)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "again.jsonl").read_text() == committed      # the values' ranges too
    none = (tmp_path / "none.jsonl").read_text()
    assert '"replay"' not in none and len(none.splitlines()) == len(committed.splitlines())


def test_rewrites_that_keep_the_values_read_outputs_equal(repo, capsys):
    root, base, same, _ = repo
    out = _outputs(root, base, same, capsys)
    for name in NAMES:
        assert out[name]["result"] == "outputs-equal", (name, out[name])
        assert out[name]["device"] == "cpu" and out[name]["via"].startswith("replayed launch")
    assert out["bias_kernel"]["checked"] == 2          # with a bias and with None


def test_wrong_changes_read_outputs_differ(repo, capsys):
    root, base, _, wrong = repo
    out = _outputs(root, base, wrong, capsys)
    for name in NAMES:
        assert out[name]["result"] == "outputs-differ", (name, out[name])
        assert out[name]["argument"] == "out_ptr" and out[name]["max_abs"] > 0
    assert out["scale_kernel"]["n"] == "64 fp32"


def test_a_launch_that_cannot_be_replayed_or_faults_says_why_and_the_others_go_on(repo, capsys):
    root = repo[0]
    path = root / recorded.DEFAULT_PATH
    lines = []
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        if obj["kernel"].endswith("::gather_kernel"):
            obj["replay"][0]["args"]["idx_ptr"] = {"unrecorded": "TensorDescriptor"}
        lines.append(json.dumps(obj))
    edited = commit(root, "the first kernels, the recording edited",
                    {"ops/k.py": KERNELS.format(**ORIGINAL), recorded.DEFAULT_PATH: "\n".join(lines) + "\n"})
    faults = {**WRONG, "bias": "tl.no_such_function(x)"}   # the new bias_kernel fails when it runs
    out = _outputs(root, edited, commit(root, "wrong again", {"ops/k.py": KERNELS.format(**faults)}), capsys)
    assert out["bias_kernel"]["result"] == "not-run"
    assert out["bias_kernel"]["reason"].startswith("replayed launch 300 fp32: the interpreter could not run it: ")
    assert "no_such_function" in out["bias_kernel"]["reason"] and "\n" not in out["bias_kernel"]["reason"]
    assert out["gather_kernel"]["result"] == "not-run"
    assert out["gather_kernel"]["reason"] == ("no recorded launch could be replayed: 50 fp32: argument idx_ptr is "
                                              "a TensorDescriptor, a kind ptxdiff record does not keep")
    assert out["scale_kernel"]["result"] == "outputs-differ"


@pytest.mark.gpu
def test_on_a_gpu_replay_times_and_checks_with_no_config(tmp_path):
    """benchmarks/gpu_replay.py: recorded on the GPU, a change that reads x twice is slower, a
    rewrite within noise, a wrong change outputs-differ; each with its numbers."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_replay.py"
    done = subprocess.run([sys.executable, str(script), "--json", str(tmp_path / "r.json")], capture_output=True,
                          text=True)
    summary = json.loads((tmp_path / "r.json").read_text())["summary"]
    assert done.returncode == 0 and all(line.startswith("PASS") for line in summary), done.stdout[-4000:]
