"""Colours for people on a terminal: verdicts by how much they ask of a reviewer.

Only SGR codes and the choice of them live here; whether to colour at all (a terminal, NO_COLOR,
--color) is decided at the edge (cli/common.py, the diff driver) and handed in as a bool.
"""

from __future__ import annotations

from ptxdiff.verdict import Verdict

RESET = "\x1b[m"
DIM = "\x1b[2m"

# structural, failed and unmeasured ask for a look (red), constants-only and reordered for a thought
# (yellow: counts are blind there), identical for nothing (dim); added/removed stay plain
VERDICT_SGR: dict[str, str] = {
    Verdict.FAILED: "\x1b[1;31m",
    Verdict.UNMEASURED: "\x1b[1;31m",
    Verdict.STRUCTURAL: "\x1b[31m",
    Verdict.REORDERED: "\x1b[33m",
    Verdict.CONSTANTS_ONLY: "\x1b[33m",
    Verdict.IDENTICAL: DIM,
}


def paint(text: str, sgr: str | None, colour: bool) -> str:
    """`text` in `sgr` when colouring, else as it is."""
    return f"{sgr}{text}{RESET}" if colour and sgr and text else text


def verdict(text: str, name: str, colour: bool) -> str:
    """A verdict cell (`name` is the verdict, `text` what is shown for it, e.g. with a mark)."""
    return paint(text, VERDICT_SGR.get(name), colour)
