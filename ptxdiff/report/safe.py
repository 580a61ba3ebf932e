"""What the repository names, made safe to print: file names, kernel ids, specs, commit
subjects and error text reach a reviewer's terminal, where an escape sequence, a carriage return
or a newline inside a name could rewrite what is shown (hide a row, fake a verdict).

Every text renderer prints a copy of the rows with each control character written as `\\xNN`
(and each byte that is not UTF-8, as `printable` writes it); JSON needs none of this, its own
escaping keeps names exact.
"""

from __future__ import annotations

import dataclasses
import re

from ptxdiff.compare.results import Report, Row
from ptxdiff.specs.detail import SpecDetail

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")   # text of several lines keeps \t and \n
# bidi controls reorder what is shown (Trojan Source), zero-width characters hide a difference
_INVISIBLE = re.compile("[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def shown(text: str, lines: bool = False) -> str:
    """`text` with every control character (but tabs and newlines where `lines`) as `\\xNN`, and
    every bidi control or zero-width character as `\\uNNNN`."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    text = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return (_CONTROL_BUT_LINES if lines else _CONTROL).sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _deep(value: object) -> object:
    if isinstance(value, str):
        return shown(value)
    if isinstance(value, dict):
        return {shown(k) if isinstance(k, str) else k: _deep(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_deep(v) for v in value)
    return value


def _maybe(text: str | None, lines: bool = False) -> str | None:
    return None if text is None else shown(text, lines)


def row(r: Row) -> Row:
    """A row as people may see it."""
    # every text of the spec's JSON made safe, read back as a record (its keys name guesses)
    detail = SpecDetail.from_json(_deep(r.spec_detail.as_json())) if r.spec_detail is not None else None
    return dataclasses.replace(
        r, kernel=shown(r.kernel), spec=shown(r.spec), old_kernel=_maybe(r.old_kernel),
        error=_maybe(r.error, lines=True), log=_maybe(r.log, lines=True), why=_maybe(r.why),
        launch=_maybe(r.launch), paths=tuple(shown(p) for p in r.paths),
        spec_detail=detail)


def report(rep: Report) -> Report:
    """A report as people may see it."""
    return dataclasses.replace(rep, rows=[row(r) for r in rep.rows],
                               messages=[dataclasses.replace(m, text=shown(m.text, lines=True)) for m in rep.messages])
