"""A kernel's story along history: one row per commit that changed its effective source.

Commits are walked oldest first (first parent). A commit is looked at only when it touched a
file of the kernel's effective source; the kernel's file is followed through renames. Each
distinct version is compiled once: consecutive versions are compared through the engine, whose
cache makes the older side of every comparison a hit. Every step uses the newest commit's config,
so a config added today also describes the kernels of last year.

The story of a range `A..B` starts from the kernel as it was at A (the first parent of the
range's oldest commit): the first row is `added` only when the kernel did not exist there, so
log says what `ptxdiff diff` says for the same commit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxdiff import config as configmod
from ptxdiff.compare.engine import Engine
from ptxdiff.compare.results import Row
from ptxdiff.discovery.kernels import discover
from ptxdiff.errors import UsageError
from ptxdiff.git.repo import CommitInfo, Repo, Side


@dataclass(frozen=True)
class Event:
    commit: CommitInfo
    kernel: str
    rows: list[Row]


def _find(kernels, query: str):
    hits = [k for k in kernels.values() if k.id == query or k.name == query]
    return hits[0] if len(hits) == 1 else (hits if hits else None)


def history(repo: Repo, engine: Engine, query: str | None, rev_range: str = "HEAD",
            limit: int | None = None, config: configmod.Config | None = None) -> list[Event]:
    head, hide = repo.range(rev_range)
    commits = list(repo.walk(head, hide, first_parent=True))
    if limit:
        commits = commits[-limit:]
    last_snapshot = repo.snapshot(Side("head", head))
    # one config for the whole story: the newest one (older commits may predate any config)
    cfg = config or configmod.load(last_snapshot.read, last_snapshot.__contains__)
    found = discover(last_snapshot, cfg.python_path).kernels
    if query is None:
        raise UsageError("name a kernel: " + ", ".join(sorted(k.id for k in found.values())[:20]))
    target = _find(found, query)
    if isinstance(target, list):
        raise UsageError(f"{query!r} is ambiguous: " + ", ".join(k.id for k in target))
    if target is None:
        raise UsageError(f"no kernel {query!r} at {rev_range}")
    # walk back from head to collect the versions, following renames of the kernel's file
    path, name = target.path, target.name
    versions: list[tuple[CommitInfo, str, str]] = []   # (commit, kernel id, fingerprint)
    watched = set(target.paths) | {path}
    current_fp = None
    before_range: tuple[CommitInfo, str, str] | None = None
    for info in reversed(commits):
        if current_fp is not None and not (repo.changed_paths(info.id) & watched):
            continue
        k = _kernel_at(repo, info, path, name, cfg)
        if k is None:
            break
        watched |= k.paths
        versions.append((info, k.id, k.fingerprint))
        current_fp = k.fingerprint
        parent = info.parents[0] if info.parents else None
        if parent:
            renames = repo.renames(Side("p", parent), Side("c", info.id))
            path = renames.get(path, path)
            watched.add(path)  # the file's older name: commits that touched it count too
    else:
        # the kernel is there all through the range: start from what it was just before it
        if commits and commits[0].parents:
            before = repo.commit_info(commits[0].parents[0])
            k = _kernel_at(repo, before, path, name, cfg)
            if k is not None:
                before_range = (before, k.id, k.fingerprint)
    versions.reverse()
    # keep the commits where the fingerprint changed (the first version is where it appeared,
    # unless the kernel was there before the range: then that version is the first "previous")
    events: list[Event] = []
    previous = before_range
    for info, kid, fp in versions:
        if previous is not None and previous[2] == fp:
            continue
        old = Side(previous[0].short, previous[0].id) if previous else Side("nothing", "")
        report = engine.compare(old, Side(info.short, info.id), [kid.partition("::")[0]]
                                + ([previous[1].partition("::")[0]] if previous else []), config=cfg)
        rows = [r for r in report.rows if r.kernel == kid]
        events.append(Event(info, kid, rows))
        previous = (info, kid, fp)
    return events


def _kernel_at(repo: Repo, info: CommitInfo, path: str, name: str, cfg):
    snap = repo.snapshot(Side(info.short, info.id))
    if path not in snap:
        return None
    return discover(snap, cfg.python_path, paths={path}).kernels.get(f"{path}::{name}")
