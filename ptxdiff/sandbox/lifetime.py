"""A worker and everything it starts end together, when its time is up or ptxdiff is gone.

The worker's first process takes its own process group and becomes a supervisor that runs no
repository content: it forks the process that does the work (the init of the new PID namespace
where there is one) and waits for it. seccomp keeps every descendant in the group (no setsid,
no setpgid), so one kill of the group ends the tree: the pool sends it when a request runs past
its bound, and the supervisor sends it itself when the working process ends (what it started
must not stay) or when its parent (the forkserver, which dies with ptxdiff, kill -9 included)
goes away; then it also has the worker's private folder removed, which ptxdiff no longer can.
In a PID namespace the kernel also kills everything in it when its init dies.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import time

from ptxdiff.sandbox.syscalls import PR_SET_PDEATHSIG, prctl


def supervise(home: str, pid_namespace: bool) -> None:
    """Fork the working process and return in it; this process stays as the supervisor until the
    working one exits, then exits with its status. Call with the process group already taken
    (and, with `pid_namespace`, after unsharing one: the working process is then its init).
    When ptxdiff is gone, nobody else removes the private folder `home`: the supervisor does."""
    parent = os.getppid()
    worker: list[int] = []

    def orphaned(signum: int, frame: object) -> None:
        if worker:
            os.kill(worker[0], signal.SIGKILL)
            _reap(worker[0])
        if pid_namespace or not worker:   # the namespace died with its init: nothing is left
            shutil.rmtree(home, ignore_errors=True)
            os._exit(1)
        _clean_up_group(home)

    signal.signal(signal.SIGTERM, orphaned)
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:   # the parent went before the line above
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
    status = _reap(child)
    _end_group()
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


def _reap(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            return 0


def _clean_up_group(home: str) -> None:
    """Without a PID namespace what the worker started is only held by the group: a cleaner
    leaves it, kills it (this process included), waits until it is gone, removes `home`."""
    group = os.getpgrp()
    if os.fork() == 0:
        try:
            os.setpgid(0, 0)
            os.killpg(group, signal.SIGKILL)
            while _alive(group):
                time.sleep(0.01)
            shutil.rmtree(home, ignore_errors=True)
        finally:
            os._exit(0)
    while True:   # the cleaner kills this process with the group
        signal.pause()


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
