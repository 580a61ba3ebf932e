"""The lines under each file of `git diff`: one per kernel x spec x target of a report.

The background filler formats a comparison with this once, plain and coloured, and stores both;
the diff driver only prints the stored bytes, so nothing here is on git's warm path.
"""

from __future__ import annotations

from ptxdiff.compare.results import Report
from ptxdiff.report.columns import COLUMNS, SOURCE_MARK, outputs_cell


def block(report: Report, colour: bool) -> str:
    """One line per kernel x spec x target of a report (a timing summary adds one)."""
    dim, warn, reset = ("\x1b[2m", "\x1b[33m", "\x1b[m") if colour else ("", "", "")
    lines = []
    for r in report.rows:
        metrics = "  ".join(f"{c.short} {c.cell(r)}" for c in COLUMNS)
        verdict = f"{warn}{r.verdict}{reset}" if r.blocking else r.verdict
        mark = SOURCE_MARK.get(r.spec_source or "")
        source = f" ({mark})" if mark and r.spec_source != "config" else ""
        line = f"{dim}ptxdiff {r.target} {r.kernel} [{r.spec}]{source}{reset} {verdict}"
        if r.error:
            line += f"  {r.error.splitlines()[0][:200]}"
        else:
            line += f"  {metrics}"
        if r.outputs:
            line += f"  outputs {outputs_cell(r.outputs)}"
        lines.append(line)
        if r.timing and r.timing.get("summary"):
            lines.append(f"{dim}ptxdiff {r.target} {r.kernel} time{reset} {r.timing['summary']}")
    return "".join(line + "\n" for line in lines)
