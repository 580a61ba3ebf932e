"""Entering the sandbox, in the worker, in two steps around opening the repository.

`begin` (before anything of the repository is read): check the worker started clean, take its
own process group, leave the user's namespaces where allowed, fork the working process under a
supervisor (lifetime.py; in a PID namespace it is the init), set the rlimits, scrub the
environment and move into the private folder. The caller then opens the repository and lists
the side's files (git metadata such as .git/config is read here, never after). `seal`:
no_new_privs, no capabilities (root's too), Landlock, seccomp. Only then does repository
content get evaluated or compiled. Anything that fails raises SandboxError: the worker never
goes on half sandboxed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from ptxdiff.errors import SandboxError
from ptxdiff.sandbox import environment, landlock, lifetime, namespaces, seccomp
from ptxdiff.sandbox.limits import apply as apply_limits
from ptxdiff.sandbox.policy import Policy, rules
from ptxdiff.sandbox.syscalls import PR_SET_NO_NEW_PRIVS, arch, drop_capabilities, prctl

TURNED_OFF = "turned off"


@dataclass(frozen=True)
class Started:
    namespaces: str | None              # None: user, network and PID namespaces are in place; else why not
    limits: dict[str, int] = field(default_factory=dict)

    def fallback(self) -> str | None:
        """The one line to say when the kernel refused the namespaces (not when turned off)."""
        if self.namespaces is None or self.namespaces == TURNED_OFF:
            return None
        return namespaces.FALLBACK.format(why=self.namespaces)


@dataclass(frozen=True)
class Active:
    """What holds in a sealed worker, as `ptxdiff doctor` says it."""

    landlock: landlock.Applied
    seccomp: int
    started: Started

    def describe(self) -> str:
        ll = self.landlock
        scoped = ", signals and abstract sockets" if ll.scoped else ""
        parts = [f"Landlock ABI {ll.abi} (files{', TCP' if ll.tcp else ''}{scoped})",
                 f"seccomp ({self.seccomp} syscalls refused)", "no capabilities",
                 "user+net+pid namespaces" if self.started.namespaces is None
                 else f"no namespaces ({self.started.namespaces})" if self.started.fallback() is None
                 else f"no namespaces (this kernel refuses them: {self.started.namespaces}; sockets refused by seccomp)"]
        lim = self.started.limits
        space = f"{lim['as'] >> 30} GiB" if "as" in lim else "unlimited"
        parts.append(f"rlimits as {space}, cpu {lim.get('cpu')} s, fsize {lim.get('fsize', 0) >> 20} MiB, "
                     f"nproc {lim.get('nproc')}" + (" (not applied to root)" if os.getuid() == 0 else ""))
        return "; ".join(parts)


def threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def check_clean_start() -> None:
    """The forkserver this worker comes from must have been started isolated and with the
    scrubbed environment (launcher.clean_start); else the worker refuses."""
    if not sys.flags.isolated:
        raise SandboxError("the compile worker was not started with python -I")
    try:
        with open("/proc/self/environ", "rb") as f:
            foreign = environment.foreign_names(f.read())
    except OSError as e:
        raise SandboxError(f"cannot read the worker's own environment: {e.strerror}") from None
    if foreign:
        raise SandboxError(f"the compile worker started with variables outside the allow-list: {', '.join(foreign[:5])}")


def begin(policy: Policy, clean: bool = True) -> Started:
    """Everything before the repository is opened (`clean`: check how the worker was started)."""
    if clean:
        check_clean_start()
    if threads() != 1:
        raise SandboxError(f"the compile worker has {threads()} threads before its sandbox (it must have one)")
    try:
        os.setpgid(0, 0)
        why = TURNED_OFF if not policy.namespaces else namespaces.enter()
        lifetime.supervise(policy.home, pid_namespace=why is None)
        applied = apply_limits(policy.limits)
        environment.settle(policy.home)
    except OSError as e:
        raise SandboxError(f"cannot set up the compile sandbox: {e}") from None
    return Started(why, applied)


def seal(policy: Policy, started: Started, tools: Iterable[str], repository: Iterable[str] = ()) -> Active:
    """no_new_privs, no capabilities, Landlock and seccomp, for good. From here on repository content
    may be handled."""
    table = arch()
    if table is None:
        raise SandboxError(f"no sandbox for this machine architecture ({os.uname().machine})")
    if threads() != 1:   # Landlock and seccomp bind the calling thread: another one would stay free
        raise SandboxError(f"the compile worker has {threads()} threads before its seal (it must have one)")
    try:
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        drop_capabilities()
        applied = landlock.restrict(rules(policy.home, tools, repository))
        refused = seccomp.install(table)
    except OSError as e:
        raise SandboxError(f"cannot seal the compile worker: {e}") from None
    return Active(applied, refused, started)
