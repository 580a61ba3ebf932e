"""The closure of a kernel's *effective source*, from ASTs alone, and its fingerprint.

Effective source = the kernel (decorators included) plus, transitively, every module-level
binding of the repo it reads: `@triton.jit` helpers (also in other modules), constants,
config lists, functions used by decorators. The closure is what the builder builds from: the
builder (instantiate/builder.py) checks every jit function it hands to triton against it, and the
worker checks that the closure it built from has the fingerprint the cache key names.

The fingerprint hashes, per module path, the closure's top-level statements in source order
(imports as written, so an alias mapping is part of it), and what each name the closure reads
resolved to (a definition of which module, a module, a name outside the repository, a star
import). Names resolve as Python binds them: every statement that binds a name and every star
import that provides it count, in statement order (the last wins); modules are found as
Python's path finder finds them (source/modules.py). Comments, docstrings, blank lines and line
shifts do not reach it: statements are hashed as `ast.dump` without positions.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable

from ptxdiff.discovery.spelling import GLUON, JIT, Spelling
from ptxdiff.source.installs import DECLARING
from ptxdiff.source.modules import AboveTop, ModuleIndex, ParsedModule, names_bound, nested_statements, submodule


class Closure:
    """Walks one kernel's effective source: the statements it reads and how its names resolved.

    The walk keeps its own work list instead of recursing, so import cycles, self-imports and
    long chains of re-exports cost nothing special: each (module, name) is looked at once."""

    def __init__(self, index: ModuleIndex, spelling: Spelling | None = None):
        self.index = index
        self.spelling = spelling or Spelling(index)
        self.statements: dict[str, set[int]] = {}   # path -> top-level statement indexes read
        # how each name read resolved: (module path, name, attributes read, how, module path or
        # dotted name it resolved to, name there)
        self.edges: set[tuple[str, str, str, str, str, str]] = set()
        self.root = ""                               # the kernel's own module
        self.names: set[str] = set()                 # module-level names read
        self.defined: set[tuple[str, str]] = set()   # (path, name) whose binding statements are in
        self.paths: set[str] = set()
        self.probes: set[str] = set()                # files whose presence decides a module's file
        self.ambiguities: set[str] = set()          # why a module the closure reads has no one file
        self.jit_helpers: set[tuple[str, str]] = set()
        self._looked_up: set[tuple[str, str, tuple[str, ...]]] = set()
        self._todo: list[tuple[Callable[..., None], ParsedModule, str, object]] = []

    def add_definition(self, mod: ParsedModule, name: str, stmts: list[ast.stmt]) -> None:
        self._todo.append((self._definition, mod, name, stmts))
        while self._todo:
            step, *args = self._todo.pop()
            step(*args)

    def add_names(self, mod: ParsedModule, names: list[str]) -> None:
        """What `names`, read at the top level of `mod`, resolve to (a launch hook's function, a
        constant), followed as a kernel's names are (discovery/hooks.py)."""
        for name in names:
            self._lookup_later(mod, name, ())
        while self._todo:
            step, *args = self._todo.pop()
            step(*args)

    def _statement(self, mod: ParsedModule, stmt: ast.stmt) -> None:
        self.paths.add(mod.path)
        self.statements.setdefault(mod.path, set()).add(mod.position[id(stmt)])

    def _path_of(self, dotted: str) -> str | None:
        path = self.index.path_of(dotted)
        self.probes |= self.index.probed.get(dotted, frozenset())
        if dotted in self.index.ambiguous:
            self.ambiguities.add(self.index.ambiguous[dotted])
        return path

    def _definition(self, mod: ParsedModule, name: str, stmts: list[ast.stmt]) -> None:
        key = (mod.path, name)
        if key in self.defined:
            return
        self.defined.add(key)
        self.names.add(name)
        for stmt in stmts:
            self._statement(mod, stmt)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._follow_import(mod, name, stmt, ())
                continue
            _, free, chains = self.index.summary(stmt)
            for inner in nested_statements(stmt):
                if isinstance(inner, (ast.Import, ast.ImportFrom)) and name in names_bound(inner):
                    self._follow_import(mod, name, inner, ())
                elif self._jitted(mod, inner, name):
                    self.jit_helpers.add(key)
            for ref in free:
                self._lookup_later(mod, ref, ())
            for chain in chains:
                self._lookup_later(mod, chain[0], chain[1:])
        self._stars(mod, name, ())

    def _jitted(self, mod: ParsedModule, stmt: ast.stmt, name: str) -> bool:
        """Whether `stmt` binds `name` to a jit object: a `def` under a jit decorator however it is
        spelled, or a call that jits a function (`helper = triton.jit(_helper)`)."""
        if isinstance(stmt, ast.FunctionDef):
            return stmt.name == name and bool(self.spelling.decorator_kinds(mod, stmt) & {JIT, GLUON})
        return isinstance(stmt, ast.Assign) and name in names_bound(stmt) and self.spelling.made(mod, stmt.value) is not None

    def _stars(self, mod: ParsedModule, name: str, rest: tuple[str, ...]) -> None:
        """Star imports of `mod` that bind `name`: each is a binding statement like any other."""
        for star, block in zip(mod.stars, mod.star_blocks):
            target = self.index.star_provides(mod, star, name)
            base = self._absolute(mod, star)
            if base is not None:
                self._path_of(base)
            if target is not None:
                self._statement(mod, block)
                self.edges.add((mod.path, name, ".".join(rest), "*", target, name))
                self._lookup_later(self.index.parse(target), name, rest)

    def _lookup_later(self, mod: ParsedModule, name: str, rest: tuple[str, ...]) -> None:
        key = (mod.path, name, rest)
        if key not in self._looked_up:
            self._looked_up.add(key)
            self._todo.append((self._lookup, mod, name, rest))

    def _lookup(self, mod: ParsedModule, name: str, rest: tuple[str, ...]) -> None:
        stmts = mod.bindings.get(name)
        if stmts and all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmts):
            self.names.add(name)
            for stmt in stmts:
                self._statement(mod, stmt)
                self._follow_import(mod, name, stmt, rest)
            self._stars(mod, name, rest)
        elif stmts:
            self._todo.append((self._definition, mod, name, stmts))
            if rest:   # `Ops.helper(x)`, `lib.Ops.helper(x)`: a jit member of a class is a helper
                for stmt in stmts:
                    for inner in nested_statements(stmt):
                        if isinstance(inner, ast.ClassDef) and inner.name == name and any(
                                self._jitted(mod, member, rest[0]) for top in inner.body
                                for member in nested_statements(top)):
                            self.jit_helpers.add((mod.path, f"{name}.{rest[0]}"))
        else:
            self._stars(mod, name, rest)

    def _follow_import(self, mod: ParsedModule, name: str, stmt: ast.stmt, rest: tuple[str, ...]) -> None:
        origin = (mod.path, name, ".".join(rest))
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    dotted = alias.name if alias.asname else alias.name.split(".")[0]
                    self._in_module(dotted, rest, origin)
            return
        assert isinstance(stmt, ast.ImportFrom)
        base = self._absolute(mod, stmt)
        if base is None:
            return
        for alias in stmt.names:
            if (alias.asname or alias.name) != name:
                continue
            target = self._path_of(base)
            if target is not None and self.index.binds(target, alias.name):
                self.paths.add(target)
                self.edges.add((*origin, "=", target, alias.name))
                self._lookup_later(self.index.parse(target), alias.name, rest)
            elif self._path_of(submodule(base, alias.name)):
                self._in_module(submodule(base, alias.name), rest, origin)
            else:
                self.edges.add((*origin, "external", submodule(base, alias.name), ""))

    def _absolute(self, mod: ParsedModule, stmt: ast.ImportFrom) -> str | None:
        """The module a `from` import names, or None when it climbs above the top-level package
        (the builder refuses the kernel with why). Either way the install decides it."""
        self.probes.update(DECLARING)
        try:
            return self.index.absolute(mod, stmt)
        except AboveTop as e:
            self.ambiguities.add(str(e))
            return None

    def _in_module(self, dotted: str, rest: tuple[str, ...], origin: tuple[str, str, str]) -> None:
        """Attribute access through a module alias: follow into repo modules, record others."""
        while rest and self._path_of(f"{dotted}.{rest[0]}"):
            dotted, rest = f"{dotted}.{rest[0]}", rest[1:]
        path = self._path_of(dotted)
        if path is None:
            self.edges.add((*origin, "external", dotted, ""))
            return
        self.paths.add(path)
        self.edges.add((*origin, "module", path, ""))
        if rest:
            self._lookup_later(self.index.parse(path), rest[0], rest[1:])

    def fingerprint(self) -> str:
        """The hash of the closure. The kernel's own module is named by a placeholder: a file
        renamed without an edit builds the same kernel (a relative import that now resolves
        elsewhere shows as the module it resolves to)."""
        def named(path: str) -> bytes:
            return b"<kernel>" if path == self.root else path.encode(errors="surrogateescape")

        h = hashlib.sha256()
        for path in sorted(self.statements, key=named):
            body = self.index.parse(path).tree
            assert body is not None  # a module with statements in the closure parsed
            h.update(b"module\0" + named(path) + b"\0")
            for i in sorted(self.statements[path]):
                h.update(self.index.summary(body.body[i])[0].encode() + b"\0")
        edges = sorted((named(origin), name, rest, how, named(to) if how in ("=", "*", "module") else to.encode(), there)
                       for origin, name, rest, how, to, there in self.edges)
        for edge in edges:
            h.update(b"edge\0" + b"\0".join(p if isinstance(p, bytes) else p.encode() for p in edge) + b"\0")
        for why in sorted(self.ambiguities):
            h.update(b"ambiguous\0" + why.encode(errors="surrogateescape") + b"\0")
        return h.hexdigest()


def kernel_closure(index: ModuleIndex, mod: ParsedModule, name: str, spelling: Spelling | None = None) -> Closure:
    """The closure of the jit function `name` of `mod`: what discovery fingerprints and the
    builder builds from. A kernel of a class or function body (`Ops.k`) reads what the whole
    top-level statement that holds it reads."""
    closure = Closure(index, spelling)
    closure.root = mod.path
    root = name.split(".")[0]
    closure.add_definition(mod, root, mod.bindings[root])
    return closure
