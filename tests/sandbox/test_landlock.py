"""Landlock as the sandbox uses it: granted paths work, everything else is refused, in the
process that restricted itself and in what it starts."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from ptxdiff.sandbox import landlock
from ptxdiff.sandbox.syscalls import PR_SET_NO_NEW_PRIVS, prctl

pytestmark = pytest.mark.skipif(landlock.abi() < 1, reason="this kernel has no Landlock")


def _restrict(rules: landlock.Rules) -> landlock.Applied:
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    return landlock.restrict(rules)


def _try(fn) -> str:
    try:
        fn()
    except OSError as e:
        return type(e).__name__
    return "ok"


def test_writes_only_beneath_the_write_folder(tmp_path, in_child):
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()

    def attempt():
        _restrict(landlock.Rules(write=(str(inside),)))
        return [_try(lambda: (inside / "a").write_text("x")), _try(lambda: (outside / "b").write_text("x"))]

    assert in_child(attempt) == ["ok", "PermissionError"]
    assert (inside / "a").exists() and not (outside / "b").exists()


def test_reads_only_what_is_granted(tmp_path, in_child):
    granted, other = tmp_path / "granted.txt", tmp_path / "other.txt"
    granted.write_text("yes")
    other.write_text("no")

    def attempt():
        _restrict(landlock.Rules(read=(str(granted),)))
        return [_try(granted.read_text), _try(other.read_text)]

    assert [_try(granted.read_text), _try(other.read_text)] == ["ok", "ok"]   # outside the sandbox
    assert in_child(attempt) == ["ok", "PermissionError"]


def test_executes_only_granted_files_and_children_inherit_the_rules(tmp_path, in_child):
    marker = tmp_path / "marker"

    def attempt():
        _restrict(landlock.Rules(write=(str(tmp_path),)))
        try:
            subprocess.run(["/bin/sh", "-c", f"echo x > {marker}"], check=True)
        except OSError as e:
            return type(e).__name__
        return "ran"

    assert in_child(attempt) == "PermissionError"
    assert not marker.exists()


@pytest.mark.skipif(landlock.abi() < 4, reason="TCP rules need Landlock ABI 4")
def test_tcp_connect_is_refused(in_child):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def attempt():
        _restrict(landlock.Rules())
        return _try(lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())

    try:
        assert _try(lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close()) == "ok"
        assert in_child(attempt) == "PermissionError"
    finally:
        server.close()


def test_the_rights_handled_grow_with_the_abi():
    assert landlock.fs_rights(1) == (1 << 13) - 1
    assert landlock.fs_rights(3) & landlock.TRUNCATE and not landlock.fs_rights(2) & landlock.TRUNCATE
    assert landlock.fs_rights(7) & landlock.IOCTL_DEV


def test_a_missing_path_is_left_out(tmp_path, in_child):
    def attempt():
        return _restrict(landlock.Rules(read=(str(tmp_path / "nope"), str(tmp_path)))).rules

    assert in_child(attempt) == 1
    assert os.path.isdir(tmp_path)
