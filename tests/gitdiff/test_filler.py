"""The diff driver's background filler is detached from the `git diff` that started it, so its
own life must be bounded: an alarm set at its start ends it, whatever its comparison does."""

from __future__ import annotations

import fcntl
import marshal
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from helpers import ROOT
from ptxdiff.gitdiff import filler


def test_the_filler_lives_six_requests_at_the_user_s_maximum(monkeypatch):
    monkeypatch.delenv("PTXDIFF_MAX_TIMEOUT", raising=False)
    assert filler.life_bound() == 6 * 600          # the default maximum per request: an hour
    monkeypatch.setenv("PTXDIFF_MAX_TIMEOUT", "100")
    assert filler.life_bound() == 600
    monkeypatch.setenv("PTXDIFF_MAX_TIMEOUT", "0.1")
    assert filler.life_bound() == 1


@pytest.mark.integration
def test_a_filler_whose_comparison_never_ends_is_ended_by_its_alarm(tmp_path):
    """The comparison stands for any that outlives its bound (the issue's: a compile spinning under
    a branch's `timeout = 1000000`): it never returns, and the filler still ends."""
    state = tmp_path / "state"
    (state / "queue").mkdir(parents=True)
    job = {"key": "k" * 40, "workdir": str(tmp_path), "old": "NOTHING", "new": "WORKTREE", "pieces": []}
    (state / "queue" / f"{time.time_ns():020d}-00000-{'k' * 40}").write_bytes(marshal.dumps(job))
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from ptxdiff.gitdiff import filler
        filler.compare = lambda state, job: time.sleep(10 ** 6)
        sys.exit(filler.main([{str(state)!r}]))
    """)
    with open(state / "filler.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-I", "-c", script], stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PTXDIFF_MAX_TIMEOUT": "0.5"}, start_new_session=True)
    try:
        deadline = time.monotonic() + 120   # a liveness wait: the bound is 3 s
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert proc.returncode == -signal.SIGALRM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (state / "filler.log").read_text()
    assert "ends within 3 s" in text and f"start {'k' * 12}" in text
    fd = os.open(state / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # the next git diff's filler can take the queue
    finally:
        os.close(fd)
