"""What a sealed worker may touch: the toolchain and its loader to execute, Python and the
libraries to read, its own folder to write; never the home folder or the repository's .git."""

from __future__ import annotations

import os

import pytest

from ptxdiff import PACKAGE_DIR
from ptxdiff.binaries import tool_paths
from ptxdiff.sandbox import policy


def test_elf_interpreter_reads_pt_interp_and_shebangs(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/bin/sh -e\necho\n")
    assert policy.elf_interpreter(str(script)) == "/bin/sh"
    assert policy.elf_interpreter(str(tmp_path / "missing")) is None
    (tmp_path / "data").write_bytes(b"\x7fELF\x01\x01" + b"\0" * 58)   # 32-bit: not ours
    assert policy.elf_interpreter(str(tmp_path / "data")) is None


@pytest.mark.skipif(not tool_paths(), reason="no toolchain")
def test_the_toolchain_and_its_loader_may_run_nothing_else(tmp_path):
    rules = policy.rules(str(tmp_path), tool_paths(), [])
    loader = policy.elf_interpreter(tool_paths()[0])
    assert set(tool_paths()) <= set(rules.execute)
    assert loader is None or loader in rules.execute
    assert not any(p.startswith(("/bin", "/usr/bin")) for p in rules.execute)


@pytest.mark.parametrize(("triton", "shell"), [("3.0.0", True), ("3.1.0", True), ("3.2.0", False), ("3.9.0", False)])
def test_only_a_triton_that_starts_ptxas_through_the_shell_may_run_it(monkeypatch, triton, shell):
    from ptxdiff import binaries
    monkeypatch.setattr(binaries, "triton_version", lambda site=None: triton)
    assert (os.path.realpath("/bin/sh") in binaries.tool_paths()) is shell


def test_reads_cover_python_and_ptxdiff_but_not_home_or_git_metadata(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    repo_objects = str(tmp_path / "repo" / ".git" / "objects")
    rules = policy.rules(str(tmp_path / "private"), [], [repo_objects])
    assert PACKAGE_DIR in rules.read and repo_objects in rules.read
    assert not any(p == str(home) or str(home).startswith(p + os.sep) for p in rules.read if p != "/")
    assert not any(p.endswith(".git") for p in rules.read)
    assert rules.write[0] == str(tmp_path / "private")
