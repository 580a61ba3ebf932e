"""Landlock: what a sealed worker may read, write and execute, and no TCP at all.

Landlock (Linux >= 5.13) lets an unprivileged process take rights away from itself and every
process it starts, for good. A ruleset handles every access right the running kernel knows
(its ABI version); anything not granted by a rule below is refused with EACCES. From ABI 4 it
also handles TCP bind and connect (no rule: none allowed), from ABI 6 it scopes abstract unix
sockets and signals to the sandbox. It does not cover stat/readlink of paths, other socket
families, or keyrings: seccomp.py closes the ones that matter.
"""

from __future__ import annotations

import ctypes
import os
import stat
from dataclasses import dataclass

from ptxdiff.sandbox.syscalls import syscall

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV   # what a rule on a file may grant
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


@dataclass(frozen=True)
class Rules:
    """Paths and what may be done beneath them. A path that does not exist is left out (nothing
    can be done to it either); a symlink names what it points to."""

    read: tuple[str, ...] = ()       # read files (and list directories) beneath
    write: tuple[str, ...] = ()      # every right but execute beneath (the private folder); a file: read, write
    execute: tuple[str, ...] = ()    # files that may be run (and read): the toolchain, its ELF loader


@dataclass(frozen=True)
class Applied:
    abi: int
    tcp: bool          # TCP bind/connect refused by Landlock itself (ABI >= 4)
    scoped: bool       # abstract unix sockets and signals kept inside (ABI >= 6)
    rules: int


def abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is absent or disabled."""
    try:
        return syscall("landlock_create_ruleset", None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0


def fs_rights(version: int) -> int:
    return FS_BY_ABI.get(version, (1 << 16) - 1)


def _add(ruleset: int, path: str, access: int) -> bool:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FILE_RIGHTS
        attr = _PathBeneath(access, fd)
        syscall("landlock_add_rule", ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(attr),
                ctypes.c_uint32(0))
        return True
    finally:
        os.close(fd)


def restrict(rules: Rules) -> Applied:
    """Restrict this process (single-threaded: Landlock binds the calling thread and its future
    children) to `rules`, for good. Needs no_new_privs set. OSError when it cannot."""
    version = abi()
    if version < 1:
        raise OSError(95, "Landlock is not available (Linux >= 5.13 with landlock in the LSM list)")
    handled = fs_rights(version)
    net = NET_BIND_TCP | NET_CONNECT_TCP if version >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if version >= 6 else 0
    attr = _RulesetAttr(handled, net, scoped)
    size = 24 if version >= 6 else 16 if version >= 4 else 8
    ruleset = syscall("landlock_create_ruleset", ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        read = READ_FILE | READ_DIR
        grants = [(p, read) for p in rules.read] + [(p, handled & ~EXECUTE) for p in rules.write] + \
                 [(p, READ_FILE | EXECUTE) for p in rules.execute]
        count = sum(_add(ruleset, path, access & handled) for path, access in grants)
        syscall("landlock_restrict_self", ctypes.c_int(ruleset), ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return Applied(version, bool(net), bool(scoped), count)
