"""`ptxdiff install --attributes commit` edits the work tree's `.gitattributes`, a repository
file: one committed as a symlink out of the repository, or a FIFO there, is refused (exit 2),
never read, waited on or written through."""

from __future__ import annotations

import os

import pytest

from helpers import git, make_repo, run_main, scale_kernel

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_gitattributes_that_is_no_regular_file_is_refused(tmp_path, capsys, kind):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    outside = tmp_path / "bashrc"
    outside.write_text("export PATH=/usr/bin\n")
    if kind == "symlink":
        (repo / ".gitattributes").symlink_to(outside)
    else:
        os.mkfifo(repo / ".gitattributes")
    rc, _, err = run_main(["install", "-C", str(repo), "--attributes", "commit"], capsys)
    assert rc == 2 and "not a regular file" in err and "not reading or writing through it" in err
    assert outside.read_text() == "export PATH=/usr/bin\n"
    assert git(repo, "config", "--get", "diff.ptxdiff.command", check=False).returncode == 1   # nothing half-done


def test_a_plain_gitattributes_gets_the_line(tmp_path, capsys):
    """The control: a regular `.gitattributes` is read and the driver's line added."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), ".gitattributes": "*.bin binary\n"})
    rc, _, err = run_main(["install", "-C", str(repo), "--attributes", "commit"], capsys)
    assert rc == 0, err
    text = (repo / ".gitattributes").read_text()
    assert text.startswith("*.bin binary\n") and "diff=ptxdiff" in text
