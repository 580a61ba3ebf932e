"""`ptxdiff pre-push REMOTE URL`: the gate git runs before a push (refs on stdin).

Every stdin line is read; deletes are skipped. For each pushed ref, what is pushed is compared
with what the remote already has that it builds on (the pushed commits, never the work tree): a
new branch that merged main is measured from that main, so changes and approvals the remote
already has are not asked for again. A verdict in the config's `block` list stops the push unless
a pushed commit carries `Ptx-Approved: <kernel id | function name | *>` for that kernel.

The verdict is reached before anything is printed and only the exit status carries it: a reader
that went away (`git push 2>&1 | head -1`) cannot turn a block into a pass.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from ptxdiff import user_settings
from ptxdiff.compare.notes import NoteKind
from ptxdiff.errors import EXIT_BLOCKED, EXIT_OK
from ptxdiff.gate.outcome import TRAILER, Outcome, RefUpdate
from ptxdiff.git.repo import Repo
from ptxdiff.git.values import CommitInfo, Side, SubmoduleChange, is_zero, printable, trailers
from ptxdiff.report.console import say
from ptxdiff.report.gate import render
from ptxdiff.report.layout import PLAIN, Layout
from ptxdiff.report.safe import shown

if TYPE_CHECKING:  # types only: the engine is built by the caller
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compare.results import Row


def parse_refs(text: str) -> list[RefUpdate]:
    updates = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4:
            updates.append(RefUpdate(*parts))
    return updates


def approved(kernel_id: str, approvals: set[str]) -> bool:
    name = kernel_id.rpartition("::")[2]
    return bool({"*", kernel_id, printable(kernel_id), shown(kernel_id), name, printable(name), shown(name)}
                & approvals)


def judge(repo: Repo, have: list[str], update: RefUpdate, engine: Engine) -> Outcome | None:
    """Compare what `update` sends with each newest commit of the remote's that it builds on; a
    kernel blocks only when it blocks against every one of them (a merge of two remote branches
    brings nothing new from either)."""
    if is_zero(update.local_oid) or update.local_ref == "(delete)":
        return None
    pushed = repo.pushed(update.local_oid, have)
    if not pushed.commits:
        return None
    new = Side(update.local_ref, update.local_oid)
    approvals = {a for c in pushed.commits for a in trailers(c.message, TRAILER)}
    reports = [engine.compare(Side(base[:10] or "nothing", base), new) for base in pushed.bases]
    blocking_in = [{r.kernel for r in report.blocking} for report in reports]
    everywhere = set.intersection(*blocking_in)
    rows = [r for r in reports[0].blocking if r.kernel in everywhere and not approved(r.kernel, approvals)]
    notes = [f"ptxdiff: {submodule_note(change)}" for base in pushed.bases
             for change in repo.submodule_changes(Side("base", base), new)]
    notes += [f"ptxdiff: {m.text}" for report in reports for m in report.messages if m.kind is NoteKind.POLICY]
    notes += [f"ptxdiff: {line}" for line in approval_notes(
        [r for r in reports[0].blocking if r.kernel in everywhere and r not in rows], pushed.commits)]
    return Outcome(update, rows, tuple(reports[0].config.block), pushed.commits, tuple(dict.fromkeys(notes)))


def approval_notes(passed: list[Row], commits: Sequence[CommitInfo]) -> list[str]:
    """One line per blocking kernel a pushed commit's trailer lets through: an approval the branch
    gives itself is said, never silent."""
    lines = []
    for kernel in dict.fromkeys(r.kernel for r in passed):
        verdicts = ", ".join(dict.fromkeys(r.verdict for r in passed if r.kernel == kernel))
        by = [f"{c.short[:7]} ({TRAILER}: {shown(value)})" for c in commits
              for value in trailers(c.message, TRAILER) if approved(kernel, {value})]
        lines.append(f"{shown(kernel)} ({verdicts}) passes, approved by {', '.join(by)}")
    return lines


def submodule_note(change: SubmoduleChange) -> str:
    """One line for a submodule whose commit changed: its kernels are not looked into here."""
    old, new = (change.old or "")[:10], (change.new or "")[:10]
    moved = f"moved {old}..{new}" if old and new else f"added at {new}" if new else f"removed (was {old})"
    hint = f"; see: ptxdiff -C {shown(change.path)} diff {old} {new}" if old and new else ""
    return f"submodule {shown(change.path)} {moved}: its kernels are not looked into{hint}"


def touched(repo: Repo, outcome: Outcome) -> dict[str, list[str]]:
    """Per blocking kernel, the pushed commits (short ids) that changed its file."""
    return {r.kernel: [c.short[:7] for c in outcome.commits if repo.touches(c.id, r.kernel.partition("::")[0])]
            for r in outcome.blocking}


def check(repo: Repo, remote: str, updates: list[RefUpdate], engine: Engine, out: TextIO | None = None, have: Sequence[str] = (),
          layout: Layout = PLAIN) -> int:
    """Judge every ref first, then say why; the exit status is the verdict whatever the output does."""
    have = list(have) + repo.remote_tips(remote) + \
        [u.remote_oid for u in updates if not is_zero(u.remote_oid) and repo.has_object(u.remote_oid)]
    outcomes, seen = [], set()
    for update in updates:
        if update.local_oid in seen:
            continue
        seen.add(update.local_oid)
        outcome = judge(repo, have, update, engine)
        if outcome is not None:
            outcomes.append(outcome)
    blocked = any(o.blocking for o in outcomes)
    say("".join(render(o, touched(repo, o), layout) for o in outcomes), out if out is not None else sys.stderr)
    return EXIT_BLOCKED if blocked else EXIT_OK


def run(remote: str, url: str, stdin_text: str, engine_factory: Callable[[Repo], Engine],
        env: Mapping[str, str] | None = None, layout: Layout = PLAIN) -> int:
    env = os.environ if env is None else env
    repo = Repo(env.get("GIT_DIR") or ".")
    if user_settings.load(env).skip or not user_settings.enabled(repo.config_get(user_settings.GIT_ENABLED)):
        say("ptxdiff: pre-push check SKIPPED (PTXDIFF_SKIP=1 or ptxdiff.enabled=false)\n", sys.stderr)
        return EXIT_OK
    updates = parse_refs(stdin_text)
    if updates:
        return check(repo, remote or url, updates, engine_factory(repo), layout=layout)
    updates, have, note = from_pre_commit(env, repo)
    if note:
        say(note + "\n", sys.stderr)
    return check(repo, env.get("PRE_COMMIT_REMOTE_NAME") or remote or url, updates, engine_factory(repo), have=have,
                 layout=layout)


def from_pre_commit(env: Mapping[str, str], repo: Repo) -> tuple[list[RefUpdate], list[str], str | None]:
    """The refs to judge under pre-commit's pre-push stage: (updates, commits the remote has, note).

    pre-commit reads git's ref lines itself and passes only the first ref that has commits to
    send (PRE_COMMIT_FROM_REF/TO_REF; none at all when that history starts at a root commit), so
    on a real push (PRE_COMMIT_REMOTE_NAME set) every local branch and tag, and a detached HEAD,
    is judged against what the remote has: a ref pushed second is never let through unseen.
    Run by hand (`pre-commit run --hook-stage pre-push --from-ref A --to-ref B`), just A..B.
    """
    to_ref, from_ref = env.get("PRE_COMMIT_TO_REF"), env.get("PRE_COMMIT_FROM_REF")
    remote = env.get("PRE_COMMIT_REMOTE_NAME")
    updates: list[RefUpdate] = []
    have: list[str] = []
    if to_ref:
        to_oid = repo.resolve(to_ref)
        from_oid = repo.resolve(from_ref) if from_ref else "0" * len(to_oid)
        if from_ref:
            have.append(from_oid)
        updates.append(RefUpdate(env.get("PRE_COMMIT_LOCAL_BRANCH") or to_ref, to_oid,
                                 env.get("PRE_COMMIT_REMOTE_BRANCH") or "", from_oid))
    if not remote:
        return updates, have, None
    updates += [RefUpdate(ref, oid, "", "0" * len(oid)) for ref, oid in repo.local_tips()]
    note = (f"ptxdiff: pre-commit names one pushed ref only, so every local branch and tag with commits "
            f"{remote} lacks is checked (the hook `ptxdiff install` writes sees exactly what is pushed)")
    return updates, have, note
