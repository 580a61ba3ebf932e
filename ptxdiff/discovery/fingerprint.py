"""The fingerprint of a kernel's *effective source*, from ASTs alone.

Effective source = the kernel (decorators included) plus, transitively, every module-level
binding of the repo it reads: `@triton.jit` helpers (also in other modules), constants,
config lists, functions used by decorators. Comments, docstrings, blank lines and line shifts do
not reach the fingerprint because it is built from `ast.dump` without positions.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable

from ptxdiff.discovery.decorators import decorator_kinds
from ptxdiff.source.modules import ModuleIndex, ParsedModule, names_bound, nested_statements


class Closure:
    """Walks one kernel's effective source and hashes it.

    The walk keeps its own work list instead of recursing, so import cycles, self-imports and
    long chains of re-exports cost nothing special: each (module, name) is looked at once."""

    def __init__(self, index: ModuleIndex):
        self.index = index
        self.parts: set[tuple[str, str]] = set()
        self.paths: set[str] = set()
        self.jit_helpers: set[tuple[str, str]] = set()
        self._seen: set[tuple[str, str]] = set()
        self._looked_up: set[tuple[str, str, tuple[str, ...]]] = set()
        self._todo: list[tuple[Callable[..., None], ParsedModule, str, object]] = []

    def add_definition(self, mod: ParsedModule, name: str, stmts: list[ast.stmt]) -> None:
        self._todo.append((self._definition, mod, name, stmts))
        while self._todo:
            step, *args = self._todo.pop()
            step(*args)

    def _definition(self, mod: ParsedModule, name: str, stmts: list[ast.stmt]) -> None:
        key = (mod.path, name)
        if key in self._seen:
            return
        self._seen.add(key)
        self.paths.add(mod.path)
        for stmt in stmts:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._follow_import(mod, name, stmt, ())
                continue
            dump, free, chains = self.index.summary(stmt)
            self.parts.add((name, dump))
            for inner in nested_statements(stmt):
                if isinstance(inner, (ast.Import, ast.ImportFrom)) and name in names_bound(inner):
                    self._follow_import(mod, name, inner, ())
                elif isinstance(inner, ast.FunctionDef) and inner.name == name and "jit" in decorator_kinds(inner):
                    self.jit_helpers.add(key)
            for ref in free:
                self._lookup_later(mod, ref, ())
            for chain in chains:
                self._lookup_later(mod, chain[0], chain[1:])

    def _lookup_later(self, mod: ParsedModule, name: str, rest: tuple[str, ...]) -> None:
        key = (mod.path, name, rest)
        if key not in self._looked_up:
            self._looked_up.add(key)
            self._todo.append((self._lookup, mod, name, rest))

    def _lookup(self, mod: ParsedModule, name: str, rest: tuple[str, ...]) -> None:
        stmts = mod.bindings.get(name)
        if stmts:
            if all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmts):
                for stmt in stmts:
                    self._follow_import(mod, name, stmt, rest)
            else:
                self._todo.append((self._definition, mod, name, stmts))
            return
        for star in mod.stars:
            target = self.index.path_of(self.index.absolute(mod, star))
            if target:
                other = self.index.parse(target)
                if name in other.bindings:
                    self.paths.add(mod.path)
                    self._lookup_later(other, name, rest)
                    return

    def _follow_import(self, mod: ParsedModule, name: str, stmt: ast.stmt, rest: tuple[str, ...]) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    dotted = alias.name if alias.asname else alias.name.split(".")[0]
                    self._in_module(dotted, rest)
            return
        assert isinstance(stmt, ast.ImportFrom)
        base = self.index.absolute(mod, stmt)
        for alias in stmt.names:
            if (alias.asname or alias.name) != name:
                continue
            target = self.index.path_of(base)
            if target is not None and alias.name in self.index.parse(target).bindings:
                self.paths.add(target)
                self._lookup_later(self.index.parse(target), alias.name, rest)
            elif self.index.path_of(f"{base}.{alias.name}"):
                self._in_module(f"{base}.{alias.name}", rest)
            else:
                self.parts.add((name, f"external:{base}.{alias.name}"))

    def _in_module(self, dotted: str, rest: tuple[str, ...]) -> None:
        """Attribute access through a module alias: follow into repo modules, record others."""
        while rest and self.index.path_of(f"{dotted}.{rest[0]}"):
            dotted, rest = f"{dotted}.{rest[0]}", rest[1:]
        path = self.index.path_of(dotted)
        if path is None:
            self.parts.add((dotted, "external"))
            return
        self.paths.add(path)
        if rest:
            self._lookup_later(self.index.parse(path), rest[0], rest[1:])

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for name, dump in sorted(self.parts):
            h.update(name.encode() + b"\0" + dump.encode() + b"\0")
        return h.hexdigest()
