"""`ptxdiff log K A..B` starts from the kernel as it was at A: it agrees with `ptxdiff diff`."""

from __future__ import annotations

import json

import pytest

from helpers import commit, head, make_repo, run_main, scale_kernel

pytestmark = pytest.mark.integration


def log(repo, capsys, rev_range):
    rc, out, err = run_main(["log", "scale_kernel", rev_range, "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    return [(e["commit"], [r["verdict"] for r in e["rows"]]) for e in json.loads(out)]


def test_log_of_a_range_agrees_with_diff_on_its_first_commit(tmp_path, capsys):
    repo = make_repo(tmp_path, {"README": "a\n"})
    added = commit(repo, "add the kernel", {"ops/k.py": scale_kernel()})
    commit(repo, "docs", {"README": "b\n"})
    changed = commit(repo, "structural", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    rc, out, err = run_main(["diff", "HEAD~1", "HEAD", "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert [r["verdict"] for r in json.loads(out)["kernels"]] == ["structural"]

    assert log(repo, capsys, "HEAD~1..HEAD") == [(changed, ["structural"])]
    assert log(repo, capsys, "HEAD~2..HEAD") == [(changed, ["structural"])]
    assert log(repo, capsys, "HEAD~3..HEAD") == [(added, ["added"]), (changed, ["structural"])]
    assert log(repo, capsys, "HEAD~2..HEAD~1") == []                 # there, unchanged: nothing to tell
    assert head(repo) == changed
