"""The worker pool: results as they come, a reason instead of a run where the caller says so,
and a timeout told apart from other errors (the engine stops a kernel's specs after one)."""

from __future__ import annotations

import pytest

from helpers import make_repo, scale_kernel
from ptxdiff.compile.pool import Pool, Task
from ptxdiff.config import Config
from ptxdiff.discovery.kernels import discover
from ptxdiff.git.repo import Repo
from ptxdiff.specs.plan import Plan

pytestmark = pytest.mark.integration


def spec_tasks(tmp_path, n):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    r = Repo(repo)
    side = r.side("HEAD")
    (kernel,) = discover(r.snapshot(side)).kernels.values()
    return repo, [Task(side, "specs", (kernel, Config(), 90, Plan()), f"specs {i}", i) for i in range(n)]


def test_skip_gives_the_reason_instead_of_running(tmp_path):
    repo, tasks = spec_tasks(tmp_path, 3)
    with Pool(str(repo), (), 1, 300) as pool:
        got = {t.tag: (kind, payload) for t, kind, payload in pool.run(tasks, lambda t: "no" if t.tag == 1 else None)}
    assert got[1] == ("error", "no")
    assert got[0][0] == got[2][0] == "ok" and got[0][1] and got[0][1][0].label


def test_a_timeout_is_its_own_kind(tmp_path):
    repo, tasks = spec_tasks(tmp_path, 1)
    with Pool(str(repo), (), 1, 300) as pool:
        assert [kind for _, kind, _ in pool.run(tasks)] == ["ok"]   # the worker is up: now only the task can be slow
        pool.timeout = 0
        ((_, kind, payload),) = list(pool.run(tasks))
    assert kind == "timeout" and "config key 'timeout'" in payload
