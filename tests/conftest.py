"""What every test gets: its own HOME, global git config and compile cache (helpers.isolate),
so no test sees the user's git config, another test's cache or a CI token; a test not marked
`integration` starts no process (the fast lane); and the GPU markers decided once per run."""

from __future__ import annotations

import functools
import multiprocessing.process
import multiprocessing.util
import os
import subprocess
from collections.abc import Callable, Iterator
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
    found = isolate(tmp_path, monkeypatch)
    if request.node.get_closest_marker("network"):   # a test that installs a toolchain from the package index
        monkeypatch.delenv("PIP_NO_INDEX")
    return found


# what starts a process: a program (subprocess, git, ptxdiff, ptxas, chromium) or a multiprocessing
# worker; a bare os.fork is left alone (the sandbox's and the evaluator's tests fork a child to stay safe)
_STARTS = [(os, "posix_spawn"), (os, "posix_spawnp"), (os, "system"), (subprocess.Popen, "__init__"),
           (multiprocessing.process.BaseProcess, "start"), (multiprocessing.util, "spawnv_passfds")]


@pytest.fixture(autouse=True)
def no_process(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fast lane (`-m "not integration"`) stays fast: a test not marked `integration` fails
    if it starts a process. Said after the test, so code that catches a failed start cannot hide it."""
    if request.node.get_closest_marker("integration"):
        yield
        return
    started: list[str] = []

    def watch(where: object, name: str) -> None:
        real: Callable = getattr(where, name)

        def call(*args: object, **kwargs: object) -> object:
            started.append(repr(args[1] if where is subprocess.Popen else args[0]) if args else name)
            return real(*args, **kwargs)
        monkeypatch.setattr(where, name, call)

    for where, name in _STARTS:
        if hasattr(where, name):
            watch(where, name)
    yield
    if started:
        pytest.fail(f"started a process ({started[0][:200]}): mark the test integration")


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
