"""Nothing outlives ptxdiff: a `kill -9` of a run that compiles leaves no worker, forkserver,
resource tracker or cleaner behind, also under a parent that never reaps (a container whose
PID 1 does not, or a CI runner), where a killed process stays a zombie for good."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from helpers import ROOT, commit, make_repo, scale_kernel
from ptxdiff.sandbox.lifetime import alive

pytestmark = pytest.mark.integration

# Becomes a child subreaper (orphans of what it starts become its children) that never reaps
# them, starts a command, waits until the command is under way, kills it with SIGKILL, then
# waits up to 60 s for every process below it to be gone (zombies aside) and prints
# {"ran": ..., "below": ..., "left": [...], "folders": [...]}. What is left is killed after.
NEVER_REAPS = r'''
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER
spec = json.loads(sys.argv[1])
child = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=spec["env"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
tmp = spec["env"]["TMPDIR"]

def below():
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
            parents[int(pid)] = (int(fields[1]), fields[0], cmd)
        except (OSError, IndexError, ValueError):
            pass
    mine, grew = {os.getpid()}, True
    while grew:
        grew = False
        for pid, (ppid, _, _) in parents.items():
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    return {pid: parents[pid] for pid in mine - {os.getpid()} if pid in parents}

def comm_running(name):
    return any(open(f"/proc/{p}/comm").read().strip() == name for p in below() if os.path.exists(f"/proc/{p}/comm"))

def workers():   # a pool's worker folders sit in its folder (ptxdiff-pool-*), sandboxed_call's alone
    pools = [os.path.join(tmp, n) for n in os.listdir(tmp) if n.startswith("ptxdiff-pool-")]
    return [n for d in [tmp, *pools] if os.path.isdir(d) for n in os.listdir(d) if n.startswith("ptxdiff-worker-")]

def ready():
    if "comm" in spec:
        return comm_running(spec["comm"])
    return bool(workers()) and len(below()) >= 4

deadline = time.monotonic() + 300
while not ready() and child.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
time.sleep(spec.get("settle", 0))
ran = child.poll() is None and ready()
count = len(below())
if ran:
    os.kill(child.pid, signal.SIGKILL)      # no cleanup code of ptxdiff runs; and it is never reaped
deadline = time.monotonic() + 60
while any(state != "Z" for _, state, _ in below().values()) and time.monotonic() < deadline:
    time.sleep(0.1)
left = [[pid, state, cmd] for pid, (_, state, cmd) in below().items() if state != "Z"]
deadline = time.monotonic() + 60
while any(n.startswith("ptxdiff-") for n in os.listdir(tmp)) and time.monotonic() < deadline:
    time.sleep(0.1)
print(json.dumps({"ran": ran, "below": count, "left": left,
                  "folders": [n for n in os.listdir(tmp) if n.startswith("ptxdiff-")]}))
for pid, _, _ in left:
    os.kill(pid, signal.SIGKILL)
'''


def never_reaping(argv: list[str], cwd, tmp, **spec) -> dict:
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.run([sys.executable, "-c", NEVER_REAPS, json.dumps({"argv": argv, "cwd": str(cwd), "env": env, **spec})],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_alive_counts_the_running_members_of_a_group_not_its_zombies():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                            start_new_session=True)
    try:
        assert alive(proc.pid)              # it leads its own group
        assert proc.stdin is not None
        proc.stdin.close()                  # it exits; not reaped, it stays a zombie
        while _state(proc.pid) != "Z":
            time.sleep(0.01)
        assert not alive(proc.pid)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("namespaces", [True, False], ids=["pid-namespace", "process-group-only"])
def test_a_killed_caller_leaves_nothing_running_under_a_parent_that_never_reaps(tmp_path, namespaces):
    """Without a PID namespace the supervisor's cleaner waited for its group with kill(-group, 0),
    which a zombie answers: under a parent that never reaps it waited for ever, and the
    resource tracker, whose pipe it held, with it (the leftover tracker of the issue)."""
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
    temp = tmp_path / "tmp"
    temp.mkdir()
    got = never_reaping([sys.executable, str(script)], tmp_path, temp, comm=name)
    assert got["ran"] and got["below"] >= 4, got   # the tracker, the forkserver, the worker, its child
    assert got["left"] == [], got
    assert got["folders"] == [], got


def test_a_ptxdiff_diff_killed_while_it_compiles_leaves_no_process(tmp_path):
    names = [f"k{i}" for i in range(16)]  # many compiles: it is killed the moment a worker is under way
    repo = make_repo(tmp_path, {f"ops/{n}.py": scale_kernel(name=n) for n in names})
    commit(repo, "change", {f"ops/{n}.py": scale_kernel("x * 3.0 + 1.0", name=n) for n in names})
    temp = tmp_path / "tmp"
    temp.mkdir()
    got = never_reaping([sys.executable, "-m", "ptxdiff", "diff", "HEAD~1", "HEAD"], repo, temp, settle=0.0)
    assert got["ran"], got            # killed while a compile worker was under way
    assert got["left"] == [], got     # no worker, forkserver, resource tracker or cleaner
    assert got["folders"] == [], got  # and the workers' private folders are removed


def test_a_pool_s_worker_folders_go_when_ptxdiff_is_killed_before_any_worker_could_clean(tmp_path):
    """The folders of workers that never reached their supervisor (ptxdiff killed while they
    started): the keeper made their parent folder and removes it when ptxdiff's pipe closes."""
    script = tmp_path / "pool_owner.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from ptxdiff.sandbox.lifetime import Homes
        homes = Homes()
        home = homes.home()
        open(os.path.join(home, "scratch"), "w").write("x")
        print(homes.root, flush=True)
        time.sleep(600)
    """))
    temp = tmp_path / "tmp"
    temp.mkdir()
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(temp)})
    assert proc.stdout is not None
    root = proc.stdout.readline().strip()
    assert root.startswith(str(temp)) and os.listdir(root)
    proc.kill()   # SIGKILL: no cleanup code of the owner runs
    proc.wait()
    deadline = time.monotonic() + 30
    while os.path.exists(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(root) and os.listdir(temp) == []
