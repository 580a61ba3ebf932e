"""What a name of a module means to Triton, from ASTs alone: the one resolver discovery asks
whether an object is whatever `triton.jit` returned, however it is spelled.

A decorator or a call is followed as Python would bind it: imports of triton under any alias
(`import triton as tr`, `from triton import jit as J`), assignments (`J = triton.jit`),
imports of the repository's own modules, and the repository's own functions, read for what
they return: one that jits the function it is given (`def my_jit(fn): return triton.jit(fn)`, or
a proxy of its own made of that jit object, `return MyJIT(triton.jit(fn))`) is a jit decorator,
one that returns such a decorator (`def triton_jit(**kw): return triton.jit(**kw)`) a factory of
them. Nothing is imported or run.

Meanings: JIT, AUTOTUNE, HEURISTICS, GLUON (`triton.experimental.gluon.jit`), WRAPS (a function
that returns a jit object made of its argument), FACTORY (a function that returns a decorator
that does), FOREIGN (a name of a package that is neither triton nor the repository: `cute.jit`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ptxdiff.source.modules import AboveTop, ModuleIndex, ParsedModule, names_bound, nested_statements, submodule
from ptxdiff.source.syntax import dotted_name

JIT, AUTOTUNE, HEURISTICS, GLUON = "jit", "autotune", "heuristics", "gluon"
WRAPS, FACTORY, FOREIGN = "wraps", "factory", "foreign"
TRITON_DECORATORS = (JIT, AUTOTUNE, HEURISTICS)

_TRITON = {
    **dict.fromkeys(("triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit", "triton.language.jit"), JIT),
    **dict.fromkeys(("triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"), AUTOTUNE),
    **dict.fromkeys(("triton.heuristics", "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics"),
                    HEURISTICS),
    **dict.fromkeys(("triton.experimental.gluon.jit", "triton.experimental.gluon._runtime.jit",
                     "triton.experimental.gluon.language.jit"), GLUON),
}
# decorators of triton's that make a function a builtin (`@builtin def rank(axis, _semantic=None)`),
# Python triton's code generator runs while it compiles: a repository's own are never built from source
TRITON_BUILTINS = frozenset({"triton.language.core.builtin", "triton.language.builtin",
                             "triton.language.core.extern", "triton.language.extern"})
_MAX_DEPTH = 24   # imports and assignments followed for one name (a chain of re-exports)


def triton_meaning(dotted: str) -> str | None:
    """The meaning of one of triton's own dotted names (None: not a decorator of kernels)."""
    if dotted in _TRITON:
        return _TRITON[dotted]
    if dotted.startswith("triton.") and dotted.endswith(".gluon.jit"):
        return GLUON
    return None


@dataclass(frozen=True)
class Made:
    """A jit object made by a call (`triton.autotune(...)(triton.jit(_k))`): the decorators it
    applies (outermost first) and the name of the function they are applied to."""

    kinds: tuple[str, ...]
    function: str


class Spelling:
    """Answers, for one snapshot, what names and expressions of its modules mean to Triton."""

    def __init__(self, index: ModuleIndex):
        self.index = index
        self._names: dict[tuple[str, str], str | None] = {}
        self._functions: dict[tuple[str, int], str | None] = {}

    # -- names -------------------------------------------------------------------------------------
    def meaning(self, mod: ParsedModule, expr: ast.expr, depth: int = 0) -> str | None:
        """What `expr` (a name or dotted name read at module level of `mod`) is: a meaning above,
        a dotted name outside the repository (`numba.jit`), or None (not known)."""
        chain = dotted_name(expr) if isinstance(expr, (ast.Name, ast.Attribute)) else []
        if not chain:
            return None
        root = self.name(mod, chain[0], depth)
        if root is None:
            return None
        if root.startswith("module:"):   # a repository module: its attribute
            path = root[len("module:"):]
            rest = chain[1:]
            # a name the package binds hides its submodule of that name (`from .jit import jit`)
            while rest and not self.index.binds(path, rest[0]) and \
                    self.index.path_of(f"{self.index.module_name(path)}.{rest[0]}"):
                path = self.index.path_of(f"{self.index.module_name(path)}.{rest[0]}") or path
                rest = rest[1:]
            if not rest:
                return root
            return self._dotted(self.name(self.index.parse(path), rest[0], depth + 1), rest[1:])
        return self._dotted(root, chain[1:])

    @staticmethod
    def _dotted(root: str | None, rest: list[str]) -> str | None:
        if root is None:
            return None
        if not rest:
            return root
        if root in (JIT, AUTOTUNE, HEURISTICS, GLUON, WRAPS, FACTORY) or root.startswith("def:"):
            return None   # an attribute of a decorator (`triton.jit.something`)
        if root == FOREIGN:
            return FOREIGN
        dotted = ".".join([root, *rest])
        return triton_meaning(dotted) or dotted

    def name(self, mod: ParsedModule, name: str, depth: int = 0) -> str | None:
        """What the module-level `name` of `mod` is bound to (the last binding: Python's rule)."""
        key = (mod.path, name)
        if key in self._names:
            return self._names[key]
        if depth > _MAX_DEPTH:
            return None
        self._names[key] = None   # a cycle of imports or assignments means nothing
        found: str | None = None
        # the last binding, as Python binds; but where one of them is triton's (`try: import
        # triton` ... `except ImportError: triton = Stub()`), triton's: the fallback is for machines
        # without it, and a kernel is compiled with it
        for top in mod.bindings.get(name, ()):
            for stmt in nested_statements(top):
                if name in names_bound(stmt):
                    meaning = self._bound(mod, name, stmt, depth)
                    if meaning is not None and (found is None or _tritons(meaning) or not _tritons(found)):
                        found = meaning
        if found is None and name not in mod.bindings:
            for star in mod.stars:
                target = self.index.star_provides(mod, star, name)
                if target is not None:
                    found = self.name(self.index.parse(target), name, depth + 1)
                elif star.module and star.module.split(".")[0] == "triton" and not star.level:
                    found = triton_meaning(f"{star.module}.{name}") or found
        self._names[key] = found
        return found

    def _bound(self, mod: ParsedModule, name: str, stmt: ast.stmt, depth: int) -> str | None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    dotted = alias.name if alias.asname else alias.name.split(".")[0]
                    return self._module(dotted)
            return None
        if isinstance(stmt, ast.ImportFrom):
            try:
                base = self.index.absolute(mod, stmt)
            except AboveTop:
                return None
            for alias in stmt.names:
                if (alias.asname or alias.name) != name:
                    continue
                target = self.index.path_of(base) if base or stmt.level else None
                if target is not None and self.index.binds(target, alias.name):
                    return self.name(self.index.parse(target), alias.name, depth + 1)
                return self._module(submodule(base, alias.name))
            return None
        if isinstance(stmt, ast.FunctionDef):
            return f"def:{mod.path}:{stmt.lineno}"
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if isinstance(stmt.value, ast.Call) and self._passes_jit(mod, stmt.value):
                return FACTORY   # `triton_jit = try_decorate(lambda: triton.jit)`, `partial(triton.jit, ...)`
            return self.meaning(mod, stmt.value, depth + 1)
        return None

    def _passes_jit(self, mod: ParsedModule, call: ast.Call) -> bool:
        """A call given triton.jit itself, or a lambda that returns it: what it returns makes jit
        objects (a wrapper of the repository's around the decorator)."""
        for arg in [*call.args, *(k.value for k in call.keywords)]:
            body = arg.body if isinstance(arg, ast.Lambda) else arg
            if isinstance(body, (ast.Name, ast.Attribute)) and self.meaning(mod, body) in (JIT, AUTOTUNE, HEURISTICS):
                return True
        return False

    def _module(self, dotted: str) -> str:
        path = self.index.path_of(dotted)
        if path is not None:
            return f"module:{path}"
        if dotted.split(".")[0] == "triton":
            return triton_meaning(dotted) or dotted
        return dotted if "." in dotted else FOREIGN if dotted in _FOREIGN_ROOTS else dotted

    # -- functions of the repository ---------------------------------------------------------------------
    def callable_kind(self, mod: ParsedModule, expr: ast.expr) -> str | None:
        """What calling `expr` makes: JIT/AUTOTUNE/HEURISTICS/GLUON (triton's own), WRAPS or
        FACTORY (a repository function that jits), FOREIGN, or None."""
        meaning = self.meaning(mod, expr)
        if meaning is None:
            return None
        if meaning.startswith("def:"):
            path, line = meaning[4:].rsplit(":", 1)
            return self.function_kind(self.index.parse(path), int(line))
        if meaning in (JIT, AUTOTUNE, HEURISTICS, GLUON, WRAPS, FACTORY):
            return meaning
        if meaning == FOREIGN or not meaning.startswith(("triton.", "module:")) and "." in meaning:
            return FOREIGN
        return None

    def function_kind(self, mod: ParsedModule, lineno: int) -> str | None:
        """WRAPS or FACTORY for a repository function (the module-level `def` at `lineno`) that
        returns a jit object made of its argument or a decorator that makes one."""
        key = (mod.path, lineno)
        if key in self._functions:
            return self._functions[key]
        self._functions[key] = None
        fn = next((s for top in (mod.tree.body if mod.tree else []) for s in nested_statements(top)
                   if isinstance(s, ast.FunctionDef) and s.lineno == lineno), None)
        kind = self._returns(mod, fn, {}) if fn is not None else None
        self._functions[key] = kind
        return kind

    def _returns(self, mod: ParsedModule, fn: ast.FunctionDef, outer: dict[str, str]) -> str | None:
        """WRAPS/FACTORY from what `fn` returns (its own `return`s, not those of inner defs)."""
        local: dict[str, str] = dict(outer)
        for stmt in _own_statements(fn):
            if isinstance(stmt, ast.FunctionDef):
                kind = self._returns(mod, stmt, local)
                if kind is not None:
                    local[stmt.name] = WRAPS if kind == WRAPS else FACTORY
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                kind = self._made(mod, stmt.value, local)
                if kind is not None:
                    local[stmt.targets[0].id] = kind
        for stmt in _own_statements(fn):
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                kind = self._made(mod, stmt.value, local)
                if kind is not None:
                    return kind
        return None

    def _made(self, mod: ParsedModule, expr: ast.expr, local: dict[str, str]) -> str | None:
        """What an expression of a function body holds: a jit object (WRAPS: the function returns
        one) or a decorator that makes one (FACTORY)."""
        if isinstance(expr, ast.Name) and expr.id in local:
            return local[expr.id]
        if isinstance(expr, ast.IfExp):   # `decorator(fn) if fn is not None else decorator`
            return self._made(mod, expr.body, local) or self._made(mod, expr.orelse, local)
        if not isinstance(expr, ast.Call):
            kind = self.callable_kind(mod, expr)
            return FACTORY if kind in (JIT, WRAPS) else kind if kind == FACTORY else None
        if isinstance(expr.func, ast.Call):   # `triton.jit(**kw)(fn)`, `deco(...)(fn)`
            inner = self._made(mod, expr.func, local)
            return WRAPS if inner == FACTORY else None
        kind = local.get(expr.func.id) if isinstance(expr.func, ast.Name) and expr.func.id in local \
            else self.callable_kind(mod, expr.func)
        if kind == FACTORY:
            return FACTORY
        if kind in (JIT, WRAPS):
            return WRAPS if expr.args else FACTORY
        if kind in (AUTOTUNE, HEURISTICS):
            return FACTORY   # a decorator around a jit object
        if kind is None and any(self._made(mod, a, local) == WRAPS for a in expr.args):
            return WRAPS   # a proxy the repository wraps around the jit object (`return MyJIT(jitted)`)
        return None

    # -- decorators and call forms ---------------------------------------------------------------------
    def decorator_kind(self, mod: ParsedModule, dec: ast.expr) -> str | None:
        """The kind of one decorator: JIT, AUTOTUNE, HEURISTICS, GLUON, or None (another one),
        with its last name read as before where its name is bound nowhere ptxdiff can see."""
        called = isinstance(dec, ast.Call)
        callee = dec.func if isinstance(dec, ast.Call) else dec
        kind = self.callable_kind(mod, callee)
        if kind in (JIT, GLUON, AUTOTUNE, HEURISTICS):
            return kind
        if kind in (WRAPS, FACTORY):
            return JIT
        if kind is None and self.meaning(mod, callee) is None:
            chain = dotted_name(callee)
            if chain and chain[-1] in TRITON_DECORATORS and (called or chain[-1] == JIT) and \
                    chain[0] not in _FOREIGN_ROOTS:
                return chain[-1]
        return None

    def decorator_kinds(self, mod: ParsedModule, fn: ast.FunctionDef) -> set[str]:
        return {k for d in fn.decorator_list if (k := self.decorator_kind(mod, d)) is not None}

    def made(self, mod: ParsedModule, expr: ast.expr) -> Made | None:
        """A call that makes a jit object of a function named in it (`triton.jit(_k)`,
        `triton.autotune(configs=...)(triton.jit(_k))`, `my_jit(_k)`, `triton_jit()(_k)`)."""
        kinds: list[str] = []
        while isinstance(expr, ast.Call) and len(expr.args) == 1:
            if isinstance(expr.func, ast.Call):
                kind = self.decorator_kind(mod, expr.func)
            else:
                callee = self.callable_kind(mod, expr.func)
                kind = JIT if callee == WRAPS else callee if callee in (JIT, GLUON) else None
            if kind is None:
                return None
            kinds.append(kind)
            expr = expr.args[0]
        if isinstance(expr, ast.Name) and kinds and kinds[-1] in (JIT, GLUON):
            return Made(tuple(kinds), expr.id)
        return None


_FOREIGN_ROOTS = frozenset({"numba", "jax", "cute", "cutlass", "torch", "taichi", "mlx", "cupy", "warp", "tilelang",
                            "helion", "thunderkittens", "tvm"})


def _tritons(meaning: str) -> bool:
    return meaning in (JIT, AUTOTUNE, HEURISTICS, GLUON, WRAPS, FACTORY) or meaning.startswith("triton")


def _own_statements(fn: ast.FunctionDef) -> list[ast.stmt]:
    """A function body's statements, those inside `if`/`try`/`with`/`for` included, not those of
    inner definitions (which are listed themselves)."""
    return [s for top in fn.body for s in nested_statements(top)]
