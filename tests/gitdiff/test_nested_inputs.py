"""A config or recording nested 100,000 deep, committed by a branch: `ptxdiff diff` says so in
one line and exits 2, the pre-push hook blocks with that line, `git diff` exits 0 with git's own
patch and the line after it. Before, each ended in RecursionError (an internal error, exit 3)."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import (
    commit,
    driver_notes,
    git,
    head,
    install,
    make_repo,
    ptxdiff,
    pushed_repo,
    scale_kernel,
    write,
)

pytestmark = pytest.mark.integration

DEEP = 100_000
CASES = {
    "ptxdiff.toml": ("x = " + "[" * DEEP + "]" * DEEP + "\n", "ptxdiff.toml: nested 100000 levels deep"),
    "pyproject.toml": ("[tool.ptxdiff]\nx = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n",
                       "pyproject.toml: nested 100000 levels deep"),
    ".ptxdiff/launches.jsonl": ('{"kernel": ' + "[" * DEEP + "]" * DEEP + "}\n",
                                ".ptxdiff/launches.jsonl:1: nested 100001 levels deep"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_deeply_nested_input_is_one_line_and_never_an_internal_error(tmp_path, capsys, name):
    text, said = CASES[name]
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "README": "r\n"})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x * 3.0"), name: text})

    proc = ptxdiff(["diff", "-q"], repo)
    assert proc.returncode == 2 and said in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "internal error" not in proc.stderr

    out = subprocess.run(["git", "diff", "--", "ops/k.py"], cwd=repo, capture_output=True, text=True,
                         env={**os.environ, "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"})
    assert out.returncode == 0 and "internal error" not in out.stdout + out.stderr
    assert "+    tl.store(out_ptr + offs, x * 3.0, mask=mask)" in out.stdout
    assert said in " ".join(driver_notes(out.stdout)[-1].split())   # the last note, across its line breaks


def test_the_pre_push_hook_blocks_a_branch_with_a_deeply_nested_config(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    text, said = CASES["ptxdiff.toml"]
    commit(repo, "a deep config", {"ptxdiff.toml": text, "ops/k.py": scale_kernel("x * 3.0")})
    p = git(repo, "push", "origin", "main", check=False)
    assert p.returncode != 0 and said in p.stderr and "internal error" not in p.stderr
    assert git(bare, "rev-parse", "main").stdout.strip() != head(repo)
