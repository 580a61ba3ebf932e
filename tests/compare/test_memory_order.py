"""The order of memory operations is structure: real kernels, compiled, through `ptxdiff diff`,
`git diff` (the driver) and the pre-push hook.

A change that only moves a barrier or swaps two stores keeps every instruction and every value:
what differs is what a load reads or which store wins. It must read `structural` (it blocks),
named in `why`; a change that only reorders pure arithmetic stays `reordered`.
"""

from __future__ import annotations

import pytest

from helpers import (
    HEADER,
    commit,
    git,
    kernel_lines,
    make_repo,
    pushed_repo,
    rows_by_kernel,
    run_json,
    write,
)

pytestmark = pytest.mark.integration

EXCHANGE = HEADER + '''
@triton.jit
def exchange_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
{first}
{second}
    tl.store(x_ptr + offs, y)
'''
BARRIER = "    tl.debug_barrier()"
READ_BACK = "    y = tl.load(out_ptr + (BLOCK - 1 - offs))"

OVERLAP = HEADER + '''
@triton.jit
def overlap_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
{first}
{second}
'''
STORE_X = "    tl.store(out_ptr + offs, x)"
STORE_3X = "    tl.store(out_ptr + offs + 1, x * 3.0)"

COUNTER = HEADER + '''
@triton.jit
def counter_kernel(c_ptr, out_ptr, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
{first}
{second}
    tl.store(out_ptr + offs, v)
'''
ADD_ONE = "    tl.atomic_add(c_ptr + offs, 1.0)"
READ_COUNT = "    v = tl.load(c_ptr + offs)"

FENCED = HEADER + '''
@triton.jit
def publish_kernel(data_ptr, flag_ptr, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
{first}
{second}
'''
WRITE_DATA = "    tl.store(data_ptr + offs, offs.to(tl.float32))"
RAISE_FLAG = "    tl.atomic_xchg(flag_ptr + offs, 1, sem='release')"

PURE = HEADER + '''
@triton.jit
def two_outputs_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
{first}
{second}
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + offs + BLOCK, b)
'''
A = "    a = tl.load(x_ptr + offs) * 3.0"
B = "    b = tl.load(y_ptr + offs) + 5.0"


def diff_rows(tmp_path, capsys, template: str, first: str, second: str) -> list[dict]:
    """The rows of `ptxdiff diff` after the work tree swaps two lines of the committed kernel."""
    repo = make_repo(tmp_path, {"ops/k.py": template.format(first=first, second=second)})
    write(repo, {"ops/k.py": template.format(first=second, second=first)})
    rows = rows_by_kernel(run_json(["diff", "-C", str(repo)], capsys))
    assert len(rows) == 1
    return next(iter(rows.values()))


@pytest.mark.parametrize("template,first,second,moved", [
    (EXCHANGE, BARRIER, READ_BACK, "bar.sync moved after ld.global.b32"),
    (OVERLAP, STORE_X, STORE_3X, "st.global.b32 moved after another st.global.b32"),
    (COUNTER, ADD_ONE, READ_COUNT, None),     # the load no longer sees its own atomic add
    (FENCED, WRITE_DATA, RAISE_FLAG, None),   # the flag is raised before the data it publishes
], ids=["debug_barrier-below-the-load", "overlapping-stores-swapped", "atomic-and-load-swapped",
        "release-flag-before-data"])
def test_a_moved_barrier_or_swapped_stores_are_structural_and_named(tmp_path, capsys, template, first, second,
                                                                     moved):
    rows = diff_rows(tmp_path, capsys, template, first, second)
    assert [(r["verdict"], r["blocking"]) for r in rows] == [("structural", True)] * len(rows)
    said = "order of memory operations changed: " + (moved or "")
    assert all(r["why"] == said if moved else r["why"].startswith(said) for r in rows), [r["why"] for r in rows]


def test_pure_arithmetic_reordered_is_still_reordered(tmp_path, capsys):
    """The control: two independent loads and computations swapped, stores in place."""
    rows = diff_rows(tmp_path, capsys, PURE, A, B)
    assert [r["verdict"] for r in rows] == ["reordered"] * len(rows)


@pytest.mark.parametrize("template,first,second,blocked", [
    (EXCHANGE, BARRIER, READ_BACK, True),
    (PURE, A, B, False),
], ids=["moved-barrier-blocks", "pure-reordering-passes"])
def test_the_pre_push_hook_and_git_diff_see_the_order(tmp_path, capsys, template, first, second, blocked):
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": template.format(first=first, second=second)})
    commit(repo, "swap two lines", {"ops/k.py": template.format(first=second, second=first)})

    text = git(repo, "diff", "HEAD~1", "HEAD", env={"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"}).stdout
    (line,) = kernel_lines(text)
    assert (" structural" in line) == blocked and (" reordered" in line) != blocked
    push = git(repo, "push", "origin", "main", check=False)
    assert (push.returncode != 0) == blocked, push.stderr
    if blocked:
        assert "order of memory operations changed: bar.sync moved after ld.global.b32" in push.stderr + text
