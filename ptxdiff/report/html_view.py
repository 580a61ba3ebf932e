"""What the HTML report's PTX view of one row needs, worked out here so the page's script only
draws: each side's normalised PTX with the source line of every line, the two sides aligned, and
the opcode deltas.

Sides are aligned on their lines with register numbers and block labels masked, so a renumbered
register does not make a line `changed`: such lines align and are marked as renamed only.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass

from ptxdiff.compare.results import Row
from ptxdiff.metrics.ptx import SourceLines
from ptxdiff.report.safe import shown

# (revision key, repository path) -> the file's text, or None where it cannot be read
Read = Callable[[str, str], "str | None"]

_NUMBERED = re.compile(r"%[A-Za-z_]\w*?\d+\b|\$L__\w+?\d+(?:_\d+)?\b")
# SASS registers (R7, UR4, P0, UP1, B0) and branch labels: renumbered, a line only renames
_SASS_NUMBERED = re.compile(r"\b(?:U?R|U?P|B)\d+\b|\.L_x_\d+")
OPCODES_SHOWN = 24     # the largest opcode deltas drawn as bars; the rest are counted


def repo_path(name: str) -> str:
    """The repository path of a PTX `.file` name: the build names each file `path@revision`
    (instantiate/builder.py), so two revisions' kernels never share a name in triton's caches."""
    path, at, _ = name.rpartition("@")
    return path if at and path else name


def alignment(old: list[str], new: list[str], numbered: re.Pattern[str] = _NUMBERED) -> list[list[str | int]]:
    """difflib's opcodes over the masked lines, as `[tag, i1, i2, j1, j2]` with tag e (equal),
    r (replace), d (delete) or i (insert). The common head and tail are matched first; difflib's
    heuristic (a line in more than 1% of a long side anchors no match, though matches run through
    it) keeps a 12,000-line kernel to a fraction of a second, where the exact search takes seconds:
    masked PTX repeats a few hundred distinct lines. `numbered`: what is masked (PTX's names by default)."""
    a, b = [numbered.sub("%", x) for x in old], [numbered.sub("%", x) for x in new]
    head = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    tail = next((k for k, (x, y) in enumerate(zip(reversed(a[head:]), reversed(b[head:]))) if x != y),
                min(len(a), len(b)) - head)
    middle = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail]).get_opcodes()
    ops: list[list[str | int]] = [["e", 0, head, 0, head]] if head else []
    ops += [[tag[0], i1 + head, i2 + head, j1 + head, j2 + head] for tag, i1, i2, j1, j2 in middle]
    if tail:
        ops.append(["e", len(a) - tail, len(a), len(b) - tail, len(b)])
    return ops


@dataclass
class SourceTable:
    """The source files a page embeds, each once: (revision key, path) -> its id on the page,
    and the files as the page embeds them."""

    read: Read
    ids: dict[tuple[str, str], str | None]
    files: list[dict[str, str]]

    def ref(self, rev: str | None, name: str) -> str | None:
        """The page's id of a file a PTX line points into, reading it the first time."""
        path = repo_path(name)
        if rev is None:
            return None
        if (rev, path) not in self.ids:
            text = self.read(rev, path)
            self.ids[(rev, path)] = None if text is None else f"src-{len(self.files)}"
            if text is not None:
                self.files.append({"id": f"src-{len(self.files)}", "path": shown(path), "text": shown(text, lines=True)})
        return self.ids[(rev, path)]


def new_table(read: Read) -> SourceTable:
    return SourceTable(read, {}, [])


def _side(label: str, ptx: str, loc: SourceLines | None, rev: str | None, sources: SourceTable) -> dict[str, object]:
    files = [{"name": shown(repo_path(f)), "src": sources.ref(rev, f)} for f in loc.files] if loc else []
    runs = [list(r) for r in loc.runs] if loc and sum(r[0] for r in loc.runs) == ptx.count("\n") else []
    return {"label": label, "text": shown(ptx, lines=True), "files": files, "runs": runs}


def row_view(row: Row, labels: tuple[str, str], revs: tuple[str | None, str | None],
             sources: SourceTable) -> dict[str, object] | None:
    """The data of one row's PTX view: its sides (one when the other is missing or the same),
    and their alignment where they differ; None when neither side has PTX."""
    sides = []
    if row.old_ptx is not None and row.old_ptx != row.new_ptx:
        sides.append(_side(labels[0], row.old_ptx, row.old_loc, revs[0], sources))
    if row.new_ptx is not None:
        sides.append(_side(labels[1] if sides or row.old_ptx is None else "old and new (the same)",
                           row.new_ptx, row.new_loc, revs[1], sources))
    if not sides:
        return None
    view: dict[str, object] = {"sides": sides}
    if len(sides) == 2:
        view["ops"] = alignment(row.old_ptx.splitlines() if row.old_ptx else [], row.new_ptx.splitlines()
                                if row.new_ptx else [])
    return view


def sass_view(row: Row, labels: tuple[str, str]) -> dict[str, object] | None:
    """The data of one row's SASS view, drawn as the PTX view is (no source lines: nvdisasm's
    listing carries none): its sides and their alignment; None when neither side has SASS (a
    failed compile, a cubin not kept or not disassembled: compile/listings.py)."""
    sides = []
    if row.old_sass is not None and row.old_sass != row.new_sass:
        sides.append({"label": labels[0], "text": shown(row.old_sass, lines=True), "files": [], "runs": []})
    if row.new_sass is not None:
        label = labels[1] if sides or row.old_sass is None else "old and new (the same)"
        sides.append({"label": label, "text": shown(row.new_sass, lines=True), "files": [], "runs": []})
    if not sides:
        return None
    view: dict[str, object] = {"sides": sides, "kind": "SASS"}
    if len(sides) == 2:
        view["ops"] = alignment((row.old_sass or "").splitlines(), (row.new_sass or "").splitlines(), _SASS_NUMBERED)
    return view


def opcode_deltas(row: Row) -> tuple[list[tuple[str, int]], int]:
    """The opcodes whose counts moved, largest first (at most OPCODES_SHOWN), and how many more
    moved; a one-sided row: its own counts."""
    old = row.old.ptx_opcodes if row.old is not None else {}
    new = row.new.ptx_opcodes if row.new is not None else {}
    if row.old is None or row.new is None:
        counts = [(k, int(v)) for k, v in (new or old).items()]
    else:
        counts = [(k, int(new.get(k, 0)) - int(old.get(k, 0))) for k in sorted(set(old) | set(new))]
    moved = sorted(((k, d) for k, d in counts if d), key=lambda kd: (-abs(kd[1]), kd[0]))
    return moved[:OPCODES_SHOWN], max(0, len(moved) - OPCODES_SHOWN)
