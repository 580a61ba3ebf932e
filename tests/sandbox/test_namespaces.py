"""Namespaces where the kernel allows them, and a worker that stays sandboxed where it does not:
a container's seccomp profile refusing `unshare` (made for real here), or AppArmor letting it
succeed with a namespace that has no capabilities (its id maps refused)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess

import pytest

from ptxdiff.sandbox import enter, namespaces, seccomp
from ptxdiff.sandbox.limits import Limits
from ptxdiff.sandbox.policy import Policy
from ptxdiff.sandbox.syscalls import PR_SET_NO_NEW_PRIVS, arch, prctl


def refuse_unshare() -> None:
    """What Docker's default seccomp profile does to an unprivileged container, to this process."""
    table = arch()
    assert table is not None
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    seccomp.install(table, ("unshare",))


def no_capabilities(uid: int, gid: int) -> None:
    """What AppArmor's unprivileged_userns profile leaves a new user namespace: no id maps."""
    raise OSError(errno.EPERM, os.strerror(errno.EPERM))


def test_a_namespace_without_capabilities_is_left_in_the_probe_child():
    before = os.readlink("/proc/self/ns/user")
    why = namespaces.refused(no_capabilities)
    assert why == "user namespace id maps: Operation not permitted"
    assert os.readlink("/proc/self/ns/user") == before


@pytest.mark.integration
def test_the_probe_agrees_with_unshare_of_util_linux():
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) here to compare with")
    allowed = subprocess.run(["unshare", "-Urnp", "--fork", "true"], capture_output=True).returncode == 0
    assert (namespaces.refused() is None) == allowed


def test_a_kernel_that_refuses_unshare_gets_landlock_seccomp_and_the_one_line(tmp_path, in_child):
    def attempt():
        refuse_unshare()
        before = os.readlink("/proc/self/ns/user")
        started = enter.begin(Policy(str(tmp_path), Limits()), clean=False)
        active = enter.seal(Policy(str(tmp_path), Limits()), started, [])
        return started.fallback(), active.describe(), os.readlink("/proc/self/ns/user") == before

    line, said, same = in_child(attempt)
    assert same
    assert line == namespaces.FALLBACK.format(why="unshare: Operation not permitted")
    assert "Landlock" in line and "seccomp" in line and "no PID or network namespace" in line
    assert "Landlock ABI" in said and "this kernel refuses them" in said


def test_namespaces_turned_off_say_no_fallback_line():
    assert enter.Started(enter.TURNED_OFF).fallback() is None
    assert enter.Started(None).fallback() is None
