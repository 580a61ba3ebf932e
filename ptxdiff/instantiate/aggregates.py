"""A repository's `@aggregate` class (triton 3.4+, Gluon): a value type of triton's, built as triton builds it.

`@aggregate class State: index: tl.tensor` makes a class whose values a kernel creates
(`State(tl.program_id(0))`), passes around and calls jit methods on (`state.advance()`). A plain
holder of the class's members (the builder's `_class`, for classes of kernels) is no type triton
can instantiate: every kernel that made one failed with "'module' object is not callable". Here
the class is given to triton's own decorator (the compiling toolchain's) with its fields'
annotations and defaults as the evaluator read them, its jit methods as the builder builds them
(never over a name triton's type has: `type`, `_flatten_ir`), and the module and name Python
gives it: triton names the type's compiled helpers by them, and `a.State` and `b.State` compiled
as one type would hide a change to either.

Its `__init__` is the repository's Python, which triton runs while it compiles. ptxdiff runs no
repository code, so only the constructor that stores its arguments (`self.index = index`,
`self.BLOCK = gl.constexpr(BLOCK)`: what aggregates' constructors are) and constants
(`self.NUM_BITS = tl.constexpr(NUM_BITS)` of a module constant, a literal: values the restricted
evaluator reads, as it reads a kernel's globals) is taken, as a function of ptxdiff's that stores
the same arguments and values in the same fields; any other constructor is refused with its
reason. No constructor: triton's own, which stores the fields in order.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from ptxdiff.evaluator.installed import real_object
from ptxdiff.evaluator.scope import Function
from ptxdiff.evaluator.values import Class, External, Raised
from ptxdiff.source.syntax import dotted_name

Store = tuple[str, str, bool]   # field, the parameter it stores, whether wrapped in a constexpr
Constant = tuple[str, ast.expr, bool]   # field, the constant expression it stores, whether wrapped
Constructor = tuple[tuple[str, ...], tuple[Store, ...], tuple[Constant, ...]]


def is_aggregate(value: Class) -> bool:
    """Whether a decorator of the class is triton's `_aggregate` on the compiling triton, however
    spelled (`triton.aggregate`, `triton.language.core._aggregate`, Gluon's `aggregate`)."""
    from triton.language import core

    for d in value.decorators:
        if isinstance(d, External) and d.dotted.startswith("triton."):
            try:
                if real_object(d.dotted) is core._aggregate:
                    return True
            except Raised:
                continue
    return False


def _constant(node: ast.expr, params: list[str]) -> bool:
    """A literal, a module's name (`NUM_BITS`, `cfg.WIDTH`) or arithmetic of them: no parameter, no
    `self`, no call."""
    return all(isinstance(n, (ast.Constant, ast.Name, ast.Attribute, ast.Load, ast.BinOp, ast.UnaryOp, ast.operator,
                              ast.unaryop)) for n in ast.walk(node)) and \
        not any(isinstance(n, ast.Name) and (n.id in params or n.id == "self") for n in ast.walk(node)) and \
        not any(isinstance(n, ast.Attribute) and n.attr.startswith("_") for n in ast.walk(node))


def _stored(node: ast.stmt, params: list[str]) -> Store | Constant | None:
    """`self.F = P` or `self.F = <lang>.constexpr(P)` of a parameter P, or of a constant; else None."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target, value = node.targets[0], node.value
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self") \
            or target.attr.startswith("__"):
        return None
    wrapped = isinstance(value, ast.Call) and dotted_name(value.func)[-1:] == ["constexpr"] and len(value.args) == 1 \
        and not value.keywords
    if wrapped:
        assert isinstance(value, ast.Call)
        value = value.args[0]
    if isinstance(value, ast.Name) and value.id in params:
        return target.attr, value.id, wrapped
    if _constant(value, params):
        return target.attr, value, wrapped
    return None


def constructor_stores(init: Function) -> Constructor | str:
    """The parameters (after `self`), the stores of arguments and the stores of constants of a
    constructor that does nothing else; else why it is not taken."""
    node = init.node
    assert isinstance(node, ast.FunctionDef)
    args = node.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults or not args.args:
        return "its __init__ takes other than plain parameters"
    params = [a.arg for a in args.args[1:]]
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    stores = [_stored(s, params) for s in body]
    if any(s is None for s in stores):
        return "its __init__ does more than store its arguments and constants (Python that triton runs, which " \
               "ptxdiff does not)"
    return (tuple(params), tuple(s for s in stores if s is not None and isinstance(s[1], str)),
            tuple(s for s in stores if s is not None and isinstance(s[1], ast.expr)))


def _storing(params: tuple[str, ...], stores: tuple[Store, ...], constants: dict[str, Any],
             constexpr: type) -> Callable[..., None]:
    """The constructor: each field set from its argument, as the repository's stores it, and the
    constant fields set to their values."""
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given = {**dict(zip(params, args)), **kwargs}
        for field, param, wrapped in stores:
            setattr(self, field, constexpr(given[param]) if wrapped else given[param])
        for field, value in constants.items():
            setattr(self, field, value)
    # triton hashes an aggregate by its annotations and members; this function is ptxdiff's, the
    # same for every class (what it stores is the class's text, in the kernel's fingerprint, the
    # key of every result): triton's dependency finder skips it as one of its own
    __init__.__triton_builtin__ = True   # type: ignore[attr-defined]
    return __init__


def build(value: Class, module: str, convert: Callable[[object, str], Any], decorate: Callable[[type], Any],
          evaluate: Callable[[ast.expr, Function], object]) -> tuple[Any, Callable[[], None]] | str:
    """The class as triton's aggregate (`decorate`: the toolchain's `_aggregate`), and what puts
    its members on it (`convert`, the builder's: jit methods built as the builder builds them)
    once it can be named, for a method that returns `State(...)`; else why it cannot be built.
    `evaluate` reads a constant its constructor stores (the restricted evaluator)."""
    import triton.language as tl

    names = [n for n, _ in value.fields] + [n for n, m in value.namespace.items() if n != "__init__" and
                                            isinstance(m, Function)]
    if any(n.startswith("__") for n in names):
        return "a field or method named like Python's own (`__...`), which no kernel may reach"
    annotations: dict[str, Any] = {}
    for name, annotation in value.fields:
        converted = convert(annotation, name)
        if not isinstance(converted, type):
            return f"the type of its field {name!r} is no triton type ptxdiff can read"
        annotations[name] = converted
    # named as Python names it (`a.State`, `b.State`): triton names the type's helpers by its module
    # and name, and two aggregates of one name compiled as one would hide a change to either
    body: dict[str, Any] = {"__annotations__": annotations, "__qualname__": value.name, "__module__": module}
    for name in annotations:   # a field's default (`B: tl.constexpr = 4`)
        if name in value.namespace and not isinstance(value.namespace[name], Function):
            default = convert(value.namespace[name], name)
            if default is None:
                return f"the default of its field {name!r} is no value ptxdiff can give a kernel"
            body[name] = default
    init = value.namespace.get("__init__")
    if isinstance(init, Function):
        made = constructor_stores(init)
        if isinstance(made, str):
            return made
        params, stores, constant_stores = made
        constants: dict[str, Any] = {}
        for field, expr, wrapped in constant_stores:
            try:
                converted = convert(evaluate(expr, init), field)
            except Exception as exc:   # the evaluator's refusal, with its reason
                return f"the value its __init__ stores in {field!r}: {exc}"
            if converted is None:
                return f"the value its __init__ stores in {field!r} is no value ptxdiff can give a kernel"
            constants[field] = tl.constexpr(converted) if wrapped and not isinstance(converted, tl.constexpr) \
                else converted
        body["__init__"] = _storing(params, stores, constants, tl.constexpr)
    built = decorate(type(value.name, (), body))

    def fill() -> None:
        for name, member in value.namespace.items():
            if name in vars(built):   # triton's own (`type`, `_flatten_ir`, `hash_attrs`), which it keeps too
                continue
            if isinstance(member, Function) and name != "__init__" and (made := convert(member, name)) is not None:
                setattr(built, name, made)
                if hasattr(built, "hash_attrs"):   # triton 3.6+: what its cache key reads of the class
                    built.hash_attrs = [*built.hash_attrs, made]
    return built, fill
