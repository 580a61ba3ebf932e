"""Can the sandbox be set up here? Asked in ptxdiff's own process before any worker starts, so
a machine without it gets one line that says why and how to opt out, never an unsandboxed run."""

from __future__ import annotations

import platform
import sys

from ptxdiff.errors import SandboxError
from ptxdiff.sandbox import landlock
from ptxdiff.sandbox.syscalls import PR_GET_SECCOMP, arch, prctl

_said: set[str] = set()
OPT_OUT = "--no-sandbox, git config --global ptxdiff.sandbox off, or PTXDIFF_SANDBOX=off"


def unavailable() -> str | None:
    """Why the sandbox cannot be set up on this machine, or None. Cheap: two syscalls, no fork."""
    if platform.system() != "Linux":
        return f"it needs Linux (Landlock and seccomp); this is {platform.system()}"
    if arch() is None:
        return f"no syscall table for {platform.machine()}"
    if landlock.abi() < 1:
        return "Landlock is not available (it needs Linux >= 5.13 with landlock in the LSM list, lsm=...,landlock)"
    try:
        prctl(PR_GET_SECCOMP)
    except OSError:
        return "seccomp filters are not available in this kernel or container"
    return None


def refusal(why: str) -> SandboxError:
    """The one line a compiling command stops with when the sandbox cannot hold."""
    return SandboxError(f"cannot sandbox the compile workers: {why}. To compile without the sandbox "
                        f"(a repository's code could then run with your rights): {OPT_OUT}")


def say_once(line: str) -> None:
    """A line about what the sandbox holds (a weaker one than asked), on stderr once per run."""
    if line not in _said:
        _said.add(line)
        clear = "\r\x1b[K" if sys.stderr.isatty() else ""   # over a progress line on a terminal
        sys.stderr.write(f"{clear}ptxdiff: {line}\n")
