"""User, network and PID namespaces for a worker, where the kernel allows them (no privilege
needed: `unshare -Urnp`).

The network namespace has only a loopback device that is down: nothing outside can be reached,
whatever socket seccomp would let through. The PID namespace makes the worker its init
(lifetime.py forks it): when it dies (its time is up, or ptxdiff is gone), the kernel kills
everything it started, so no descendant outlives it. The user namespace is what lets an unprivileged process make the other
two; the worker keeps its own uid and gid inside. A kernel or container that refuses them (a
sysctl, an LSM policy, seccomp of the container) is no error: Landlock and seccomp still hold,
and the pool says so in one line (`FALLBACK`). Some refuse only half way: Ubuntu 24.04's AppArmor
(the GitHub hosted runners) lets `unshare` succeed but gives the new namespace no capabilities,
so the id maps cannot be written, and a process cannot step back out. So the whole setup is
first tried in a forked child (`refused`), and made for real only where that child managed it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ptxdiff.sandbox.syscalls import CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER, unshare


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


FALLBACK = ("sandbox without user namespaces (this kernel refuses them: {why}): Landlock, seccomp "
            "and rlimits hold; no PID or network namespace")


def id_maps(uid: int, gid: int) -> None:
    """Keep `uid` and `gid` inside the new user namespace (what needs its capabilities)."""
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def _setup(maps: Callable[[int, int], None]) -> str | None:
    uid, gid = os.getuid(), os.getgid()
    try:
        unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID)
    except OSError as e:
        return str(e.strerror or e)   # "unshare: <why>"
    try:
        maps(uid, gid)
    except OSError as e:  # in the new namespaces already: the caller must not go on unsandboxed
        raise OSError(e.errno, f"user namespace id maps: {e.strerror}") from None
    return None


def refused(maps: Callable[[int, int], None] = id_maps) -> str | None:
    """Why the namespaces cannot be made here, tried in a forked child (this process is left as
    it is), or None. Call single-threaded."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read)
            why = _setup(maps)
            if why is not None:
                os.write(write, why.encode())
        except OSError as e:
            os.write(write, str(e.strerror or e).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode(errors="replace")
    status = os.waitpid(pid, 0)[1]
    if os.waitstatus_to_exitcode(status) != 0:
        return f"the namespace probe ended with status {os.waitstatus_to_exitcode(status)}"
    return said or None


def enter() -> str | None:
    """Move this (single-threaded) process into new user and network namespaces and a new PID
    namespace for its next child. Returns None, or why it could not (nothing changed then)."""
    return refused() or _setup(id_maps)
