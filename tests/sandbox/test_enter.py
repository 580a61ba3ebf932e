"""A worker never goes on half sandboxed: what it cannot vouch for, it refuses."""

from __future__ import annotations

import threading
import time

import pytest

from ptxdiff.errors import SandboxError
from ptxdiff.sandbox import enter
from ptxdiff.sandbox.limits import Limits
from ptxdiff.sandbox.policy import Policy


def _refusal(fn) -> str:
    try:
        fn()
    except SandboxError as e:
        return str(e)
    return "went on"


def test_a_worker_not_started_isolated_refuses(tmp_path, in_child):
    # pytest runs without -I and with the whole environment: as a forkserver started unclean would
    assert "python -I" in in_child(lambda: _refusal(lambda: enter.begin(Policy(str(tmp_path), Limits()))))


def test_a_worker_with_a_second_thread_refuses_to_seal(tmp_path, in_child):
    def attempt():
        started = enter.Started("turned off")
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
        return _refusal(lambda: enter.seal(Policy(str(tmp_path), Limits()), started, []))

    assert "threads" in in_child(attempt)


@pytest.mark.parametrize("namespaces", [True, False])
def test_what_holds_is_said(tmp_path, in_child, namespaces):
    def attempt():
        started = enter.begin(Policy(str(tmp_path), Limits(), namespaces), clean=False)
        return enter.seal(Policy(str(tmp_path), Limits(), namespaces), started, []).describe()

    said = in_child(attempt)
    assert "Landlock ABI" in said and "seccomp" in said and "no capabilities" in said
    assert ("user+net+pid namespaces" in said) == namespaces
