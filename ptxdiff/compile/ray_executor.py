"""Compile jobs as Ray tasks, for history work on a cluster (`--executor ray[://ADDRESS]`).

Each job (a tasks.Task: one kernel's specs, or one spec's compile) is one Ray task, a call on one
of the executor's actors (one per CPU of the cluster), and it runs in the same sandboxed compile
worker as on this machine: the actor hands it to a pool.Pool of one slot on its node, so the
trust boundary is the same everywhere. Actors rather than plain tasks, because a worker is bound
to one revision: an actor is sent the jobs of the revision it serves while that has work, as a
local pool's slot is, so its worker and the kernels it built stay warm (plain tasks land on any
Ray worker and restart workers; on Liger-Kernel they took 1.8x the local pool's time).

Nodes need ptxdiff and triton (the versions of this machine: a node that differs refuses, so
no result lands under a cache key it does not match), not the repository. A side that compiles
with another triton (a toolchain, toolchains.py) compiles on the nodes too: a node installs that
toolchain on demand into its own toolchain folder, as this machine would (its actors one at a
time: the first installs, the others find it), and its worker runs that toolchain's interpreter
in the same sandbox. A node that cannot install it, or whose toolchain folder holds another
triton than the side's version (the driver keys the side's results by its own toolchain of that
version), stops the run with one line. The driver ships each
revision's git objects: its commit, its trees and its Python files, which is everything a
worker reads of a revision. Not only the kernel's `paths`: the worker's module index answers
imports over the whole revision and the restricted evaluator may read modules beyond the
effective source (a name it follows, a star import), so shipping less could change a result.
A revision's Python files are small (Liger-Kernel: 380 files, 4.9 MB) and each object travels
once per run: a revision's pack (ray.put) holds only the objects earlier revisions did not
have. A node writes them into a private repository and compiles from there, so nothing depends
on where the repository is on this machine. A revision over MAX_SHIP bytes is refused.

Ray is imported here only, and only when asked for (pip install 'ptxdiff[ray]').
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import socket
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, cast

from ptxdiff import binaries
from ptxdiff.compile import toolchains
from ptxdiff.compile.pool import Pool
from ptxdiff.compile.protocol import Op, Outcome, Request
from ptxdiff.compile.tasks import Pending, Reply, Tag, Task, pending_of
from ptxdiff.errors import PtxdiffError, SandboxError, SetupError, UsageError
from ptxdiff.git import objects
from ptxdiff.git.repo import Repo
from ptxdiff.git.values import INDEX, Side
from ptxdiff.sandbox import limits

MAX_SHIP = 256 << 20        # bytes of one revision's commit, trees and Python files
OBJECT_STORE = 512 << 20    # a local Ray instance's object store: sources and results are small
NODE_PREFIX = "ptxdiff-ray-"
DEPTH = 2                   # tasks queued per actor: the next one is there when one ends
INSTALL = "pip install 'ptxdiff[ray]' (or: pip install 'ray[client]')"


@dataclass(frozen=True)
class NodeSettings:
    """What a node needs besides the job: the driver's choices, so every node decides alike."""

    roots: tuple[str, ...]
    timeout: float               # the bound of one request, as this machine's user set it
    capped: str | None
    imports: bool
    unsandboxed: str | None      # the user's setting that turned the sandbox off, if any
    versions: tuple[tuple[str, str], ...]


def require_ray() -> Any:
    """The ray module, or one line that says how to install it."""
    try:
        import ray
    except ImportError:
        raise SetupError(f"--executor ray needs Ray, which is not installed: {INSTALL}") from None
    return ray


def connect(spec: str) -> None:
    """Join Ray once per process: the cluster of ray://ADDRESS (Ray's client), else the one
    RAY_ADDRESS names, else a local instance with this machine's cores. A Ray this process has
    already joined (an application, a test) is used as it is."""
    ray = require_ray()
    if ray.is_initialized():
        return
    quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
    if spec.startswith("ray://"):
        where, kwargs = spec, {"address": spec, **quiet}
    elif os.environ.get("RAY_ADDRESS"):
        where, kwargs = os.environ["RAY_ADDRESS"], quiet
    else:
        where, kwargs = "a local instance", {"include_dashboard": False, "object_store_memory": OBJECT_STORE, **quiet}
        atexit.register(_end_local, ray)
    # Ray puts the driver's cwd on its workers' import path: start it from an empty folder, so a
    # repository's top-level packages are never importable in a Ray worker
    empty, cwd = tempfile.mkdtemp(prefix="ptxdiff-ray-cwd-"), os.getcwd()
    atexit.register(shutil.rmtree, empty, True)
    try:
        os.chdir(empty)
        with warnings.catch_warnings():  # a client that cannot connect warns, then raises: one line is enough
            warnings.simplefilter("ignore")
            ray.init(**kwargs)
    except Exception as e:  # Ray says why in exceptions of many kinds, some plain Exception
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise SetupError(f"--executor {spec}: cannot start or reach Ray ({where}): {lines[0]}") from None
    finally:
        os.chdir(cwd)


def _end_local(ray: Any) -> None:
    """At exit: end the local instance (Ray's own exit handler would, later) and remove what
    its workers left behind."""
    ray.shutdown()
    remove_stale(3.0)


# -- the driver ----------------------------------------------------------------------------------
def revision_objects(repo: Repo, side: Side, have: set[str]) -> dict[str, tuple[int, bytes]]:
    """The git objects a worker reads of `side` (its commit, trees and Python files) that are not
    in `have`: oid -> (type, raw data). A tree in `have` came with everything below it."""
    if side.commit in (None, INDEX, ""):
        raise UsageError(f"--executor ray compiles commits (ptxdiff log, notes), not {side.short}")
    out: dict[str, tuple[int, bytes]] = {}
    size = 0
    overlay = [blob for path, blob in side.overlay if blob and path.endswith(".py") and blob not in have]
    for oid, kind, data in objects.python_objects(repo, side.commit, have, overlay):
        size += len(data)
        if size > MAX_SHIP:
            raise UsageError(f"{side.short}: its Python files exceed {MAX_SHIP >> 20} MiB, more than "
                             "--executor ray ships per revision")
        out[oid] = (kind, data)
    return out


class Shipper:
    """Revisions' objects in the cluster's object store: each object once, in packs of what a
    revision adds to the ones before it. A revision needs the packs up to its own."""

    def __init__(self, repo: Repo):
        self.repo = repo
        self.have: set[str] = set()
        self.packs: list[Any] = []
        self.upto: dict[Side, int] = {}

    def packs_for(self, side: Side) -> list[Any]:
        if side not in self.upto:
            objects = revision_objects(self.repo, side, self.have)
            if objects:
                self.packs.append(require_ray().put(objects))
                self.have |= set(objects)
            self.upto[side] = len(self.packs)
        return self.packs[:self.upto[side]]


_shippers: dict[tuple[str, str], Shipper] = {}


def shipper(repo: Repo) -> Shipper:
    """One per repository and Ray job: the engine opens an executor per batch, the objects already
    shipped stay shipped."""
    job = str(require_ray().get_runtime_context().get_job_id())
    key = (job, repo.git_dir)
    if key not in _shippers:
        _shippers.clear()  # another Ray session: what was shipped before is gone with it
        _shippers[key] = Shipper(repo)
    return _shippers[key]


@dataclass
class _Slot:
    """One Ray actor (one CPU of the cluster) and the revision its worker serves."""

    actor: Any
    side: object = None
    flying: list[Any] = field(default_factory=list)


_slots: dict[str, list[_Slot]] = {}


def slots() -> list[_Slot]:
    """One actor per CPU of the cluster, made once per Ray job: the executor opened for each batch
    finds their workers warm."""
    ray = require_ray()
    job = str(ray.get_runtime_context().get_job_id())
    if job not in _slots:
        _slots.clear()
        actor = ray.remote(num_cpus=1, max_restarts=1)(NodeWorker)
        _slots[job] = [_Slot(actor.remote()) for _ in range(max(1, int(ray.cluster_resources().get("CPU", 1))))]
        atexit.register(release)   # runs before Ray leaves (registered after it joined)
    return _slots[job]


def release() -> None:
    """Each actor stops its worker and removes its private repository, and is let go: at exit, or
    before Ray is shut down (Ray ends actors with a kill, which runs no exit handler of theirs)."""
    workers = [s for slots_of_job in _slots.values() for s in slots_of_job]
    _slots.clear()
    if workers:
        with contextlib.suppress(Exception):
            require_ray().wait([s.actor.close.remote() for s in workers], num_returns=len(workers), timeout=10)


class RayExecutor:
    """The pool's interface over Ray; see the module's docstring."""

    def __init__(self, spec: str, repo_dir: str, roots: tuple[str, ...], jobs: int, timeout: float,
                 progress: Callable[[str], None] | None = None, imports: bool = False,
                 unsandboxed: str | None = None):
        bound = limits.bound(timeout)
        self.timeout = bound.seconds
        self.progress = progress   # `jobs` is this machine's pool: on Ray, every CPU of the cluster works
        self.settings = NodeSettings(tuple(roots), bound.seconds, bound.capped, imports, unsandboxed,
                                     tuple(sorted(binaries.versions().items())))
        connect(spec)
        self.shipper = shipper(Repo(repo_dir))

    def bound_of(self, task: Task[Any]) -> float:
        """The bound a node's pool holds the task to, as the local pool would (`Pool.bound_of`)."""
        return min(self.timeout, task.timeout) if task.timeout else self.timeout

    def run(self, tasks: list[Task[Tag]] | Pending, skip: Callable[[Task[Tag]], str | None] | None = None
            ) -> Iterator[Reply[Tag]]:
        """Yield a `Reply` per task as results arrive. Each actor has up to DEPTH tasks queued,
        of the revision it serves while that one has work (its worker stays warm, as a local
        pool's slot does), else of a revision no other actor serves. `skip` is asked just before
        a task is sent."""
        ray = require_ray()
        pending = pending_of(tasks)
        if any(not isinstance(side, Side) for side in pending.by_side):  # an (old, new) pair: --outputs/--time here
            raise UsageError("--executor ray runs compiles only, not --outputs or --time")
        workers = slots()
        flying: dict[Any, tuple[_Slot, Task[Any]]] = {}
        done = 0
        try:
            while pending or flying:
                for slot in workers:
                    while pending and len(slot.flying) < DEPTH:
                        side = pending.side_for(slot.side, {s.side for s in workers if s is not slot})
                        task = pending.take(side)
                        reason = skip(task) if skip else None
                        if reason:
                            done += 1
                            yield Reply(task, Outcome.ERROR, error=reason)
                            continue
                        slot.side = side
                        ref = slot.actor.run.remote(self.shipper.packs_for(cast(Side, side)), side, task.request,
                                                    task.label, self.settings, task.timeout)
                        slot.flying.append(ref)
                        flying[ref] = (slot, task)
                        if self.progress and task.op is not Op.SPECS:
                            self.progress(f"[{done + len(flying)}/{pending.added}] {task.label}")
                if not flying:
                    continue
                ready, _ = ray.wait(list(flying), num_returns=1)
                for ref in ready:
                    slot, task = flying.pop(ref)
                    slot.flying.remove(ref)
                    done += 1
                    yield _outcome(ray, ref, task)
        finally:  # stopped early (an error, ^C): what is queued is not wanted (a running one ends at its bound)
            for ref, (slot, _) in flying.items():
                slot.flying.remove(ref)
                with contextlib.suppress(Exception):
                    ray.cancel(ref)

    def close(self) -> None:
        """Nothing to stop: Ray and its actors stay for the process's next batch and leave with it."""

    def __enter__(self) -> RayExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _outcome(ray: Any, ref: Any, task: Task[Any]) -> Reply[Any]:
    """A task's reply as the pool gives it; a node that cannot hold the sandbox or has another
    toolchain stops the run (one line), as this machine would."""
    try:
        reply: Reply[Any] = ray.get(ref)
    except ray.exceptions.RayError as e:
        lines = str(e).strip().splitlines()
        return Reply(task, Outcome.ERROR,
                     error=f"ray task failed during {task.label}: {type(e).__name__}: {lines[0] if lines else ''}"[:400])
    if reply.outcome is Outcome.SANDBOX:
        raise SandboxError(str(reply.error))
    if reply.outcome is Outcome.SETUP:
        raise SetupError(str(reply.error))
    return replace(reply, task=task)


# -- on a node -----------------------------------------------------------------------------------
@dataclass
class _Node:
    """This Ray worker process's private repository, the packs written into it, and its pool."""

    dir: str | None = None
    applied: set[str] | None = None
    pool: Pool | None = None
    key: tuple[Any, ...] | None = None


_node = _Node()


class NodeWorker:
    """A Ray actor: one CPU of a node, running jobs one at a time (`execute`)."""

    def run(self, packs: list[Any], side: Side, request: Request, label: str, settings: NodeSettings,
            timeout: float | None = None) -> Reply[Any]:
        return execute(packs, side, request, label, settings, timeout)

    def close(self) -> None:
        """Stop this process's worker and remove its private repository."""
        if _node.pool is not None:
            _node.pool.close()
        if _node.dir is not None:
            shutil.rmtree(_node.dir, ignore_errors=True)
        _node.dir = _node.applied = _node.pool = _node.key = None


def execute(packs: list[Any], side: Side, request: Request, label: str, settings: NodeSettings,
            timeout: float | None = None) -> Reply[Any]:
    """A Ray task: one job in this node's sandboxed worker; its reply as the pool yields it, or
    one whose outcome is SANDBOX or SETUP (and why) when this node cannot run it as the driver's
    machine would."""
    task = Task(side, request, label, None, timeout=timeout)
    here = tuple(sorted(binaries.versions().items()))
    if here != settings.versions:
        return Reply(task, Outcome.SETUP, error=f"Ray node {socket.gethostname()} has {_versions(here)}; this run "
                                                f"needs {_versions(settings.versions)}: install the same versions on every node")
    if side.toolchain is not None:
        why = _toolchain_problem(side.toolchain)
        if why is not None:
            return Reply(task, Outcome.SETUP, error=f"Ray node {socket.gethostname()}: {why}")
    try:
        pool = _node_pool(_materialize(packs), settings)
        replies = list(pool.run([task]))
        return replies[-1] if replies else Reply(task, Outcome.ERROR, error=f"no result for {label}")
    except SandboxError as e:
        return Reply(task, Outcome.SANDBOX, error=f"Ray node {socket.gethostname()}: {e}")


def _versions(items: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{k} {v}" for k, v in items)


def _toolchain_problem(version: str) -> str | None:
    """Make sure this node has the toolchain of `version` (installed now if it is not there);
    None when it holds triton `version`, else the one line why not."""
    try:
        found = toolchains.install(version)   # found where it is there
    except PtxdiffError as e:
        return str(e)
    have = binaries.triton_version(found.site)
    if have != version:
        return (f"the toolchain in {found.prefix} holds triton {have or 'none'}, not {version}: "
                f"ptxdiff toolchain remove {version} on this node, then run again")
    return None


def _materialize(packs: list[Any]) -> str:
    """This process's repository, holding every object of `packs` (each pack written once)."""
    if _node.dir is None or _node.applied is None:
        remove_stale()
        _node.dir = tempfile.mkdtemp(prefix=f"{NODE_PREFIX}{os.getpid()}-")
        objects.create(_node.dir)
        atexit.register(shutil.rmtree, _node.dir, True)
        _node.applied = set()
    todo = [p for p in packs if p.hex() not in _node.applied]
    if todo:
        for ref, shipped in zip(todo, require_ray().get(todo)):
            objects.store(_node.dir, shipped)
            _node.applied.add(ref.hex())
    return _node.dir


def _node_pool(repo_dir: str, settings: NodeSettings) -> Pool:
    """One pool of one slot per process, kept while the settings hold: its worker stays for the
    next task of the same revision."""
    key = (repo_dir, settings.roots, settings.timeout, settings.imports, settings.unsandboxed)
    if _node.pool is None or _node.key != key:
        if _node.pool is not None:
            _node.pool.close()
        pool = Pool(repo_dir, settings.roots, 1, settings.timeout, None, imports=settings.imports,
                    unsandboxed=settings.unsandboxed)
        if pool.timeout == settings.timeout:  # the driver's bound and what capped it, in its messages
            pool.bound = limits.Bound(settings.timeout, settings.capped)
        _node.pool, _node.key = pool, key
    return _node.pool


def remove_stale(wait: float = 0.0) -> None:
    """Remove the private repositories of Ray workers that are gone (Ray ends its workers without
    their exit handlers); with `wait`, give live ones that long to go first (a local Ray that
    is shutting down)."""
    root, deadline = tempfile.gettempdir(), time.monotonic() + wait
    while True:
        live = []
        for name in os.listdir(root):
            pid = name[len(NODE_PREFIX):].split("-", 1)[0] if name.startswith(NODE_PREFIX) else ""
            if not pid.isdigit():
                continue
            try:
                os.kill(int(pid), 0)
                live.append(name)
            except ProcessLookupError:
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
            except OSError:
                pass
        if not live or time.monotonic() >= deadline:
            return
        time.sleep(0.1)
