"""`StrEnum`, the base of every vocabulary (verdicts, spec sources, worker outcomes, ...): a
member is its value wherever text is made (`str`, f-strings, `json.dumps`), so a typo is an
error and the output is the same text. The standard library's from Python 3.11; on 3.10
(`requires-python`) the same behaviour, made here."""

from __future__ import annotations

import enum
import sys

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:   # pragma: no cover - the CI runs 3.11
    class StrEnum(str, enum.Enum):
        """A str whose `str()` and `format()` are its value, as 3.11's `enum.StrEnum`."""

        __str__ = str.__str__
        __format__ = str.__format__

__all__ = ["StrEnum"]
