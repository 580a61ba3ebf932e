"""A small, bounded search for runtime parameter types when a compile under guessed types fails
on a type.

Offline a runtime parameter's type is a guess from the kernel's use of it (discovery/params.py).
When triton rejects the kernel with a type error under those guesses (`For loop bounds and step
must all be ints`, `Unsupported ptr type`, `invalid operands of type pointer<fp32>`), the guessed
parameters behind the failing line (through the kernel's assignments, nearest first) take their
other plausible types one at a time, a few compiles at most. The first set that compiles is
returned; the engine then compiles both sides of the pair with it, so the two sides never differ
in a guess. Worker side.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import textwrap
import time
from collections.abc import Callable

from ptxdiff.discovery.params import params_behind
from ptxdiff.specs.resolve import Spec

TYPE_ERROR = re.compile(r"TypeError|IncompatibleType|dtype|\btypes?\b|pointer|ptr type|must all be ints|operands? of"
                        r"|unsupported tensor index|cannot cast|scalar", re.IGNORECASE)
# each guessed type's other candidates, the likelier first
ALTERNATIVES = {"*fp32": ("*i32", "i32", "*bf16", "*fp8e4nv", "*i8", "*u8"), "*i32": ("*fp32", "i32", "*i64"),
                "i32": ("*fp32", "*i32", "fp32"), "fp32": ("i32", "*fp32"), "*fp16": ("*i32", "i32"),
                "*bf16": ("*i32", "i32")}
MAX_TRIES = 12
DEADLINE_S = 45.0


def _chain(error: BaseException) -> list[BaseException]:
    out = [error]
    while out[-1].__cause__ is not None and len(out) < 32:
        out.append(out[-1].__cause__)
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _failing_names(error: BaseException, kernel_src: str) -> set[str]:
    """Names of the kernel's line an error points at. When the error is inside a helper the
    line calls, only the arguments given to the helper parameters that the helper's failing
    line uses (`b = dequantize(b, scales, ...)` failing at `b >> shift`: `b`)."""
    chain = _chain(error)
    at = next((i for i, e in enumerate(chain) if getattr(e, "src", None) == kernel_src
               and getattr(e, "node", None) is not None), None)
    if at is None:
        return set()
    node: ast.AST = chain[at].node  # type: ignore[attr-defined]  # a CompilationError
    names = _names(node)
    inner = chain[at + 1] if at + 1 < len(chain) else None
    inner_node, inner_src = getattr(inner, "node", None), getattr(inner, "src", None)
    if inner_node is None or not isinstance(inner_src, str):
        return names
    try:
        helper = next(n for n in ast.parse(textwrap.dedent(inner_src)).body if isinstance(n, ast.FunctionDef))
    except (SyntaxError, StopIteration):
        return names
    used = _names(inner_node)
    params = [a.arg for a in helper.args.args]
    picked: set[str] = set()
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        if not (isinstance(call.func, ast.Name) and call.func.id == helper.name
                or isinstance(call.func, ast.Attribute) and call.func.attr == helper.name):
            continue
        for i, arg in enumerate(call.args):
            if i < len(params) and params[i] in used:
                picked |= _names(arg)
        for kw in call.keywords:
            if kw.arg in used:
                picked |= _names(kw.value)
    return picked or names


def _kernel_line(error: BaseException, kernel_src: str) -> int:
    """The line of the kernel's own text an error is at (0 when it cannot be told)."""
    for e in _chain(error):
        node = getattr(e, "node", None)
        if node is not None and getattr(e, "src", None) == kernel_src:
            return int(getattr(node, "lineno", 0) or 0)
    return 0


def _message(error: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {getattr(e, 'error_message', None) or e}" for e in _chain(error))


def search(attempt: Callable[[Spec], BaseException | None], spec: Spec, error: BaseException,
           jit) -> dict[str, str] | None:
    """Types that make `spec` compile, changed from its guesses: {param: type}, or None."""
    guessed = {k[:-1]: v for k, v in spec.guessed if k.endswith(":") and isinstance(v, str)}
    src = getattr(jit, "src", None)
    if not guessed or not isinstance(src, str) or not TYPE_ERROR.search(_message(error)):
        return None
    try:
        fn = next(n for n in ast.parse(textwrap.dedent(src)).body if isinstance(n, ast.FunctionDef))
    except (SyntaxError, StopIteration):
        return None
    deadline = time.monotonic() + DEADLINE_S
    changed: dict[str, str] = {}
    tried: set[tuple] = set()
    while len(tried) < MAX_TRIES and time.monotonic() < deadline:
        suspects = [p for p in params_behind(fn, _failing_names(error, src)) if p in guessed]
        trials = [{**changed, p: alt} for p in suspects for alt in ALTERNATIVES.get(guessed[p], ())
                  if alt != changed.get(p, guessed[p])]
        for trial in trials:
            key = tuple(sorted(trial.items()))
            if key in tried:
                continue
            if len(tried) >= MAX_TRIES or time.monotonic() >= deadline:
                return None
            tried.add(key)
            sig = tuple((name, trial.get(name, t)) for name, t in spec.signature)
            after = attempt(dataclasses.replace(spec, signature=sig))
            if after is None:
                return trial
            if _kernel_line(after, src) > _kernel_line(error, src) and TYPE_ERROR.search(_message(after)):
                changed, error = trial, after   # further along the kernel: keep it, go on from there
                break
        else:
            return None
    return None
