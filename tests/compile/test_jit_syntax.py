"""A kernel that calls into a jit method assigning an attribute compiles with triton 3.4, the one
release whose code generator set it, also where the method lives in a module the change does not
touch; the gate reads that from the base's kernels alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import RING, commit, fake_toolchain, make_repo, ptxdiff

pytestmark = pytest.mark.integration

RING_MODULE = RING.format(jit_import="", jit="triton.jit")


KERNEL = '''import triton
import triton.language as tl

from ops.ring import Ring


@triton.jit
def ring_kernel(out_ptr, n):
    r = Ring(tl.cast(0, tl.int32), tl.cast(0, tl.int32))
    for _ in range(n):
        r = r.step()
    tl.store(out_ptr, r.index * {scale} + r.phase)
'''

PLAIN = '''import triton
import triton.language as tl


@triton.jit
def plain_kernel(out_ptr):
    tl.store(out_ptr, {value})
'''


def _messages(repo: Path, env: dict[str, str], command: str = "diff") -> list[str]:
    """The report's lines of `ptxdiff diff` (or the gate's, `ptxdiff ci`) of the last commit."""
    report = repo.parent / "report.json"
    args = ["diff", "HEAD~1", "HEAD"] if command == "diff" else ["ci", "--base", "HEAD~1", "--head", "HEAD"]
    done = ptxdiff([*args, "--format", "json", "--json-file", str(report)] if command == "ci" else
                   [*args, "--format", "json"], repo, env=env)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(report.read_text() if command == "ci" else done.stdout)["messages"]


def test_a_helper_module_the_change_does_not_touch_still_chooses_the_triton(tmp_path: Path) -> None:
    root = tmp_path / "toolchains"
    root.mkdir()
    fake_toolchain(root, "3.4.0")
    env = {"PTXDIFF_TOOLCHAINS": str(root)}
    repo = make_repo(tmp_path, {"ops/ring.py": RING_MODULE, "ops/k.py": KERNEL.format(scale=2),
                                "ops/plain.py": PLAIN.format(value=1)})
    commit(repo, "change", {"ops/k.py": KERNEL.format(scale=4)})
    said = [m for m in _messages(repo, env) if m.startswith("compiled with triton")]
    assert said and "3.4.0 (ops/ring.py uses attribute assignment in a jit function" in said[0], said
    # a change no kernel reading ring.py is part of: the installed triton, nothing said
    commit(repo, "plain", {"ops/plain.py": PLAIN.format(value=2)})
    assert not [m for m in _messages(repo, env) if m.startswith("compiled with triton")]


def test_the_gate_reads_what_the_base_s_kernels_read_not_the_branch_s(tmp_path: Path) -> None:
    """A branch that adds a kernel calling into the base's ring.py cannot choose the gate's
    compiler by it: no kernel of the base reads that module."""
    root = tmp_path / "toolchains"
    root.mkdir()
    fake_toolchain(root, "3.4.0")
    env = {"PTXDIFF_TOOLCHAINS": str(root)}
    repo = make_repo(tmp_path, {"ops/ring.py": RING_MODULE, "ops/plain.py": PLAIN.format(value=1)})
    commit(repo, "add", {"ops/k.py": KERNEL.format(scale=2)})
    assert [m for m in _messages(repo, env) if "3.4.0" in m]
    assert not [m for m in _messages(repo, env, "ci") if "3.4.0" in m]
