"""The texts a `log` page keeps once (PTX and SASS of every commit's specs), as one deflated block.

A real history's texts are large (tens of kB each, hundreds of them) and alike: the same spec in
the next commit, a sibling spec of the same commit. But registers renumber between specs and
commits, so few lines repeat as they are, and deflate's 32 kB window cannot see from one text to
its base (issue 38). So each line is split into its form with the numbers masked (`add.s32 %r~,
%r~, %r~;`: a few thousand distinct forms in a whole history, kept once in the block) and its
numbers. A text is the runs of lines whose forms it shares with the most alike text before it
(its base) and the forms of its own lines; a number is kept as what it adds to a guess: on a
shared line, the base line's number shifted as the last number of its kind was (a renumbering
shifts a whole stretch), on an own line, the number last seen at the same place of the same form.
The guesses are mostly right, so the numbers are runs of zeros. The page's script inflates the
block when the first row is opened and rebuilds each text in order (report.js, `rebuilt`).
"""

from __future__ import annotations

import base64
import difflib
import itertools
import json
import re
import zlib
from collections.abc import Sequence

BASES = 64   # how many of the texts before it a text is compared with, for its base
# a line's numbers: at most 9 digits (exact in the script), no leading zero ("007" is 0, 0, 7), so
# a number printed gives its digits back; ASCII digits only, as the script's pattern
NUMBER = re.compile(r"0|[1-9][0-9]{0,8}")
MARKS = "~^`|#"   # the mark where a number was: the first of these no text has, else a private-use character


def mark(texts: Sequence[str]) -> str:
    """A character in none of `texts`."""
    used = set().union(*map(set, texts))
    return next(c for c in itertools.chain(MARKS, map(chr, itertools.count(0xE000))) if c not in used)


def kinds(form: str, at: str) -> list[bytes]:
    """What each number of a masked line is (the two characters before it: `%r`, `rd`, ` R`), so
    a register's renumbering shifts the next numbers of its kind only; as UTF-16 units, as the
    script counts them (`slice(-2)`)."""
    return [part.encode("utf-16-le", "surrogatepass")[-4:] for part in form.split(at)[:-1]]


def base_of(forms: Sequence[set[int]], i: int) -> int:
    """The text among the BASES before text `i` that shares the most distinct line forms with it
    (-1 for the first)."""
    return max(range(max(0, i - BASES), i), key=lambda k: len(forms[i] & forms[k]), default=-1)


def coded(ids: list[int], nums: list[list[int]], base: tuple[list[int], list[list[int]]] | None,
          kind: list[list[bytes]], seen: dict[tuple[int, int], int]) -> tuple[list[int], list[int]]:
    """One text's lines and numbers (`ids`: its lines' forms, `nums`: their numbers) against its
    base: the lines as a flat list (`-1 - k, n`: the base's n lines from line k; `id`: an own
    line's form), and the numbers as `zeros, residual` pairs (what each adds to its guess; zeros
    at the end left out). `seen`: the number last seen at each (form, place), along the block."""
    ops: list[int] = []
    residuals: list[int] = []
    shift: dict[bytes, int] = {}

    def code(j: int, base_nums: list[int] | None) -> None:
        for k, (what, n) in enumerate(zip(kind[ids[j]], nums[j])):
            if base_nums is not None:
                guess = base_nums[k] + shift.get(what, 0)
                shift[what] = n - base_nums[k]
            else:
                guess = seen.get((ids[j], k), 0)
            residuals.append(n - guess)
            seen[(ids[j], k)] = n

    matched = difflib.SequenceMatcher(None, base[0], ids).get_opcodes() if base is not None else [("insert", 0, 0, 0, len(ids))]
    for tag, i1, i2, j1, j2 in matched:
        if tag == "equal" and base is not None:
            ops += [-1 - i1, i2 - i1]
            for d in range(i2 - i1):
                code(j1 + d, base[1][i1 + d])
            continue
        for j in range(j1, j2):
            ops.append(ids[j])
            code(j, None)
    return ops, runs(residuals)


def runs(residuals: list[int]) -> list[int]:
    """`residuals` as `zeros, residual` pairs, the zeros at the end left out."""
    out: list[int] = []
    zeros = 0
    for r in residuals:
        if r:
            out += [zeros, r]
            zeros = 0
        else:
            zeros += 1
    return out


def encoded(texts: Sequence[str]) -> dict[str, object]:
    """The block's data: `{"mark": the mark, "forms": the distinct masked lines, "texts": per text
    [base, its lines], "nums": per text its numbers}` (`coded`); a text's index is its `t-N` name."""
    at = mark(texts)
    forms: dict[str, int] = {}
    ids: list[list[int]] = []
    nums: list[list[list[int]]] = []
    for t in texts:
        lines = t.split("\n")
        ids.append([forms.setdefault(NUMBER.sub(at, line), len(forms)) for line in lines])
        nums.append([[int(n) for n in NUMBER.findall(line)] for line in lines])
    kind = [kinds(form, at) for form in forms]
    distinct = [set(x) for x in ids]
    seen: dict[tuple[int, int], int] = {}
    out_texts: list[list[object]] = []
    out_nums: list[list[int]] = []
    for i in range(len(texts)):
        b = base_of(distinct, i)
        ops, residuals = coded(ids[i], nums[i], (ids[b], nums[b]) if b >= 0 else None, kind, seen)
        out_texts.append([b, ops])
        out_nums.append(residuals)
    return {"mark": at, "forms": list(forms), "texts": out_texts, "nums": out_nums}


def bundle(texts: Sequence[str]) -> dict[str, str]:
    """The page's block of `texts` (in order: a text's index is its `t-N` name): `{"z": base64 of
    the deflated JSON of `encoded`}`."""
    data = json.dumps(encoded(texts), separators=(",", ":")).encode("ascii")
    return {"z": base64.b64encode(zlib.compress(data, 9)).decode("ascii")}
