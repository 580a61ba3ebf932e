"""A kernel's story along history: one row per commit that changed its effective source or its
launch (a call site's values, its recorded launches, its config entry).

Commits are walked oldest first (first parent). A commit is looked at only when it touched a
file of the kernel's effective source, of its launch sites, the recording or a config file; the
kernel's file is followed through renames. Each distinct version is compiled once: consecutive
versions are compared through the engine in one batch (`Engine.compare_many`), so the compile
jobs of every commit of the story run at once, on this machine's workers or a Ray cluster's.
Every step uses the newest commit's config for its settings (a config added today also describes
the kernels of last year), and each commit's own entry for the kernel where it has one.

The story of a range `A..B` starts from the kernel as it was at A (the first parent of the
range's oldest commit): the first row is `added` only when the kernel did not exist there, so
log says what `ptxdiff diff` says for the same commit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ptxdiff import repo_config
from ptxdiff.compare.engine import Engine
from ptxdiff.compare.results import Row
from ptxdiff.discovery.kernels import Discovery, Kernel, discover
from ptxdiff.discovery.memo import FileMemo, Memo
from ptxdiff.errors import UsageError
from ptxdiff.git.repo import Repo, Snapshot
from ptxdiff.git.values import CommitInfo, Side
from ptxdiff.specs import launch

PROGRESS_EVERY_S = 0.25   # the walk's progress line is rewritten at most this often


@dataclass(frozen=True)
class Event:
    commit: CommitInfo
    kernel: str
    rows: list[Row]


@dataclass(frozen=True)
class Story:
    """A kernel's events, oldest first, and where a shallow clone's history cut the walk short
    (its oldest commit, whose kernel is the story's starting point, not an addition)."""

    events: list[Event]
    shallow_start: CommitInfo | None = None


def _find(kernels: dict[str, Kernel], query: str) -> Kernel | list[Kernel] | None:
    hits = [k for k in kernels.values() if k.id == query or k.name == query]
    return hits[0] if len(hits) == 1 else (hits if hits else None)


def history(repo: Repo, engine: Engine, query: str | None, rev_range: str = "HEAD",
            limit: int | None = None, config: repo_config.Config | None = None) -> Story:
    head, hide = repo.range(rev_range)
    commits = list(repo.walk(head, hide, first_parent=True))
    if limit:
        commits = commits[-limit:]
    repo.fetch_trees(c.id for c in commits)   # a --filter=tree:0 clone: every tree of the walk at once
    last_snapshot = repo.snapshot(Side("head", head))
    # one config for the whole story: the newest one (older commits may predate any config)
    cfg = config or repo_config.load(last_snapshot.read, last_snapshot.__contains__)
    memos = _Memos(engine, cfg.python_path)
    found = memos.whole(repo, last_snapshot).kernels
    if query is None:
        raise UsageError("name a kernel: " + ", ".join(sorted(k.id for k in found.values())[:20]))
    target = _find(found, query)
    if isinstance(target, list):
        raise UsageError(f"{query!r} is ambiguous: " + ", ".join(k.id for k in target))
    if target is None:
        raise UsageError(f"no kernel {query!r} at {rev_range}")
    # walk back from head to collect the versions, following renames of the kernel's file
    path, name = target.path, target.name
    versions: list[tuple[CommitInfo, Kernel, Version]] = []
    cut: CommitInfo | None = None
    watched = set(target.paths) | {path, *launch.FILES}
    before_range: tuple[CommitInfo, Kernel, Version] | None = None
    said = 0.0
    for done, info in enumerate(reversed(commits)):
        if engine.progress and time.monotonic() - said > PROGRESS_EVERY_S:
            engine.progress(f"log: {done}/{len(commits)} commits looked at for {name}")
            said = time.monotonic()
        if versions and not (repo.changed_paths(info.id) & watched):
            continue
        at = _kernel_at(repo, info, path, name, cfg, memos)
        if at is None:
            break
        watched |= at[0].paths
        versions.append((info, *at))
        parent = info.parents[0] if info.parents else None
        if parent:
            renames = repo.renames(Side("p", parent), Side("c", info.id))
            path = renames.get(path, path)
            watched.add(path)  # the file's older name: commits that touched it count too
    else:
        # the kernel is there all through the range: start from what it was just before it
        if commits and commits[0].id in repo.shallow and versions and versions[-1][0].id == commits[0].id:
            before_range = versions.pop()  # a shallow clone begins here: what came before is unknown
            cut = commits[0]
        elif commits and commits[0].parents:
            before = repo.commit_info(commits[0].parents[0])
            at = _kernel_at(repo, before, path, name, cfg, memos)
            if at is not None:
                before_range = (before, *at)
    versions.reverse()
    # keep the commits where the version changed (the first version is where it appeared,
    # unless the kernel was there before the range: then that version is the first "previous")
    steps: list[tuple[CommitInfo, Kernel]] = []
    comparisons: list[tuple[Side | None, Side, list[str] | None]] = []
    previous = before_range
    for info, k, version in versions:
        if previous is not None and previous[2].same_as(version):
            continue
        old = Side(previous[0].short, previous[0].id) if previous else Side("nothing", "")
        comparisons.append((old, Side(info.short, info.id), [k.path] + ([previous[1].path] if previous else [])))
        steps.append((info, k))
        previous = (info, k, version)
    reports = engine.compare_many(comparisons, config=cfg, own_entries=True)
    memos.save()   # after the comparisons' stored trees: the newest entry, the last one pruned
    return Story([Event(info, k.id, [r for r in report.rows if r.kernel == k.id])
                  for (info, k), report in zip(steps, reports)], cut)


@dataclass(frozen=True)
class Version:
    """The kernel at one commit: its effective source and what it is launched with."""

    fingerprint: str
    inputs: launch.LaunchInputs

    def same_as(self, newer: Version) -> bool:
        """No change between this version and a newer one (a first recording or config entry
        describes the older commit too)."""
        return self.fingerprint == newer.fingerprint and launch.inherit(self.inputs, newer.inputs) == newer.inputs


class _Memos:
    """Each followed file's stored discoveries by tree (memo.FileMemo), opened as the walk meets it."""

    def __init__(self, engine: Engine, roots: tuple[str, ...]):
        self.root, self.roots = (engine.measurer.cache.root if engine.measurer.cache else None), roots
        self.by_path: dict[str, FileMemo] = {}

    def discover(self, repo: Repo, snap: Snapshot, path: str) -> Discovery:
        tree = repo.tree_id(snap.side)
        if self.root is None or tree is None:
            return discover(snap, self.roots, paths={path})
        memo = self.by_path.get(path) or self.by_path.setdefault(path, FileMemo(self.root, self.roots, path))
        found = memo.get(tree)
        if found is None:
            found = discover(snap, self.roots, paths={path})
            memo.put(tree, found)
        return found

    def whole(self, repo: Repo, snap: Snapshot) -> Discovery:
        """Every kernel of a commit: the tree's stored discovery (the one `diff` keeps), or found."""
        tree = repo.tree_id(snap.side)
        memo = Memo(self.root, self.roots) if self.root is not None and tree else None
        found = memo.get(tree) if memo and tree else None
        if found is None:
            found = discover(snap, self.roots)
            if memo and tree:
                memo.put(tree, found)
        return found

    def save(self) -> None:
        for memo in self.by_path.values():
            memo.save()


def _kernel_at(repo: Repo, info: CommitInfo, path: str, name: str,
               cfg: repo_config.Config, memos: _Memos) -> tuple[Kernel, Version] | None:
    """The kernel at a commit and its version (None when it is not there)."""
    snap = repo.snapshot(Side(info.short, info.id))
    if path not in snap:
        return None
    k = memos.discover(repo, snap, path).kernels.get(f"{path}::{name}")
    if k is None:
        return None
    inputs = launch.inputs_of(k, launch.side_launches(snap), launch.side_config(snap, cfg))
    return k, Version(k.fingerprint, inputs)
