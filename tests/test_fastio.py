"""fastio: the atomic write leaves the old file or the new one and no temp file, spawned commands
get their redirections, blob ids are git's; and read_inside reads a work-tree file by the rules of
a repository file, whatever an attacker committed or left there (symlinks out, a FIFO, a device,
`..`, a huge file)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ptxdiff import fastio
from ptxdiff.fastio import NotRegular, read_inside


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


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    top = tmp_path / "repo"
    (top / "pkg").mkdir(parents=True)
    (top / "pkg" / "k.py").write_text("x = 1\n")
    (top / "ptxdiff.toml").write_text("targets = ['sm_90']\n")
    (tmp_path / "secret").write_text("token = 'outside the repository'\n")
    return top


def test_a_plain_file_is_read(tree):
    assert read_inside(str(tree), "pkg/k.py") == b"x = 1\n"
    assert read_inside(str(tree), "ptxdiff.toml") == b"targets = ['sm_90']\n"


@pytest.mark.parametrize("path", ["../secret", "pkg/../../secret", "/etc/passwd", "", "pkg//k.py", "./pkg/k.py"])
def test_a_path_that_leaves_the_tree_is_refused(tree, path):
    with pytest.raises(NotRegular):
        read_inside(str(tree), path)


def test_a_symlink_is_never_followed_as_the_file_or_on_the_way(tree):
    (tree / "ptxdiff.toml").unlink()
    (tree / "ptxdiff.toml").symlink_to(tree.parent / "secret")
    (tree / "inside.toml").symlink_to("pkg/k.py")   # even one that stays inside: git never follows one
    (tree / "up").symlink_to(tree.parent)
    for path in ("ptxdiff.toml", "inside.toml", "up/secret"):
        with pytest.raises(NotRegular):
            read_inside(str(tree), path)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tree):
    """Opening a FIFO for reading waits for a writer forever: `git diff` hung on one."""
    os.mkfifo(tree / "pyproject.toml")
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            read_inside(str(tree), "pyproject.toml")
        except BaseException as e:   # the outcome is checked below
            outcome.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(120)   # a guard against a hang, not a time limit: it returns at once or never
    assert not reader.is_alive(), "read_inside waited on the FIFO"
    assert len(outcome) == 1 and isinstance(outcome[0], NotRegular) and "not a regular file" in str(outcome[0])


def test_a_device_and_a_folder_are_refused(tree):
    (tree / "zero").symlink_to("/dev/zero")
    with pytest.raises(NotRegular):
        read_inside(str(tree), "zero")
    with pytest.raises(NotRegular):
        read_inside(str(tree), "pkg")


def test_a_file_over_the_bound_is_refused(tree):
    (tree / "big.jsonl").write_bytes(b"x" * 101)
    assert read_inside(str(tree), "big.jsonl", limit=101) == b"x" * 101
    with pytest.raises(NotRegular, match="over the"):
        read_inside(str(tree), "big.jsonl", limit=100)
