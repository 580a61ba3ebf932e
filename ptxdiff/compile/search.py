"""The walk shared by the compile searches (retype.py, refit.py): from a compile error under
guessed values, try other values for the guesses behind the failing line, a few compiles at
most, keeping a change that gets the compile further down the kernel.

Where an error is comes from triton's CompilationError chain: the kernel's line, then the line of
each helper it fails inside. Worker side.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Callable
from typing import Any

from ptxdiff.discovery.params import params_behind
from ptxdiff.specs.resolve import Spec


def chain(error: BaseException) -> list[BaseException]:
    out = [error]
    while out[-1].__cause__ is not None and len(out) < 32:
        out.append(out[-1].__cause__)
    return out


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def function_of(src: str) -> ast.FunctionDef | None:
    try:
        return next(n for n in ast.parse(textwrap.dedent(src)).body if isinstance(n, ast.FunctionDef))
    except (SyntaxError, StopIteration):
        return None


def failing_names(error: BaseException, kernel_src: str, all_params: bool = False) -> set[str]:
    """Names of the kernel's line an error points at. When the error is inside helpers the line
    calls (helpers calling helpers), only what reaches the failing line: at each level the
    arguments given to the helper parameters that its failing line depends on (`b =
    dequantize(b, scales, ...)` failing at `b >> shift`: `b`); its runtime parameters, or with
    `all_params` its constexpr ones too."""
    errors = chain(error)
    at = next((i for i, e in enumerate(errors) if getattr(e, "src", None) == kernel_src
               and getattr(e, "node", None) is not None), None)
    if at is None:
        return set()
    levels = [(e.node, e.src) for e in errors[at:]  # type: ignore[attr-defined]  # CompilationErrors
              if getattr(e, "node", None) is not None and isinstance(getattr(e, "src", None), str)]
    needed: set[str] | None = None   # the names of the deepest level the failure depends on
    for (node, _), (inner_node, inner_src) in reversed(list(zip(levels, levels[1:]))):
        helper = function_of(inner_src)
        if helper is None:
            return _names(levels[0][0])
        wanted = set(params_behind(helper, needed if needed is not None else _names(inner_node),
                                   [a.arg for a in helper.args.args] if all_params else None))
        params = [a.arg for a in helper.args.args]
        picked: set[str] = set()
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            if not (isinstance(call.func, ast.Name) and call.func.id == helper.name
                    or isinstance(call.func, ast.Attribute) and call.func.attr == helper.name):
                continue
            for i, arg in enumerate(call.args):
                if i < len(params) and params[i] in wanted:
                    picked |= _names(arg)
            for kw in call.keywords:
                if kw.arg in wanted:
                    picked |= _names(kw.value)
        needed = picked or _names(node)
    return needed if needed is not None else _names(levels[0][0])


# two values that must agree and do not: an `if`'s branches, a loop-carried value (triton's
# words, element types last: `(bf16)`, `(<['128'], int32>)`, `initial type fp32 but is re-assigned
# to fp64`). Triton says so once the whole statement is compiled, at its first line.
DISAGREE = re.compile(r"then block \((?:<\[[^\]]*\], )?(\w+)>?\) and else block \((?:<\[[^\]]*\], )?(\w+)>?\)"
                      r"|initial type (?:<\[[^\]]*\], )?(\w+)>? but is re-assigned to (?:<\[[^\]]*\], )?(\w+)")


def position(error: BaseException, kernel_src: str) -> list[tuple[str, int]]:
    """Where an error is: the kernel's line, then the line of each helper it fails inside. Two
    values that disagree after an `if` or a loop are a complaint about its end (its last line): a
    failure inside its body comes before it, however much later its line reads."""
    out: list[tuple[str, int]] = []
    joined = DISAGREE.search(message(error)) is not None
    for e in chain(error):
        node, src = getattr(e, "node", None), getattr(e, "src", None)
        if node is not None and isinstance(src, str) and (out or src == kernel_src):
            end = joined and isinstance(node, (ast.If, ast.For, ast.While))
            out.append((src, int(getattr(node, "end_lineno" if end else "lineno", 0) or 0)))
    return out


def further(after: BaseException, before: BaseException, kernel_src: str) -> bool:
    """Whether `after` fails further down than `before`: a later line of the kernel, or at the
    same call a later line inside the same helper (a fix inside a helper moves only there), or
    past triton's front end altogether (ptxas refusing an instruction for the target: no line of
    the kernel is to blame, every line was read)."""
    at, was = position(after, kernel_src), position(before, kernel_src)
    if was and not at:
        return True
    for (src_a, line_a), (src_b, line_b) in zip(at, was):
        if src_a != src_b or line_a != line_b:
            return src_a == src_b and line_a > line_b
    return False


def message(error: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {getattr(e, 'error_message', None) or e}" for e in chain(error))


def bare(error: BaseException) -> str:
    return re.sub(r"\d+", "N", message(error))


def _key(trial: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(sorted(trial.items()))


def walk(attempt: Callable[[Spec], BaseException | None], spec: Spec, error: BaseException, src: str,
         trials_for: Callable[[dict[str, Any], BaseException], list[list[dict[str, Any]]]],
         apply: Callable[[Spec, dict[str, Any]], Spec],
         relevant: Callable[[BaseException], bool], max_tries: int, sideways_ok: bool = False) -> dict[str, Any] | None:
    """Changes to `spec` (`apply`) that make it compile: each round tries what `trials_for` gives
    for what is changed so far and the error it leaves, in tiers (a later tier once every trial
    of the earlier ones was tried: what the error asks for before the usual others). The first
    trial that compiles is returned; one that fails further down is kept and the walk goes on
    from there, or ends when what fails there is no longer `relevant`. When nothing gets
    further, the smallest step after which the same place complains of something no longer
    `relevant` is returned (the operand's type is right, its block's scale factor is next);
    with `sideways_ok`, a step that changes the complaint at the same place (one of two
    operands mended) is taken. Else what was kept, or None. Bounded by count (`max_tries`
    compiles), never by a clock: a loaded machine finds what a quiet one finds."""
    changed: dict[str, Any] = {}
    tried: set[tuple[Any, ...]] = set()
    while len(tried) < max_tries:
        sideways: tuple[dict[str, Any], BaseException] | None = None
        solved: dict[str, Any] | None = None
        tiers = [tier for tier in ([t for t in tier if _key(t) not in tried] for tier in trials_for(changed, error))
                 if tier]
        for trial in tiers[0] if tiers else []:
            key = _key(trial)
            if key in tried:
                continue
            if len(tried) >= max_tries:
                return solved or changed or None
            tried.add(key)
            after = attempt(apply(spec, trial))
            if after is None:
                return trial
            if further(after, error, src):
                changed, error = trial, after
                if not relevant(after):
                    return changed
                break
            here = position(after, src) == position(error, src)
            if here and not relevant(after) and (solved is None or len(trial) < len(solved)):
                solved = trial
            if sideways_ok and sideways is None and here and relevant(after) and bare(after) != bare(error):
                sideways = trial, after
        else:
            if solved is not None:
                return solved
            if sideways is not None:
                changed, error = sideways
            elif len(tiers) < 2:
                return changed or None
    return changed or None
