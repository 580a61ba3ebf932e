"""A small, bounded search for guessed constexpr values that fit the kernel's shapes.

A guessed size can be one the kernel's shapes cannot take (`tl.reshape(x, (n_group, group_size))`
of a block whose size is neither's product, `BLOCK // 128` of a guess of 64 making a shape of 0),
or one its own `tl.static_assert` refuses (`K % BLOCK_SIZE_K == 0` of a guessed K), or one its
constant arithmetic cannot take (`0xFF >> (8 - bit)` of a guessed bit of 64).
When triton rejects a spec on a shape, the guessed integer constexprs behind the failing line
(through the kernel's assignments and the helpers it fails inside) take other sizes one at a
time, a few compiles at most (on a type error that the type search could not mend, a guessed
float there takes the ints 1 and 0: `eps_exp` is an exponent); the first values that compile,
or else those that get furthest down the kernel, are returned. The engine then compiles both
sides of the pair with them, and the rows say so. Worker side.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from typing import Any

from ptxdiff.compile.retype import about_types
from ptxdiff.compile.search import chain, failing_names, function_of, message, walk
from ptxdiff.discovery.params import STRIDE_WORD, params_behind
from ptxdiff.source.syntax import dotted_name
from ptxdiff.specs.guesses import GuessKind
from ptxdiff.specs.resolve import Spec

SHAPE_ERROR = re.compile(r"cannot change total number of elements|must be a power of 2|arange's end argument must be "
                         r"greater|arange's range must be|Shape element|incompatible dimensions|shape mismatch"
                         r"|scale factor must be|CompileTimeAssertionFailure"   # `tl.static_assert(K % BLOCK == 0)`
                         # a dot of a guessed small count (`n_heads`: 4) below its minimum
                         r"|Input shapes should have M >="
                         # guessed sizes whose product is a block larger than triton allows (a 4-d broadcast)
                         r"|exceeds triton maximum tensor numel"
                         # constant arithmetic the guess makes impossible (`0xFF >> (8 - bit)` of a guessed bit
                         # over 8; `math.log2` of 0)
                         r"|negative shift count|math domain error|OverflowError",
                         re.IGNORECASE)
# the compiler itself failing (an MLIR pass, its reproducer dump; a division by a constant 0): a
# guess it could not take (`k % SAVE_EVERY` of a guessed False), searched like a misfit (issue 37)
CRASH = re.compile(r"PassManager::run failed|MLIR|reproducer|ZeroDivisionError|division (?:or modulo )?by zero")
# passes over dot products (MLIR names the one that failed: worker.FAILED_PASS): a crash there with
# no line of the kernel comes from the sizes or formats of a `tl.dot`/`tl.dot_scaled`'s operands
DOT_PASSES = re.compile(r"AccelerateMatmul|DotOperand|MMA", re.IGNORECASE)
MAX_TRIES = 12


def _sizes(value: int | float) -> list[int]:
    """Other sizes for a guessed one: 1 (a lone group), smaller and larger powers of two; for a
    guessed float (a name like `eps_exp` that is an exponent), the ints 1 and 0."""
    if isinstance(value, bool):   # a flag the crash may come from: its other value, or a small size
        return [1, 4] if not value else [4]
    if isinstance(value, float):
        return [1, 0]
    return [v for v in dict.fromkeys((1, value // 4, value * 4, 16, 128, 2, value * 2, value // 2, 32))
            if v >= 1 and v != value]


def _asked(error: BaseException) -> list[tuple[int, list[int]]]:
    """The sizes a message says it got, each with those it asks for instead (`scale factor must
    be 16 or 32. Got 4`; two shapes that must agree, `incompatible dimensions at index 0: 64 and
    32`, ask each for the other): a guess of a size it got is tried at those first."""
    text = message(error)
    if m := re.search(r"must be ([\d ,or]+?)\.? Got (\d+)", text):
        return [(int(m[2]), [int(v) for v in re.findall(r"\d+", m[1])])]
    if m := re.search(r"incompatible dimensions at index \d+: (\d+) and (\d+)", text):
        return [(int(m[1]), [int(m[2])]), (int(m[2]), [int(m[1])])]
    return []


def asserted_asks(error: BaseException, src: str, values: dict[str, Any]) -> list[tuple[str, int]]:
    """What the kernel's failing `tl.static_assert` asks of a guessed size, given the other's value
    (Fast-LLM's `tl.static_assert(inner_dim % block_size_inner == 0)`, its block an autotune config's
    64, its dim guessed and shrunk by the cost rule to 16): `a % b == 0` asks `a` for the nearest
    multiple of `b` at or above it, `a <= b` (`>=`) asks `a` for `b`. [(name, size)]."""
    node = next((n for e in chain(error) if getattr(e, "src", None) == src
                 and isinstance(n := getattr(e, "node", None), ast.AST)), None)
    call = next((c for c in ast.walk(node) if isinstance(c, ast.Call)
                 and dotted_name(c.func)[-1:] == ["static_assert"] and c.args), None) if node is not None else None
    if call is None:
        return []
    test = call.args[0]
    asks: list[tuple[str, int]] = []
    for part in test.values if isinstance(test, ast.BoolOp) else [test]:
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1):
            continue
        left, op, right = part.left, part.ops[0], part.comparators[0]
        if isinstance(op, ast.Eq) and isinstance(left, ast.BinOp) and isinstance(left.op, ast.Mod) \
                and isinstance(right, ast.Constant) and right.value == 0:
            a, b = (_int_of(x, values) for x in (left.left, left.right))
            if a is not None and b is not None and b[1] > 0 and a[1] % b[1]:
                asks.append((a[0], -(-a[1] // b[1]) * b[1]))
        elif isinstance(op, (ast.LtE, ast.GtE)):
            a, b = _int_of(left, values), _int_of(right, values)
            if a is not None and b is not None and (a[1] > b[1] if isinstance(op, ast.LtE) else a[1] < b[1]):
                asks += [(a[0], b[1]), (b[0], a[1])]
    return asks


def _int_of(expr: ast.expr, values: dict[str, Any]) -> tuple[str, int] | None:
    """A constexpr's name and int value, where `expr` is one."""
    if isinstance(expr, ast.Name) and type(value := values.get(expr.id)) is int:
        return expr.id, value
    return None


def about_shapes(error: BaseException) -> bool:
    return bool(SHAPE_ERROR.search(message(error)))


def search(attempt: Callable[[Spec], BaseException | None], spec: Spec, error: BaseException,
           jit: object) -> dict[str, int | float] | None:
    """Constexpr values that make `spec` fit, changed from its guesses: {name: size}, or None."""
    shapes = about_shapes(error)   # a type error may be a guessed float that is an int (`1 << (127 + eps_exp)`)
    crash = crashed(error)
    guessed = {g.name: g.value for g in spec.guessed if g.kind is GuessKind.VALUE
               and (type(g.value) is int or type(g.value) is float and not shapes or crash and type(g.value) is bool)}
    src = getattr(jit, "src", None)
    fn = function_of(src) if isinstance(src, str) else None
    if not guessed or fn is None or not (shapes or about_types(error) or crash):
        return None
    assert isinstance(src, str)
    constexprs = [name for name, kind in spec.signature if kind == "constexpr"]   # the built text hides annotations

    def trials(changed: dict[str, Any], error: BaseException) -> list[list[dict[str, Any]]]:
        """The sizes the error asks for, of a suspect whose guess is the size it got; then each
        suspect's other sizes."""
        suspects = [p for p in params_behind(fn, failing_names(error, src, all_params=True), constexprs)
                    if p in guessed] or (_crash_suspects(fn, error, guessed, constexprs) if crashed(error) else [])
        values = {**dict(spec.constexprs), **changed}
        asked = [{**changed, p: size} for got, wanted in _asked(error) for p in suspects
                 if changed.get(p, guessed[p]) == got for size in wanted]
        asked += [{**changed, p: size} for p, size in asserted_asks(error, src, values) if p in guessed]
        return [asked, [{**changed, p: size} for p in suspects for size in _sizes(changed.get(p, guessed[p]))]]

    def sized(spec: Spec, trial: dict[str, Any]) -> Spec:
        return dataclasses.replace(spec, constexprs=tuple((k, trial.get(k, v)) for k, v in spec.constexprs))

    return walk(attempt, spec, error, src, trials, sized, lambda e: about_shapes(e) or about_types(e) or crashed(e),
                MAX_TRIES)


def crashed(error: BaseException) -> bool:
    """The compiler crashed (no line of the kernel to blame, often): see CRASH."""
    return bool(CRASH.search(message(error)))


def _crash_suspects(fn: ast.FunctionDef, error: BaseException, guessed: dict[str, Any],
                    constexprs: list[str]) -> list[str]:
    """The guesses a crash with no place in the kernel may come from: where MLIR names a pass over
    dot products, those behind the operands of the kernel's `tl.dot`/`tl.dot_scaled` first (a
    scale's group size the lowering cannot take), strides last; then a 0 or False first."""
    failed = next((p for e in chain(error) if isinstance(p := getattr(e, "failed_pass", None), str)), "")
    first: list[str] = []
    if DOT_PASSES.search(failed):
        operands = {n.id for call in ast.walk(fn) if isinstance(call, ast.Call)
                    and dotted_name(call.func)[-1:] in (["dot"], ["dot_scaled"])
                    for arg in [*call.args, *(k.value for k in call.keywords)]
                    for n in ast.walk(arg) if isinstance(n, ast.Name)}
        # their shapes and formats, not their strides (a stride moves addresses, never a layout)
        first = sorted((p for p in params_behind(fn, operands, constexprs) if p in guessed),
                       key=lambda p: bool(STRIDE_WORD.search(p.lower())))
    return [*first, *sorted((p for p in guessed if p not in first), key=lambda p: bool(guessed[p]))]
