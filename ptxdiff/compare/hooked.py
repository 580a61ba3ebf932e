"""Rows of a kernel whose launch hooks or autotune settings changed (discovery/hooks.py).

Removing `reset_to_zero=['C']` from an autotuned `atomic_add` kernel changes every result and
not a line of PTX. Hooks are part of the kernel, so their change is a change of its structure:
each row that would read `identical`, `reordered` or `constants-only` reads `structural`, with a
reason that names the setting (`autotune reset_to_zero ['C'] -> (none)`), and blocks wherever
`structural` does (the default). A row that is structural already says it too. The setting is a
fact of the source, never a guess: such a row blocks whatever `block_guessed` says. Pure.
"""

from __future__ import annotations

import dataclasses

from ptxdiff import repo_config
from ptxdiff.compare.gate_inputs import Role
from ptxdiff.compare.pairing import Pair
from ptxdiff.compare.results import Row
from ptxdiff.discovery import hooks
from ptxdiff.verdict import Verdict

RAISED = (Verdict.IDENTICAL, Verdict.REORDERED, Verdict.CONSTANTS_ONLY)   # verdicts a hook change makes structural


def marked(rows: list[Row], pair: Pair, cfg: repo_config.Config) -> list[Row]:
    """The pair's rows with its hook changes said, and made structural where the code is not."""
    if pair.old is None or pair.new is None:
        return rows
    said = hooks.changes(pair.old.hooks, pair.new.hooks)
    if not said:
        return rows
    reason = "; ".join(said)
    out = []
    for r in rows:
        if r.verdict in RAISED:
            blocking = pair.role != Role.REPORT and Verdict.STRUCTURAL in cfg.block
            out.append(dataclasses.replace(r, verdict=Verdict.STRUCTURAL, blocking=r.blocking or blocking,
                                           why=reason + (f"; the code: {r.verdict}" + (f" ({r.why})" if r.why else ""))))
        elif r.verdict == Verdict.STRUCTURAL:
            out.append(dataclasses.replace(r, why=reason + (f"; {r.why}" if r.why else "")))
        else:
            out.append(r)
    return out
