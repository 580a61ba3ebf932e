"""Raw Linux calls the sandbox needs and the standard library lacks, through ctypes (no new
dependency): prctl, unshare, and the Landlock calls by number, per machine architecture."""

from __future__ import annotations

import ctypes
import os
import platform
from dataclasses import dataclass

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
PR_GET_SECCOMP = 21
SECCOMP_MODE_FILTER = 2

CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000


@dataclass(frozen=True)
class Arch:
    """Syscall numbers and the seccomp audit value of one architecture."""

    name: str
    audit: int                      # AUDIT_ARCH_* as seccomp_data.arch reports it
    numbers: dict[str, int]
    x32_bit: int = 0                # x86_64: syscalls with this bit set are the x32 ABI


# From the generic numbering on, landlock_* and io_uring_* share numbers across architectures.
_COMMON = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
           "landlock_create_ruleset": 444, "landlock_add_rule": 445, "landlock_restrict_self": 446}

ARCHES = {
    "x86_64": Arch("x86_64", 0xC000003E, {
        **_COMMON, "socket": 41, "ptrace": 101, "setpgid": 109, "setsid": 112, "capset": 126,
        "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272}, x32_bit=0x40000000),
    "aarch64": Arch("aarch64", 0xC00000B7, {
        **_COMMON, "socket": 198, "ptrace": 117, "setpgid": 154, "setsid": 157, "capset": 91,
        "add_key": 217, "request_key": 218, "keyctl": 219, "unshare": 97}),
}


def arch() -> Arch | None:
    """This machine's syscall table, or None where the sandbox has none (then it cannot be set up)."""
    machine = platform.machine().lower()
    return ARCHES.get({"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine))


_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> int:
    if result == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def syscall(name: str, *args: object) -> int:
    """Call a syscall of the table by name; OSError with errno on failure."""
    table = arch()
    if table is None or name not in table.numbers:
        raise OSError(38, f"{name}: no syscall number for {platform.machine()}")
    fn = libc().syscall
    fn.restype = ctypes.c_long
    return _check(fn(ctypes.c_long(table.numbers[name]), *args), name)


def prctl(option: int, arg2: object = 0, arg3: object = 0) -> int:
    """prctl(option, arg2, arg3): ints, or ctypes pointers (a byref, a c_char_p) where the call takes one."""
    fn = libc().prctl
    fn.restype = ctypes.c_int
    args = [a if not isinstance(a, int) else ctypes.c_ulong(a) for a in (arg2, arg3)]
    return _check(fn(ctypes.c_int(option), *args, ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl({option})")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Give up every capability (root's included): with no_new_privs, nothing exec'd gets any back."""
    header = _CapHeader(0x20080522, 0)   # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    syscall("capset", ctypes.byref(header), data)


def unshare(flags: int) -> None:
    fn = libc().unshare
    fn.restype = ctypes.c_int
    _check(fn(ctypes.c_int(flags)), "unshare")


def c_environ() -> list[bytes]:
    """The C library's environment, which can hold what os.environ does not know (readline sets
    LINES and COLUMNS there): what an exec'd child really inherits."""
    env = ctypes.POINTER(ctypes.c_char_p).in_dll(libc(), "environ")
    out = []
    i = 0
    while env and env[i] is not None:
        out.append(env[i])
        i += 1
    return out


def clearenv() -> None:
    libc().clearenv()
