"""The launch is part of the kernel: a changed call-site value, `num_warps`, module constant read
at the call, recorded launch or config entry is a change of the kernel in `diff`, `log`, under
`git diff` (below the file that changed) and at the pre-push gate; reformatting a call, renaming a
variable or a comment is none. Each side is compiled with its own launch values."""

from __future__ import annotations

import json

import pytest

from helpers import HEADER, add_origin, commit, git, install, make_repo, rows_by_kernel, run_json, run_main
from ptxdiff.compare.gate_inputs import NOT_THE_GATE
from ptxdiff.discovery.kernels import discover
from ptxdiff.gitdiff.patches import handled
from ptxdiff.record.launches import DEFAULT_PATH, from_json
from ptxdiff.repo_config import Config, parse
from ptxdiff.source.modules import FileSet
from ptxdiff.specs import launch

KERNEL = HEADER + '''
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
'''

WRAPPER = '''from ops.vadd import add_kernel

BLOCK = 64


def add(x, y, out):
    n = out.numel()
    add_kernel[(n // 64,)](x, y, out, n, BLOCK_SIZE=64)
'''

KID = "ops/vadd.py::add_kernel"


def _repo(tmp_path, wrapper: str = WRAPPER, **files):
    return make_repo(tmp_path, {"ops/__init__.py": "", "ops/vadd.py": KERNEL, "ops/wrap.py": wrapper, **files})


def _rows(capsys, *revs) -> list[dict]:
    return rows_by_kernel(run_json(["diff", *revs], capsys)).get(KID, [])


# ---------------------------------------------------------------------------------------------
# unit: what the launch inputs are and how their changes read

def _inputs(wrapper: str, recorded=None, cfg: Config | None = None) -> launch.LaunchInputs:
    found = discover(FileSet({"ops/__init__.py": b"", "ops/vadd.py": KERNEL.encode(), "ops/wrap.py": wrapper.encode()}))
    return launch.inputs_of(found.kernels[KID], recorded or {}, cfg or Config())


def test_a_changed_call_site_value_is_said_with_the_site_that_changed():
    old, new = _inputs(WRAPPER), _inputs(WRAPPER.replace("BLOCK_SIZE=64", "BLOCK_SIZE=128"))
    assert old != new
    assert launch.changes(old, new) == ["BLOCK_SIZE 64 -> 128 (call site ops/wrap.py:8)"]
    assert launch.paths_of(old, new) == {"ops/wrap.py"}


TILE = HEADER + '''
@triton.jit
def tile_kernel(x_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :], 1.0)


def run(x, n):
    B = 64 if n > 4096 else 32
    C = 64 if n > 4096 else 32
    tile_kernel[(1,)](x, BLOCK_M=B, BLOCK_N={n})
'''


def test_constexprs_no_longer_passed_one_value_are_a_launch_change():
    """The values each takes are the same, the launches are not: 64/32 is launched now."""
    def inputs(site: str) -> launch.LaunchInputs:
        found = discover(FileSet({"ops/t.py": TILE.format(n=site).encode()}))
        return launch.inputs_of(found.kernels["ops/t.py::tile_kernel"], {}, Config())
    old, new = inputs("B"), inputs("C")
    assert old.alike == (("BLOCK_M", "BLOCK_N"),) and new.alike == ()
    assert dict(old.call_site) == dict(new.call_site)
    assert launch.changes(old, new) == ["passed one value BLOCK_M=BLOCK_N -> none (call site)"]


def test_reformatting_the_call_or_renaming_a_local_changes_no_launch_input():
    reformatted = WRAPPER.replace("add_kernel[(n // 64,)](x, y, out, n, BLOCK_SIZE=64)",
                                  "# the kernel\n    add_kernel[(n // 64,)](\n        x, y, out, n,\n"
                                  "        BLOCK_SIZE=64,\n    )")
    renamed = WRAPPER.replace("n = out.numel()", "size = out.numel()").replace("out, n,", "out, size,")
    assert _inputs(reformatted) == _inputs(WRAPPER) == _inputs(renamed)


def test_a_first_recording_or_config_entry_describes_the_older_side_too():
    cfg = parse({"kernels": {"add_kernel": {"constexprs": {"BLOCK_SIZE": 256}}}}, "ptxdiff.toml")
    one = from_json({"kernel": KID, "params": ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK_SIZE"],
                     "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
                     "constexprs": {"BLOCK_SIZE": 64}, "divisible_by_16": [], "num_warps": 4, "num_stages": 3,
                     "options": {}, "autotune": None, "via": "interpreter", "count": 1}, "t")
    old, new = _inputs(WRAPPER), _inputs(WRAPPER, {KID: (one,)}, cfg)
    assert old != new and launch.inherit(old, new) == new
    changed_cfg = parse({"kernels": {"add_kernel": {"constexprs": {"BLOCK_SIZE": 128}, "num_warps": 8}}}, "ptxdiff.toml")
    newer = _inputs(WRAPPER, {KID: (one,)}, changed_cfg)
    assert launch.changes(launch.inherit(new, newer), newer) == [
        "BLOCK_SIZE 256 -> 128 (config ptxdiff.toml)", "num_warps unset -> 8 (config ptxdiff.toml)"]
    assert launch.paths_of(new, newer) == {"ptxdiff.toml"}


def test_the_launch_files_are_the_recording_and_the_config_files_and_the_driver_takes_them():
    assert set(launch.FILES) == {DEFAULT_PATH, "ptxdiff.toml", "pyproject.toml"}
    assert all(handled(name.encode()) for name in launch.FILES)


# ---------------------------------------------------------------------------------------------
# ptxdiff diff and log, on real history

@pytest.mark.integration
@pytest.mark.parametrize("change, said", [
    (("BLOCK_SIZE=64)", "BLOCK_SIZE=128)"), "BLOCK_SIZE 64 -> 128 (call site ops/wrap.py:8)"),
    (("BLOCK_SIZE=64)", "BLOCK_SIZE=64, num_warps=8)"), "num_warps unset -> 8 (call site ops/wrap.py:8)"),
])
def test_a_launch_only_commit_is_a_change_with_the_launch_said(tmp_path, capsys, change, said):
    repo = _repo(tmp_path)
    commit(repo, "launch", {"ops/wrap.py": WRAPPER.replace(*change)})
    (row,) = _rows(capsys, "-C", str(repo), "HEAD~1", "HEAD")
    assert row["verdict"] == "structural" and row["launch"] == said and row["why"]
    assert "->" in row["spec"]                       # one row for the launch site, both labels
    assert "ops/wrap.py" in row["paths"]


@pytest.mark.integration
def test_a_module_constant_read_at_the_call_site_is_part_of_the_launch(tmp_path, capsys):
    repo = _repo(tmp_path, WRAPPER.replace("BLOCK_SIZE=64)", "BLOCK_SIZE=BLOCK)"))
    commit(repo, "constant", {"ops/wrap.py": WRAPPER.replace("BLOCK_SIZE=64)", "BLOCK_SIZE=BLOCK)").replace(
        "BLOCK = 64", "BLOCK = 32")})
    (row,) = _rows(capsys, "-C", str(repo), "HEAD~1", "HEAD")
    assert row["launch"] == "BLOCK_SIZE 64 -> 32 (call site ops/wrap.py:8)"
    assert row["verdict"] == "constants-only" and " -> " in row["why"]   # static counts are blind: the lines say it


@pytest.mark.integration
def test_silent_changes_stay_silent(tmp_path, capsys):
    repo = _repo(tmp_path)
    commit(repo, "reformat", {"ops/wrap.py": WRAPPER.replace(
        "    add_kernel[(n // 64,)](x, y, out, n, BLOCK_SIZE=64)",
        "    # launch it\n    add_kernel[(n // 64,)](\n        x, y, out, n, BLOCK_SIZE=64\n    )").replace(
        "n = out.numel()", "size = out.numel()\n    n = size")})
    report = run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys)
    assert report["kernels"] == []


@pytest.mark.integration
def test_recorded_launch_and_config_entry_changes_are_changes(tmp_path, capsys):
    rec = {"kernel": KID, "params": ["x_ptr", "y_ptr", "out_ptr", "n", "BLOCK_SIZE"],
           "signature": {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"},
           "constexprs": {"BLOCK_SIZE": 64}, "divisible_by_16": [], "num_warps": 4, "num_stages": 3,
           "options": {}, "autotune": None, "via": "interpreter", "count": 1}
    repo = _repo(tmp_path, **{DEFAULT_PATH: json.dumps(rec) + "\n"})
    commit(repo, "recorded", {DEFAULT_PATH: json.dumps({**rec, "num_warps": 8}) + "\n"})
    # the base's recording decides the gate; the branch's, compiled for the report, never blocks
    (row,) = _rows(capsys, "-C", str(repo), "HEAD~1", "HEAD")
    assert row["launch"] == f"{NOT_THE_GATE}; recorded launches 1 -> 1 specs ({DEFAULT_PATH})"
    assert row["verdict"] == "structural" and not row["blocking"]
    assert DEFAULT_PATH in row["paths"]
    commit(repo, "first config: knowledge, no change", {"ptxdiff.toml": '[kernels."add_kernel"]\nnum_warps = 2\n'})
    assert _rows(capsys, "-C", str(repo), "HEAD~1", "HEAD") == []
    commit(repo, "config", {"ptxdiff.toml": '[kernels."add_kernel"]\nnum_warps = 8\n'})
    (row,) = _rows(capsys, "-C", str(repo), "HEAD~1", "HEAD")
    assert row["launch"] == f"{NOT_THE_GATE}; num_warps 2 -> 8 (config ptxdiff.toml)"
    assert row["verdict"] != "identical" and row["why"] and not row["blocking"]
    assert "ptxdiff.toml" in row["paths"]


@pytest.mark.integration
def test_log_has_a_row_for_every_change_with_its_launch(tmp_path, capsys):
    repo = _repo(tmp_path)
    commit(repo, "block 128", {"ops/wrap.py": WRAPPER.replace("BLOCK_SIZE=64)", "BLOCK_SIZE=128)")})
    commit(repo, "unrelated", {"README.md": "hello\n"})
    commit(repo, "sub", {"ops/vadd.py": KERNEL.replace(") + tl.load(y_ptr", ") - tl.load(y_ptr")})
    rc, out, err = run_main(["log", "add_kernel", "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    events = json.loads(out)
    assert [e["subject"] for e in events] == ["initial", "block 128", "sub"]
    launched, body = events[1]["rows"][0], events[2]["rows"][0]
    assert launched["launch"] == "BLOCK_SIZE 64 -> 128 (call site ops/wrap.py:8)"
    assert launched["new"]["regs"] != launched["old"]["regs"] or launched["delta"]   # each side its own launch
    assert body["launch"] is None and body["old"]["ptx_instrs"] == launched["new"]["ptx_instrs"]
    assert body["why"] == "add.f32 -1, sub.f32 +1" or "sub.f32 +" in body["why"]


# ---------------------------------------------------------------------------------------------
# git diff and the pre-push gate

@pytest.mark.integration
def test_git_diff_shows_the_kernel_line_under_the_wrapper_and_the_gate_blocks(tmp_path, capsys):
    repo = _repo(tmp_path)
    add_origin(repo, tmp_path)
    install(repo, capsys)
    commit(repo, "block 128", {"ops/wrap.py": WRAPPER.replace("BLOCK_SIZE=64)", "BLOCK_SIZE=128)")})
    out = git(repo, "diff", "HEAD~1", "HEAD", env={"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "300"}).stdout
    wrap = out.split("diff --git a/ops/wrap.py")[1]
    assert f"{KID} [BLOCK_SIZE=64 -> 128" in wrap and "launch:" in wrap and "BLOCK_SIZE 64 -> 128" in wrap
    push = git(repo, "push", "origin", "main", check=False)
    assert push.returncode != 0
    assert "BLOCK_SIZE 64 -> 128 (call site ops/wrap.py:8)" in push.stderr + push.stdout
    # a config entry's change: the line goes under the config file (install gave it the attribute)
    commit(repo, "config", {"ptxdiff.toml": '[kernels."add_kernel"]\nconstexprs = { BLOCK_SIZE = 32 }\n'})
    commit(repo, "config 16", {"ptxdiff.toml": '[kernels."add_kernel"]\nconstexprs = { BLOCK_SIZE = 16 }\n'})
    out = git(repo, "diff", "HEAD~1", "HEAD", env={"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "300"}).stdout
    piece = out.split("diff --git a/ptxdiff.toml b/ptxdiff.toml")[1]
    flat = " ".join(piece.split())          # driver lines are broken at 100 columns
    assert "-constexprs = { BLOCK_SIZE = 32 }" in piece and "BLOCK_SIZE 32 -> 16 (config ptxdiff.toml)" in flat
