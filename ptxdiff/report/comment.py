"""The report as one sticky pull-request comment (GitHub, GitLab): a hidden marker, a one-line
summary with the approvals and policy notes under it (never trimmed, each capped), the blocking
rows as a table with how to approve them, every row in a collapsed `<details>` table, each kernel
linked to its lines, then the notes in another `<details>`; bounded to what a comment may hold
(a large pull request gets one row per kernel). Nothing in it depends on the run (which rows
came from a cache, a remote's answer), so two runs on one head write the same bytes and the
sticky comment is left `unchanged`. Repository text is inert: escaped, no mention, no link.

Also which existing comment is the sticky one (`sticky_action`): CI finds it by the marker and
updates it in place on every push instead of adding one more. Pure functions; `ptxdiff ci`
gathers the links and writes the files.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from ptxdiff.compare.notes import NoteKind
from ptxdiff.compare.results import Report, Row, describe
from ptxdiff.gate.outcome import TRAILER
from ptxdiff.report import kernels, safe
from ptxdiff.report.kernels import KernelLine, kernel_lines
from ptxdiff.report.layout import TableColumn, md_escape
from ptxdiff.report.render import SPEC_CAP, by_kernel, notes, report_columns

MARKER = "<!-- ptxdiff -->"       # the sticky comment's key: its body starts with it
COMMENT_MAX = 65536               # characters GitHub accepts in a comment body (GitLab: 1,000,000)
HEADROOM = 512                    # kept free: a forge may count some characters twice
PINNED_MAX = 300                  # characters of each approval or policy note under the summary ...
PINNED_COUNT = 20                 # ... and how many of them (the rest are counted; the artifact has all)
PINNED = (NoteKind.POLICY, NoteKind.APPROVAL)   # the notes pinned under the summary, not among the others
APPROVE_NAMED = 10                # kernels named in the trailer example


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


def kernel_verdicts(report: Report) -> dict[str, str]:
    """Per kernel, one verdict (report/kernels.py: the strongest of its blocking rows, else of
    the rows that compared old with new)."""
    return {line.kernel: line.verdict for line in kernel_lines(report.rows)}


def verdict_counts(report: Report) -> dict[str, int]:
    """How many kernels have each verdict (`kernel_verdicts`), strongest verdict first."""
    return kernels.verdict_counts(report.rows)


def summary(report: Report, approved: int = 0) -> str:
    """One line: what changed, and whether the gate passes (and how many kernels an approval in
    the pull request let through)."""
    counts = verdict_counts(report)
    n = sum(counts.values())
    if not n:
        what = "no Triton kernel changed"
    else:
        what = f"{n} kernel{'s' if n != 1 else ''} changed: " + ", ".join(f"{c} {v}" for v, c in counts.items())
    passed = f"; {approved} kernel{'s' if approved != 1 else ''} approved in this pull request" if approved else ""
    blocking = [line for line in kernel_lines(report.rows) if line.blocking]
    if not blocking:
        return f"**ptxdiff**: {what}; passes{passed}"
    n, rows = len(blocking), len(report.blocking)
    return (f"**ptxdiff**: {what}; **blocked** by {n} kernel{'s' if n != 1 else ''} "
            f"({kernels.counted([line.verdict for line in blocking])}; {rows} spec row{'s' if rows != 1 else ''})"
            f"{passed}")


def code(text: str) -> str:
    """`text` as an inline code span that its own backticks cannot end (a longer fence), for a
    line outside a table; nothing in a code span mentions or links."""
    text = " ".join(text.split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def pinned(lines: Sequence[str]) -> list[str]:
    """Approvals and policy notes under the summary: each capped at PINNED_MAX characters, at
    most PINNED_COUNT of them, escaped; never trimmed to fit, so nothing can push them out."""
    out = []
    for line in lines[:PINNED_COUNT]:
        line = " ".join(line.split())
        line = line if len(line) <= PINNED_MAX else line[:PINNED_MAX - 1] + "…"
        out.append(f"> {md_escape(line)}")
    if len(lines) > PINNED_COUNT:
        out.append(f"> and {len(lines) - PINNED_COUNT} more (the JSON report has all)")
    return out


def how_to_approve(report: Report) -> str:
    """Under the blocking table: the trailer that approves, and who may give it."""
    kernels = list(dict.fromkeys(r.kernel for r in report.blocking))
    named = ", ".join(code(f"{TRAILER}: {k}") for k in kernels[:APPROVE_NAMED])
    more = f" (and {len(kernels) - APPROVE_NAMED} more)" if len(kernels) > APPROVE_NAMED else ""
    return (f"To approve, add a trailer to a commit of this pull request: {named}{more} (a kernel id, its "
            f"function name, or `*` for all), e.g. `git commit --amend --no-edit --trailer \"{TRAILER}: …\"`. "
            "Anyone who can push to the branch may; each approval is said above this table with its commit, "
            "so a reviewer sees an author approving their own change.")


def _compared(report: Report) -> str:
    base = f"`{report.base.short}`" if report.base and report.base.commit else "nothing"
    tools = describe(report.toolchain)
    return f"Merge base {base} → head `{report.head.short}` ({md_escape(tools)})"


def cell(text: str) -> str:
    """A table cell: one line, Markdown and pipes escaped (control characters are already `\\xNN`)."""
    return md_escape(" ".join(text.split())) or " "


def _header(names: Sequence[str]) -> str:
    return "| " + " | ".join(cell(n) for n in names) + " |\n|" + "---|" * len(names)


def _linked(text: str, kernel: str, links: Links | None) -> str:
    url = links.url(kernel) if links is not None else None
    return f"[{text}]({url})" if url else text


def _table_rows(report: Report, shown: Report, links: Links | None,
                by: dict[str, KernelLine] | None = None) -> tuple[str, list[str]]:
    """The header (with its delimiter row) and one Markdown line per row (a line per kernel:
    `by`), kernels linked."""
    columns: list[TableColumn[Row]] = report_columns(shown, lines=by)
    lines = []
    for raw, r in zip(report.rows, shown.rows):
        cells = [_linked(cell(c.value(r)), raw.kernel, links) if c.header == "kernel" else cell(c.value(r))
                 for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return _header([c.header for c in columns]), lines


def _kernel_rows(report: Report, shown: Report, links: Links | None) -> tuple[str, list[str]]:
    """A large pull request's details: one line per kernel (its verdict, its rows, how many block)."""
    verdicts = kernel_verdicts(report)
    rows, blocking = Counter(r.kernel for r in report.rows), Counter(r.kernel for r in report.rows if r.blocking)
    lines = []
    for kernel, name in dict(zip((r.kernel for r in report.rows), (r.kernel for r in shown.rows))).items():
        lines.append(f"| {_linked(cell(name), kernel, links)} | {cell(verdicts[kernel])} | {rows[kernel]} | "
                     f"{blocking[kernel] or '-'} |")
    return _header(["kernel", "verdict", "rows", "blocking rows"]), lines


def _left_out(n: int, of: int, what: str, artifact: str) -> str:
    return (f"_{n} of {of} {what} left out to keep this comment within {COMMENT_MAX} characters; "
            f"the JSON report ({md_escape(artifact)}, uploaded as an artifact) has all of them._")


def _details(summary_text: str, body: str) -> str:
    return f"<details><summary>{summary_text}</summary>\n\n{body}\n\n</details>"


@dataclass(frozen=True)
class _Parts:
    head: str
    header: str                  # the blocking table's
    rows: list[str]              # the blocking table's rows
    blocking: list[int]          # indexes into rows
    approve: str                 # how to approve, under the blocking table
    all_header: str              # the details table's: every row, or one per kernel (a large pull request)
    all_rows: list[str]
    what: str                    # what a line of the details table is: "row" or "kernel"
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
            blocks.append(self.approve)
        elif self.rows:
            blocks.append("No blocking verdict.")
        if self.all_rows:
            n = len(self.all_rows)
            inner = ["\n".join([self.all_header, *self.all_rows[:n_all]]) if n_all else ""]
            if n_all < n:
                inner.append(_left_out(n - n_all, n, f"{self.what}s", self.artifact))
            label = f"All {n} {self.what}{'s' if n != 1 else ''}" + \
                (" (the JSON report has each spec row)" if self.what == "kernel" else "")
            blocks.append(_details(label, "\n\n".join(t for t in inner if t)))
        if self.notes:
            items = [f"- {n}" for n in self.notes[:n_notes]]
            if n_notes < len(self.notes):
                items.append(f"- {_left_out(len(self.notes) - n_notes, len(self.notes), 'notes', self.artifact)}")
            blocks.append(_details(f"Notes ({len(self.notes)}): why each verdict, guesses, errors", "\n".join(items)))
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


def _fitted(parts: _Parts, limit: int) -> str:
    """Past `limit` characters, the details table and the notes are cut by the same share, then
    blocking rows go too, each with a line saying how many and that the artifact has all."""
    n_block, n_all, n_notes = len(parts.blocking), len(parts.all_rows), len(parts.notes)
    scale = max(n_all, n_notes, 1)

    def share(k: int) -> str:
        return parts.assemble(n_block, n_all * k // scale, n_notes * k // scale)

    text = share(_most(lambda k: len(share(k)) <= limit, scale))
    if len(text) <= limit:
        return text
    n_block = _most(lambda n: len(parts.assemble(n, 0, 0)) <= limit, n_block)
    return parts.assemble(n_block, 0, 0)


def comment(report: Report, links: Links | None = None, limit: int = COMMENT_MAX - HEADROOM,
            artifact: str = "ptxdiff-report.json", approvals: Sequence[str] = ()) -> str:
    """The comment's Markdown: within `limit` characters. `approvals`: one line per kernel a
    `Ptx-Approved:` trailer of the pull request let through; they and the policy notes sit under
    the summary, never trimmed. A large pull request (its rows do not fit) gets the details table
    one line per kernel."""
    shown = safe.report(report)
    policy = [m.text for m in shown.messages if m.kind is NoteKind.POLICY]
    said = [safe.shown(a) for a in approvals]
    head = "\n".join([MARKER, summary(shown, len(approvals)), *pinned([*said, *policy])]) + f"\n\n{_compared(shown)}"
    folded, by = by_kernel(report, cap=2 * SPEC_CAP)
    shown_folded, _ = by_kernel(shown, cap=2 * SPEC_CAP)
    header, rows = _table_rows(folded, shown_folded, links, by)
    rest = [md_escape(" ".join(n.text.split())) for n in notes(shown_folded, run=False, lines=by, full=shown)
            if n.kind not in PINNED]
    parts = _Parts(head, header, rows, [i for i, r in enumerate(folded.rows) if r.blocking], how_to_approve(shown),
                   header, rows, "kernel" if by else "row", rest, artifact)
    full = parts.assemble(len(parts.blocking), len(rows), len(rest))
    if len(full) <= limit:
        return full
    all_header, all_rows = _kernel_rows(report, shown, links)
    return _fitted(dataclasses.replace(parts, all_header=all_header, all_rows=all_rows, what="kernel"), limit)


def comments_from_json(text: str) -> list[dict[str, Any]]:
    """A forge's list of comments as `gh api --paginate` or curl saves it: one JSON array, arrays
    one after another (one per page), or one object per line."""
    decoder = json.JSONDecoder()
    out: list[dict[str, Any]] = []
    pos = 0
    while True:
        pos = len(text) - len(text[pos:].lstrip())
        if pos >= len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out += [c for c in (value if isinstance(value, list) else [value]) if isinstance(c, dict)]


def _author(c: Mapping[str, Any]) -> str | None:
    """GitHub's `user.login`, GitLab's `author.username`."""
    who = c.get("user") or c.get("author") or {}
    return who.get("login") or who.get("username") if isinstance(who, dict) else None


def _normal(body: str) -> str:
    return re.sub(r"\r\n?", "\n", body).strip()


def sticky_action(comments: Sequence[Mapping[str, Any]], body: str, author: str | None = None) -> str:
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
