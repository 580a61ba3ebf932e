"""Which constexprs guard which statements of a kernel and its jit helpers.

A change nested under several flags (`if A: if B: if not C:`) is compiled only by a spec that
takes every one of them the right way; a pairwise covering set of guesses can miss it. Each
statement the kernel reaches is kept as a short digest together with the kernel's constexprs
that guard it (the `if`/`while` conditions around it, ternaries and `tl.where` conditions in it,
a helper's parameters traced back to the kernel's arguments at each call); the two sides of a
pair then name the guards of what changed (`changed_guards`) and specs/resolve.py compiles
every combination of those. Plain data, so discovery stores it.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from ptxdiff.source.syntax import walk

MAX_DEPTH = 4          # helpers of helpers followed this deep
MAX_ENTRIES = 4096     # guarded statements kept per kernel (a larger kernel keeps the first)

Guards = tuple[tuple[str, tuple[str, ...]], ...]   # (statement digest, the constexprs guarding it)


@dataclass(frozen=True)
class _Scope:
    """Where a walk is: the function's name, its guards so far, and what its parameters are
    in the kernel's constexprs (a helper's `flag` is the kernel's `A` it was called with)."""

    name: str
    guards: frozenset[str]
    names: dict[str, frozenset[str]]
    depth: int


def kernel_guards(fn: ast.FunctionDef, constexprs: frozenset[str], helpers: dict[str, ast.FunctionDef]) -> Guards:
    """Every guarded statement of `fn` and the helpers it calls, as (digest, guards), sorted."""
    out: set[tuple[str, tuple[str, ...]]] = set()
    todo = [(fn, _Scope(fn.name, frozenset(), {c: frozenset({c}) for c in constexprs}, 0))]
    seen: set[tuple[str, frozenset[str], tuple[tuple[str, frozenset[str]], ...]]] = set()
    while todo and len(out) < MAX_ENTRIES:
        func, scope = todo.pop()
        visit = (scope.name, scope.guards, tuple(sorted(scope.names.items())))
        if visit in seen:   # a helper called twice alike is walked once
            continue
        seen.add(visit)
        for stmt, around in _statements(func.body, scope):
            exprs = _header(stmt)
            inline = frozenset().union(*(_inline_guards(e, scope) for e in exprs)) if exprs else frozenset()
            own = _names(stmt.test, scope) if isinstance(stmt, (ast.If, ast.While)) else frozenset()
            guards = around | inline | own   # a condition that changes guards both its branches
            if guards:
                out.add((_digest(scope.name, stmt, exprs), tuple(sorted(guards))))
            if scope.depth < MAX_DEPTH:
                todo += [(helpers[name], _call_scope(helpers[name], call, scope, guards))
                         for e in exprs for call in _calls(e) for name in [_callee(call)] if name in helpers]
    return tuple(sorted(out)[:MAX_ENTRIES])


def changed_guards(old: Guards, new: Guards, common: frozenset[str]) -> tuple[str, ...]:
    """The constexprs that guard a statement one side has and the other has not (its text, or
    the guards around it, changed). Only the `common` constexprs (of both sides) count: a
    parameter made constexpr guards the same statements as before, which did not change."""
    def kept(guards: Guards) -> set[tuple[str, tuple[str, ...]]]:
        return {(d, shared) for d, names in guards for shared in [tuple(n for n in names if n in common)] if shared}
    return tuple(sorted({name for _, names in kept(old) ^ kept(new) for name in names}))


def _statements(body: list[ast.stmt], scope: _Scope) -> Iterator[tuple[ast.stmt, frozenset[str]]]:
    """Each statement under `body` with the guards around it (a work list: an `elif` chain
    nests as deep as it is long)."""
    todo = [(stmt, scope.guards) for stmt in reversed(body)]
    while todo:
        stmt, around = todo.pop()
        yield stmt, around
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner = around | (_names(stmt.test, scope) if isinstance(stmt, (ast.If, ast.While)) else frozenset())
        blocks = [sub for block in ("body", "orelse", "finalbody") for sub in getattr(stmt, block, []) or []]
        blocks += [sub for handler in getattr(stmt, "handlers", []) or [] for sub in handler.body]
        todo += [(sub, inner) for sub in reversed(blocks)]


def _header(stmt: ast.stmt) -> list[ast.AST]:
    """What a statement says itself, without the statements nested in it."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.target, stmt.iter]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return list(stmt.items)
    if isinstance(stmt, (ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return []
    return [stmt]


def _digest(scope: str, stmt: ast.stmt, exprs: list[ast.AST]) -> str:
    text = "\0".join([scope, type(stmt).__name__, *(ast.dump(e) for e in exprs)])
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _names(expr: ast.AST, scope: _Scope) -> frozenset[str]:
    """The kernel's constexprs an expression reads, through the scope's parameters."""
    return frozenset().union(*(scope.names.get(n.id, frozenset()) for n in walk(expr) if isinstance(n, ast.Name)))


def _inline_guards(expr: ast.AST, scope: _Scope) -> frozenset[str]:
    """Conditions inside one statement: `a if C else b`, `tl.where(C, a, b)`."""
    tests = [n.test for n in walk(expr) if isinstance(n, ast.IfExp)]
    tests += [n.args[0] for n in walk(expr) if isinstance(n, ast.Call) and n.args
              and isinstance(n.func, (ast.Attribute, ast.Name)) and _callee(n) == "where"]
    return frozenset().union(*(_names(t, scope) for t in tests)) if tests else frozenset()


def _calls(expr: ast.AST) -> list[ast.Call]:
    return [n for n in walk(expr) if isinstance(n, ast.Call)]


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _call_scope(helper: ast.FunctionDef, call: ast.Call, scope: _Scope, guards: frozenset[str]) -> _Scope:
    """The helper's scope at one call: its parameters are what the call passes them."""
    params = [a.arg for a in helper.args.args]
    names = {p: _names(arg, scope) for p, arg in zip(params, call.args)}
    names.update({kw.arg: _names(kw.value, scope) for kw in call.keywords if kw.arg in params})
    return _Scope(helper.name, guards, names, scope.depth + 1)
