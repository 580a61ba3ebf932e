"""Signature types of a kernel's runtime parameters from its source alone (discovery/params.py):
use decides, names only where use says nothing, and a helper's use counts for what the kernel
hands it."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ptxdiff.discovery.params import infer_param_kinds, int_named, kinds_through_helpers, params_behind, written_only

GATHER = '''
def k(X, P, Out, n_rows, eps, w, shape: "i64", BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    j = tl.load(P + tl.program_id(0))
    x = tl.load(X + j * BLOCK + offs)
    for r in range(n_rows):
        x = x * 2
    y = x * tl.rsqrt(x + eps)
    tl.store(Out + offs, y)
'''

HELPER = '''
def _h(P, S):
    v = tl.load(P)
    n = tl.load(S)
    for i in range(n):
        v += 1
    return v


def k(A, B):
    return _h(A, B)
'''


def functions(src: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(textwrap.dedent(src)).body if isinstance(n, ast.FunctionDef)}


def kernel(src: str) -> ast.FunctionDef:
    return functions(src)["k"]


def test_each_runtime_param_gets_the_type_its_use_implies():
    assert infer_param_kinds(kernel(GATHER)) == {
        "X": "*fp32", "Out": "*fp32",   # addresses
        "P": "*i32",                    # its values index another load
        "n_rows": "i32",                # a loop bound
        "eps": "fp32",                  # a float word
        "w": None,                      # nothing says what it is
        "shape": "i64",                 # a string annotation is the type
    }


def test_a_pointer_whose_values_only_flow_into_data_is_a_float_pointer():
    data_only = GATHER.replace("j * BLOCK + offs", "offs")
    assert infer_param_kinds(kernel(data_only))["P"] == "*fp32"


def test_constexprs_are_typed_only_when_asked():
    fn = kernel(GATHER)
    assert "BLOCK" not in infer_param_kinds(fn)
    assert infer_param_kinds(fn, constexprs=True)["BLOCK"] == "i32"


def test_a_param_the_kernel_only_hands_to_a_helper_takes_the_helpers_type():
    fns = functions(HELPER)
    own = infer_param_kinds(fns["k"])
    assert own == {"A": None, "B": "i32"}
    # the helper loads from both; S's values bound a loop: an index pointer
    assert kinds_through_helpers(fns["k"], own, fns) == {"A": "*fp32", "B": "*i32"}
    assert kinds_through_helpers(fns["k"], own, fns, depth=0) == own


def test_outputs_are_the_pointers_only_stored_to():
    assert written_only(kernel(GATHER)) == frozenset({"Out"})
    assert written_only(kernel(GATHER.replace("tl.store(Out + offs, y)", "tl.atomic_add(X + offs, y)"))) == frozenset()


def test_the_params_behind_a_value_are_found_through_assignments_nearest_first():
    fn = kernel(GATHER)
    assert params_behind(fn, {"y"}) == ["eps", "X", "P"]
    assert params_behind(fn, {"x"}) == ["X", "P"]
    assert params_behind(fn, {"offs"}) == []                               # made of a constexpr only
    assert params_behind(fn, {"offs"}, among={"BLOCK"}) == ["BLOCK"]


@pytest.mark.parametrize("name, is_int", [
    ("n_rows", True), ("num_heads", True), ("seq_len", True), ("stride_am", True), ("M", True),
    ("start_m", True), ("start", True),
    ("x", False), ("mean_val", False), ("non_zero", False), ("Z", False), ("restart", False), ("startup", False),
])
def test_a_name_says_integer_only_for_a_size_count_stride_or_dimension(name, is_int):
    assert int_named(name) is is_int


def test_of_a_dimension_s_letter_and_an_offset_s_word_in_one_address_the_letter_is_the_pointer():
    """FastVideo's `_attn_bwd_dkdv`: `m = tl.load(M + offs_m)`, offs_m from `start_m + tl.arange(...)`:
    M (the row statistics) was read as a size and start_m as the pointer, so its kernel handed M
    an int and every spec failed. A word that says int goes first; `ROWSCALE + M + row` stays."""
    kinds = infer_param_kinds(kernel('''
def k(M, D, start_m, BLOCK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK)
    m = tl.load(M + offs_m)
    d = tl.load(D + offs_m)
'''))
    assert kinds == {"M": "*fp32", "D": "*fp32", "start_m": "i32"}
    assert infer_param_kinds(kernel("def k(ROWSCALE, M):\n    r = tl.load(ROWSCALE + M + tl.arange(0, 4))\n")) == \
        {"ROWSCALE": "*fp32", "M": "i32"}


def test_values_the_kernel_hands_to_a_helper_that_dots_them_take_their_partner_s_type():
    """FastVideo's `_attn_bwd_dkdv_kernel`: `k = tl.load(K + ...)` handed to a helper whose
    `tl.dot(k, qT)` takes qT from its Q, bf16 by a cast beside it (`tl.dot(ds.to(tl.bfloat16), qT)`):
    K was the default fp32, the dot refused the pair, and the type search flipped Q instead."""
    fns = functions('''
def _h(dk, Q, k, v, DO):
    qT = tl.load(Q + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    s = tl.dot(k, qT)
    do = tl.load(DO + tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :])
    dp = tl.dot(v, do)
    dk += tl.dot(s.to(tl.bfloat16), qT) + tl.dot(dp.to(tl.bfloat16), do)
    return dk


def k(Q, K, V, DO, Out):
    offs = tl.arange(0, 16)[:, None] * 16 + tl.arange(0, 16)[None, :]
    k = tl.load(K + offs)
    v = tl.load(V + offs)
    dk = _h(tl.zeros([16, 16], dtype=tl.float32), Q, k, v, DO)
    tl.store(Out + offs, dk)
''')
    kinds = kinds_through_helpers(fns["k"], infer_param_kinds(fns["k"]), fns)
    assert (kinds["Q"], kinds["K"], kinds["V"], kinds["DO"], kinds["Out"]) == ("*bf16", "*bf16", "*bf16", "*bf16", "*fp32")


def test_a_pointer_the_kernel_passes_on_through_a_local_it_was_assigned_to_whole():
    """`do = DO`, `do = SLIDE_DO` in a branch, or `o = SlidingOut if s else Out`, then `do += off`
    and the local handed to a helper that loads from it: each of those params is a pointer (before,
    several params among the local's terms read as none of them, and `LSE` was guessed an int)."""
    fns = functions('''
def _h(P, Q):
    return tl.load(P) + tl.load(Q)


def k(DO, SLIDE_DO, Out, SlidingOut, off, SLIDING: tl.constexpr):
    do = DO
    if SLIDING:
        do = SLIDE_DO
    do += off
    o = SlidingOut if SLIDING else Out
    return _h(do, o)
''')
    kinds = kinds_through_helpers(fns["k"], infer_param_kinds(fns["k"]), fns)
    assert {p: kinds[p] for p in ("DO", "SLIDE_DO", "Out", "SlidingOut")} == dict.fromkeys(
        ("DO", "SLIDE_DO", "Out", "SlidingOut"), "*fp32")
    assert kinds["off"] != "*fp32"


def test_a_lock_a_compare_and_swap_compares_with_an_int_holds_ints():
    """apple/ml-cross-entropy's spin lock, `while tl.atomic_cas(lock_ptr, 0, 1) == 1: pass` in a
    helper the kernel hands `Locks + pid % 4`: triton requires the pointer's element type to be the
    compared value's. Before, the lock was guessed i32, then *fp32, and neither compiled."""
    fns = functions('''
def _locked_add(ptrs, v, lock_ptr):
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    tl.store(ptrs, tl.load(ptrs) + v)
    tl.atomic_xchg(lock_ptr, 0)


def k(X, Out, Locks, RowLocks, Flags, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    _locked_add(Out + offs, x, Locks + tl.program_id(0) % 4)
    this_lock = RowLocks + tl.program_id(0) // 2
    while tl.atomic_cas(this_lock, 0, 1) == 1:
        pass
    tl.atomic_xchg(this_lock, 0)
    tl.atomic_cas(Flags + n, 0.0, 1.0)
''')
    kinds = kinds_through_helpers(fns["k"], infer_param_kinds(fns["k"]), fns)
    assert kinds["Locks"] == kinds["RowLocks"] == "*i32"
    assert kinds["Out"] == "*fp32" and kinds["X"] == "*fp32"
    assert kinds["Flags"] == "*fp32" and kinds["n"] != "*i32"   # compared with floats; an offset stays an int
