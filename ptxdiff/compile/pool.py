"""Worker processes, one revision each, with a bound on every request.

Workers fork from a multiprocessing forkserver that has imported triton once, so starting a
worker per revision costs milliseconds. A request
that outlives its deadline, or a worker that dies (a ptxas or MLIR crash), becomes an error
result for that request; the slot starts a fresh worker and the run goes on.

Compile workers are sandboxed (ptxdiff/sandbox/) unless the user turned that off: the
forkserver starts clean, each worker gets a private folder and a policy, and the bound is the
repository's timeout capped by the user's maximum, in CPU seconds of the worker's process tree
where /proc tells them (cputime.py: a loaded machine times out what a quiet one does), with the
clock as a backstop at WALL_FACTOR times the bound (a worker that sleeps uses no CPU). A
machine where the sandbox cannot hold gets SandboxError (one line: why, and how to opt out) before any worker starts.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from typing import Any

from ptxdiff.compile import cputime, printed
from ptxdiff.compile import worker as compiler
from ptxdiff.compile.protocol import Op, Outcome
from ptxdiff.compile.tasks import Pending, Reply, Tag, Task, pending_of
from ptxdiff.dynamic.runner import runs_on_gpu
from ptxdiff.errors import SandboxError
from ptxdiff.sandbox import launcher, lifetime, limits, probe
from ptxdiff.sandbox.policy import Policy

_context: ForkServerContext | None = None
# torch is deliberately not preloaded: workers import it lazily (compiler.defer_torch)
PRELOAD = ("ptxdiff.compile.preload",)


def _ctx() -> ForkServerContext:
    global _context
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(list(PRELOAD))
    return _context


def _python_of(side: object) -> str | None:
    """The interpreter of the toolchain a side compiles with (toolchains.py); None: this one."""
    version = getattr(side, "toolchain", None)
    if not version:
        return None
    from ptxdiff.compile import toolchains
    found = toolchains.find(version)
    if found is None:
        raise SandboxError(f"triton {version} is not installed: ptxdiff toolchain add {version}")
    return found.python


@dataclass
class _Slot:
    proc: BaseProcess | None = None
    conn: Connection | None = None
    side: object = ...       # revision of the live worker; ... when none
    task: Task[Any] | None = None
    started: float = 0.0     # when the current request was sent (the clock)
    cpu_base: float | None = None   # the tree's CPU seconds at the first read during the request
    base_at: float = 0.0     # seconds of the request before that read, charged as CPU
    home: str | None = None  # the worker's private folder (HOME, TMPDIR, cwd, triton's cache)
    cpu: float = 0.0         # CPU seconds the live worker has used, as it last said
    memory: int = 0          # the live worker's address space, as it last said
    served: int = 0          # requests the live worker has answered
    printed_from: int = 0    # where the current request's output starts in the worker's printed file

    def channel(self) -> Connection:
        """The live worker's pipe: a slot has one from `_start` until `_stop`."""
        assert self.conn is not None, "no worker in this slot"
        return self.conn


class Pool:
    def __init__(self, repo_dir: str, roots: tuple[str, ...], jobs: int, timeout: float,
                 progress: Callable[[str], None] | None = None, imports: bool = False,
                 unsandboxed: str | None = None):
        self.repo_dir, self.roots, self.imports = repo_dir, roots, imports
        self.bound = limits.bound(timeout)
        self.jobs, self.timeout = max(1, jobs), self.bound.seconds
        self.limits = limits.Limits.for_bound(self.timeout, imports)
        self.progress = progress
        self.slots = [_Slot() for _ in range(self.jobs)]
        self.unsandboxed = unsandboxed   # the user's setting that turned the sandbox off, if any
        self.sandbox: str | None = None              # what holds in the workers, as the last one said
        self.homes: lifetime.Homes | None = None     # the workers' private folders (made at the first start)

    def timed_out(self, task: Task[Any] | None = None) -> str:
        if task is not None and self.bound_of(task) < self.timeout:
            return f"timed out after {self.bound_of(task):g}s (the bound of this request)"
        cap = f", capped by {self.bound.capped}" if self.bound.capped else ""
        return f"timed out after {self.timeout:g}s (config key 'timeout'{cap})"

    def bound_of(self, task: Task[Any]) -> float:
        return min(self.timeout, task.timeout) if task.timeout else self.timeout

    def _sandboxed(self, side: object) -> bool:
        """Whether a worker for `side` is sealed: every compile worker unless the user opted out,
        and a run worker (--outputs/--time) where it runs on the CPU (triton's interpreter needs
        no device); not one that runs on the GPU (its driver needs the devices: bounded, not
        sealed). Raises the one-line refusal where the sandbox cannot be set up."""
        if self.unsandboxed or (isinstance(side, tuple) and runs_on_gpu()):
            return False
        why = probe.unavailable()
        if why:
            raise probe.refusal(why)
        return True

    def _stop(self, slot: _Slot, kill: bool = False) -> None:
        proc = slot.proc
        if proc is None:
            return
        if kill:
            _kill_group(proc)
            proc.kill()
        else:
            try:
                slot.channel().send(None)
            except (BrokenPipeError, OSError):
                pass
        proc.join(5)
        if proc.is_alive():
            _kill_group(proc)
            proc.kill()
            proc.join()
        slot.channel().close()
        slot.proc, slot.conn, slot.side, slot.cpu, slot.memory, slot.served = None, None, ..., 0.0, 0, 0
        if slot.home:
            lifetime.remove_home(slot.home)
            slot.home = None

    def _launch(self, slot: _Slot, side: object) -> None:
        """Start a worker for `side` in `slot`; its first word is awaited apart (`_ready`), so the
        workers of one pass start side by side, not one after the other."""
        # Run workers (an (old, new) pair) must import triton only after choosing the
        # interpreter, so they start fresh instead of forking from the triton-preloaded server.
        ctx = mp.get_context("spawn") if isinstance(side, tuple) else _ctx()
        sealed = self._sandboxed(side)
        if self.homes is None:
            self.homes = lifetime.Homes()   # removed even if ptxdiff is killed while a worker starts
        slot.home = self.homes.home()
        # an importing worker runs the modules' top level because the user asked: bounded, not sealed
        # a run worker's launches are checked against the replay budget (dynamic/replay.py, GiBs a
        # side) before anything is allocated: no address-space limit there, the other rlimits hold
        bounds = replace(self.limits, address_space=0) if isinstance(side, tuple) else self.limits
        policy = Policy(slot.home, bounds, namespaces=not self.imports, seal=not self.imports) if sealed else None
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=compiler.serve, args=(child, self.repo_dir, side, self.roots, self.imports, slot.home,
                                                        policy), daemon=True)
        # the forkserver is shared by sealed and unsealed compile workers: it always starts clean;
        # a side that compiles with another triton gets that toolchain's interpreter and forkserver
        # an unsealed run worker (on the GPU) keeps the user's environment
        with launcher.clean_start(os.environ if sealed or not isinstance(side, tuple) else None, _python_of(side),
                                  PRELOAD):
            proc.start()
        child.close()
        slot.proc, slot.conn, slot.side = proc, parent, side

    def _ready(self, slot: _Slot) -> str | None:
        """A launched worker's first word: None once it serves, else why it does not (stopped)."""
        parent = slot.channel()
        if not parent.poll(self.timeout):
            self._stop(slot, kill=True)
            return f"worker start {self.timed_out()}"
        try:
            kind, msg, *fallback = parent.recv()
        except EOFError:
            self._stop(slot, kill=True)
            return "worker died while starting"
        if kind in (Outcome.FATAL, Outcome.SANDBOX):
            self._stop(slot, kill=True)
            if kind is Outcome.SANDBOX:
                raise probe.refusal(msg)
            said: str = msg
            return said
        self.sandbox = msg
        if fallback and fallback[0]:
            probe.say_once(fallback[0])
        return None

    def _crashed(self, slot: _Slot, task: Task[Any]) -> str:
        """Why a worker died during `task`, stopping what is left of it: a first line (how it died
        and the telling line of what it printed), then what it printed."""
        if slot.proc is not None:
            slot.proc.join(1)
        code = slot.proc.exitcode if slot.proc else None
        text = printed.read_tail(slot.home, slot.printed_from) if slot.home else ""
        self._stop(slot, kill=True)
        how = f"exit code {code}"
        # a signal: a negative code, or 128 + its number from the sandbox's supervisor
        number = -code if code is not None and code < 0 else code - 128 if code is not None and code > 128 else 0
        if number:
            try:
                how = f"signal {signal.Signals(number).name}"
            except ValueError:
                how = f"signal {number}"
        line = printed.telling_line(text, crashed=True)
        return f"worker crashed ({how}) during {task.label}" + (f": {line}" if line else "") + (
            f"\n{text}" if text.strip() else "")

    def run(self, tasks: list[Task[Tag]] | Pending, skip: Callable[[Task[Tag]], str | None] | None = None
            ) -> Iterator[Reply[Tag]]:
        """Yield a `Reply` per task as results arrive, in any order; given a Pending, until it is
        empty and nothing runs, so tasks the caller adds while it reads the replies run too.
        `skip`, asked just before a task would start, may give a reason not to run it (an error reply).

        No result depends on which tasks shared a worker (that depends on --jobs): a request that
        ran out of memory or crashed its worker after the worker had served others runs once more
        in a fresh worker, whose answer is the result; a worker whose address space has grown past
        RECYCLE_SHARE of its limit is replaced between requests."""
        pending = pending_of(tasks)
        done = 0
        try:
            while pending or any(s.task for s in self.slots):
                # the free slots each get a revision with a task for them; those that need a new
                # worker launch it, and every launched worker's first word is awaited after
                launched: list[tuple[_Slot, object]] = []
                promised: Counter[object] = Counter()
                for slot in self.slots:
                    if slot.task is not None or len(pending) <= sum(promised.values()):
                        continue
                    side = pending.side_for(slot.side, {s.side for s in self.slots if s is not slot}, promised)
                    promised[side] += 1
                    if slot.side != side or (pending.next_of(side).fresh and slot.served):
                        self._stop(slot)
                        self._launch(slot, side)
                        launched.append((slot, side))
                for slot, side in launched:
                    failure = self._ready(slot)
                    if failure:
                        for t in pending.drop(side) if side in pending.by_side else ():
                            done += 1
                            yield Reply(t, Outcome.ERROR, error=failure)
                for slot in self.slots:
                    side = slot.side
                    if slot.task is not None or slot.proc is None or side not in pending.by_side or \
                            pending.next_of(side).fresh and slot.served:
                        continue
                    task = pending.take(side)
                    reason = skip(task) if skip else None
                    if reason:
                        done += 1
                        yield Reply(task, Outcome.ERROR, error=reason)
                        continue
                    slot.task, slot.started, slot.cpu_base = task, time.monotonic(), None
                    slot.printed_from = printed.size(slot.home) if slot.home else 0
                    if self.progress and task.op is not Op.SPECS:
                        self.progress(f"[{done + 1}/{pending.added}] {task.label}")
                    slot.channel().send(task.request)
                busy = [(s, s.task) for s in self.slots if s.task is not None]
                if not busy:
                    continue
                ready = wait([s.channel() for s, _ in busy], timeout=self._next_look(busy))
                now = time.monotonic()
                trees = self._trees([s for s, _ in busy if s.conn not in ready], now)
                for slot, task in busy:
                    reply: Reply[Any]
                    served = slot.served
                    if slot.conn in ready:
                        try:
                            reply = self._answered(slot, task)
                        except (EOFError, OSError, ValueError, TypeError):
                            reply = Reply(task, Outcome.CRASH, error=self._crashed(slot, task))
                    elif self._past_bound(slot, task, now, trees):
                        self._stop(slot, kill=True)
                        reply = Reply(task, Outcome.TIMEOUT, error=self.timed_out(task))
                    else:
                        continue
                    slot.task = None
                    if (reply.outcome is Outcome.CRASH or reply.out_of_memory) and served and not task.fresh:
                        self._stop(slot, kill=True)   # what its neighbours left may be why: once more, alone
                        task.fresh = True
                        pending.again(task)
                        continue
                    if reply.out_of_memory:
                        reply = self._alone(reply)
                    slot.served += 1
                    if slot.proc is not None and (slot.cpu > self.limits.recycle_after(self.timeout)
                                                  or slot.memory > RECYCLE_SHARE * self.limits.address_space > 0):
                        self._stop(slot)   # a fresh worker before this one's CPU or memory rlimit could end a request
                    done += 1
                    yield reply
        finally:  # workers stay for the next run (the compiles after the specs) unless busy
            for slot in self.slots:
                if slot.task is not None:
                    self._stop(slot, kill=True)
                    slot.task = None

    @staticmethod
    def _answered(slot: _Slot, task: Task[Any]) -> Reply[Any]:
        """The reply a worker sent (`compiler.serve`): its answer, or the error its request raised."""
        kind, body, memory_out, slot.cpu, slot.memory = slot.channel().recv()
        if kind is Outcome.OK:
            return Reply(task, Outcome.OK, answer=body, out_of_memory=memory_out)
        return Reply(task, Outcome.ERROR, error=body, out_of_memory=memory_out)

    def _next_look(self, busy: list[tuple[_Slot, Task[Any]]]) -> float:
        """Seconds until a busy request's bound must be looked at: its bound (or LAZY_S) after it
        started, then every POLL_S."""
        now = time.monotonic()

        def look(slot: _Slot, task: Task[Any]) -> float:
            bound = self.bound_of(task)
            if bound <= LAZY_S:
                return slot.started + bound - now
            return slot.started + LAZY_S - now if now - slot.started < LAZY_S else POLL_S
        return max(0.0, min(look(s, t) for s, t in busy))

    @staticmethod
    def _trees(waiting: list[_Slot], now: float) -> dict[int, float] | None:
        """CPU seconds of the trees of the workers whose request has run LAZY_S or more (one read
        of /proc); None where none has, or /proc cannot be read."""
        late = [s.proc.pid for s in waiting if s.proc is not None and s.proc.pid and now - s.started >= LAZY_S]
        return cputime.of_trees(late) if late else None

    def _past_bound(self, slot: _Slot, task: Task[Any], now: float, trees: dict[int, float] | None) -> bool:
        """Whether a request has run past its bound: CPU seconds of its worker's tree (the wall
        seconds before the first read counted as CPU), or the clock at WALL_FACTOR times the bound;
        the clock alone for a bound of LAZY_S or less, or where /proc could not be read."""
        bound, wall = self.bound_of(task), now - slot.started
        pid = slot.proc.pid if slot.proc is not None else None
        if bound <= LAZY_S or trees is None or pid not in trees:
            return wall >= bound
        if wall >= WALL_FACTOR * bound:
            return True
        if slot.cpu_base is None:
            slot.cpu_base, slot.base_at = trees[pid], wall
        return trees[pid] - slot.cpu_base + slot.base_at >= bound

    def _alone(self, reply: Reply[Any]) -> Reply[Any]:
        """A memory failure of a fresh worker: the request alone needs more than a worker may take."""
        limit = self.limits.address_space
        said = f" (alone in a fresh worker: it needs more than the {limit / limits.GiB:g} GiB of address space " \
            "a compile worker may take)" if limit else " (alone in a fresh worker)"
        if reply.answer is not None:
            return replace(reply, answer=reply.answer.noting(said))
        return replace(reply, error=f"{reply.error}{said}")

    def close(self) -> None:
        try:
            for slot in self.slots:
                self._stop(slot)
        finally:
            if self.homes is not None:
                self.homes.close()
                self.homes = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


LAZY_S = 1.0          # a request's CPU is read from this many seconds on (most compiles answer before)
POLL_S = 0.5          # and then this often
WALL_FACTOR = 3.0     # the clock's backstop, in bounds (a worker's CPU rlimit is three bounds too)
RECYCLE_SHARE = 0.5   # of a worker's address-space limit, past which it is replaced between requests


def _kill_group(proc: BaseProcess) -> None:
    """A sandboxed worker leads its own process group and cannot leave it (seccomp): kill all of
    it, so nothing it started outlives it even where no PID namespace could be made."""
    pid = proc.pid
    try:
        if pid and os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def sandboxed_call(fn: Callable[..., Any], args: tuple[Any, ...], timeout: float = 120.0,
                   namespaces: bool = True) -> tuple[str, object]:
    """Run `fn(*args)` (a module-level function) in a sealed compile worker, as the pool starts
    them, and return (what holds in the sandbox, the result). For `ptxdiff doctor` and the tests
    (`namespaces=False`: as on a kernel that refuses them)."""
    why = probe.unavailable()
    if why:
        raise probe.refusal(why)
    ctx = _ctx()
    home = tempfile.mkdtemp(prefix="ptxdiff-worker-")
    parent, child = ctx.Pipe()
    policy = Policy(home, limits.Limits.for_bound(limits.user_max()[0]), namespaces)   # a worker at the user's bound
    proc = ctx.Process(target=compiler.call_sealed, args=(child, policy, fn, args), daemon=True)
    try:
        with launcher.clean_start(os.environ):
            proc.start()
        child.close()
        if not parent.poll(timeout):
            raise SandboxError(f"the sandboxed call did not answer in {timeout:g}s")
        kind, active, result = parent.recv()
        if kind is Outcome.SANDBOX:
            raise probe.refusal(str(result))
        return active, result
    finally:
        if proc.pid is not None:
            _kill_group(proc)
            proc.kill()
            proc.join()
        lifetime.remove_home(home)

