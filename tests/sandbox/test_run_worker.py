"""The run worker of `--outputs` on a machine without a GPU (issue 39): old and new run in
triton's interpreter, sealed like a compile worker. A branch whose kernel modules, at their top
level, write into the repository, into the user's home or open a TCP connection (imported only
because `--outputs` runs them): sealed, none of it happens and each row says why its run did not;
with `--no-sandbox` the same writes do happen (what the seal stopped) and the report says so."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import commit, isolate, make_repo, ptxdiff, rows_by_kernel, scale_kernel

pytestmark = [pytest.mark.integration, pytest.mark.module_env]   # one repository, compiled once per mode


def hostile(name: str, action: str, body: str) -> str:
    """A kernel module whose top level does `action` before defining the kernel."""
    return f"import os\nimport socket\n\n{action}\n" + scale_kernel(body, name=name)


def branch(home: Path, repo: Path, port: int, body: str) -> dict[str, str | bytes]:
    return {
        "ops/to_repo.py": hostile("to_repo", f"open({str(repo / 'PWNED')!r}, 'w').write('ran')", body),
        "ops/to_home.py": hostile("to_home", f"open({str(home / 'PWNED')!r}, 'w').write('ran')", body),
        "ops/to_net.py": hostile("to_net", f"socket.create_connection(('127.0.0.1', {port}), timeout=5).close()",
                                 body),
    }


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    """A TCP port on localhost that nobody accepts on: a connect would wait in its backlog."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def connected(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def diffed(tmp: Path, port: int, *flags: str) -> tuple[Path, Path, dict]:
    mp = pytest.MonkeyPatch()
    isolate(tmp, mp)
    home, repo = tmp / "home", tmp / "repo"
    try:
        made = make_repo(tmp, branch(home, repo, port, "x * 2.0"))
        assert made == repo
        old = commit(repo, "old")
        new = commit(repo, "new", branch(home, repo, port, "x * 3.0"))
        done = ptxdiff(["diff", old, new, "--outputs", *flags, "--format", "json", "-q"], repo)
    finally:
        mp.undo()
    assert done.returncode in (0, 1), done.stderr
    return home, repo, json.loads(done.stdout)


@pytest.fixture(scope="module")
def sealed(tmp_path_factory, listener):
    return diffed(tmp_path_factory.mktemp("sealed"), listener.getsockname()[1])


def test_sealed_run_worker_writes_nothing_outside_its_folder(sealed, listener):
    home, repo, report = sealed
    assert not (repo / "PWNED").exists() and not (home / "PWNED").exists()
    assert not connected(listener)
    rows = rows_by_kernel(report)
    for kernel, refused in (("ops/to_repo.py::to_repo", f"Permission denied: '{repo / 'PWNED'}'"),
                            ("ops/to_home.py::to_home", f"Permission denied: '{home / 'PWNED'}'"),
                            ("ops/to_net.py::to_net", "Operation not permitted")):   # socket(): seccomp
        out = rows[kernel][0]["outputs"]
        assert out["result"] == "not-run" and out["reason"].startswith(f"import of {kernel.split('::')[0]} failed: "
                                                                     "PermissionError"), out
        assert refused in out["reason"], out


def test_the_report_says_the_run_worker_was_sealed(sealed):
    said = json.dumps(sealed[2])
    assert "the run workers ran sealed on the CPU" in said and "Landlock" in said and "seccomp" in said


def test_no_sandbox_still_turns_it_off(tmp_path_factory, listener):
    home, repo, report = diffed(tmp_path_factory.mktemp("open"), listener.getsockname()[1], "--no-sandbox")
    assert (repo / "PWNED").read_text() == "ran" and (home / "PWNED").read_text() == "ran"
    assert connected(listener)
    assert "the run workers were not sandboxed (--no-sandbox)" in json.dumps(report)
