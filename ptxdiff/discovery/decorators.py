"""Which decorators make a function a Triton kernel or helper, read from the AST alone."""

from __future__ import annotations

import ast

from ptxdiff.source.modules import ModuleIndex, ParsedModule, names_bound, nested_statements
from ptxdiff.source.syntax import dotted_name

TRITON_DECORATORS = ("jit", "autotune", "heuristics")


def decorator_kinds(fn: ast.FunctionDef) -> set[str]:
    """The Triton decorators (`jit`, `autotune`, `heuristics`) a function carries, by last name."""
    kinds = set()
    for dec in fn.decorator_list:
        chain = dotted_name(dec)
        if chain and chain[-1] in TRITON_DECORATORS:
            kinds.add(chain[-1])
    return kinds


def _foreign_root(index: ModuleIndex, mod: ParsedModule, chain: list[str]) -> bool:
    """`@cute.jit`, `@numba.jit`, `@jax.jit`, or a bare `@jit` from `from cutlass.cute import jit`:
    the decorator's root name is imported from a package that is neither triton nor part of the
    repo, so the function is not a Triton kernel. A name bound any other way is kept."""
    # a name bound inside an `if`/`try` block (`if has_cutlass(): import cutlass.cute as cute`):
    # the statements inside it that bind the name
    stmts = [inner for st in mod.bindings.get(chain[0], ()) for inner in nested_statements(st)
             if chain[0] in names_bound(inner)]
    if not stmts or not all(isinstance(st, (ast.Import, ast.ImportFrom)) for st in stmts):
        return False
    for stmt in stmts:
        if isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                return False  # relative: a repo module
            dotted = stmt.module or ""
        else:
            assert isinstance(stmt, ast.Import)
            alias = next((a for a in stmt.names if (a.asname or a.name.split(".")[0]) == chain[0]), None)
            dotted = (alias.name if alias.asname else alias.name.split(".")[0]) if alias else ""
        if dotted.split(".")[0] == "triton" or index.path_of(dotted) or index.path_of(dotted.split(".")[0]):
            return False
    return True


def triton_kinds(index: ModuleIndex, mod: ParsedModule, fn: ast.FunctionDef) -> set[str]:
    """decorator_kinds, ignoring decorators of other JIT compilers (`@cute.jit`)."""
    kinds = set()
    for dec in fn.decorator_list:
        chain = dotted_name(dec)
        if chain and chain[-1] in TRITON_DECORATORS and not _foreign_root(index, mod, chain):
            kinds.add(chain[-1])
    return kinds
