"""Guesses from what a kernel's own code says of the launch it needs (issues 41 and 37), apart
from a parameter's use: whether the kernel converts values (so the launch's element types matter)
and the runtime ints its heuristics test (so they are evaluated on each side of each test). Pure
AST work, like hints.py, whose records and boundaries it uses."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ptxdiff.discovery.hints import LARGEST_SIZE, ORDERED, Hint, boundary
from ptxdiff.source.syntax import dotted_name, is_constexpr, last_name, literal, walk

# element types a conversion to which makes the launch's element types matter (issue 41)
_FLOAT_TYPES = {"float16", "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15"}


def _float_type(node: ast.expr) -> bool:
    """`tl.float32`, `X.dtype.element_ty`, `x.dtype`: a float type, or the element type of a value."""
    chain = dotted_name(node)
    return bool(chain) and (chain[-1] in _FLOAT_TYPES or chain[-1] in ("element_ty", "dtype"))


def converts_values(fn: ast.FunctionDef, helpers: dict[str, ast.FunctionDef] | None = None) -> bool:
    """Whether the kernel (or a jit helper it calls) converts values to a float type
    (`x.to(tl.float32)`, `tl.cast(x, tl.bfloat16)`, `.to(out.dtype.element_ty)`) or reads a
    pointer's element type: under the guessed fp32 pointers (and fp32 scalars) such a conversion
    is a no-op, so adding or dropping one reads `identical` unless 16-bit pointers and fp64
    scalars (torch.compile's Python floats) are compiled too (specs/plan.py)."""
    called = {n.func.id for n in walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    for f in [fn, *(h for name, h in (helpers or {}).items() if name in called and h is not fn)]:
        for node in walk(f):
            if isinstance(node, ast.Attribute) and node.attr == "element_ty":
                return True
            if not isinstance(node, ast.Call) or any(k.arg == "bitcast" for k in node.keywords):
                continue   # a bitcast keeps the bits: no conversion
            if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
                target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "dtype"), None)
            elif dotted_name(node.func)[-1:] == ["cast"]:
                target = node.args[1] if len(node.args) > 1 else next(
                    (k.value for k in node.keywords if k.arg == "dtype"), None)
            else:
                continue
            if target is not None and _float_type(target):
                return True
    return False


HEURISTIC_INT = 4096   # the representative int a heuristic reads (specs/resolve.py): divisible by every block
MAX_HEURISTIC_SIZES = 4


def heuristic_sizes(fn: ast.FunctionDef, consts: Mapping[str, object]) -> dict[str, Hint]:
    """Runtime integer params that a `@triton.heuristics` function tests, with sizes on each side
    of every boundary it tests (issue 41): `args["n"] % args["BLOCK"] == 0` reads 4096 and 4097
    (divisible and not), `args["n"] > 2048` reads 2048 and 4096, `args["n"] <= args["BLOCK"]` a
    size below any block too. The representative 4096 alone would compile one side of each test,
    and a heuristic changed to a constant would read `identical`."""
    runtime = {a.arg for a in fn.args.args if not is_constexpr(a.annotation)}
    found: dict[str, list[int]] = {}
    for dec in fn.decorator_list:
        if not (isinstance(dec, ast.Call) and last_name(dec.func) == "heuristics" and dec.args
                and isinstance(dec.args[0], ast.Dict)):
            continue
        for fun in dec.args[0].values:
            if isinstance(fun, ast.Lambda) and fun.args.args:
                _heuristic_tests(fun.body, fun.args.args[0].arg, runtime, consts, found)
    return {name: Hint(tuple(values[:MAX_HEURISTIC_SIZES]), "read by a heuristic: a size on each side of what it tests")
            for name, values in found.items() if len(values) > 1}


def _read_arg(node: ast.expr, args: str, runtime: set[str]) -> str | None:
    """The runtime param `args["n"]` reads, or None."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == args \
            and isinstance(node.slice, ast.Constant) and node.slice.value in runtime:
        return str(node.slice.value)
    return None


def _heuristic_tests(body: ast.expr, args: str, runtime: set[str], consts: Mapping[str, object],
                     found: dict[str, list[int]]) -> None:
    def add(name: str, *values: int) -> None:
        have = found.setdefault(name, [HEURISTIC_INT])
        have += [v for v in values if v not in have and 1 <= v <= LARGEST_SIZE]
    for node in walk(body):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.FloorDiv)):
            for side in walk(node.left):
                if isinstance(side, ast.expr) and (name := _read_arg(side, args, runtime)) is not None:
                    add(name, HEURISTIC_INT + 1)   # not a multiple of any block: the remainder is nonzero
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ORDERED):
            left, right = node.left, node.comparators[0]
            for a, b, flipped in ((left, right, False), (right, left, True)):
                if (name := _read_arg(a, args, runtime)) is None:
                    continue
                ok, v = literal(b, consts)
                if ok and type(v) is int:
                    add(name, *(x for x in boundary(node.ops[0], v, flipped) if isinstance(x, int)))
                else:   # against another value (a block size): a size below every guessed block, too
                    add(name, 16)


def converted_scalars(fn: ast.FunctionDef) -> frozenset[str]:
    """Runtime params the kernel converts as they are (`eps.to(tl.float32)`, `tl.cast(scale,
    tl.float32)`, `tl.full([1], eps, tl.float32)`, directly or through a local bound to one): a
    float scalar pinned to fp32 against a launcher that passes fp64 (torch.compile), the fix whose
    every row reads `identical` under fp32 scalars alone (specs/plan.py compiles fp64 ones too)."""
    params = {a.arg for a in fn.args.args if not is_constexpr(a.annotation)}
    alias = {node.targets[0].id: node.value.id for node in walk(fn)
             if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
             and isinstance(node.value, ast.Name) and node.value.id in params}

    def param(node: ast.expr | None) -> str | None:
        name = node.id if isinstance(node, ast.Name) else None
        return name if name in params else alias.get(name or "")
    found: set[str] = set()
    for node in walk(fn):
        if not isinstance(node, ast.Call):
            continue
        callee = dotted_name(node.func)[-1:]
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            p = param(node.func.value)
        elif callee == ["cast"] and node.args:
            p = param(node.args[0])
        elif callee == ["full"] and len(node.args) > 1:
            p = param(node.args[1])
        else:
            continue
        if p is not None:
            found.add(p)
    return frozenset(found)
