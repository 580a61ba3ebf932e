"""The tests' own isolation: a PTXDIFF_ variable of the shell that runs the suite never reaches a test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import isolate


def test_isolate_scrubs_every_ptxdiff_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTXDIFF_SANDBOX", "off")             # not in any list: scrubbed by its prefix
    monkeypatch.setenv("PTXDIFF_SOME_FUTURE_SETTING", "1")
    monkeypatch.setenv("GIT_DIR", str(tmp_path))
    cache = isolate(tmp_path, monkeypatch)
    assert "PTXDIFF_SANDBOX" not in os.environ and "PTXDIFF_SOME_FUTURE_SETTING" not in os.environ
    assert "GIT_DIR" not in os.environ
    assert os.environ["PTXDIFF_CACHE_DIR"] == str(cache)      # what isolate sets itself stays
