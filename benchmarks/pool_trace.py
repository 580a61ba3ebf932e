"""Where the wall time of a cold run goes (issue 40): each session of the compile pool (`Pool.run`:
a measure's specs, compiles and replans, fed as answers arrive; an ELSEWHERE target or a dynamic
check gets its own) and each task's start and duration, as JSON lines, for any ptxdiff command.

    TRACE_OUT=trace.jsonl python benchmarks/pool_trace.py show HEAD --format json --jobs 16 -q

A round (session) starts when the one before has ended, so the longest chain of tasks of one pair
in it adds to the wall time; the trace shows which tasks those are. Only the process that runs the command writes it
(the pool's workers re-import this file under another name).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def traced(out: Any, start: float) -> None:
    """Wrap the pool's scheduling so each task's start and each reply's arrival are written."""
    from ptxdiff.compile import pool, tasks

    take: Callable[..., Any] = tasks.Pending.take
    run: Callable[..., Iterator[Any]] = pool.Pool.run
    started: dict[int, float] = {}
    rounds = [0]

    def timed_take(self: Any, side: object) -> Any:
        task = take(self, side)
        started[id(task)] = time.monotonic()
        return task

    def timed_run(self: Any, queue: Any, skip: Any = None) -> Iterator[Any]:
        rounds[0] += 1
        n = rounds[0]
        queued = [t for ts in queue.by_side.values() for t in ts] if isinstance(queue, tasks.Pending) else queue
        out.write(json.dumps({"round": n, "start": round(time.monotonic() - start, 2), "tasks": len(queued),
                              "ops": sorted({str(t.op) for t in queued})}) + "\n")   # a session's first tasks
        for reply in run(self, queue, skip):
            now = time.monotonic()
            began = started.get(id(reply.task), now)
            out.write(json.dumps({"round": n, "op": str(reply.task.op), "label": reply.task.label,
                                  "cost": reply.task.cost, "outcome": str(reply.outcome),
                                  "start": round(began - start, 2), "seconds": round(now - began, 2)}) + "\n")
            yield reply
        out.write(json.dumps({"round_end": n, "at": round(time.monotonic() - start, 2)}) + "\n")

    tasks.Pending.take = timed_take   # type: ignore[method-assign]
    pool.Pool.run = timed_run        # type: ignore[method-assign]


if __name__ == "__main__":
    began = time.monotonic()
    with open(os.environ["TRACE_OUT"], "w", buffering=1, encoding="utf-8") as log:
        traced(log, began)
        from ptxdiff.cli.main import main
        code = main()
        log.write(json.dumps({"end": round(time.monotonic() - began, 2), "exit": code}) + "\n")
    sys.exit(code)
