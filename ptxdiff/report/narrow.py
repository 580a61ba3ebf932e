"""The lines under `git diff` fitted to the terminal when it is narrower than they were laid out
for: the filler stores them within 100 columns once, and the diff driver (whose warm path
imports nothing costly: this module needs only `re` and `os`) breaks them again at `COLUMNS`,
which git sets for its pager.
"""

from __future__ import annotations

import os
import re

WIDTH = 100          # the lines are laid out within this many columns ...
INDENT = " " * 8     # ... and a long one goes on, indented, on the next line
_SGR = re.compile(r"\x1b\[[0-9;]*m")


def columns(limit: int = WIDTH) -> int:
    """`limit`, or COLUMNS when that is set and smaller (never below 20)."""
    env = os.environ.get("COLUMNS", "").strip()
    return max(20, min(limit, int(env))) if env.isdigit() and int(env) > 0 else limit


def _visible(text: str) -> int:
    return len(_SGR.sub("", text))


def _pieces(word: str, room: int) -> list[str]:
    """A word longer than `room` in pieces that fit: after a `/` or `::` where it has one in reach
    (a kernel id between folders, file and function), else at `room`."""
    out = []
    while _visible(word) > room:
        at = max(word.rfind("/", 0, room), word.rfind("::", 0, room - 1) + 1)
        cut = at + 1 if at > 0 else room
        cut = next((m.start() for m in _SGR.finditer(word) if m.start() < cut < m.end()), cut) or cut  # not in a colour code
        out.append(word[:cut])
        word = word[cut:]
    return [*out, word]


def fit(line: str, width: int) -> list[str]:
    """`line` (no newline, SGR colours allowed) broken between words into lines of at most
    `width` visible columns, each after the first indented one step more than `line`; a word
    longer than a line is broken after a `/` or `::`."""
    if _visible(line) <= width:
        return [line]
    lead = line[:len(line) - len(line.lstrip(" "))]
    more = " " * min(len(lead) + len(INDENT), width // 4)
    out: list[str] = []
    current = lead
    for word in line[len(lead):].split(" "):
        if not current.strip():
            first, *rest = _pieces(word, width - len(current))
            *whole, current = [current + first, *(more + piece for piece in rest)]
            out += whole
            continue
        if _visible(current) + 1 + _visible(word) <= width:
            current += " " + word
            continue
        out.append(current)
        *whole, current = [more + piece for piece in _pieces(word, width - len(more))]
        out += whole
    out.append(current)
    return out


def fit_text(text: str, width: int) -> str:
    """Every line of `text` fitted to `width` (text that already fits is returned as it is)."""
    if all(_visible(ln) <= width for ln in text.split("\n")):
        return text
    return "\n".join(piece for ln in text.split("\n") for piece in fit(ln, width))
