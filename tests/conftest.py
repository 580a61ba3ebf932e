"""What every test gets: its own HOME, global git config and compile cache (helpers.isolate),
so no test sees the user's git config, another test's cache or a CI token; and the GPU markers
decided once per run."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from helpers import isolate


@pytest.fixture(autouse=True)
def cache(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path | None:
    """The per-test environment; returns the test's cache folder. A module marked `module_env`
    shares one environment among its tests (its module fixture isolates once, for work that is
    done once and read by every test)."""
    if request.node.get_closest_marker("module_env"):
        return None
    return isolate(tmp_path, monkeypatch)


@functools.cache
def _gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("gpu") and not _gpu():
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU"))
        if item.get_closest_marker("no_gpu") and _gpu():
            item.add_marker(pytest.mark.skip(reason="this machine has a GPU"))
