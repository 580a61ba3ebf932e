"""`ptxdiff record` reads the recording it merges into by the rules of a repository file: a
committed `.ptxdiff/launches.jsonl` that is a symlink out or a FIFO is refused, never waited on,
read or written through."""

from __future__ import annotations

import os

import pytest

from ptxdiff.errors import UsageError
from ptxdiff.record import command as record
from ptxdiff.record import launches as recorded

LAUNCH = {"kernel": "ops/k.py::k", "params": ["x_ptr", "BLOCK"], "signature": {"x_ptr": "*fp32"},
          "constexprs": {"BLOCK": 32}, "divisible_by_16": ["x_ptr"], "num_warps": 4, "num_stages": 3, "options": {},
          "autotune": None, "via": "interpreter", "count": 1}


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_recording_that_is_no_regular_file_is_refused(tmp_path, kind):
    repo = tmp_path / "repo"
    (repo / ".ptxdiff").mkdir(parents=True)
    path = repo / recorded.DEFAULT_PATH
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("")
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(outside)
    rec = recorded.Recording((recorded.from_json(LAUNCH, "t"),), {})
    with pytest.raises(UsageError, match="not writing through it"):
        record.save(path, rec, 8, str(repo))
    assert outside.read_text() == "" and (kind != "symlink" or path.is_symlink())


def test_a_plain_recording_is_merged(tmp_path):
    """The control: a regular file is read and rewritten."""
    repo = tmp_path / "repo"
    (repo / ".ptxdiff").mkdir(parents=True)
    path = repo / recorded.DEFAULT_PATH
    path.write_text("")
    record.save(path, recorded.Recording((recorded.from_json(LAUNCH, "t"),), {}), 8, str(repo))
    assert "ops/k.py::k" in path.read_text()
