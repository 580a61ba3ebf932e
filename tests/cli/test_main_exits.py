"""Exits at the CLI boundary: a verb that takes no paths refuses `-- PATHS` in one line (exit 2),
and Ctrl-C ends a run quietly with 130, as git does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from helpers import make_repo, run_main
from ptxdiff.cli.commands import COMMANDS, TAKE_PATHS
from ptxdiff.errors import EXIT_INTERRUPTED

NO_PATHS = sorted(set(COMMANDS) - TAKE_PATHS)
WITH = {"cache": ["path"], "toolchain": ["list"]}   # what a verb needs besides the paths


@pytest.mark.parametrize("verb", NO_PATHS)
def test_a_verb_that_takes_no_paths_refuses_them(verb, tmp_path, capsys):
    code, out, err = run_main(["-C", str(tmp_path), verb, *WITH.get(verb, []), "--", "ops/"], capsys)
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"ptxdiff: {verb} takes no paths: nothing may follow `--`"]


def test_the_verbs_that_take_paths_are_verbs():
    assert set(COMMANDS) > TAKE_PATHS   # a misspelt verb here would let the real one refuse its paths


@pytest.mark.integration
def test_ctrl_c_exits_130_quietly(tmp_path):
    repo = make_repo(tmp_path, {"README": "a\n"})
    # a session of its own: Ctrl-C signals the terminal's whole foreground group, ptxdiff and its child
    # and Ctrl-C's default action, as in a terminal: a job started in the background (`cmd &` in a
    # script, nohup) inherits SIGINT ignored, and Python then never raises KeyboardInterrupt
    proc = subprocess.Popen([sys.executable, "-m", "ptxdiff", "record", "--", "sleep", "60"], cwd=repo,
                            stderr=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    started = proc.stderr.readline()   # said just before the command starts
    assert started.startswith(b"ptxdiff record: running sleep 60")
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert (out, err) == (b"", b"")
