"""Submodules: ptxdiff does not look into them, and says so in one line whenever one changed
(`git diff` itself shows such a change as a "Subproject commit" line)."""

from __future__ import annotations

import json

import pytest

from helpers import (
    add_origin,
    commit,
    git,
    head,
    install,
    make_repo,
    ptxdiff,
    scale_kernel,
)

pytestmark = pytest.mark.integration

ALLOW = ["-c", "protocol.file.allow=always"]



def test_a_moved_submodule_is_said_not_looked_into(tmp_path, capsys):
    sub = make_repo(tmp_path, {"ops/k.py": scale_kernel()}, name="sub")
    top = make_repo(tmp_path, {"ops/top.py": scale_kernel(name="top_kernel")}, name="top")
    git(top, *ALLOW, "submodule", "add", "-q", str(sub), "vendor/sub")
    commit(top, "add the submodule")
    old = head(sub)
    new = commit(sub, "structural in the submodule", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    git(top / "vendor" / "sub", "fetch", "-q", "origin")
    git(top / "vendor" / "sub", "checkout", "-q", new)
    line = f"submodule vendor/sub moved {old[:10]}..{new[:10]}: its kernels are not looked into"

    p = ptxdiff(["diff", "-q", "--check"], top)                  # HEAD vs work tree (checked-out commit)
    assert p.returncode == 0, p.stderr
    assert line in p.stdout
    bump = commit(top, "bump the submodule")
    p = ptxdiff(["diff", "HEAD~1", "HEAD", "-q", "--format", "json"], top)
    assert json.loads(p.stdout)["messages"] == [line + f"; see: ptxdiff -C vendor/sub diff {old[:10]} {new[:10]}"]
    p = ptxdiff(["diff", "HEAD~1", "HEAD", "-q", "--", "ops"], top)   # not asked about
    assert "submodule" not in p.stdout

    bare = add_origin(top, tmp_path, push=False)
    git(top, "push", "-q", "origin", "HEAD~1:refs/heads/main")
    install(top, capsys)
    p = git(top, "push", "origin", "main", check=False)
    assert p.returncode == 0, p.stderr
    assert line in p.stderr
    assert git(bare, "rev-parse", "main").stdout.strip() == bump
