"""A module global a kernel reads that is no constexpr (`_TO_TL = {Kind.F32: tl.float32}`, an enum
member, a plain function): triton 3.0 and later refuse it with their own NameError ("Cannot access
global variable _TO_TL from within @jit'ed function"), when the kernel reaches it, on any machine.

The builder leaves out of a kernel's globals what has no meaning inside a kernel, so such a read
used to fail as `_TO_TL is not defined`, which is not so. A stand-in of the value takes its place
(`held`), which triton refuses as it refuses the value, and that error of triton's says it is the
kernel's own (`explain`), as a name the module binds nowhere does. A side read as triton 2.x read
kernels (`TRITON_ALLOW_NON_CONSTEXPR_GLOBALS`) gets no stand-in: there a global is its value, and a
value the builder cannot make stays out.
"""

from __future__ import annotations

import re

from ptxdiff.evaluator.scope import Function
from ptxdiff.evaluator.values import EnumMember
from ptxdiff.instantiate import namespace

OWN_GLOBAL = ("a module global that is no constexpr, which triton 3.x does not let a kernel read: the kernel's "
              "own error, which triton raises at this revision too")
_REFUSED_GLOBAL = re.compile(r"NameError: Cannot access global variable (\w+)")


class NotAConstexpr:
    """What the kernel's module binds to a name that is no constexpr: triton refuses to read it, as
    it refuses the value (a dict, an enum's member, a plain function: none of triton's types)."""

    def __init__(self, name: str, what: str):
        self.name, self.what = name, what

    def __repr__(self) -> str:
        return f"<{self.what} {self.name} of the repository>"


def held(name: str, value: object) -> NotAConstexpr | None:
    """The stand-in for a global the builder cannot make (converted to None) that triton 3.x would
    refuse; None for what triton would read otherwise (another package's module, a name of triton's)."""
    if namespace.reading_as_triton2():
        return None
    if isinstance(value, (dict, set, frozenset)):
        return NotAConstexpr(name, type(value).__name__)
    if isinstance(value, EnumMember):
        return NotAConstexpr(name, f"member of the enum {value.cls_name}")
    if isinstance(value, Function) and not value.decorators:
        return NotAConstexpr(name, "plain function")
    return None


def explain(error: str) -> str | None:
    """Triton's refusal of a module global, with what it means; None for any other error."""
    found = _REFUSED_GLOBAL.search(error)
    return f"{error} ({found.group(1)}: {OWN_GLOBAL})" if found else None
