"""What makes a kernel's compile long, read from its body (specs/cost.py weighs each spec by it):
which constexpr sizes meet in one 2-D tile (the two largest sizes alone miss a square tile of one
size: `tl.arange(0, HC)[:, None]` against `tl.arange(0, HC)[None, :]`, HC x HC), the loops
triton unrolls (`tl.static_range`), whose bodies it compiles once per trip, and the sorts, whose
compare-and-swap stages it compiles once each (log2(n) x (log2(n) + 1) / 2 of them for n
elements). Pure AST work."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from ptxdiff.source.syntax import assigned_value, dotted_name, last_name, walk

Tiles = tuple[tuple[str, ...], ...]   # the constexpr sizes whose product is one block's elements
Bound = tuple[str, int]             # a constexpr's value (by name; "" for none) plus a constant
Loop = tuple[Bound, Bound, Bound]   # a `tl.static_range`'s start, stop and step
Unrolled = tuple[tuple[Loop, ...], ...]   # each unrolled loop, with the unrolled loops around it (outermost first)


def _arange_size(node: ast.expr, sizes: frozenset[str]) -> str | None:
    """`X` of `tl.arange(0, X)` where X is one of `sizes`, else None."""
    if isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["arange"] and len(node.args) == 2:
        end = node.args[1]
        if isinstance(end, ast.Name) and end.id in sizes:
            return end.id
    return None


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None and node.step is None


def _factors(node: ast.expr, sizes: frozenset[str]) -> list[str] | None:
    """The constexpr `sizes` a block dimension multiplies (`BK * BK`: BK twice), else None."""
    if isinstance(node, ast.Name) and node.id in sizes:
        return [node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _factors(node.left, sizes), _factors(node.right, sizes)
        return None if left is None or right is None else [*left, *right]
    return None


def kernel_tiles(fn: ast.FunctionDef, sizes: frozenset[str]) -> Tiles:
    """The constexpr `sizes` that shape one block of `fn`, each block's as one tuple: an arange made
    a column (`[:, None]`) against one made a row (`[None, :]`), and `tl.zeros/full(shape, ...)` of
    two dimensions or more, each a size or a product of sizes (fla's `tl.zeros([BK * BK, BV])`:
    BK x BK x BV elements, where the two largest sizes alone see BK x BV)."""
    rows: set[str] = set()
    cols: set[str] = set()
    pairs: set[tuple[str, ...]] = set()
    for node in walk(fn):
        if isinstance(node, ast.Subscript) and (name := _arange_size(node.value, sizes)) is not None \
                and isinstance(node.slice, ast.Tuple) and len(node.slice.elts) == 2:
            first, second = node.slice.elts
            if _is_all(first) and _is_none(second):
                rows.add(name)
            elif _is_none(first) and _is_all(second):
                cols.add(name)
        elif isinstance(node, ast.Call) and dotted_name(node.func)[-1:] in (["zeros"], ["full"]) and node.args:
            shape = node.args[0]
            dims = [_factors(e, sizes) for e in shape.elts] if isinstance(shape, (ast.Tuple, ast.List)) else []
            if len(dims) >= 2 and all(d is not None for d in dims):
                pairs.add(tuple(f for d in dims if d is not None for f in d))
    pairs |= {(r, c) for r in rows for c in cols}
    return tuple(sorted(pairs))


def _bound(node: ast.expr, sizes: frozenset[str]) -> Bound | None:
    """An integer literal, a constexpr, or a constexpr plus or minus a literal (`TMAX - 1`)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return "", node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and (inner := _bound(node.operand, sizes)) \
            and not inner[0]:
        return "", -inner[1]
    if isinstance(node, ast.Name) and node.id in sizes:
        return node.id, 0
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)) and isinstance(node.left, ast.Name) \
            and node.left.id in sizes and isinstance(node.right, ast.Constant) and type(node.right.value) is int:
        return node.left.id, node.right.value if isinstance(node.op, ast.Add) else -node.right.value
    return None


def _static_loop(stmt: ast.stmt, sizes: frozenset[str]) -> Loop | None:
    """The bounds of `for _ in tl.static_range(...)` where each one can be read, else None."""
    if not isinstance(stmt, ast.For) or not isinstance(stmt.iter, ast.Call) or \
            dotted_name(stmt.iter.func)[-1:] != ["static_range"] or stmt.iter.keywords:
        return None
    bounds = [_bound(a, sizes) for a in stmt.iter.args]
    if not 1 <= len(bounds) <= 3 or any(b is None for b in bounds):
        return None
    got = [b for b in bounds if b is not None]
    start, stop, step = (("", 0), got[0], ("", 1)) if len(got) == 1 else (got[0], got[1], ("", 1)) \
        if len(got) == 2 else (got[0], got[1], got[2])
    return start, stop, step


def unrolled_loops(fn: ast.FunctionDef, sizes: frozenset[str]) -> Unrolled:
    """Each `tl.static_range` loop of `fn` whose bounds are literals or constexprs, with the
    unrolled loops it is nested in: its body is compiled once per trip of each."""
    out: list[tuple[Loop, ...]] = []

    def visit(body: list[ast.stmt], chain: tuple[Loop, ...]) -> None:
        for stmt in body:
            loop = _static_loop(stmt, sizes)
            inner = chain if loop is None else (*chain, loop)
            if loop is not None:
                out.append(inner)
            for block in ("body", "orelse", "finalbody"):
                visit(getattr(stmt, block, None) or [], inner if block == "body" else chain)
            for handler in getattr(stmt, "handlers", None) or []:
                visit(handler.body, chain)
    visit(fn.body, ())
    return tuple(out)


SORTS = frozenset({"sort", "topk", "argsort"})   # triton's bitonic sorts (tl.sort, tl.topk) and what repositories name theirs


def _log_bounded(fn: ast.FunctionDef) -> frozenset[str]:
    """Locals assigned a log2 (`n_dims: tl.constexpr = _log2(x.shape[0])`): a loop up to one is a
    hand-written bitonic sort's stages."""
    out: set[str] = set()
    for node in walk(fn):
        target, value = assigned_value(node)
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and "log2" in last_name(value.func):
            out.add(target.id)
    return frozenset(out)


def sorts(fns: Iterable[ast.FunctionDef]) -> int:
    """The sorts `fns` (a kernel and the jit helpers it reaches) compile: calls of a sort
    (`tl.sort(x, 0)`, `x.topk(k)`, a repository's `argsort`) and `tl.static_range` loops up to a
    log2 of a shape (a bitonic merge written out: native-sparse-attention's), each a log-squared
    number of passes over its block that the tile alone does not show."""
    count = 0
    for fn in fns:
        logs = _log_bounded(fn)
        for node in walk(fn):
            if isinstance(node, ast.Call):
                count += last_name(node.func) in SORTS
            elif isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
                    and last_name(node.iter.func) == "static_range":
                count += any(isinstance(n, ast.Name) and n.id in logs for a in node.iter.args for n in ast.walk(a))
    return count
