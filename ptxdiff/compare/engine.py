"""The one path every entry point runs: sides -> changed kernels -> specs x targets -> compile
(cached, in workers) -> metrics -> verdicts.

CLI diff/show, the git diff driver, the pre-push hook, history and the corpus all call
`compare`; none has its own copy of this logic.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any, NamedTuple

from ptxdiff import binaries, repo_config
from ptxdiff.compare import gate_inputs, hooked
from ptxdiff.compare import remote as remotemod
from ptxdiff.compare.cache import Cache
from ptxdiff.compare.dynamic_checks import Runner, checked
from ptxdiff.compare.measure import Measurer
from ptxdiff.compare.notes import Note, NoteKind, as_notes
from ptxdiff.compare.pairing import Pair, launched, pair_kernels, path_matches, select
from ptxdiff.compare.replan import Need
from ptxdiff.compare.results import Provenance, Report, Row
from ptxdiff.compare.rows import pair_rows, said_rows, tritons_own, unparsed_rows, written_for
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.compile import toolchains
from ptxdiff.discovery.forks import fork_note, own_triton
from ptxdiff.discovery.kernels import Broken, Discovery, Kernel, agreed_forks, discover, still_defined
from ptxdiff.discovery.memo import Memo, changed_paths, update
from ptxdiff.errors import ConfigError, UsageError
from ptxdiff.git.repo import Repo, Snapshot
from ptxdiff.git.values import Side
from ptxdiff.permissions import Permissions, suggestions
from ptxdiff.specs import launch
from ptxdiff.specs import plan as planmod

BATCH = 256  # comparisons whose compile jobs `compare_many` measures together (bounds what is held at once)


class Listed(Enum):
    """Which kernel pairs a comparison reports."""

    CHANGED = "changed"
    ALL = "all"        # the unchanged too (`--all`), each measured once, on the new side


class EntrySource(Enum):
    """Where each side's kernel entries come from when the caller gives the config."""

    GIVEN = "given"    # the given config's entries, on both sides
    OWN = "own"        # each commit's own entries, under the given config's settings (history)


class NeedKey(NamedTuple):
    """A need's place among a comparison's needs: one kernel version on one side, in its pair's
    role (the gate's or the report's), so a version two pairs share is measured once."""

    side: Side | None
    fingerprint: str
    kernel_id: str
    role: str

    @classmethod
    def of(cls, side: Side | None, kernel: Kernel, pair: Pair) -> NeedKey:
        return cls(side, kernel.fingerprint, kernel.id, pair.role)


@dataclass
class _Planned:
    """A comparison planned up to its needs, which are measured before its rows are made:
    alone (`compare`) or with other comparisons' needs (`compare_many`)."""

    old: Side | None
    new: Side
    cfg: repo_config.Config
    targets: list[int]
    pairs: list[Pair]
    needs: dict[NeedKey, Need]
    broken_rows: list[tuple[Broken | None, Broken | None]]
    old_found: Discovery
    new_found: Discovery
    messages: list[Note]


def records(need: Need | None, cc: int) -> list[SpecResult] | None:
    """A need's results on a target, as the rows read them."""
    return need.results[cc] if need is not None else None


class Engine:
    """One comparison (`compare`) or many (`compare_many`): plan, measure (its `measurer`), make
    the rows and the report."""

    def __init__(self, repo: Repo, *, jobs: int | None = None, targets: list[int] | None = None,
                 progress: Callable[[str], None] | None = None, use_cache: bool = True,
                 permissions: Permissions | None = None, executor: str = "local",
                 tritons: toolchains.Policy | None = None) -> None:
        self.repo = repo
        # what of the revision's code may run (imports, outputs, timing): the user's choice only
        self.permissions = permissions or Permissions()
        self.progress = progress
        self.measurer = Measurer(repo, jobs=jobs, targets=targets, progress=progress, use_cache=use_cache,
                                 imports=self.permissions.imports, executor=executor,
                                 unsandboxed=self.permissions.unsandboxed)
        self.tritons = tritons    # how each side's triton is chosen (compile/toolchains.py); None: the installed

    # -- discovery -------------------------------------------------------------------------
    def _discover(self, new: Snapshot, old: Snapshot | None, cfg: repo_config.Config) -> tuple[Discovery, Discovery | None]:
        """Both sides' kernels. A commit's discovery is stored by tree; a side without one is
        brought up to date from the other side's (or HEAD's) instead of discovered anew."""
        cache = self.measurer.cache
        memo = Memo(cache.root, cfg.python_path) if cache else None
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
                found[id(s)] = update(base[0], s, cfg.python_path, changed_paths(base[1], s), base[1])
            else:
                found[id(s)] = discover(s, cfg.python_path, jobs=self.measurer.jobs)
            tree = trees[id(s)]
            if memo and tree:
                memo.put(tree, found[id(s)])
        return found[id(new)], (found[id(old)] if old is not None else None)

    def _head_side(self) -> Snapshot | None:
        head = self.repo.head_commit()
        return self.repo.snapshot(Side("HEAD", head)) if head else None

    # -- the comparison --------------------------------------------------------------------
    def compare(self, old: Side | None, new: Side, pathspecs: list[str] | None = None,
                show_all: bool = False, config: repo_config.Config | None = None,
                outputs: bool | None = None, time: bool | None = None,
                own_entries: bool = False) -> Report:
        """Kernels whose effective source reads a file matching `pathspecs` (all when None).

        `outputs`/`time` force the dynamic checks on (True) or off (False); None follows what
        the user allowed (`Permissions`); the repository's config only earns a suggestion."""
        planned = self._plan(old, new, pathspecs, config, Listed.ALL if show_all else Listed.CHANGED,
                             EntrySource.OWN if own_entries else EntrySource.GIVEN)
        return self._report(planned, self.measurer.measure(list(planned.needs.values()), planned.cfg,
                                                           planned.targets), outputs, time)

    def compare_many(self, comparisons: list[tuple[Side | None, Side, list[str] | None]],
                     config: repo_config.Config | None = None, own_entries: bool = False) -> Iterator[Report]:
        """`compare` of each (old, new, pathspecs), with the compile jobs of many comparisons in one
        batch (BATCH at a time): history keeps every worker, or every Ray node, busy at once
        instead of waiting on one commit. The reports, in order, are those of comparing them one
        by one; they come a batch at a time."""
        source = EntrySource.OWN if own_entries else EntrySource.GIVEN
        for start in range(0, len(comparisons), BATCH):
            planned = [self._plan(old, new, paths, config, Listed.CHANGED, source)
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

        measurer = self.measurer
        scratch = tempfile.mkdtemp(prefix="ptxdiff-batch-") if measurer.cache is None else None
        if scratch:
            measurer.cache = Cache(Path(scratch))
        try:
            got = self._prefetch(planned)
            reports = []
            for p in planned:
                compiled = measurer.measure(list(p.needs.values()), p.cfg, p.targets)
                claimed = [(need, cc) for need in p.needs.values() for cc, key in need.keys.items()
                           if key in got and measurer.origin(key) == Provenance.LOCAL]
                for need, cc in claimed:
                    key = need.keys[cc]
                    measurer.claim(key, got[key])
                    if got[key] == Provenance.COMPILED:
                        compiled += sum(1 for r in need.results[cc] if r.key is not None)
                if not scratch:
                    for need, cc in claimed:
                        got.pop(need.keys[cc], None)
                reports.append(self._report(p, compiled))
            return reports
        finally:
            if scratch:
                measurer.cache = None
                shutil.rmtree(scratch, ignore_errors=True)

    def _prefetch(self, planned: list[_Planned]) -> dict[str, Provenance]:
        """Measure the distinct needs of `planned` together (per python_path, timeout and targets,
        what a measurement depends on); returns the cache keys it compiled or fetched, and which."""
        groups: dict[tuple[Any, ...], tuple[_Planned, list[Need]]] = {}
        seen: set[tuple[Any, ...]] = set()
        offset = 0
        for p in planned:
            group = groups.setdefault((tuple(p.cfg.python_path), p.cfg.timeout, tuple(p.targets)), (p, []))[1]
            for need in p.needs.values():
                same = (need.kernel.id, need.kernel.fingerprint, need.kcfg.key(), need.plan.key(), need.side.compiled_as)
                if same not in seen:  # pair ids stay apart: a pair's two sides are looked at together
                    seen.add(same)
                    group.append(dataclasses.replace(need, pair=offset + need.pair, results={}, keys={}))
            offset += len(p.pairs)
        got: dict[str, Provenance] = {}
        for p, needs in groups.values():
            self.measurer.measure(needs, p.cfg, p.targets)
            for need in needs:
                for key in need.keys.values():
                    if self.measurer.origin(key) != Provenance.LOCAL:
                        got[key] = self.measurer.origin(key)
        return got

    def _plan(self, old: Side | None, new: Side, pathspecs: list[str] | None, config: repo_config.Config | None,
              listed: Listed, source: EntrySource) -> _Planned:
        """A comparison up to what must be measured: its config, kernel pairs and needs."""
        new_snap = self.repo.snapshot(new)
        old_snap = self.repo.snapshot(old) if old is not None else None
        cfg, policy_note = (config, None) if config is not None else self._config(new_snap, old_snap)
        targets = self.measurer.targets_override or list(cfg.targets)
        found = self._discover(new_snap, old_snap, cfg)
        new_found = select(found[0], cfg, pathspecs, {})
        messages = as_notes(NoteKind.CONFIG, repo_config.unmatched_kernels(cfg, [*found[0].kernels,
                                                                            *(found[1] or found[0]).kernels]))
        messages += as_notes(NoteKind.POLICY, [policy_note] if policy_note else [])
        if self.tritons is not None:   # the triton each side compiles with, installed now where missing
            read = found[1:] if self.tritons.gate else found   # the gate: the base's kernels alone
            old, new, tool_note = toolchains.apply(self.tritons, old, new, old_snap, new_snap, cfg.python_path,
                                                  [k.paths for side in read if side for k in side.kernels.values()])
            messages += as_notes(NoteKind.TOOLCHAIN, [tool_note] if tool_note else [])
        if old is None:
            kernel_pairs: list[tuple[Kernel | None, Kernel | None]] = [(None, k) for k in new_found.kernels.values()]
            broken_rows: list[tuple[Broken | None, Broken | None]] = [(None, b) for b in new_found.broken.values()]
            old_found = Discovery({}, {})
        else:
            renames = self.repo.renames(old, new)
            back = {v: k for k, v in renames.items()}
            old_found = select(found[1] or Discovery({}, {}), cfg, pathspecs, back)
            kernel_pairs, broken_rows = pair_kernels(old_found, new_found, renames)
            # a kernel whose function is still defined on the new side is never `removed` (issue 41)
            kernel_pairs = [(o, n or still_defined(new_snap, o, cfg.python_path)) if o is not None else (o, n)
                            for o, n in kernel_pairs]
            base_fork = own_triton(old_snap) if old_snap is not None else None
            kernel_pairs = [agreed_forks(o, n, base_fork) for o, n in kernel_pairs]
        # kernel entries: a config the user gives describes both sides, unless EntrySource.OWN (history:
        # the newest config's settings, each commit's own entries)
        own = config is not None and source is EntrySource.OWN
        entries = launch.side_config(new_snap, cfg) if own else cfg
        old_entries = config if config is not None and not own else launch.side_config(old_snap, entries)
        base = launch.side_config(old_snap, repo_config.Config()) if config is None and old_snap is not None else None
        pairs = launched(kernel_pairs, new_snap, old_snap, entries, old_entries, base)
        if old is not None and old.toolchain != new.toolchain:
            pairs = [dataclasses.replace(p, retooled=True) for p in pairs]
        if listed is Listed.CHANGED:
            pairs = [p for p in pairs if not p.unchanged]
        if pathspecs and not new_found.kernels and not new_found.broken and not old_found.kernels:
            snaps = [new_snap] + ([self.repo.snapshot(old)] if old is not None else [])
            unknown = [p for p in pathspecs if not any(path_matches(f, [p]) for s in snaps for f in s.paths)]
            if unknown:
                raise UsageError(f"{unknown[0]}: no such path in {' or '.join(s.side.short for s in snaps)}")
            messages.append(Note(NoteKind.NO_KERNELS, None, f"no Triton kernels in {' '.join(pathspecs)}"))
        needs: dict[NeedKey, Need] = {}
        for i, pair in enumerate(pairs):
            for side, k, kcfg, inputs in ((old, pair.old, pair.old_config, pair.old_inputs),
                                          (new, pair.new, pair.new_config, pair.new_inputs)):
                if side is None or k is None or inputs is None or kcfg is None or pair.said or k.backend \
                        or NeedKey.of(side, k, pair) in needs:
                    continue
                if side is old and pair.unchanged:  # an unchanged kernel (Listed.ALL) is measured once, on the new side
                    continue
                plan = planmod.make(k, pair.old, pair.new, inputs, cfg.max_specs)
                needs[NeedKey.of(side, k, pair)] = Need(side, k, plan, kcfg, i)
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
                rows += said_rows(pair, targets, cfg)
                continue
            other = next((k for k in (n, o) if k is not None and k.backend), None)
            if other is not None:
                why = fork_note(other.fork, other.fork_builtins) if other.fork else "ptxdiff compiles for NVIDIA targets"
                messages.append(Note(NoteKind.OTHER_BACKEND, pair.kernel_id,
                                     f"{pair.kernel_id}: {other.backend} kernel: not compiled ({why})"))
                continue
            new_need = needs.get(NeedKey.of(new, n, pair)) if n else None
            old_need = new_need if pair.unchanged else needs.get(NeedKey.of(old, o, pair)) if o else None
            said = tritons_own(old_need, new_need)
            if said:
                messages.append(Note(NoteKind.TRITONS_OWN, pair.kernel_id, f"{pair.kernel_id}: {said}"))
                continue
            if (backend := written_for(old_need, new_need)) is not None:
                messages.append(Note(NoteKind.OTHER_BACKEND, pair.kernel_id,
                                     f"{pair.kernel_id}: {backend[0]} kernel: not compiled ({backend[1]})"))
                continue
            for cc in targets:
                came = self.measurer.came(cc, old_need, new_need)
                rows += [dataclasses.replace(r, cache=came) for r in hooked.marked(pair_rows(
                    pair, records(old_need, cc), records(new_need, cc), cc, cfg, old is not None), pair, cfg)]
        rows = gate_inputs.deduped(rows)
        said = gate_inputs.branch_line(rows)
        messages += as_notes(NoteKind.BRANCH_ONLY, [said] if said else [])
        for o_broken, n_broken in broken_rows:
            rows += unparsed_rows(o_broken, n_broken, old_found, new_found, targets, cfg)
        if old is not None:
            rows = checked(rows, pairs, old, new, cfg, outputs, time, messages,
                           Runner(self.repo, self.permissions, self.measurer.jobs, self.progress))
        messages += as_notes(NoteKind.SUGGESTION, suggestions(cfg, self.permissions))
        remote = self.measurer.remote
        messages += as_notes(NoteKind.REMOTE, remote.lines()) if remote else \
            as_notes(NoteKind.SUGGESTION, remotemod.suggestion(cfg))
        if self.measurer.imports and self.measurer.loaded_now:
            messages.append(Note(NoteKind.IMPORTS, None,
                                 "imported the revisions' modules to build kernels (their top-level code ran)"))
        # targets by number (sm_80 before sm_100), not as text
        rows.sort(key=lambda r: (r.kernel, int(r.target[3:]) if r.target[3:].isdigit() else 0, r.target, r.spec))
        tools = {**binaries.versions(), "triton": self._triton_name(new)}
        if old is not None:
            tools["triton_old"] = self._triton_name(old)
            if tools["triton_old"] != tools["triton"]:
                said = f"triton {tools['triton_old']} -> {tools['triton']}"
                rows = [dataclasses.replace(r, toolchain=said) for r in rows]
        return Report(old, new, tools, rows, cfg, compiled, messages)

    @staticmethod
    def _triton_name(side: Side) -> str:
        return side.toolchain or binaries.triton_version() or "missing"

    @staticmethod
    def _config(new_snap: Snapshot, old_snap: Snapshot | None) -> tuple[repo_config.Config, str | None]:
        """The newer side's config under the base side's policy (the gate fails closed: a change
        cannot relax its own review); a base whose config does not load gives the defaults' policy."""
        cfg = repo_config.load(new_snap.read, new_snap.__contains__)
        if old_snap is None:
            return cfg, None
        try:
            base = repo_config.load(old_snap.read, old_snap.__contains__)
        except ConfigError as e:
            base = repo_config.Config(source=f"the defaults ({e})")
        return repo_config.governed(base, cfg)

