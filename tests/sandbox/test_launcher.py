"""multiprocessing's helpers start clean: -I, no cwd or PYTHONPATH on the import path, and for
the compile workers' forkserver only the allow-listed environment, C-level variables included."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from multiprocessing import util

import pytest

from ptxdiff import PACKAGE_DIR
from ptxdiff.sandbox import launcher

pytestmark = pytest.mark.integration   # each test starts an interpreter

CHILD = "import json, os, sys; print(json.dumps([sorted(os.environ), sys.flags.isolated, sys.path]))"


def test_the_clean_path_has_no_cwd_no_pythonpath_and_finds_this_ptxdiff(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = launcher.clean_path()
    assert "" not in path and str(tmp_path) not in path and os.getcwd() not in path
    found = subprocess.run([sys.executable, "-I", "-c", "import ptxdiff; print(ptxdiff.PACKAGE_DIR)"],
                           capture_output=True, text=True, cwd="/").stdout.strip()
    assert found == PACKAGE_DIR or os.path.dirname(PACKAGE_DIR) in path


def test_inside_clean_start_children_get_minus_i_the_clean_path_and_the_scrubbed_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_JOB_TOKEN", "secret")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    libc = ctypes.CDLL(None)
    libc.setenv(b"COLUMNS", b"99", 1)   # as readline does: os.environ never hears of it
    before = dict(os.environ)
    with launcher.clean_start(os.environ):
        assert "-I" in util._args_from_interpreter_flags()
        names, isolated, _ = json.loads(subprocess.run([sys.executable, *util._args_from_interpreter_flags(), "-c",
                                                        CHILD], capture_output=True, text=True).stdout)
        assert "" not in sys.path and str(tmp_path) not in sys.path
    assert isolated == 1
    assert "CI_JOB_TOKEN" not in names and "PYTHONPATH" not in names and "COLUMNS" not in names
    assert "PATH" in names and "HOME" in names
    assert dict(os.environ) == before and "-I" not in util._args_from_interpreter_flags()
    after = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True).stdout
    assert "COLUMNS" in json.loads(after)[0]   # what only the C environment held is back too
    libc.unsetenv(b"COLUMNS")


def test_without_an_environment_clean_start_keeps_it(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setenv("MY_RUN_SETTING", "1")
    with launcher.clean_start():
        names = json.loads(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True).stdout)[0]
    assert "MY_RUN_SETTING" in names
