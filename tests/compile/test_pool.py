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
    return repo, [Task(side, "specs", (kernel, Config().for_kernel(kernel.id), 90, Plan()), f"specs {i}", i) for i in range(n)]


def test_skip_gives_the_reason_instead_of_running(tmp_path):
    repo, tasks = spec_tasks(tmp_path, 3)
    with Pool(str(repo), (), 1, 300) as pool:
        got = {t.tag: (kind, payload) for t, kind, payload in pool.run(tasks, lambda t: "no" if t.tag == 1 else None)}
    assert got[1] == ("error", "no")
    assert got[0][0] == got[2][0] == "ok" and got[0][1] and got[0][1][0].label


def test_a_timeout_is_its_own_kind(tmp_path):
    repo, tasks = spec_tasks(tmp_path, 1)
    with Pool(str(repo), (), 1, 300) as pool:
        ((task, kind, specs),) = list(pool.run(tasks))   # the worker is up: now only the task can be slow
        assert kind == "ok"
        pool.timeout = 0   # a compile (ptxas included) takes far longer than no time at all
        kernel = task.args[0]
        ((_, kind, payload),) = list(pool.run([Task(task.side, "compile", (kernel, specs[0], 90), "compile", 0)]))
    assert kind == "timeout" and "config key 'timeout'" in payload


def test_the_repository_timeout_cannot_raise_the_bound_past_the_user_maximum(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_MAX_TIMEOUT", raising=False)
    pool = Pool(str(tmp_path), (), 1, 1_000_000)
    assert pool.timeout == 600 and "capped by the default maximum" in pool.timed_out()
    monkeypatch.setenv("PTXDIFF_MAX_TIMEOUT", "30")
    assert Pool(str(tmp_path), (), 1, 300).timeout == 30
    assert Pool(str(tmp_path), (), 1, 10).timed_out() == "timed out after 10s (config key 'timeout')"


def test_a_worker_near_its_cpu_rlimit_is_replaced_before_its_next_request(tmp_path, monkeypatch):
    from ptxdiff.sandbox.limits import Limits

    repo, tasks = spec_tasks(tmp_path, 3)
    starts = []
    original = Pool._start

    def counting(self, slot, s):
        starts.append(s)
        return original(self, slot, s)

    monkeypatch.setattr(Pool, "_start", counting)
    with Pool(str(repo), (), 1, 300) as pool:
        pool.limits = Limits(cpu_seconds=300)   # recycle_after(300) < 0: every answer is past it
        kinds = [kind for _, kind, _ in pool.run(tasks)]
        assert "Landlock" in (pool.sandbox or "")
    assert kinds == ["ok"] * 3 and len(starts) == 3
