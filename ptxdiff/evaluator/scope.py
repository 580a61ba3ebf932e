"""Where the evaluator finds a name: local scopes, and each module's top-level statements run lazily.

A module's names resolve the way Python would have bound them at a point of the module: the
statements that bind a name are executed one at a time, when the name is first needed, so host
code that is never needed is never looked at. The functions and modules of the repository are
values that carry their scope, so they live here too.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from ptxdiff.discovery.spelling import Spelling
from ptxdiff.evaluator.values import (
    BUILTINS,
    UNSAFE_BUILTINS,
    FunctionReturn,
    LoopBreak,
    LoopContinue,
    Raised,
    Refused,
    Unreadable,
)
from ptxdiff.source.modules import ParsedModule, mutated_name


class Runner(Protocol):
    """What a module's statements need from the interpreter (`Interp`) to be run."""

    assumptions: list[str]
    used: list[str]
    spelling: Spelling

    def repo_module(self, dotted: str) -> ModuleEnv | None: ...

    def absolute(self, mod: ParsedModule, stmt: ast.ImportFrom) -> str: ...

    def star_target(self, mod: ParsedModule, stmt: ast.ImportFrom, name: str) -> ModuleEnv | None: ...

    def where(self, env: ModuleEnv, node: ast.AST) -> str: ...

    def exec_block(self, stmts: list[ast.stmt], scope: Scope) -> None: ...


@dataclass
class Function:
    """A function (or lambda) of the repository: interpreted when called, never executed."""

    name: str
    node: ast.FunctionDef | ast.Lambda
    env: ModuleEnv
    outer: Scope | None
    before: int | None             # module position it was defined at (its defaults were evaluated there)
    decorators: tuple[object, ...] = ()
    # its defaults, evaluated where it was defined (statements.function), or why they could not be
    defaults: list[object] = field(default_factory=list)
    kw_defaults: dict[str, object] = field(default_factory=dict)
    defaults_error: Exception | None = None
    # at module level, the names its own statement bound (a def inside `if has_triton():` sees
    # the configs assigned above it in that block, which the module does not have yet)
    siblings: dict[str, object] | None = None

    def __repr__(self) -> str:
        return f"<function {self.name} of {self.env.mod.path}>"

    def defining_scope(self) -> Scope:
        """The names visible where the `def` stood: its decorators' and defaults' scope."""
        return Scope(self.env, self.before, dict(self.siblings or {}), outer=self.outer)


@dataclass(frozen=True)
class Bound:
    """A function bound to its first argument (a classmethod's class)."""

    func: Function
    first: object


@dataclass
class Module:
    """A module of the repository (its names resolve through its ModuleEnv)."""

    env: ModuleEnv

    def __repr__(self) -> str:
        return f"<module {self.env.mod.name}>"


class Scope:
    """Names visible to one piece of interpreted code: locals, enclosing functions, the module."""

    def __init__(self, env: ModuleEnv, before: int | None, local: dict[str, object] | None = None,
                 outer: Scope | None = None, is_module: bool = False):
        self.env, self.before, self.outer = env, before, outer
        self.vars: dict[str, object] = local if local is not None else {}
        self.is_module = is_module

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                value = scope.vars[name]
                if isinstance(value, Lazy):
                    value = scope.vars[name] = value.force()
                if isinstance(value, Unreadable):
                    raise value.refused
                return value
            scope = scope.outer
        return self.env.resolve(name, self.before)


class _Lazy:
    """A name an import binds, computed when first read: `from m import a, b` needs only what
    is used, so one name the evaluator refuses does not sink its neighbours."""

    def __init__(self, compute: Callable[..., Any]) -> None:
        self._compute, self._done, self._value = compute, False, None

    def force(self) -> Any:
        if not self._done:
            self._value = self._compute()
            self._done = True
        return self._value


Lazy = _Lazy  # the class keeps its name, which a class namespace can show (see values.py)


def _binds(stmt: ast.stmt) -> set[str]:
    """Names a (possibly compound) statement binds at module level."""
    names: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        names.add(stmt.name)
    elif isinstance(stmt, ast.Assign):
        for t in stmt.targets:
            names |= _target_names(t)
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        if stmt.value is not None or isinstance(stmt, ast.AugAssign):
            names |= _target_names(stmt.target)
    elif isinstance(stmt, ast.Import):
        names |= {a.asname or a.name.split(".")[0] for a in stmt.names}
    elif isinstance(stmt, ast.ImportFrom):
        names |= {a.asname or a.name for a in stmt.names if a.name != "*"}
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        names |= _target_names(stmt.target)
    if isinstance(stmt, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.AsyncFor, ast.AsyncWith)) or \
            type(stmt).__name__ == "TryStar":
        for block in ("body", "orelse", "finalbody"):
            for s in getattr(stmt, block, []) or []:
                names |= _binds(s)
        for h in getattr(stmt, "handlers", []) or []:
            if h.name:
                names.add(h.name)
            for s in h.body:
                names |= _binds(s)
    return names


def _target_names(t: ast.expr) -> set[str]:
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        return set().union(*(_target_names(e) for e in t.elts)) if t.elts else set()
    if isinstance(t, ast.Starred):
        return _target_names(t.value)
    return set()


def _target_in_failed(stmt: ast.stmt, name: str) -> bool:
    return name in _binds(stmt)


class ModuleEnv:
    """One module's names, each computed when first needed, as of a position in the module."""

    def __init__(self, interp: Runner, mod: ParsedModule):
        self.interp, self.mod = interp, mod
        body = mod.tree.body if mod.tree is not None else []
        self.body = body
        self.binders: dict[str, list[int]] = {}
        self.mutations: dict[str, list[int]] = {}
        self.stars: list[int] = []
        for i, stmt in enumerate(body):
            for name in _binds(stmt):
                self.binders.setdefault(name, []).append(i)
            target = mutated_name(stmt)
            if target:
                self.mutations.setdefault(target, []).append(i)
            if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
                self.stars.append(i)
        self._done: dict[int, dict[str, object] | BaseException] = {}
        self._notes: dict[int, tuple[str, ...]] = {}   # assumptions made while executing a statement
        self._running: set[int] = set()
        self._mutated: set[int] = set()

    def has(self, name: str) -> bool:
        return name in self.binders or bool(self.stars)

    def resolve(self, name: str, before: int | None = None) -> Any:
        """The value `name` has at statement `before` (None: after the whole module ran)."""
        end = len(self.body) if before is None else before
        # every statement that binds the name and every star import that provides it, the last
        # first: Python's rule, the one the fingerprint's closure follows (source/modules.py)
        stars = {i: other for i in self.stars if i < end and (
            other := self.interp.star_target(self.mod, cast(ast.ImportFrom, self.body[i]), name)) is not None}
        for i in sorted({*self.binders.get(name, ()), *stars}, reverse=True):
            if i >= end:
                continue
            if i in stars:
                return stars[i].resolve(name)
            out = self._execute(i)
            if isinstance(out, BaseException):
                if isinstance(out, Raised) and not _target_in_failed(self.body[i], name):
                    continue
                raise out
            if name in out:
                value = out[name]
                if isinstance(value, Lazy):
                    value = out[name] = value.force()
                if isinstance(value, BaseException):
                    raise value
                if isinstance(value, Unreadable):
                    raise value.refused
                self._apply_mutations(name, i, end)
                self.interp.used.extend(self._notes.get(i, ()))
                return value
        if name in BUILTINS:
            return BUILTINS[name]
        if name in UNSAFE_BUILTINS:
            raise Refused(f"{name}() is not evaluated: it reaches files, processes or code")
        if name in ("__name__",):
            return self.mod.name
        if name == "__file__":
            return self.mod.path
        raise Raised("NameError", f"name {name!r} is not defined")

    def _apply_mutations(self, name: str, bound_at: int, end: int) -> None:
        for j in self.mutations.get(name, ()):
            if bound_at < j < end and j not in self._mutated:
                self._mutated.add(j)
                out = self._execute(j)
                if isinstance(out, BaseException):
                    raise out

    def _execute(self, i: int) -> dict[str, object] | BaseException:
        if i in self._done:
            return self._done[i]
        if i in self._running:
            raise Refused("the module reads a name while it is being computed (an import cycle)",
                          self.interp.where(self, self.body[i]))
        self._running.add(i)
        start = len(self.interp.assumptions)
        scope = Scope(self, i, {}, is_module=True)
        try:
            self.interp.exec_block([self.body[i]], scope)
            result: dict[str, object] | BaseException = scope.vars
        except (Refused, Raised) as e:
            if isinstance(e, Refused) and e.where is None:
                e.where = self.interp.where(self, self.body[i])
            result = e
        except (FunctionReturn, LoopBreak, LoopContinue):
            result = Refused("return/break outside a function", self.interp.where(self, self.body[i]))
        finally:
            self._running.discard(i)
        self._notes[i] = tuple(self.interp.assumptions[start:])
        self._done[i] = result
        return result
