"""Measuring: each (side, kernel, target) a comparison needs gets its spec results, from the
local cache, the remote tier, or compiled in workers (session.py: specs, then compiles, pair by
pair as answers arrive), and the results that are facts go into the cache. Pairs are measured alike on both sides: a side whose
partner compiles a covering set of guesses compiles one too, a kernel only for other targets is
measured where it is (ELSEWHERE), and replans (replan.py) measure a pair once more.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ptxdiff import binaries, repo_config
from ptxdiff.compare import remote as remotemod
from ptxdiff.compare.cache import Cache, cache_dir, make_key, served, stamped
from ptxdiff.compare.replan import REPLANS, Need, pairs_of, shrunk
from ptxdiff.compare.results import Provenance
from ptxdiff.compare.session import Session
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.compile import toolchains
from ptxdiff.compile.protocol import Failure
from ptxdiff.git.repo import Repo
from ptxdiff.git.values import Side
from ptxdiff.sandbox import limits


def _deterministic(result: SpecResult) -> bool:
    """A compile error, or specs that cannot be had from the kernel's effective source, are facts
    about the source, config and toolchain (the cache key); so is a compile that ran past its
    bound, for that bound (a warm re-run never compiles it again, a larger bound does), and so is
    a compile that crashed its worker (out of memory, a signal). An import failure, a worker that
    could not start or a measurement's tool that failed may not happen next time: never cached
    (`Failure.cached`)."""
    return result.failure is not None and result.failure.cached


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


class Measurer:
    """The measuring half of the engine: its cache, remote tier, toolchains and workers."""

    def __init__(self, repo: Repo, *, jobs: int | None, targets: list[int] | None,
                 progress: Callable[[str], None] | None, use_cache: bool, imports: bool, executor: str,
                 unsandboxed: str | None = None) -> None:
        from ptxdiff.compile.executor import default_jobs

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
        # cache keys this measure stored: a pair's later step that looks one up compiles it like the
        # first (served from the session's builds), whether or not the other pair stored it yet
        self._stored_now: set[str] = set()
        self.compiles = 0  # specs compiled by this engine, over all its comparisons
        self.loaded_now = 0  # (kernel, target) pairs the last comparison had to load (not cached)

    def measure(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> int:
        """Fill `need.results` from the cache or by compiling; returns how many specs compiled.
        Each (kernel, target) goes into the cache the moment its last spec is compiled, so a run
        that is stopped keeps everything it finished. A pair whose guessed types failed to compile
        on either side, where a search found types that compile, is measured once more with
        those types on both sides (REPLANS), the moment its own compiles are in."""
        self.loaded_now = 0
        self._stored_now.clear()
        compiled = self._session(needs, cfg, targets, REPLANS)
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
            compiled += self._session(todo, cfg, [alt], ())
            # a need with no results there (none measured) is as absent there as one that says so
            found = {n.pair for n in todo if alt in n.results and not _elsewhere_kernel(n.results[alt])}
            for need in todo:
                if need.pair in found:
                    need.results[cc] = [dataclasses.replace(r, target=alt) for r in need.results.pop(alt)]
                    need.keys[cc] = need.keys[alt]
            todo = [n for n in todo if n.pair not in found]
        return compiled

    def _session(self, needs: list[Need], cfg: repo_config.Config, targets: list[int],
                 replans: tuple[Callable[[list[Need]], list[Need]], ...]) -> int:
        """Measure `needs` in one session of the executor (opened only if something compiles)."""
        from ptxdiff.compile.executor import open_executor

        session = Session(self, cfg, targets, replans)
        for group in pairs_of(needs):
            session.start(group)
        if not session.pending:
            return 0
        with open_executor(self.executor, self.repo.workdir, cfg.python_path, self.jobs, cfg.timeout,
                           self.progress, imports=self.imports, unsandboxed=self.unsandboxed) as pool:
            session.serve(pool)
        if self.remote:
            self.remote.push()
        if self.cache:
            self.cache.prune()
        self.compiles += session.compiled
        return session.compiled

    def _tool_of(self, side: Side) -> dict[str, str]:
        """The toolchain part of a side's cache keys: the installed triton's, or its toolchain's, and
        whether it reads kernels as triton 2.x did."""
        if side.toolchain is not None and side.toolchain not in self._tools:
            found = toolchains.find(side.toolchain)
            self._tools[side.toolchain] = binaries.fingerprint(found.site if found else None)
        tool = self._tool if side.toolchain is None else self._tools[side.toolchain]
        return {**tool, "read as": "triton 2.x"} if side.triton2 else tool

    def lookup(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> list[tuple[Need, int]]:
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
                hit = served(self.cache.get(key), need.kernel.fingerprint, need.kernel.id, cc) \
                    if self.cache and key not in self._stored_now else None
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
        found = self.remote.fetch([need.keys[cc] for need, cc in missing if need.keys[cc] not in self._stored_now])
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

    def shrunk_now(self, needs: list[Need], missing: list[tuple[Need, int]], cfg: repo_config.Config,
                    targets: list[int]) -> list[tuple[Need, int]]:
        """Pairs with results over the cost rule (guarded: just decided from their specs, or read
        from the cache) take their shrunk plan now, in this round, and are looked up again: their
        compiles start beside the round's others, never in a round of their own after every other
        round (the tail that decided the wall time). Returns `missing` with theirs replaced."""
        while again := {id(n) for n in shrunk(needs)}:   # plan.MAX_SHRINK ends it
            missing = [m for m in missing if id(m[0]) not in again] + \
                self.lookup([n for n in needs if id(n) in again], cfg, targets)
        return missing

    def cover_too(self, needs: list[Need], cfg: repo_config.Config, targets: list[int]) -> list[tuple[Need, int]]:
        """Give `needs` a plan that compiles a covering set, like their pair's other side; their
        results are looked up again under it (what is still missing is returned)."""
        for need in needs:
            need.plan = dataclasses.replace(need.plan, cover=True)
            need.results.clear()
        return self.lookup(needs, cfg, targets)

    def store(self, need: Need, cc: int) -> None:
        results = need.results[cc]
        if self.cache and results and all(r.metrics is not None or _deterministic(r) for r in results):
            entry = stamped(results, need.kernel.fingerprint, need.kernel.id, cc)
            self.cache.put(need.keys[cc], entry)
            self._stored_now.add(need.keys[cc])
            if self.remote:
                self.remote.stage(need.keys[cc], entry)
