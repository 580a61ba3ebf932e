"""The driver's file and process helpers: the atomic write leaves the old file or the new one and
no temp file, spawned commands get their redirections, and blob ids are git's."""

from __future__ import annotations

import os

import pytest

from ptxdiff import fastio


def test_replace_file_writes_with_the_mode_and_leaves_no_temp_file(tmp_path):
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "f"
    path.write_bytes(b"old")
    fastio.replace_file(str(path), b"new", 0o640)
    assert path.read_bytes() == b"new"
    assert path.stat().st_mode & 0o777 == 0o640 & ~_umask()
    assert os.listdir(path.parent) == ["f"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_failed_replace_keeps_the_old_file_and_removes_the_temp_file(tmp_path, monkeypatch):
    (tmp_path / "d").mkdir()
    path = tmp_path / "d" / "f"
    path.write_bytes(b"old")

    def interrupted(src: str, dst: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(fastio.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        fastio.replace_file(str(path), b"new")
    assert path.read_bytes() == b"old"
    assert os.listdir(path.parent) == ["f"]


def test_write_of_more_than_one_call_can_take(tmp_path):
    data = bytes(range(256)) * 8192   # 2 MiB: written in a loop
    fastio.write(str(tmp_path / "big"), data)
    assert (tmp_path / "big").read_bytes() == data


def test_read_of_a_missing_file_is_empty(tmp_path):
    assert fastio.read(str(tmp_path / "none")) == b""


@pytest.mark.parametrize("script, code, out, err", [
    ("cat; echo to-err >&2; exit 3", 3, b"in\n", b"before\nto-err\n"),   # stdin, stdout, stderr appended
    ("exit 0", 0, b"", b"before\n"),
])
def test_spawn_redirects_and_wait_gives_the_exit_code(tmp_path, script, code, out, err):
    (tmp_path / "in").write_bytes(b"in\n")
    (tmp_path / "err").write_bytes(b"before\n")
    (tmp_path / "out").write_bytes(b"a longer file that is truncated")
    pid = fastio.spawn(["sh", "-c", script], out=str(tmp_path / "out"), inp=str(tmp_path / "in"),
                       err=str(tmp_path / "err"))
    assert fastio.wait(pid) == code
    assert (tmp_path / "out").read_bytes() == out
    assert (tmp_path / "err").read_bytes() == err


def test_spawn_of_a_missing_program_exits_127(tmp_path):
    assert fastio.wait(fastio.spawn([b"ptxdiff-no-such-program"])) == 127


def test_spawn_passes_the_environment_given(tmp_path):
    pid = fastio.spawn(["/bin/sh", "-c", "echo $ONLY"], out=str(tmp_path / "out"), env={"ONLY": "this"})
    assert fastio.wait(pid) == 0 and (tmp_path / "out").read_bytes() == b"this\n"


def test_rmtree_removes_a_tree_and_is_quiet_when_it_is_gone(tmp_path):
    (tmp_path / "t" / "a" / "b").mkdir(parents=True)
    (tmp_path / "t" / "a" / "b" / "f").write_bytes(b"x")
    (tmp_path / "t" / "link").symlink_to(tmp_path / "t" / "a")
    fastio.rmtree(str(tmp_path / "t"))
    assert not (tmp_path / "t").exists()
    fastio.rmtree(str(tmp_path / "t"))


@pytest.mark.parametrize("data, length, blob", [
    (b"", 40, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"),
    (b"hello\n", 40, "ce013625030ba8dba906f756967f9e9ca394464a"),
    (b"", 64, "473a0f4c3be8a93681a267e3b1e9a7dcda1185436fe141f7749120a303721813"),
])
def test_blob_id_is_gits(data, length, blob):
    assert fastio.blob_id(data, length) == blob


def test_sha256():
    assert fastio.sha256(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_tmp_path_is_per_user_and_process_under_tmpdir(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert fastio.tmp_path("x") == str(tmp_path / f"ptxdiff-{os.getuid()}-{os.getpid()}-x")
