"""Errors that are the kernel's own whatever the guesses. A module global a kernel reads that is no
constexpr (a dict keyed by an enum's members, as lightning-thunder's `_DTYPE2TRITON[BUFFER_DTYPE.value]`
before its fix; a plain function) fails in triton's own words, never as a name that is not defined;
branches that leave a name two types the text fixes (scattermoe's `start_idx`) are said to be the
kernel's own error, and branches a guess may decide are not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import commit, make_repo, ptxdiff
from ptxdiff.instantiate.own_errors import OWN, OWN_GLOBAL

pytestmark = pytest.mark.integration

MODULE = '''from enum import Enum

import triton
import triton.language as tl


class Kind(Enum):
    F32 = 0
    F16 = 1


_TO_TL = {{Kind.F32: tl.float32, Kind.F16: tl.float16}}


def twice(v):
    return v * 2


@triton.jit
def cast_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, {cast}, mask=offs < n)


@triton.jit
def twice_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, {twice}, mask=offs < n)
'''


def test_a_global_triton_refuses_is_the_kernel_s_own_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"ops/k.py": MODULE.format(cast="x.to(_TO_TL[Kind.F16])", twice="twice(x)")})
    commit(repo, "fix", {"ops/k.py": MODULE.format(cast="x.to(tl.float16)", twice="x * 2")})
    done = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json"], repo)
    assert done.returncode in (0, 1), done.stderr
    rows = {r["kernel"]: r for r in json.loads(done.stdout)["kernels"]}
    for kernel, name in (("ops/k.py::cast_kernel", "_TO_TL"), ("ops/k.py::twice_kernel", "twice")):
        error = rows[kernel]["error"]
        assert f"Cannot access global variable {name} from within @jit'ed function" in error, error
        assert f"({name}: {OWN_GLOBAL})" in error and "is not defined" not in error, error
        assert error.startswith("old: ") and "new:" not in error, error   # the fixed side compiles


BRANCHES = '''import triton
import triton.language as tl


@triton.jit
def offsets_kernel(offsets_ptr, out_ptr, BLOCK: tl.constexpr):
    e = tl.program_id(0)
    if e == 0:
        start = 0
    else:
        start = tl.load(offsets_ptr + e - 1){cast}
    tl.store(out_ptr + e * BLOCK + tl.arange(0, BLOCK), start + tl.arange(0, BLOCK))
'''


@pytest.mark.parametrize("cast, own", [(".to(tl.int64)", True), (" * 2.0", False)])
def test_branches_the_text_gives_two_types_are_the_kernel_s_own_error(tmp_path: Path, cast: str, own: bool) -> None:
    """With `.to(tl.int64)` the else branch is int64 whatever the pointer's guessed type; `* 2.0`
    keeps the loaded type where it is a float (fp16 stays fp16), so the guess decides: no claim."""
    repo = make_repo(tmp_path, {"ops/k.py": BRANCHES.format(cast=cast)})
    done = ptxdiff(["show", "HEAD", "--format", "json"], repo)
    assert done.returncode in (0, 1), done.stderr
    errors = [r.get("error") or "" for r in json.loads(done.stdout)["kernels"]]
    assert errors and all("ismatched type for start between then block (int32) and else block" in e
                          for e in errors), errors
    assert all((OWN in e) is own for e in errors), errors
    assert not own or all(f"(start: its branches give it int32 and int64 whatever the guesses: {OWN})" in e
                          for e in errors), errors
