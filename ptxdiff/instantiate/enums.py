"""A repository's enum as a kernel global: a real enum of the same members and values.

Triton compares a constexpr with an enum's member, or with its `.value`, as Python does: a member
of an enum with a str or int base (`class Act(str, enum.Enum)`, IntEnum, StrEnum) equals its
value, a plain Enum's does not. The enum is made from the values the evaluator read; nothing of
the repository runs.
"""

from __future__ import annotations

import enum
from typing import Any

from ptxdiff.evaluator.values import Class, EnumMember


def real_enum(value: Class) -> Any:
    """The enum `value` is, made of its members' values, str or int based where it is; None where
    it is no enum or a member's value is not a plain str, int, float or bool."""
    members = [(m.name, m.value) for m in value.namespace.values() if isinstance(m, EnumMember)]
    if not value.is_enum or not members or not all(type(v) in (str, int, float, bool) for _, v in members):
        return None
    kinds = {type(v) for _, v in members}
    mixin = kinds.pop() if value.mixed and len(kinds) == 1 and kinds <= {str, int} else None
    return enum.Enum(value.name, members, type=mixin) if mixin else enum.Enum(value.name, members)
