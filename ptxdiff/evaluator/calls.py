"""Calls in the interpreted code: repository functions, allowed builtins, bound methods of values.

A repository function is interpreted with its arguments bound as Python would bind them, unless
a decorator the evaluator cannot see through wraps it (a `@jit` function runs on the GPU, not
here). Builtins run for real, but only on values the evaluator knows and within its size limits;
calls into packages that are never imported go to the host mixin.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import operator
from typing import Any

from ptxdiff.evaluator.core import InterpCore
from ptxdiff.evaluator.host import CONSTEXPR_FUNCTIONS, IDENTITY_DECORATORS
from ptxdiff.evaluator.installed import from_triton
from ptxdiff.evaluator.scope import Bound, Function, Scope
from ptxdiff.evaluator.sizes import check_builtin, check_method, check_pow, format_string, range_length
from ptxdiff.evaluator.values import (
    MAX_LEN,
    PLAIN,
    Applied,
    Builtin,
    Class,
    Constexpr,
    DType,
    DTypeQuestion,
    EnumMember,
    ExcClass,
    External,
    FunctionReturn,
    Opaque,
    Partial,
    Raised,
    Refused,
    Version,
)

_ITERATING = {"sum", "any", "all", "sorted", "tuple", "list", "set", "frozenset", "enumerate", "reversed", "dict"}


class CallsMixin(InterpCore):
    """Applies what is called to evaluated arguments: `call`, `call_function`, builtins."""

    def call(self, fn: Any, args: list[object], kwargs: dict[str, object], node: ast.Call | None = None) -> Any:
        if isinstance(fn, Function):
            return self.call_function(fn, args, kwargs)
        if isinstance(fn, Bound):
            return self.call_function(fn.func, [fn.first, *args], kwargs)
        if isinstance(fn, Builtin):
            return self._builtin(fn.name, args, kwargs, node)
        if isinstance(fn, ExcClass):
            return Raised(fn.name, str(args[0]) if args else "")
        if isinstance(fn, External):
            return self.external_call(fn.dotted, args, kwargs)
        if isinstance(fn, Applied):   # a triton decorator applied by a call: the function, marked
            if len(args) != 1 or kwargs or not isinstance(args[0], Function):
                raise Refused(f"calling {fn.decorator.dotted}(...) on something other than a function, which is host code")
            return dataclasses.replace(args[0], decorators=(*args[0].decorators, fn))
        if isinstance(fn, Class):
            if fn.is_enum and len(args) == 1:
                for m in fn.namespace.values():
                    if isinstance(m, EnumMember) and m.value == args[0]:
                        return m
                raise Raised("ValueError", f"{args[0]!r} is not a valid {fn.name}")
            raise Refused(f"instances of class {fn.name} are not interpreted")
        if isinstance(fn, Opaque):
            return None
        if isinstance(fn, DTypeQuestion):
            return from_triton(fn.method(*args))
        if isinstance(fn, Partial):
            return self.call(fn.fn, [*fn.args, *args], {**fn.kwargs, **kwargs}, node)
        if callable(fn) and getattr(fn, "__self__", None) is not None and isinstance(fn.__self__, PLAIN):
            return self._method(fn, [self._pyfunc(a) for a in args], {k: self._pyfunc(v) for k, v in kwargs.items()})
        raise Refused(f"calling {fn!r}, which is host code")

    def _method(self, fn: Any, args: list[object], kwargs: dict[str, object]) -> Any:
        """A bound method of a plain value (list.append, str.format): safe builtin code, once what
        it would build or grow its value to is known to be within bounds (sizes.py)."""
        owner, name = fn.__self__, fn.__name__
        try:
            if isinstance(owner, str) and name == "format":
                return self.sized(format_string(owner, args, kwargs, self.plain_or_known))
            check_method(owner, name, args, kwargs)
            before = len(owner) if isinstance(owner, (list, dict, set)) else 0
            result = fn(*args, **kwargs)
            if isinstance(owner, (list, dict, set)):   # a method that grew its value in place
                self.sized(owner, max(0, len(owner) - before))
            return self.sized(result)
        except (Raised, Refused):
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as e:
            raise Raised(type(e).__name__, str(e)) from None

    def call_function(self, fn: Function, args: list[object], kwargs: dict[str, object]) -> Any:
        for d in fn.decorators:
            if isinstance(d, (Refused, Raised)):
                raise Refused(f"{fn.name} has a decorator the evaluator cannot read")
            if isinstance(d, External) and (d.dotted in IDENTITY_DECORATORS or d.dotted in CONSTEXPR_FUNCTIONS):
                continue   # a constexpr function called from another: Python calls the function itself
            if isinstance(d, Applied) and d.decorator.dotted == "triton.jit" or \
                    isinstance(d, External) and d.dotted.startswith(("triton.jit", "triton.runtime.jit", "triton.language")):
                raise Refused(f"{fn.name} is a @jit function: it runs on the GPU, not on the host")
            raise Refused(f"{fn.name} is wrapped by {d!r}, which the evaluator does not interpret")
        node = fn.node
        a = node.args
        if a.vararg is not None or a.kwarg is not None or a.posonlyargs:
            local = self._bind_general(fn, args, kwargs)
        else:
            local = self._bind_simple(fn, args, kwargs)
        # a function reads its module's globals as they are once the module has run
        scope = Scope(fn.env, None, local, outer=fn.outer)
        self.depth += 10
        try:
            if self.depth > 200:
                raise Refused(f"calls nested too deeply ({fn.name})")
            if isinstance(node, ast.Lambda):
                return self.eval(node.body, scope)
            try:
                self.exec_block(node.body, scope)
            except FunctionReturn as r:
                return r.value
            return None
        finally:
            self.depth -= 10

    def _bind_simple(self, fn: Function, args: list[object], kwargs: dict[str, object]) -> dict[str, object]:
        """Arguments bound to a signature without *args, **kwargs or positional-only parameters."""
        a = fn.node.args
        names = [p.arg for p in a.args]
        defaults = _defaults(fn)
        local: dict[str, object] = {}
        if len(args) > len(names):
            raise Raised("TypeError", f"{fn.name}() takes {len(names)} positional arguments")
        local.update(zip(names, args))
        for k, v in kwargs.items():
            if k in local or k not in names and k not in [p.arg for p in a.kwonlyargs]:
                raise Raised("TypeError", f"{fn.name}() got an unexpected or repeated argument {k!r}")
            local[k] = v
        first_default = len(names) - len(defaults)
        for i, n in enumerate(names):
            if n not in local:
                if i >= first_default:
                    local[n] = defaults[i - first_default]
                else:
                    raise Raised("TypeError", f"{fn.name}() missing argument {n!r}")
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if p.arg not in local:
                if d is None:
                    raise Raised("TypeError", f"{fn.name}() missing argument {p.arg!r}")
                local[p.arg] = fn.kw_defaults[p.arg]
        return local

    def _bind_general(self, fn: Function, args: list[object], kwargs: dict[str, object]) -> dict[str, object]:
        """Arguments bound to a signature with *args, **kwargs or positional-only parameters."""
        a = fn.node.args
        positional = [p.arg for p in [*a.posonlyargs, *a.args]]
        defaults = _defaults(fn)
        local = dict(zip(positional, args))
        if a.vararg is not None:
            local[a.vararg.arg] = tuple(args[len(positional):])
        elif len(args) > len(positional):
            raise Raised("TypeError", f"{fn.name}() takes {len(positional)} positional arguments")
        extra = {}
        for k, v in kwargs.items():
            if k in positional or k in [p.arg for p in a.kwonlyargs]:
                local[k] = v
            elif a.kwarg is not None:
                extra[k] = v
            else:
                raise Raised("TypeError", f"{fn.name}() got an unexpected argument {k!r}")
        if a.kwarg is not None:
            local[a.kwarg.arg] = extra
        first_default = len(positional) - len(defaults)
        for i, n in enumerate(positional):
            if n not in local:
                if i < first_default:
                    raise Raised("TypeError", f"{fn.name}() missing argument {n!r}")
                local[n] = defaults[i - first_default]
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if p.arg not in local:
                if d is None:
                    raise Raised("TypeError", f"{fn.name}() missing argument {p.arg!r}")
                local[p.arg] = fn.kw_defaults[p.arg]
        return local

    def _pyfunc(self, v: Any) -> Any:
        """Our functions as Python callables (a sort key), so builtin methods can call back in."""
        if isinstance(v, (Function, Bound, Builtin)):
            return lambda *a, **k: self.call(v, list(a), k)
        return v

    def _builtin(self, name: str, args: list[Any], kwargs: dict[str, Any], node: ast.Call | None) -> Any:
        args = [a.value if isinstance(a, Constexpr) else a for a in args]
        if name == "isinstance":
            return self._isinstance(*args)
        if name in ("hasattr", "getattr"):
            try:
                value = self.attribute(args[0], args[1])
            except Raised:
                if name == "hasattr":
                    return False
                if len(args) > 2:
                    return args[2]
                raise
            return True if name == "hasattr" else value
        if name in ("id", "hash", "iter", "next", "type", "callable"):
            raise Refused(f"{name}() is not evaluated")
        if name == "len" and isinstance(args[0], Class) and args[0].is_enum:
            return len(self.iterate(args[0]))
        if name in ("map", "filter"):
            fn, *its = args
            seqs = [self.iterate(i) for i in its]
            if name == "map":
                return self.sized([self.call(fn, list(items), {}, node) for items in zip(*seqs)])
            return self.sized([x for x in seqs[0] if self.truth(x if fn is None else self.call(fn, [x], {}, node))])
        if name == "range":
            try:
                r = range(*args)
            except (TypeError, ValueError) as e:
                raise Raised(type(e).__name__, str(e)) from None
            if range_length(r) > MAX_LEN:
                raise Refused(f"a range of more than {MAX_LEN} elements")
            return r
        if name == "pow" and (len(args) == 2 or len(args) == 3 and args[2] is None):
            return self.binop(operator.pow, args[0], args[1])   # pow(a, b, None) is a ** b
        if name == "pow":
            check_pow(args)
        if name in ("sorted", "min", "max") and "key" in kwargs:
            kwargs["key"] = self._pyfunc(kwargs["key"])
        if name == "bool" and len(args) == 1 and not kwargs:
            return self.truth(args[0])
        if name == "dict" and (not args or len(args) == 1 and isinstance(args[0], dict)):
            # a container, like `{...}`: it holds any value (`heuristics(dict(EVEN=lambda args: ...))`)
            return self.sized({**(args[0] if args else {}), **kwargs})
        if name == "zip":
            args = [self.iterate(a) for a in args]
        elif args and (name in _ITERATING or name in ("min", "max") and len(args) == 1) \
                and not isinstance(args[0], (str, bytes)):
            args[0] = self.iterate(args[0])
        for a in [*args, *kwargs.values()]:
            if not isinstance(a, (*PLAIN, DType, Version, EnumMember)) and not callable(a):
                raise Refused(f"{name}() of {a!r}")
        check_builtin(name, args, kwargs)
        try:
            value = getattr(builtins, name)(*args, **kwargs)
        except (TypeError, ValueError, KeyError, IndexError, OverflowError) as e:
            raise Raised(type(e).__name__, str(e)) from None
        if name in ("enumerate", "zip", "reversed"):
            value = list(value)
        return self.sized(value)

    def _isinstance(self, value: Any, kinds: Any) -> bool:
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        pytypes = {"int": int, "float": float, "str": str, "bool": bool, "list": list, "tuple": tuple,
                   "dict": dict, "set": set}
        for k in kinds:
            if isinstance(k, Builtin) and k.name in pytypes:
                if isinstance(value, pytypes[k.name]):
                    return True
            elif isinstance(k, Class):
                if isinstance(value, EnumMember) and value.cls_name == k.name:
                    return True
            else:
                raise Refused(f"isinstance against {k!r}")
        return False


# `isinstance()` with the wrong number of arguments fails in Python as a call of this method,
# and the message names it: it keeps the name it had before Interp was split into mixins
CallsMixin._isinstance.__qualname__ = "Interp._isinstance"


def _defaults(fn: Function) -> list[object]:
    """A function's default values as they were where it was defined; the error if they failed."""
    if fn.defaults_error is not None:
        raise fn.defaults_error
    return fn.defaults
