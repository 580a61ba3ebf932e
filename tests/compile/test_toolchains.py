"""Toolchains for real: a triton other than the installed one, installed from the package index
into its own environment, compiles a side; the user's own environment is never touched; a
version that cannot be had is one line and exit 2."""

from __future__ import annotations

import json
import os
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from helpers import commit, fake_toolchain, make_repo, ptxdiff, scale_kernel

# CI points PTXDIFF_TOOLCHAINS at a folder kept between runs: the toolchain is installed once
SHARED = os.environ.get("PTXDIFF_TOOLCHAINS")
# the oldest release ptxdiff compiles with (hints as an AttrsDescriptor record, ptxas started
# through /bin/sh: the sandbox must let it), and one with a wheel for every supported Python
VERSIONS = [pytest.param(v, marks=pytest.mark.skipif(v < "3.2" and sys.version_info >= (3, 13),
                                                     reason=f"triton {v} has no wheel for this Python"))
            for v in os.environ.get("PTXDIFF_TEST_TRITON", "3.1.0,3.6.0").split(",")]


def _index_reachable() -> bool:
    url = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    parsed = urlparse(url)
    if parsed.scheme == "file":
        return True
    try:
        socket.create_connection((parsed.hostname or "pypi.org", parsed.port or 443), timeout=5).close()
        return True
    except OSError:
        return False


@pytest.fixture(scope="session")
def toolchains_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where this session's toolchains live: PTXDIFF_TOOLCHAINS as the run found it, else one
    folder for the whole session (each test that installs finds the others' toolchain)."""
    return Path(SHARED) if SHARED else tmp_path_factory.mktemp("toolchains")


def _site_packages() -> set[str]:
    """What the environment running the tests holds: nothing may appear or go."""
    import sysconfig
    return set(os.listdir(sysconfig.get_path("purelib")))


@pytest.mark.integration
@pytest.mark.network
@pytest.mark.parametrize("version", VERSIONS)
def test_a_pinned_triton_is_installed_and_compiles_the_side(toolchains_dir: Path, tmp_path: Path, version: str) -> None:
    if not _index_reachable():
        pytest.skip("the package index cannot be reached")
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel("x * 2.0"), "requirements.txt": f"torch\ntriton=={version}\n"})
    commit(repo, "change", {"ops/k.py": scale_kernel("x * 3.0")})
    before = _site_packages()
    env = {"PTXDIFF_TOOLCHAINS": str(toolchains_dir)}
    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "--target", "sm_90"], repo, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["toolchain"]["triton"] == version and report["toolchain"]["triton_old"] == version
    rows = report["kernels"]
    assert len(rows) == 1 and rows[0]["verdict"] not in ("failed", "unmeasured"), rows
    assert rows[0]["old"]["regs"] > 0 and rows[0]["new"]["regs"] > 0 and rows[0]["toolchain"] is None
    assert any(f"triton {version} (requirements.txt: triton=={version})" in m for m in report["messages"])
    assert (toolchains_dir / f"triton-{version}" / "bin" / "python").exists()
    assert _site_packages() == before

    # the upgrade diff: one revision, the pinned triton against the installed one
    proc = ptxdiff(["diff", "--triton", f"{version}..installed", "HEAD", "--format", "json", "--target", "sm_90"],
                   repo, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["toolchain"]["triton_old"] == version
    rows = report["kernels"]
    assert len(rows) == 1 and rows[0]["verdict"] != "failed" and rows[0]["old"] and rows[0]["new"]
    assert rows[0]["toolchain"] == (None if report["toolchain"]["triton"] == version
                                    else f"triton {version} -> {report['toolchain']['triton']}")

    listed = ptxdiff(["toolchain", "list"], repo, env=env)
    assert f"triton {version}  {toolchains_dir / f'triton-{version}'}" in listed.stdout


@pytest.mark.integration
def test_a_version_that_cannot_be_had_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """No network needed: pip looks in an empty folder only."""
    empty = tmp_path / "empty"
    empty.mkdir()
    root = tmp_path / "toolchains"
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    env = {"PTXDIFF_TOOLCHAINS": str(root), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty)}
    before = _site_packages()
    proc = ptxdiff(["diff", "--triton", "0.0.1", "HEAD"], repo, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("ptxdiff: installing triton 0.0.1 into")
    assert lines[-1].startswith("ptxdiff: installing triton 0.0.1 failed: ") and "PTXDIFF_TRITON" in lines[-1]
    assert len(lines) == 2 and not proc.stdout
    assert list(root.iterdir()) == []            # nothing half-installed is left
    assert _site_packages() == before


@pytest.mark.integration
@pytest.mark.parametrize("bad", ["3.6.0rc1", "https://example.com/triton.whl", "3.6..", "latest"])
def test_only_released_versions(tmp_path: Path, bad: str) -> None:
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    proc = ptxdiff(["diff", "--triton", bad, "HEAD"], repo, env={"PTXDIFF_TOOLCHAINS": str(tmp_path / "t")})
    assert proc.returncode == 2 and proc.stderr.startswith(f"ptxdiff: --triton {bad!r}: expected")
    assert not (tmp_path / "t").exists()


@pytest.mark.integration
def test_the_worker_runs_the_toolchains_interpreter_with_ptxdiff_on_its_path(tmp_path: Path) -> None:
    """A toolchain's worker path: its own site-packages first (its triton), ptxdiff's source,
    then this environment's (ptxdiff's dependencies), with nothing installed anywhere."""
    from ptxdiff import PACKAGE_DIR
    from ptxdiff.sandbox import launcher

    venv = tmp_path / "venv"
    import subprocess
    subprocess.run([sys.executable, "-I", "-m", "venv", "--without-pip", str(venv)], check=True)
    path = launcher.toolchain_path(str(venv / "bin" / "python"))
    own = next(i for i, p in enumerate(path) if p.startswith(str(venv)))
    assert path.index(os.path.dirname(PACKAGE_DIR)) > own
    here = [p for p in launcher.clean_path() if "site-packages" in p]
    assert all(path.index(p) > own for p in here)


@pytest.mark.integration
def test_upgrade_diff_runs_each_side_in_its_toolchain_offline(tmp_path: Path) -> None:
    """`--triton OLD..NEW` on one revision: the old side in a toolchain's interpreter, the new
    one in ptxdiff's; the same triton underneath, so every kernel reads identical, and every
    row and the report name both tritons."""
    root = tmp_path / "toolchains"
    fake_toolchain(root, "3.1.0")
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    proc = ptxdiff(["diff", "--triton", "3.1.0..installed", "--format", "json", "--target", "sm_90"], repo,
                   env={"PTXDIFF_TOOLCHAINS": str(root)})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    import triton
    assert report["toolchain"]["triton_old"] == "3.1.0" and report["toolchain"]["triton"] == triton.__version__
    rows = report["kernels"]
    assert [(r["verdict"], r["toolchain"]) for r in rows] == [("identical", f"triton 3.1.0 -> {triton.__version__}")]
    assert rows[0]["old"]["regs"] == rows[0]["new"]["regs"] > 0
    assert any("old side compiled with triton 3.1.0 (--triton)" in m for m in report["messages"])

    table = ptxdiff(["diff", "--triton", "3.1.0..installed", "--target", "sm_90"], repo,
                    env={"PTXDIFF_TOOLCHAINS": str(root)})
    assert f"triton 3.1.0 -> {triton.__version__}" in table.stdout.splitlines()[0]
    refused = ptxdiff(["log", "scale_kernel", "--triton", "3.1.0..installed"], repo, env={"PTXDIFF_TOOLCHAINS": str(root)})
    assert refused.returncode == 2 and "ptxdiff log takes one version" in refused.stderr


@pytest.mark.integration
def test_git_diff_compiles_with_the_triton_the_repository_pins_where_it_is_installed(tmp_path: Path) -> None:
    """The diff driver's background job chooses the triton as `ptxdiff diff` does (here the pin
    in requirements.txt) but downloads nothing: while that toolchain is not installed the
    installed triton compiles and the driver says how to add it; once added, it compiles."""
    from helpers import driver_notes, git, kernel_lines

    root = tmp_path / "toolchains"
    root.mkdir()
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "requirements.txt": "triton==3.1.0\n"})
    env = {"PTXDIFF_TOOLCHAINS": str(root), "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "300"}
    assert ptxdiff(["install"], repo, env=env).returncode == 0
    (repo / "ops" / "k.py").write_text(scale_kernel("x * 3.0"))
    out = git(repo, "diff", env=env).stdout
    notes = " ".join(" ".join(driver_notes(out)).split())
    assert kernel_lines(out) and "asks for triton 3.1.0, not installed" in notes, out
    assert "`ptxdiff toolchain add 3.1.0` to compile with it" in notes and list(root.iterdir()) == []
    fake_toolchain(root, "3.1.0")
    out = git(repo, "diff", env=env).stdout
    assert kernel_lines(out) and any("compiled with triton 3.1.0 (requirements.txt" in n for n in driver_notes(out)), out


def test_report_heading_names_both_tritons_only_where_they_differ() -> None:
    from ptxdiff.compare.results import describe
    assert describe({"ptxdiff": "0.1.0", "triton": "3.9.0", "python": "3.11.7", "triton_old": "3.6.0"}) == \
        "ptxdiff 0.1.0, triton 3.6.0 -> 3.9.0, python 3.11.7"
    assert describe({"ptxdiff": "0.1.0", "triton": "3.9.0", "triton_old": "3.9.0"}) == "ptxdiff 0.1.0, triton 3.9.0"


def test_two_installs_of_one_version_at_once_download_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second waits for the first's lock and then finds its toolchain (a Ray node's actors,
    two runs): pip runs once. pip and venv are stand-ins that lay out what they would."""
    import subprocess
    import threading
    import time

    from ptxdiff.compile import toolchains

    root = tmp_path / "toolchains"
    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(root))
    pips: list[list[str]] = []

    def run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess:
        if "venv" in command:
            (Path(command[-1]) / "bin").mkdir(parents=True)
            (Path(command[-1]) / "bin" / "python").touch()
        else:   # <work>/bin/python -I -m pip install ... triton==3.1.0
            pips.append(command)
            site = Path(toolchains.Toolchain("3.1.0", Path(command[0]).parent.parent).site)
            (site / "triton-3.1.0.dist-info").mkdir(parents=True)
            time.sleep(0.5)   # long enough for the other to ask meanwhile
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    found: list[toolchains.Toolchain] = []
    threads = [threading.Thread(target=lambda: found.append(toolchains.install("3.1.0", progress=lambda _: None)))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(pips) == 1 and len(found) == 2 and found[0] == found[1] == toolchains.find("3.1.0")
    assert sorted(p.name for p in root.iterdir()) == ["triton-3.1.0"]   # no lock or half install left


SETTLED = """
import sys
sys.path[:0] = {path!r}
from ptxdiff.compile import invoke   # as a toolchain's worker: its forkserver cannot preload
from ptxdiff.specs.resolve import Spec
import tiles
spec = Spec(signature=(("a_ptr", "*fp16"), ("b_ptr", "*fp16"), ("c_ptr", "*fp32"), ("K", "i32"), ("BM", "constexpr"),
                       ("BN", "constexpr"), ("BK", "constexpr")),
            constexprs=(("BM", 64), ("BN", 64), ("BK", 32)), num_warps=4, num_stages=3)
first, second = (invoke.triton_compile(tiles.tile_dot, spec, 90).asm["ptx"] for _ in range(2))
print(len(first.splitlines()), len(second.splitlines()), first == second)
"""

TILES = '''import triton
import triton.language as tl


@triton.jit
def tile_dot(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    m = tl.arange(0, BM)
    n = tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + m[:, None] * K + kk[None, :])
        b = tl.load(b_ptr + kk[:, None] * BN + n[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + m[:, None] * BN + n[None, :], acc)
'''


@pytest.mark.integration
@pytest.mark.network
def test_a_workers_first_compile_is_like_its_later_ones(toolchains_dir: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton 3.2 compiles the first kernel of a process otherwise than every later one (this
    tile: 1,140 PTX lines first, 1,109 after), so a spec's metrics hung on whether it was its
    worker's first compile, and so on --jobs. A worker settles triton before its first compile
    (where the forkserver's preload has not): its first compile is like its second."""
    if not _index_reachable():
        pytest.skip("the package index cannot be reached")
    import subprocess

    from ptxdiff.compile import toolchains
    from ptxdiff.sandbox.launcher import toolchain_path

    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(toolchains_dir))
    found = toolchains.install("3.2.0", progress=lambda _: None)
    (tmp_path / "tiles.py").write_text(TILES)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRITON_ALWAYS_COMPILE="1", TRITON_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([found.python, "-c", SETTLED.format(path=[str(tmp_path), *toolchain_path(found.python)])],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split()[-1] == "True", out.stdout
