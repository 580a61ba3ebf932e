"""Where compile jobs run: this machine's process pool (the default) or a Ray cluster.

The engine hands its jobs (`tasks.Task`s) to an executor and reads results back; it does not care
where they ran. Every executor has the Pool's interface: `run(tasks, skip)` yields a
`tasks.Reply` per task (protocol.py: its outcome, answer or error) in any order, `tasks` a list or
a `tasks.Pending` the engine adds to while it reads the replies; `timeout` is the bound of one
request, `bound_of(task)` the bound of that task (`Task.timeout` may make it tighter), and it
is a context manager. Ray is imported only by ray_executor.py, and only when asked for; the
local pool (its workers, the sandbox) only when one opens, so a warm run imports neither.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ptxdiff.compile.tasks import Pending, Reply, Tag, Task
from ptxdiff.errors import UsageError

LOCAL = "local"
RAY = "ray"
RAY_CLIENT = "ray://"


class Executor(Protocol):
    timeout: float

    def bound_of(self, task: Task[Any]) -> float: ...

    def run(self, tasks: list[Task[Tag]] | Pending, skip: Callable[[Task[Tag]], str | None] | None = None
            ) -> Iterator[Reply[Tag]]: ...

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...


def default_jobs() -> int:
    """The cores this process may use: `--jobs` when it is not given."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def parse(text: str) -> str:
    """`--executor`'s value: local, ray (a local Ray instance, or the cluster RAY_ADDRESS names)
    or ray://HOST:PORT (a cluster's Ray client address)."""
    value = text.strip()
    if value in (LOCAL, RAY) or (value.startswith(RAY_CLIENT) and len(value) > len(RAY_CLIENT)):
        return value
    raise UsageError(f"--executor {text!r}: expected local, ray or ray://HOST:PORT")


def open_executor(spec: str, repo_dir: str, roots: tuple[str, ...], jobs: int, timeout: float,
                  progress: Callable[[str], None] | None = None, imports: bool = False,
                  unsandboxed: str | None = None) -> Executor:
    """The executor `spec` names (see `parse`), ready to run tasks against the repository;
    `unsandboxed` is the user's setting that turned the compile sandbox off (None: sandboxed)."""
    if spec == LOCAL:
        from ptxdiff.compile.pool import Pool
        return Pool(repo_dir, roots, jobs, timeout, progress, imports=imports, unsandboxed=unsandboxed)
    from ptxdiff.compile.ray_executor import RayExecutor
    return RayExecutor(spec, repo_dir, roots, jobs, timeout, progress, imports=imports, unsandboxed=unsandboxed)
