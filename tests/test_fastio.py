"""fastio.read_inside: a work-tree file is read by the rules of a repository file, whatever an
attacker committed or left there (symlinks out, a FIFO, a device, `..`, a huge file)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from ptxdiff.fastio import NotRegular, read_inside


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
