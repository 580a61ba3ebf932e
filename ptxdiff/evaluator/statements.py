"""Statements of the interpreted code: one handler per statement type, picked from a table.

Assignments, control flow, `try`, imports, `def` and `class` are interpreted the way Python
would run them; any other statement (`with`, `global`, `del`...) is refused with its line.
Imports never import: a repository module is another ModuleEnv, anything else an `External`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable
from typing import Any, cast

from ptxdiff.evaluator.core import BINOPS, InterpCore, dispatch
from ptxdiff.evaluator.installed import triton_module_exists
from ptxdiff.evaluator.scope import Bound, Function, Lazy, Scope
from ptxdiff.evaluator.values import (
    MAX_LEN,
    Builtin,
    Class,
    EnumMember,
    ExcClass,
    External,
    FunctionReturn,
    LoopBreak,
    LoopContinue,
    Raised,
    Refused,
    Unreadable,
    is_subclass,
)
from ptxdiff.source.modules import names_bound, nested_statements, submodule

PRESENT_PACKAGES = {"triton", "torch", "numpy", "packaging"}  # a reviewer of Triton kernels has these


class StatementsMixin(InterpCore):
    """Runs statements: `exec_block`, `exec_stmt`, assignment, definitions."""

    def exec_block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        for stmt in stmts:
            # what exec_stmt does, inline: one Python frame per nested block, as deep code needs
            self.tick(stmt, scope.env)
            _statement_handler(stmt)(self, stmt, scope)

    def exec_stmt(self, stmt: ast.stmt, scope: Scope) -> None:
        self.tick(stmt, scope.env)
        _statement_handler(stmt)(self, stmt, scope)

    # -- one handler per statement type ------------------------------------------------------------
    def _exec_expr(self, stmt: ast.Expr, scope: Scope) -> None:
        value = stmt.value
        if isinstance(value, ast.Constant):
            return  # a docstring
        self.eval(value, scope)

    def _exec_assign(self, stmt: ast.Assign, scope: Scope) -> None:
        try:
            value = self.eval(stmt.value, scope)
        except Refused as e:
            if not (e.unreadable and scope.is_module and all(isinstance(t, ast.Name) for t in stmt.targets)):
                raise
            # a value made of an unreadable class, at module level (an `if HAS_TRITON:` block too), is
            # unreadable in turn, raised where it is read: `k = own_autotune(configs)(_k_impl)`, whose
            # autotuner class the evaluator refuses, does not sink `_k_impl` (host code still refuses the
            # statement: a module guard takes the branch that runs)
            for target in stmt.targets:
                scope.vars[cast(ast.Name, target).id] = Unreadable(e)
            return
        for target in stmt.targets:
            self.assign(target, value, scope)

    def _exec_ann_assign(self, stmt: ast.AnnAssign, scope: Scope) -> None:
        if stmt.value is not None:
            self.assign(stmt.target, self.eval(stmt.value, scope), scope)

    def _exec_aug_assign(self, stmt: ast.AugAssign, scope: Scope) -> None:
        op = BINOPS.get(type(stmt.op))
        if op is None:
            raise Refused("this operator is not evaluated", self.where(scope.env, stmt))
        current = self.eval(_as_load(stmt.target), scope)
        rhs = self.eval(stmt.value, scope)
        if isinstance(current, list) and isinstance(stmt.op, ast.Add):
            more = self.iterate(rhs)
            if len(current) + len(more) > MAX_LEN:
                raise Refused(f"a value of more than {MAX_LEN} elements", self.where(scope.env, stmt))
            current.extend(more)
            self.sized(current, len(more))
            new = current
        else:
            new = self.binop(op, current, rhs)
        self.assign(stmt.target, new, scope)

    def _exec_return(self, stmt: ast.Return, scope: Scope) -> None:
        raise FunctionReturn(self.eval(stmt.value, scope) if stmt.value is not None else None)

    def _exec_if(self, stmt: ast.If, scope: Scope) -> None:
        try:
            test = self.truth(self.eval(stmt.test, scope))
        except Refused as refused:
            if not (scope.is_module and refused.host_call):
                raise
            self._either_branch(stmt, scope, refused)
            return
        self.exec_block(stmt.body if test else stmt.orelse, scope)

    def _either_branch(self, stmt: ast.If, scope: Scope, refused: Refused) -> None:
        """A module-level `if` on host code the evaluator does not run (`if has_mslk():`): the
        branch that runs through is taken (the body first, then the `else`), and that is said."""
        before = dict(scope.vars)
        test = ast.unparse(stmt.test)[:80]
        try:
            held = {name for inner in stmt.body for name in self._run_through(inner, scope)}
            if held & {n for top in stmt.orelse for inner in nested_statements(top) for n in names_bound(inner)}:
                # the `else` gives what the body could not read
                raise Refused(f"{', '.join(sorted(held))}: host code the evaluator does not run")
            self.assumptions.append(f"`if {test}`: {refused.reason}; assumed true (its body runs)")
        except (Refused, Raised):
            scope.vars.clear()
            scope.vars.update(before)
            self.exec_block(stmt.orelse, scope)
            self.assumptions.append(f"`if {test}`: {refused.reason}; assumed false (its body cannot run)")

    def _run_through(self, stmt: ast.stmt, scope: Scope) -> list[str]:
        """A statement of such a body. One that is host code the evaluator does not run binds its
        names unreadable, raised where they are read, as such a test is (`DEVICE =
        triton.runtime.driver.active.get_active_torch_device()`; a registration call binds nothing):
        the body still runs through, so a kernel it defines is not lost to its neighbours' host
        calls, unless the `else` binds what it could not read. Returns the names bound unreadable."""
        try:
            self.exec_stmt(stmt, scope)
        except Refused as e:
            names = _bound_names(stmt)
            if not (e.host_call and names is not None):
                raise
            for name in names:
                scope.vars[name] = Unreadable(e)
            return names
        return []

    def _exec_for(self, stmt: ast.For, scope: Scope) -> None:
        broke = False
        for item in self.iterate(self.eval(stmt.iter, scope)):
            self.tick(stmt, scope.env)
            self.assign(stmt.target, item, scope)
            try:
                self.exec_block(stmt.body, scope)
            except LoopBreak:
                broke = True
                break
            except LoopContinue:
                continue
        if not broke:
            self.exec_block(stmt.orelse, scope)

    def _exec_while(self, stmt: ast.While, scope: Scope) -> None:
        broke = False
        while self.truth(self.eval(stmt.test, scope)):
            self.tick(stmt, scope.env)
            try:
                self.exec_block(stmt.body, scope)
            except LoopBreak:
                broke = True
                break
            except LoopContinue:
                continue
        if not broke:
            self.exec_block(stmt.orelse, scope)

    def _exec_break(self, stmt: ast.Break, scope: Scope) -> None:
        raise LoopBreak()

    def _exec_continue(self, stmt: ast.Continue, scope: Scope) -> None:
        raise LoopContinue()

    def _exec_pass(self, stmt: ast.Pass, scope: Scope) -> None:
        return

    def _exec_raise(self, stmt: ast.Raise, scope: Scope) -> None:
        exc = self.eval(stmt.exc, scope) if stmt.exc is not None else None
        name = exc.name if isinstance(exc, ExcClass) else exc.type_name if isinstance(exc, Raised) else None
        if name is None:
            raise Refused("raises something that is not a builtin exception", self.where(scope.env, stmt))
        raise exc if isinstance(exc, Raised) else Raised(name)

    def _exec_assert(self, stmt: ast.Assert, scope: Scope) -> None:
        if not self.truth(self.eval(stmt.test, scope)):
            raise Raised("AssertionError", str(self.eval(stmt.msg, scope)) if stmt.msg else "")

    def _exec_import(self, stmt: ast.Import, scope: Scope) -> None:
        for alias in stmt.names:
            if self.repo_module(alias.name) is None:
                self._optional_import(alias.name)
            if alias.asname:
                scope.vars[alias.asname] = self.module_value(alias.name)
            else:
                top = alias.name.split(".")[0]
                self.module_value(alias.name)  # an ImportError if a triton submodule is missing
                scope.vars[top] = self.module_value(top)

    def _exec_def(self, stmt: ast.FunctionDef, scope: Scope) -> None:
        scope.vars[stmt.name] = self.function(stmt, scope)

    def _exec_class(self, stmt: ast.ClassDef, scope: Scope) -> None:
        try:
            scope.vars[stmt.name] = self.klass(stmt, scope)
        except Refused as e:
            if not scope.is_module:
                raise
            # at module level (an `if HAS_TRITON:` block too) the refusal is the name's value, raised
            # where it is read: a `torch.autograd.Function` beside the kernels does not sink them
            e.unreadable = True
            scope.vars[stmt.name] = Unreadable(e)

    def _exec_global(self, stmt: ast.Global | ast.Nonlocal, scope: Scope) -> None:
        raise Refused("global/nonlocal state is not interpreted", self.where(scope.env, stmt))

    def _exec_other(self, stmt: ast.stmt, scope: Scope) -> None:
        raise Refused(f"{type(stmt).__name__} statements are not interpreted", self.where(scope.env, stmt))

    # -- try ---------------------------------------------------------------------------------------
    def _exec_try(self, stmt: ast.Try, scope: Scope) -> None:
        guarded = any(self._matches(h, Raised("ImportError"), scope) for h in stmt.handlers)
        try:
            try:
                try:
                    self.import_guards += guarded
                    try:
                        self.exec_block(stmt.body, scope)
                    finally:
                        self.import_guards -= guarded
                except Refused as refused:
                    # host code of a package we do not import, under `except Exception`: take the
                    # handler, as the code does when that package is missing, and say so
                    if not refused.host_call or not any(self._matches(h, Raised("Exception"), scope)
                                                        for h in stmt.handlers):
                        raise
                    self.assumptions.append(f"{refused}: assumed it raises (the `except` branch taken)")
                    raise Raised("Exception", str(refused)) from None
            except Raised as e:
                for handler in stmt.handlers:
                    if self._matches(handler, e, scope):
                        if handler.name:
                            scope.vars[handler.name] = e
                        self.exec_block(handler.body, scope)
                        break
                else:
                    raise
            else:
                self.exec_block(stmt.orelse, scope)
        finally:
            if stmt.finalbody:
                self.exec_block(stmt.finalbody, scope)

    def _matches(self, handler: ast.ExceptHandler, e: Raised, scope: Scope) -> bool:
        if handler.type is None:
            return True
        kinds = self.eval(handler.type, scope)
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        for k in kinds:
            if isinstance(k, ExcClass) and is_subclass(e.type_name, k.name):
                return True
            if isinstance(k, External) and k.dotted.endswith(("PackageNotFoundError", "InvalidVersion")):
                continue
        return False

    # -- imports -----------------------------------------------------------------------------------
    def _exec_import_from(self, stmt: ast.ImportFrom, scope: Scope) -> None:
        base = self.absolute(scope.env.mod, stmt)
        env = self.repo_module(base)
        for alias in stmt.names:
            if alias.name == "*":
                continue  # ModuleEnv.resolve looks through star imports
            bound = alias.asname or alias.name
            if env is not None:
                # a package importing its own submodule (`from . import math` in its __init__.py)
                # binds that submodule: the name it would read is the one this statement binds
                own = env is scope.env and bound == alias.name and \
                    self.module_value_or_none(submodule(base, alias.name)) is not None
                if alias.name in env.binders and not own:
                    scope.vars[bound] = Lazy(lambda env=env, name=alias.name: env.resolve(name))
                    continue
                if env.stars and not own:
                    try:
                        scope.vars[bound] = env.resolve(alias.name)
                        continue
                    except Raised as e:
                        if e.type_name != "NameError":
                            raise
                sub = self.module_value_or_none(submodule(base, alias.name))
                if sub is None:
                    raise Raised("ImportError", f"cannot import name {alias.name!r} from {base!r}")
                scope.vars[bound] = sub
            elif self.package_dir(base):
                sub = self.module_value_or_none(submodule(base, alias.name))
                if sub is None:
                    raise Raised("ImportError", f"cannot import name {alias.name!r} from {base!r}")
                scope.vars[bound] = sub
            else:
                if base == "triton" or base.startswith("triton."):
                    triton_module_exists(base)
                self._optional_import(base)
                scope.vars[bound] = self.attribute(External(base), alias.name, importing=True)

    def _optional_import(self, module: str) -> None:
        """Under `try: ... except ImportError:`, another package (not triton, torch, numpy or the
        standard library) is taken as not installed: the code's own fallback runs, and that is
        said. Whether it is installed on the reviewer's machine is not a fact of the revision."""
        top = module.split(".")[0]
        if self.import_guards and top not in PRESENT_PACKAGES and top not in sys.stdlib_module_names:
            self.assumptions.append(f"import {module}: assumed not installed (the `except ImportError` branch taken)")
            raise Raised("ImportError", f"no module named {module!r}")

    # -- assignment --------------------------------------------------------------------------------
    def assign(self, target: ast.expr, value: Any, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.vars[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = list(self.iterate(value))
            star = [i for i, e in enumerate(target.elts) if isinstance(e, ast.Starred)]
            if star:
                i = star[0]
                after = len(target.elts) - i - 1
                if len(items) < len(target.elts) - 1:
                    raise Raised("ValueError", "not enough values to unpack")
                parts = items[:i] + [items[i:len(items) - after]] + items[len(items) - after:]
            else:
                if len(items) != len(target.elts):
                    raise Raised("ValueError", f"expected {len(target.elts)} values to unpack, got {len(items)}")
                parts = items
            for elt, item in zip(target.elts, parts):
                self.assign(elt.value if isinstance(elt, ast.Starred) else elt, item, scope)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, scope)
            if not isinstance(container, (list, dict)):
                raise Refused("item assignment on a value that is not a list or dict", self.where(scope.env, target))
            container[self.eval(target.slice, scope)] = value
            self.sized(container, 1)
        else:
            raise Refused("assignment to an attribute is not interpreted", self.where(scope.env, target))

    # -- definitions -----------------------------------------------------------------------------
    def function(self, node: ast.FunctionDef | ast.Lambda, scope: Scope) -> Function:
        outer = None if scope.is_module else scope
        name = node.name if isinstance(node, ast.FunctionDef) else "<lambda>"
        decorators: tuple[object, ...] = ()
        if isinstance(node, ast.FunctionDef):
            decorators = tuple(self._decorator(d, scope) for d in node.decorator_list)
        fn = Function(name, node, scope.env, outer, scope.before, decorators,
                      siblings=scope.vars if scope.is_module else None)
        # Python evaluates defaults where the `def` or `lambda` runs: `lambda args, _v=v: _v` in a
        # comprehension keeps each turn's v, not the last one; an error is raised when they are needed
        args = node.args
        try:
            fn.defaults = [self.eval(d, scope) for d in args.defaults]
            fn.kw_defaults = {p.arg: self.eval(d, scope) for p, d in zip(args.kwonlyargs, args.kw_defaults)
                              if d is not None}
        except (Refused, Raised) as e:
            fn.defaults_error = e
        return fn

    def _decorator(self, node: ast.expr, scope: Scope) -> Any:
        """What a decorator is, without calling it: its callee (and whether it was called)."""
        callee = node.func if isinstance(node, ast.Call) else node
        try:
            return self.eval(callee, scope)
        except (Refused, Raised) as e:
            return e

    def klass(self, node: ast.ClassDef, scope: Scope) -> Class:
        bases = [self.eval(b, scope) for b in node.bases]
        is_enum = any(isinstance(b, External) and b.dotted in ("enum.Enum", "enum.IntEnum", "enum.StrEnum")
                      or isinstance(b, Class) and b.is_enum for b in bases)
        # `class Mode(str, enum.Enum)`: a str or int base of an enum makes each member its value
        mixins = [b for b in bases if is_enum and isinstance(b, Builtin) and b.name in ("str", "int")]
        mixed = bool(mixins) or any(isinstance(b, External) and b.dotted in ("enum.IntEnum", "enum.StrEnum")
                                    or isinstance(b, Class) and b.is_enum and b.mixed for b in bases)
        for b in bases:
            if b in mixins:
                continue
            if not (isinstance(b, (Class, External)) and (not isinstance(b, External) or b.dotted.startswith(
                    ("enum.", "builtins.object", "typing.")))):
                raise Refused("a class with a base the evaluator does not know", self.where(scope.env, node))
        inner = Scope(scope.env, scope.before, {}, outer=None if scope.is_module else scope)
        inner.is_module = True  # methods of a class do not close over its namespace
        for b in bases:
            if isinstance(b, Class):
                inner.vars.update(b.namespace)
        for stmt in node.body:
            self.exec_stmt(stmt, inner)
        cls = Class(node.name, inner.vars, is_enum, mixed=mixed,
                    decorators=tuple(self._readable(d, scope) for d in node.decorator_list),
                    fields=tuple((stmt.target.id, self._readable(stmt.annotation, inner)) for stmt in node.body
                                 if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)),
                    module=scope.env.mod.name)
        if is_enum:
            for name, value in list(inner.vars.items()):
                if not name.startswith("_") and not isinstance(value, (Function, Bound)):
                    inner.vars[name] = EnumMember(node.name, name, value, mixed)
        return cls

    def _readable(self, node: ast.expr, scope: Scope) -> object:
        """A class's decorator or field annotation, None where it cannot be read: a class is read
        whatever its decorators are (a `@dataclass` beside the kernels), only `@aggregate` matters."""
        try:
            return self.eval(node, scope)
        except (Refused, Raised):
            return None


def _bound_names(stmt: ast.stmt) -> list[str] | None:
    """The names a statement binds, where that is all it does to the module (a call's statement binds
    none); None for any other statement."""
    if isinstance(stmt, ast.Expr):
        return []
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    simple = isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or targets and all(
        isinstance(t, ast.Name) for t in targets)
    return names_bound(stmt) if simple else None


_STATEMENTS: dict[type, Callable[[StatementsMixin, Any, Scope], None]] = {
    ast.Expr: StatementsMixin._exec_expr,
    ast.Assign: StatementsMixin._exec_assign,
    ast.AnnAssign: StatementsMixin._exec_ann_assign,
    ast.AugAssign: StatementsMixin._exec_aug_assign,
    ast.Return: StatementsMixin._exec_return,
    ast.If: StatementsMixin._exec_if,
    ast.For: StatementsMixin._exec_for,
    ast.While: StatementsMixin._exec_while,
    ast.Break: StatementsMixin._exec_break,
    ast.Continue: StatementsMixin._exec_continue,
    ast.Pass: StatementsMixin._exec_pass,
    ast.Try: StatementsMixin._exec_try,
    ast.Raise: StatementsMixin._exec_raise,
    ast.Assert: StatementsMixin._exec_assert,
    ast.Import: StatementsMixin._exec_import,
    ast.ImportFrom: StatementsMixin._exec_import_from,
    ast.FunctionDef: StatementsMixin._exec_def,
    ast.ClassDef: StatementsMixin._exec_class,
    ast.Global: StatementsMixin._exec_global,
    ast.Nonlocal: StatementsMixin._exec_global,
}


def _statement_handler(stmt: ast.stmt) -> Callable[[StatementsMixin, Any, Scope], None]:
    """The handler for a statement's type; any other statement is refused."""
    return dispatch(_STATEMENTS, stmt) or StatementsMixin._exec_other


def _as_load(target: ast.expr) -> ast.expr:
    node = ast.fix_missing_locations(ast.parse(ast.unparse(target), mode="eval").body)
    ast.copy_location(node, target)
    return node
