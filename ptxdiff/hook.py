"""`ptxdiff pre-push REMOTE URL`: the gate git runs before a push (refs on stdin).

Every stdin line is read; deletes are skipped; for each pushed ref the net change from what the
remote already has to what is pushed is compared (the pushed commits, never the work tree). A
verdict in the config's `block` list stops the push unless a pushed commit carries
`Ptx-Approved: <kernel id | function name | *>` for that kernel.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from tabulate import tabulate

from .errors import EXIT_BLOCKED, EXIT_OK
from .git import CommitInfo, Repo, Side, is_zero, trailers

TRAILER = "Ptx-Approved"


@dataclass(frozen=True)
class RefUpdate:
    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str


def parse_refs(text: str) -> list[RefUpdate]:
    updates = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            updates.append(RefUpdate(*parts))
    return updates


def approved(kernel_id: str, approvals: set[str]) -> bool:
    name = kernel_id.rpartition("::")[2]
    return "*" in approvals or kernel_id in approvals or name in approvals


def base_of(repo: Repo, update: RefUpdate, remote: str, commits: list[CommitInfo]) -> str | None:
    """What the remote has of this ref: its old id when we have it, else the parent of the
    oldest commit it lacks ("" when the pushed history is new from its root)."""
    if not is_zero(update.remote_oid) and repo.has_object(update.remote_oid):
        return update.remote_oid
    if not commits:
        return None
    parents = commits[0].parents
    return parents[0] if parents else ""


def check(repo: Repo, remote: str, updates: list[RefUpdate], engine, out=None) -> int:
    out = out or sys.stderr
    blocked_any = False
    for update in updates:
        if is_zero(update.local_oid) or update.local_ref == "(delete)":
            continue
        commits = repo.new_commits(update.local_oid, remote)
        if not is_zero(update.remote_oid) and repo.has_object(update.remote_oid):
            commits = list(repo.walk(update.local_oid, [update.remote_oid]))
        base = base_of(repo, update, remote, commits)
        if base is None or not commits:
            continue
        report = engine.compare(Side(base[:10] or "nothing", base), Side(update.local_ref, update.local_oid))
        approvals = {a for c in commits for a in trailers(c.message, TRAILER)}
        blocking = [r for r in report.blocking if not approved(r.kernel, approvals)]
        if not blocking:
            continue
        blocked_any = True
        touched = {r.kernel: _touching(repo, commits, r.kernel.partition("::")[0]) for r in blocking}
        rows = [[r.kernel, r.target, r.spec, r.verdict,
                 ", ".join(f"{k} {v:+}" for k, v in r.delta.items() if v and k != "occupancy") or (r.error or "")[:80],
                 " ".join(touched[r.kernel]) or "-"] for r in blocking]
        print(f"ptxdiff: push of {update.local_ref} -> {update.remote_ref} blocked: "
              f"{len(blocking)} kernel change(s) in the block list ({', '.join(report.config.block)})", file=out)
        print(tabulate(rows, headers=["kernel", "target", "spec", "verdict", "deltas", "commits"],
                       disable_numparse=True), file=out)
        ids = sorted({r.kernel for r in blocking})
        print("\nTo approve, add a trailer to a pushed commit, e.g. the last one:", file=out)
        for kid in ids:
            print(f'    git commit --amend --no-edit --trailer "{TRAILER}: {kid}"', file=out)
        print("or bypass once: git push --no-verify  (or PTXDIFF_SKIP=1 git push)", file=out)
    return EXIT_BLOCKED if blocked_any else EXIT_OK


def _touching(repo: Repo, commits: list[CommitInfo], path: str) -> list[str]:
    return [c.short[:7] for c in commits if repo.touches(c.id, path)]


def run(remote: str, url: str, stdin_text: str, engine_factory) -> int:
    repo = Repo(".")
    if os.environ.get("PTXDIFF_SKIP") == "1" or not repo.config_bool("ptxdiff.enabled", True):
        print("ptxdiff: pre-push check SKIPPED (PTXDIFF_SKIP=1 or ptxdiff.enabled=false)", file=sys.stderr)
        return EXIT_OK
    updates = parse_refs(stdin_text) or from_pre_commit(os.environ)
    return check(repo, remote or url, updates, engine_factory(repo))


def from_pre_commit(env) -> list[RefUpdate]:
    """pre-commit's pre-push stage hands the range over as PRE_COMMIT_FROM_REF/TO_REF instead
    of stdin (see .pre-commit-hooks.yaml)."""
    to_ref, from_ref = env.get("PRE_COMMIT_TO_REF"), env.get("PRE_COMMIT_FROM_REF")
    if not to_ref:
        return []
    remote_branch = env.get("PRE_COMMIT_REMOTE_BRANCH", "refs/heads/?")
    return [RefUpdate(env.get("PRE_COMMIT_LOCAL_BRANCH", "HEAD"), to_ref, remote_branch,
                      from_ref or "0" * len(to_ref))]
