"""A seccomp filter for the gaps Landlock leaves, and only those.

Landlock decides by path and TCP port. It does not see: a connect to a unix socket by path
(docker.sock, an ssh agent: no file right is asked for), UDP and every other socket family,
io_uring (whose operations seccomp cannot see either), the kernel keyrings (a user's session
keys), or a process leaving its process group (the worker kills its whole group when its time is
up). So the filter refuses socket(), io_uring_*, add_key/request_key/keyctl, setsid/setpgid and
ptrace with EPERM, kills any other syscall ABI (x32, i386: their numbers differ), and allows the
rest. An already connected socket (the worker's pipe to ptxdiff) keeps working.
"""

from __future__ import annotations

import ctypes
import errno
import struct

from ptxdiff.sandbox.syscalls import PR_SET_SECCOMP, SECCOMP_MODE_FILTER, Arch, prctl

DENIED = ("socket", "io_uring_setup", "io_uring_enter", "io_uring_register", "add_key", "request_key", "keyctl",
          "setsid", "setpgid", "ptrace")

_LD_W_ABS = 0x20        # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15           # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35           # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06           # BPF_RET | BPF_K
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_NR, _ARCH = 0, 4       # offsets in struct seccomp_data


def program(table: Arch, denied: tuple[str, ...] = DENIED, err: int = errno.EPERM) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jt, jf, k) instructions: pure, so it can be read and tested."""
    numbers = [table.numbers[name] for name in denied]
    out = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ_K, 1, 0, table.audit), (_RET_K, 0, 0, RET_KILL_PROCESS),
           (_LD_W_ABS, 0, 0, _NR)]
    if table.x32_bit:
        out.append((_JGE_K, len(numbers) + 1, 0, table.x32_bit))
    for i, nr in enumerate(numbers):
        out.append((_JEQ_K, len(numbers) - i, 0, nr))
    out += [(_RET_K, 0, 0, RET_ALLOW), (_RET_K, 0, 0, RET_ERRNO | err)]
    return out


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(table: Arch, denied: tuple[str, ...] = DENIED) -> int:
    """Load the filter into this process and its future children, for good (no_new_privs must be
    set). Returns the number of syscalls it refuses (`denied`: another list, as a container's
    profile refuses `unshare`, for the tests)."""
    code = program(table, denied)
    raw = b"".join(struct.pack("=HBBI", *ins) for ins in code)
    buf = ctypes.create_string_buffer(raw, len(raw))
    prog = _Prog(len(code), ctypes.cast(buf, ctypes.c_void_p))
    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog))
    return len(denied)
