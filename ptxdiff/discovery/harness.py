"""Device functions compiled inside an elementwise harness: the parameters that harness takes.

A `@triton.jit` function that no launch site launches, and that a wrapper decorator of the
repository turns into kernels (`@pointwise_dynamic` over `@triton.jit`) or that returns values
(an entry point cannot: triton fails to lower its `return`), is never a kernel by itself: it is
compiled inside a harness that loads each input, calls it and stores each output. A pointer it
takes (`bisect_left(sorted_ptr, targets, N)`, which loads through it and returns) is the harness's
own pointer, handed on as it is.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from ptxdiff.discovery.decorators import TRITON_DECORATORS
from ptxdiff.discovery.hints import Hint
from ptxdiff.discovery.params import INTEGER_OPS, Param
from ptxdiff.source.syntax import dotted_name, walk


def _wrapped(fn: ast.FunctionDef) -> bool:
    """A decorator of the repository's own wraps this jit function (not autotune-like)."""
    for dec in fn.decorator_list:
        chain = dotted_name(dec)
        keywords = dec.keywords if isinstance(dec, ast.Call) else []
        if chain and chain[-1] not in TRITON_DECORATORS and not any(k.arg == "configs" for k in keywords):
            return True
    return False


def _outputs(fn: ast.FunctionDef) -> int:
    """How many values a device function returns (a tuple of k, or one; 0 when none)."""
    counts = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 1
              for r in walk(fn) if isinstance(r, ast.Return) and r.value is not None}
    return max(counts) if counts else 0


def _integer_operands(fn: ast.FunctionDef, helpers: Mapping[str, ast.FunctionDef],
                      seen: frozenset[str] = frozenset()) -> set[str]:
    """Names used in shifts, bit operations, // or %: integer values; and names passed to a jit
    helper (`helpers`, by name) where it uses that parameter so (an `argsort(x, ids)` whose
    `ids ^ ...` is two helpers down)."""
    found = {side.id for n in walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, INTEGER_OPS)
             for side in (n.left, n.right) if isinstance(side, ast.Name)} | {
        n.operand.id for n in walk(fn) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert)
        and isinstance(n.operand, ast.Name)}
    calls = [(n, helpers[n.func.id]) for n in walk(fn)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in helpers]
    for call, callee in calls:
        if callee.name not in seen:
            inner = _integer_operands(callee, helpers, seen | {fn.name})
            passed = [*zip((a.arg for a in callee.args.args), call.args), *((k.arg, k.value) for k in call.keywords)]
            found |= {arg.id for param, arg in passed if param in inner and isinstance(arg, ast.Name)}
    return found


# reductions whose second positional argument is the axis (`tl.max(x, 1)`)
REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "cumsum", "cumprod", "xor_sum", "associative_scan"}
BLOCK_2D = 64   # each side of a two-dimensional harness's block


def harness_rank(fn: ast.FunctionDef) -> int:
    """How many dimensions the harness's blocks have: 2 where the function reduces along axis 1
    (`tl.max(x, axis=1)[:, None]`: a row softmax takes tiles), else 1."""
    axes = [k.value for n in walk(fn) if isinstance(n, ast.Call) for k in n.keywords if k.arg == "axis"]
    axes += [n.args[1] for n in walk(fn) if isinstance(n, ast.Call) and len(n.args) > 1
             and dotted_name(n.func)[-1:] and dotted_name(n.func)[-1] in REDUCTIONS]
    return 2 if any(isinstance(a, ast.Constant) and a.value == 1 for a in axes) else 1


def harness_params(params: tuple[Param, ...], outputs: int, integers: frozenset[str] | set[str] = frozenset(),
                   rank: int = 1) -> tuple[Param, ...]:
    """The elementwise harness around a device function: a pointer per input (`x` -> `x_ptr`,
    `*i32` for values used as integers, else `*fp32`; a pointer param is handed on as it is), its
    constexprs as they are, a pointer per output, the element count and a block size (the side of
    a square tile where `rank` is 2)."""
    inputs = tuple(p if _pointer(p) else
                   Param(f"{p.name}_ptr", False, "*i32" if p.name in integers or p.kind == "i32" else "*fp32")
                   for p in params if not p.constexpr)
    loaded = [q for p, q in zip((p for p in params if not p.constexpr), inputs) if not _pointer(p)]
    kind = "*i32" if loaded and all(p.kind == "*i32" for p in loaded) else "*fp32"
    outs = tuple(Param(f"out{i}_ptr", False, kind) for i in range(outputs))
    constexprs = tuple(p for p in params if p.constexpr)
    block = Param("BLOCK", True, None, Hint((1024,), "the harness's block size") if rank == 1 else
                  Hint((BLOCK_2D,), "the side of the harness's square tile (the function reduces along axis 1)"))
    return (*inputs, *outs, Param("n_elements", False, "i32"), *constexprs, block)


def device_harness(fn: ast.FunctionDef, params: tuple[Param, ...],
                   helpers: Mapping[str, ast.FunctionDef] | None = None) -> tuple[int | None, tuple[Param, ...]]:
    """(outputs, harness params) for a jit function that is never launched itself, when a wrapper
    decorator of the repository makes it a device function or it returns values (no pointer
    param, no program_id);
    else (None, its own params)."""
    outputs = _outputs(fn)
    # a pointer param makes a wrapped function that returns nothing a kernel of its own (it stores)
    if not (_wrapped(fn) or outputs) or any(_pointer(p) for p in params) and not outputs \
            or any(isinstance(n, ast.Attribute) and n.attr == "program_id" for n in walk(fn)):
        return None, params
    harness = harness_params(params, outputs, _integer_operands(fn, helpers or {}), harness_rank(fn))
    if len({p.name for p in harness}) < len(harness):   # `x` loaded from `x_ptr` beside a pointer `x_ptr`
        return None, params
    return outputs, harness


def _pointer(param: Param) -> bool:
    return (param.kind or "").startswith("*")
