"""The gate fails closed: what cannot be measured blocks, a pushed branch cannot relax its own
gate, and an approval a branch gives itself is said. Real pushes to a bare remote."""

from __future__ import annotations

import pytest

from helpers import HEADER, commit, git, pushed_repo, scale_kernel

pytestmark = pytest.mark.integration

K = "ops/k.py::scale_kernel"


def push(repo):
    return git(repo, "push", "-q", "origin", "main", check=False)


def rejecting(body: str) -> str:
    """A kernel whose every guess fails to compile (its static_assert rejects them)."""
    return HEADER + f'''
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 1000 == 999, "only a launch with BLOCK % 1000 == 999 compiles")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, 4)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, {body}, mask=offs < n)
'''


def test_a_change_measured_on_neither_side_blocks_and_says_why(tmp_path, capsys):
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": rejecting("x * 2.0")})
    commit(repo, "structural, unseen", {"ops/k.py": rejecting("x * 2.0 + tl.sqrt(x)")})
    out = push(repo)
    assert out.returncode != 0
    assert "unmeasured" in out.stderr and "fails closed" in out.stderr
    assert "old: compile failed: ops/k.py:7:" in out.stderr        # where it failed (the JSON has both errors whole)
    # the base side's own config may let unmeasured changes through
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    commit(repo, "policy", {"pyproject.toml": "[tool.ptxdiff]\nblock_unmeasured = false\n"})
    assert git(repo, "push", "-q", "--no-verify", "origin", "main").returncode == 0
    commit(repo, "structural, unseen", {"ops/k.py": rejecting("x * 2.0 + tl.sqrt(x)")})
    assert push(repo).returncode == 0


def test_the_pushed_branch_cannot_switch_its_own_gate_off(tmp_path, capsys):
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    commit(repo, "relax and change", {"ops/k.py": scale_kernel("x * 2.0 + 1.0"),
                                      "pyproject.toml": '[tool.ptxdiff]\nblock = []\nexclude = ["ops/*"]\n'
                                                        "block_unmeasured = false\n"})
    out = push(repo)
    assert out.returncode != 0 and "structural" in out.stderr
    assert "edits ptxdiff's own policy (exclude, block, block_unmeasured in pyproject.toml" in out.stderr
    # once the policy is on the remote, it decides
    assert git(repo, "push", "-q", "--no-verify", "origin", "main").returncode == 0
    commit(repo, "another change", {"ops/k.py": scale_kernel("x * 3.0 + tl.sqrt(x)")})
    assert push(repo).returncode == 0


def test_an_approval_the_branch_gives_itself_is_said(tmp_path, capsys):
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    commit(repo, "change\n\nPtx-Approved: *", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    out = push(repo)
    assert out.returncode == 0
    (line,) = [ln for ln in out.stderr.splitlines() if "approved by" in ln]
    assert line.startswith(f"ptxdiff: {K} (structural) passes, approved by ")
    assert "(Ptx-Approved: *)" in line
