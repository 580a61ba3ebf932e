"""Partial (`--filter=blob:none`) and shallow (`--depth`) clones, made for real from a local
remote, the way a large repository or a CI checkout is cloned."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import commit, git, head, make_repo, ptxdiff, scale_kernel
from ptxdiff.git.repo import Repo

pytestmark = pytest.mark.integration

LOGO = bytes(range(256)) * 64   # a binary that changes and is renamed: never worth fetching


def _remote(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A bare remote that serves partial clones, with a kernel changed, a kernel file renamed
    and a binary changed and renamed in its last commit."""
    src = make_repo(tmp_path, {"pkg/k.py": scale_kernel(), "pkg/other.py": scale_kernel(name="other_kernel"),
                               "logo.bin": LOGO}, name="src")
    revs = {"first": head(src)}
    git(src, "mv", "pkg/other.py", "pkg/renamed.py")
    git(src, "mv", "logo.bin", "art.bin")
    revs["last"] = commit(src, "change", {"pkg/k.py": scale_kernel("x * 3.0"), "art.bin": LOGO + b"\x00"})
    bare = tmp_path / "remote.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    git(bare, "config", "uploadpack.allowAnySHA1InWant", "true")
    return bare, revs


def _has(clone: Path, oid: str) -> bool:
    """Whether the clone holds the object (asking git itself would fetch it)."""
    return Repo(clone).has_object(oid)


def _blob(repo: Path, spec: str) -> str:
    return git(repo, "rev-parse", spec).stdout.strip()


@pytest.mark.parametrize("kind", ["blob:none", "tree:0"])   # tree:0 lacks the older commits' trees too
def test_a_partial_clone_fetches_the_python_it_needs_and_never_a_binary(tmp_path, kind):
    bare, revs = _remote(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", f"--filter={kind}", f"file://{bare}", str(clone))
    old_kernel, old_logo = _blob(bare, f"{revs['first']}:pkg/k.py"), _blob(bare, f"{revs['first']}:logo.bin")
    assert not _has(clone, old_kernel) and not _has(clone, old_logo)      # the clone really lacks them

    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "-q"], clone)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["kernels"]
    assert {(r["kernel"], r["verdict"]) for r in rows} == {("pkg/k.py::scale_kernel", "structural")}
    assert _has(clone, old_kernel)                  # fetched through the promisor remote
    assert not _has(clone, old_logo)                # rename detection never read the binary

    proc = ptxdiff(["diff", "HEAD~1", "--format", "json", "-q"], clone)     # against the work tree
    assert proc.returncode == 0, proc.stderr
    assert [r["verdict"] for r in json.loads(proc.stdout)["kernels"]] == ["structural"]
    assert not _has(clone, old_logo)

    proc = ptxdiff(["log", "scale_kernel", "-q", "--format", "json"], clone)
    assert proc.returncode == 0, proc.stderr
    assert [e["commit"] for e in json.loads(proc.stdout)] == [revs["first"], revs["last"]]

    proc = ptxdiff(["ci", "--base", "HEAD~1", "--head", "HEAD", "-q", "--no-fail"], clone)
    assert proc.returncode == 0, proc.stderr
    assert "scale_kernel" in proc.stdout


def test_a_blob_the_remote_cannot_send_is_named_in_one_line(tmp_path):
    bare, revs = _remote(tmp_path)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{bare}", str(clone))
    old_kernel = _blob(bare, f"{revs['first']}:pkg/k.py")
    shutil.rmtree(bare)                             # offline: the promisor remote is gone

    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "-q"], clone)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0]
    assert old_kernel[:10] in lines[0] and "pkg/k.py" in lines[0]
    assert f"git cat-file -e {old_kernel}" in lines[0]


def test_a_shallow_clone_says_to_deepen(tmp_path):
    src = make_repo(tmp_path, {"pkg/k.py": scale_kernel()}, name="src")
    for i in range(3):
        commit(src, f"c{i}", {"pkg/k.py": scale_kernel(f"x * {i + 3}.0")})
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{src}", str(clone))

    proc = ptxdiff(["diff", "HEAD~2", "HEAD", "-q"], clone)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "shallow" in proc.stderr and "git fetch --deepen" in proc.stderr

    proc = ptxdiff(["log", "scale_kernel", "-q", "--format", "json"], clone)
    assert proc.returncode == 0, proc.stderr
    events = json.loads(proc.stdout)
    # the boundary commit is where the story starts, not where the kernel was added
    assert [e["commit"] for e in events] == [head(clone)]
    assert [r["verdict"] for r in events[0]["rows"]] == ["constants-only"]   # x * 4.0 -> x * 5.0
    assert "history stops at" in proc.stderr and "git fetch --deepen" in proc.stderr
