"""The report as one sticky pull-request comment (GitHub, GitLab): a hidden marker, a one-line
summary, the blocking rows as a table, every row in a collapsed `<details>` table, each kernel
linked to its lines, then the notes as a list; bounded to what a comment may hold.

Also which existing comment is the sticky one (`sticky_action`): CI finds it by the marker and
updates it in place on every push instead of adding one more. Pure functions; `ptxdiff ci`
gathers the links and writes the files.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

from ptxdiff.compare.results import Report, Row, describe
from ptxdiff.compare.verdict import ORDER
from ptxdiff.report import safe
from ptxdiff.report.layout import TableColumn, md_escape
from ptxdiff.report.render import notes, report_columns

MARKER = "<!-- ptxdiff -->"       # the sticky comment's key: its body starts with it
COMMENT_MAX = 65536               # characters GitHub accepts in a comment body (GitLab: 1,000,000)
HEADROOM = 512                    # kept free: a forge may count some characters twice


@dataclass(frozen=True)
class Links:
    """Where the rows' kernels live on the forge: `{root}/{blob}/{commit}/{path}#L{line}`.
    `at`: per kernel id, the commit to link (the head; the base for a removed kernel) and the
    line of its `def` there (None: the file alone)."""

    root: str                                   # https://github.com/owner/repo
    at: Mapping[str, tuple[str, str, int | None]] = field(default_factory=dict)   # id -> (commit, path, line)
    blob: str = "blob"                          # GitLab: "-/blob"

    def url(self, kernel: str) -> str | None:
        where = self.at.get(kernel)
        if where is None:
            return None
        commit, path, line = where
        raw = path.encode("utf-8", "surrogateescape")
        anchor = f"#L{line}" if line else ""
        return f"{self.root}/{self.blob}/{commit}/{quote(raw, safe='/')}{anchor}"


def rank(verdict: str) -> tuple[int, str]:
    """Strongest first; a verdict this module does not know yet goes after the known ones."""
    return (ORDER.index(verdict) if verdict in ORDER else len(ORDER), verdict)


def kernel_verdicts(report: Report) -> dict[str, str]:
    """Per kernel, the strongest verdict of its rows (specs x targets)."""
    out: dict[str, str] = {}
    for r in report.rows:
        if r.kernel not in out or rank(r.verdict) < rank(out[r.kernel]):
            out[r.kernel] = r.verdict
    return out


def verdict_counts(report: Report) -> dict[str, int]:
    """How many kernels have each (strongest) verdict, strongest verdict first."""
    counts = Counter(kernel_verdicts(report).values())
    return {v: counts[v] for v in sorted(counts, key=rank)}


def summary(report: Report) -> str:
    """One line: what changed, and whether the gate passes."""
    counts = verdict_counts(report)
    n = sum(counts.values())
    if not n:
        what = "no Triton kernel changed"
    else:
        what = f"{n} kernel{'s' if n != 1 else ''} changed: " + ", ".join(f"{c} {v}" for v, c in counts.items())
    blocking = report.blocking
    if not blocking:
        return f"**ptxdiff**: {what}; passes"
    kernels = len({r.kernel for r in blocking})
    return (f"**ptxdiff**: {what}; **blocked** by {kernels} kernel{'s' if kernels != 1 else ''} "
            f"({len(blocking)} row{'s' if len(blocking) != 1 else ''} in the block list: "
            f"{md_escape(', '.join(report.config.block))})")


def _compared(report: Report) -> str:
    base = f"`{report.base.short}`" if report.base and report.base.commit else "nothing"
    tools = describe(report.toolchain)
    return f"Merge base {base} → head `{report.head.short}` ({md_escape(tools)})"


def cell(text: str) -> str:
    """A table cell: one line, Markdown and pipes escaped (control characters are already `\\xNN`)."""
    return md_escape(" ".join(text.split())) or " "


def _table_rows(report: Report, shown: Report, links: Links | None) -> tuple[str, list[str]]:
    """The header (with its delimiter row) and one Markdown line per row, kernels linked."""
    columns: list[TableColumn[Row]] = report_columns(shown)
    header = "| " + " | ".join(cell(c.header) for c in columns) + " |\n|" + "---|" * len(columns)
    lines = []
    for raw, r in zip(report.rows, shown.rows):
        cells = []
        for c in columns:
            text = cell(c.value(r))
            url = links.url(raw.kernel) if links is not None and c.header == "kernel" else None
            cells.append(f"[{text}]({url})" if url else text)
        lines.append("| " + " | ".join(cells) + " |")
    return header, lines


def _left_out(n: int, of: int, what: str, artifact: str) -> str:
    return (f"_{n} of {of} {what} left out to keep this comment within {COMMENT_MAX} characters; "
            f"the JSON report ({md_escape(artifact)}, uploaded as an artifact) has all of them._")


@dataclass(frozen=True)
class _Parts:
    head: str
    header: str
    rows: list[str]
    blocking: list[int]          # indexes into rows
    notes: list[str]
    artifact: str

    def assemble(self, n_block: int, n_all: int, n_notes: int) -> str:
        blocks = [self.head]
        if self.blocking:
            shown = [self.rows[i] for i in self.blocking[:n_block]]
            blocks.append("\n".join([self.header, *shown]))
            if n_block < len(self.blocking):
                blocks.append(_left_out(len(self.blocking) - n_block, len(self.blocking), "blocking rows",
                                        self.artifact))
        elif self.rows:
            blocks.append("No blocking verdict.")
        if self.rows:
            inner = ["\n".join([self.header, *self.rows[:n_all]]) if n_all else ""]
            if n_all < len(self.rows):
                inner.append(_left_out(len(self.rows) - n_all, len(self.rows), "rows", self.artifact))
            blocks.append(f"<details><summary>All {len(self.rows)} row{'s' if len(self.rows) != 1 else ''}"
                          "</summary>\n\n" + "\n\n".join(t for t in inner if t) + "\n\n</details>")
        if self.notes:
            items = [f"- {n}" for n in self.notes[:n_notes]]
            if n_notes < len(self.notes):
                items.append(f"- {_left_out(len(self.notes) - n_notes, len(self.notes), 'notes', self.artifact)}")
            blocks.append("\n".join(items))
        return "\n\n".join(blocks) + "\n"


def _most(fits: Callable[[int], bool], n: int) -> int:
    """The largest k in 0..n with fits(k) (fits is monotone), 0 when none fits."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def comment(report: Report, links: Links | None = None, limit: int = COMMENT_MAX - HEADROOM,
            artifact: str = "ptxdiff-report.json") -> str:
    """The comment's Markdown. Past `limit` characters, the details table and the notes are cut
    by the same share, then blocking rows go too, each with a line saying how many and that the
    artifact has all."""
    shown = safe.report(report)
    header, rows = _table_rows(report, shown, links)
    head = f"{MARKER}\n{summary(shown)}\n\n{_compared(shown)}"
    parts = _Parts(head, header, rows, [i for i, r in enumerate(report.rows) if r.blocking],
                   [md_escape(" ".join(n.split())) for n in notes(shown)], artifact)
    n_block, n_all, n_notes = len(parts.blocking), len(rows), len(parts.notes)
    scale = max(n_all, n_notes, 1)

    def share(k: int) -> str:
        return parts.assemble(n_block, n_all * k // scale, n_notes * k // scale)

    text = share(_most(lambda k: len(share(k)) <= limit, scale))
    if len(text) <= limit:
        return text
    n_block = _most(lambda n: len(parts.assemble(n, 0, 0)) <= limit, n_block)
    return parts.assemble(n_block, 0, 0)


def comments_from_json(text: str) -> list[dict]:
    """A forge's list of comments as `gh api --paginate` or curl saves it: one JSON array, arrays
    one after another (one per page), or one object per line."""
    decoder = json.JSONDecoder()
    out: list[dict] = []
    pos = 0
    while True:
        pos = len(text) - len(text[pos:].lstrip())
        if pos >= len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out += [c for c in (value if isinstance(value, list) else [value]) if isinstance(c, dict)]


def _author(c: Mapping) -> str | None:
    """GitHub's `user.login`, GitLab's `author.username`."""
    who = c.get("user") or c.get("author") or {}
    return who.get("login") or who.get("username") if isinstance(who, dict) else None


def _normal(body: str) -> str:
    return re.sub(r"\r\n?", "\n", body).strip()


def sticky_action(comments: Sequence[Mapping], body: str, author: str | None = None) -> str:
    """What CI does with `body`: `update ID` for the first comment (oldest first, as forges list
    them) that starts with the marker and, when `author` is given, was written by it; `unchanged
    ID` when that comment already says `body`; else `create`. Another author's comment with the
    marker is not ours to edit, so it is passed over."""
    for c in comments:
        text = c.get("body")
        if not isinstance(text, str) or not text.lstrip().startswith(MARKER):
            continue
        if author is not None and _author(c) != author:
            continue
        same = _normal(text) == _normal(body)
        return f"{'unchanged' if same else 'update'} {c.get('id')}"
    return "create"
