"""--outputs with no config, no recording and no wrapper (issue 39): launches synthesised from the
compiled spec, run on old and new in triton's interpreter (no GPU here). The twelve kinds of change
of the issue, on our own kernels (tests/dynamic/oracle_kernels.py), in one tmp repository diffed
once: each change of what a kernel computes is `outputs-differ`, each rewrite `outputs-equal`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from oracle_kernels import CASES, files, kernel_id

from helpers import commit, isolate, make_repo, ptxdiff, rows_by_kernel

pytestmark = [pytest.mark.integration, pytest.mark.module_env]


@pytest.fixture(scope="module")
def diffed(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("oracle")
    isolate(tmp, mp)
    repo = make_repo(tmp, files(0))
    old = commit(repo, "old")
    new = commit(repo, "new", files(1))
    done = ptxdiff(["diff", old, new, "--outputs", "--format", "json", "-q"], repo)
    assert done.returncode in (0, 1), done.stderr
    yield repo, old, new, json.loads(done.stdout)
    mp.undo()


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_kind_of_change(diffed, case):
    rows = rows_by_kernel(diffed[3])[kernel_id(case)]
    out = rows[0]["outputs"]
    changes = CASES[case][3]
    assert out["fuzzed"] and out["result"] == ("outputs-differ" if changes else "outputs-equal"), out
    if changes:   # where it first differed: the buffer, the index, both values, the input
        assert out["buffer"] == "out_ptr" and isinstance(out["index"], int) and out["old"] != out["new"]
        assert out["shape"] and out["seed"] and out["launch"]["grid"]
    else:
        assert out["via"] == "8 shapes, fuzzed" and out["checked"] == 8 and len(out["shapes"]) == 8


def test_the_row_says_what_ran_and_where_it_differed(diffed):
    repo, old, new, _ = diffed
    done = ptxdiff(["diff", old, new, "--outputs", "--", "ops/leaky_slope.py", "ops/reassociation.py"], repo)
    assert "equal (8 shapes, fuzzed)" in done.stdout
    assert "DIFFER out_ptr[0]" in done.stdout
    assert "ops/leaky_slope.py::leaky_relu_kernel: outputs differ (8 shapes, fuzzed): first at out_ptr[0]" \
        in done.stdout and "seed 39" in done.stdout
    assert "synthesised launches" in done.stdout


def test_an_overrun_is_caught_in_the_guard_zone(diffed):
    out = rows_by_kernel(diffed[3])[kernel_id("mask_off_by_one")][0]["outputs"]
    assert out["guard"] == "after" and out["index"] >= 1


def test_softmax_padding_shows_on_a_width_that_is_not_a_power_of_two(diffed):
    out = rows_by_kernel(diffed[3])[kernel_id("softmax_padding")][0]["outputs"]
    width = out["launch"]["args"]["n_cols"]
    assert width & (width - 1)


def test_the_reproducer_runs_alone_and_shows_the_difference(diffed, tmp_path):
    repo, old, new, _ = diffed
    where = tmp_path / "repro"
    done = ptxdiff(["diff", old, new, "--outputs", "--repro", str(where), "--", "ops/relu6_bound.py",
                    "ops/hand_unrolled.py"], repo)
    assert done.returncode in (0, 1), done.stderr
    scripts = sorted(where.iterdir())
    assert [p.name for p in scripts] == ["ops_relu6_bound.py__relu6_kernel.py"]
    # triton and torch alone: no ptxdiff on the path, no repository
    run = subprocess.run([sys.executable, "-I", str(scripts[0])], capture_output=True, text=True,
                         cwd=str(tmp_path), env={"TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 1, run.stderr
    assert "outputs differ: out_ptr[" in run.stdout and "A/A: equal" in run.stdout


def test_git_diff_never_runs_kernels(diffed):
    repo, old, new, _ = diffed
    from ptxdiff.permissions import Permissions

    assert Permissions().semantic == "off"   # the diff driver's filler asks for no outputs
    done = subprocess.run(["git", "diff", old, new, "--", "ops/leaky_slope.py"], cwd=repo, capture_output=True,
                          text=True)
    assert "fuzzed" not in done.stdout


@pytest.mark.gpu
def test_each_kind_of_change_on_the_gpu(diffed):
    """The same twelve on a GPU (the fixture's run used it): device cuda."""
    for case in CASES:
        out = rows_by_kernel(diffed[3])[kernel_id(case)][0]["outputs"]
        assert out.get("device") == "cuda" and out["result"] == ("outputs-differ" if CASES[case][3]
                                                                  else "outputs-equal"), (case, out)




@pytest.mark.no_gpu   # the bounds check is the interpreter's; on a GPU the guard zones alone hold
def test_a_read_outside_every_buffer_is_stopped_and_named(diffed):
    out = rows_by_kernel(diffed[3])[kernel_id("far_overrun")][0]["outputs"]
    assert out["result"] == "outputs-differ" and "out of bounds: a load outside every buffer" in out["new"], out


def test_old_differing_from_itself_is_nondeterministic_never_outputs_differ(monkeypatch):
    """An A/A run (old twice on the same inputs) that differs: `nondeterministic`."""
    from ptxdiff.dynamic import oracle
    from ptxdiff.dynamic.synthesize import plan_for
    from ptxdiff.specs.detail import SpecDetail

    def kernel(x_ptr, out_ptr, n, BLOCK):
        return x_ptr

    side = oracle.Loaded(kernel, {})
    calls = []

    def racy(loaded, recorded, r, args):   # a different value each launch, as an unordered atomic may give
        calls.append(1)
        args["out_ptr"][0] = float(len(calls))

    monkeypatch.setattr(oracle, "load_kernels", lambda worker, plan: (side, side))
    monkeypatch.setattr(oracle, "launch", racy)
    worker = type("W", (), {"gpu": False, "faulted": False})()
    plan = plan_for("k.py::k", "k.py::k", ["x_ptr", "out_ptr", "n", "BLOCK"],
                    [("guessed", SpecDetail({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                            {"BLOCK": 64}, num_warps=4, num_stages=3))])
    out = oracle.outputs(worker, plan)
    assert out["result"] == "nondeterministic" and "old run twice" in out["reason"], out


def test_the_base_policy_blocks_on_a_fuzzed_difference(tmp_path):
    """`outputs-differ` in the base's `block`: a constants-only change whose outputs differ blocks."""
    old_text, new_text = CASES["leaky_slope"][1], CASES["leaky_slope"][2]
    policy = '[tool.ptxdiff]\nblock = ["structural", "failed", "outputs-differ"]\n'
    repo = make_repo(tmp_path, {"pyproject.toml": policy, "ops/k.py": old_text})
    old = commit(repo, "old")
    new = commit(repo, "new", {"ops/k.py": new_text})
    done = ptxdiff(["diff", old, new, "--outputs", "--check", "--format", "json", "-q"], repo)
    assert done.returncode == 1, done.stderr
    row = json.loads(done.stdout)["kernels"][0]
    assert row["verdict"] == "constants-only" and row["blocking"] and row["outputs"]["result"] == "outputs-differ"


def test_recorded_launches_come_first_and_synthesised_ones_cover_the_rest(tmp_path):
    """One kernel recorded (its launch replayed), one not (its launches synthesised), one diff."""
    from ptxdiff.record import launches as recorded
    from ptxdiff.record.replay_format import Replay, TensorArg

    texts = {f"ops/{case}.py": CASES[case][1] for case in ("leaky_slope", "relu6_bound")}
    kid = kernel_id("leaky_slope")
    arg = TensorArg("float32", (300,), (1,), 0, 0, -4.0, 4.0)
    replay = Replay((2, 1, 1), (("x_ptr", arg), ("out_ptr", TensorArg("float32", (300,), (1,), 0, 1, -4.0, 4.0)),
                                ("n", 300)), (1200, 1200), 1)
    launch = recorded.Launch(kid, ("x_ptr", "out_ptr", "n", "BLOCK"), {"x_ptr": "*fp32", "out_ptr": "*fp32",
                             "n": "i32"}, {"BLOCK": 256}, (), 4, 3, {}, None, "interpreter", 1, (replay,))
    repo = make_repo(tmp_path, {**texts, recorded.DEFAULT_PATH: recorded.dumps({kid: (launch,)})})
    old = commit(repo, "old")
    new = commit(repo, "new", {f"ops/{case}.py": CASES[case][2] for case in ("leaky_slope", "relu6_bound")})
    done = ptxdiff(["diff", old, new, "--outputs", "--format", "json", "-q"], repo)
    assert done.returncode in (0, 1), done.stderr
    rows = rows_by_kernel(json.loads(done.stdout))
    leaky, relu6 = rows[kid][0]["outputs"], rows[kernel_id("relu6_bound")][0]["outputs"]
    assert leaky["result"] == "outputs-differ" and leaky["via"].startswith("replayed launch") and "fuzzed" not in leaky
    assert relu6["result"] == "outputs-differ" and relu6["fuzzed"]


def test_git_diffs_background_job_never_runs_kernels_even_when_the_user_allows_outputs(tmp_path):
    """`git config --global ptxdiff.semantic always` asks `ptxdiff diff` for outputs; under `git diff`
    the driver's job (gitdiff/filler.compare) compiles and runs nothing."""
    from ptxdiff.gitdiff import filler

    text_old, text_new = CASES["relu6_bound"][1], CASES["relu6_bound"][2]
    repo = make_repo(tmp_path, {"ops/k.py": text_old})
    old = commit(repo, "old")
    new = commit(repo, "new", {"ops/k.py": text_new})
    subprocess.run(["git", "config", "--global", "ptxdiff.semantic", "always"], cwd=repo, check=True)
    job = {"workdir": str(repo), "key": "k", "old": f"C:{old}", "new": f"C:{new}",
           "pieces": [["ops/k.py", "ops/k.py"]]}
    state = tmp_path / "state"
    state.mkdir()
    got = filler.compare(str(state), job)
    text = b"".join(b for piece in got["lines"] for pair in piece for b in pair)
    assert b"relu6_kernel" in text and b"constants-only" in text
    assert b"outputs" not in text and b"fuzzed" not in text
    asked = ptxdiff(["diff", old, new], repo)   # the same user setting: `ptxdiff diff` runs them
    assert "DIFFER out_ptr" in asked.stdout, asked.stdout + asked.stderr
