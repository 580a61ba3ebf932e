"""The worker pool: results as they come, a reason instead of a run where the caller says so,
and a timeout told apart from other errors (the engine stops a kernel's specs after one)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import cast

import pytest

from helpers import make_repo, scale_kernel
from ptxdiff.compile.pool import Pool
from ptxdiff.compile.protocol import CompileRequest, Failure, Op, Outcome, SpecsRequest
from ptxdiff.compile.tasks import Task
from ptxdiff.discovery.kernels import discover
from ptxdiff.git.repo import Repo
from ptxdiff.repo_config import Config
from ptxdiff.specs.plan import Plan


def spec_tasks(tmp_path, n):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    r = Repo(repo)
    side = r.side("HEAD")
    (kernel,) = discover(r.snapshot(side)).kernels.values()
    return repo, [Task(side, SpecsRequest(kernel, Config().for_kernel(kernel.id), 90, Plan()), f"specs {i}", i)
                  for i in range(n)]


@pytest.mark.integration
def test_skip_gives_the_reason_instead_of_running(tmp_path):
    repo, tasks = spec_tasks(tmp_path, 3)
    with Pool(str(repo), (), 1, 300) as pool:
        got = {r.task.tag: r for r in pool.run(tasks, lambda t: "no" if t.tag == 1 else None)}
    assert (got[1].outcome, got[1].error, got[1].answer) == (Outcome.ERROR, "no", None)
    assert got[0].outcome is got[2].outcome is Outcome.OK and got[0].answer.specs[0].label


@pytest.mark.integration
def test_a_timeout_is_its_own_kind(tmp_path):
    repo, tasks = spec_tasks(tmp_path, 1)
    with Pool(str(repo), (), 1, 300) as pool:
        (reply,) = list(pool.run(tasks))   # the worker is up: now only the task can be slow
        assert reply.outcome is Outcome.OK
        pool.timeout = 0   # a compile (ptxas included) takes far longer than no time at all
        kernel, spec = reply.task.request.kernel, reply.answer.specs[0]
        (timed,) = list(pool.run([Task(reply.task.side, CompileRequest(kernel, spec, 90), "compile", 0)]))
    assert timed.outcome is Outcome.TIMEOUT and "config key 'timeout'" in timed.error
    assert timed.answer is None


@pytest.mark.integration
def test_the_repository_timeout_cannot_raise_the_bound_past_the_user_maximum(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_MAX_TIMEOUT", raising=False)
    pool = Pool(str(tmp_path), (), 1, 1_000_000)
    assert pool.timeout == 600 and "capped by the default maximum" in pool.timed_out()
    monkeypatch.setenv("PTXDIFF_MAX_TIMEOUT", "30")
    assert Pool(str(tmp_path), (), 1, 300).timeout == 30
    assert Pool(str(tmp_path), (), 1, 10).timed_out() == "timed out after 10s (config key 'timeout')"


@pytest.mark.integration
def test_a_worker_near_its_cpu_rlimit_is_replaced_before_its_next_request(tmp_path, monkeypatch):
    from ptxdiff.sandbox.limits import Limits

    repo, tasks = spec_tasks(tmp_path, 3)
    starts = []
    original = Pool._launch

    def counting(self, slot, s):
        starts.append(s)
        return original(self, slot, s)

    monkeypatch.setattr(Pool, "_launch", counting)
    with Pool(str(repo), (), 1, 300) as pool:
        pool.limits = Limits(cpu_seconds=300)   # recycle_after(300) < 0: every answer is past it
        kinds = [r.outcome for r in pool.run(tasks)]
        assert "Landlock" in (pool.sandbox or "")
    assert kinds == ["ok"] * 3 and len(starts) == 3


def test_each_revision_s_specs_then_its_costliest_tasks_start_first_in_a_stable_order():
    from ptxdiff.compile.tasks import Pending

    request = cast(CompileRequest, SimpleNamespace(op=Op.COMPILE))   # never sent
    tasks = [Task("a", request, f"t{i}", i, cost=c) for i, c in enumerate([1.0, 5.0, 1.0, 9.0])]
    tasks.append(Task("b", request, "b", 9, cost=100.0))
    pending = Pending(tasks)
    assert [pending.take("a").tag for _ in range(4)] == [3, 1, 0, 2]
    assert pending.take("b").tag == 9 and not pending
    # tasks added while a run serves the queue take their place: a pair's specs before any compile
    pending.add(tasks[:2])
    pending.add([Task("a", cast(SpecsRequest, SimpleNamespace(op=Op.SPECS)), "specs", 7)])
    assert [pending.take("a").tag for _ in range(3)] == [7, 1, 0] and pending.added == 8


def test_out_of_memory_is_told_from_other_answers():
    from ptxdiff.compile.protocol import CompileAnswer, RunAnswer, SpecsAnswer, out_of_memory

    assert CompileAnswer({"error": "compile failed: x", "log": "... MemoryError: std::bad_alloc"},
                         Failure.COMPILE_ERROR).out_of_memory
    assert out_of_memory("MemoryError: Out of memory")   # a request that raised
    assert not CompileAnswer({"metrics": {}, "log": "MemoryError"}).out_of_memory   # a measurement is never a failure
    assert not SpecsAnswer(()).out_of_memory
    assert SpecsAnswer(error="MemoryError", failure=Failure.NO_SPECS).out_of_memory
    assert not RunAnswer({"result": "not-run", "reason": "MemoryError"}).out_of_memory   # a run says it itself


@pytest.mark.integration
def test_a_request_out_of_memory_in_a_used_worker_runs_again_alone_in_a_fresh_one(tmp_path, monkeypatch):
    """What a worker's earlier requests left must not decide a result (how many a worker serves
    depends on --jobs): the answer of a fresh worker does. Task 2 answers out of memory once (in a
    used worker), task 0 every time (in a fresh worker already: its answer stands)."""
    from ptxdiff.compile import pool as poolmod

    repo, tasks = spec_tasks(tmp_path, 3)
    starts, failures, running = [], {2: 1, 0: 99}, [None]
    original_launch, original_take = Pool._launch, poolmod.Pending.take

    def counting(self, slot, s):
        starts.append(s)
        return original_launch(self, slot, s)

    def take(self, side):   # one slot: the task it takes is the one that answers next
        task = original_take(self, side)
        running[0] = task.tag
        return task

    def out_of_memory(slot, task):   # as the worker would say it
        reply = original_answered(slot, task)
        if reply.outcome is not Outcome.OK or failures.get(running[0], 0) <= 0:
            return reply
        failures[running[0]] -= 1
        return dataclasses.replace(reply, out_of_memory=True)

    original_answered = Pool._answered
    monkeypatch.setattr(Pool, "_launch", counting)
    monkeypatch.setattr(poolmod.Pending, "take", take)
    monkeypatch.setattr(Pool, "_answered", staticmethod(out_of_memory))
    with Pool(str(repo), (), 1, 300) as pool:
        answered = [(r.task.tag, r.outcome, r.task.fresh) for r in pool.run(tasks)]
    assert answered == [(0, "ok", False), (1, "ok", False), (2, "ok", True)]   # task 2 ran again, alone
    assert len(starts) == 2   # the first worker, and the fresh one for task 2's second run


@pytest.mark.integration
def test_a_request_s_bound_is_its_worker_s_cpu_seconds_with_the_clock_as_a_backstop(tmp_path):
    """A loaded machine must not time out what a quiet one compiles: past LAZY_S the bound counts
    the CPU seconds of the worker's tree (those before the first read charged in full); a worker
    that sleeps still ends at WALL_FACTOR bounds; short bounds, or no /proc, are the clock's."""
    from types import SimpleNamespace

    from ptxdiff.compile.pool import WALL_FACTOR

    pool = Pool(str(tmp_path), (), 1, 10)
    task = Task("side", cast(CompileRequest, None), "t", None)
    slot = pool.slots[0]

    def fresh_request() -> object:
        slot.proc, slot.started, slot.cpu_base = SimpleNamespace(pid=42), 0.0, None
        return slot

    fresh_request()
    assert not pool._past_bound(slot, task, 2.0, {42: 100.0})          # the first read: 2 s charged
    assert not pool._past_bound(slot, task, 25.0, {42: 107.9})         # 25 s of clock, 9.9 s of CPU: loaded
    assert pool._past_bound(slot, task, 26.0, {42: 108.0})             # 10 s of CPU
    fresh_request()                                                     # asleep: no CPU
    assert not pool._past_bound(slot, task, 2.0, {42: 5.0})
    assert pool._past_bound(slot, task, WALL_FACTOR * 10, {42: 5.0})
    fresh_request()
    assert pool._past_bound(slot, task, 10.0, None)                     # no /proc: the clock
    fresh_request()
    assert pool._past_bound(slot, Task("side", task.request, "t", None, timeout=0.5), 0.5, {42: 0.0})
    slot.proc = None


def test_a_run_worker_is_sealed_where_it_runs_on_the_cpu(monkeypatch):
    """Issue 39: the run worker of an (old, new) pair is sealed like a compile worker unless it
    runs on the GPU or the user turned the sandbox off."""
    from ptxdiff.compile import pool as poolmod

    monkeypatch.setattr(poolmod.probe, "unavailable", lambda: None)
    pair = ("old", "new")
    monkeypatch.setattr(poolmod, "runs_on_gpu", lambda: False)
    assert Pool("/nowhere", (), 1, 60)._sandboxed(pair) and Pool("/nowhere", (), 1, 60)._sandboxed("old")
    assert not Pool("/nowhere", (), 1, 60, unsandboxed="--no-sandbox")._sandboxed(pair)
    monkeypatch.setattr(poolmod, "runs_on_gpu", lambda: True)
    assert not Pool("/nowhere", (), 1, 60)._sandboxed(pair) and Pool("/nowhere", (), 1, 60)._sandboxed("old")


GLOBAL_READ = '''\
import triton
import triton.language as tl

SCALE = 2.0   # a plain module global: triton 2.x read it as a constant, 3.x refuses it


def exists(value):   # a plain function: triton 2.x called it while compiling
    return value is not None


@triton.jit
def scaled(x_ptr, y_ptr, ACTIVATION: tl.constexpr = None, BLOCK: tl.constexpr = 16):
    offs = tl.arange(0, BLOCK)
    tile = offs[:, None] * BLOCK + offs[None, :]
    c = tl.dot(tl.load(x_ptr + tile), tl.load(y_ptr + tile), trans_b=True)   # triton 2.0's dot
    if exists(ACTIVATION):
        c = ACTIVATION(c)
    tl.store(x_ptr + tile, c * SCALE)
'''


@pytest.mark.integration
def test_a_side_standing_in_for_triton_2_reads_module_globals_as_constants(tmp_path):
    """The same kernel and spec: refused as triton 3.x refuses 2.0's `trans_b` and a plain global,
    compiled where the side stands in for a triton before 3.0 (Side.triton2), in a worker of its own,
    the repository's plain function interpreted where the kernel calls it (lucidrains)."""
    repo = make_repo(tmp_path, {"ops/k.py": GLOBAL_READ})
    r = Repo(repo)
    side = r.side("HEAD")
    (kernel,) = discover(r.snapshot(side)).kernels.values()
    old = dataclasses.replace(side, triton2=True)
    with Pool(str(repo), (), 1, 300) as pool:
        specs = {t.tag: reply for t, reply in ((reply.task, reply) for reply in pool.run(
            [Task(s, SpecsRequest(kernel, Config().for_kernel(kernel.id), 90, Plan()), "specs", i)
             for i, s in enumerate((side, old))]))}
        spec = specs[0].answer.specs[0]
        got = {reply.task.tag: reply for reply in pool.run(
            [Task(s, CompileRequest(kernel, spec, 90), "compile", i) for i, s in enumerate((side, old))])}
    refused, read = got[0].answer.result, got[1].answer.result
    assert "unexpected keyword argument 'trans_b'" in (refused.get("error") or "")
    assert not read.get("error") and read.get("ptx")


@pytest.mark.integration
def test_the_workers_of_one_pass_start_side_by_side_and_no_more_than_its_tasks(tmp_path, monkeypatch):
    """Each worker's start (forking, the sandbox, its first word) took a third of a second or more,
    one after another: 16 workers held the first answer back 5 s. All are launched, then each one's
    first word is awaited; a pass with fewer tasks than slots starts no idle worker."""
    repo, tasks = spec_tasks(tmp_path, 3)
    calls: list[str] = []
    launch, ready = Pool._launch, Pool._ready

    def launching(self, slot, side):
        calls.append("launch")
        return launch(self, slot, side)

    def readying(self, slot):
        calls.append("ready")
        return ready(self, slot)
    monkeypatch.setattr(Pool, "_launch", launching)
    monkeypatch.setattr(Pool, "_ready", readying)
    with Pool(str(repo), (), 4, 300) as pool:
        kinds = sorted(r.outcome for r in pool.run(tasks))
    assert kinds == ["ok"] * 3 and calls == ["launch"] * 3 + ["ready"] * 3
