"""`ptxdiff record -- CMD`: a small repository with a kernel, its host wrapper and a pytest test of
its own, recorded for real (the CPU interpreter here, the GPU where there is one); the recorder's
specialisation of a launch, checked in this process against triton's rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import triton.language as tl

from helpers import PY, git, make_repo, ptxdiff
from ptxdiff.record import command as record
from ptxdiff.record import launch_hook as record_hook
from ptxdiff.record import launches as recorded

SCALE = '''\
"""A kernel with its host wrapper, and an autotuned kernel with a heuristic."""
import torch
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["seed"])
def scale_kernel(x_ptr, out_ptr, bias_ptr, n, seed, alpha, flag, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask) * alpha
    if HAS_BIAS:
        y += tl.load(bias_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, y, mask=mask)


def scale(x, alpha=2.0, bias=None, block=64, num_warps=4, seed=32):
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, block),)](x, out, bias, n, seed, alpha, True, BLOCK=block,
                                           HAS_BIAS=bias is not None, num_warps=num_warps)
    return out


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=2)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def tuned(x):
    out = torch.empty_like(x)
    n = x.numel()
    tuned_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return out
'''

VENDORED = '''\
import triton
import triton.language as tl


@triton.jit
def ext_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
'''

TESTS = '''\
import os
import sys
from pathlib import Path

import torch

from ops.scale import scale, tuned

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vendor"))
from ext import ext_kernel  # noqa: E402

DEVICE = os.environ.get("FIXTURE_DEVICE", "cpu")


def test_fp32_twice():
    x = torch.arange(256, dtype=torch.float32, device=DEVICE)
    assert torch.equal(scale(x), x * 2)
    assert torch.equal(scale(x), x * 2)


def test_fp16_odd_size_with_bias():
    x = torch.ones(100, dtype=torch.float16, device=DEVICE)
    assert torch.equal(scale(x, bias=x, block=128, num_warps=2, seed=1), x * 3)


def test_one_misaligned_element_and_a_large_seed():
    x = torch.arange(64, dtype=torch.float32, device=DEVICE)
    assert torch.equal(scale(x[1:2]), x[1:2] * 2)
    assert torch.equal(scale(x[:32], seed=2**40), x[:32] * 2)


def test_tuned():
    x = torch.arange(96, dtype=torch.float32, device=DEVICE)
    assert torch.equal(tuned(x), x + 1)


def test_kernel_outside_the_repository():
    x = torch.zeros(16, device=DEVICE)
    ext_kernel[(1,)](x, 16, BLOCK=16)
    assert torch.equal(x, torch.ones(16, device=DEVICE))


def test_the_shadowed_sitecustomize_still_ran():
    assert os.environ.get("FIXTURE_SITECUSTOMIZE") == "ran"


def test_may_fail():
    assert os.environ.get("FIXTURE_FAIL") != "1"
'''

OTHER = {"kernel": "ops/other.py::other_kernel", "params": ["x_ptr", "BLOCK"], "signature": {"x_ptr": "*fp32"},
         "constexprs": {"BLOCK": 32}, "divisible_by_16": ["x_ptr"], "num_warps": 4, "num_stages": 3, "options": {},
         "autotune": None, "via": "interpreter", "count": 5}
STALE = {**OTHER, "kernel": "ops/scale.py::scale_kernel", "count": 99,
         "params": ["x_ptr", "out_ptr", "bias_ptr", "n", "seed", "alpha", "flag", "BLOCK", "HAS_BIAS"],
         "signature": {"x_ptr": "*fp64", "out_ptr": "*fp64", "bias_ptr": "*fp64", "n": "i32", "seed": "i32",
                       "alpha": "fp32", "flag": "u1"}, "constexprs": {"BLOCK": 32, "HAS_BIAS": True}}
TEST_CMD = [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
SCALE_ID = "ops/scale.py::scale_kernel"


def build_fixture(parent: Path) -> Path:
    """The fixture repository: a kernel and its wrapper (ops/), its tests, a vendored kernel git
    ignores, and a committed recording with another kernel's entry and a stale one of ours."""
    existing = "".join(json.dumps(o) + "\n" for o in (OTHER, STALE))
    repo = make_repo(parent, {"ops/__init__.py": "", "ops/scale.py": SCALE, "ops/other.py": "",
                              "tests/test_scale.py": TESTS, ".gitignore": "vendor/\n__pycache__/\n",
                              recorded.DEFAULT_PATH: existing})
    (repo / "vendor").mkdir()
    (repo / "vendor" / "ext.py").write_text(VENDORED)
    site = parent / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text('import os\nos.environ["FIXTURE_SITECUSTOMIZE"] = "ran"\n')
    return repo


def env_for(parent: Path, **extra: str) -> dict:
    return {"PYTHONPATH": str(parent / "site"), "HOME": str(parent), "GIT_CONFIG_NOSYSTEM": "1", **extra}


def launches_of(repo: Path) -> dict:
    path = repo / recorded.DEFAULT_PATH
    return recorded.parse(path.read_text(), str(path))


@pytest.fixture(scope="module")
def recorded_twice(tmp_path_factory):
    parent = tmp_path_factory.mktemp("record")
    repo = build_fixture(parent)
    env = env_for(parent)
    first = ptxdiff(["record", "--device", "interpreter", "--", *TEST_CMD], repo, env)
    text = (repo / recorded.DEFAULT_PATH).read_bytes()
    second = ptxdiff(["record", "--device", "interpreter", "--", *TEST_CMD], repo, env)
    return repo, first, text, second


@pytest.mark.integration
def test_round_trip_on_the_cpu_writes_the_file(recorded_twice):
    repo, first, _, _ = recorded_twice
    assert first.returncode == 0, first.stdout + first.stderr
    assert "7 passed" in first.stdout
    assert "recorded 7 launches of 2 kernels (6 distinct specs, interpreter) into .ptxdiff/launches.jsonl" \
        in first.stdout
    assert "ignored 1 launch of 1 kernel outside the repository or ignored by git (vendor/ext.py::ext_kernel)" \
        in first.stdout
    assert "under the triton interpreter" in first.stderr
    got = launches_of(repo)
    assert set(got) == {SCALE_ID, "ops/other.py::other_kernel", "ops/scale.py::tuned_kernel"}


@pytest.mark.integration
def test_a_later_diff_compiles_the_recorded_specs(recorded_twice, tmp_path):
    """The committed recording is what `ptxdiff diff` compiles: one row per recorded spec, each
    `spec_source` recorded, its label telling the specs apart (types, divisibility)."""
    import shutil

    repo = tmp_path / "copy"
    shutil.copytree(recorded_twice[0], repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "record launches")
    (repo / "ops" / "scale.py").write_text(SCALE.replace("* alpha", "* alpha + 1.0"))
    git(repo, "commit", "-q", "-am", "change the kernel")
    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "-q", "--", "ops/scale.py"], repo,
                   {"PTXDIFF_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode in (0, 1), proc.stderr
    rows = [r for r in json.loads(proc.stdout)["kernels"] if r["kernel"] == SCALE_ID]
    assert len(rows) == len(launches_of(repo)[SCALE_ID]) == 4
    assert {r["spec_source"] for r in rows} == {"recorded"} and {r["verdict"] for r in rows} == {"structural"}
    assert len({r["spec"] for r in rows}) == 4 and any("x_ptr:*fp16" in r["spec"] for r in rows)
    one = [r for r in rows if r["spec_detail"]["constexprs"].get("n") == 1]
    assert one and one[0]["spec_detail"]["divisible_by_16"] == ["out_ptr"]


@pytest.mark.integration
def test_values_come_from_the_actual_arguments(recorded_twice):
    repo = recorded_twice[0]
    scale = launches_of(repo)[SCALE_ID]
    params = ("x_ptr", "out_ptr", "bias_ptr", "n", "seed", "alpha", "flag", "BLOCK", "HAS_BIAS")
    assert all(x.params == params and x.via == "interpreter" and x.autotune is None for x in scale)
    fp32, fp16, large, one = scale   # the twice-launched spec first, then by their text
    assert fp32.count == 2 and fp32.signature == {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "seed": "i32",
                                                  "alpha": "fp32", "flag": "u1"}
    assert fp32.constexprs == {"bias_ptr": None, "BLOCK": 64, "HAS_BIAS": False}   # None is a constexpr
    assert fp32.divisible == ("x_ptr", "out_ptr", "n")    # 256; seed=32 is do_not_specialize
    assert (fp32.num_warps, fp32.num_stages, fp32.options) == (4, 3, {})
    assert fp16.signature["x_ptr"] == fp16.signature["bias_ptr"] == "*fp16"
    assert fp16.constexprs == {"BLOCK": 128, "HAS_BIAS": True}
    assert fp16.divisible == ("x_ptr", "out_ptr", "bias_ptr")   # n=100 is not a multiple of 16
    assert fp16.num_warps == 2 and fp16.signature["seed"] == "i32"   # seed=1 stays a run-time i32
    assert one.constexprs == {"bias_ptr": None, "n": 1, "BLOCK": 64, "HAS_BIAS": False}   # n == 1 -> constexpr 1
    assert one.divisible == ("out_ptr",) and one.signature["seed"] == "i32"   # x[1:2] is 4 bytes off
    assert large.signature["seed"] == "i64" and large.divisible == ("x_ptr", "out_ptr", "n") and large.count == 1


@pytest.mark.integration
def test_the_interpreter_records_every_autotune_config(recorded_twice):
    tuned = launches_of(recorded_twice[0])["ops/scale.py::tuned_kernel"]
    assert [(x.constexprs, x.num_warps, x.autotune, x.count) for x in tuned] == [
        ({"BLOCK": 32, "EVEN": True}, 1, "all", 1),      # heuristics evaluated on the actual n=96
        ({"BLOCK": 64, "EVEN": False}, 2, "all", 1),
    ]


@pytest.mark.integration
def test_recording_twice_gives_the_same_bytes(recorded_twice):
    repo, _, text, second = recorded_twice
    assert second.returncode == 0, second.stdout + second.stderr
    assert (repo / recorded.DEFAULT_PATH).read_bytes() == text


@pytest.mark.integration
def test_merging_keeps_other_kernels_and_replaces_the_ones_seen(recorded_twice):
    got = launches_of(recorded_twice[0])
    assert [x.as_json() for x in got["ops/other.py::other_kernel"]] == [OTHER]
    assert all(x.count != 99 for x in got[SCALE_ID])
    diff = git(recorded_twice[0], "diff", "--stat").stdout
    assert ".ptxdiff/launches.jsonl" in diff


@pytest.mark.integration
def test_a_failing_command_writes_nothing_unless_allowed(tmp_path):
    repo = build_fixture(tmp_path)
    before = (repo / recorded.DEFAULT_PATH).read_bytes()
    failed = ptxdiff(["record", "--", PY, "-c", "raise SystemExit(3)"], repo, env_for(tmp_path))
    assert failed.returncode == 1
    assert failed.stderr.strip().splitlines()[-1] == (
        f"ptxdiff: {PY} exited with status 3; nothing written (--allow-failure records the launches that ran)")
    assert (repo / recorded.DEFAULT_PATH).read_bytes() == before
    allowed = ptxdiff(["record", "--device", "interpreter", "--allow-failure", "-o", "out.jsonl", "--", *TEST_CMD,
                       "-k", "fp32 or may_fail"], repo, env_for(tmp_path, FIXTURE_FAIL="1"))
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "1 failed" in allowed.stdout
    (only,) = recorded.parse((repo / "out.jsonl").read_text(), "out.jsonl")[SCALE_ID]
    assert only.count == 2 and only.signature["x_ptr"] == "*fp32"


@pytest.mark.integration
def test_nothing_recorded_is_an_error_and_changes_nothing(tmp_path):
    repo = build_fixture(tmp_path)
    before = (repo / recorded.DEFAULT_PATH).read_bytes()
    proc = ptxdiff(["record", "--device", "interpreter", "--", PY, "-c", "pass"], repo, env_for(tmp_path))
    assert proc.returncode == 2
    assert "no launch of a kernel of this repository was recorded; .ptxdiff/launches.jsonl not changed" in proc.stderr
    assert (repo / recorded.DEFAULT_PATH).read_bytes() == before


@pytest.mark.integration
def test_a_broken_file_is_never_overwritten(tmp_path):
    repo = build_fixture(tmp_path)
    path = repo / recorded.DEFAULT_PATH
    path.write_text("<<<<<<< ours\n")
    rec = recorded.Recording((recorded.from_json({**OTHER, "count": 1}, "t"),), {})
    from ptxdiff.errors import ConfigError
    with pytest.raises(ConfigError, match=r"^\.ptxdiff/launches\.jsonl:1: git merge conflict marker"):
        record.save(path, rec, 8, str(repo))
    assert path.read_text() == "<<<<<<< ours\n"


@pytest.mark.integration
@pytest.mark.parametrize("args, message", [
    (["record"], "say what to record"),
    (["record", "--from-tritonparse", "x", "--", "true"], "say what to record"),
    (["record", "--keep", "0", "--", "true"], "--keep must be at least 1"),
    (["record", "--", "/no/such/command"], "cannot run /no/such/command"),
])
def test_usage_errors(tmp_path, args, message):
    repo = make_repo(tmp_path, {"a.txt": "a"})
    proc = ptxdiff(args, repo)
    assert proc.returncode == 2 and message in proc.stderr


def test_device_auto_follows_what_is_there():
    assert record.interpreting("interpreter", {}) and not record.interpreting("gpu", {"TRITON_INTERPRET": "1"})
    assert record.interpreting("auto", {"TRITON_INTERPRET": "1"})
    assert record.interpreting("auto", {"CUDA_VISIBLE_DEVICES": ""})


# In this process: what the hook makes of one launch (triton's binder, no GPU needed).

def _kernel(x_ptr, t, n, seed, f, b, flag, BLOCK: tl.constexpr = 16):
    pass


def test_a_launch_is_specialised_by_tritons_own_rules(tmp_path):
    from triton.runtime.jit import JITFunction

    jf = JITFunction(_kernel, do_not_specialize=["seed"])
    rec = record_hook.Recorder(str(tmp_path), str(Path(__file__).parent))
    x = torch.empty(64, dtype=torch.float16)
    text, bound, runtime = rec.entry(_kernel, (x[1:], (x, 1, 48, None), 1, 16, 1.5, None, True),
                                     {"num_warps": 8, "maxnreg": 64, "num_ctas": 1}, "cuda", jit_params=jf.params)
    one = recorded.from_json({**json.loads(text), "count": 1}, "t")
    assert one.kernel == f"{Path(__file__).name}::_kernel"   # a kernel id is the path from the root
    assert one.signature == {"x_ptr": "*fp16", "t": ["*fp16", "constexpr", "i32", "constexpr"], "seed": "i32",
                             "f": "fp32", "flag": "u1"}
    assert one.constexprs == {"t[1]": 1, "t[3]": None, "n": 1, "b": None, "BLOCK": 16}
    assert one.divisible == ("t[0]", "t[2]")          # x[1:] is 2 bytes off; seed is do_not_specialize
    assert (one.num_warps, one.num_stages, one.options) == (8, 3, {"maxnreg": 64})   # num_ctas=1 is the default
    # what a replay needs: the view's place in its buffer, scalars' values, a tuple said to be unrecorded
    x.copy_(torch.arange(64))
    shape = json.loads(rec.shapes[(text, rec.shape(text, bound, runtime, lambda meta: (meta["seed"], 2)))])
    assert shape == {"grid": [16, 2, 1], "buffers": [128], "args": {
        "x_ptr": {"dtype": "float16", "shape": [63], "stride": [1], "offset": 1, "buffer": 0, "range": [1.0, 63.0]},
        "t": {"unrecorded": "tuple"}, "seed": 16, "f": 1.5, "flag": True}}


def test_constexpr_values_as_json():
    assert record_hook.jsonable(tl.constexpr(3)) == 3
    assert record_hook.jsonable(tl.bfloat16) == "tl.bfloat16" and record_hook.jsonable(tl.uint8) == "tl.uint8"
    assert record_hook.jsonable((1, 2.5, None)) == [1, 2.5, None]
    assert record_hook.jsonable(float("inf")) == {"float": "inf"}
    assert record_hook.jsonable(tl.pointer_type(tl.float16)) == {"repr": repr(tl.pointer_type(tl.float16))}


@pytest.mark.integration
def test_kernel_ids_are_repository_relative(tmp_path):
    inside = tmp_path / "ops" / "k.py"
    inside.parent.mkdir()
    inside.write_text("def k():\n    pass\n")
    namespace: dict = {}
    exec(compile(inside.read_text(), str(inside), "exec"), namespace)
    assert record_hook.kernel_id(namespace["k"], str(tmp_path)) == "ops/k.py::k"
    assert record_hook.kernel_id(namespace["k"], str(tmp_path / "ops" / "sub")) == f"{os.path.realpath(inside)}::k"


@pytest.mark.integration
@pytest.mark.gpu
def test_round_trip_on_the_gpu_records_the_config_that_ran(tmp_path):
    repo = build_fixture(tmp_path)
    proc = ptxdiff(["record", "--device", "gpu", "--", *TEST_CMD], repo, env_for(tmp_path, FIXTURE_DEVICE="cuda"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = launches_of(repo)
    (tuned,) = got["ops/scale.py::tuned_kernel"]     # the benchmark runs are not launches
    assert tuned.autotune == "ran" and tuned.via == "cuda" and tuned.count == 1
    fp32 = got[SCALE_ID][0]
    assert fp32.count == 2 and fp32.divisible == ("x_ptr", "out_ptr", "n") and fp32.via == "cuda"


def test_the_summary_says_what_was_kept_and_left_out():
    base = recorded.from_json({**OTHER, "count": 1}, "t")
    many = [recorded.from_json({**OTHER, "constexprs": {"BLOCK": b}, "count": 1}, "t") for b in (16, 32, 64)]
    rec = recorded.Recording((base, *many), {"/venv/lib/site-packages/pkg/k.py::k": 3}, ("a note",), "interpreter")
    new = recorded.combine(rec.launches, keep=2)
    assert record.summary(rec, new, "f.jsonl", 2) == [
        "recorded 4 launches of 1 kernel (2 distinct specs, interpreter) into f.jsonl",
        "  ops/other.py::other_kernel: kept the 2 most frequent of 3 specs (--keep)",
        "ignored 3 launches of 1 kernel outside the repository or ignored by git "
        "(/venv/lib/site-packages/pkg/k.py::k); an installed copy of the package ran, not the repository's files "
        "(pip install -e . makes them the same)",
        "a note",
    ]
