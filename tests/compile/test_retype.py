"""The type search on in-memory errors: what an error asks of an operand's type, and the types
that make a fake compile pass."""

from __future__ import annotations

import ast
from types import SimpleNamespace

import pytest

from ptxdiff.compile import retype
from ptxdiff.compile.search import function_of, further
from ptxdiff.specs.guesses import type_of
from ptxdiff.specs.resolve import Spec

KERNEL = """\
def k(x, n, BLOCK: tl.constexpr):
    for i in range(0, n, BLOCK):
        tl.store(x + i, 1)
"""
DOT = """\
def k(a, b, out):
    c = tl.dot(tl.load(a), tl.load(b))
"""


class Located(Exception):
    def __init__(self, text: str, src: str, line: int):
        super().__init__(text)
        fn = function_of(src)
        assert fn is not None
        self.src, self.error_message = src, text
        self.node = next(s for s in ast.walk(fn) if isinstance(s, ast.stmt) and s.lineno == line)


class CompileTimeAssertionFailure(Located):
    """Named as triton names it: the search knows a failed static_assert by this name."""


@pytest.mark.parametrize("error, about", [
    (Located("For loop bounds and step must all be ints", KERNEL, 2), True),
    (Located("invalid operands of type pointer<fp32>", KERNEL, 2), True),
    (Located("name 'q' is not defined", KERNEL, 2), False),
    (CompileTimeAssertionFailure("assert", "def k(s):\n    tl.static_assert(s.dtype.is_int())\n", 2), True),
    (CompileTimeAssertionFailure("assert", "def k(s):\n    tl.static_assert(s > 0)\n", 2), False),
])
def test_about_types(error, about):
    assert retype.about_types(error) is about


def spec(**types: str) -> Spec:
    return Spec(signature=tuple(types.items()), constexprs=(), num_warps=4, num_stages=3,
                guessed=tuple(type_of(k, v) for k, v in types.items() if v != "constexpr"))


def test_search_finds_the_type_the_failing_line_needs():
    error = Located("For loop bounds and step must all be ints", KERNEL, 2)
    tried: list[dict] = []

    def attempt(s: Spec) -> BaseException | None:
        sig = dict(s.signature)
        tried.append(sig)
        return None if sig["n"] == "i32" else error

    found = retype.search(attempt, spec(x="*fp32", n="fp32", BLOCK="constexpr"), error, SimpleNamespace(src=KERNEL))
    assert found == {"n": "i32"}
    assert tried == [{"x": "*fp32", "n": "i32", "BLOCK": "constexpr"}]


def test_search_mends_both_operands_of_an_integer_dot_at_once():
    error = Located("Unsupported lhs dtype int32", DOT, 2)

    def attempt(s: Spec) -> BaseException | None:
        sig = dict(s.signature)
        return None if sig["a"] == sig["b"] == "*i8" else error

    found = retype.search(attempt, spec(a="*i32", b="*i32", out="*fp32"), error, SimpleNamespace(src=DOT))
    assert found == {"a": "*i8", "b": "*i8"}


@pytest.mark.parametrize("case", ["no guesses", "no source", "not a type error"])
def test_search_declines(case):
    error = Located("name 'q' is not defined" if case == "not a type error" else "must all be ints", KERNEL, 2)
    s = spec(x="*fp32", n="fp32", BLOCK="constexpr")
    if case == "no guesses":
        s = Spec(signature=s.signature, constexprs=(), num_warps=4, num_stages=3)
    jit = SimpleNamespace(src=None if case == "no source" else KERNEL)
    assert retype.search(lambda _: pytest.fail("no compile expected"), s, error, jit) is None


@pytest.mark.parametrize("a, b, text, first", [
    # an integer dot takes 8-bit ints: each operand, then both at once
    ("*i32", "*i32", "Unsupported lhs dtype int32", [{"a": "*i8"}, {"b": "*i8"}, {"a": "*i8", "b": "*i8"}]),
    # ... in triton 3.0 and 3.1's words (quantized-training's int8 convolution, its int32 accumulator)
    ("*i32", "*i32", "Both operands must be either int8 or uint8. Operand type (int32)",
     [{"a": "*i8"}, {"b": "*i8"}, {"a": "*i8", "b": "*i8"}]),
    # fp8 goes with fp8 only: the other operand takes it
    ("*fp16", "*fp8e4nv", "Unsupported rhs dtype fp8e4nv", [{"a": "*fp8e4nv"}, {"a": "*i32"}]),
    # the operands must agree: each takes the other's, and together the type the error got
    ("*i32", "*i32", "Both operands must be same dtype. Got int32 and float32",
     [{"a": "*fp32"}, {"b": "*fp32"}, {"a": "*fp32", "b": "*fp32"}, {"a": "*i64"}]),
    # ... in triton 3.0's words (its two asserts), and 2.x's
    ("*i32", "*i32", "Both operands must be same type. First operand (int32) and second operand (fp32)",
     [{"a": "*fp32"}, {"b": "*fp32"}, {"a": "*fp32", "b": "*fp32"}]),
    ("*i32", "*i32", "First input (int32) and second input (fp32) must have the same dtype!",
     [{"a": "*fp32"}, {"b": "*fp32"}, {"a": "*fp32", "b": "*fp32"}]),
    # of two operands that disagree, the odd one out takes the type the other guesses have (`out`'s)
    ("*fp16", "*fp32", "Both operands must be same dtype. Got fp16 and fp32", [{"b": "*fp16"}, {"a": "*fp32"}]),
    ("*fp32", "*fp16", "Both operands must be same dtype. Got fp32 and fp16", [{"a": "*fp16"}, {"b": "*fp32"}]),
    # a block pointer stored to takes the value's type; the value's operands are not asked
    ("*fp32", "*fp16", "Block element type(fp32) and value element type(fp16) mismatch", [{"a": "*fp16"}, {"a": "*i32"}]),
    # the types asked for, in the search's order, pointers staying pointers
    ("*fp32", "*fp32", "Expected dtype ['fp16', 'bf16']", [{"a": "*bf16"}, {"a": "*fp16"}, {"b": "*bf16"}]),
    ("*fp32", "*fp32", "Unexpected dtype for e4m3", [{"a": "*fp8e4nv"}, {"b": "*fp8e4nv"}, {"a": "*i32"}]),
    # the error got another type than a's: it is about b
    ("*fp32", "*i32", "Expected dtype ['fp16']. Got int32", [{"b": "*fp16"}, {"a": "*i32"}]),
    # nothing asked: each suspect's usual others, the likelier first; a loaded-from pointer stays a pointer
    ("*fp32", "*i32", "invalid operands of type pointer<fp32>", [{"a": "*i32"}, {"a": "*bf16"}, {"a": "*fp8e4nv"}]),
])
def test_what_the_error_asks_is_tried_first(a, b, text, first):
    error = Located(text, DOT, 2)
    tried: list[dict] = []

    def attempt(s: Spec) -> BaseException | None:
        tried.append({k: v for k, v in s.signature if k in "ab" and v != {"a": a, "b": b}[k]})
        return error

    out = "*fp16" if "fp16" in a + b else "*fp32"
    assert retype.search(attempt, spec(a=a, b=b, out=out), error, SimpleNamespace(src=DOT)) is None
    assert tried[:len(first)] == first


BRANCHES = """\
def k(out, dloss_ptr, labels, ignored, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    if tl.load(labels + row) != ignored:
        dloss = tl.load(dloss_ptr + row * stride)
    else:
        dloss = 0.0
    tl.store(out + tl.arange(0, BLOCK), dloss)
"""


@pytest.mark.parametrize("text, wanted", [
    ("Mismatched type for dloss between then block (bf16) and else block (fp32)", "*fp32"),
    ("mismatched type for dloss between then block (<['128'], bf16>) and else block (<['128'], fp32>)", "*fp32"),
    ("Loop-carried variable dloss has initial type fp32 but is re-assigned to bf16 in loop", "*fp32"),
])
def test_values_that_must_agree_ask_for_the_other_sides_type(text, wanted):
    """A loaded value meeting a float literal in the other branch (or around a loop): the pointer
    takes the literal's type. The scalar a pointer could also be (`i32`: `Unsupported ptr type`,
    one line further down) is never tried for what the kernel loads from."""
    mismatch = Located(text, BRANCHES, 3)
    further_down = Located("Unsupported ptr type triton.language.int32 in `tl.load`", BRANCHES, 7)
    tried: list[str] = []

    def attempt(s: Spec) -> BaseException | None:
        kind = dict(s.signature)["dloss_ptr"]
        tried.append(kind)
        return None if kind == wanted else further_down if not kind.startswith("*") else mismatch

    found = retype.search(attempt, spec(out="*fp32", dloss_ptr="*bf16", labels="*bf16", ignored="i32", stride="i32",
                                        BLOCK="constexpr"), mismatch, SimpleNamespace(src=BRANCHES))
    assert found == {"dloss_ptr": wanted}
    assert tried[0] == wanted and all(t.startswith("*") for t in tried)


def test_a_failure_inside_an_if_comes_before_its_branches_disagree():
    """Triton compares the branches' types once both are compiled and blames the `if`'s first
    line: an error inside a branch (a later line) is no step further than that."""
    mismatch = Located("Mismatched type for dloss between then block (bf16) and else block (fp32)", BRANCHES, 3)
    inside = Located("Unsupported ptr type triton.language.int32 in `tl.load`", BRANCHES, 4)
    after = Located("invalid operands of type pointer<fp32>", BRANCHES, 7)
    assert not further(inside, mismatch, BRANCHES)
    assert further(after, mismatch, BRANCHES)
    loop_bounds = Located("For loop bounds and step must all be ints", KERNEL, 2)   # said before the body
    assert further(Located("invalid operands", KERNEL, 3), loop_bounds, KERNEL)


FLAGGED = """\
def k(x, OFFSET, n, IS_TENSOR: tl.constexpr):
    offs = tl.arange(0, 16)
    if not IS_TENSOR:
        start = offs + OFFSET
    else:
        start = offs + tl.load(OFFSET)
    y = tl.load(x + start * n)
"""


@pytest.mark.parametrize("flag, found", [(False, {"OFFSET": "i32"}), (True, None)])
def test_a_param_loaded_from_only_under_a_flag_is_an_int_where_the_flag_is_off(flag, found):
    """`SEQLEN_OFFSETS  # this could be int or a pointer` (flash-attention's rotary kernel): a
    pointer where `IS_TENSOR` loads from it, an int where the spec's flag takes the other branch.
    Read as a pointer in every spec, the int side never compiled."""
    error = Located("invalid operands of type pointer<fp32> and triton.language.int32", FLAGGED, 7)

    def attempt(s: Spec) -> BaseException | None:
        return None if dict(s.signature)["OFFSET"] == "i32" else error

    typed = spec(x="*fp32", OFFSET="*fp32", n="i32", IS_TENSOR="constexpr")
    flagged = Spec(signature=typed.signature, constexprs=(("IS_TENSOR", flag),), num_warps=4, num_stages=3,
                   guessed=typed.guessed)
    assert retype.search(attempt, flagged, error, SimpleNamespace(src=FLAGGED)) == found


def test_taken_branches_keep_what_the_constexprs_reach():
    from ptxdiff.source.syntax import static_truth, taken_branches

    fn = function_of(FLAGGED)
    assert fn is not None
    kept = ast.unparse(taken_branches(fn, {"IS_TENSOR": False}))
    assert "start = offs + OFFSET" in kept and "tl.load(OFFSET)" not in kept
    assert "if" in ast.unparse(taken_branches(fn, {}))   # a test it cannot decide keeps both branches
    assert static_truth(ast.parse("MODE == 1 and not HAS_BIAS").body[0].value, {"MODE": 1, "HAS_BIAS": False}) is True
    assert static_truth(ast.parse("MODE < n").body[0].value, {"MODE": 1}) is None
    assert static_truth(ast.parse("B is None").body[0].value, {"B": None}) is True


COMPARED = """\
def k(Q, V, Out, BLOCK: tl.constexpr):
    order: tl.constexpr = (0, 1) if V.dtype.element_ty == tl.float8e5 else (1, 0)
    p = tl.load(Q + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    v = tl.load(V + tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :])
    acc = tl.dot(p.to(tl.bfloat16), v)
"""


def test_a_type_a_dtype_comparison_chose_is_tried_as_other_floats_where_it_does_not_compile():
    """FastVideo's `_attn_fwd_sparse`: `V.dtype.element_ty == tl.float8e5` picks an order, so V was
    typed fp8e5, and `tl.dot(p.to(tl.bfloat16), v)` refused it. fp8 had no other candidates."""
    error = Located("Unsupported rhs dtype fp8e5", COMPARED, 5)

    def attempt(s: Spec) -> BaseException | None:
        return None if dict(s.signature)["V"] == "*bf16" else error

    found = retype.search(attempt, spec(Q="*fp32", V="*fp8e5", Out="*fp32", BLOCK="constexpr"), error,
                          SimpleNamespace(src=COMPARED))
    assert found == {"V": "*bf16"}
    assert retype.others("*fp8e4nv") == ("*bf16", "*fp16", "*fp32") and retype.others("*u8") == ("*i32", "*fp32")
