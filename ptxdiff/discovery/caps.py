"""The range a size computed at a launch site lies in, read from the host code's own caps (issue 37's
guesses from evidence): `BK = min(K, 16)` is at most 16 whatever K is, `BK = max(BK, 16)` after it
makes it 16, and `triton.next_power_of_2(min(n, 4096))` is at most 4096. A guess outside that range
compiles a kernel its launcher never launches (fla's `fused_chunk_based_fwd_kernel`, capped at
BK=16, guessed at 64: a 300 s compile). Pure AST work, read in statement order: a local is what its
last assignment before the use made it (each `if` branch's assignment after that one counts too),
so `BK = max(BK, 16)` reads the BK before it."""

from __future__ import annotations

import ast
import functools
from collections.abc import Mapping

from ptxdiff.source.syntax import last_name, walk

Range = tuple[int | None, int | None]   # lowest and highest value (None: unbounded on that side)
UNBOUNDED: Range = (None, None)
_DEPTH = 12   # names followed through assignments, at most


def hull(ranges: list[Range]) -> Range:
    """The smallest range holding every one of `ranges`."""
    lows, highs = [r[0] for r in ranges], [r[1] for r in ranges]
    lo = None if not lows or any(v is None for v in lows) else min(v for v in lows if v is not None)
    hi = None if not highs or any(v is None for v in highs) else max(v for v in highs if v is not None)
    return lo, hi


def _minimum(ranges: list[Range]) -> Range:
    """`min(a, b, ...)`: below each argument's highest, at least the least lowest."""
    highs = [r[1] for r in ranges if r[1] is not None]
    lows = [r[0] for r in ranges]
    return (None if any(v is None for v in lows) else min(v for v in lows if v is not None),
            min(highs) if highs else None)


def _maximum(ranges: list[Range]) -> Range:
    """`max(a, b, ...)`: above each argument's lowest, at most the greatest highest."""
    lows = [r[0] for r in ranges if r[0] is not None]
    highs = [r[1] for r in ranges]
    return (max(lows) if lows else None,
            None if any(v is None for v in highs) else max(v for v in highs if v is not None))


def _power_of_2(n: int | None) -> int | None:
    """triton.next_power_of_2 of a bound (monotone; below 1 is no bound)."""
    return None if n is None or n < 1 else 1 << (n - 1).bit_length()


def _scaled(r: Range, op: ast.operator, c: int, constant_left: bool) -> Range:
    """`x * c`, `x // c`, `x + c`, `x - c`, `c - x` for an int literal c (a positive one where it scales)."""
    lo, hi = r
    if isinstance(op, ast.Add):
        return (None if lo is None else lo + c, None if hi is None else hi + c)
    if isinstance(op, ast.Sub):
        return ((None if hi is None else c - hi, None if lo is None else c - lo) if constant_left else
                (None if lo is None else lo - c, None if hi is None else hi - c))
    if isinstance(op, ast.Mult) and c > 0:
        return (None if lo is None else lo * c, None if hi is None else hi * c)
    if isinstance(op, ast.FloorDiv) and c > 0 and not constant_left:
        return (None if lo is None else lo // c, None if hi is None else hi // c)
    return UNBOUNDED


Assigned = dict[str, list[tuple[int, bool, ast.expr | None]]]   # a local: (line, run by every call, value or None)


def _bind(assigned: Assigned, target: ast.expr, value: ast.expr | None, line: int, top: bool) -> None:
    if isinstance(target, ast.Name):
        assigned.setdefault(target.id, []).append((line, top, value))
    elif isinstance(target, (ast.Tuple, ast.List)):
        pairs = isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) and \
            not any(isinstance(e, ast.Starred) for e in [*target.elts, *value.elts])
        for i, element in enumerate(target.elts):   # `BK, BV = min(K, 16), min(V, 32)`: each its own
            if isinstance(element, (ast.Name, ast.Tuple, ast.List)):
                _bind(assigned, element, value.elts[i] if pairs and isinstance(value, (ast.Tuple, ast.List)) else None,
                      line, top)


@functools.lru_cache(maxsize=64)
def _bindings(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Assigned, frozenset[str]]:
    """Each assignment of a local of `fn`, and its parameters: read once per host function, however
    many arguments of its launches are read."""
    a = fn.args
    params = frozenset(p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs])
    top: set[int] = set()   # statements every call runs: the body's, and those under a `with` there
    todo = list(fn.body)
    while todo:
        stmt = todo.pop()
        top.add(id(stmt))
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            todo += stmt.body
    assigned: Assigned = {}
    for node in walk(fn):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                _bind(assigned, target, node.value, node.lineno, id(node) in top)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            _bind(assigned, node.target, node.value, node.lineno, id(node) in top)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            _bind(assigned, node.target, None, node.lineno, id(node) in top)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr, ast.With, ast.AsyncWith)):
            # a loop's, a walrus's or a `with ... as`'s names: values this reading does not follow
            targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor, ast.NamedExpr)) else \
                [i.optional_vars for i in node.items if i.optional_vars is not None]
            for name in (n for t in targets for n in walk(t)):
                if isinstance(name, ast.Name):
                    _bind(assigned, name, None, node.lineno, False)
    return assigned, params


class _Reader:
    """Ranges of expressions of one host function (or of module code, `fn` None)."""

    def __init__(self, fn: ast.FunctionDef | ast.AsyncFunctionDef | None, consts: Mapping[str, object]):
        self.consts = consts
        self.assigned, self.params = _bindings(fn) if fn is not None else ({}, frozenset())

    def name(self, name: str, line: int, depth: int) -> Range:
        """A local's range where line `line` reads it: its last assignment before the line that every
        call runs, and every assignment under a block between the two (with none that every call
        runs, every assignment before the line, and a parameter's own value); a module constant's value."""
        before = [(at, top, value) for at, top, value in self.assigned.get(name, []) if at < line]
        if not before:
            if name in self.params or name in self.assigned:
                return UNBOUNDED
            value = self.consts.get(name)
            return (value, value) if type(value) is int else UNBOUNDED
        ordered = sorted(before, key=lambda b: b[0])
        last = max((i for i, (_, top, _) in enumerate(ordered) if top), default=None)
        reaching = ordered[last:] if last is not None else ordered
        ranges = [self.of(value, at, depth + 1) if value is not None else UNBOUNDED for at, _, value in reaching]
        if last is None and name in self.params:   # assigned on some paths only: else the parameter
            ranges.append(UNBOUNDED)
        return hull(ranges)

    def of(self, expr: ast.expr, line: int, depth: int = 0) -> Range:
        """The range of `expr`, read at line `line` (where its names are looked up)."""
        if depth > _DEPTH:
            return UNBOUNDED
        if isinstance(expr, ast.Constant) and type(expr.value) is int:
            return expr.value, expr.value
        if isinstance(expr, ast.Name):
            return self.name(expr.id, line, depth)
        if isinstance(expr, ast.IfExp):
            return hull([self.of(expr.body, line, depth + 1), self.of(expr.orelse, line, depth + 1)])
        if isinstance(expr, ast.Call) and not expr.keywords and expr.args and \
                not any(isinstance(a, ast.Starred) for a in expr.args):
            called = last_name(expr.func)
            args = [self.of(a, line, depth + 1) for a in expr.args]
            if isinstance(expr.func, ast.Name) and called in ("min", "max") and len(args) > 1:
                return _minimum(args) if called == "min" else _maximum(args)
            if called == "next_power_of_2" and len(args) == 1:
                return _power_of_2(args[0][0]), _power_of_2(args[0][1])
            return UNBOUNDED
        if isinstance(expr, ast.BinOp):
            for side, other, constant_left in ((expr.right, expr.left, False), (expr.left, expr.right, True)):
                if isinstance(side, ast.Constant) and type(side.value) is int:
                    return _scaled(self.of(other, line, depth + 1), expr.op, side.value, constant_left)
        return UNBOUNDED


def launch_range(expr: ast.expr, fn: ast.FunctionDef | ast.AsyncFunctionDef | None,
                 consts: Mapping[str, object]) -> Range:
    """The range of an argument expression of a launch site in `fn`, read where it stands."""
    return _Reader(fn, consts).of(expr, getattr(expr, "lineno", 0) or 0)


def within(value: object, bound: Range) -> bool:
    """Whether an int (not a flag) lies in `bound`; anything else is not bounded by it."""
    if type(value) is not int:
        return True
    lo, hi = bound
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def fitting_size(bound: Range) -> int | None:
    """The size a guess outside `bound` becomes: the largest power of two in it, or with no upper
    cap the least one (`max(8, next_power_of_2(L))`: 8); None if it holds none."""
    lo, hi = bound
    if hi is None:
        return None if lo is None else _power_of_2(max(lo, 1))
    if hi < 1:
        return None
    size = 1 << (hi.bit_length() - 1)
    return size if lo is None or size >= lo else None


def shown(bound: Range) -> str:
    """`16..32`, `..16`, `16..`."""
    lo, hi = bound
    return f"{'' if lo is None else lo}..{'' if hi is None else hi}"
