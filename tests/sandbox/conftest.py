"""Running a function in a forked child of the test process, for tests that take rights away
for good (Landlock, seccomp, rlimits): the test process itself keeps all of them."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable

import pytest


def _in_child(fn: Callable[[], object]) -> object:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        os.close(read)
        try:
            result = fn()
        except BaseException as e:
            result = e
        try:
            data = pickle.dumps(result)
        except Exception as e:
            data = pickle.dumps(RuntimeError(f"unpicklable result: {e}"))
        os.write(write, data)
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return pickle.loads(b"".join(chunks))


@pytest.fixture
def in_child() -> Callable[[Callable[[], object]], object]:
    return _in_child
