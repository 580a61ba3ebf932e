"""File names git allows but UTF-8 does not: kernel ids keep the bytes (as Python keeps file
names, a lone surrogate per byte), people see `\\xNN`, and diff, show, --check and the pre-push
gate (approval trailer included) all work on them."""

from __future__ import annotations

import json

import pytest

from helpers import (
    commit,
    git,
    head,
    make_repo,
    ptxdiff,
    pushed_repo,
    scale_kernel,
)

pytestmark = pytest.mark.integration

NAME = "ops/k \udcff.py"                       # bytes b"ops/k \xff.py": a space and a Latin-1 byte
KID = f"{NAME}::scale_kernel"
SHOWN = "ops/k \\xff.py::scale_kernel"         # what people read and write in a trailer
V2 = "x * 2.0 + 1.0"
UTF8 = {"LC_ALL": "C.UTF-8"}                   # a UTF-8 locale: Python's stdout is strict there



def test_diff_show_and_check_on_a_non_utf8_file_name(tmp_path):
    repo = make_repo(tmp_path, {NAME: scale_kernel()})
    commit(repo, "structural", {NAME: scale_kernel(V2)})
    assert git(repo, "ls-files", "-z", text=False).stdout == b"ops/k \xff.py\0"

    p = ptxdiff(["diff", "HEAD~1", "HEAD", "--check", "-q", "--format", "json"], repo, env=UTF8)
    assert p.returncode == 1, p.stderr
    (row,) = json.loads(p.stdout)["kernels"]
    assert row["kernel"] == KID and row["verdict"] == "structural" and row["error"] is None
    p = ptxdiff(["diff", "HEAD~1", "HEAD", "-q", "--", NAME], repo, env=UTF8)     # a pathspec of those bytes
    assert p.returncode == 0, p.stderr
    assert SHOWN in p.stdout and "structural" in p.stdout
    p = ptxdiff(["show", "-q"], repo, env=UTF8)
    assert p.returncode == 0, p.stderr
    assert SHOWN in p.stdout and "failed" not in p.stdout


def test_push_gate_names_and_accepts_the_printable_id(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {NAME: scale_kernel()})
    commit(repo, "structural", {NAME: scale_kernel(V2)})
    p = git(repo, "push", "origin", "main", check=False, env=UTF8)
    assert p.returncode != 0
    assert f'--trailer "Ptx-Approved: {SHOWN}"' in p.stderr
    git(repo, "commit", "-q", "--amend", "--no-edit", "--trailer", f"Ptx-Approved: {SHOWN}")
    p = git(repo, "push", "origin", "main", check=False, env=UTF8)
    assert p.returncode == 0, p.stderr
    assert git(bare, "rev-parse", "main").stdout.strip() == head(repo)
