"""The repository's host code that triton calls while compiling a kernel: interpreted by the
evaluator on triton's arguments, never executed (`@tl.constexpr_function`s; under a revision
read as triton 2.x, any plain function a kernel calls, as 2.x called it)."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from typing import Any

from ptxdiff.evaluator.installed import from_triton
from ptxdiff.evaluator.interp import Interp
from ptxdiff.evaluator.scope import Function
from ptxdiff.evaluator.values import External, Raised, Refused


def interpreted(interp: Interp, fn: Function, convert: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """A callable that runs the evaluator on `fn` with triton's arguments, its result converted
    for triton (`convert`, the builder's)."""
    plain = dataclasses.replace(fn, decorators=())

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            result = interp.call_function(plain, [from_triton(a) for a in args],
                                          {k: from_triton(v) for k, v in kwargs.items()})
        except (Refused, Raised) as e:
            raise RuntimeError(f"{fn.name}: {e}") from None
        return convert(result, fn.name)
    call.__name__ = call.__qualname__ = fn.name
    return call


def constexpr_function(interp: Interp, fn: Function, convert: Callable[[Any, str], Any]) -> Any:
    """`@tl.constexpr def f(dtype): ...` (or `@triton.constexpr_function`): the kernel gets the
    interpreted callable as triton takes such a function."""
    import triton
    import triton.language as tl

    call = interpreted(interp, fn, convert)
    if any(isinstance(d, External) and d.dotted.endswith("constexpr_function") for d in fn.decorators) \
            and hasattr(triton, "constexpr_function"):
        wrapped = triton.constexpr_function(call)
        # its hash (triton's dependency finder reads a jit callable's source and what it names) is
        # the repository function's text: triton never reads this module's `call` and its closure
        text = interp.index.text(fn.env.mod.path)
        wrapped.hash = hashlib.sha256(f"{fn.env.mod.path}\0{fn.name}\0{text}".encode()).hexdigest()
        return wrapped
    return tl.constexpr(call)


def plain_function(interp: Interp, fn: Function, convert: Callable[[Any, str], Any]) -> Any:
    """A plain function a kernel calls, under a revision read as triton 2.x (which called it while
    compiling): the interpreted callable held as a constexpr, which the stand-in's code generator
    unwraps and calls, and its dependency finder passes as triton's own."""
    import triton.language as tl

    return tl.constexpr(interpreted(interp, fn, convert))
