"""The texts a `log` page keeps once (PTX and SASS of every commit's specs), as one deflated block.

A real history's texts are large (tens of kB each, hundreds of them) and alike: the same spec in
the next commit, a sibling spec of the same commit. Deflated one by one they were most of a 6 MB
page (issue 38); so each text is written as the lines it shares with the most alike text before it
(copied by position) and the lines it adds, and the whole list is deflated at once. The page's
script inflates the block when the first row is opened and rebuilds each text in order.
"""

from __future__ import annotations

import base64
import difflib
import json
import zlib
from collections.abc import Sequence

BASES = 64   # how many of the texts before it a text is compared with, for its base


def delta(base: str, new: str) -> list[list[int] | str]:
    """`new` as runs of `base`'s lines (`[first, count]`) and its own lines (one string, joined
    by newlines); lines split on newlines only, so joining them gives `new` back exactly."""
    a, b = base.split("\n"), new.split("\n")
    ops: list[list[int] | str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag == "equal":
            ops.append([i1, i2 - i1])
        elif j2 > j1:
            ops.append("\n".join(b[j1:j2]))
    return ops


def encoded(texts: Sequence[str]) -> list[str | dict[str, object]]:
    """Each text whole, or as `{"b": index of its base, "d": delta}` where that is shorter; its
    base: the text among the BASES before it that shares the most distinct lines with it."""
    lines = [set(t.split("\n")) for t in texts]
    out: list[str | dict[str, object]] = []
    for i, text in enumerate(texts):
        base = max(range(max(0, i - BASES), i), key=lambda k: len(lines[i] & lines[k]), default=None)
        ops = delta(texts[base], text) if base is not None else None
        coded: str | dict[str, object] = {"b": base, "d": ops} if ops is not None else text
        out.append(coded if len(json.dumps(coded)) < len(json.dumps(text)) else text)
    return out


def bundle(texts: Sequence[str]) -> dict[str, str]:
    """The page's block of `texts` (in order: a text's index is its `t-N` name): `{"z": base64 of
    the deflated JSON list of `encoded`}`."""
    data = json.dumps(encoded(texts), separators=(",", ":")).encode("ascii")
    return {"z": base64.b64encode(zlib.compress(data, 9)).decode("ascii")}
