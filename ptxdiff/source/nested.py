"""How much TOML and JSON from a repository ptxdiff parses: its size and how deeply it nests.

A config (`ptxdiff.toml`, `pyproject.toml`) and a recording (`.ptxdiff/launches.jsonl`) come
from the compared revisions, so a branch writes them. Python's TOML parser recurses once per
level of nesting and its JSON parser refuses past the recursion limit, so `x = [[[...]]]` 100,000
deep ended ptxdiff in RecursionError (an internal error, exit 3). The text is measured before it
is parsed, without recursion: a violation is a one-line error the caller turns into a config
error (exit 2; the diff driver says it and shows git's diff as usual).

The bounds: the deepest real config or recording nests 6 levels (kernels."id".specs, an inline
table of constexprs; a launch's autotune configs), MAX_DEPTH is ten times that; a config is read
whole by every command, MAX_CONFIG_BYTES is 1 MB (a pyproject.toml of a large project is ~20 KB);
a recording keeps 8 launches per kernel, ~1 KB each, so MAX_RECORDING_BYTES (16 MB) holds 2,000
kernels' worth.
"""

from __future__ import annotations

import re

MAX_DEPTH = 64
MAX_CONFIG_BYTES = 1 << 20
MAX_RECORDING_BYTES = 16 << 20

# a one-line string (TOML basic or literal, JSON), a TOML comment, or a bracket
_TOKEN = re.compile(r""""(?:[^"\\\n]|\\.)*"|'[^'\n]*'|#[^\n]*|[\[\]{}]""")


def depth(text: str) -> int:
    """The deepest nesting of `[`/`{` in TOML or JSON text outside strings and comments. A
    multi-line string reads as a run of one-line pieces, so a bracket inside one may be counted:
    the measure errs upwards (the parse still guards against the rare way it could err down)."""
    deepest = level = 0
    for m in _TOKEN.finditer(text):
        ch = m.group(0)
        if ch in ("[", "{"):
            level += 1
            deepest = max(deepest, level)
        elif ch in ("]", "}"):
            level = max(0, level - 1)
    return deepest


def bound_error(data: bytes | str, what: str, max_bytes: int) -> str | None:
    """Why `data` (a config or one line of a recording: `what`) is not parsed, or None when it is
    within the bounds of size (`max_bytes`) and nesting (MAX_DEPTH)."""
    if len(data) > max_bytes:
        return f"{len(data) / 2**20:.1f} MB, over the {max_bytes / 2**20:g} MB bound for a {what}"
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    if text.count("[") + text.count("{") <= MAX_DEPTH:   # what every real line and config is: no scan
        return None
    deepest = depth(text)
    if deepest > MAX_DEPTH:
        return f"nested {deepest} levels deep, over the bound of {MAX_DEPTH} for a {what}"
    return None
