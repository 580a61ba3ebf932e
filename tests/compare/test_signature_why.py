"""A change to a kernel's parameters is said by name in `why`, through `ptxdiff diff` on real
compiles: made constexpr, removed, added, retyped by what the launch passes."""

from __future__ import annotations

import re

import pytest

from helpers import HEADER, make_repo, rows_by_kernel, run_json, write

pytestmark = pytest.mark.integration

KERNEL = HEADER + '''
@triton.jit
def shift_kernel(x_ptr, out_ptr, {params}BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < {bound}
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + offset, mask=mask)


def launch(x, out, n):
    shift_kernel[(1,)](x, out, {args})
'''
BEFORE = {"params": "n, offset, ", "bound": "n", "args": "n, 1.5"}


@pytest.mark.parametrize("after,said", [
    ({"params": "n, offset: tl.constexpr, "}, "offset: runtime fp32 -> constexpr"),
    ({"params": "offset, ", "bound": "1024", "args": "1.5"}, "n: removed"),
    ({"params": "n, offset, unused, ", "args": "n, 1.5, 7"}, "unused: added (i32)"),
    ({"args": "n, 3"}, "offset: fp32 -> i32"),
], ids=["made-constexpr", "removed", "added", "retyped"])
def test_a_parameter_change_is_named_in_why(tmp_path, capsys, after, said):
    repo = make_repo(tmp_path, {"ops/k.py": KERNEL.format(**BEFORE)})
    write(repo, {"ops/k.py": KERNEL.format(**{**BEFORE, **after})})
    rows = rows_by_kernel(run_json(["diff", "-C", str(repo)], capsys))["ops/k.py::shift_kernel"]
    assert rows and all(r["why"] and r["why"].startswith(said) for r in rows), [r["why"] for r in rows]
    assert not any(re.search(r"(^|[\s>])\.param \.", r["why"]) for r in rows)   # no raw `.param .f32 ...` line
