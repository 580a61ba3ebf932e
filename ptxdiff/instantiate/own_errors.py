"""Compile errors that are the kernel's own at its revision, whatever ptxdiff guessed: triton raises
them on any machine, so the row says so (and the census counts the revision as broken, like a file
that does not parse).

- A module global a kernel reads that is no constexpr (`_TO_TL = {Kind.F32: tl.float32}`, an enum
  member, a plain function): triton 3.0 and later refuse it ("Cannot access global variable _TO_TL
  from within @jit'ed function") when the kernel reaches it. The builder leaves out of a kernel's
  globals what has no meaning inside a kernel, so such a read used to fail as `_TO_TL is not
  defined`, which is not so: a stand-in takes its place (`held`), which triton refuses as it refuses
  the value. A side read as triton 2.x read kernels (`TRITON_ALLOW_NON_CONSTEXPR_GLOBALS`) gets no
  stand-in: there a global is its value, and a value the builder cannot make stays out.
- An `if` on a runtime value whose two branches leave a name two types that no guess decides
  (scattermoe's `start_idx = 0` beside `start_idx = tl.load(p).to(tl.int64)`: "mismatched type for
  start_idx between then block (int32) and else block (int64)").
"""

from __future__ import annotations

import ast
import re

from ptxdiff.evaluator.scope import Function
from ptxdiff.evaluator.values import EnumMember
from ptxdiff.instantiate import namespace
from ptxdiff.source.modules import ModuleIndex
from ptxdiff.source.syntax import dotted_name

OWN = "the kernel's own error, which triton raises at this revision too"
OWN_GLOBAL = f"a module global that is no constexpr, which triton 3.x does not let a kernel read: {OWN}"
_REFUSED_GLOBAL = re.compile(r"NameError: Cannot access global variable (\w+)")
_MISMATCHED = re.compile(r"([^\s:]+\.py):(\d+):\d+: AssertionError: [Mm]ismatched type for (\w+) between then block "
                         r"\(([\w<>\[\], ]+)\) and else block \(([\w<>\[\], ]+)\)")
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


def explain(error: str, index: ModuleIndex) -> str | None:
    """The error with what makes it the kernel's own; None for any other error."""
    if found := _REFUSED_GLOBAL.search(error):
        return f"{error} ({found.group(1)}: {OWN_GLOBAL})"
    if (found := _MISMATCHED.search(error)) and _fixed_types(index, found.group(1), int(found.group(2)),
                                                             found.group(3)) == (found.group(4), found.group(5)):
        return f"{error} ({found.group(3)}: its branches give it {found.group(4)} and {found.group(5)} whatever " \
               f"the guesses: {OWN})"
    return None


def _fixed_types(index: ModuleIndex, path: str, line: int, name: str) -> tuple[str, str] | None:
    """The types the `if` at `path:line` leaves `name` with, (then, else), where both come from the
    text alone (an int literal, `.to(tl.X)`, `tl.cast(v, tl.X)`); None where a guess may decide one."""
    tree = index.parse(path).tree if path in index.snapshot else None
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.If) and n.lineno == line), None) if tree else None
    if node is None:
        return None
    then, other = (_last_type(block, name) for block in (node.body, node.orelse))
    return (then, other) if then and other else None


def _last_type(block: list[ast.stmt], name: str) -> str | None:
    """The type of `name` at the end of `block`: its last assignment there, a top-level one."""
    if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
           for stmt in block if not isinstance(stmt, ast.Assign) for n in ast.walk(stmt)):
        return None   # assigned inside a loop or a nested block: its type is not the text's alone
    assigned = [s.value for s in block if isinstance(s, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == name for t in s.targets)]
    return _type_of(assigned[-1]) if assigned else None


def _type_of(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return "int32" if -2**31 <= expr.value < 2**31 else "int64"
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        target = expr.args[0] if expr.func.attr == "to" and len(expr.args) == 1 \
            else expr.args[1] if dotted_name(expr.func)[-1:] == ["cast"] and len(expr.args) == 2 else None
        parts = dotted_name(target) if target is not None else []
        if len(parts) >= 2 and parts[-2] in ("tl", "language"):
            import triton.language as tl  # worker side: the builder's triton, whose messages print its types

            dtype = getattr(tl, parts[-1], None)
            return str(dtype) if isinstance(dtype, tl.dtype) else None
    return None
