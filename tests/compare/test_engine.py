"""Engine behaviour: what counts as a kernel change, failures kept per kernel, config, specs, cache.

Every compile here is real (triton, offline, no GPU). Kernels are tiny and each test has its own
compile cache (PTXDIFF_CACHE_DIR in tmp_path), so tests are independent.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from helpers import (
    HEADER,
    cache_entries,
    commit,
    make_repo,
    rows_by_kernel,
    run_json,
    run_main,
    scale_kernel,
    write,
)
from ptxdiff.compare.engine import Engine
from ptxdiff.compare.notes import NoteKind
from ptxdiff.compile.protocol import CompileAnswer, Failure, Outcome
from ptxdiff.git.repo import Repo
from ptxdiff.permissions import Permissions


def compare(repo, old: str | None, new: str | None, permissions: Permissions | None = None, **kw):
    """Engine.compare between two revs (None = work tree for `new`, nothing for `old`)."""
    r = Repo(repo)
    eng = Engine(r, jobs=2, permissions=permissions or Permissions())
    return eng.compare(r.side(old) if old else None, r.side(new), **kw)


# ---------------------------------------------------------------------------------------------
# effective source: what is (not) a change

@pytest.mark.integration
def test_comment_docstring_blank_line_and_line_shift_are_not_changes(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    edited = HEADER + '''
# a comment block pushed in above the kernel,

# with blank lines, so every line of the kernel shifts down


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    """A docstring that was not there before."""
    # which block this program owns
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)

    mask = offs < n  # tail mask
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)   # done
'''
    write(repo, {"ops/k.py": edited})
    report = run_json(["diff", "-C", str(repo)], capsys)
    assert report["kernels"] == []
    rc, out, _ = run_main(["diff", "-C", str(repo), "-q"], capsys)
    assert rc == 0 and "no Triton kernel changed" in out

    listed = run_json(["diff", "-C", str(repo), "--all"], capsys)
    rows = rows_by_kernel(listed)
    assert list(rows) == ["ops/k.py::scale_kernel"]
    assert [r["verdict"] for r in rows["ops/k.py::scale_kernel"]] == ["identical"]
    assert rows["ops/k.py::scale_kernel"][0]["blocking"] is False


@pytest.mark.integration
def test_edit_inside_helper_in_another_module_changes_the_kernel(tmp_path):
    helper = HEADER + "\n@triton.jit\ndef h(x):\n    return x * 2.0\n"
    kernel = HEADER + '''from .helpers import h


@triton.jit
def uses_helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, h(x), mask=mask)
'''
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/helpers.py": helper, "ops/k.py": kernel})
    commit(repo, "helper changes", {"ops/helpers.py": helper.replace("x * 2.0", "x * 2.0 + 1.0")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [r.kernel for r in report.rows] == ["ops/k.py::uses_helper_kernel"]   # the helper is no kernel
    row = report.rows[0]
    assert row.error is None, row.error
    assert row.verdict not in ("identical", "failed")
    assert row.verdict == "structural"
    assert row.old is not None and row.new is not None


@pytest.mark.integration
def test_jit_helpers_made_by_a_call_an_alias_a_re_export_or_under_an_if(tmp_path):
    """`twice = triton.jit(_twice)`, `double = twice`, a re-export under another name, and a
    helper defined in either branch of a module-level `if`: each is a jit helper the kernel
    compiles with, and an edit of `_twice` is a change of the kernel."""
    helpers = HEADER + """

def _twice(x):
    return x * 2.0


twice = triton.jit(_twice)
double = twice

if hasattr(tl, "exp2"):
    @triton.jit
    def fast_exp(x):
        return tl.exp2(x * 1.4426950408889634)
else:
    @triton.jit
    def fast_exp(x):
        return tl.exp(x)
"""
    kernel = HEADER + """from ops.reexport import dbl, fast_exp


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, fast_exp(dbl(tl.load(x_ptr + offs, mask=offs < n))), mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/helpers.py": helpers, "ops/k.py": kernel,
                                "ops/reexport.py": "from ops.helpers import double as dbl, fast_exp  # noqa\n"})
    commit(repo, "helper changes", {"ops/helpers.py": helpers.replace("x * 2.0", "x * 3.0")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [(r.kernel, r.verdict, r.error) for r in report.rows] == [("ops/k.py::k", "structural", None)]


@pytest.mark.integration
def test_a_dtype_default_of_a_constexpr_compiles(tmp_path):
    """`ACC: tl.constexpr = tl.int32` reaches triton as triton's dtype, not the evaluator's."""
    src = HEADER + """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128, ACC: tl.constexpr = tl.int32):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=ACC) + tl.load(x_ptr + offs, mask=offs < n).to(ACC)
    tl.store(out_ptr + offs, acc SCALE, mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [(r.verdict, r.error) for r in report.rows] == [("structural", None)]


@pytest.mark.integration
def test_a_helper_nested_in_a_block_with_a_multi_line_asm_string_compiles(tmp_path):
    """Triton dedents a nested function's text, the inside of its strings too: the text it
    compiles is still the helper's (the check against a decoy compares code, not string margins)."""
    src = HEADER + '''
if hasattr(tl, "inline_asm_elementwise"):
    @triton.jit
    def same_bits(x):
        return tl.inline_asm_elementwise(
            asm="""
            {
            mov.b32 $0, $1;
            }
            """,
            constraints="=r,r", args=[x], dtype=tl.int32, is_pure=True, pack=1)


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n).to(tl.int32)
    tl.store(out_ptr + offs, same_bits(x) SCALE, mask=offs < n)
'''
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [(r.verdict, r.error) for r in report.rows] == [("structural", None)]


@pytest.mark.integration
def test_a_constexpr_computed_from_torch_dtype_limits_in_the_body_compiles(tmp_path):
    """`torch.finfo(torch.float8_e4m3fn).max` inside a kernel is evaluated by triton's code
    generator; the kernel's `torch` is a stand-in that answers dtype limits and nothing else."""
    src = HEADER + """import torch


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    FP8_MAX: tl.constexpr = torch.finfo(torch.float8_e4m3fn).max
    I8: tl.constexpr = torch.iinfo(torch.int8).max
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, tl.clamp(x, -FP8_MAX, FP8_MAX) SCALE + I8, mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3.0")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [(r.verdict, r.error) for r in report.rows] == [("structural", None)]


@pytest.mark.integration
def test_a_kernel_defined_only_for_another_target_is_compiled_there(tmp_path):
    """`if capability >= 10:` around the kernel: absent at the default sm_90, so with no target
    asked for it is compiled for sm_100 (both sides), and the row says so."""
    src = HEADER + """import torch

if torch.cuda.get_device_capability()[0] >= 10:
    @triton.jit
    def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) SCALE, mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3.0")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [(r.target, r.verdict, r.error) for r in report.rows] == [("sm_100", "structural", None)]
    from ptxdiff.repo_config import Config
    asked = compare(repo, "HEAD~1", "HEAD", config=Config(targets=(90,), targets_given=True))
    assert [(r.target, r.verdict) for r in asked.rows] == [("sm_90", "unmeasured")]
    assert "not defined when compiling for sm_90" in asked.rows[0].error


BLACKWELL_PACK = HEADER + '''
@triton.jit
def _e2m1_pack(x):
    return tl.inline_asm_elementwise(
        asm="""
        {
        .reg .b8 b0;
        cvt.rn.satfinite.e2m1x2.f32 b0, $2, $1;
        mov.b32 $0, {b0, b0, b0, b0};
        }
        """,
        constraints="=r,r,r", args=[x, x], dtype=tl.int32, is_pure=True, pack=1)
'''


@pytest.mark.integration
def test_a_kernel_whose_instructions_only_other_targets_have_is_compiled_there(tmp_path):
    """Inline asm with a Blackwell instruction: ptxas refuses it for sm_90 (the row would say
    ptxas's own words); with no target asked for, both sides compile for sm_100."""
    src = BLACKWELL_PACK + '''
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n) SCALE
    tl.store(out_ptr + offs, _e2m1_pack(x).to(tl.float32), mask=offs < n)
'''
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3.0")})
    report = compare(repo, "HEAD~1", "HEAD")
    # the kernel converts (`.to(tl.float32)`): fp32 and bf16 pointers, both there
    assert [(r.target, r.verdict, r.error) for r in report.rows] == [("sm_100", "structural", None)] * 2
    from ptxdiff.repo_config import Config
    asked = compare(repo, "HEAD~1", "HEAD", config=Config(targets=(90,), targets_given=True))
    # ptxas's own words (they differ between ptxas versions: `Feature 'cvt.e2m1x2.f32'`, `Instruction 'cvt ...'`)
    assert "compile failed: ptxas: " in asked.rows[0].error and "not supported on .target 'sm_90a'" in asked.rows[0].error


@pytest.mark.integration
def test_a_kernel_whose_specs_all_fail_here_and_one_for_want_of_instructions_is_compiled_there(tmp_path):
    """`FAST` takes a Blackwell instruction, its other branch a path this kernel refuses: at sm_90
    nothing compiles and ptxas says why for one spec, so both sides go to sm_100, where the fast
    path is measured and the refused guess reads as one that does not fit."""
    src = BLACKWELL_PACK + '''
@triton.jit
def k(x_ptr, out_ptr, n, FAST: tl.constexpr, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n) SCALE
    if FAST:
        tl.store(out_ptr + offs, _e2m1_pack(x).to(tl.float32), mask=offs < n)
    else:
        tl.static_assert(FAST, "only the fast path")
'''
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3.0")})
    rows = compare(repo, "HEAD~1", "HEAD").rows
    by_flag = {r.spec_detail.constexprs["FAST"]: r for r in rows}
    assert {r.target for r in rows} == {"sm_100"}
    assert (by_flag[True].verdict, by_flag[True].error) == ("structural", None)
    assert by_flag[False].error and not by_flag[False].blocking


@pytest.mark.integration
def test_module_constexpr_constant_change_lists_the_kernel(tmp_path):
    def src(value: str) -> str:
        return HEADER + f'''SCALE = tl.constexpr({value})


@triton.jit
def const_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * SCALE, mask=mask)
'''
    repo = make_repo(tmp_path, {"ops/c.py": src("3.0")})
    commit(repo, "constant", {"ops/c.py": src("5.0")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert [r.kernel for r in report.rows] == ["ops/c.py::const_kernel"]
    assert report.rows[0].error is None, report.rows[0].error
    assert report.rows[0].verdict != "identical"


# ---------------------------------------------------------------------------------------------
# failures are per kernel, never the whole run

@pytest.mark.integration
def test_syntax_error_fails_that_file_only(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(name="a_kernel"), "ops/b.py": scale_kernel(name="b_kernel")})
    commit(repo, "break a, change b", {"ops/a.py": scale_kernel(name="a_kernel") + "\ndef broken(:\n    pass\n",
                                       "ops/b.py": scale_kernel("x * 2.0 + 1.0", name="b_kernel")})
    report = run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys)
    rows = rows_by_kernel(report)
    assert set(rows) == {"ops/a.py::a_kernel", "ops/b.py::b_kernel"}
    (a,) = rows["ops/a.py::a_kernel"]
    assert a["verdict"] == "failed" and a["blocking"] is True
    assert "SyntaxError" in a["error"] and "ops/a.py" in a["error"]
    (b,) = rows["ops/b.py::b_kernel"]
    assert b["verdict"] == "structural" and b["error"] is None


@pytest.mark.integration
def test_missing_package_does_not_matter_unless_importing(tmp_path, capsys):
    """Built from source, a kernel never needs its module's imports; with --import (the user's
    choice) a module that cannot be imported makes its kernels failed with the error."""
    repo = make_repo(tmp_path, {"README": "x\n"})
    src = "import not_a_real_package_xyz\n" + scale_kernel(name="needs_pkg_kernel")
    commit(repo, "kernel with a bad import", {"ops/p.py": src})
    report = run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys)
    (row,) = report["kernels"]
    assert row["kernel"] == "ops/p.py::needs_pkg_kernel"
    assert row["verdict"] == "added" and row["new"]["ptx_instrs"] > 0
    imported = run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--import"], capsys)
    (row,) = imported["kernels"]
    assert row["verdict"] == "added" and row["blocking"]     # an added kernel that fails: added, with its error
    assert "not_a_real_package_xyz" in row["error"]
    assert "ModuleNotFoundError" in row["error"] or "No module named" in row["error"]
    assert any("imported" in m for m in imported["messages"])


@pytest.mark.integration
def test_non_utf8_and_binary_py_files_fail_clearly(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/good.py": scale_kernel(name="good_kernel")})
    latin1 = ("# caf\xe9 au lait\n" + scale_kernel(name="latin_kernel")).encode("latin-1")
    binary = b"\x00\x01\x02@triton.jit\ndef blob_kernel(x):\n\x00\xff\xfe" + bytes(range(256))
    commit(repo, "odd files", {"ops/latin.py": latin1, "ops/blob.py": binary})
    rc, out, err = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert "internal error" not in err
    rows = rows_by_kernel(json.loads(out))
    assert "ops/good.py::good_kernel" not in rows          # unchanged
    (latin,) = rows["ops/latin.py::latin_kernel"]
    assert latin["verdict"] == "failed" and "not text in UTF-8" in latin["error"]
    blob_rows = [r for k, v in rows.items() if k.startswith("ops/blob.py::") for r in v]
    for r in blob_rows:                                    # reported, if at all, as a clear failure
        assert r["verdict"] == "failed" and "ops/blob.py" in r["error"]
    # the work tree side (files read from disk rather than blobs) behaves the same
    rc, out, err = run_main(["diff", "-C", str(repo), "HEAD~1", "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert rows_by_kernel(json.loads(out))["ops/latin.py::latin_kernel"][0]["verdict"] == "failed"


@pytest.mark.integration
def test_compile_timeout_is_an_unmeasured_row_that_blocks(tmp_path, capsys):
    """Both sides time out (the timeout is the config's, committed with the kernel): the change
    cannot be measured, so the row says so and blocks."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "pyproject.toml": "[tool.ptxdiff]\ntimeout = 0.001\n"})
    write(repo, {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    report = run_json(["diff", "-C", str(repo), "--no-cache"], capsys)
    (row,) = report["kernels"]
    assert row["verdict"] == "unmeasured" and row["blocking"]
    assert row["error"].startswith("old: ") and "; new: " in row["error"]
    assert "timed out" in row["error"]
    assert "timeout" in row["error"].replace("timed out", "")   # names the config key


@pytest.mark.integration
def test_config_options_beyond_warps_and_stages_are_compiled_and_shown(tmp_path):
    """A commit whose point is `maxnreg=` on its autotune Configs is not `identical`."""
    def tuned(extra: str) -> str:
        return HEADER + f'''
@triton.autotune(configs=[triton.Config({{"BLOCK": 128}}, num_warps=4{extra})], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2.0, mask=offs < n)
'''
    repo = make_repo(tmp_path, {"ops/t.py": tuned("")})
    commit(repo, "cap registers", {"ops/t.py": tuned(", maxnreg=128")})
    (row,) = compare(repo, "HEAD~1", "HEAD").rows
    assert row.verdict == "structural" and row.delta["maxnreg"] == 128
    assert row.spec.endswith("maxnreg=128") and row.spec_detail.as_json()["maxnreg"] == 128


def batches(tasks):
    """What a patched `Pool.run` serves, a batch at a time: every task queued now. A measuring
    session queues more as it reads the replies (a pair's compiles once its specs are in): they
    are the next batch."""
    from ptxdiff.compile.tasks import pending_of

    pending = pending_of(tasks)
    while pending:
        batch = [t for queued in pending.by_side.values() for t in queued]
        pending.by_side.clear()
        yield batch


def compiled_in(original, sessions):
    """`Pool.run` that records, per session, what each compile task built (its BLOCK, or its
    kernel's name), as the replies come."""
    def counting(self, tasks, skip=None):
        sessions.append([])
        for reply in original(self, tasks, skip):
            if reply.task.op == "compile":
                sessions[-1].append(dict(reply.task.request.spec.constexprs).get("BLOCK", reply.task.request.kernel.name))
            yield reply
    return counting


@pytest.mark.integration
def test_a_timeout_is_cached_for_its_bound(tmp_path, monkeypatch):
    """A warm re-run never compiles again what timed out; a larger bound does."""
    from ptxdiff.compile.pool import Pool
    from ptxdiff.compile.tasks import Reply
    from ptxdiff.repo_config import Config

    original = Pool.run

    def compiles_time_out(self, tasks, skip=None):
        for batch in batches(tasks):
            compiles = [t for t in batch if t.op == "compile" and self.timeout <= 100]
            yield from original(self, [t for t in batch if t not in compiles], skip)
            for t in compiles:
                yield Reply(t, Outcome.TIMEOUT, error=self.timed_out())

    monkeypatch.setattr(Pool, "run", compiles_time_out)
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "v2", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    r = Repo(repo)
    runs = []
    for timeout in (30.0, 30.0, 300.0):
        eng = Engine(r, jobs=2)
        report = eng.compare(r.side("HEAD~1"), r.side("HEAD"), config=Config(timeout=timeout))
        runs.append((eng.measurer.loaded_now, [row.verdict for row in report.rows]))
    assert runs[0] == (2, ["unmeasured"]) and runs[1] == (0, ["unmeasured"])   # both sides, then none
    assert runs[2] == (2, ["structural"])


# a kernel whose one size is a guess (1024), and SCALE the change between two commits
GUESSED_BLOCK = HEADER + """
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) SCALE, mask=offs < n)
"""


@pytest.mark.integration
def test_a_pair_over_the_cost_rule_compiles_shrunk_beside_the_other_pairs_compiles(tmp_path, monkeypatch):
    """The shrink is decided from the specs, before any compile: the shrunk compiles start beside
    the other pairs' compiles, in the same session of the pool, not in a round of their own after
    every other has finished (where the longest compile of each round adds to the wall time)."""
    from ptxdiff.compile.pool import Pool
    from ptxdiff.specs import cost

    monkeypatch.setattr(cost, "LIMIT", 4)   # BLOCK=1024 at 4 warps: 8 elements per thread
    sessions: list[list[object]] = []
    monkeypatch.setattr(Pool, "run", compiled_in(Pool.run, sessions))
    src = GUESSED_BLOCK + """

@triton.jit
def small(x_ptr, n):
    offs = tl.arange(0, 16)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) SCALE, mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", " * 2.0")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3.0 + 1.0")})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    assert [sorted(built, key=str) for built in sessions] == [[256, 256, "small", "small"]]   # one session
    assert sorted((row.kernel, row.verdict) for row in report.rows) == [
        ("ops/k.py::k", "structural"), ("ops/k.py::small", "structural")]


@pytest.mark.integration
def test_guessed_sizes_over_the_cost_rule_are_shrunk_on_both_sides_before_any_compile(tmp_path, monkeypatch):
    """Guessed sizes whose tile is over the cost rule (specs/cost.py; its limit made tiny here) are
    never compiled: both sides compile the guesses shrunk and the row says so, whatever the clock;
    a warm re-run compiles nothing again."""
    from ptxdiff.compile.pool import Pool
    from ptxdiff.specs import cost

    monkeypatch.setattr(cost, "LIMIT", 4)   # BLOCK=1024 at 4 warps: 8 elements per thread
    sessions: list[list[object]] = []
    monkeypatch.setattr(Pool, "run", compiled_in(Pool.run, sessions))
    src = GUESSED_BLOCK
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", " * 2.0")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 3.0 + 1.0")})
    r = Repo(repo)
    eng = Engine(r, jobs=2)
    report = eng.compare(r.side("HEAD~1"), r.side("HEAD"))
    assert sessions == [[256, 256]]   # the guess of 1024 is over the rule: never compiled, on either side
    assert [row.verdict for row in report.rows] == ["structural"], [row.error for row in report.rows]
    notes = report.rows[0].spec_detail.notes
    assert any("guessed sizes divided by 4: the guesses' largest tile is over the cost rule" in n for n in notes)
    assert report.rows[0].spec_detail.constexprs["BLOCK"] == 256
    sessions.clear()
    again = Engine(r, jobs=2)
    warm = again.compare(r.side("HEAD~1"), r.side("HEAD"))
    assert sessions == [] and again.measurer.loaded_now == 0
    assert [(row.verdict, row.spec_detail.constexprs["BLOCK"]) for row in warm.rows] == [("structural", 256)]


@pytest.mark.integration
def test_warm_show_compiles_nothing_that_timed_out_crashed_or_ran_out_of_memory(tmp_path, monkeypatch):
    """`show` of one revision: a timeout, a crash and a memory failure are cached for their bound
    like results (here made by a fake pool, no clock): warm, nothing is compiled again; a larger
    bound compiles the timeout and the crash again, not the failure a fresh worker gave."""
    from ptxdiff.compile.pool import Pool
    from ptxdiff.compile.tasks import Reply
    from ptxdiff.repo_config import Config

    original = Pool.run
    compiled: list[str] = []
    said = {"slow_kernel": Outcome.TIMEOUT, "crashing_kernel": Outcome.CRASH}

    def failing(self, tasks, skip=None):
        for batch in batches(tasks):
            yield from original(self, [t for t in batch if t.op != "compile"], skip)
            yield from answered(self, [t for t in batch if t.op == "compile"])

    def answered(self, compiles):
        for t in compiles:
            name = t.request.kernel.name
            compiled.append(name)
            if name in said:
                yield Reply(t, said[name], error=self.timed_out(t) if name == "slow_kernel" else
                            "worker crashed (signal SIGKILL)")
            else:
                yield Reply(t, Outcome.OK, answer=CompileAnswer({
                    "error": "compile failed: MemoryError (alone in a fresh worker)", "log": "MemoryError"},
                    Failure.COMPILE_ERROR))

    monkeypatch.setattr(Pool, "run", failing)
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(name="slow_kernel"),
                                "ops/b.py": scale_kernel(name="crashing_kernel"),
                                "ops/c.py": scale_kernel(name="greedy_kernel")})
    r = Repo(repo)
    runs = []
    for timeout in (30.0, 30.0, 300.0):
        compiled.clear()
        eng = Engine(r, jobs=2)
        report = eng.compare(None, r.side("HEAD"), config=Config(timeout=timeout))
        runs.append((sorted(compiled), sorted(row.verdict for row in report.rows)))
    assert runs[0] == (["crashing_kernel", "greedy_kernel", "slow_kernel"], ["failed"] * 3)
    assert runs[1] == ([], runs[0][1])   # warm: nothing compiled again
    assert runs[2][0] == ["crashing_kernel", "slow_kernel"]   # a larger bound: the bounded failures only


@pytest.mark.integration
def test_after_one_spec_times_out_the_kernel_s_other_specs_are_not_compiled(tmp_path, monkeypatch):
    """A spec that compiles past the timeout says the others would too: they are not started, and
    one that finished beside it (a larger --jobs) is withheld alike: the same rows either way."""
    from ptxdiff.compile.pool import Pool
    from ptxdiff.compile.tasks import Reply

    src = HEADER + '''
@triton.jit
def k(x_ptr, n, HAS_A: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if HAS_A:
        x = x + 1.0
    tl.store(x_ptr + offs, x, mask=offs < n)
'''
    original = Pool.run

    def first_compile_times_out(self, tasks, skip=None):
        for batch in batches(tasks):
            compiles = [t for t in batch if t.op == "compile"]
            yield from original(self, [t for t in batch if t.op != "compile"], skip)
            if compiles:
                yield Reply(compiles[0], Outcome.TIMEOUT, error="timed out after 1s (config key 'timeout')")
            for t in compiles[1:]:
                yield Reply(t, Outcome.ERROR, error=skip(t) or "ran")

    def the_other_finished_beside_it(self, tasks, skip=None):   # as at --jobs 2: it ran before the timeout
        for batch in batches(tasks):
            compiles = [t for t in batch if t.op == "compile"]
            yield from original(self, [t for t in batch if t.op != "compile"], skip)
            if compiles:
                yield from original(self, compiles[1:])
                yield Reply(compiles[0], Outcome.TIMEOUT, error="timed out after 1s (config key 'timeout')")

    monkeypatch.setattr(Pool, "run", first_compile_times_out)
    repo = make_repo(tmp_path, {"ops/k.py": src})
    r = Repo(repo)
    rows = Engine(r, jobs=2, use_cache=False).compare(None, r.side("HEAD")).rows
    assert sorted(row.error.split(" (")[0] for row in rows) == [
        "not compiled: another spec of k timed out", "timed out after 1s"]
    monkeypatch.setattr(Pool, "run", the_other_finished_beside_it)
    beside = Engine(r, jobs=2, use_cache=False).compare(None, r.side("HEAD")).rows
    assert [(r.spec, r.verdict, r.error) for r in beside] == [(r.spec, r.verdict, r.error) for r in rows]


# ---------------------------------------------------------------------------------------------
# specs and config

MYSTERY = HEADER + '''
@triton.jit
def mystery_kernel(x_ptr, out_ptr, n, foo, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * foo, mask=mask)
'''


@pytest.mark.integration
def test_zero_config_guesses_are_shown_and_config_makes_them_facts(tmp_path):
    repo = make_repo(tmp_path, {"ops/m.py": MYSTERY})
    kid = "ops/m.py::mystery_kernel"

    (row,) = compare(repo, None, "HEAD").rows
    assert row.kernel == kid and row.error is None and row.new is not None and row.new.ptx_instrs > 0
    assert row.spec_source == "guessed"
    guessed = row.spec_detail.as_json()["guessed"]
    assert guessed["BLOCK"] == 1024 and guessed["foo:"] == "fp32"  # foo multiplies a loaded value

    commit(repo, "config", {"pyproject.toml": f'[tool.ptxdiff.kernels."{kid}"]\n'
                                              'signature = { x_ptr = "*fp16", out_ptr = "*fp16", n = "i32", foo = "fp16" }\n'
                                              "constexprs = { BLOCK = 64 }\n"})
    (row,) = compare(repo, None, "HEAD").rows
    assert row.error is None and row.spec_source == "config" and row.spec_detail.guessed == ()
    assert row.spec_detail.signature["foo"] == "fp16"
    assert row.spec_detail.constexprs == {"BLOCK": 64}


@pytest.mark.integration
def test_a_spec_both_sides_compile_alike_is_compiled_once(tmp_path, monkeypatch):
    """One compile per distinct specialisation: a launch site added with another BLOCK leaves the
    kernel's closure as it was, so its spec of BLOCK=128 is the same build on both sides."""
    from ptxdiff.compile.pool import Pool

    sessions: list[list[object]] = []
    monkeypatch.setattr(Pool, "run", compiled_in(Pool.run, sessions))
    src = HEADER + """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)


def launch(x, n):
    k[(1,)](x, n, BLOCK=128)
"""
    repo = make_repo(tmp_path, {"ops/k.py": src})
    commit(repo, "another launch", {"ops/k.py": src + "    k[(1,)](x, n, BLOCK=256)\n"})
    report = compare(repo, "HEAD~1", "HEAD", show_all=True)
    assert [sorted(built) for built in sessions] == [[128, 256]]
    by_block = {row.spec_detail.constexprs["BLOCK"]: row for row in report.rows}
    assert by_block[128].verdict == "identical" and by_block[128].old == by_block[128].new
    assert by_block[256].new is not None


@pytest.mark.integration
def test_autotune_with_two_configs_gives_two_specs(tmp_path, capsys):
    src = HEADER + '''
@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)],
                 key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + 1.0, mask=mask)
'''
    repo = make_repo(tmp_path, {"ops/t.py": src})
    report = run_json(["show", "-C", str(repo)], capsys)
    rows = report["kernels"]
    assert {r["kernel"] for r in rows} == {"ops/t.py::tuned_kernel"}
    assert len(rows) == 2
    assert all(r["error"] is None for r in rows), rows
    details = sorted((r["spec_detail"]["constexprs"]["BLOCK"], r["spec_detail"]["num_warps"]) for r in rows)
    assert details == [(64, 2), (128, 4)]
    assert len({r["spec"] for r in rows}) == 2
    assert all(r["new"]["num_warps"] == r["spec_detail"]["num_warps"] for r in rows)


# ---------------------------------------------------------------------------------------------
# cache

@pytest.mark.integration
def test_repeated_diff_compiles_nothing(tmp_path):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    write(repo, {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    first = compare(repo, "HEAD", None)
    assert first.compiled == 2
    second = compare(repo, "HEAD", None)
    assert second.compiled == 0
    assert [r.cache for r in first.rows] == ["compiled"] and [r.cache for r in second.rows] == ["local"]
    assert [{**r.as_json(), "cache": None} for r in second.rows] == [{**r.as_json(), "cache": None} for r in first.rows]
    # without the cache everything is compiled again
    r = Repo(repo)
    assert Engine(r, jobs=2, use_cache=False).compare(r.side("HEAD"), r.side(None)).compiled == 2


@pytest.mark.integration
def test_cache_lives_under_git_dir_by_default_and_prune_empties_it(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("PTXDIFF_CACHE_DIR")
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    write(repo, {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    rc, _, err = run_main(["diff", "-C", str(repo), "-q"], capsys)
    assert rc == 0, err
    root = repo / ".git" / "ptxdiff" / "cache"
    entries = cache_entries(root)
    assert len(entries) == 2                                  # one per side (x one target)
    leftovers = [p for p in root.rglob("*") if p.is_file() and not p.name.endswith((".json.gz", ".disc.gz"))]
    assert leftovers == []                                    # no half-written temp files
    for p in entries:                                         # each entry is a whole gzip'd JSON document
        with gzip.open(p, "rt") as f:
            value = json.load(f)["value"]
        assert isinstance(value, list) and value and "metrics" in value[0]
    assert not (tmp_path / "cache").exists()                  # nothing went to the per-test dir

    rc, out, _ = run_main(["cache", "path", "-C", str(repo)], capsys)
    assert rc == 0 and out.strip() == str(root)
    rc, out, _ = run_main(["cache", "prune", "--max-mb", "0", "-C", str(repo)], capsys)
    assert rc == 0 and "removed 2" in out
    assert cache_entries(root) == []


def test_cache_write_is_all_or_nothing(tmp_path, monkeypatch):
    """A write that fails half-way (disk full, a crash before the rename) leaves no entry and no
    temp file; readers never see a partial entry."""
    from ptxdiff.compare import cache as cachemod

    root = tmp_path / "atomic"
    c = cachemod.Cache(root, valid=lambda value: True)     # any shape: this is about the file
    c.put("ab" + "0" * 62, [{"metrics": {"x": 1}}])
    assert c.get("ab" + "0" * 62) == [{"metrics": {"x": 1}}]

    def boom(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(cachemod.os, "replace", boom)
    c.put("cd" + "0" * 62, [{"metrics": {"x": 2}}])
    monkeypatch.undo()
    assert c.get("cd" + "0" * 62) is None
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert files == ["ab/ab" + "0" * 62 + ".json.gz"]
    # a truncated entry (another writer's crash on a filesystem without atomic rename) reads as a miss
    (root / "ef").mkdir()
    (root / "ef" / ("ef" + "0" * 62 + ".json.gz")).write_bytes(b"\x1f\x8b\x08\x00garbage")
    assert c.get("ef" + "0" * 62) is None


@pytest.mark.integration
def test_cache_key_follows_the_inferred_parameter_types(tmp_path, monkeypatch):
    """A new inference rule must not be served results compiled under the old one."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "v2", {"ops/k.py": scale_kernel("x * 3.5")})
    assert compare(repo, "HEAD~1", "HEAD").compiled == 2
    assert compare(repo, "HEAD~1", "HEAD").compiled == 0
    import ptxdiff.discovery.kernels as discover_mod
    real = discover_mod.infer_param_kinds
    monkeypatch.setattr(discover_mod, "infer_param_kinds",
                        lambda fn, **kw: {k: ("i64" if k == "n" else v) for k, v in real(fn, **kw).items()})
    # a new rule comes with new ptxdiff code, which stored discoveries are keyed by; here, forget them
    shutil.rmtree(tmp_path / "cache" / "discovery")
    report = compare(repo, "HEAD~1", "HEAD")
    assert report.compiled == 2
    assert report.rows[0].spec_detail.signature["n"] == "i64"


@pytest.mark.integration
def test_compile_and_spec_errors_are_cached_but_import_failures_are_not(tmp_path, cache):
    broken = scale_kernel("x * undefined_name")
    # a module constant the kernel body reads, which the evaluator refuses: the row fails, saying why
    refused = HEADER + "import os\nSCALE = tl.constexpr(len(os.listdir('/')))\n" + scale_kernel(
        "x * SCALE", name="r_kernel").replace(HEADER, "")
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/m.py": "import not_a_package\n" + scale_kernel(name="m_kernel"),
                                "ops/r.py": refused})
    commit(repo, "break", {"ops/k.py": broken, "ops/m.py": "import not_a_package\n" + scale_kernel("x + 1.5", name="m_kernel"),
                           "ops/r.py": refused.replace("x * SCALE", "x * SCALE + 1.0")})
    first = compare(repo, "HEAD~1", "HEAD")
    assert {r.kernel: r.verdict for r in first.rows} == {"ops/k.py::scale_kernel": "failed",
                                                         "ops/m.py::m_kernel": "structural",
                                                         "ops/r.py::r_kernel": "unmeasured"}
    (r_row,) = [r for r in first.rows if r.kernel == "ops/r.py::r_kernel"]
    assert "os.listdir" in r_row.error and "ops/r.py:5" in r_row.error  # the expression and its line
    second = compare(repo, "HEAD~1", "HEAD")
    assert second.compiled == 0  # k: both sides from the cache, the new one a cached compile error
    assert "compile failed" in [r for r in second.rows if r.kernel == "ops/k.py::scale_kernel"][0].error
    assert "os.listdir" in [r for r in second.rows if r.kernel == "ops/r.py::r_kernel"][0].error
    before = len(cache_entries(cache))
    imported = compare(repo, "HEAD~1", "HEAD", permissions=Permissions(imports=True))
    assert "not_a_package" in [r for r in imported.rows if r.kernel == "ops/m.py::m_kernel"][0].error
    # imported, r's module really lists / (the user's choice): its kernel compiles
    assert [r for r in imported.rows if r.kernel == "ops/r.py::r_kernel"][0].error is None
    # k's and r's two sides were cached, m's import failure was not: it may not happen next time
    assert len(cache_entries(cache)) == before + 4


@pytest.mark.integration
def test_ptxdiff_toml_accepts_the_pyproject_spelling(tmp_path, capsys, monkeypatch):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(),
                                "ptxdiff.toml": '[tool.ptxdiff]\ntargets = ["sm_80"]\n'})
    commit(repo, "v2", {"ops/k.py": scale_kernel("x * 3.5")})
    monkeypatch.chdir(repo)
    report = run_json(["diff", "HEAD~1", "HEAD"], capsys)
    assert [r["target"] for r in report["kernels"]] == ["sm_80"]


@pytest.mark.integration
@pytest.mark.skipif(not os.path.exists("/proc/self"), reason="reads /proc")
def test_a_worker_dies_with_the_process_that_started_it(tmp_path):
    """`kill -9` of a diff must not leave a worker compiling: workers ask the kernel to kill them
    when their parent exits (the forkserver, which exits with the run)."""
    marker = tmp_path / "child.pid"
    script = textwrap.dedent(f'''
        import os, sys, time
        from ptxdiff.compile.worker import die_with_parent
        if os.fork() == 0:
            die_with_parent()
            open({str(marker)!r}, "w").write(str(os.getpid()))
            time.sleep(600)
        else:
            while not os.path.exists({str(marker)!r}) or not open({str(marker)!r}).read():
                time.sleep(0.05)
            os._exit(0)  # the parent is gone, as after kill -9
    ''')
    subprocess.run([sys.executable, "-c", script], check=True)
    child = int(marker.read_text())
    for _ in range(600):  # waits for the event; no speed is asserted
        if not os.path.exists(f"/proc/{child}") or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]:
            break
        time.sleep(0.05)
    else:
        os.kill(child, 9)
        pytest.fail("the worker outlived its parent")


@pytest.mark.integration
def test_a_jit_function_bound_to_a_triton_builtin_under_this_triton_is_said_not_compared(tmp_path):
    """`triton_cast = tl.cast` for new tritons, a `@triton.jit` fallback under `else:` for old
    ones (its callers live in other modules): under ours there is nothing of the repository's to
    compile, on either side. No row (nothing to block on); a message says why."""
    src = HEADER + """import os

if os.environ.get("OLD_TRITON", "0") == "0" NOTE:
    triton_cast = tl.cast
else:
    @triton.jit
    def triton_cast(x, dtype):
        return x.to(dtype)


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" NOTE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" NOTE", " and True")})
    report = compare(repo, "HEAD~1", "HEAD")
    assert report.rows == []
    (said,) = [m for m in report.messages if m.kind is NoteKind.TRITONS_OWN]
    assert said.kernel == "ops/k.py::triton_cast" and "`triton.language.cast`" in said.text, report.messages
