"""Measuring (compare/measure.py) with workers stood in for: each side's specs, then its
compiles, go to that side's workers; a specialisation two needs compile alike compiles once; a
kernel whose spec times out compiles none of the rest; and what is a fact is keyed and cached,
so a second engine on the same cache asks no worker."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import scale_kernel
from ptxdiff.compare.measure import Measurer
from ptxdiff.compare.replan import Need
from ptxdiff.compile import executor
from ptxdiff.compile.protocol import CompileAnswer, Failure, Op, Outcome, SpecsAnswer
from ptxdiff.compile.tasks import Pending, Reply, Task, pending_of
from ptxdiff.discovery.kernels import Kernel, discover
from ptxdiff.git.values import Side
from ptxdiff.repo_config import Config, KernelConfig
from ptxdiff.source.modules import FileSet
from ptxdiff.specs.plan import Choice, Plan
from ptxdiff.specs.resolve import Spec

TARGETS = list(Config().targets)
CC = TARGETS[0]
OLD, NEW = Side("HEAD", "c0ffee" * 6 + "c0ff"), Side("work tree", None)
SPECS = [Spec((("x_ptr", "*fp32"), ("out_ptr", "*fp32"), ("n", "i32"), ("BLOCK", "constexpr")), (("BLOCK", block),), 4, 3)
         for block in (128, 256)]
FAILED = {"error": "compile failed: stood in for"}   # a compile error: a fact, cached
ANSWERS = {Op.SPECS: SpecsAnswer(tuple(SPECS)), Op.COMPILE: CompileAnswer(FAILED, Failure.COMPILE_ERROR)}


class Workers:
    """The executor measuring opens: one worker that serves the queue as the pool does (tasks the
    engine adds while it reads are served too), answers each task with `answer` and records
    every task it served."""

    def __init__(self, answer: Callable[[Task[object]], Reply[object]]) -> None:
        self.answer = answer
        self.calls: list[list] = []   # the tasks served, one list per `run`
        self.timeout = 60.0

    def run(self, tasks: list[Task[object]] | Pending, skip: Callable[..., str | None] | None = None
            ) -> Iterator[Reply[object]]:
        pending = pending_of(tasks)
        served: list[Task[object]] = []
        self.calls.append(served)
        while pending:
            task = pending.take(next(iter(pending.by_side)))
            served.append(task)
            reason = skip(task) if skip else None
            yield Reply(task, Outcome.ERROR, error=reason) if reason else self.answer(task)

    def bound_of(self, task: object) -> float:
        return self.timeout


def compiles_fail(task: Task[object]) -> Reply[object]:
    return Reply(task, Outcome.OK, ANSWERS[task.op])


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch) -> list[Workers]:
    """Every executor opened, in order (none: everything came from the cache)."""
    opened: list[Workers] = []

    def open_executor(*args: object, **kwargs: object) -> contextlib.AbstractContextManager[Workers]:
        opened.append(Workers(opened[0].answer if opened else compiles_fail))
        return contextlib.nullcontext(opened[-1])
    monkeypatch.setattr(executor, "open_executor", open_executor)
    return opened


def kernel(expr: str = "x * 2.0", path: str = "ops/k.py") -> Kernel:
    return discover(FileSet({path: scale_kernel(expr).encode()})).kernels[f"{path}::scale_kernel"]


def measurer(tmp_path: Path) -> Measurer:
    repo = SimpleNamespace(git_dir=str(tmp_path / ".git"), workdir=str(tmp_path))
    return Measurer(repo, jobs=1, targets=None, progress=None, use_cache=True, imports=False,  # type: ignore[arg-type]
                    executor="local")


def need(side: Side, k: Kernel, pair: int = 0, plan: Plan | None = None) -> Need:
    return Need(side, k, plan or Plan(), KernelConfig(), pair)


def test_each_sides_specs_then_its_compiles_go_to_that_sides_workers(tmp_path, workers):
    old, new = need(OLD, kernel("x * 2.0")), need(NEW, kernel("x * 3.0"))
    assert measurer(tmp_path).measure([old, new], Config(), TARGETS) == 4
    (served,), = [w.calls for w in workers]
    specs, compiles = [t for t in served if t.op is Op.SPECS], [t for t in served if t.op is Op.COMPILE]
    assert served == specs + compiles   # one session: the pair's specs, then its compiles
    assert [(t.op, t.side) for t in specs] == [("specs", OLD), ("specs", NEW)]
    assert [(t.op, t.side) for t in compiles] == [("compile", OLD)] * 2 + [("compile", NEW)] * 2
    # costliest first (BLOCK=256 before 128), as the pool's queue orders a revision's compiles
    assert [t.label for t in compiles[:2]] == [f"scale_kernel sm_{CC} {s.label}" for s in reversed(SPECS)]
    for n in (old, new):
        assert [(r.key, r.error) for r in n.results[CC]] == [(s.key, FAILED["error"]) for s in SPECS]


def test_a_specialisation_two_needs_build_alike_compiles_once(tmp_path, workers):
    same = kernel()
    old, new = need(OLD, same), need(NEW, same)   # a launch-only change: one closure on both sides
    assert measurer(tmp_path).measure([old, new], Config(), TARGETS) == 2
    assert [t.side for t in workers[0].calls[0] if t.op is Op.COMPILE] == [OLD, OLD]
    assert old.results[CC] == new.results[CC] and len(new.results[CC]) == 2


def test_a_spec_that_times_out_withholds_the_kernels_others(tmp_path, workers):
    def first_times_out(task: Task[object]) -> Reply[object]:
        if task.op is Op.COMPILE and "BLOCK=128" in task.label:
            return Reply(task, Outcome.TIMEOUT, error="timed out")
        return compiles_fail(task)
    workers.append(Workers(first_times_out))   # the first executor opened answers so
    n = need(NEW, kernel())
    measurer(tmp_path).measure([n], Config(), TARGETS)
    timed, withheld = n.results[CC]
    assert (timed.error, timed.failure, timed.bound) == ("timed out", Failure.TIMEOUT, 60.0)
    assert withheld.error == "not compiled: another spec of scale_kernel timed out (config key 'timeout')"
    assert (withheld.failure, withheld.bound) == (Failure.TIMEOUT, 60.0)


def test_facts_are_keyed_and_cached_so_a_second_engine_asks_no_worker(tmp_path, workers):
    k = kernel()
    first, again = measurer(tmp_path), measurer(tmp_path)
    cold, warm = need(NEW, k), need(NEW, k)
    first.measure([cold], Config(), TARGETS)
    assert len(workers) == 1 and first.came(CC, cold) == "compiled"
    assert again.measure([warm], Config(), TARGETS) == 0
    assert len(workers) == 1 and again.came(CC, warm) == "local"   # no executor opened
    assert warm.keys == cold.keys and warm.results == cold.results


def test_the_key_changes_with_the_plan_the_source_and_the_target(tmp_path, workers):
    def key(n: Need, targets: list[int]) -> str:
        measurer(tmp_path).measure([n], Config(), targets)
        return n.keys[targets[0]]
    base = key(need(NEW, kernel()), TARGETS)
    assert key(need(NEW, kernel()), TARGETS) == base
    assert key(need(OLD, kernel()), TARGETS) == base     # which side asked is no part of it
    guessed = Plan(constexprs=(Choice("BLOCK", (64,), "guessed"),))
    others = {key(need(NEW, kernel(), plan=guessed), TARGETS), key(need(NEW, kernel("x * 3.0")), TARGETS),
              key(need(NEW, kernel()), [80])}
    assert base not in others and len(others) == 3


def test_a_build_not_started_because_its_need_timed_out_is_compiled_for_the_needs_that_follow_it(tmp_path, workers):
    """The new side leads both builds (its specs answered first); its costlier spec times out, so its
    other build is not started: that skip is no result of the build, and the old side, which
    follows it there, gets the build compiled for it, as it would at any --jobs and reply order."""
    def answer(task: Task[object]) -> Reply[object]:
        if task.op is Op.SPECS:
            return Reply(task, Outcome.OK, SpecsAnswer(tuple(SPECS) if task.side == NEW else (SPECS[0],)))
        if "BLOCK=256" in task.label:
            return Reply(task, Outcome.TIMEOUT, error="timed out")
        return compiles_fail(task)
    workers.append(Workers(answer))
    same = kernel()
    new, old = need(NEW, same), need(OLD, same)
    measurer(tmp_path).measure([new, old], Config(), TARGETS)
    assert [r.failure for r in new.results[CC]] == [Failure.TIMEOUT, Failure.TIMEOUT]   # one timed out, one withheld
    assert [(r.error, r.failure) for r in old.results[CC]] == [(FAILED["error"], Failure.COMPILE_ERROR)]
    served = [t.label.split()[2] for t in workers[-1].calls[0] if t.op is Op.COMPILE]
    assert served == ["BLOCK=256", "BLOCK=128", "BLOCK=128"]   # the skip, then the old side's own
