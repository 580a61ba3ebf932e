"""One pure function over many items in forked children: discovery's per-kernel reading (issue 40).

Before the first compile, discovery reads each kernel's body some forty ways (parameters, hints,
guards, launch sites): pure AST work over trees the process has already parsed, serial, and at
16 cores most of the wall time before the pool had anything to do. A forked child inherits the
parsed trees and the files read so far, computes its share and sends the records back pickled;
the parent puts them in the items' order, so the result is the same list at any `jobs`.

The children run no repository code (nothing of discovery does) and leave through `os._exit`:
no atexit handler of the parent (its workers' folders, its cache's locks) runs in them. Where
forking is not safe (another thread is running: a lock it holds would stay held in the child)
or not worth it, the items are mapped in the process, as a child that fails is.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

PER_CHILD = 8   # fewer items a child than this: the fork and the pickles cost more than they save


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _child(fn: Callable[[T], R], items: Sequence[T], share: range, fd: int) -> None:
    """In the child: its share's results, pickled to `fd`, then `os._exit` (0 when all were sent)."""
    code = 1
    try:
        data = pickle.dumps([fn(items[i]) for i in share], protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        code = 0
    finally:
        os._exit(code)


def fork_map(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> list[R]:
    """`[fn(x) for x in items]`, computed in up to `jobs` forked children when there are enough
    items and no other thread runs; the same list either way. A child's share that did not come
    back whole (it raised, it was killed) is computed in the process, so its error is raised here."""
    children = min(jobs, len(items) // PER_CHILD)
    if children < 2 or not hasattr(os, "fork") or threading.active_count() > 1:
        return [fn(x) for x in items]
    shares = [range(k, len(items), children) for k in range(children)]
    running: list[tuple[int, int, range]] = []
    reaped: set[int] = set()
    try:
        for share in shares:
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                _child(fn, items, share, write)
            os.close(write)
            running.append((pid, read, share))
        out: list[R | None] = [None] * len(items)
        done = [False] * len(items)
        for pid, read, share in running:
            data = _read_all(read)
            _, status = os.waitpid(pid, 0)
            reaped.add(pid)
            if os.waitstatus_to_exitcode(status) == 0:
                for i, result in zip(share, pickle.loads(data)):
                    out[i], done[i] = result, True
        for i, x in enumerate(items):
            if not done[i]:
                out[i] = fn(x)
        return out   # type: ignore[return-value]   # every slot filled above
    finally:
        for pid, read, _ in running:
            os.close(read)
            if pid not in reaped:   # interrupted while reading: the child is ours to end
                os.kill(pid, 9)
                os.waitpid(pid, 0)
