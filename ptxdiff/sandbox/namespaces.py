"""User, network and PID namespaces for a worker, where the kernel allows them (no privilege
needed: `unshare -Urnp`).

The network namespace has only a loopback device that is down: nothing outside can be reached,
whatever socket seccomp would let through. The PID namespace makes the worker its init
(lifetime.py forks it): when it dies (its time is up, or ptxdiff is gone), the kernel kills
everything it started, so no descendant outlives it. The user namespace is what lets an unprivileged process make the other
two; the worker keeps its own uid and gid inside. A kernel or container that refuses them (a
sysctl, an LSM policy, seccomp of the container) is no error: Landlock and seccomp still hold.
"""

from __future__ import annotations

import os

from ptxdiff.sandbox.syscalls import CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER, unshare


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def enter() -> str | None:
    """Move this (single-threaded) process into new user and network namespaces and a new PID
    namespace for its next child. Returns None, or why it could not (nothing changed then)."""
    uid, gid = os.getuid(), os.getgid()
    try:
        unshare(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWPID)
    except OSError as e:
        return f"unshare: {e.strerror or e}"
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as e:  # in the new namespaces already: the caller must not go on unsandboxed
        raise OSError(e.errno, f"user namespace id maps: {e.strerror}") from None
    return None
