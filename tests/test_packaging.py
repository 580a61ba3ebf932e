"""hooks/ ships with the package: a wheel carries every file of it as ptxdiff/hooks/, and both an
installed wheel and an editable install (`pip install -e .`, what install.sh does) find them."""

from __future__ import annotations

import shutil
import subprocess
import zipfile

import pytest

from helpers import PY, ROOT


@pytest.mark.integration
def test_a_wheel_carries_hooks_and_its_install_finds_them(tmp_path):
    src = tmp_path / "src"
    for name in ("ptxdiff", "hooks"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    out = tmp_path / "dist"
    subprocess.run([PY, "-c", f"from setuptools import build_meta as b; b.build_wheel({str(out)!r})"],
                   cwd=src, check=True, capture_output=True)
    (wheel,) = out.glob("ptxdiff-*.whl")
    hooks = sorted(p.name for p in (ROOT / "hooks").iterdir() if p.is_file())
    with zipfile.ZipFile(wheel) as z:
        assert sorted(n.rpartition("/")[2] for n in z.namelist() if n.startswith("ptxdiff/hooks/")) == hooks
        assert z.read("ptxdiff/hooks/pre-push") == (ROOT / "hooks" / "pre-push").read_bytes()
        assert {"ptxdiff/report/assets/report.js", "ptxdiff/report/assets/report.css"} <= set(z.namelist())  # --format html

    target = tmp_path / "site"
    subprocess.run([PY, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    found = subprocess.run([PY, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                            "from ptxdiff.gitdiff.install import hook_source; print(hook_source('pre-push'))", str(target)],
                           cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()
    assert found == str(target / "ptxdiff" / "hooks" / "pre-push")


def test_the_editable_install_reads_hooks_in_place():
    from ptxdiff.gitdiff.install import hook_source

    assert hook_source("pre-push") == ROOT / "hooks" / "pre-push"


def _stub_venv(tmp_path, has_triton: bool):
    """A venv whose python only says whether a module imports and logs what pip is asked."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text("#!/bin/sh\n"
                      f'echo "$*" >> "{tmp_path}/calls"\n'
                      'case "$*" in *"import triton"*) exit ' + ("0" if has_triton else "1") + ";; esac\n"
                      "exit 0\n")
    python.chmod(0o755)
    return venv


@pytest.mark.integration
@pytest.mark.parametrize("has_triton", [True, False])
def test_install_sh_announces_a_download_only_when_there_is_one(tmp_path, has_triton):
    venv = _stub_venv(tmp_path, has_triton)
    proc = subprocess.run(["bash", str(ROOT / "install.sh")], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PTXDIFF_VENV": str(venv), "HOME": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert ("290 MB download" in proc.stderr) == (not has_triton)
    assert ("nothing large to download" in proc.stderr) == has_triton
    assert "pip install" in (tmp_path / "calls").read_text().replace("-m pip install", "pip install")
