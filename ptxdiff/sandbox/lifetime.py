"""A worker and everything it starts end together, when its time is up or ptxdiff is gone.

The worker's first process takes its own process group and becomes a supervisor that runs no
repository content: it forks the process that does the work (the init of the new PID namespace
where there is one) and waits for it. seccomp keeps every descendant in the group (no setsid,
no setpgid), so one kill of the group ends the tree: the pool sends it when a request runs past
its bound, and the supervisor sends it itself when the working process ends (what it started
must not stay) or when ptxdiff goes away, kill -9 included: it watches both its parent (the
forkserver, which dies with ptxdiff: PR_SET_PDEATHSIG) and a pipe only ptxdiff holds (the
worker's multiprocessing sentinel, so a forkserver that died before the supervisor asked for
its signal is noticed too). Then it also has the worker's private folder removed, which ptxdiff
no longer can. In a PID namespace the kernel also kills everything in it when its init dies.

What ends with these processes ends the rest: multiprocessing's resource tracker exits when the
last process holding its pipe (ptxdiff, the forkserver, the workers) is gone, so nothing here
may wait on anything outside its bound; the cleaner below waits for its group's live members
only (a killed process stays a zombie until some ancestor reaps it, which a container's PID 1
may never do) and for CLEAN_UP_WAIT seconds at most.

A worker killed before its supervisor is up (ptxdiff went while it started: the parent-death
signal ends it at once) cleans nothing: its folder is held by the pool's `Homes`, a folder of
all its workers' folders that a small keeper process made and removes when its pipe from
ptxdiff closes, when the pool closes or when ptxdiff is killed.
"""

from __future__ import annotations

import glob
import multiprocessing
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from ptxdiff.sandbox.syscalls import PR_SET_PDEATHSIG, prctl

CLEAN_UP_WAIT = 30.0   # seconds the cleaner waits for a killed group to go before it gives up

# the keeper: it makes the folder, says where, and removes it when ptxdiff closes its stdin or goes
_KEEPER = ("import shutil, sys, tempfile\n"
           "root = tempfile.mkdtemp(prefix='ptxdiff-pool-')\n"
           "print(root, flush=True)\n"
           "sys.stdin.buffer.read()\n"
           "shutil.rmtree(root, ignore_errors=True)\n")


class Homes:
    """The folder of one pool's worker homes, made and removed by a keeper process that outlives
    ptxdiff (its own session: a Ctrl-C to ptxdiff's group does not stop it before it cleans).
    Made by the keeper, so no moment exists where the folder is there and nobody will remove it."""

    def __init__(self) -> None:
        self._keeper = subprocess.Popen([sys.executable, "-I", "-S", "-c", _KEEPER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, start_new_session=True)
        assert self._keeper.stdout is not None
        self.root = self._keeper.stdout.readline().decode().strip()
        if not self.root:
            self._keeper.wait()
            raise OSError(f"the worker folders' keeper did not start (exit code {self._keeper.returncode})")

    def home(self) -> str:
        """A new worker's private folder."""
        return tempfile.mkdtemp(prefix="ptxdiff-worker-", dir=self.root)

    def close(self) -> None:
        """Every worker's folder removed (the keeper told to go, and waited for)."""
        if self._keeper.stdin is not None and not self._keeper.stdin.closed:
            self._keeper.stdin.close()
        self._keeper.wait()
        if self._keeper.stdout is not None:
            self._keeper.stdout.close()


def ptxdiff_sentinel() -> int | None:
    """A descriptor that becomes readable (EOF) once ptxdiff is gone: the read end of the pipe
    multiprocessing keeps open in ptxdiff for each worker; None outside a multiprocessing child."""
    parent = multiprocessing.parent_process()
    try:
        return parent.sentinel if parent is not None else None
    except ValueError:
        return None


def _readable(fd: int | None) -> bool:
    return fd is not None and bool(select.select([fd], [], [], 0)[0])


def supervise(home: str, pid_namespace: bool) -> None:
    """Fork the working process and return in it; this process stays as the supervisor until the
    working one exits, then exits with its status. Call with the process group already taken
    (and, with `pid_namespace`, after unsharing one: the working process is then its init).
    The supervisor removes the private folder `home` when it goes: ptxdiff may be gone."""
    parent = os.getppid()
    watch = ptxdiff_sentinel()
    worker: list[int] = []

    def orphaned(signum: int, frame: object) -> None:
        # once: the parent-death signal and the sentinel can both say it, the signal in the middle
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if worker:
            try:
                os.kill(worker[0], signal.SIGKILL)
            except ProcessLookupError:
                pass   # already reaped
            _reap(worker[0])
        if pid_namespace or not worker:   # the namespace died with its init: nothing is left
            remove_home(home)
            os._exit(1)
        _clean_up_group(home)

    signal.signal(signal.SIGTERM, orphaned)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent or _readable(watch):   # the parent or ptxdiff went before the line above
        orphaned(signal.SIGTERM, None)
    alive_r, alive_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(alive_w)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if select.select([alive_r], [], [], 0)[0]:   # the supervisor went before the line above
            os._exit(1)
        os.close(alive_r)
        return
    worker.append(child)
    os.close(alive_r)
    status = _wait(child, watch)
    if status is None:   # ptxdiff is gone
        orphaned(signal.SIGTERM, None)
        status = 0
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # from here on the way out is the same
    _end_group()
    shutil.rmtree(home, ignore_errors=True)   # no one uses it now: removed also if ptxdiff goes before it can
    # (what the worker printed stays beside it for ptxdiff to read; gone with ptxdiff: `orphaned`)
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _wait(pid: int, watch: int | None) -> int | None:
    """The working process's wait status, or None if ptxdiff goes first (`watch` readable)."""
    if watch is None:
        return _reap(pid)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):   # Linux < 5.3: the parent-death signal alone
        return _reap(pid)
    try:
        while True:
            try:
                ready = select.select([pidfd, watch], [], [])[0]
            except InterruptedError:
                continue
            if pidfd in ready:
                return _reap(pid)
            if watch in ready:
                return None
    finally:
        os.close(pidfd)


def _reap(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def remove_home(home: str) -> None:
    """Remove a worker's private folder and the files beside it named after it (`<home>.printed`:
    what the worker printed, kept outside the folder so that it outlives the worker for a moment)."""
    shutil.rmtree(home, ignore_errors=True)
    for sibling in glob.glob(glob.escape(home.rstrip(os.sep)) + ".*"):
        try:
            os.unlink(sibling)
        except OSError:
            pass


def _clean_up_group(home: str) -> None:
    """Without a PID namespace what the worker started is only held by the group: a cleaner
    leaves it, kills it (this process included), waits until it is gone, removes `home`."""
    group = os.getpgrp()
    if os.fork() == 0:
        try:
            os.setpgid(0, 0)
            os.killpg(group, signal.SIGKILL)
            deadline = time.monotonic() + CLEAN_UP_WAIT
            while alive(group) and time.monotonic() < deadline:
                time.sleep(0.02)
            remove_home(home)
        finally:
            os._exit(0)
    while True:   # the cleaner kills this process with the group
        signal.pause()


def alive(group: int) -> bool:
    """Whether a process of `group` still runs. A zombie does not count: `kill(-group, 0)` finds
    it until an ancestor reaps it, which a container whose PID 1 never reaps never does (the
    cleaner then waited for ever, and kept the resource tracker alive through its pipe)."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _end_group() -> None:
    """The working process is gone: what it left behind goes too. The supervisor steps into its
    parent's group first, so that it can still report the working process's status."""
    group = os.getpgrp()
    try:
        os.setpgid(0, os.getpgid(os.getppid()))
    except OSError:
        pass   # then the kill below ends the supervisor too
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
