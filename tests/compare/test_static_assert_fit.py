"""Guessed sizes a kernel's `tl.static_assert(D % BLOCK == 0)` ties to its autotune blocks, where the
cost rule shrank them after a first fit (Fast-LLM's sparse matmuls, every row `unmeasured` before):
the last refit fits them again, to a size every config's block divides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import commit, make_repo, ptxdiff

pytestmark = pytest.mark.integration

KERNEL = '''import triton
import triton.language as tl

CONFIGS = [
    triton.Config({{"BM": 128, "BN": 256, "BK": 64}}, num_warps=8, num_stages=3),
    triton.Config({{"BM": 64, "BN": 32, "BK": 32}}, num_warps=2, num_stages=5),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
              BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    tl.static_assert(M % BM == 0)
    tl.static_assert(N % BN == 0)
    tl.static_assert(K % BK == 0)
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc * {scale})
'''


def test_sizes_a_static_assert_ties_to_the_configs_blocks_fit_after_the_shrink(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, {"ops/mm.py": KERNEL.format(scale="2.0")})
    commit(repo, "scale", {"ops/mm.py": KERNEL.format(scale="3.0")})
    done = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json"], repo)
    assert done.returncode in (0, 1), done.stderr
    rows = json.loads(done.stdout)["kernels"]
    assert len(rows) == 2 and all(r["verdict"] == "structural" and not r.get("error") for r in rows), rows
    notes = rows[0]["spec_detail"]["notes"]
    assert any(n.startswith("guessed sizes divided by") for n in notes), notes
    assert "K: guessed 16, which does not fit the kernel; 64 does" in notes, notes
