"""The seccomp filter: what it refuses and why the rest keeps working."""

from __future__ import annotations

import errno
import os
import socket

import pytest

from ptxdiff.sandbox import seccomp
from ptxdiff.sandbox.syscalls import ARCHES, PR_SET_NO_NEW_PRIVS, arch, prctl


@pytest.mark.parametrize("name", sorted(ARCHES))
def test_the_program_checks_the_arch_first_and_refuses_each_denied_call(name):
    table = ARCHES[name]
    prog = seccomp.program(table)
    assert prog[0] == (0x20, 0, 0, 4) and prog[1][3] == table.audit and prog[2][3] == seccomp.RET_KILL_PROCESS
    assert prog[-2][3] == seccomp.RET_ALLOW and prog[-1][3] == seccomp.RET_ERRNO | errno.EPERM
    jumps = {k: i + jt + 1 for i, (code, jt, _, k) in enumerate(prog) if code == 0x15 and i > 1}
    assert set(jumps) == {table.numbers[n] for n in seccomp.DENIED}
    assert all(target == len(prog) - 1 for target in jumps.values())   # each lands on the EPERM return


@pytest.mark.skipif(arch() is None, reason="no syscall table for this machine")
def test_sockets_sessions_and_keyrings_are_refused_pipes_are_not(in_child):
    def attempt():
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        seccomp.install(arch())
        out = {}
        for what, fn in (("socket", lambda: socket.socket().close()), ("setsid", os.setsid),
                         ("pipe", lambda: [os.close(fd) for fd in os.pipe()]),
                         ("socketpair", lambda: [s.close() for s in socket.socketpair()])):
            try:
                fn()
                out[what] = "ok"
            except OSError as e:
                out[what] = errno.errorcode.get(e.errno, str(e.errno))
        return out

    assert in_child(attempt) == {"socket": "EPERM", "setsid": "EPERM", "pipe": "ok", "socketpair": "ok"}
    socket.socket().close()   # the test process itself is untouched
