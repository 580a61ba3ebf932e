"""--outputs: old and new on the same seeded inputs (CPU: triton's interpreter), and the rules
for comparing outputs. --time on a machine with no GPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from helpers import commit, git, isolate, make_repo, run_main
from ptxdiff.compare.engine import Engine
from ptxdiff.compare.notes import NoteKind
from ptxdiff.corpus import pairs as corpusmod
from ptxdiff.dynamic.runner import compare_outputs, sizes_around
from ptxdiff.git.repo import Repo, Side

pytestmark = pytest.mark.module_env   # the module fixture isolates once; tests that need their own call isolate()


def test_sizes_cover_one_primes_and_block_edges():
    sizes = sizes_around([128, 1024])
    assert 1 in sizes and 127 in sizes and 129 in sizes and 1023 in sizes and 1025 in sizes and 2049 in sizes
    assert sizes_around([128], (5, 6)) == (5, 6)


def test_compare_outputs_rules():
    a = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    assert compare_outputs(a, a.clone(), "float32")[0]
    assert not compare_outputs(a, torch.tensor([1.0, 2.0, 0.0, float("inf")]), "float32")[0]     # NaN moved
    assert not compare_outputs(a, torch.tensor([1.0, 2.0, float("nan"), -float("inf")]), "float32")[0]
    ok, max_abs, max_rel = compare_outputs(torch.tensor([1.0]), torch.tensor([1.0 + 1e-7]), "float32")
    assert ok and 0 < max_abs < 1e-6
    ok, max_abs, max_rel = compare_outputs(torch.tensor([1.0]), torch.tensor([1.5]), "float32")
    assert not ok and max_abs == pytest.approx(0.5) and max_rel == pytest.approx(1 / 3)
    assert not compare_outputs(torch.zeros(2), torch.zeros(3), "float32")[0]
    assert compare_outputs((torch.ones(2), torch.zeros(1)), (torch.ones(2), torch.zeros(1)), "float32")[0]
    assert compare_outputs(torch.tensor([1.0], dtype=torch.float16), torch.tensor([1.0005], dtype=torch.float16),
                           "float16")[0]


@pytest.fixture(scope="module")
def corpus_run(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    isolate(tmp_path_factory.mktemp("outputs"), mp)
    names = ["leaky_relu", "softmax", "control_rename", "control_reorder_loads", "row_scale_wrong_stride",
             "elu_module_alpha"]
    pairs = corpusmod.load_pairs(names=names)
    where = tmp_path_factory.mktemp("repo")
    first, second = corpusmod.build_repo(pairs, Path(where), [90])
    report = Engine(Repo(where), jobs=2).compare(Side("a", first), Side("b", second), outputs=True, time=True)
    yield {r.kernel.split("/")[1].split(".py")[0]: r for r in report.rows}, report
    mp.undo()


@pytest.mark.integration
def test_constant_only_changes_are_caught_by_outputs(corpus_run):
    rows, _ = corpus_run
    for name in ("leaky_relu", "softmax", "elu_module_alpha"):
        assert rows[name].verdict == "constants-only"
        out = rows[name].outputs
        assert out["result"] == "outputs-differ", (name, out)
        assert out["n"] >= 1 and out["dtype"] == "float32" and out["max_abs"] > 0
        assert out["rtol"] == 1.3e-6 and out["device"] == "cpu"


@pytest.mark.integration
def test_controls_give_equal_outputs(corpus_run):
    rows, _ = corpus_run
    for name in ("control_rename", "control_reorder_loads"):
        assert rows[name].outputs["result"] == "outputs-equal", rows[name].outputs
        assert rows[name].outputs["checked"] >= 10


@pytest.mark.integration
def test_strided_inputs_keep_their_layout(corpus_run):
    """The wrong-stride bug shows only on a strided view: inputs must not be made contiguous."""
    rows, _ = corpus_run
    assert rows["row_scale_wrong_stride"].outputs["result"] == "outputs-differ"


@pytest.mark.integration
def test_time_without_gpu_is_one_line_and_changes_nothing_else(corpus_run):
    rows, report = corpus_run
    assert sum("--time needs a GPU" in m.text for m in report.messages if m.kind is NoteKind.DYNAMIC) == 1
    assert all(r.timing is None for r in rows.values())
    assert rows["leaky_relu"].verdict == "constants-only"


KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)


def launch(x):
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel())
    return out


def make_inputs(n, dtype, gen):
    return (torch.randn(n, generator=gen).to(dtype),)
"""


def _repo(tmp_path, config: str):
    source = KERNEL.replace("\n\n@triton.jit", "\nSCALE = tl.constexpr(2.5)\n\n\n@triton.jit", 1)
    repo = make_repo(tmp_path, {"ops/k.py": source, "pyproject.toml": config})
    text = (repo / "ops/k.py").read_text().replace("tl.constexpr(2.5)", "tl.constexpr(3.5)")
    commit(repo, "scale 3", {"ops/k.py": text})
    return repo


RUN_CONFIG = """[tool.ptxdiff]
{top}
[tool.ptxdiff.kernels."ops/k.py::scale_kernel"]
wrapper = "ops/k.py:launch"
inputs = "ops/k.py:make_inputs"
sizes = [1, 7, 130]
"""


@pytest.mark.integration
def test_repository_config_only_suggests_outputs_the_user_allows_them(tmp_path, monkeypatch, capsys):
    """A committed `semantic = "auto"` runs nothing (it would run the repository's code because
    the repository says so); the user's own git config does, and then outputs-differ blocks."""
    isolate(tmp_path, monkeypatch)
    repo = _repo(tmp_path, RUN_CONFIG.format(top='semantic = "auto"\nblock = ["structural", "failed", "outputs-differ"]'))
    monkeypatch.chdir(repo)
    code, out, _ = run_main(["diff", "HEAD~1", "HEAD", "--format", "json", "--check"], capsys)
    report = json.loads(out)
    row = report["kernels"][0]
    assert row["verdict"] == "constants-only" and row["outputs"] is None and code == 0
    (hint,) = [m for m in report["messages"] if "asks for output checks" in m]
    assert "git config --global ptxdiff.semantic auto" in hint
    git(repo, "config", "--global", "ptxdiff.semantic", "auto")
    code, out, _ = run_main(["diff", "HEAD~1", "HEAD", "--format", "json", "--check"], capsys)
    report = json.loads(out)
    row = report["kernels"][0]
    assert row["verdict"] == "constants-only"
    assert row["outputs"]["result"] == "outputs-differ" and row["outputs"]["n"] == 1
    assert row["blocking"] and code == 1
    assert any("ran the revisions' host wrappers" in m for m in report["messages"])


@pytest.mark.integration
def test_repository_local_config_cannot_allow_running_code(tmp_path, monkeypatch, capsys):
    isolate(tmp_path, monkeypatch)
    repo = _repo(tmp_path, RUN_CONFIG.format(top='semantic = "always"'))
    git(repo, "config", "ptxdiff.semantic", "always")  # .git/config: not the user's global choice
    git(repo, "config", "ptxdiff.import", "true")
    monkeypatch.chdir(repo)
    code, out, _ = run_main(["diff", "HEAD~1", "HEAD", "--format", "json"], capsys)
    report = json.loads(out)
    assert report["kernels"][0]["outputs"] is None
    assert not any("ran" in m or "imported" in m for m in report["messages"])


@pytest.mark.integration
def test_without_semantic_config_outputs_are_not_run(tmp_path, monkeypatch, capsys):
    isolate(tmp_path, monkeypatch)
    repo = _repo(tmp_path, RUN_CONFIG.format(top=""))
    monkeypatch.chdir(repo)
    code, out, _ = run_main(["diff", "HEAD~1", "HEAD", "--format", "json", "--check"], capsys)
    row = json.loads(out)["kernels"][0]
    assert row["outputs"] is None and code == 0


@pytest.mark.integration
def test_no_wrapper_config_and_no_recording_synthesises_launches(tmp_path, monkeypatch, capsys):
    """Issue 39: with neither, old and new run on launches made from the spec (dynamic/oracle.py)."""
    isolate(tmp_path, monkeypatch)
    repo = _repo(tmp_path, "[tool.ptxdiff]\n")
    monkeypatch.chdir(repo)
    code, out, _ = run_main(["diff", "HEAD~1", "HEAD", "--outputs"], capsys)
    assert code == 0
    assert "DIFFER out_ptr[0]" in out and "ops/k.py::scale_kernel: outputs differ (8 shapes, fuzzed)" in out
    assert "synthesised launches" in out


@pytest.mark.integration
def test_a_kernel_the_interpreter_cannot_run_is_not_run_with_the_reason(tmp_path, monkeypatch, capsys):
    isolate(tmp_path, monkeypatch)
    repo = _repo(tmp_path, RUN_CONFIG.format(top=""))
    text = (repo / "ops/k.py").read_text().replace(
        "tl.load(x_ptr + offs, mask=mask) * SCALE",
        'tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [tl.load(x_ptr + offs, mask=mask)], '
        "dtype=tl.float32, is_pure=True, pack=1) * SCALE")
    commit(repo, "inline asm", {"ops/k.py": text})
    monkeypatch.chdir(repo)
    code, out, _ = run_main(["diff", "HEAD~1", "HEAD", "--outputs", "--format", "json"], capsys)
    row = json.loads(out)["kernels"][0]
    assert row["outputs"]["result"] == "not-run"
    assert "interpreter could not run it" in row["outputs"]["reason"]


def test_the_device_is_decided_before_any_run_worker_starts(monkeypatch):
    """Issue 39: the pool seals a run worker that will run on the CPU, so it must know first: no
    GPU device node (or CUDA_VISIBLE_DEVICES empty) is the CPU without asking torch; else torch
    is asked once (in a process of its own), and its answer kept."""
    from ptxdiff.dynamic import runner

    asked: list[bool] = []

    def torch_says(answer: bool):
        def ask() -> bool:
            asked.append(answer)
            return answer
        return ask
    monkeypatch.setattr(runner, "_gpu", None)
    monkeypatch.setattr(runner, "_torch_sees_gpu", torch_says(True))
    monkeypatch.setattr(runner.os.path, "exists", lambda p: False)
    assert runner.runs_on_gpu() is False and asked == []
    monkeypatch.setattr(runner, "_gpu", None)
    monkeypatch.setattr(runner.os.path, "exists", lambda p: p == "/dev/nvidia0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert runner.runs_on_gpu() is False and asked == []
    monkeypatch.setattr(runner, "_gpu", None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert runner.runs_on_gpu() is True and runner.runs_on_gpu() is True and asked == [True]
    monkeypatch.setattr(runner, "_gpu", None)
    monkeypatch.setattr(runner, "_torch_sees_gpu", torch_says(False))   # a CPU-only torch, or no driver
    assert runner.runs_on_gpu() is False and asked == [True, False]
