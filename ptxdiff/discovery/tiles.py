"""Which constexpr sizes meet in one 2-D tile of a kernel, read from its body: the compile cost
rule (specs/cost.py) weighs a spec by its largest tile, and the two largest sizes alone miss a
square tile of one size (`tl.arange(0, HC)[:, None]` against `tl.arange(0, HC)[None, :]`: HC x HC).
Pure AST work."""

from __future__ import annotations

import ast

from ptxdiff.source.syntax import dotted_name, walk

Tiles = tuple[tuple[str, str], ...]


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


def kernel_tiles(fn: ast.FunctionDef, sizes: frozenset[str]) -> Tiles:
    """(rows, cols) pairs of the constexpr `sizes` that shape a 2-D block of `fn`: an arange made a
    column (`[:, None]`) against one made a row (`[None, :]`), and `tl.zeros/full((A, B), ...)`."""
    rows: set[str] = set()
    cols: set[str] = set()
    pairs: set[tuple[str, str]] = set()
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
            if isinstance(shape, (ast.Tuple, ast.List)) and len(shape.elts) == 2 and \
                    all(isinstance(e, ast.Name) and e.id in sizes for e in shape.elts):
                a, b = shape.elts
                assert isinstance(a, ast.Name) and isinstance(b, ast.Name)
                pairs.add((a.id, b.id))
    pairs |= {(r, c) for r in rows for c in cols}
    return tuple(sorted(pairs))
