"""The pre-push gate's text: per pushed ref, the notes, and when it is blocked, which kernels
block it, in which pushed commits they changed, and how to approve or bypass."""

from __future__ import annotations

from tabulate import tabulate

from ptxdiff.gate.outcome import TRAILER, Outcome
from ptxdiff.git.repo import printable


def render(outcome: Outcome, touched: dict[str, list[str]]) -> str:
    """`touched`: per blocking kernel, the short ids of the pushed commits that changed its file."""
    update, blocking = outcome.update, outcome.blocking
    lines = list(outcome.notes)
    if not blocking:
        return "".join(f"{line}\n" for line in lines)
    rows = [[printable(r.kernel), r.target, r.spec, r.verdict,
             ", ".join(f"{k} {v:+}" for k, v in r.delta.items() if v and k != "occupancy") or (r.error or "")[:80],
             " ".join(touched[r.kernel]) or "-"] for r in blocking]
    where = f"{update.local_ref} -> {update.remote_ref}" if update.remote_ref else update.local_ref
    lines.append(f"ptxdiff: push of {where} blocked: {len(blocking)} kernel change(s) in the block list "
                 f"({', '.join(outcome.block_list)})")
    lines.append(tabulate(rows, headers=["kernel", "target", "spec", "verdict", "deltas", "commits"],
                          disable_numparse=True))
    lines.append("\nTo approve, add a trailer to a pushed commit, e.g. the last one:")
    for kid in sorted({printable(r.kernel) for r in blocking}):
        lines.append(f'    git commit --amend --no-edit --trailer "{TRAILER}: {kid}"')
    lines.append("or bypass once: git push --no-verify  (or PTXDIFF_SKIP=1 git push)")
    return "".join(f"{line}\n" for line in lines)
