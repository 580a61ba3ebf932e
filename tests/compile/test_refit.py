"""The size search on in-memory errors: other sizes for a guess, the size an error asks for, and
the sizes that make a fake compile fit."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from ptxdiff.compile import refit
from ptxdiff.compile.search import function_of
from ptxdiff.specs.guesses import GuessKind, type_of, value
from ptxdiff.specs.resolve import Spec

KERNEL = """\
def k(x, SCALE: tl.constexpr, BLOCK: tl.constexpr, EPS: tl.constexpr, K: tl.constexpr):
    v = tl.dot_scaled(x, SCALE)
    w = tl.reshape(v, (BLOCK, 4))
    y = 1 << (127 + EPS)
"""


class Located(Exception):
    def __init__(self, text: str, line: int):
        super().__init__(text)
        fn = function_of(KERNEL)
        assert fn is not None
        self.src, self.error_message = KERNEL, text
        self.node = next(s for s in fn.body if s.lineno == line)


@pytest.mark.parametrize("text, about", [
    ("cannot change total number of elements in tensor", True),
    ("arange's range must be a power of 2", True),
    ("For loop bounds and step must all be ints", False),
    ("ValueError: negative shift count", True),   # `0xFF >> (8 - bit)` of a guessed bit of 64
    # a dot of a guessed small count (Triton-distributed's gemm_a2a, a guessed size of 4)
    ("AssertionError: Input shapes should have M >= 16, N >= 16 and K >= 16", True),
])
def test_about_shapes(text, about):
    assert refit.about_shapes(Located(text, 2)) is about


SPEC = Spec(signature=(("x", "*fp32"), ("SCALE", "constexpr"), ("BLOCK", "constexpr"), ("EPS", "constexpr")),
            constexprs=(("SCALE", 4), ("BLOCK", 64), ("EPS", 0.5)), num_warps=4, num_stages=3,
            guessed=(value("SCALE", 4), value("BLOCK", 64), value("EPS", 0.5), type_of("x", "*fp32")))


def search(error: Located, fits) -> tuple[dict | None, list[dict]]:
    tried: list[dict] = []

    def attempt(s: Spec) -> BaseException | None:
        values = dict(s.constexprs)
        tried.append(values)
        return None if fits(values) else error

    return refit.search(attempt, SPEC, error, SimpleNamespace(src=KERNEL)), tried


def test_search_tries_the_sizes_the_error_asks_for_first():
    found, tried = search(Located("scale factor must be 16 or 32. Got 4", 2), lambda v: v["SCALE"] == 32)
    assert found == {"SCALE": 32}
    assert [v["SCALE"] for v in tried] == [16, 32]


def test_search_walks_the_usual_sizes_of_the_suspect_only():
    found, tried = search(Located("cannot change total number of elements", 3), lambda v: v["BLOCK"] == 128)
    assert found == {"BLOCK": 128}
    assert [v["BLOCK"] for v in tried] == [1, 16, 256, 128]
    assert all(v["SCALE"] == 4 and v["EPS"] == 0.5 for v in tried)   # only what is behind the failing line


def test_a_guessed_float_takes_ints_on_a_type_error_only():
    found, _ = search(Located("invalid operands of type fp32 and int32", 4), lambda v: v["EPS"] == 0)
    assert found == {"EPS": 0}
    found, tried = search(Located("Shape element 0 must be a power of 2", 4), lambda v: True)
    assert found is None and tried == []


def test_search_declines_what_is_neither_a_shape_nor_a_type():
    found, tried = search(Located("name 'q' is not defined", 2), lambda v: True)
    assert found is None and tried == []


class CompileTimeAssertionFailure(Located):
    """triton's error for a `tl.static_assert` that fails (its name is what the search reads)."""


@pytest.mark.parametrize("condition, guess, asked", [
    ("K % BLOCK == 0", 64, 128),      # the nearest multiple of BLOCK at or above K (Fast-LLM's inner_dim)
    ("K % BLOCK == 0", 192, 256),
    ("K <= BLOCK", 256, 128),         # Fast-LLM's `sparse_dim <= padded_sparse_dim`
    ("K >= BLOCK", 64, 128),
    ("N == 4 and K % BLOCK == 0", 64, 128),
])
def test_a_static_assert_asks_a_guess_for_what_its_relation_needs(condition, guess, asked):
    kernel = KERNEL + f"    tl.static_assert({condition})\n"
    fn = function_of(kernel)
    assert fn is not None
    error = CompileTimeAssertionFailure("", 2)
    error.src, error.node = kernel, fn.body[-1]
    assert ("K", asked) in refit.asserted_asks(error, kernel, {"K": guess, "BLOCK": 128, "N": 4})
    holds = {"K % BLOCK == 0": 128, "K <= BLOCK": 64, "K >= BLOCK": 128}   # a K for which the relation holds
    assert refit.asserted_asks(error, kernel, {"K": holds.get(condition, 128), "BLOCK": 128, "N": 4}) == []


def test_a_guess_that_a_static_assert_refuses_takes_what_it_asks():
    """`tl.static_assert(K % BLOCK == 0)` with BLOCK from an autotune config (128) and K guessed
    (64): K takes the multiple the relation asks first (it took 1, 16, then 256 before); BLOCK,
    not guessed, stays."""
    kernel = KERNEL + "    tl.static_assert(K % BLOCK == 0)\n"
    fn = function_of(kernel)
    assert fn is not None
    error = CompileTimeAssertionFailure("", 2)
    error.src, error.node = kernel, fn.body[-1]
    spec = Spec(signature=(("x", "*fp32"), ("K", "constexpr"), ("BLOCK", "constexpr")),
                constexprs=(("K", 64), ("BLOCK", 128)), num_warps=4, num_stages=3,
                guessed=(value("K", 64), type_of("x", "*fp32")))
    tried: list[int] = []

    def attempt(s: Spec) -> BaseException | None:
        values = dict(s.constexprs)
        tried.append(values["K"])
        return None if values["K"] % values["BLOCK"] == 0 else error

    assert refit.search(attempt, spec, error, SimpleNamespace(src=kernel)) == {"K": 128}
    assert tried == [128]


@pytest.mark.parametrize("name, guess, text, line, sizes", [
    ("BLOCK", 64, "cannot change total number of elements", 3, [1, 16, 256, 128, 2]),
    ("BLOCK", 1, "cannot change total number of elements", 3, [4, 16, 128, 2]),
    ("BLOCK", 2, "cannot change total number of elements", 3, [1, 8, 16, 128]),
    ("SCALE", 2, "scale factor must be 16 or 32. Got 2", 2, [16, 32, 1, 8, 128]),    # asked, then the usual
    ("SCALE", 4, "scale factor must be 16 or 32. Got 2", 2, [1, 16, 128, 2]),        # not this guess's size
    ("SCALE", 4, "scale factor must be 8, 16 or 32 Got 4", 2, [8, 16, 32, 1, 128, 2]),
    ("EPS", 0.5, "invalid operands of type fp32 and int32", 4, [1, 0]),               # a float's ints
    # two shapes that must agree: a guess of one size tries the other first
    ("BLOCK", 64, "Cannot make_shape_compatible: incompatible dimensions at index 0: 64 and 32", 3,
     [32, 1, 16, 256, 128, 2]),
    ("BLOCK", 32, "Cannot make_shape_compatible: incompatible dimensions at index 0: 64 and 32", 3,
     [64, 1, 8, 128, 16, 2]),
])
def test_the_sizes_tried(name, guess, text, line, sizes):
    values = {**dict(SPEC.constexprs), name: guess}
    spec = dataclasses.replace(SPEC, constexprs=tuple(values.items()),
                               guessed=tuple(value(g.name, values[g.name]) if g.kind is GuessKind.VALUE else g
                                             for g in SPEC.guessed))
    error = Located(text, line)
    tried: list[object] = []

    def attempt(s: Spec) -> BaseException | None:
        tried.append(dict(s.constexprs)[name])
        return error

    assert refit.search(attempt, spec, error, SimpleNamespace(src=KERNEL)) is None
    assert tried[:len(sizes)] == sizes


class PassFailure(RuntimeError):
    """triton's `PassManager::run failed` with no line of the kernel; the worker adds the pass MLIR
    names (`failed_pass`, worker.FAILED_PASS)."""

    failed_pass = "TritonGPUAccelerateMatmul"


def test_a_crash_in_a_dot_pass_searches_the_dot_operands_sizes_before_their_strides():
    """gemlite's MX GEMM: `tl.dot_scaled` with a scale block read `BLOCK_K // group_size` wide,
    group_size guessed 16 from the kernel's `if group_size == 16`, which triton 3.4's lowering of
    fp16 x e4m3 cannot take; 32 (the MX block) can. The stride behind the same operand and an
    unrelated flag guessed 0 (a falsy guess is the first suspect of a crash with no line) wait."""
    kernel = """\
def mx(a_ptr, b_ptr, s_ptr, c_ptr, group_size: tl.constexpr, stride_g: tl.constexpr, FLAG: tl.constexpr,
       BLOCK_K: tl.constexpr):
    S: tl.constexpr = BLOCK_K // group_size
    sb = tl.load(s_ptr + tl.arange(0, S) * stride_g)
    acc = tl.dot_scaled(tl.load(a_ptr), None, "fp16", tl.load(b_ptr), sb, "e4m3")
    if FLAG:
        acc += 1
    tl.store(c_ptr, acc)
"""
    guessed = {"group_size": 16, "stride_g": 1, "FLAG": 0}
    spec = Spec(signature=(("a_ptr", "*fp16"), ("b_ptr", "*fp8e4nv"), ("s_ptr", "*u8"), ("c_ptr", "*fp32"),
                           *((n, "constexpr") for n in [*guessed, "BLOCK_K"])),
                constexprs=(*guessed.items(), ("BLOCK_K", 256)), num_warps=4, num_stages=3,
                guessed=tuple(value(n, v) for n, v in guessed.items()))
    error = PassFailure("PassManager::run failed")
    tried: list[dict] = []

    def attempt(s: Spec) -> BaseException | None:
        values = dict(s.constexprs)
        tried.append({k: values[k] for k in guessed if values[k] != guessed[k]})
        return None if values["group_size"] == 32 else PassFailure("PassManager::run failed")

    assert refit.search(attempt, spec, error, SimpleNamespace(src=kernel)) == {"group_size": 32}
    assert all(list(t) == ["group_size"] for t in tried), tried
