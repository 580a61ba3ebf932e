"""The interpreter's state, its modules, and the operations on values every part of it shares.

`Interp` is one class assembled from mixins (statements, expressions, attributes, calls, host),
all derived from `InterpCore`: it holds the state (modules, step count, assumptions), answers
where a module is and what `import x` gives, and applies Python's operators to the values the
evaluator knows, refusing anything else. What one mixin needs from another is declared here,
abstract.
"""

from __future__ import annotations

import ast
import operator
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

from ptxdiff.discovery.spelling import Spelling
from ptxdiff.evaluator.installed import is_true_object, triton_module_exists
from ptxdiff.evaluator.scope import Bound, Function, Module, ModuleEnv, Scope
from ptxdiff.evaluator.sizes import check_printf
from ptxdiff.evaluator.values import (
    DICT_VIEWS,
    MAX_BUILT,
    MAX_INT_BITS,
    MAX_LEN,
    MAX_STEPS,
    PLAIN,
    Class,
    Constexpr,
    DType,
    EnumMember,
    External,
    Opaque,
    Props,
    Raised,
    Refused,
    Target,
    TritonConfig,
    ValueT,
    Version,
    check_size,
    unmixed,
)
from ptxdiff.source.modules import AboveTop, ModuleIndex, ParsedModule
from ptxdiff.source.syntax import COMPARISONS
from ptxdiff.targets import Device

BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any] | None] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
    ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.BitAnd: operator.and_, ast.MatMult: None}

HandlerT = TypeVar("HandlerT")


def dispatch(table: dict[type, HandlerT], node: ast.AST) -> HandlerT | None:
    """The handler of a node's type, as `isinstance` would pick it (a subclass finds its base's)."""
    handler = table.get(type(node))
    if handler is None:
        for kind in type(node).__mro__[1:]:
            if kind in table:
                return table[kind]
    return handler


class InterpCore(ABC):
    """Evaluates one snapshot's module-level values for one compile target: state and shared parts."""

    def __init__(self, index: ModuleIndex, device: Device):
        self.index, self.device = index, device
        self.spelling = Spelling(index)    # what names mean to triton (discovery's resolver)
        self._envs: dict[str, ModuleEnv] = {}
        self.steps = 0
        self.built = 0                     # elements of every container and string built (MAX_BUILT)
        self.depth = 0                     # nesting of expressions and calls being evaluated
        self.assumptions: list[str] = []   # what was assumed instead of refused (shown with the rows)
        self.import_guards = 0             # enclosing `try` blocks that catch ImportError
        self.used: list[str] = []          # assumptions behind the values resolved since the caller cleared it

    # -- what the mixins provide each other ---------------------------------------------------------
    @abstractmethod
    def eval(self, node: ast.expr, scope: Scope) -> Any:
        """The value of an expression."""

    @abstractmethod
    def exec_block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        """Run statements in a scope."""

    @abstractmethod
    def attribute(self, obj: Any, name: str, importing: bool = False) -> Any:
        """`obj.name`."""

    @abstractmethod
    def assign(self, target: ast.expr, value: Any, scope: Scope) -> None:
        """Bind a value to an assignment target."""

    @abstractmethod
    def call(self, fn: Any, args: list[object], kwargs: dict[str, object], node: ast.Call | None = None) -> Any:
        """`fn(*args, **kwargs)`."""

    @abstractmethod
    def function(self, node: ast.FunctionDef | ast.Lambda, scope: Scope) -> Function:
        """A `def` or `lambda` as a value."""

    @abstractmethod
    def external_call(self, dotted: str, args: list[object], kwargs: dict[str, object]) -> Any:
        """A call into a package that is not imported."""

    @abstractmethod
    def external_attribute(self, obj: External, name: str, importing: bool) -> Any:
        """An attribute of a package that is not imported."""

    # -- modules ---------------------------------------------------------------------------------
    def env(self, path: str) -> ModuleEnv:
        if path not in self._envs:
            mod = self.index.parse(path)
            if mod.error:
                raise Refused(mod.error)
            self._envs[path] = ModuleEnv(self, mod)
        return self._envs[path]

    def repo_module(self, dotted: str) -> ModuleEnv | None:
        path = self.index.path_of(dotted)
        return self.env(path) if path else None

    def absolute(self, mod: ParsedModule, stmt: ast.ImportFrom) -> str:
        try:
            return self.index.absolute(mod, stmt)
        except AboveTop as e:
            raise Refused(str(e)) from None

    def star_target(self, mod: ParsedModule, stmt: ast.ImportFrom, name: str) -> ModuleEnv | None:
        """The repository module a star import of `mod` takes `name` from (ModuleIndex's rule)."""
        path = self.index.star_provides(mod, stmt, name)
        return self.env(path) if path else None

    def where(self, env: ModuleEnv, node: ast.AST) -> str:
        line = getattr(node, "lineno", None)
        text = ast.unparse(node).splitlines()[0] if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) \
            else f"def {node.name}" if isinstance(node, ast.FunctionDef) else f"class {node.name}"
        if len(text) > 120:
            text = text[:117] + "..."
        return f"{env.mod.path}:{line}: `{text}`" if line else f"{env.mod.path}: `{text}`"

    def module_value(self, dotted: str) -> Module | External:
        """What `import dotted` gives: a repository module, an External for anything else.
        Triton's own modules are looked up for real (they are the tool's, not the repository's),
        so `try: from triton.language.extra.libdevice import x / except ImportError` works."""
        env = self.repo_module(dotted)
        if env is not None:
            return Module(env)
        if self.package_dir(dotted):
            return Module(self._namespace_env(dotted))
        if dotted == "triton" or dotted.startswith("triton."):
            triton_module_exists(dotted)
        return External(dotted)

    def package_dir(self, dotted: str) -> bool:
        return self.index.namespace(dotted)

    def _namespace_env(self, dotted: str) -> ModuleEnv:
        key = f"<namespace {dotted}>"
        if key not in self._envs:
            self._envs[key] = ModuleEnv(self, ParsedModule(path=dotted.replace(".", "/"), name=dotted, tree=ast.Module([], [])))
        return self._envs[key]

    def attribute_of_module(self, module: Module, name: str) -> Any:
        env = module.env
        if name in env.binders or env.stars:
            try:
                return env.resolve(name)
            except Raised as e:
                if e.type_name != "NameError":
                    raise
        sub = self.module_value_or_none(f"{env.mod.name}.{name}")
        if sub is not None:
            return sub
        raise Raised("AttributeError", f"module {env.mod.name!r} has no attribute {name!r}")

    def module_value_or_none(self, dotted: str) -> Module | None:
        env = self.repo_module(dotted)
        if env is not None:
            return Module(env)
        if self.package_dir(dotted):
            return Module(self._namespace_env(dotted))
        return None

    def sized(self, value: ValueT, grown: int | None = None) -> ValueT:
        """`value`, once check_size passed it and the elements it holds (or `grown`: those a value
        grown in place gained) are counted against MAX_BUILT. One value is bounded by MAX_LEN; this
        bounds them all: `[[0] * 100000 for _ in range(100000)]` is refused after 200 rows."""
        check_size(value)
        if grown is None:
            grown = len(value) if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) else 0
        self.built += grown
        if self.built > MAX_BUILT:
            raise Refused(f"more than {MAX_BUILT} elements built in all (values too large to interpret)")
        return value

    def tick(self, node: ast.AST, env: ModuleEnv) -> None:
        """Count one evaluation step; refuse past MAX_STEPS."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise Refused(f"more than {MAX_STEPS} evaluation steps (a loop too long to interpret)",
                          self.where(env, node))

    # -- operations on values ------------------------------------------------------------------------
    def hashable(self, items: list[ValueT]) -> list[ValueT]:
        for item in items:
            try:
                hash(item)
            except TypeError:
                raise Raised("TypeError", "unhashable type") from None
        return items

    def truth(self, v: Any) -> bool:
        if isinstance(v, External):
            if is_true_object(v.dotted):   # `getattr(tl, "barrier", None) or tl.thread_barrier`
                return True
            raise Refused(f"the truth of {v.dotted}, which is host code")
        if isinstance(v, (Function, Class, Module, Bound, EnumMember, Constexpr, DType, TritonConfig, Version,
                          Opaque, Target, Props)):
            return True if not isinstance(v, Constexpr) else bool(v.value)
        self.plain(v)
        return bool(v)

    def plain(self, v: Any) -> None:
        """Refuse a value that is not a plain Python value."""
        if not isinstance(v, PLAIN):
            raise Refused(f"an operation on {v!r}, which the evaluator does not compute")

    def plain_or_known(self, v: Any) -> None:
        if not isinstance(v, (*PLAIN, DType, Version, EnumMember, Constexpr)):
            self.plain(v)

    def binop(self, op: Callable[[Any, Any], Any], a: Any, b: Any) -> Any:
        a, b = unmixed(a), unmixed(b)
        if isinstance(a, Constexpr):
            a = a.value
        if isinstance(b, Constexpr):
            b = b.value
        self.plain(a)
        self.plain(b)
        if op is operator.pow and isinstance(b, int) and isinstance(a, int) and abs(a) > 1 and \
                b * max(1, abs(a).bit_length()) > MAX_INT_BITS:
            raise Refused("a power too large to compute")
        if op is operator.lshift and isinstance(b, int) and b > MAX_INT_BITS:
            raise Refused("a shift too large to compute")
        sequences = (str, bytes, list, tuple)
        if op is operator.mul and isinstance(a, sequences) and isinstance(b, int) and len(a) * b > MAX_LEN \
                or op is operator.mul and isinstance(b, sequences) and isinstance(a, int) and len(b) * a > MAX_LEN \
                or op is operator.add and isinstance(a, sequences) and isinstance(b, sequences) \
                and len(a) + len(b) > MAX_LEN:
            raise Refused(f"a value of more than {MAX_LEN} elements")
        if op is operator.mod and isinstance(a, (str, bytes)):
            check_printf(a, b)   # `"%10000000000d" % 1` asks for its width before it is refused
        try:
            return self.sized(op(a, b))
        except ZeroDivisionError as e:
            raise Raised("ZeroDivisionError", str(e)) from None
        except (TypeError, ValueError, OverflowError, KeyError) as e:
            raise Raised(type(e).__name__, str(e)) from None

    def compare(self, op: type[ast.cmpop], a: Any, b: Any) -> bool:
        if op in (ast.Is, ast.IsNot):
            same = a is b or (a is None and b is None)
            if isinstance(a, External) or isinstance(b, External):
                if a is None or b is None:
                    same = False  # an external object is never None
                else:
                    raise Refused("identity of host objects")
            return same if op is ast.Is else not same
        a, b = unmixed(a), unmixed(b)
        if isinstance(a, Constexpr):
            a = a.value
        if isinstance(b, Constexpr):
            b = b.value
        for v in (a, b):
            if isinstance(v, External):
                if op in (ast.Eq, ast.NotEq) and isinstance(a, External) and isinstance(b, External):
                    return (a == b) == (op is ast.Eq)
                raise Refused(f"a comparison with {v.dotted}, which is host code")
            if isinstance(v, (Function, Module, Opaque)):
                if op in (ast.Eq, ast.NotEq):
                    return (a is b) == (op is ast.Eq)
                raise Refused("a comparison of host objects")
        try:
            return bool(COMPARISONS[op](a, b))
        except TypeError as e:
            raise Raised("TypeError", str(e)) from None

    def iterate(self, v: Any) -> list[Any]:
        """The elements of a value the evaluator can iterate, as a list; refused otherwise."""
        if isinstance(v, Constexpr):
            v = v.value
        if isinstance(v, Class) and v.is_enum:
            return [m for m in v.namespace.values() if isinstance(m, EnumMember)]
        if isinstance(v, (list, tuple, str, bytes, range, set, frozenset, *DICT_VIEWS)):
            # mypy loses the starred tuple: `v` is a sized iterable here
            if len(v) > MAX_LEN:  # type: ignore[arg-type]
                raise Refused(f"iterating over more than {MAX_LEN} elements")
            items: list[Any] = list(v)  # type: ignore[call-overload]
            return items
        if isinstance(v, dict):
            return list(v)
        raise Refused(f"iterating over {v!r}, which the evaluator does not compute")

    def subscript(self, container: Any, index: Any) -> Any:
        if isinstance(container, Constexpr):
            container = container.value
        if isinstance(container, Class) and container.is_enum:
            member = container.namespace.get(index)
            if not isinstance(member, EnumMember):
                raise Raised("KeyError", repr(index))
            return member
        if isinstance(container, External):
            raise Refused(f"indexing {container.dotted}, which is host code")
        if isinstance(container, Props):
            return container.item(index)
        self.plain(container)
        try:
            return self.sized(container[index]) if isinstance(index, slice) else container[index]
        except KeyError as e:
            raise Raised("KeyError", str(e)) from None
        except IndexError as e:
            raise Raised("IndexError", str(e)) from None
        except TypeError as e:
            raise Raised("TypeError", str(e)) from None
