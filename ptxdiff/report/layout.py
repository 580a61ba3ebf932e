"""Fitting text to a terminal: a table in its full or its compact layout, and lines wrapped at a
width, so nothing a person reads runs off the right edge.

A renderer declares its columns once (`TableColumn`: a header, how to get the cell, and its
role); `grid` picks the layout from that declaration, so a column added there is shown by both
layouts and by Markdown without more code:

- full: every column, as it is when it fits (or with no width: files, notes, Markdown, --wide);
  else with its long cells (kernel ids, specs) wrapped onto more lines;
- compact, when the full one cannot fit: the `key` columns, then one cell that folds the `fold`
  columns that say something for that row (the deltas that changed, an output or timing result).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from tabulate import tabulate

from ptxdiff.report.style import paint

T = TypeVar("T")

KEY, FOLD, FULL = "key", "fold", "full"
SEP = 2          # tabulate's "simple" format: two spaces between columns
PAD = 2          # ... and every column at least two wider than its header
COMPACT_MIN = 40  # below this many columns nothing fits; lay out for this many and let it wrap


@dataclass(frozen=True)
class Layout:
    """Where text goes: `width` columns (None: no limit), coloured or not, --wide or not."""

    width: int | None = None
    colour: bool = False
    wide: bool = False
    specs: bool = False   # a row per spec (--specs), not a line per kernel (report/kernels.py)


PLAIN = Layout()   # no width, no colour: a file, a git note


@dataclass(frozen=True)
class TableColumn(Generic[T]):
    """One column of a table. `role`: KEY (both layouts), FOLD (compact: folded into one cell,
    `label value`, when `says`), FULL (the full layout only). `wrap`: the narrowest the full
    layout may wrap it to (0: never wrapped). `style`: an SGR code for the cell when colouring."""

    header: str
    value: Callable[[T], str]
    role: str = KEY
    wrap: int = 0
    label: str | None = None                           # how a folded cell names itself (default: header)
    says: Callable[[T], bool] | None = None            # fold: worth showing for this item (default: not "-")
    style: Callable[[T], str | None] | None = None

    def folded(self, item: T, text: str) -> str | None:
        said = self.says(item) if self.says is not None else text not in ("", "-")
        return f"{self.label or self.header} {text}" if said else None


CELL_BREAKS = re.compile(r"(?<=[ /,])|(?<=::)")   # a kernel id breaks between folders, file and function
WORD_BREAKS = re.compile(r"(?<= )")               # a sentence between words only


def wrap_text(text: str, width: int, breaks: re.Pattern[str] = CELL_BREAKS) -> str:
    """`text` in lines of at most `width` characters, broken where `breaks` allows, else inside
    a word that is longer than a line."""
    width = max(1, width)
    out: list[str] = []
    for para in text.split("\n"):
        line = ""
        for token in (t for t in breaks.split(para) if t):
            if len((line + token).rstrip()) <= width:
                line += token
                continue
            if line.strip():
                out.append(line.rstrip())
            token = token.lstrip(" ")
            while len(token.rstrip()) > width:
                out.append(token[:width])
                token = token[width:]
            line = token
        out.append(line.rstrip())
    return "\n".join(out)


def hanging(text: str, width: int | None, indent: str = "  ") -> str:
    """A note wrapped at `width`, its later lines indented (as it is, without a width)."""
    if width is None or len(text) <= width:
        return text
    first, _, rest = wrap_text(text, width, WORD_BREAKS).partition("\n")
    if not rest:
        return first
    rest = wrap_text(rest.replace("\n", " "), width - len(indent), WORD_BREAKS)
    return "\n".join([first, *(indent + ln for ln in rest.split("\n"))])


def pack(tokens: Sequence[str], width: int, indent: str, sep: str = " ") -> list[str]:
    """Tokens joined by `sep` into lines of at most `width` (a token longer than a line gets one
    of its own); every line after the first starts with `indent`."""
    lines: list[str] = []
    line = ""
    for token in tokens:
        if not line:
            line = (indent if lines else "") + token
        elif len(line) + len(sep) + len(token) <= width:
            line += sep + token
        else:
            lines.append(line)
            line = indent + token
    if line:
        lines.append(line)
    return lines


def longest_word(text: str, breaks: re.Pattern[str] = CELL_BREAKS) -> int:
    """The longest piece of `text` that `wrap_text` keeps whole: a column narrower than this
    would break inside a word (`liger_cross_entropy_k` / `ernel`)."""
    return max((len(t.strip()) for line in text.split("\n") for t in breaks.split(line)), default=0)


def _widest_line(text: str) -> int:
    return max((len(ln) for ln in text.split("\n")), default=0)


def _natural(headers: list[str], cells: list[list[str]]) -> list[int]:
    return [max([len(h) + PAD, *(_widest_line(row[i]) for row in cells)]) for i, h in enumerate(headers)]


def _floors(headers: list[str], cells: list[list[str]], wraps: list[int]) -> list[int]:
    """The narrowest each column may be: its `wrap` (0: its natural width), never below its header
    or the longest word of a cell."""
    widths = _natural(headers, cells)
    return [max(f, len(h) + PAD, *(longest_word(row[i]) for row in cells)) if f else w
            for i, (f, h, w) in enumerate(zip(wraps, headers, widths))]


def _fit(headers: list[str], cells: list[list[str]], wraps: list[int], width: int) -> list[int] | None:
    """Column widths within `width`, narrowing a character at a time the wrappable column with the
    most room above its narrowest (`_floors`); None when it cannot fit."""
    widths = _natural(headers, cells)
    floors = _floors(headers, cells, wraps)
    excess = sum(widths) + SEP * (len(widths) - 1) - width
    while excess > 0:
        room = [i for i, w in enumerate(widths) if w > floors[i]]
        if not room:
            return None
        i = max(room, key=lambda k: widths[k] - floors[k])
        widths[i] -= 1
        excess -= 1
    return widths


WORD_JOINER = "\u2060"   # invisible: `@\u2060name` reads `@name` and mentions nobody
INERT = re.compile(r"@|#(?=\d)|(?i:https?|ftp)(?=:)|(?i:www)(?=\.)")   # a mention, an issue reference, an autolink


def md_escape(text: str) -> str:
    """A cell or a line as Markdown text: characters that would start markup, HTML or a table
    cell are escaped (CommonMark lets any ASCII punctuation be escaped); an underscore inside a
    word cannot, so `gelu_kernel` stays as it is. A word joiner after `@`, `#` before a digit and
    a URL's scheme or `www` keeps repository text from mentioning anyone or linking anywhere."""
    text = re.sub(r"([\\`*\[\]<>|~])", r"\\\1", text)
    text = re.sub(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])", r"\\_", text)
    text = INERT.sub(lambda m: m.group() + WORD_JOINER, text)
    return "\\" + text if text.startswith(("#", "-", "+", "=")) else text


def grid(columns: Sequence[TableColumn[T]], items: Sequence[T], layout: Layout, fmt: str = "simple",
         changed: str = "changed", folds: int = 4) -> str:
    """The items as a table: the full layout when it fits `layout.width` (wrapping what may wrap),
    else the compact one. `fmt="github"`: a Markdown table, always full, cells escaped."""
    full = list(columns)
    texts = [[c.value(item) for c in full] for item in items]
    if fmt == "github":
        table: str = tabulate([[md_escape(t) for t in row] for row in texts], headers=[md_escape(c.header) for c in full],
                              tablefmt=fmt, disable_numparse=True)
        return table
    width = None if layout.wide else layout.width
    if width is None:
        return _render(full, items, texts, None, layout.colour)
    widths = _fit([c.header for c in full], texts, [c.wrap for c in full], width)
    if widths is not None:
        return _render(full, items, texts, widths, layout.colour)
    keys = [c for c in columns if c.role == KEY]
    fold_cols = [c for c in columns if c.role == FOLD]
    compact_texts = []
    for item, row in zip(items, texts):
        by_col = dict(zip((id(c) for c in full), row))
        said = [s for c in fold_cols if (s := c.folded(item, by_col[id(c)])) is not None]
        more = f", {len(said) - folds} more (--wide)" if len(said) > folds else ""
        compact_texts.append([by_col[id(c)] for c in keys] + [", ".join(said[:folds]) + more or "-"])
    folded = TableColumn[T](changed, lambda _: "", wrap=12)
    compact = [*keys, folded] if fold_cols else keys
    if not fold_cols:
        compact_texts = [row[:-1] for row in compact_texts]
    width = max(width, COMPACT_MIN)
    headers, wraps = [c.header for c in compact], [c.wrap for c in compact]
    # too narrow: wrap down to the longest word; narrower still, each column at its narrowest (the
    # terminal wraps the line, a word stays whole), a word longer than the terminal alone broken
    widths = _fit(headers, compact_texts, wraps, width) or _fit(headers, compact_texts, [1 if w else 0 for w in wraps], width) \
        or [min(f, width) for f in _floors(headers, compact_texts, wraps)]
    return _render(compact, items, compact_texts, widths, layout.colour)


def _render(columns: Sequence[TableColumn[T]], items: Sequence[T], texts: list[list[str]], widths: list[int] | None,
            colour: bool) -> str:
    rows = []
    for item, row in zip(items, texts):
        cells = []
        for i, (c, text) in enumerate(zip(columns, row)):
            if widths is not None and c.wrap and _widest_line(text) > widths[i]:
                text = wrap_text(text, widths[i])
            sgr = c.style(item) if c.style is not None and colour else None
            cells.append("\n".join(paint(ln, sgr, colour) for ln in text.split("\n")) if sgr else text)
        rows.append(cells)
    table: str = tabulate(rows, headers=[c.header for c in columns], tablefmt="simple", disable_numparse=True)
    return table
