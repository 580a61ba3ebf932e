"""The sandbox holds by itself, whatever the layers above it miss: code running inside a sealed
compile worker (started as the pool starts them) tries what a hostile kernel would, and each
attempt is refused; the same attempts succeed outside, so each check can fail."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from helpers import ROOT
from ptxdiff.compile.pool import sandboxed_call
from ptxdiff.sandbox import selftest

pytestmark = pytest.mark.integration


@pytest.fixture
def targets(tmp_path, monkeypatch):
    """A folder outside the worker's, a file in the user's home, a secret in the environment and a
    listening TCP port: what the attempts go for."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("PRIVATE KEY\n")
    monkeypatch.setenv("CI_DEPLOY_TOKEN", "hunter2")
    server = socket.create_server(("127.0.0.1", 0))
    yield [("write", str(tmp_path / "written-from-the-worker")), ("read", str(key)), ("env", "CI_DEPLOY_TOKEN"),
           ("tcp", f"127.0.0.1:{server.getsockname()[1]}"), ("exec", "/bin/sh"), ("detach", ""),
           ("reserve", str(10 << 30))]
    server.close()


def test_each_attempt_succeeds_outside_the_sandbox(targets):
    assert selftest.attempts(targets) == ["ok"] * len(targets)


def test_each_attempt_is_refused_inside_a_sealed_worker(targets, tmp_path):
    active, results = sandboxed_call(selftest.attempts, (targets,))
    assert "Landlock" in active and "seccomp" in active
    refused = dict(zip([what for what, _ in targets], results, strict=True))
    assert all(r.startswith("refused: ") for r in refused.values()), refused
    assert not (tmp_path / "written-from-the-worker").exists()
    assert "hunter2" not in str(results)


def worker_folders(temp) -> list[str]:
    return [n for n in os.listdir(temp) if n.startswith("ptxdiff-worker-")]   # not multiprocessing's own


def _comm_pids(name: str) -> list[int]:
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == name:
                    out.append(int(pid))
        except OSError:
            pass
    return out


def _gone(name: str, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while _comm_pids(name):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.mark.parametrize("namespaces", [True, False], ids=["pid-namespace", "process-group-only"])
def test_a_process_the_worker_starts_dies_with_the_worker(namespaces):
    name = "sbx-" + uuid.uuid4().hex[:8]
    active, results = sandboxed_call(selftest.attempts, ([("spawn", name)],), namespaces=namespaces)
    assert results == ["ok"]            # it was started (and spun) inside
    assert ("no namespaces" in active) != namespaces
    assert _gone(name)                  # the worker was stopped: its child with it


@pytest.mark.parametrize("namespaces", [True, False], ids=["pid-namespace", "process-group-only"])
def test_workers_and_what_they_start_die_when_ptxdiff_is_killed(tmp_path, namespaces):
    name = "sbx-" + uuid.uuid4().hex[:8]
    script = tmp_path / "caller.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from ptxdiff.compile.pool import sandboxed_call
        from ptxdiff.sandbox import selftest
        if __name__ == "__main__":
            sandboxed_call(selftest.attempts, ([("spawn", {name!r}), ("wait", "600")],), timeout=600,
                           namespaces={namespaces!r})
    """))
    temp = tmp_path / "tmp"   # the caller's temp folder: only its worker's folder goes there
    temp.mkdir()
    caller = subprocess.Popen([sys.executable, str(script)], cwd=str(tmp_path), env={**os.environ, "TMPDIR": str(temp)})
    try:
        deadline = time.monotonic() + 120
        while not _comm_pids(name) and time.monotonic() < deadline and caller.poll() is None:
            time.sleep(0.1)
        assert _comm_pids(name), "the spinning child never started"
        assert worker_folders(temp)             # the worker's private folder
        caller.send_signal(signal.SIGKILL)   # no cleanup code of ptxdiff runs
        caller.wait()
        assert _gone(name)
        deadline = time.monotonic() + 30
        while worker_folders(temp) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not worker_folders(temp)         # removed for ptxdiff, which was gone
    finally:
        for pid in _comm_pids(name):
            os.kill(pid, signal.SIGKILL)
        if caller.poll() is None:
            caller.kill()
