"""Where the kernel refuses user namespaces (a container's seccomp profile, made for real here
around the whole ptxdiff process), a diff still compiles sandboxed, the one line says what holds,
and a payload still cannot write outside, read outside, connect, or run a program."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import commit, make_repo, scale_kernel
from ptxdiff.sandbox.namespaces import FALLBACK
from ptxdiff.sandbox.selftest import attempts

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "ptxdiff")
# no_new_privs, then a filter refusing unshare with EPERM (as Docker's default profile), then exec
CONTAINED = ("import os, sys; from ptxdiff.sandbox import seccomp, syscalls; "
             "syscalls.prctl(syscalls.PR_SET_NO_NEW_PRIVS, 1); seccomp.install(syscalls.arch(), ('unshare',)); "
             "os.execv(sys.argv[1], sys.argv[1:])")


# inside a user namespace whose limit of nested ones is 0: unshare fails with ENOSPC (as with
# user.max_user_namespaces=0 on the host); ptxdiff runs as that namespace's root
NO_NESTED = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'


def contained(*argv: str, cwd: Path, how: str = "seccomp") -> subprocess.CompletedProcess:
    if how == "seccomp":
        wrap = [sys.executable, "-c", CONTAINED]
    else:
        if shutil.which("unshare") is None or subprocess.run(["unshare", "-Ur", "true"]).returncode != 0:
            pytest.skip("no user namespace here to limit")
        wrap = ["unshare", "-Ur", "sh", "-c", NO_NESTED, "sh"]
    return subprocess.run([*wrap, *argv], cwd=str(cwd), capture_output=True, text=True)


@pytest.mark.parametrize(("how", "errno_text"), [("seccomp", "Operation not permitted"),
                                                 ("max_user_namespaces", "No space left on device")])
def test_a_diff_compiles_without_namespaces_and_says_so_once(tmp_path, how, errno_text):
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(), "ops/b.py": scale_kernel(name="other_kernel")})
    commit(repo, "change both", {"ops/a.py": scale_kernel("x * 3.0"),
                                 "ops/b.py": scale_kernel("x + 1.0", name="other_kernel")})
    proc = contained(CLI, "diff", "HEAD~1", "HEAD", "--no-cache", "--format", "json", "-q", "-j", "2", cwd=repo,
                     how=how)
    assert proc.returncode in (0, 1), proc.stderr
    verdicts = {r["kernel"]: r["verdict"] for r in json.loads(proc.stdout)["kernels"]}
    assert set(verdicts) == {"ops/a.py::scale_kernel", "ops/b.py::other_kernel"}
    assert "failed" not in verdicts.values() and "unmeasured" not in verdicts.values()
    line = "ptxdiff: " + FALLBACK.format(why=f"unshare: {errno_text}")
    assert proc.stderr.splitlines().count(line) == 1, proc.stderr


SELF_TEST = """
import json, sys
from ptxdiff.compile.pool import sandboxed_call
from ptxdiff.sandbox import selftest
tries = json.loads(sys.argv[1])
active, results = sandboxed_call(selftest.attempts, ([tuple(t) for t in tries],))
print(json.dumps([active, results]))
"""


def test_a_payload_without_namespaces_is_still_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("not for the sandbox\n")
    listener = socket.create_server(("127.0.0.1", 0))
    tries = [["write", str(tmp_path / "written")], ["read", str(secret)],
             ["tcp", f"127.0.0.1:{listener.getsockname()[1]}"], ["exec", "/bin/sh"]]
    try:
        proc = contained(sys.executable, "-c", SELF_TEST, json.dumps(tries), cwd=tmp_path)
        live = attempts([(what, target + "-live" if what == "write" else target) for what, target in tries[:3]])
    finally:
        listener.close()
    assert live == ["ok", "ok", "ok"]   # outside the sandbox each attempt gets through
    assert proc.returncode == 0, proc.stderr
    active, results = json.loads(proc.stdout)
    assert "this kernel refuses them" in active and "Landlock ABI" in active
    assert len(results) == len(tries) and all(r.startswith("refused") for r in results), results
    assert not (tmp_path / "written").exists()
