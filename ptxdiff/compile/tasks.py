"""The queue both executors serve (the local pool, pool.py, and Ray's): a task is one request
for one revision, a reply how it ended, and `Pending` the order they start in. Kept apart from the
pool so that a warm run, which starts no worker, does not import what starts one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ptxdiff.compile.protocol import Answer, Op, Outcome, Request

Tag = TypeVar("Tag")


@dataclass
class Task(Generic[Tag]):
    side: object             # the git.Side this request runs against (an (old, new) pair: a run)
    request: Request
    label: str               # for progress lines
    tag: Tag                 # caller's bookkeeping: what the reply is for
    timeout: float | None = None   # a tighter bound than the pool's for this task
    cost: float = 0.0        # its estimated cost (specs/cost.py): the costliest of a revision start first
    fresh: bool = False      # run it in a worker that has served nothing else (a retry, see `Pool.run`)

    @property
    def op(self) -> Op:
        return self.request.op


@dataclass(frozen=True)
class Reply(Generic[Tag]):
    """How a task ended: the worker's answer (`Outcome.OK`), else why there is none (`error`)."""

    task: Task[Tag]
    outcome: Outcome
    answer: Answer | None = None
    error: str | None = None
    out_of_memory: bool = False   # the request ran out of memory (the worker says; the pool retries it alone)


class Pending:
    """Tasks not yet started, by revision: each revision's specs first (they decide what compiles),
    then its costliest compiles (`Task.cost`; equal costs in the order given), so a long compile
    does not start last and decide the wall time. Tasks may be added while a run serves it (a
    pair's compiles the moment its specs are in, its replans the moment its compiles are). A
    worker keeps its revision while that one has work (its worker stays warm); a free one takes
    a revision no other worker serves (so two revisions compile in parallel), else the one with
    the most work left. Both executors schedule so."""

    def __init__(self, tasks: Iterable[Task[Any]] = ()):
        self.by_side: dict[object, list[Task[Any]]] = {}
        self.added = 0   # tasks ever added: the progress lines' total
        self.add(tasks)

    def add(self, tasks: Iterable[Task[Any]]) -> None:
        for t in tasks:
            bisect.insort(self.by_side.setdefault(t.side, []), t, key=_order)
            self.added += 1

    def __bool__(self) -> bool:
        return bool(self.by_side)

    def __len__(self) -> int:
        return sum(len(q) for q in self.by_side.values())

    def side_for(self, current: object, served: set[Any], taken: Mapping[object, int] | None = None) -> object:
        """The revision a worker that served `current` takes next (`served`: the others' ones;
        `taken`: tasks of a revision already promised to other workers, not theirs to take)."""
        left = {c: len(q) - (taken or {}).get(c, 0) for c, q in self.by_side.items()}
        open_sides = [c for c, n in left.items() if n > 0] or list(self.by_side)
        if current in open_sides:
            return current
        return max(open_sides, key=lambda c: (c not in served, left[c]))

    def next_of(self, side: object) -> Task[Any]:
        return self.by_side[side][0]

    def again(self, task: Task[Any]) -> None:
        """A task to run once more, before the rest of its revision."""
        self.by_side.setdefault(task.side, []).insert(0, task)

    def take(self, side: object) -> Task[Any]:
        task = self.by_side[side].pop(0)
        if not self.by_side[side]:
            del self.by_side[side]
        return task

    def drop(self, side: object) -> list[Task[Any]]:
        """Every task of a revision that cannot be served."""
        return self.by_side.pop(side)


def _order(task: Task[Any]) -> tuple[bool, float]:
    return task.op is not Op.SPECS, -task.cost


def pending_of(tasks: list[Task[Tag]] | Pending) -> Pending:
    """What an executor's `run` serves: the caller's Pending (which it may add to while the run
    goes), or a list's tasks."""
    return tasks if isinstance(tasks, Pending) else Pending(tasks)
