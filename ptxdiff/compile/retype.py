"""A small, bounded search for runtime parameter types when a compile under guessed types fails
on a type (or a `tl.static_assert` on a type fails).

Offline a runtime parameter's type is a guess from the kernel's use of it (discovery/params.py).
When triton rejects the kernel with a type error under those guesses (`For loop bounds and step
must all be ints`, `Unsupported ptr type`, `invalid operands of type pointer<fp32>`), the guessed
parameters behind the failing line (through the kernel's assignments and the helpers it fails
inside, nearest first) take their other plausible types one at a time (those the error asks for
first), a few compiles at most; a step that changes the complaint at the same place (one operand
of two fixed) is kept when nothing gets further. The first set that compiles, or else the one
that gets furthest down the kernel (its next error is then not a type's), is returned; the
engine then compiles both sides of the pair with it, so the two sides never differ in a guess.
Worker side.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Callable
from typing import Any

from ptxdiff.compile.search import DISAGREE, chain, failing_names, function_of, message, walk
from ptxdiff.discovery.params import addressed, params_behind, written_only
from ptxdiff.source.syntax import taken_branches
from ptxdiff.specs.guesses import GuessKind
from ptxdiff.specs.resolve import Spec

TYPE_ERROR = re.compile(r"TypeError|IncompatibleType|dtype|\btypes?\b|pointer|ptr type|must all be ints|operands? of"
                        r"|unsupported tensor index|cannot cast|scalar", re.IGNORECASE)
# each guessed type's other candidates, the likelier first
ALTERNATIVES = {"*fp32": ("*i32", "i32", "*bf16", "*fp8e4nv", "*i8", "*u8"), "*i32": ("*fp32", "i32", "*i64"),
                "i32": ("*fp32", "*i32", "fp32"), "fp32": ("i32", "*fp32"), "*fp16": ("*i32", "*fp32", "i32"),
                "*bf16": ("*i32", "*fp32", "i32")}


def others(kind: str) -> tuple[str, ...]:
    """A guessed type's other candidates: ALTERNATIVES's, else its family's (any other float
    pointer, an fp8 one a dtype comparison chose, `V.dtype.element_ty == tl.float8e5`, is tried as
    the 16- and 32-bit floats; an integer pointer as i32 and fp32 ones; a scalar as i32 and fp32)."""
    if kind in ALTERNATIVES:
        return ALTERNATIVES[kind]
    if kind.startswith(("*fp", "*bf")):
        return ("*bf16", "*fp16", "*fp32")
    return ("*i32", "*fp32") if kind.startswith("*") else ("i32", "fp32")


# element types an error says it wanted (`Expected dtype ['fp32', 'fp64']`, `tl.dot_scaled`'s
# `Unexpected dtype for e4m3`): tried first
WANTED = (("e4m3", "fp8e4nv"), ("fp8e4nv", "fp8e4nv"), ("e5m2", "fp8e5"), ("e2m1", "u8"), ("bf16", "bf16"),
          ("fp16", "fp16"), ("fp32", "fp32"))
SHORT = {"int8": "i8", "uint8": "u8", "int16": "i16", "int32": "i32", "int64": "i64", "float32": "fp32",
         "float16": "fp16", "bfloat16": "bf16"}
ANY = "*"   # in what `_dot_asks` returns: any element type but the one asked for
MAX_TRIES = 16


def _short(kind: str) -> str:
    return SHORT.get(kind, kind)


# two element types that must agree, in each triton's words (3.1+; 3.0 and 2.x twice), each asking
# for the other's; a block pointer's store asks of the pointer alone: it takes the value's type
AGREE_WORDS = (re.compile(r"Both operands must be same dtype\. Got (\w+) and (\w+)"),
               re.compile(r"Both operands must be same type\. First operand \((\w+)\) and second operand \((\w+)\)"),
               re.compile(r"First input \((\w+)\) and second input \((\w+)\) must have the same dtype"))
BLOCK_STORE = re.compile(r"Block element type\((\w+)\) and value element type\((\w+)\) mismatch")


def _dot_asks(text: str) -> dict[str, str]:
    """What `tl.dot`'s complaints ask of an operand's element type, by the type it has now: its
    operands must agree, so an integer dot takes 8-bit ints (`Unsupported lhs dtype int32`; 3.0 and
    3.1: `Both operands must be either int8 or uint8. Operand type (int32)`), an
    operand beside fp8 takes that fp8 (`Unsupported rhs dtype fp8e4nv`: fp8 goes with fp8
    only), and `Both operands must be same dtype. Got int8 and fp32` (AGREE_WORDS) gives each
    the other's; a block pointer stored to takes the stored value's (BLOCK_STORE)."""
    if m := re.search(r"(?:Unsupported [lr]hs dtype |Both operands must be either int8 or uint8\. Operand type \()"
                      r"(u?int(?:16|32|64))\b", text):   # 3.2 on; 3.0 and 3.1
        return {_short(m[1]): "i8"}
    if m := re.search(r"Unsupported [lr]hs dtype (fp8\w+)", text):
        return {ANY: m[1]}
    if m := next(filter(None, (w.search(text) for w in AGREE_WORDS)), None):
        return {_short(m[1]): _short(m[2]), _short(m[2]): _short(m[1])}
    if m := BLOCK_STORE.search(text):
        return {_short(m[1]): _short(m[2])}
    return {}


def _agree_asks(text: str) -> dict[str, str]:
    """What a complaint that two values disagree asks of a value's element type, by the type it
    has now: each side the other's (`dloss = tl.load(dloss_ptr)` in one branch and `0.0` in the
    other: a bf16 pointer there is an fp32 one)."""
    m = DISAGREE.search(text)
    if m is None:
        return {}
    a, b = (_short(t) for t in ((m[1], m[2]) if m[1] else (m[3], m[4])))
    return {a: b, b: a} if a != b else {}


def _wanted(text: str) -> list[str]:
    """The element types the message asks for, in its order."""
    asked = " ".join(re.findall(r"Expected dtype \[([^\]]*)\]|Unexpected dtype for (\w+)", text)[0]) \
        if re.search(r"Expected dtype \[|Unexpected dtype for", text) else ""
    return [kind for word, kind in WANTED if re.search(rf"\b{word}\b", asked)]


def _got(text: str) -> str | None:
    """The element type the message says it got (`Got fp32`), in signature spelling."""
    got = re.search(r"\b[Gg]ot (\w+)", text)
    return _short(got.group(1)) if got else None


def _asked(current: str, text: str) -> list[str]:
    """The types the error asks for, as pointer or scalar like `current`; none when the error
    says it got another type than this one (the complaint is about another operand). A dot's
    complaint asks only of pointers (its operands are loaded blocks)."""
    if asks := _dot_asks(text):
        kind = current.lstrip("*")
        want = asks.get(kind) or (asks.get(ANY) if kind != asks.get(ANY) else None)
        return [f"*{want}"] if current.startswith("*") and want else []
    if agree := _agree_asks(text):
        want = agree.get(current.lstrip("*"))
        return [("*" if current.startswith("*") else "") + want] if want else []
    got = _got(text)
    if got is not None and current.lstrip("*") != got:
        return []
    return [f"*{k}" if current.startswith("*") else k for k in _wanted(text)]


def _joint(suspects: list[str], current: dict[str, str], text: str,
           changed: dict[str, str]) -> list[dict[str, str]]:
    """One trial that gives every suspect of the type the error got the type it wants: two
    operands that must agree (`tl.dot_scaled(a, ..., "e4m3", b, ..., "e4m3")`, an integer
    `tl.dot`), fixed at once. Not where the error names no type, or where the suspects would
    take different types or any type would do (which operand is meant is not known)."""
    asks = _dot_asks(text)
    if ANY in asks or not asks and _got(text) is None:
        return []
    asked = {p: _asked(current[p], text) for p in suspects}
    alike = [p for p in suspects if asked[p]]
    if len(alike) < 2 or len({asked[p][0] for p in alike}) > 1:
        return []
    return [{**changed, **{p: asked[p][0] for p in alike}}]


def about_types(error: BaseException) -> bool:
    """A type error, or a failed `tl.static_assert` on a value's type (`seed.dtype.is_int()`)."""
    return bool(TYPE_ERROR.search(message(error))) or any(
        type(e).__name__ == "CompileTimeAssertionFailure" and isinstance(node := getattr(e, "node", None), ast.AST)
        and any(isinstance(n, ast.Attribute) and n.attr in ("dtype", "element_ty") for n in ast.walk(node))
        for e in chain(error))


def search(attempt: Callable[[Spec], BaseException | None], spec: Spec, error: BaseException,
           jit: object) -> dict[str, str] | None:
    """Types that make `spec` compile, changed from its guesses: {param: type}, or None."""
    guessed = {g.name: g.value for g in spec.guessed if g.kind is GuessKind.TYPE and isinstance(g.value, str)}
    src = getattr(jit, "src", None)
    fn = function_of(src) if isinstance(src, str) else None
    if not guessed or fn is None or not about_types(error):
        return None
    assert isinstance(src, str)
    # what the kernel loads from or stores to stays a pointer: in the branches this spec's constexprs
    # take (`SEQLEN_OFFSETS`, loaded from under `if IS_TENSOR:` only, is an int where it is off)
    pointers = addressed(taken_branches(fn, dict(spec.constexprs)))
    outputs = written_only(fn)   # guessed fp32 whatever the inputs are: no evidence of their type

    def trials(changed: dict[str, Any], error: BaseException) -> list[list[dict[str, Any]]]:
        """The types the error asks for (of suspects not changed yet first: the other operand of
        one just mended; then the type more of the kernel's other inputs have already: of two
        operands that must agree, the odd one out changes; one suspect at a time before all at
        once), then each suspect's usual others."""
        suspects = [p for p in params_behind(fn, failing_names(error, src)) if p in guessed]
        current, text = {**guessed, **changed}, message(error)
        steps = sorted(((p, t) for p in suspects for t in _asked(current[p], text) if t != current[p]),
                       key=lambda step: (step[0] in changed, -sum(t == step[1] for q, t in current.items()
                                                                   if q != step[0] and q not in outputs)))
        asked = [{**changed, p: t} for p, t in steps]
        usual = [{**changed, p: t} for p in suspects for t in others(guessed[p]) if t != current[p]]
        return [[t for t in tier if all(t[p].startswith("*") for p in pointers & t.keys())]
                for tier in (asked + _joint(suspects, current, text, changed), usual)]

    def typed(spec: Spec, trial: dict[str, Any]) -> Spec:
        return dataclasses.replace(spec, signature=tuple((name, trial.get(name, t)) for name, t in spec.signature))

    return walk(attempt, spec, error, src, trials, typed, about_types, MAX_TRIES, sideways_ok=True)
