"""One measuring session over an executor: each compared pair moves through its own steps (the
cache, its specs, a covering set or shrunk sizes where its specs ask for them, its compiles, then
each replan that gives it a new plan) the moment its own answers are in, not when the slowest
task of a round is. The executor's queue (`tasks.Pending`) is fed as answers arrive, so the
specs of one pair, the compiles of another and the replan of a third run side by side, and
the longest chain of one pair, not a barrier per round, decides the wall time.

Nothing a pair ends with depends on what ran beside it: each step reads only its own pair's
results, and a spec compiled alike for two needs (a kernel whose launch alone changed, one
version on both sides of two pairs) is compiled once, the others served its answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast

from ptxdiff import binaries, repo_config
from ptxdiff.compare.replan import Need
from ptxdiff.compare.spec_result import SpecResult, from_specs, from_worker
from ptxdiff.compile.protocol import CompileAnswer, CompileRequest, Failure, Outcome, SpecsAnswer, SpecsRequest
from ptxdiff.compile.tasks import Pending, Reply, Task
from ptxdiff.specs import cost
from ptxdiff.specs.cover import covered_notes
from ptxdiff.specs.plan import MAX_SHRINK
from ptxdiff.targets import target_name

if TYPE_CHECKING:  # types only: the compile pipeline is imported where it runs
    from ptxdiff.compile.executor import Executor
    from ptxdiff.specs.resolve import Spec

SHRINK_FIRST = "not compiled: guessed sizes over the cost rule (specs/cost.py); the pair compiles them shrunk"

Got = list[tuple[Need, int, list[Any]]]   # (need, target, its specs) whose specs are in


class SpecsOf(NamedTuple):
    """A specs task's tag: the (need, target) it asks for."""

    need: Need
    cc: int


class CompileOf(NamedTuple):
    """A compile task's tag: the spec (by place) it compiles, and what its result depends on."""

    need: Need
    cc: int
    i: int
    build: tuple[Any, ...]
    spec: Spec


@dataclass
class PairStep:
    """Where one pair is: the needs of its current step, the replans it has been asked, and
    what it still waits for (spec answers, or (need, target)s whose compiles are not all in)."""

    needs: list[Need]
    replanned: int                       # how many of the session's replans were asked before this step
    waiting: int = 0
    got: Got = field(default_factory=list)
    covered: bool = False                # its sides' covering sets were looked at after its specs
    compiling: bool = False


def crashed(pending: SpecResult, said: str, bound: float) -> SpecResult:
    """The result of a compile that crashed its worker: the pool's first line is the error, what
    the worker printed the log; `bound` is the one it ran under (cached like a timeout)."""
    error, _, log = said.partition("\n")
    return dataclasses.replace(pending, error=error, failure=Failure.CRASH, bound=bound, log=log or None)


def _costly(got: Got) -> set[int]:
    """The needs (by id) whose specs are not compiled as planned: a spec of their pair has guessed
    sizes over the cost rule (specs/cost.py), so the pair compiles its guessed sizes shrunk on
    both sides (replan.shrunk); a plan already shrunk compiles what it has."""
    over = {need.pair for need, _, specs in got if need.plan.shrink < MAX_SHRINK and
            any(cost.too_costly(s, need.kernel.tiles) for s in specs)}
    return {id(need) for need, _, _ in got if need.pair in over and need.plan.shrink < MAX_SHRINK}


def _build_of(need: Need, cc: int, spec: Spec) -> tuple[Any, ...]:
    """What a compile's result depends on: the closure built (fingerprint, kernel, toolchain), the
    target, the spec's values and which of them are guesses (the searches after a failure try
    other values for those); not the plan or the side that asked."""
    return (need.kernel.fingerprint, need.kernel.id, need.side.compiled_as, cc, spec.key,
            tuple(sorted(g.key for g in spec.guessed)))


def _not_compiled(need: Need) -> str:
    return f"not compiled: another spec of {need.kernel.name} timed out (config key 'timeout')"


def _withheld(need: Need, result: SpecResult, bound: float) -> SpecResult:
    """A spec of a kernel another spec of which timed out (the others would time out too): no
    result (one that timed out itself stays). Every spec of it so, not only those not yet started,
    so which ran beside the slow one (--jobs) decides nothing."""
    if result.failure is Failure.TIMEOUT:
        return result
    return SpecResult(result.key, result.label, result.spec, error=_not_compiled(need), failure=Failure.TIMEOUT,
                      bound=bound)


def uncovered_partners(needs: list[Need], got: Got) -> list[Need]:
    """Needs of one pair that compile every combination of guessed values while the other side
    compiles a covering set: an added optional parameter can tip one side over `max_specs`, and
    the two sides' specs must still pair up."""
    notes: dict[int, list[str]] = {}
    for need in needs:
        for results in need.results.values():
            for r in results:
                notes.setdefault(id(need), []).extend(r.spec.notes if r.spec else ())
    for need, _, specs in got:
        notes.setdefault(id(need), []).extend(note for spec in specs for note in spec.notes)
    if len(needs) != 2 or any(n.plan.cover for n in needs):
        return []
    flags = [covered_notes(notes.get(id(n), ())) for n in needs]
    return [needs[flags.index(False)]] if flags[0] != flags[1] else []


class Results(Protocol):
    """What a session asks of the measurer (measure.py): its cache's lookups and stores."""

    loaded_now: int

    def lookup(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> list[tuple[Need, int]]: ...

    def cover_too(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> list[tuple[Need, int]]: ...

    def shrunk_now(self, needs: list[Need], missing: list[tuple[Need, int]], cfg: repo_config.Config,
                   targets: list[int]) -> list[tuple[Need, int]]: ...

    def store(self, need: Need, cc: int) -> None: ...


class Session:
    """The pairs of one `Measurer.measure` (or one ELSEWHERE target) and the executor's queue."""

    def __init__(self, measurer: Results, cfg: repo_config.Config, targets: list[int],
                 replans: tuple[Callable[[list[Need]], list[Need]], ...]) -> None:
        self.m, self.cfg, self.targets, self.replans = measurer, cfg, targets, replans
        self.pending = Pending()
        self.steps: dict[int, PairStep] = {}          # pair -> its current step
        self.groups: dict[int, list[Need]] = {}       # pair -> all its needs (what a replan reads)
        self.leaders: dict[tuple[Any, ...], CompileOf] = {}          # build -> the task that compiles it
        self.answered: dict[tuple[Any, ...], SpecResult] = {}        # build -> its result, once in
        self.followers: dict[tuple[Any, ...], list[tuple[Need, int, int]]] = {}
        self.left: dict[tuple[int, int], int] = {}    # (need, target) -> its specs not yet answered
        self.timed_out: dict[tuple[int, int], float] = {}   # (need, target) -> the bound a spec of it timed out under
        self.skipped: set[int] = set()                # compile tasks `_skip` did not start (by id)
        self.compiled = 0
        self.triton_checked = False
        self.pool: Executor | None = None

    # -- steps of a pair -------------------------------------------------------------------------
    def start(self, group: list[Need]) -> None:
        """A pair's first step: its needs, all of them."""
        self.groups[group[0].pair] = group
        self._step(group[0].pair, group, 0)

    def _step(self, pair: int, needs: list[Need], replanned: int) -> None:
        """Look `needs` up (the pair's, or those a replan gave a new plan) and ask for the specs of
        what is missing; a pair with nothing missing goes on to its next replan."""
        step = self.steps[pair] = PairStep(needs, replanned)
        for need in needs:
            for cc in self.targets:
                self.timed_out.pop((id(need), cc), None)
        m = self.m
        missing = m.lookup(needs, self.cfg, self.targets)
        again = uncovered_partners(needs, [])
        if again:  # the other side's cached specs are a covering set: look this side up covered too
            missing = [x for x in missing if x[0] not in again] + m.cover_too(again, self.cfg, self.targets)
        missing = m.shrunk_now(needs, missing, self.cfg, self.targets)   # cached over the rule: shrunk at once
        m.loaded_now += len(missing)
        if missing:
            self._ask_specs(step, missing)
        else:
            self._done(pair)

    def _ask_specs(self, step: PairStep, missing: list[tuple[Need, int]]) -> None:
        if not self.triton_checked and any(not n.side.toolchain for n, _ in missing):
            binaries.require_triton()   # a side that compiles with a toolchain needs that triton only
            self.triton_checked = True
        step.waiting += len(missing)
        self.pending.add(Task(n.side, SpecsRequest(n.kernel, n.kcfg, cc, n.plan),
                              f"{n.kernel.name} {target_name(cc)} specs", SpecsOf(n, cc)) for n, cc in missing)

    def _specs_in(self, pair: int) -> None:
        """Every spec answer of the pair's step is in: a covering set where the other side has one,
        shrunk sizes where a spec is over the cost rule (each asks for specs again), else compile."""
        step, m = self.steps[pair], self.m
        if not step.covered:
            step.covered = True
            again = uncovered_partners(step.needs, step.got)
            if again:  # the other side compiles a covering set of guesses: so does this side
                step.got = [g for g in step.got if g[0] not in again]
                missing = m.cover_too(again, self.cfg, self.targets)
                if missing:
                    self._ask_specs(step, missing)
                    return
        while costly := _costly(step.got):   # their shrunk specs (plan.MAX_SHRINK ends it)
            for need, cc, specs in step.got:
                if id(need) in costly:   # a fact of the specs, stored like a result: a warm run shrinks at once
                    need.results[cc] = [SpecResult(spec.key, spec.label, spec.detail(), error=SHRINK_FIRST,
                                                   failure=Failure.OVER_COST) for spec in specs]
                    m.store(need, cc)
            fresh = m.shrunk_now(step.needs, [], self.cfg, self.targets)
            m.loaded_now += len(fresh)
            step.got = [g for g in step.got if id(g[0]) not in costly]
            if fresh:
                self._ask_specs(step, fresh)
                return
        self._compile(pair)

    def _compile(self, pair: int) -> None:
        """The pair's compiles: one per distinct build in the session (a build another need
        compiles, or compiled, serves this one too)."""
        step = self.steps[pair]
        got, step.got, step.compiling = step.got, [], True
        for need, cc, specs in got:
            # each spec's place holds its pending record (no result yet) until its compile answers
            need.results[cc] = [SpecResult(spec.key, spec.label, spec.detail()) for spec in specs]
            self.left[(id(need), cc)] = len(specs)
            step.waiting += bool(specs)
        tasks: list[Task[CompileOf]] = []
        for need, cc, specs in got:
            for i, spec in enumerate(specs):
                build = _build_of(need, cc, spec)
                if build in self.answered:
                    self._fill(need, cc, i, self.answered[build])
                elif build in self.leaders:
                    self.followers.setdefault(build, []).append((need, cc, i))
                else:
                    tasks.append(self._lead(CompileOf(need, cc, i, build, spec)))
        self.compiled += len(tasks)
        self.pending.add(tasks)
        if not step.waiting:
            self._done(pair)

    def _lead(self, tag: CompileOf) -> Task[CompileOf]:
        """The task that compiles a build, for the spec `tag` names (the others follow it)."""
        self.leaders[tag.build] = tag
        return Task(tag.need.side, CompileRequest(tag.need.kernel, tag.spec, tag.cc),
                    f"{tag.need.kernel.name} {target_name(tag.cc)} {tag.spec.label}", tag,
                    cost=cost.estimate(tag.spec, tag.need.kernel.tiles, tag.need.kernel.unrolled, tag.need.kernel.sorts))

    def _done(self, pair: int) -> None:
        """The pair's step is measured: the next replan that gives it a new plan measures it once
        more (each sees what the ones before measured), else the pair is finished."""
        step = self.steps[pair]
        for k in range(step.replanned, len(self.replans)):
            again = self.replans[k](self.groups[pair])
            if again:
                self._step(pair, again, k + 1)
                return

    # -- answers ---------------------------------------------------------------------------------
    def serve(self, pool: Executor) -> None:
        """Run the queue on `pool` until every pair is finished."""
        self.pool = pool
        for reply in pool.run(self.pending, self._skip):
            if isinstance(reply.task.tag, SpecsOf):
                self._specs_answer(cast(Reply[SpecsOf], reply))
            else:
                self._compile_answer(cast(Reply[CompileOf], reply))

    def _skip(self, task: Task[Any]) -> str | None:
        # one spec that compiles past the timeout: the kernel's others would too
        tag = task.tag
        if isinstance(tag, CompileOf) and (id(tag.need), tag.cc) in self.timed_out:
            self.skipped.add(id(task))
            return _not_compiled(tag.need)
        return None

    def _specs_answer(self, reply: Reply[SpecsOf]) -> None:
        """The specs of one (need, target), or a result that says why there are none."""
        assert self.pool is not None
        need, cc = reply.task.tag
        answer = cast(SpecsAnswer, reply.answer)
        if reply.outcome is Outcome.TIMEOUT:  # cached for this bound, like a compile that timed out
            need.results[cc] = [SpecResult(None, "-", error=str(reply.error), failure=Failure.TIMEOUT,
                                           bound=self.pool.timeout)]
            self.m.store(need, cc)
        elif reply.outcome is Outcome.CRASH:
            need.results[cc] = [crashed(SpecResult(None, "-"), str(reply.error), self.pool.timeout)]
            self.m.store(need, cc)
        elif reply.outcome is not Outcome.OK:  # the worker could not start or the request raised: not cached
            need.results[cc] = [SpecResult(None, "-", error=str(reply.error), failure=Failure.WORKER_ERROR)]
        elif answer.error is not None:  # the specs cannot be had: a fact about source and config
            need.results[cc] = [from_specs(answer)]
            self.m.store(need, cc)
        else:
            self.steps[need.pair].got.append((need, cc, list(answer.specs)))
        step = self.steps[need.pair]
        step.waiting -= 1
        if not step.waiting:
            self._specs_in(need.pair)

    def _compile_answer(self, reply: Reply[CompileOf]) -> None:
        """One build's result, for the spec that asked and every one that follows it. A build not
        started because its need timed out is no result of the build: the followers whose need did
        not time out have it compiled by the first of them."""
        assert self.pool is not None
        task = reply.task
        tag = task.tag
        need, cc, i, build, _ = tag
        pending = need.results[cc][i]
        group = [(need, cc, i), *self.followers.pop(build, ())]
        if id(task) in self.skipped:
            self.skipped.discard(id(task))
            self.leaders.pop(build, None)
            waiting = [(n, at, j) for n, at, j in group if (id(n), at) not in self.timed_out]
            group = [g for g in group if g not in waiting]
            done = dataclasses.replace(pending, error=str(reply.error), failure=Failure.WORKER_ERROR)
            if waiting:   # (withheld below as its need's other specs are)
                (first, at, j), rest = waiting[0], waiting[1:]
                self.pending.add([self._lead(CompileOf(first, at, j, build, tag.spec))])
                self.followers[build] = rest
        elif reply.outcome is Outcome.OK:
            done = from_worker(pending, cast(CompileAnswer, reply.answer))
        elif reply.outcome is Outcome.TIMEOUT:
            done = dataclasses.replace(pending, error=str(reply.error), failure=Failure.TIMEOUT,
                                       bound=self.pool.bound_of(task))
        elif reply.outcome is Outcome.CRASH:  # remembered for this bound, like a timeout
            done = crashed(pending, str(reply.error), self.pool.bound_of(task))
        else:   # the request raised or its worker did not start: no fact of the build
            done = dataclasses.replace(pending, error=str(reply.error), failure=Failure.WORKER_ERROR)
        if done.failure is not Failure.WORKER_ERROR:   # a skip, a request that raised: not the build's
            self.answered[build] = done
        finished = {pair for n, at, j in group if (pair := self._fill(n, at, j, done)) is not None}
        for pair in sorted(finished):
            self._done(pair)

    def _fill(self, need: Need, cc: int, i: int, done: SpecResult) -> int | None:
        """A spec's place gets a build's result (it keeps its own spec record: its plan's notes);
        returns the pair when that was the last its step waited for."""
        mine = need.results[cc][i]
        need.results[cc][i] = dataclasses.replace(done, key=mine.key, label=mine.label, spec=mine.spec)
        if done.failure is Failure.TIMEOUT and done.bound is not None:
            self.timed_out[(id(need), cc)] = done.bound
        self.left[(id(need), cc)] -= 1
        if self.left[(id(need), cc)]:
            return None
        if (id(need), cc) in self.timed_out:   # whatever finished beside it: the same rows at any --jobs
            bound = self.timed_out[(id(need), cc)]
            need.results[cc] = [_withheld(need, r, bound) for r in need.results[cc]]
        self.m.store(need, cc)
        step = self.steps[need.pair]
        step.waiting -= 1
        return need.pair if not step.waiting and step.compiling else None
