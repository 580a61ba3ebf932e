"""The branch is data: the base side's recorded launches decide the gate's dynamic checks (issue
41). With a base that blocks on `outputs-differ`, a constants-only change is caught by replaying
the base's recording; a branch that re-records its launches with all-zero inputs (or drops the
recording, or records where the base has none) cannot choose its own check's inputs: each built
as an author would, through `ptxdiff diff --check --outputs`, and `ptxdiff ci` and the pre-push
hook under the user's `ptxdiff.semantic auto`, each with the control of the plain change."""

from __future__ import annotations

import json
import os

import pytest

from helpers import commit, git, head, make_repo, pushed_repo, run_main, scale_kernel

pytestmark = pytest.mark.integration

K = "ops/k.py::scale_kernel"
POLICY = 'block = ["structural", "failed", "outputs-differ"]\n'


def recording(low: float = -4.0, high: float = 4.0) -> str:
    """One recorded launch of scale_kernel on 128 fp32 values in [low, high]."""
    line = {"kernel": K, "params": ["x_ptr", "out_ptr", "n", "BLOCK"],
            "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, "constexprs": {"BLOCK": 128},
            "divisible_by_16": ["x_ptr", "out_ptr", "n"], "num_warps": 4, "num_stages": 3, "options": {},
            "autotune": None, "via": "interpreter", "count": 1,
            "replay": [{"grid": [1, 1, 1], "args": {
                "x_ptr": {"dtype": "float32", "shape": [128], "stride": [1], "offset": 0, "buffer": 0,
                          "range": [low, high]},
                "out_ptr": {"dtype": "float32", "shape": [128], "stride": [1], "offset": 0, "buffer": 1,
                            "range": [2 * low, 2 * high]},
                "n": 128}, "buffers": [512, 512], "count": 1}]}
    return json.dumps(line) + "\n"


BASE = {"ops/__init__.py": "", "ops/k.py": scale_kernel("x * 3.0"), "ptxdiff.toml": POLICY,
        ".ptxdiff/launches.jsonl": recording()}
CHANGE = {"ops/k.py": scale_kernel("x * 3.5")}           # a constant: constants-only, other outputs
ZEROS = {**CHANGE, ".ptxdiff/launches.jsonl": recording(0.0, 0.0)}


def judged(tmp_path, capsys, monkeypatch, name: str, base: dict, change: dict, remove: list[str] = ()) -> dict:
    """diff --check --outputs, then ci and a real push with the user's `ptxdiff.semantic auto`."""
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    repo, _ = pushed_repo(tmp_path / name, capsys, base)
    old = commit(repo, "base")
    new = commit(repo, "change", change, remove=list(remove))
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--outputs", "--format", "json", "-q",
                             "--target", "sm_90", old, new], capsys)
    assert rc in (0, 1), err
    report = json.loads(out)
    git(repo, "config", "--global", "ptxdiff.semantic", "auto")   # the job's (the user's) choice: ci runs them
    ci_rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--target", "sm_90", "--base", old, "--head",
                              new, "--comment-file", str(tmp_path / f"{name}.md"),
                              "--json-file", str(tmp_path / f"{name}.json")], capsys)
    assert ci_rc in (0, 1), err
    push = git(repo, "push", "-q", "origin", "main", check=False)
    git(repo, "config", "--global", "--unset", "ptxdiff.semantic")
    rows = [r for r in report["kernels"] if r["kernel"] == K]
    return {"rc": rc, "ci": ci_rc, "push": push.returncode, "stderr": push.stderr, "rows": rows,
            "messages": report["messages"], "outputs": {(r["outputs"] or {}).get("result") for r in rows}}


def test_a_branch_that_re_records_with_zero_inputs_is_judged_on_the_base_s_recording(tmp_path, capsys, monkeypatch):
    plain = judged(tmp_path, capsys, monkeypatch, "plain", BASE, CHANGE)      # the control
    assert {r["verdict"] for r in plain["rows"]} == {"constants-only"} and plain["outputs"] == {"outputs-differ"}
    assert plain["rc"] == 1 and plain["ci"] == 1 and plain["push"] != 0, plain
    for name, change, remove in (("zeros", ZEROS, []), ("dropped", CHANGE, [".ptxdiff/launches.jsonl"])):
        got = judged(tmp_path, capsys, monkeypatch, name, BASE, change, remove)
        assert got["outputs"] == {"outputs-differ"}, (name, got["rows"])
        assert got["rc"] == 1 and got["ci"] == 1 and got["push"] != 0, (name, got)
    said = got["messages"]
    zeros = judged(tmp_path, capsys, monkeypatch, "zeros-said", BASE, ZEROS)
    assert any(K in m and "the branch records other launches" in m and "the base's recording decides" in m
               for m in zeros["messages"]), zeros["messages"]
    assert "the branch records other launches" in zeros["stderr"], zeros["stderr"]   # said at the push too
    assert not any("records other launches" in m for m in said)


def test_a_recording_only_the_branch_has_is_reported_and_never_decides(tmp_path, capsys, monkeypatch):
    base = {k: v for k, v in BASE.items() if k != ".ptxdiff/launches.jsonl"}
    wrong = judged(tmp_path, capsys, monkeypatch, "wrong", base, {**CHANGE, ".ptxdiff/launches.jsonl": recording()})
    assert wrong["outputs"] == {"outputs-differ"}                              # replayed, and shown
    assert all(r["outputs"]["report_only"].startswith(f"{K}: only the branch records launches") for r in wrong["rows"])
    assert not any(r["blocking"] for r in wrong["rows"]) and wrong["rc"] == 0 and wrong["ci"] == 0
    assert any("only the branch records launches" in m and "does not decide the gate" in m
               for m in wrong["messages"]), wrong["messages"]


WRAPPED = '''import os

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body}, mask=mask)


def launch(x):
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel())
    return out + {leak}


def make_inputs(n, dtype, gen):
    return (torch.randn(n, generator=gen).to(dtype),)
'''
WRAPPER_CONFIG = '[tool.ptxdiff.kernels."ops/k.py::scale_kernel"]\nwrapper = "ops/k.py:launch"\n' \
                 'inputs = "ops/k.py:make_inputs"\nsizes = [130]\n'


def test_the_run_workers_never_see_the_shared_cache_s_secret(tmp_path, capsys, monkeypatch):
    """A wrapper reads the environment: in a job that holds the signing secret, the new side's
    wrapper adds its length to the output; it reads nothing (outputs equal), where the control, a
    variable of no secret, is seen (outputs differ; a name the allow-list of the sealed run
    worker keeps, sandbox/environment.py)."""
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "pyproject.toml": WRAPPER_CONFIG,
                                "ops/k.py": WRAPPED.format(body="x * 2.0", leak="0.0")})
    base = head(repo)
    leaky = 'float(len(os.environ.get("PTXDIFF_REMOTE_CACHE_SECRET", "") + os.environ.get("TRITON_SEEN", "")))'
    change = commit(repo, "leak", {"ops/k.py": WRAPPED.format(body="x + x", leak=leaky)})
    monkeypatch.setenv("PTXDIFF_REMOTE_CACHE_SECRET", "the-protected-branch-secret")
    for seen, want in (("", "outputs-equal"), ("visible", "outputs-differ")):
        monkeypatch.setenv("TRITON_SEEN", seen)
        rc, out, err = run_main(["-C", str(repo), "diff", "--outputs", "--format", "json", "-q", "--target", "sm_90",
                                 base, change], capsys)
        assert rc == 0, err
        assert {r["outputs"]["result"] for r in json.loads(out)["kernels"]} == {want}, out
    assert os.environ["PTXDIFF_REMOTE_CACHE_SECRET"] == "the-protected-branch-secret"   # ptxdiff's own, kept


GENERATED = '''import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body}, mask=mask)


def launch(x):
    out = torch.empty_like(x)
    scale_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel())
    return out


def make_inputs(n, dtype, gen):
    return ({inputs}.to(dtype),)


def zeros(n, dtype, gen):
    return (torch.zeros(n).to(dtype),)
'''
RANDOM, ZERO = "torch.randn(n, generator=gen)", "torch.zeros(n)"
RUN = ('[tool.ptxdiff]\nblock = ["structural", "failed", "outputs-differ"]\n\n'
       '[tool.ptxdiff.kernels."ops/k.py::scale_kernel"]\nwrapper = "ops/k.py:launch"\ninputs = "ops/k.py:{inputs}"\n'
       'sizes = [130]\n')


def test_a_branch_cannot_choose_the_wrapper_s_inputs_either(tmp_path, capsys, monkeypatch):
    """With a host wrapper in the config: a branch that edits the input generator to give zeros,
    or points `inputs` at another generator, is checked on the base's generator and entry."""
    base = {"ops/__init__.py": "", "ops/k.py": GENERATED.format(body="x * 3.0", inputs=RANDOM),
            "pyproject.toml": RUN.format(inputs="make_inputs")}
    plain = judged(tmp_path, capsys, monkeypatch, "plain-run", base,
                   {"ops/k.py": GENERATED.format(body="x * 3.5", inputs=RANDOM)})
    assert plain["outputs"] == {"outputs-differ"} and plain["rc"] == 1 and plain["ci"] == 1 and plain["push"] != 0
    for name, change in (("generator", {"ops/k.py": GENERATED.format(body="x * 3.5", inputs=ZERO)}),
                         ("entry", {"ops/k.py": GENERATED.format(body="x * 3.5", inputs=RANDOM),
                                    "pyproject.toml": RUN.format(inputs="zeros")})):
        got = judged(tmp_path, capsys, monkeypatch, name, base, change)
        assert got["outputs"] == {"outputs-differ"}, (name, got["rows"])
        assert got["rc"] == 1 and got["ci"] == 1 and got["push"] != 0, (name, got)
    assert any("the branch sets other wrapper/inputs/sizes; the base's decide" in m for m in got["messages"])
