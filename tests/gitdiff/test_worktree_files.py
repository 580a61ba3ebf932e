"""Work-tree files are read by the rules of repository files, through the diff driver and
`ptxdiff diff`: a committed `ptxdiff.toml` or `pyproject.toml` that is a symlink out of the
repository (to a file, a FIFO, a device) is no config at all, as it is in a commit; `git diff`
never waits on it and shows the normal patch."""

from __future__ import annotations

import os
import subprocess

import pytest

from helpers import commit, install, kernel_lines, make_repo, rows_by_kernel, run_json, scale_kernel, write

pytestmark = pytest.mark.integration


def git_diff(repo) -> subprocess.CompletedProcess:
    """`git diff` with the driver installed, its budget from the config (none in the environment)."""
    env = {k: v for k, v in os.environ.items() if k != "PTXDIFF_DRIVER_BUDGET"}
    # a guard against the hang this file is about, not a time limit: git diff returns or never does
    return subprocess.run(["git", "diff"], cwd=repo, capture_output=True, env={**env, "PTXDIFF_FORCE": "1"},
                          timeout=600)


@pytest.mark.parametrize("target", ["fifo", "file", "/dev/zero"])
def test_a_config_symlinked_out_of_the_repository_is_never_opened(tmp_path, capsys, target):
    outside = tmp_path / "outside"
    outside.mkdir()
    if target == "fifo":
        os.mkfifo(outside / "cfg")
        link = str(outside / "cfg")
    elif target == "file":   # if it were read: no budget to wait for, an invalid kernel entry
        (outside / "cfg").write_text('driver_budget = 0\n[kernels."x"]\nnum_warps = "many"\n')
        link = str(outside / "cfg")
    else:
        link = target
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "README": "r\n"})
    os.symlink(link, repo / "ptxdiff.toml")
    os.symlink(link, repo / "pyproject.toml")
    commit(repo, "configs that point outside")
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x * 3.0")})

    proc = git_diff(repo)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout.decode()
    assert "+    tl.store(out_ptr + offs, x * 3.0, mask=mask)" in text   # git's own patch is there
    assert "config" not in proc.stderr.decode() + "".join(ln for ln in text.splitlines() if ln.startswith("ptxdiff"))

    report = run_json(["diff", "-C", str(repo)], capsys)   # no config: the kernel is compared as usual
    rows = rows_by_kernel(report)["ops/k.py::scale_kernel"]
    assert [r["verdict"] for r in rows] == ["structural"], rows


def test_the_driver_still_reads_a_plain_config(tmp_path, capsys):
    """The control: a regular pyproject.toml in the work tree is read (driver_budget = 0)."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "README": "r\n"})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x * 3.0"), "pyproject.toml": "[tool.ptxdiff]\ndriver_budget = 0\n"})
    text = git_diff(repo).stdout.decode()
    assert kernel_lines(text) == [] and "past driver_budget" in text
