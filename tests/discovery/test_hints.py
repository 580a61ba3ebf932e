"""Guesses for constexprs nothing passes (discovery/hints.py), read from the kernel's use of each:
sizes, flags, loop counts, dtypes, triton's option strings, the values comparisons, enums and
static asserts name, and one value past each comparison so every branch compiles."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ptxdiff.discovery.hints import (
    LARGEST_SIZE,
    asserted,
    boundary,
    constant,
    constexpr_hints,
    enum_domains,
    module_constants,
    module_functions,
    required_flags,
    unmatched,
)

MODULE = '''
MODE_A: tl.constexpr = tl.constexpr(0)
MODE_B: tl.constexpr = tl.constexpr(1)
MODE_C = 2
TWICE = 1
TWICE = 2
NAME = "x"
COMPUTED = [1]


class Act:
    RELU = 0
    GELU = 1


def k(x_ptr, MODE: tl.constexpr, ACT: tl.constexpr, N: tl.constexpr, G: tl.constexpr, BLOCK: tl.constexpr,
      DT: tl.constexpr, R: tl.constexpr, FLAG: tl.constexpr, PREC: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    tl.static_assert(N == 4 and G in (2, 8))
    if MODE == MODE_B:
        pass
    if ACT != Act.GELU:
        pass
    offs = tl.arange(0, BLOCK)
    z = tl.load(x_ptr + offs).to(DT)
    for i in range(R):
        pass
    if FLAG:
        pass
    d = tl.dot(z, z, input_precision=PREC)
    for j in tl.range(0, 4, warp_specialize=WARP_SPECIALIZE):
        pass
'''


@pytest.fixture
def module() -> tuple[ast.Module, ast.FunctionDef, dict]:
    tree = ast.parse(textwrap.dedent(MODULE))
    return tree, module_functions(tree)["k"], module_constants(tree)


def test_module_constants_are_names_bound_once_to_a_literal_and_class_constants(module):
    tree, _, consts = module
    assert consts == {"MODE_A": 0, "MODE_B": 1, "MODE_C": 2, "NAME": "x", "Act.RELU": 0, "Act.GELU": 1}
    assert list(module_functions(tree)) == ["k"]


def test_a_class_constant_reads_with_or_without_value(module):
    _, _, consts = module

    def read(text: str) -> tuple[bool, object]:
        return constant(ast.parse(text, mode="eval").body, consts)
    assert read("Act.GELU") == (True, 1) and read("Act.RELU.value") == (True, 0)
    assert read("Act.TANH")[0] is False and read("3") == (True, 3)


def test_each_constexpr_is_guessed_from_its_use(module):
    _, fn, consts = module
    hints = {name: hint.values for name, hint in constexpr_hints(fn, consts).items()}
    assert hints == {
        "MODE": (0, 1, 2),             # compared with MODE_B: the MODE_ enum's values
        "ACT": (0, 1),                 # compared with Act.GELU: the class's values
        "N": (4,), "G": (2, 8),        # what tl.static_assert allows, and nothing else
        "BLOCK": (1024,),              # a lone arange bound: a row kernel's block
        "DT": ("tl.float32",),         # a dtype
        "R": (2,),                     # a loop count
        "FLAG": (False, True),         # tested by `if`: both ways
        "PREC": ("tf32",),             # passed as input_precision: one of triton's strings
        "WARP_SPECIALIZE": (False,),   # tl.range's switch, not a count of warps (tritonbench guessed 4)
    }
    assert constexpr_hints(fn, consts)["MODE"].branches and not constexpr_hints(fn, consts)["BLOCK"].branches


def test_enums_and_static_asserts_give_their_values(module):
    _, fn, consts = module
    assert enum_domains(fn, {"MODE", "ACT"}, consts) == {"MODE": [0, 1, 2], "ACT": [0, 1]}
    assert enum_domains(fn, {"FLAG"}, consts) == {}
    assert asserted(fn, {"N", "G"}, consts) == {"N": [4], "G": [2, 8]}


@pytest.mark.parametrize("values, block, other", [
    ((False,), False, True),
    ((False, True), False, None),                      # every branch is taken already
    (("a", ""), False, "_"),
    ((64, 128), False, 32),                            # a size stays a power of two
    ((64, 128, 32, 1024, 16), True, None),             # no size left for a block
    ((64, 128, 32, 1024, 16), False, 1025),
    ((3, 5), False, 64),
    ((1e-6,), False, 2e-6),
    ((None,), False, None),
])
def test_unmatched_is_a_value_of_the_same_kind_that_equals_none(values, block, other):
    assert unmatched(values, block) == other


def test_a_boundary_compiles_the_value_and_its_neighbour_on_the_other_side():
    assert boundary(ast.Lt(), 1024) == (1024, 512)     # a power of two: its neighbour is one too
    assert boundary(ast.Gt(), 1024) == (1024, 2048)
    assert boundary(ast.Lt(), 1024, flipped=True) == (1024, 2048)   # `1024 < X`
    assert boundary(ast.LtE(), 10) == (10, 11) and boundary(ast.GtE(), 10) == (10, 9)
    assert boundary(ast.Gt(), LARGEST_SIZE) == (LARGEST_SIZE,)   # past it takes hours to compile
    assert boundary(ast.Gt(), True) == () and boundary(ast.Lt(), "x") == ()


def test_a_count_named_so_in_a_shape_is_guessed_small_not_a_block():
    """`QUERY_HEAD_GROUPS` as one side of a shape (`q.reshape(BLOCK, HEAD_GROUPS, D)`): its name
    says a small count (4), as `BLOCK_D` beside it says a block (64); guessed 64, a repository's
    `16 // HEAD_GROUPS` made a 0-wide shape and every spec failed."""
    fn = module_functions(ast.parse(textwrap.dedent('''
def k(x_ptr, BLOCK: tl.constexpr, HEAD_GROUPS: tl.constexpr, BLOCK_D: tl.constexpr):
    q = tl.load(x_ptr + tl.arange(0, BLOCK * HEAD_GROUPS * BLOCK_D))
    q = q.reshape(BLOCK, HEAD_GROUPS, BLOCK_D)
    tl.store(x_ptr + tl.arange(0, BLOCK * HEAD_GROUPS * BLOCK_D), q.reshape(BLOCK * HEAD_GROUPS * BLOCK_D))
''')))["k"]
    hints = {name: hint.values for name, hint in constexpr_hints(fn, {}).items()}
    assert hints["HEAD_GROUPS"] == (4,) and hints["BLOCK_D"] == hints["BLOCK"] == (64,)


def test_a_dtype_whose_values_an_integer_operator_takes_is_guessed_an_integer():
    """Fast-LLM's `sparse_map_kernel`: counts made `.to(dtype)` and summed, then rounded up with
    `//`; guessed fp32, triton refused (`unexpected type fp32`) on both sides. A dtype the values
    of which reach only float arithmetic, or `%`, stays the pointers' float."""
    fn = module_functions(ast.parse(textwrap.dedent('''
def k(x_ptr, pad, COUNT_T: tl.constexpr, MASK_T: tl.constexpr, OUT_T: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    counts = tl.sum((tl.load(x_ptr + offs) == 1).to(COUNT_T), 0)
    padded = counts + pad - 1
    rounded = padded // pad * pad
    bits = tl.zeros((BLOCK,), dtype=MASK_T) | 1
    out = tl.load(x_ptr + offs).to(OUT_T) * 2.0 % 3.0
    tl.store(x_ptr + offs, out + rounded + bits)
''')))["k"]
    hints = {name: hint.values for name, hint in constexpr_hints(fn, {}).items()}
    assert hints["COUNT_T"] == hints["MASK_T"] == ("tl.int32",) and hints["OUT_T"] == ("tl.float32",)


def test_a_flag_the_kernel_compiles_one_way_only_is_guessed_that_way():
    """tritonbench's `_attn_fwd_tma_ws_persistent`: `desc_q` is made only `if ENABLE_TMA:` and read
    after it by both branches of `if HAS_WS:`; with ENABLE_TMA guessed False triton raises a
    NameError, and the old side's row failed. A name read again only under the same flag, or
    bound before the `if`, asks nothing."""
    fn = ast.parse(textwrap.dedent('''
        def k(x_ptr, y_ptr, ENABLE_TMA: tl.constexpr, HAS_WS: tl.constexpr, USE_B: tl.constexpr, FAST: tl.constexpr):
            offs = tl.arange(0, 16)
            if ENABLE_TMA:
                desc_q = tl.make_tensor_descriptor(x_ptr, shape=[16], strides=[1], block_shape=[16])
            if USE_B:
                b = tl.load(x_ptr + offs)
            s = 0.0
            if not FAST:
                s = 1.0
            for i in range(4):
                if HAS_WS:
                    q = desc_q.load([0])
                else:
                    q = desc_q.load([16])
                if USE_B:
                    q += b
                tl.store(y_ptr + offs, q + s)
    ''')).body[0]
    assert required_flags(fn, {"ENABLE_TMA", "HAS_WS", "USE_B", "FAST"}) == {"ENABLE_TMA": True}
    hint = constexpr_hints(fn, {})["ENABLE_TMA"]
    assert hint.values == (True,) and "only `if ENABLE_TMA:` binds" in hint.why
    assert constexpr_hints(fn, {})["USE_B"].values == (False, True)
