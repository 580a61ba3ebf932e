"""The pre-push gate's text: per pushed ref, the notes, and when it is blocked, which kernels
block it, in which pushed commits they changed, and how to approve or bypass."""

from __future__ import annotations

from ptxdiff.compare.results import Row
from ptxdiff.gate.outcome import TRAILER, Outcome
from ptxdiff.report.columns import explanations
from ptxdiff.report.kernels import kernel_lines
from ptxdiff.report.layout import FULL, KEY, PLAIN, Layout, TableColumn, grid, hanging
from ptxdiff.report.render import SPEC_CAP, verdicts_found
from ptxdiff.report.safe import shown
from ptxdiff.report.style import VERDICT_SGR
from ptxdiff.verdict import Verdict


def _deltas(r: Row) -> str:
    return ", ".join(f"{k} {v:+}" for k, v in r.delta.items() if v and k != "occupancy") or shown(r.error or "")[:80]


def render(outcome: Outcome, touched: dict[str, list[str]], layout: Layout = PLAIN) -> str:
    """`touched`: per blocking kernel, the short ids of the pushed commits that changed its file.
    The table fits `layout.width` (narrow: the spec goes, long cells wrap)."""
    update, rows = outcome.update, outcome.blocking
    lines = list(outcome.notes)
    if not rows:
        return "".join(f"{line}\n" for line in lines)
    kernels = kernel_lines(rows)   # a line per blocking kernel: its blocking rows' strongest verdict
    agree = {k.kernel: k.agree for k in kernels}
    blocking = [k.as_row(SPEC_CAP) for k in kernels]
    columns: list[TableColumn[Row]] = [
        TableColumn("kernel", lambda r: shown(r.kernel), KEY, wrap=20),
        TableColumn("target", lambda r: r.target, KEY),
        TableColumn("spec", lambda r: shown(r.spec), FULL, wrap=16),
        *([TableColumn("blocking specs", lambda r: agree[r.kernel], FULL, wrap=14)] if len(kernels) < len(rows) else []),
        TableColumn("verdict", lambda r: r.verdict, KEY, style=lambda r: VERDICT_SGR.get(r.verdict)),
        TableColumn("deltas", _deltas, KEY, wrap=16),
        TableColumn("commits", lambda r: " ".join(touched[r.kernel]) or "-", KEY, wrap=7)]
    where = f"{update.local_ref} -> {update.remote_ref}" if update.remote_ref else update.local_ref
    lines.append(hanging(f"ptxdiff: push of {where} blocked: {len(blocking)} kernel "
                         f"change{'s' if len(blocking) != 1 else ''} in the block list: {verdicts_found(blocking)}",
                         layout.width))
    lines.append(grid(columns, blocking, layout))
    lines += [hanging(shown(line), layout.width) for line in explanations(blocking)]
    # the errors of the blocking specs a kernel's line does not show (a pin, a failed guess)
    lines += [hanging(shown(f"{r.kernel} [{r.target} {r.spec}]: {r.error}"), layout.width)
              for k in kernels for r in k.rows if r.error and r is not k.row]
    if any(r.verdict == Verdict.UNPAIRED for r in blocking):
        lines.append(hanging("unpaired: no spec of the changed kernel has an equal spec on the other side (the same "
                             "types, None-ness, constexprs), so nothing could be compared and the push fails closed "
                             "(give the launch values in config or `ptxdiff record`, or set block_unmeasured = false "
                             "on the base branch)", layout.width))
    if any(r.verdict == Verdict.UNMEASURED or r.verdict == Verdict.ADDED and r.error for r in blocking):
        lines.append(hanging("unmeasured: no side of the change could be compiled, so what it does to the kernel "
                             "cannot be told and the push fails closed (the errors say why; give the values in "
                             "[tool.ptxdiff.kernels.\"<id>\"], or set block_unmeasured = false on the base branch)",
                             layout.width))
    lines.append("\nTo approve, add a trailer to a pushed commit, e.g. the last one:")
    for kid in sorted({shown(r.kernel) for r in blocking}):
        lines.append(f'    git commit --amend --no-edit --trailer "{TRAILER}: {kid}"')
    lines.append("or bypass once: git push --no-verify  (or PTXDIFF_SKIP=1 git push)")
    return "".join(f"{line}\n" for line in lines)
