"""What the repository's own launch sites (`kernel[grid](...)`) say about a kernel's arguments.

Read from the AST of the host code, never run: a literal or module constant passed for a
constexpr is its value; `None` passed for a pointer makes it an optional argument; a float
literal, `float(x)`, a wrapper parameter whose default is a float make a scalar `fp32`;
`x.stride(0)`, `x.numel()`, `len(...)` make it an integer; `num_warps=`/`num_stages=` literals
are the launch options. Where launch sites disagree, every value they pass is kept.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field, replace

from ptxdiff.source.syntax import last_name, literal

INT_METHODS = {"stride", "size", "numel", "dim", "element_size", "nelement", "data_ptr"}
INT_CALLS = {"len", "int", "cdiv", "next_power_of_2", "min", "max", "prod"}
TENSOR_CASTS = {"float": "*fp32", "half": "*fp16", "bfloat16": "*bf16", "double": "*fp64"}  # x.float(): a tensor


# the host function around a launch site (`async def` too)
HostFunction = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Fact:
    """One argument at one launch site: a value (`kind` "value"), a runtime type ("type"), or
    None passed ("none")."""

    kind: str
    value: object
    site: str = field(default="", compare=False)   # "path:line" of the launch site that says it


def launch_calls(tree: ast.Module) -> list[tuple[str, ast.Call, HostFunction | None]]:
    """Every `x[grid](...)` call of a module, with the callee's last name and the function
    around it (None at module level)."""
    out: list[tuple[str, ast.Call, HostFunction | None]] = []

    def visit(node: ast.AST, fn: HostFunction | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child)
                continue
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Subscript):
                name = last_name(child.func.value)
                if name:
                    out.append((name, child, fn))
            visit(child, fn)
    visit(tree, None)
    return out


def _assignments(fn: HostFunction | None, name: str) -> list[ast.expr | None]:
    """Values assigned to a local of `fn` (None for a binding we cannot read: a loop, a tuple)."""
    return _all_assignments(fn).get(name, []) if fn is not None else []


@functools.lru_cache(maxsize=64)
def _all_assignments(fn: HostFunction) -> dict[str, list[ast.expr | None]]:
    found: dict[str, list[ast.expr | None]] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    found.setdefault(t.id, []).append(node.value)
                else:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            found.setdefault(n.id, []).append(None)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            found.setdefault(node.target.id, []).append(node.value if isinstance(node, ast.AnnAssign) else None)
        elif isinstance(node, (ast.For, ast.comprehension)):
            for n in ast.walk(node.target):
                if isinstance(n, ast.Name):
                    found.setdefault(n.id, []).append(None)
    return found


def _param_default(fn: HostFunction | None, name: str) -> tuple[bool, ast.expr | None]:
    if fn is None:
        return False, None
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults = dict(zip([p.arg for p in positional[len(positional) - len(a.defaults):]], a.defaults))
    defaults.update({p.arg: d for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    params = {p.arg for p in [*positional, *a.kwonlyargs]}
    return name in params, defaults.get(name)


def classify(expr: ast.expr, fn: HostFunction | None, consts: dict, depth: int = 0) -> Fact | None:
    """What one argument expression says, or None when it says nothing we can use."""
    if depth > 4:
        return None
    if isinstance(expr, ast.Constant) and expr.value is None:
        return Fact("none", None)
    ok, value = literal(expr, consts)
    if ok and isinstance(value, (bool, int, float, str)):
        return Fact("value", value)
    if isinstance(expr, ast.Name):
        assigned = _assignments(fn, expr.id)
        is_param, default = _param_default(fn, expr.id)
        if is_param:
            if assigned or default is None:
                return None
            fact = classify(default, None, consts, depth + 1)
            return Fact("type", _type_of(fact.value)) if fact and fact.kind == "value" else None
        if len(assigned) == 1 and assigned[0] is not None:
            return classify(assigned[0], fn, consts, depth + 1)
        return None
    if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id in ("tl", "torch") \
            and expr.attr[:1].isalpha():
        return Fact("value", f"tl.{expr.attr}") if expr.attr.startswith(("float", "bfloat", "int", "uint")) else None
    if isinstance(expr, ast.Call):
        f = expr.func
        name = last_name(f)
        if isinstance(f, ast.Name) and name == "float":
            return Fact("type", "fp32")
        if isinstance(f, ast.Attribute) and name in TENSOR_CASTS and not expr.args:
            return Fact("type", TENSOR_CASTS[name])
        if isinstance(f, ast.Attribute) and name in INT_METHODS or name in INT_CALLS:
            return Fact("type", "i32")
        return None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Attribute) and expr.value.attr == "shape":
        return Fact("type", "i32")
    if isinstance(expr, ast.IfExp):
        a, b = classify(expr.body, fn, consts, depth + 1), classify(expr.orelse, fn, consts, depth + 1)
        if a and b and a.kind == b.kind == "type" and a.value == b.value:
            return a
        if a and b and {a.kind, b.kind} <= {"type", "value"}:
            ta = a.value if a.kind == "type" else _type_of(a.value)
            tb = b.value if b.kind == "type" else _type_of(b.value)
            return Fact("type", ta) if ta == tb else None
        return None
    if isinstance(expr, ast.BinOp):
        a, b = classify(expr.left, fn, consts, depth + 1), classify(expr.right, fn, consts, depth + 1)
        types = {(x.value if x.kind == "type" else _type_of(x.value)) for x in (a, b) if x and x.kind != "none"}
        if types == {"i32"} and not isinstance(expr.op, ast.Div):
            return Fact("type", "i32")
        if "fp32" in types:
            return Fact("type", "fp32")
        return None
    return None


def _type_of(value: object) -> str | None:
    if isinstance(value, bool):
        return "u1"
    if isinstance(value, int):
        return "i32" if -2**31 <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


def arguments(call: ast.Call, params: list[str]) -> dict[str, ast.expr]:
    """Argument expressions by parameter name (`**kwargs` and `*args` are not followed)."""
    out: dict[str, ast.expr] = {}
    for p, a in zip(params, call.args):
        if isinstance(a, ast.Starred):
            break
        out[p] = a
    for k in call.keywords:
        if k.arg is not None:
            out[k.arg] = k.value
    return out


def facts(call: ast.Call, fn: HostFunction | None, params: list[str], consts: dict,
          site: str = "", constexprs: frozenset[str] = frozenset()) -> dict[str, Fact]:
    """What one launch site (at `site`, "path:line") says, by parameter (and `num_warps`/`num_stages`).
    A constexpr passed an expression that cannot be read is an `expr` fact: the site passes
    something (its default, if any, is not what runs), we cannot tell what."""
    out = {}
    for name, expr in arguments(call, params).items():
        fact = classify(expr, fn, consts)
        if fact is None and name in constexprs:
            fact = Fact("expr", None)
        if fact is not None:
            out[name] = replace(fact, site=site)
    return out


def merge(sites: list[dict[str, Fact]]) -> dict[str, tuple[Fact, ...]]:
    """Facts every launch site agrees on kind for; distinct values kept in order."""
    merged: dict[str, list[Fact]] = {}
    names = set().union(*(s.keys() for s in sites)) if sites else set()
    for name in sorted(names):
        if any(name not in s for s in sites):
            continue
        got = [s[name] for s in sites]
        kinds = {g.kind for g in got}
        if kinds == {"type"} and len({g.value for g in got}) > 1:
            continue
        distinct = list(dict.fromkeys(got))
        merged[name] = distinct
    return {k: tuple(v) for k, v in merged.items()}
