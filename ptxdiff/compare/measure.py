"""Measuring: each (side, kernel, target) a comparison needs gets its spec results, from the
local cache, the remote tier, or compiled in workers (specs first, then their compiles), and the
results that are facts go into the cache. Pairs are measured alike on both sides: a side whose
partner compiles a covering set of guesses compiles one too, a kernel only for other targets is
measured where it is (ELSEWHERE), and replans (replan.py) measure a pair once more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ptxdiff import binaries, repo_config
from ptxdiff.compare import remote as remotemod
from ptxdiff.compare.cache import Cache, cache_dir, make_key, served, stamped
from ptxdiff.compare.replan import REPLANS, Need, pairs_of, shrunk
from ptxdiff.compare.results import Provenance
from ptxdiff.compare.spec_result import SpecResult, from_specs, from_worker
from ptxdiff.compile import toolchains
from ptxdiff.compile.protocol import CompileAnswer, CompileRequest, Failure, Outcome, SpecsAnswer, SpecsRequest
from ptxdiff.git.repo import Repo
from ptxdiff.git.values import Side
from ptxdiff.sandbox import limits
from ptxdiff.specs import cost
from ptxdiff.specs.plan import MAX_SHRINK
from ptxdiff.targets import target_name

if TYPE_CHECKING:  # types only: the compile pipeline is imported where it runs
    from ptxdiff.compile.executor import Executor
    from ptxdiff.specs.resolve import Spec


def _deterministic(result: SpecResult) -> bool:
    """A compile error, or specs that cannot be had from the kernel's effective source, are facts
    about the source, config and toolchain (the cache key); so is a compile that ran past its
    bound, for that bound (a warm re-run never compiles it again, a larger bound does), and so is
    a compile that crashed its worker (out of memory, a signal). An import failure, a worker that
    could not start or a measurement's tool that failed may not happen next time: never cached
    (`Failure.cached`)."""
    return result.failure is not None and result.failure.cached


def _crashed(pending: SpecResult, said: str, bound: float) -> SpecResult:
    """The result of a compile that crashed its worker: the pool's first line is the error, what
    the worker printed the log; `bound` is the one it ran under (cached like a timeout)."""
    error, _, log = said.partition("\n")
    return dataclasses.replace(pending, error=error, failure=Failure.CRASH, bound=bound, log=log or None)


ELSEWHERE = (100, 80, 120)   # targets a kernel absent at the default one is looked for on, in order


def _not_here(result: SpecResult) -> bool:
    """A result that says the kernel is not for this target: its module does not define it here,
    or ptxas refuses an instruction this target does not have (Blackwell-only inline asm)."""
    return result.failure in (Failure.ABSENT, Failure.REFUSED)


def _elsewhere_kernel(results: list[SpecResult]) -> bool:
    """Nothing of the kernel compiles for this target and some spec says it is not for it (the
    others may fail on what follows from that: fp4 conversions that only Blackwell lowers)."""
    return bool(results) and all(r.error for r in results) and any(_not_here(r) for r in results)


def _outgrown(results: list[SpecResult], bound: float) -> bool:
    """Cached results that include a compile timed out (or crashed) under a smaller bound than
    today's: a larger bound compiles it again, the same or a smaller one never does."""
    return any(r.failure in (Failure.TIMEOUT, Failure.CRASH) and r.bound is not None and r.bound < bound
               for r in results)


def _costly(got: list[tuple[Need, int, list[Any]]]) -> set[int]:
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


SHRINK_FIRST = "not compiled: guessed sizes over the cost rule (specs/cost.py); the pair compiles them shrunk"


def _uncovered_partners(needs: list[Need], got: list[tuple[Need, int, list[Any]]]) -> list[Need]:
    """Needs that compile every combination of guessed values while the other side of their pair
    compiles a covering set: an added optional parameter can tip one side over `max_specs`, and
    the two sides' specs must still pair up."""
    from ptxdiff.specs.resolve import covered_notes

    notes: dict[int, list[str]] = {}
    for need in needs:
        for results in need.results.values():
            for r in results:
                notes.setdefault(id(need), []).extend(r.spec.notes if r.spec else ())
    for need, _, specs in got:
        notes.setdefault(id(need), []).extend(note for spec in specs for note in spec.notes)
    out = []
    for group in pairs_of(needs):
        if len(group) == 2 and not any(n.plan.cover for n in group):
            flags = [covered_notes(notes.get(id(n), ())) for n in group]
            if flags[0] != flags[1]:
                out.append(group[flags.index(False)])
    return out


class Measurer:
    """The measuring half of the engine: its cache, remote tier, toolchains and workers."""

    def __init__(self, repo: Repo, *, jobs: int | None, targets: list[int] | None,
                 progress: Callable[[str], None] | None, use_cache: bool, imports: bool, executor: str,
                 unsandboxed: str | None = None) -> None:
        from ptxdiff.compile.pool import default_jobs

        self.repo = repo
        self.imports = imports
        self.unsandboxed = unsandboxed  # the user's setting that turned the compile sandbox off; None: on
        self.jobs = jobs or default_jobs()
        self.targets_override = targets
        self.progress = progress
        self.executor = executor  # where compile jobs run (compile/executor.py): local, ray, ray://ADDRESS
        self._tools: dict[str, dict[str, str]] = {}   # a toolchain's version -> its part of the cache key
        self.cache = Cache(cache_dir(repo.git_dir)) if use_cache else None
        # the shared tier behind it (the user's setting); its keys name the toolchain portably
        self.remote = remotemod.configured(self.cache)
        self._tool = remotemod.toolchain_id(self.cache.root) if self.remote and self.cache else binaries.fingerprint()
        self._came_from: dict[str, Provenance] = {}  # cache key -> LOCAL | REMOTE (absent: compiled)
        self.compiles = 0  # specs compiled by this engine, over all its comparisons
        self.loaded_now = 0  # (kernel, target) pairs the last comparison had to load (not cached)

    def measure(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> int:
        """Fill `need.results` from the cache or by compiling; returns how many specs compiled.
        Each (kernel, target) goes into the cache the moment its last spec is compiled, so a run
        that is stopped keeps everything it finished. A pair whose guessed types failed to compile
        on either side, where a search found types that compile, is measured once more with
        those types on both sides."""
        self.loaded_now = 0
        compiled = self._measure_once(needs, cfg, targets)
        for replan in REPLANS:
            again = replan(needs)
            if again:
                compiled += self._measure_once(again, cfg, targets)
        if not cfg.targets_given and not self.targets_override and targets == list(repo_config.Config().targets):
            compiled += self._elsewhere(needs, cfg, targets[0])
        return compiled

    def _elsewhere(self, needs: list[Need], cfg: repo_config.Config, cc: int) -> int:
        """Pairs whose kernel is only for other targets than the default one (its module defines it
        under `if is_sm100():`, or ptxas refuses its instructions here): measured on the first of
        ELSEWHERE where it is, the rows saying that target. Only when no target was asked for."""
        absent = [n for n in needs if _elsewhere_kernel(n.results.get(cc, []))]
        pairs = {n.pair for n in absent}
        todo = [n for n in needs if n.pair in pairs]   # both sides, so the pair compiles alike
        compiled = 0
        for alt in ELSEWHERE:
            if not todo:
                break
            compiled += self._measure_once(todo, cfg, [alt])
            # a need with no results there (none measured) is as absent there as one that says so
            found = {n.pair for n in todo if alt in n.results and not _elsewhere_kernel(n.results[alt])}
            for need in todo:
                if need.pair in found:
                    need.results[cc] = [dataclasses.replace(r, target=alt) for r in need.results.pop(alt)]
                    need.keys[cc] = need.keys[alt]
            todo = [n for n in todo if n.pair not in found]
        return compiled

    def _measure_once(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> int:
        from ptxdiff.compile.executor import open_executor

        missing = self._lookup(needs, cfg, targets)
        again = _uncovered_partners(needs, [])
        if again:  # the other side's cached specs are a covering set: look this side up covered too
            missing = [m for m in missing if m[0] not in again] + self._cover_too(again, cfg, targets)
        missing = self._shrunk_now(needs, missing, cfg, targets)   # cached over the rule: a warm run shrinks at once
        self.loaded_now += len(missing)
        if not missing:
            return 0
        if any(not need.side.toolchain for need, _ in missing):   # a toolchain side needs its own triton only
            binaries.require_triton()
        with open_executor(self.executor, self.repo.workdir, cfg.python_path, self.jobs, cfg.timeout,
                           self.progress, imports=self.imports, unsandboxed=self.unsandboxed) as pool:
            compiled = self._run(pool, missing, needs, cfg, targets)
        if self.remote:
            self.remote.push()
        if self.cache:
            self.cache.prune()
        self.compiles += compiled
        return compiled

    def _tool_of(self, side: Side) -> dict[str, str]:
        """The toolchain part of a side's cache keys: the installed triton's, or its toolchain's, and
        whether it reads kernels as triton 2.x did."""
        if side.toolchain is not None and side.toolchain not in self._tools:
            found = toolchains.find(side.toolchain)
            self._tools[side.toolchain] = binaries.fingerprint(found.site if found else None)
        tool = self._tool if side.toolchain is None else self._tools[side.toolchain]
        return {**tool, "read as": "triton 2.x"} if side.triton2 else tool

    def _lookup(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> list[tuple[Need, int]]:
        """Key every (need, target) and take what the cache has; returns the rest."""
        missing: list[tuple[Need, int]] = []
        bound = limits.bound(cfg.timeout).seconds
        for need in needs:
            kcfg = need.kcfg.key()
            for cc in targets:
                # the kernel's id too: two files holding the same kernel build the same closure, but
                # each result's source lines are its own file's (one key would serve the other's)
                key = make_key(fp=need.kernel.fingerprint, kernel=need.kernel.id, cfg=kcfg, target=cc,
                               tool=self._tool_of(need.side),
                               roots=cfg.python_path, imports=self.imports, plan=need.plan.key(),
                               params=[(p.name, p.constexpr, p.kind) for p in need.kernel.params])
                need.keys[cc] = key
                hit = served(self.cache.get(key), need.kernel.fingerprint, need.kernel.id, cc) if self.cache else None
                if hit is not None and not _outgrown(hit, bound):
                    need.results[cc] = hit
                    self._came_from[key] = Provenance.LOCAL
                else:
                    self._came_from.pop(key, None)
                    missing.append((need, cc))
        return self._fetch(missing)

    def _fetch(self, missing: list[tuple[Need, int]]) -> list[tuple[Need, int]]:
        """What the remote tier has of `missing` (read concurrently, bounded); returns the rest."""
        if not self.remote or not missing:
            return missing
        found = self.remote.fetch([need.keys[cc] for need, cc in missing])
        rest = []
        for need, cc in missing:
            hit = served(found.get(need.keys[cc]), need.kernel.fingerprint, need.kernel.id, cc)
            if hit is not None:
                need.results[cc] = hit
                self._came_from[need.keys[cc]] = Provenance.REMOTE
            else:
                rest.append((need, cc))
        return rest

    def origin(self, key: str) -> Provenance:
        """Where the last measure had a cache key's results: "local", "remote" or "compiled"."""
        return self._came_from.get(key, Provenance.COMPILED)

    def claim(self, key: str, origin: Provenance) -> None:
        """A key the last measure found in the local cache counts as `origin` ("compiled" or
        "remote") and as loaded: a batch before it (`Engine.compare_many`) had it so."""
        if origin == Provenance.COMPILED:
            self._came_from.pop(key, None)
        else:
            self._came_from[key] = origin
        self.loaded_now += 1

    def came(self, cc: int, *needs: Need | None) -> Provenance | None:
        """Where a row's results came from: compiled when a side was, else remote, else local."""
        got = {self._came_from.get(n.keys[cc], Provenance.COMPILED) for n in needs if n is not None and cc in n.keys}
        return next((c for c in Provenance if c in got), None)

    def _shrunk_now(self, needs: list[Need], missing: list[tuple[Need, int]], cfg: repo_config.Config,
                    targets: list[int]) -> list[tuple[Need, int]]:
        """Pairs with results over the cost rule (guarded: just decided from their specs, or read
        from the cache) take their shrunk plan now, in this round, and are looked up again: their
        compiles start beside the round's others, never in a round of their own after every other
        round (the tail that decided the wall time). Returns `missing` with theirs replaced."""
        while again := {id(n) for n in shrunk(needs)}:   # plan.MAX_SHRINK ends it
            missing = [m for m in missing if id(m[0]) not in again] + \
                self._lookup([n for n in needs if id(n) in again], cfg, targets)
        return missing

    def _cover_too(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> list[tuple[Need, int]]:
        """Give `needs` a plan that compiles a covering set, like their pair's other side; their
        results are looked up again under it (what is still missing is returned)."""
        for need in needs:
            need.plan = dataclasses.replace(need.plan, cover=True)
            need.results.clear()
        return self._lookup(needs, cfg, targets)

    def _run(self, pool: Executor, missing: list[tuple[Need, int]], needs: list[Need], cfg: repo_config.Config,
             targets: list[int]) -> int:
        """Specs for every missing (kernel, target), then their compiles, in the same workers."""
        from ptxdiff.compile.pool import Task

        got = self._specs(pool, missing)
        again = _uncovered_partners(needs, got)
        if again:  # the other side of the pair compiles a covering set of guesses: so does this side
            got = [g for g in got if g[0] not in again] + self._specs(pool, self._cover_too(again, cfg, targets))
        while costly := _costly(got):   # their shrunk specs join this round's compiles (plan.MAX_SHRINK ends it)
            for need, cc, specs in got:
                if id(need) in costly:   # a fact of the specs, stored like a result: a warm run shrinks at once
                    need.results[cc] = [SpecResult(spec.key, spec.label, spec.detail(), error=SHRINK_FIRST,
                                                   failure=Failure.OVER_COST) for spec in specs]
                    self._store(need, cc)
            fresh = self._shrunk_now(needs, [], cfg, targets)
            self.loaded_now += len(fresh)
            got = [g for g in got if id(g[0]) not in costly] + self._specs(pool, fresh)
        compile_tasks: list[Task[tuple[Need, int, int]]] = []
        left: dict[tuple[int, int], int] = {}
        # one compile per distinct specialisation: a spec that another need of this run compiles alike
        # (a kernel whose launch alone changed, a history's version on both sides of two pairs) follows it
        leaders: dict[tuple[Any, ...], tuple[Need, int, int]] = {}
        followers: dict[tuple[int, int, int], list[tuple[Need, int, int]]] = {}
        for need, cc, specs in got:
            # each spec's place holds its pending record (no result yet) until its compile answers
            need.results[cc] = [SpecResult(spec.key, spec.label, spec.detail()) for spec in specs]
            for i, spec in enumerate(specs):
                same = _build_of(need, cc, spec)
                if same in leaders:
                    lead, lead_cc, lead_i = leaders[same]
                    followers.setdefault((id(lead), lead_cc, lead_i), []).append((need, cc, i))
                    continue
                leaders[same] = (need, cc, i)
                compile_tasks.append(Task(need.side, CompileRequest(need.kernel, spec, cc),
                                          f"{need.kernel.name} {target_name(cc)} {spec.label}", (need, cc, i),
                                          cost=cost.estimate(spec, need.kernel.tiles)))
            left[(id(need), cc)] = len(specs)
        timed_out: dict[tuple[int, int], float] = {}   # (need, target) -> the bound a spec of it timed out under

        def skip(task: Task[tuple[Need, int, int]]) -> str | None:
            # one spec that compiles past the timeout: the kernel's others would too
            waiting, at, _ = task.tag
            return _not_compiled(waiting) if (id(waiting), at) in timed_out else None

        for reply in pool.run(compile_tasks, skip):
            task = reply.task
            need, cc, i = task.tag
            pending = need.results[cc][i]
            if reply.outcome is Outcome.OK:
                done = from_worker(pending, cast(CompileAnswer, reply.answer))
            elif reply.outcome is Outcome.TIMEOUT or (id(need), cc) in timed_out:
                done = dataclasses.replace(pending, error=str(reply.error), failure=Failure.TIMEOUT,
                                           bound=pool.bound_of(task))
                timed_out[(id(need), cc)] = pool.bound_of(task)
            elif reply.outcome is Outcome.CRASH:  # remembered for this bound, like a timeout
                done = _crashed(pending, str(reply.error), pool.bound_of(task))
            else:
                done = dataclasses.replace(pending, error=str(reply.error), failure=Failure.WORKER_ERROR)
            for n, at, j in [(need, cc, i), *followers.get((id(need), cc, i), ())]:
                mine = n.results[at][j]   # a follower keeps its own spec record (its plan's notes)
                n.results[at][j] = dataclasses.replace(done, key=mine.key, label=mine.label, spec=mine.spec)
                if done.failure is Failure.TIMEOUT and done.bound is not None:
                    timed_out[(id(n), at)] = done.bound
                left[(id(n), at)] -= 1
                if not left[(id(n), at)]:
                    if (id(n), at) in timed_out:   # whatever finished beside it: the same rows at any --jobs
                        n.results[at] = [_withheld(n, r, timed_out[(id(n), at)]) for r in n.results[at]]
                    self._store(n, at)
        return len(compile_tasks)

    def _specs(self, pool: Executor, missing: list[tuple[Need, int]]) -> list[tuple[Need, int, list[Any]]]:
        """The specs of each missing (kernel, target); failures to have them are results already."""
        from ptxdiff.compile.pool import Task

        tasks = [Task(n.side, SpecsRequest(n.kernel, n.kcfg, cc, n.plan), f"{n.kernel.name} {target_name(cc)} specs",
                      (n, cc)) for n, cc in missing]
        got = []
        for reply in pool.run(tasks):
            need, cc = reply.task.tag
            answer = cast(SpecsAnswer, reply.answer)
            if reply.outcome is Outcome.TIMEOUT:  # cached for this bound, like a compile that timed out
                need.results[cc] = [SpecResult(None, "-", error=str(reply.error), failure=Failure.TIMEOUT,
                                               bound=pool.timeout)]
                self._store(need, cc)
            elif reply.outcome is Outcome.CRASH:
                need.results[cc] = [_crashed(SpecResult(None, "-"), str(reply.error), pool.timeout)]
                self._store(need, cc)
            elif reply.outcome is not Outcome.OK:  # the worker could not start or the request raised: not cached
                need.results[cc] = [SpecResult(None, "-", error=str(reply.error), failure=Failure.WORKER_ERROR)]
            elif answer.error is not None:  # the specs cannot be had: a fact about source and config
                need.results[cc] = [from_specs(answer)]
                self._store(need, cc)
            else:
                got.append((need, cc, list(answer.specs)))
        return got

    def _store(self, need: Need, cc: int) -> None:
        results = need.results[cc]
        if self.cache and results and all(r.metrics is not None or _deterministic(r) for r in results):
            entry = stamped(results, need.kernel.fingerprint, need.kernel.id, cc)
            self.cache.put(need.keys[cc], entry)
            if self.remote:
                self.remote.stage(need.keys[cc], entry)
