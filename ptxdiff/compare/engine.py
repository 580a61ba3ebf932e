"""The one path every entry point runs: sides -> changed kernels -> specs x targets -> compile
(cached, in workers) -> metrics -> verdicts.

CLI diff/show, the git diff driver, the pre-push hook, history and the corpus all call
`compare`; none has its own copy of this logic.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from ptxdiff import config as configmod
from ptxdiff.compare import pins
from ptxdiff.compare import remote as remotemod
from ptxdiff.compare.cache import Cache, cache_dir, make_key, served, stamped
from ptxdiff.compare.pairing import pair_lone
from ptxdiff.compare.replan import REPLANS, Need, pairs_of
from ptxdiff.compare.results import Report, Row
from ptxdiff.compare.verdict import classify, delta, pair_label, reason, signature_change
from ptxdiff.compile import toolchain, toolchains
from ptxdiff.config import KernelConfig
from ptxdiff.discovery.kernels import Broken, Discovery, Kernel, discover, renamed_id
from ptxdiff.discovery.memo import Memo, changed_paths, update
from ptxdiff.errors import UsageError
from ptxdiff.git.repo import Repo, Side, Snapshot
from ptxdiff.metrics.ptx import SourceLines
from ptxdiff.record import launches as recorded
from ptxdiff.sandbox import limits
from ptxdiff.specs import launch
from ptxdiff.specs import plan as planmod
from ptxdiff.specs.launch import LaunchInputs
from ptxdiff.targets import target_name
from ptxdiff.trust import Permissions, suggestions

if TYPE_CHECKING:  # types only: the compile pipeline is imported where it runs
    from ptxdiff.compile.executor import Executor

BATCH = 256  # comparisons whose compile jobs `compare_many` measures together (bounds what is held at once)


def _deterministic(result: dict) -> bool:
    """A compile error, or specs that cannot be had from the kernel's effective source, are facts
    about the source, config and toolchain (the cache key); so is a compile that ran past its
    bound, for that bound (`timed_out`: a warm re-run never compiles it again, a larger bound
    does), and so is a compile that crashed its worker (`crashed`: out of memory, a signal). An
    import failure or a worker that could not start may not happen next time: never cached."""
    return bool(result.get("deterministic")) or result.get("timed_out") is not None or (
        result.get("crashed") is not None) or (
        result.get("key") is not None and str(result.get("error", "")).startswith("compile failed:"))


def _crash(said: str, bound: float) -> dict:
    """The result of a compile that crashed its worker: the pool's first line is the error, what
    the worker printed the log; `crashed` holds the bound it ran under (cached like `timed_out`)."""
    error, _, log = said.partition("\n")
    return {"error": error, "crashed": bound, **({"log": log} if log else {})}


ELSEWHERE = (100, 80, 120)   # targets a kernel absent at the default one is looked for on, in order


def _not_here(result: dict) -> bool:
    """A result that says the kernel is not for this target: its module does not define it here,
    or ptxas refuses an instruction this target does not have (Blackwell-only inline asm)."""
    return bool(result.get("absent")) or "not supported on .target" in str(result.get("error", ""))


def _elsewhere_kernel(results: list[dict]) -> bool:
    """Nothing of the kernel compiles for this target and some spec says it is not for it (the
    others may fail on what follows from that: fp4 conversions that only Blackwell lowers)."""
    return bool(results) and all(r.get("error") for r in results) and any(_not_here(r) for r in results)


def _tritons_own(*needs: Need | None) -> str | None:
    """Where every side binds the kernel's name to a triton builtin (declared.TritonsOwn): what
    to say instead of rows. None when a side has code of its own to compile."""
    results = [r for need in needs if need is not None for rs in need.results.values() for r in rs]
    if results and all(r.get("tritons_own") for r in results):
        return f"not a kernel under this triton: the module binds it to triton's `{results[0]['tritons_own']}`"
    return None


def _outgrown(results: list, bound: float) -> bool:
    """Cached results that include a compile timed out under a smaller bound than today's (a
    compile of guessed sizes has its own, smaller bound: `guarded`)."""
    return any(isinstance(r.get(key), (int, float))
               and r[key] < (min(bound, planmod.GUESSED_BOUND_S) if r.get("guarded") else bound)
               for r in results for key in ("timed_out", "crashed"))


def _guessed_sizes(spec) -> bool:
    """Whether a spec compiles guessed integer constexprs (sizes a cost guard may shrink)."""
    return any(isinstance(v, int) and not isinstance(v, bool) and not k.endswith(":") for k, v in spec.guessed)


UNFIT = ("guessed values that do not fit: the same error on both sides while other specs compile "
         "(config or `ptxdiff record` give the real ones)")
UNFIT_ONE_SIDE = ("guessed values that do not fit: this side's other specs compile "
                  "(config or `ptxdiff record` give the real ones)")


def _signature_change(a: dict, b: dict) -> str | None:
    """What the parameters did between two compiled results (verdict.signature_change)."""
    old, new = ((r.get("spec") or {}).get("signature") if isinstance(r.get("spec"), dict) else None for r in (a, b))
    return signature_change(old, new) if isinstance(old, dict) and isinstance(new, dict) else None


def _same_failure(a: str | None, b: str | None) -> bool:
    """Two compile errors alike but for where they are (`ops/k.py:12:5:` moves with an edit)."""
    def bare(e: str) -> str:
        return re.sub(r"\d+", "N", e)
    return bool(a and b) and bare(a or "") == bare(b or "")


def _blocks(verdict: str, source: str | None, cfg: configmod.Config, error: str | None = None) -> bool:
    """The block policy; the gate fails closed. A changed kernel that could not be measured on
    either side (`unmeasured`, or `added` with an error) blocks whatever its values' source
    (`block_unmeasured`). A row whose spec holds guesses blocks like any other (`block_guessed`):
    both sides got the same guesses, so a structural verdict is a change of the code."""
    if verdict == "unmeasured" or (verdict == "added" and error):
        return cfg.block_unmeasured or verdict in cfg.block
    if verdict not in cfg.block:
        return False
    return source != "guessed" or cfg.block_guessed


def path_matches(path: str, specs: list[str] | None) -> bool:
    if not specs:
        return True
    for spec in specs:
        spec = spec.rstrip("/")
        if spec in ("", ".") or path == spec or path.startswith(spec + "/") or fnmatch.fnmatch(path, spec):
            return True
    return False


def _uncovered_partners(needs: list[Need], got: list[tuple[Need, int, list]]) -> list[Need]:
    """Needs that compile every combination of guessed values while the other side of their pair
    compiles a covering set: an added optional parameter can tip one side over `max_specs`, and
    the two sides' specs must still pair up."""
    from ptxdiff.specs.resolve import covered_notes

    notes: dict[int, list[str]] = {}
    for need in needs:
        for results in need.results.values():
            for r in results:
                notes.setdefault(id(need), []).extend((r.get("spec") or {}).get("notes", ()))
    for need, _, specs in got:
        notes.setdefault(id(need), []).extend(note for spec in specs for note in spec.notes)
    out = []
    for group in pairs_of(needs):
        if len(group) == 2 and not any(n.plan.cover for n in group):
            flags = [covered_notes(notes.get(id(n), ())) for n in group]
            if flags[0] != flags[1]:
                out.append(group[flags.index(False)])
    return out


@dataclass(frozen=True)
class _Pair:
    """A compared kernel pair with each side's launch inputs and config entry."""

    old: Kernel | None
    new: Kernel | None
    old_inputs: LaunchInputs | None
    new_inputs: LaunchInputs | None
    old_config: KernelConfig | None
    new_config: KernelConfig | None
    retooled: bool = False   # the sides compile with different tritons: never unchanged
    role: str = pins.GATE          # what its rows decide (compare/pins.py): the gate, or the report only
    said: tuple[str, ...] = ()     # pins.PIN: pins that contradict the branch's launch sites

    @property
    def kernel_id(self) -> str:
        kernel = self.new or self.old
        assert kernel is not None  # a pair has at least one side
        return kernel.id

    @property
    def unchanged(self) -> bool:
        """Both sides there, the same effective source, launched the same way."""
        return self.old is not None and self.new is not None and self.old.fingerprint == self.new.fingerprint \
            and self.old_inputs == self.new_inputs and not self.retooled and not self.said

    def launch_changes(self) -> list[str]:
        if self.old_inputs is None or self.new_inputs is None:
            return []
        return launch.changes(self.old_inputs, self.new_inputs)

    def launch_paths(self) -> set[str]:
        if self.old_inputs is None or self.new_inputs is None:
            return set()
        return launch.paths_of(self.old_inputs, self.new_inputs)


def _launched(kernel_pairs: list[tuple[Kernel | None, Kernel | None]], new_snap: Snapshot, old_snap: Snapshot | None,
              cfg: configmod.Config, old_cfg: configmod.Config, base: configmod.Config | None = None) -> list[_Pair]:
    """Each pair with the launch inputs and config entry of each side (`cfg`, `old_cfg`: the
    configs whose kernel entries describe the newer and the older side). With `base` (the base
    side's config, for a repository's own config) the gate compiles what the base says, the
    branch's own entries and recordings only the report (`_gated`)."""
    new_launches = recorded.load(new_snap.read, new_snap.__contains__)
    old_launches = launch.side_launches(old_snap)
    out = []
    for o, n in kernel_pairs:
        n_in = launch.inputs_of(n, new_launches, cfg) if n else None
        o_in = launch.inputs_of(o, old_launches, old_cfg) if o else None
        o_cfg = old_cfg.for_kernel(o.id) if o else None
        if o_in is not None and n_in is not None and o is not None and n is not None:
            if not o_in.config:  # no entry of its own: the newer side's describes it
                o_cfg = cfg.for_kernel(n.id)
            o_in = launch.inherit(o_in, n_in)
        pair = _Pair(o, n, o_in, n_in, o_cfg, cfg.for_kernel(n.id) if n else None)
        out += _gated(pair, base, old_launches, cfg.source) if base is not None and o and n else [pair]
    return out


def _gated(pair: _Pair, base: configmod.Config, base_launches: dict, source: str) -> list[_Pair]:
    """A pair as the gate compiles it (both sides with the base's entries and recordings), the
    branch's own (for the report, where it differs), the launch sites' values where the gate's
    pins replace them, and the branch's pins that contradict its launch sites (they block)."""
    o, n = pair.old, pair.new
    assert o is not None and n is not None and pair.old_inputs is not None and pair.new_inputs is not None
    o_in, n_in = launch.inputs_of(o, base_launches, base), launch.inputs_of(n, base_launches, base)
    o_cfg, n_cfg = base.for_kernel(o.id), base.for_kernel(n.id)
    out = [_Pair(o, n, o_in, n_in, o_cfg, n_cfg)]
    if (pair.old_inputs, pair.new_inputs, pair.old_config, pair.new_config) != (o_in, n_in, o_cfg, n_cfg):
        out.append(dataclasses.replace(pair, role=pins.REPORT))
    stale = {c.name for c in pins.contradictions(n, n_cfg, n_in.recorded, base.source)}
    if stale:
        o_un, n_un = pins.unpinned(o_cfg, stale), pins.unpinned(n_cfg, stale)
        out.append(_Pair(o, n, pins.call_site_inputs(o_in, o_un), pins.call_site_inputs(n_in, n_un), o_un, n_un,
                         role=pins.CALL_SITE))
    was = {c.key for c in pins.contradictions(o, o_cfg, o_in.recorded, base.source)}   # the base's own, already there
    said = [c.line() for c in pins.contradictions(n, pair.new_config, pair.new_inputs.recorded, source)
            if c.key not in was]
    if said:
        out.append(dataclasses.replace(pair, role=pins.PIN, said=tuple(said)))
    return out


@dataclass
class _Planned:
    """A comparison planned up to its needs, which are measured before its rows are made:
    alone (`compare`) or with other comparisons' needs (`compare_many`)."""

    old: Side | None
    new: Side
    cfg: configmod.Config
    targets: list[int]
    pairs: list[_Pair]
    needs: dict[tuple, Need]
    broken_rows: list[tuple[Broken | None, Broken | None]]
    old_found: Discovery
    new_found: Discovery
    messages: list[str]


class Engine:
    def __init__(self, repo: Repo, jobs: int | None = None, targets: list[int] | None = None,
                 progress: Callable[[str], None] | None = None, use_cache: bool = True,
                 permissions: Permissions | None = None, executor: str = "local",
                 tritons: toolchains.Policy | None = None):
        from ptxdiff.compile.pool import default_jobs

        self.repo = repo
        # what of the revision's code may run (imports, outputs, timing): the user's choice only
        self.permissions = permissions or Permissions()
        self.imports = self.permissions.imports
        self.jobs = jobs or default_jobs()
        self.targets_override = targets
        self.progress = progress
        self.executor = executor  # where compile jobs run (compile/executor.py): local, ray, ray://ADDRESS
        self.tritons = tritons    # how each side's triton is chosen (compile/toolchains.py); None: the installed
        self._tools: dict[str, dict[str, str]] = {}   # a toolchain's version -> its part of the cache key
        self.cache = Cache(cache_dir(repo.git_dir)) if use_cache else None
        # the shared tier behind it (the user's setting); its keys name the toolchain portably
        self.remote = remotemod.configured(self.cache)
        self._tool = remotemod.toolchain_id(self.cache.root) if self.remote and self.cache else toolchain.fingerprint()
        self._came_from: dict[str, str] = {}  # cache key -> "local" | "remote" (absent: compiled)
        self.compiles = 0  # specs compiled by this engine, over all its comparisons
        self._loaded_now = 0  # (kernel, target) pairs the last comparison had to load (not cached)

    # -- discovery -------------------------------------------------------------------------
    @staticmethod
    def _select(found: Discovery, cfg: configmod.Config, pathspecs: list[str] | None,
                back: dict[str, str]) -> Discovery:
        """Kernels in selected files whose effective source reads a file the pathspecs match.

        `back` maps this side's paths to the other side's names (renames), so both sides are
        filtered by the same, newer names.
        """
        def name(p: str) -> str:
            return back.get(p, p)
        # the recording and the config hold launch values of any kernel: naming one selects all
        every = {p for p in launch.FILES if path_matches(p, pathspecs)}
        kernels = {kid: k for kid, k in found.kernels.items() if cfg.selects(name(k.path))
                   and any(path_matches(name(p), pathspecs) for p in k.paths | {k.path} | every)}
        broken = {p: b for p, b in found.broken.items() if cfg.selects(name(p)) and path_matches(name(p), pathspecs)}
        return Discovery(kernels, broken)

    def _discover(self, new: Snapshot, old: Snapshot | None, cfg: configmod.Config) -> tuple[Discovery, Discovery | None]:
        """Both sides' kernels. A commit's discovery is stored by tree; a side without one is
        brought up to date from the other side's (or HEAD's) instead of discovered anew."""
        memo = Memo(self.cache.root, cfg.python_path) if self.cache else None
        sides = [s for s in (new, old) if s is not None]
        trees = {id(s): self.repo.tree_id(s.side) for s in sides}
        found: dict[int, Discovery] = {}
        for s in sides:
            tree = trees[id(s)]
            stored = memo.get(tree) if memo and tree else None
            if stored is not None:
                found[id(s)] = stored
        head = None
        for s in sorted(sides, key=lambda s: trees[id(s)] is None):  # commits first: they can be stored
            if id(s) in found:
                continue
            base = next(((found[id(o)], o) for o in sides if id(o) in found), None)
            if base is None and memo and trees[id(s)] is None:
                head = head or self._head_side()
                head_tree = self.repo.tree_id(head.side) if head else None
                stored = memo.get(head_tree) if head_tree else None
                base = (stored, head) if stored is not None and head is not None else None
            if base is not None:
                found[id(s)] = update(base[0], s, cfg.python_path, changed_paths(base[1], s))
            else:
                found[id(s)] = discover(s, cfg.python_path)
            tree = trees[id(s)]
            if memo and tree:
                memo.put(tree, found[id(s)])
        return found[id(new)], (found[id(old)] if old is not None else None)

    def _head_side(self) -> Snapshot | None:
        head = self.repo.head_commit()
        return self.repo.snapshot(Side("HEAD", head)) if head else None

    # -- measuring -------------------------------------------------------------------------
    def _measure(self, needs: list[Need], cfg: configmod.Config, targets: list[int]) -> int:
        """Fill `need.results` from the cache or by compiling; returns how many specs compiled.
        Each (kernel, target) goes into the cache the moment its last spec is compiled, so a run
        that is stopped keeps everything it finished. A pair whose guessed types failed to compile
        on either side, where a search found types that compile, is measured once more with
        those types on both sides."""
        self._loaded_now = 0
        compiled = self._measure_once(needs, cfg, targets)
        for replan in REPLANS:
            again = replan(needs)
            if again:
                compiled += self._measure_once(again, cfg, targets)
        if not cfg.targets_given and not self.targets_override and targets == list(configmod.Config().targets):
            compiled += self._elsewhere(needs, cfg, targets[0])
        return compiled

    def _elsewhere(self, needs: list[Need], cfg: configmod.Config, cc: int) -> int:
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
            found = {n.pair for n in todo if not _elsewhere_kernel(n.results.get(alt, [{"absent": 1, "error": "-"}]))}
            for need in todo:
                if need.pair in found:
                    need.results[cc] = [{**r, "target": alt} for r in need.results.pop(alt)]
                    need.keys[cc] = need.keys[alt]
            todo = [n for n in todo if n.pair not in found]
        return compiled

    def _measure_once(self, needs: list[Need], cfg: configmod.Config, targets: list[int]) -> int:
        from ptxdiff.compile.executor import open_executor

        missing = self._lookup(needs, cfg, targets)
        again = _uncovered_partners(needs, [])
        if again:  # the other side's cached specs are a covering set: look this side up covered too
            missing = [m for m in missing if m[0] not in again] + self._cover_too(again, cfg, targets)
        self._loaded_now += len(missing)
        if not missing:
            return 0
        tooled = [need.side.toolchain for need, _ in missing if need.side.toolchain]
        if len(tooled) < len(missing):
            toolchain.require_triton()
        if tooled and self.executor != "local":
            raise UsageError(f"triton {tooled[0]} is a toolchain of this machine: compile with --executor local, "
                             "or install that triton beside ptxdiff on the cluster")
        with open_executor(self.executor, self.repo.workdir, cfg.python_path, self.jobs, cfg.timeout,
                           self.progress, imports=self.imports) as pool:
            compiled = self._run(pool, missing, needs, cfg, targets)
        if self.remote:
            self.remote.push()
        if self.cache:
            self.cache.prune()
        self.compiles += compiled
        return compiled

    def _tool_of(self, side: Side) -> dict[str, str]:
        """The toolchain part of a side's cache keys: the installed triton's, or its toolchain's."""
        if side.toolchain is None:
            return self._tool
        if side.toolchain not in self._tools:
            found = toolchains.find(side.toolchain)
            self._tools[side.toolchain] = toolchain.fingerprint(found.site if found else None)
        return self._tools[side.toolchain]

    def _lookup(self, needs: list[Need], cfg: configmod.Config, targets: list[int]) -> list[tuple[Need, int]]:
        """Key every (need, target) and take what the cache has; returns the rest."""
        missing: list[tuple[Need, int]] = []
        bound = limits.bound(cfg.timeout).seconds
        for need in needs:
            kcfg = need.kcfg.key()
            for cc in targets:
                key = make_key(fp=need.kernel.fingerprint, cfg=kcfg, target=cc, tool=self._tool_of(need.side),
                               roots=cfg.python_path, imports=self.imports, plan=need.plan.key(),
                               params=[(p.name, p.constexpr, p.kind) for p in need.kernel.params])
                need.keys[cc] = key
                hit = served(self.cache.get(key), need.kernel.fingerprint, need.kernel.id, cc) if self.cache else None
                if isinstance(hit, list) and not _outgrown(hit, bound):
                    need.results[cc] = hit
                    self._came_from[key] = "local"
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
            if isinstance(hit, list):
                need.results[cc] = hit
                self._came_from[need.keys[cc]] = "remote"
            else:
                rest.append((need, cc))
        return rest

    def _came(self, cc: int, *needs: Need | None) -> str | None:
        """Where a row's results came from: compiled when a side was, else remote, else local."""
        got = {self._came_from.get(n.keys[cc], "compiled") for n in needs if n is not None and cc in n.keys}
        return next((c for c in ("compiled", "remote", "local") if c in got), None)

    def _cover_too(self, needs: list[Need], cfg: configmod.Config, targets: list[int]) -> list[tuple[Need, int]]:
        """Give `needs` a plan that compiles a covering set, like their pair's other side; their
        results are looked up again under it (what is still missing is returned)."""
        for need in needs:
            need.plan = dataclasses.replace(need.plan, cover=True)
            need.results.clear()
        return self._lookup(needs, cfg, targets)

    def _run(self, pool: Executor, missing: list[tuple[Need, int]], needs: list[Need], cfg: configmod.Config,
             targets: list[int]) -> int:
        """Specs for every missing (kernel, target), then their compiles, in the same workers."""
        from ptxdiff.compile.pool import Task

        got = self._specs(pool, missing)
        again = _uncovered_partners(needs, got)
        if again:  # the other side of the pair compiles a covering set of guesses: so does this side
            got = [g for g in got if g[0] not in again] + self._specs(pool, self._cover_too(again, cfg, targets))
        compile_tasks: list[Task] = []
        left: dict[tuple[int, int], int] = {}
        for need, cc, specs in got:
            need.results[cc] = []
            for spec in specs:
                slot = {"key": spec.key, "label": spec.label, "spec": spec.as_dict()}
                need.results[cc].append(slot)
                compile_tasks.append(Task(need.side, "compile", (need.kernel, spec, cc),
                                          f"{need.kernel.name} {target_name(cc)} {spec.label}", (need, cc, slot),
                                          timeout=planmod.GUESSED_BOUND_S if _guessed_sizes(spec) else None))
            left[(id(need), cc)] = len(specs)
        timed_out: set[tuple[int, int]] = set()

        def skip(task) -> str | None:  # one spec that compiles past the timeout: the kernel's others would too
            need, cc, _ = task.tag
            return (f"not compiled: another spec of {need.kernel.name} timed out (config key 'timeout')"
                    if (id(need), cc) in timed_out else None)

        for task, kind, payload in pool.run(compile_tasks, skip):
            need, cc, slot = cast(tuple[Need, int, dict], task.tag)
            if kind == "ok":
                slot.update(cast(dict, payload))
            elif kind == "timeout" or (id(need), cc) in timed_out:
                slot["error"], slot["timed_out"] = payload, pool.bound_of(task)
                if pool.bound_of(task) < pool.timeout:
                    slot["guarded"] = True
                timed_out.add((id(need), cc))
            elif kind == "crash":  # remembered for this bound, like a timeout
                slot.update(_crash(str(payload), pool.bound_of(task)))
                if pool.bound_of(task) < pool.timeout:
                    slot["guarded"] = True
            else:
                slot["error"], slot["transient"] = payload, True
            left[(id(need), cc)] -= 1
            if not left[(id(need), cc)]:
                self._store(need, cc)
        return len(compile_tasks)

    def _specs(self, pool: Executor, missing: list[tuple[Need, int]]) -> list[tuple[Need, int, list]]:
        """The specs of each missing (kernel, target); failures to have them are results already."""
        from ptxdiff.compile.pool import Task

        tasks = [Task(n.side, "specs", (n.kernel, n.kcfg, cc, n.plan), f"{n.kernel.name} {target_name(cc)} specs",
                      (n, cc)) for n, cc in missing]
        got = []
        for task, kind, payload in pool.run(tasks):
            need, cc = cast(tuple[Need, int], task.tag)
            if kind == "timeout":  # cached for this bound, like a compile that timed out
                need.results[cc] = [{"key": None, "label": "-", "error": payload, "timed_out": pool.timeout}]
                self._store(need, cc)
            elif kind == "crash":
                need.results[cc] = [{"key": None, "label": "-", **_crash(str(payload), pool.timeout)}]
                self._store(need, cc)
            elif kind != "ok":  # the worker could not start or crashed: not cached
                need.results[cc] = [{"key": None, "label": "-", "error": payload, "transient": True}]
            elif isinstance(payload, dict):  # the specs cannot be had: a fact about source and config
                need.results[cc] = [{"key": None, "label": "-", **payload}]
                self._store(need, cc)
            else:
                got.append((need, cc, cast(list, payload)))
        return got

    def _store(self, need: Need, cc: int) -> None:
        results = need.results[cc]
        if self.cache and results and all("metrics" in r or _deterministic(r) for r in results):
            entry = stamped(results, need.kernel.fingerprint, need.kernel.id, cc)
            self.cache.put(need.keys[cc], entry)
            if self.remote:
                self.remote.stage(need.keys[cc], entry)

    # -- the comparison --------------------------------------------------------------------
    def compare(self, old: Side | None, new: Side, pathspecs: list[str] | None = None,
                show_all: bool = False, config: configmod.Config | None = None,
                outputs: bool | None = None, time: bool | None = None, own_entries: bool = False) -> Report:
        """Kernels whose effective source reads a file matching `pathspecs` (all when None).

        `outputs`/`time` force the dynamic checks on (True) or off (False); None follows what
        the user allowed (`Permissions`); the repository's config only earns a suggestion."""
        planned = self._plan(old, new, pathspecs, show_all, config, own_entries)
        return self._report(planned, self._measure(list(planned.needs.values()), planned.cfg, planned.targets),
                            outputs, time)

    def compare_many(self, comparisons: list[tuple[Side | None, Side, list[str] | None]],
                     config: configmod.Config | None = None, own_entries: bool = False) -> Iterator[Report]:
        """`compare` of each (old, new, pathspecs), with the compile jobs of many comparisons in one
        batch (BATCH at a time): history keeps every worker, or every Ray node, busy at once
        instead of waiting on one commit. The reports, in order, are those of comparing them one
        by one; they come a batch at a time."""
        for start in range(0, len(comparisons), BATCH):
            planned = [self._plan(old, new, paths, False, config, own_entries)
                       for old, new, paths in comparisons[start:start + BATCH]]
            yield from self._measured_together(planned)

    def _measured_together(self, planned: list[_Planned]) -> list[Report]:
        """The distinct needs of all `planned` measured in one go, then each comparison measured
        as `compare` does, from the cache. A result the batch compiled (or fetched from the remote
        tier) counts so in the first comparison that uses it, as one comparison after another
        would have it (with --no-cache a throwaway cache holds the batch for this run, and a
        result counts as compiled in each comparison)."""
        import shutil
        import tempfile
        from pathlib import Path

        scratch = tempfile.mkdtemp(prefix="ptxdiff-batch-") if self.cache is None else None
        if scratch:
            self.cache = Cache(Path(scratch))
        try:
            got = self._prefetch(planned)
            reports = []
            for p in planned:
                compiled = self._measure(list(p.needs.values()), p.cfg, p.targets)
                claimed = [(need, cc) for need in p.needs.values() for cc, key in need.keys.items()
                           if key in got and self._came_from.get(key) == "local"]
                for need, cc in claimed:
                    key = need.keys[cc]
                    if got[key] == "compiled":
                        self._came_from.pop(key, None)
                        compiled += sum(1 for r in need.results[cc] if r.get("key") is not None)
                    else:
                        self._came_from[key] = got[key]
                if not scratch:
                    for need, cc in claimed:
                        got.pop(need.keys[cc], None)
                self._loaded_now += len(claimed)
                reports.append(self._report(p, compiled))
            return reports
        finally:
            if scratch:
                self.cache = None
                shutil.rmtree(scratch, ignore_errors=True)

    def _prefetch(self, planned: list[_Planned]) -> dict[str, str]:
        """Measure the distinct needs of `planned` together (per python_path, timeout and targets,
        what a measurement depends on); returns the cache keys it compiled or fetched, and which."""
        groups: dict[tuple, tuple[_Planned, list[Need]]] = {}
        seen: set[tuple] = set()
        offset = 0
        for p in planned:
            group = groups.setdefault((tuple(p.cfg.python_path), p.cfg.timeout, tuple(p.targets)), (p, []))[1]
            for need in p.needs.values():
                same = (need.kernel.id, need.kernel.fingerprint, need.kcfg.key(), need.plan.key(), need.side.toolchain)
                if same not in seen:  # pair ids stay apart: a pair's two sides are looked at together
                    seen.add(same)
                    group.append(dataclasses.replace(need, pair=offset + need.pair, results={}, keys={}))
            offset += len(p.pairs)
        got: dict[str, str] = {}
        for p, needs in groups.values():
            self._measure(needs, p.cfg, p.targets)
            for need in needs:
                for key in need.keys.values():
                    if self._came_from.get(key, "compiled") != "local":
                        got[key] = self._came_from.get(key, "compiled")
        return got

    def _plan(self, old: Side | None, new: Side, pathspecs: list[str] | None, show_all: bool,
              config: configmod.Config | None, own_entries: bool) -> _Planned:
        """A comparison up to what must be measured: its config, kernel pairs and needs."""
        new_snap = self.repo.snapshot(new)
        old_snap = self.repo.snapshot(old) if old is not None else None
        cfg, policy_note = (config, None) if config is not None else self._config(new_snap, old_snap)
        targets = self.targets_override or list(cfg.targets)
        found = self._discover(new_snap, old_snap, cfg)
        new_found = self._select(found[0], cfg, pathspecs, {})
        messages: list[str] = configmod.unmatched_kernels(cfg, [*found[0].kernels, *(found[1] or found[0]).kernels])
        messages += [policy_note] if policy_note else []
        if self.tritons is not None:   # the triton each side compiles with, installed now where missing
            old, new, tool_note = toolchains.apply(self.tritons, old, new, old_snap, new_snap)
            messages += [tool_note] if tool_note else []
        if old is None:
            kernel_pairs: list[tuple[Kernel | None, Kernel | None]] = [(None, k) for k in new_found.kernels.values()]
            broken_rows: list[tuple[Broken | None, Broken | None]] = [(None, b) for b in new_found.broken.values()]
            old_found = Discovery({}, {})
        else:
            renames = self.repo.renames(old, new)
            back = {v: k for k, v in renames.items()}
            old_found = self._select(found[1] or Discovery({}, {}), cfg, pathspecs, back)
            kernel_pairs, broken_rows = self._pair(old_found, new_found, renames)
        # kernel entries: a config the user gives describes both sides, unless `own_entries` (history:
        # the newest config's settings, each commit's own entries)
        entries = launch.side_config(new_snap, cfg) if config is not None and own_entries else cfg
        old_entries = config if config is not None and not own_entries else launch.side_config(old_snap, entries)
        base = launch.side_config(old_snap, configmod.Config()) if config is None and old_snap is not None else None
        pairs = _launched(kernel_pairs, new_snap, old_snap, entries, old_entries, base)
        if old is not None and old.toolchain != new.toolchain:
            pairs = [dataclasses.replace(p, retooled=True) for p in pairs]
        if not show_all:
            pairs = [p for p in pairs if not p.unchanged]
        if pathspecs and not new_found.kernels and not new_found.broken and not old_found.kernels:
            snaps = [new_snap] + ([self.repo.snapshot(old)] if old is not None else [])
            unknown = [p for p in pathspecs if not any(path_matches(f, [p]) for s in snaps for f in s.paths)]
            if unknown:
                raise UsageError(f"{unknown[0]}: no such path in {' or '.join(s.side.short for s in snaps)}")
            messages.append(f"no Triton kernels in {' '.join(pathspecs)}")
        needs: dict[tuple, Need] = {}
        for i, pair in enumerate(pairs):
            for side, k, kcfg, inputs in ((old, pair.old, pair.old_config, pair.old_inputs),
                                          (new, pair.new, pair.new_config, pair.new_inputs)):
                if side is None or k is None or inputs is None or kcfg is None or pair.said \
                        or (side, k.fingerprint, k.id, pair.role) in needs:
                    continue
                if side is old and pair.unchanged:  # an unchanged kernel (show_all) is measured once, on the new side
                    continue
                plan = planmod.make(k, pair.old, pair.new, inputs, cfg.max_specs)
                needs[(side, k.fingerprint, k.id, pair.role)] = Need(side, k, plan, kcfg, i)
        return _Planned(old, new, cfg, targets, pairs, needs, broken_rows, old_found, new_found, messages)

    def _report(self, planned: _Planned, compiled: int, outputs: bool | None = None,
                time: bool | None = None) -> Report:
        """The rows and the report of a planned comparison whose needs are measured."""
        old, new, cfg, targets, pairs, needs = (planned.old, planned.new, planned.cfg, planned.targets,
                                                planned.pairs, planned.needs)
        broken_rows, old_found, new_found, messages = (planned.broken_rows, planned.old_found, planned.new_found,
                                                       planned.messages)
        rows: list[Row] = []
        for pair in pairs:
            o, n = pair.old, pair.new
            if pair.said:
                rows += [Row(pair.kernel_id, "-", target_name(cc), "failed", _blocks("failed", None, cfg, line), None,
                             None, {}, line) for cc in targets for line in pair.said]
                continue
            new_need = needs.get((new, n.fingerprint, n.id, pair.role)) if n else None
            old_need = new_need if pair.unchanged else needs.get((old, o.fingerprint, o.id, pair.role)) if o else None
            said = _tritons_own(old_need, new_need)
            if said:
                messages.append(f"{pair.kernel_id}: {said}")
                continue
            for cc in targets:
                came = self._came(cc, old_need, new_need)
                rows += [dataclasses.replace(r, cache=came) for r in self._rows(
                    pair, old_need.results[cc] if old_need else None,
                    new_need.results[cc] if new_need else None, cc, cfg, old is not None)]
        rows = pins.deduped(rows)
        said = pins.branch_line(rows)
        messages += [said] if said else []
        for o_broken, n_broken in broken_rows:
            rows += self._broken_rows(o_broken, n_broken, old_found, new_found, targets, cfg)
        if old is not None:
            rows = self._dynamic(rows, pairs, old, new, cfg, outputs, time, messages)
        messages += suggestions(cfg, self.permissions)
        messages += self.remote.lines() if self.remote else remotemod.suggestion(cfg)
        if self.imports and self._loaded_now:
            messages.append("imported the revisions' modules to build kernels (their top-level code ran)")
        # targets by number (sm_80 before sm_100), not as text
        rows.sort(key=lambda r: (r.kernel, int(r.target[3:]) if r.target[3:].isdigit() else 0, r.target, r.spec))
        tools = {**toolchain.versions(), "triton": self._triton_name(new)}
        if old is not None:
            tools["triton_old"] = self._triton_name(old)
            if tools["triton_old"] != tools["triton"]:
                said = f"triton {tools['triton_old']} -> {tools['triton']}"
                rows = [dataclasses.replace(r, toolchain=said) for r in rows]
        return Report(old, new, tools, rows, cfg, compiled, messages)

    @staticmethod
    def _triton_name(side: Side) -> str:
        return side.toolchain or toolchain.triton_version() or "missing"

    @staticmethod
    def _config(new_snap: Snapshot, old_snap: Snapshot | None) -> tuple[configmod.Config, str | None]:
        """The newer side's config under the base side's policy (the gate fails closed: a change
        cannot relax its own review); a base whose config does not load gives the defaults' policy."""
        cfg = configmod.load(new_snap.read, new_snap.__contains__)
        if old_snap is None:
            return cfg, None
        try:
            base = configmod.load(old_snap.read, old_snap.__contains__)
        except configmod.ConfigError as e:
            base = configmod.Config(source=f"the defaults ({e})")
        return configmod.governed(base, cfg)

    # -- dynamic checks ----------------------------------------------------------------------
    def _dynamic(self, rows: list[Row], pairs: list[_Pair], old: Side, new: Side, cfg: configmod.Config,
                 outputs: bool | None, time: bool | None, messages: list[str]) -> list[Row]:
        """Run old and new (outputs, timing) for the kernels that ask for it; rows gain results."""
        from ptxdiff.compile.pool import Pool, Task
        from ptxdiff.dynamic.replay import plan_for
        from ptxdiff.dynamic.runner import RunPlan, sizes_around
        from ptxdiff.specs.launch import side_launches

        semantic = self.permissions.semantic
        want_time = time if time is not None else self.permissions.time
        by_kernel: dict[str, list[Row]] = {}
        for r in rows:
            by_kernel.setdefault(r.kernel, []).append(r)
        tasks = []
        recordings: list[dict] = []   # the new side's recorded launches, then the old side's (read once)
        for pair in pairs:
            o, n = pair.old, pair.new
            if o is None or n is None or pair.unchanged or pair.role != pins.GATE:
                continue
            kernel_rows = by_kernel.get(n.id, [])
            check = outputs if outputs is not None else (
                semantic == "always" or (semantic == "auto" and any(r.verdict == "constants-only" for r in kernel_rows)))
            if not check and not want_time:
                continue
            run = cfg.for_kernel(n.id).run
            if not run.wrapper or not run.inputs:
                if not recordings:
                    recordings += [side_launches(self.repo.snapshot(new)), side_launches(self.repo.snapshot(old))]
                replay = plan_for(o.id, n.id, [p.name for p in n.params], recordings)
                if replay is not None:  # no wrapper: the recorded launches, replayed
                    if check:
                        tasks.append(Task((old, new), "replay_outputs", (replay,), f"{n.name} outputs",
                                          (n.id, "outputs")))
                    if want_time:
                        tasks.append(Task((old, new), "replay_time", (replay, cfg.min_effect), f"{n.name} timing",
                                          (n.id, "timing")))
                    continue
                missing = {"result": "not-run", "reason": f'set [tool.ptxdiff.kernels."{n.id}"] wrapper = '
                                                          '"path.py:function" and inputs = "path.py:function", '
                                                          'or record its launches (ptxdiff record -- CMD)'}
                by_kernel[n.id] = [dataclasses.replace(r, outputs=missing if check else None,
                                                       timing=missing if want_time else None) for r in kernel_rows]
                continue
            blocks = [v for r in kernel_rows for k, v in ((r.spec_detail or {}).get("constexprs") or {}).items()
                      if "BLOCK" in k.upper() and isinstance(v, int)]
            plan = RunPlan(n.id, run.wrapper, run.inputs, run.dtypes, sizes_around(blocks, run.sizes), run.time_size)
            if check:
                tasks.append(Task((old, new), "outputs", (plan,), f"{n.name} outputs", (n.id, "outputs")))
            if want_time:
                tasks.append(Task((old, new), "time", (plan, cfg.min_effect), f"{n.name} timing", (n.id, "timing")))
        results: dict[tuple[str, str], dict] = {}
        if tasks:
            with Pool(self.repo.workdir, cfg.python_path, self.jobs, cfg.timeout, self.progress) as pool:
                for task, kind, payload in pool.run(tasks):
                    results[cast(tuple[str, str], task.tag)] = cast(dict, payload) if kind == "ok" else {
                        "result": "not-run", "reason": str(payload)[:300]}
            replayed = any(t.op.startswith("replay_") for t in tasks)
            messages.append("replayed recorded launches of old and new to check outputs/timing (you asked for it)"
                            if replayed else "ran the revisions' host wrappers to check outputs/timing (you asked for it)")
        no_gpu = [k for k, v in results.items() if k[1] == "timing" and "no GPU" in v.get("reason", "")]
        if no_gpu:
            messages.append("--time needs a GPU and this machine has none: timing skipped, the rest is unaffected")
        out = []
        for kid, kernel_rows in by_kernel.items():
            o_res, t_res = results.get((kid, "outputs")), results.get((kid, "timing"))
            if (kid, "timing") in no_gpu:
                t_res = None
            for r in kernel_rows:
                if o_res is not None or t_res is not None:
                    r = dataclasses.replace(r, outputs=o_res or r.outputs, timing=t_res or r.timing)
                dyn = [x["result"] for x in (r.outputs, r.timing) if x]
                out.append(dataclasses.replace(r, blocking=r.blocking or any(d in cfg.block for d in dyn)))
        return out

    def _pair(self, old_found: Discovery, new_found: Discovery, renames: dict[str, str]):
        pairs: list[tuple[Kernel | None, Kernel | None]] = []
        matched: set[str] = set()
        for kid, kernel in new_found.kernels.items():
            old_id = renamed_id(kid, renames)
            o = old_found.kernels.get(old_id) or old_found.kernels.get(kid)
            if o is not None:
                matched.add(o.id)
            pairs.append((o, kernel))
        broken_paths = set(new_found.broken) | {renames.get(p, p) for p in new_found.broken}
        for kid, kernel in old_found.kernels.items():
            if kid not in matched and kernel.path not in broken_paths and \
                    not any(renames.get(np) == kernel.path for np in new_found.broken):
                pairs.append((kernel, None))
        broken_rows: list[tuple[Broken | None, Broken | None]] = [
            (old_found.broken.get(renames.get(p, p)), b) for p, b in new_found.broken.items()]
        back = {v: k for k, v in renames.items()}
        broken_rows += [(b, None) for p, b in old_found.broken.items() if back.get(p, p) not in new_found.broken]
        return pairs, broken_rows

    def _broken_rows(self, old_b: Broken | None, new_b: Broken | None, old_found: Discovery,
                     new_found: Discovery, targets: list[int], cfg) -> list[Row]:
        """A file that does not parse on one side: its kernels are `failed` with the error."""
        rows = []
        either = new_b or old_b
        assert either is not None, "a broken row has a broken side"
        path = either.path
        names = set((new_b.names if new_b else ()) + (old_b.names if old_b else ()))
        for found in (old_found, new_found):
            names |= {k.name for k in found.kernels.values() if k.path == path}
        verdict = "unmeasured" if old_b and new_b else "failed"
        for name in sorted(names) or ["?"]:
            for cc in targets:
                error = (f"new: {new_b.error}" if new_b else "") + ("; " if new_b and old_b else "") + \
                        (f"old: {old_b.error}" if old_b else "")
                rows.append(Row(f"{path}::{name}", "-", target_name(cc), verdict, _blocks(verdict, None, cfg, error),
                                None, None, {}, error))
        return rows

    def _rows(self, pair: _Pair, old_res: list[dict] | None, new_res: list[dict] | None,
              cc: int, cfg: configmod.Config, has_base: bool) -> list[Row]:
        o, n = pair.old, pair.new
        either = n or o
        assert either is not None, "a row has a kernel on one side at least"
        kernel_id = either.id
        old_kernel = o.id if o and n and o.id != n.id else None
        changes = pair.launch_changes() if has_base else []
        by_key: dict[object, list] = {}
        for side, results in ((0, old_res), (1, new_res)):
            for r in results or ():
                by_key.setdefault(r["key"], [None, None])[side] = r
        # a side that failed before specs (import error) pairs with every spec of the other side
        for side in (0, 1):
            if None in by_key and by_key[None][side] is not None and len(by_key) > 1:
                failure = by_key.pop(None)[side]
                for both in by_key.values():
                    both[side] = failure
        # specs whose values changed (a constexpr default, an autotune Config) pair up in order,
        # those of equal guessed values only
        pair_lone(by_key)
        rows: list[Row] = []
        unfit: dict[int, str] = {}   # rows of guessed values that do not fit -> why
        for a, b in by_key.values():
            label = (b or a)["label"]
            if a is not None and b is not None and a["label"] != b["label"]:
                label = pair_label(a["label"], b["label"])
            detail = (b or a).get("spec")
            old_m = a.get("metrics") if a else None
            new_m = b.get("metrics") if b else None
            error = why = None
            failures = [x for x in (a, b) if x and x.get("error")]
            if failures:
                verdict = "failed" if not has_base else "added" if a is None else "removed" if b is None else \
                    "unmeasured" if len(failures) == 2 or a is b else "failed"
                parts = [f"old: {a['error']}" if a and a.get("error") else "",
                         f"new: {b['error']}" if b and b.get("error") else ""]
                error = a["error"] if a is b else b["error"] if not has_base else "; ".join(p for p in parts if p)
            elif a is None:
                verdict = "added" if has_base else "-"
            elif b is None:
                verdict = "removed"
            else:
                verdict = classify(a["ptx"], b["ptx"], a["metrics"], b["metrics"])
                why = reason(verdict, a["ptx"], b["ptx"], a["metrics"], b["metrics"], _signature_change(a, b))
            if not has_base:
                old_m = None
            log = "\n".join(x.get("log", "") for x in (a, b) if x and x.get("log")) or None
            source = detail.get("source") if detail else None
            paths = tuple(sorted(set().union(*(k.paths | {k.path} for k in (o, n) if k is not None),
                                             pair.launch_paths())))
            transient = any(x.get("transient") for x in (a, b) if x)
            blocking = has_base and not pair.unchanged and pair.role != pins.REPORT and _blocks(verdict, source, cfg, error)
            if verdict == "unmeasured" and source == "guessed" and a is not b and a and b \
                    and _same_failure(a.get("error"), b.get("error")):
                unfit[len(rows)] = UNFIT
            elif verdict in ("added", "removed") and has_base and source == "guessed" and failures:
                unfit[len(rows)] = UNFIT_ONE_SIDE
            rows.append(Row(kernel_id, label, target_name((b or a).get("target", cc)), verdict, blocking,
                            old_m, new_m, delta(old_m, new_m), error, detail, old_kernel, log,
                            a.get("ptx") if a else None, b.get("ptx") if b else None, spec_source=source,
                            paths=paths, transient=transient, why=why,
                            launch="; ".join(([pins.NOT_THE_GATE] if pair.role == pins.REPORT else []) + changes) or None,
                            old_loc=SourceLines.from_json(a.get("loc")) if a else None,
                            new_loc=SourceLines.from_json(b.get("loc")) if b else None))
        if unfit and any(r.error is None for r in rows):
            rows = [dataclasses.replace(r, blocking=False, why=unfit[i]) if i in unfit else r for i, r in enumerate(rows)]
        return rows
