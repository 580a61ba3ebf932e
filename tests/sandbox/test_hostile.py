"""A hostile branch against the whole path: `ptxdiff diff` and `git diff` through the driver,
run from the repository's root. Each payload writes a marker outside the repository; none may
appear, and the kernel still gets its row. Each payload is shown to be live where it can run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HEADER, git, install, kernel_lines, make_repo, scale_kernel, write

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "ptxdiff")   # the console script, as users start it
DRIVER_ENV = {"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"}


def exec_payload(marker: Path) -> str:
    """A kernel body line that triton's code generator runs (the build layer may stop it first)."""
    return HEADER + f'''
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    tl.core.builtins.exec("open({str(marker)!r}, 'w').write('ran')")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0, mask=mask)
'''


def shadow_multiprocessing(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')\nraise ImportError('shadow')\n"


def cli(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    import os
    return subprocess.run([CLI, *args], cwd=str(repo), capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def rows(proc: subprocess.CompletedProcess) -> dict[str, str]:
    assert proc.returncode in (0, 1), proc.stderr
    return {r["kernel"]: r["verdict"] for r in json.loads(proc.stdout)["kernels"]}


def git_diff(repo: Path) -> str:
    return git(repo, "diff", env=DRIVER_ENV).stdout


def test_a_kernel_body_that_runs_code_writes_nothing_under_diff_or_git_diff(tmp_path, capsys):
    marker = tmp_path / "MARKER"
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    write(repo, {"ops/k.py": exec_payload(marker)})

    got = rows(cli(repo, "diff", "--no-cache", "--format", "json", "-q"))
    assert not marker.exists()
    assert list(got) == ["ops/k.py::scale_kernel"]          # the kernel still has its row
    lines = kernel_lines(git_diff(repo))
    assert not marker.exists()
    assert any("scale_kernel" in ln for ln in lines)

    rows(cli(repo, "diff", "--no-cache", "--format", "json", "-q", "--no-sandbox"))
    if not marker.exists():
        pytest.skip("the payload no longer runs even without the sandbox (the build layer stops it)")


def test_a_committed_multiprocessing_package_at_the_root_does_not_run(tmp_path, capsys):
    marker = tmp_path / "MARKER"
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "multiprocessing/__init__.py": shadow_multiprocessing(marker)})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x * 3.0")})

    assert list(rows(cli(repo, "diff", "--no-cache", "--format", "json", "-q"))) == ["ops/k.py::scale_kernel"]
    assert not marker.exists()
    assert any("scale_kernel" in ln for ln in kernel_lines(git_diff(repo)))
    assert not marker.exists()

    # the payload is live: how multiprocessing started its helpers (`python -B -c ...` from the cwd)
    subprocess.run([sys.executable, "-B", "-c", "import multiprocessing"], cwd=str(repo), capture_output=True)
    assert marker.exists()
