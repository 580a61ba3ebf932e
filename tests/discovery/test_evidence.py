"""Guesses from the kernel's own evidence (issues 41 and 37): dtypes and scalar widths as values
where a side converts, heuristics evaluated on each side of what they test, values the kernel
names (static_assert, triton's option strings, a module's enum), divisors never 0, a loaded
`tl.dot` operand's type, and a compiler crash under a guess searched as a misfit. Unit tests on
the guesses; for the first three classes a `ptxdiff diff` between two commits that must read
`structural`, with a control (an equivalent rewrite that reads `identical` on every row)."""

from __future__ import annotations

import ast
import textwrap
from types import SimpleNamespace

import pytest

from helpers import EVEN, HEADER, PRODUCT, SCALAR, commit, make_repo, run_json
from ptxdiff.discovery.evidence import converted_scalars, converts_values, heuristic_sizes
from ptxdiff.discovery.hints import constexpr_hints, module_constants
from ptxdiff.discovery.params import infer_param_kinds, written_only


def parsed(src: str, name: str = "k") -> tuple[ast.FunctionDef, ast.Module]:
    tree = ast.parse(textwrap.dedent(src))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), tree


def hints_of(src: str) -> dict:
    fn, tree = parsed(src)
    return {n: h.values for n, h in constexpr_hints(fn, module_constants(tree), infer_param_kinds(fn, True)).items()}


# --- dtypes: a conversion makes the launch's element types matter ---------------------------

@pytest.mark.parametrize("body, converts", [
    ("y = x.to(tl.float32) * 2", True),
    ("y = tl.cast(x, tl.bfloat16)", True),
    ("y = (x * 2).to(Out.dtype.element_ty)", True),
    ("y = tl.zeros([BLOCK], dtype=Out.dtype.element_ty) + x", True),   # reads an element type
    ("y = x.to(tl.int32, bitcast=True)", False),                        # the bits kept: no conversion
    ("y = x.to(tl.int64)", False),
    ("y = x * 2", False),
])
def test_a_kernel_converts_where_it_casts_to_a_float_type_or_reads_an_element_type(body, converts):
    fn, _ = parsed(f"""
        def k(X, Out, BLOCK: tl.constexpr):
            x = tl.load(X + tl.arange(0, BLOCK))
            {body}
            tl.store(Out + tl.arange(0, BLOCK), y)
    """)
    assert converts_values(fn) is converts


def test_a_conversion_inside_a_helper_counts():
    fn, tree = parsed("""
        def up(x):
            return x.to(tl.float32)
        def k(X, Out, BLOCK: tl.constexpr):
            tl.store(Out, up(tl.load(X)))
    """)
    helpers = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert not converts_values(fn) and converts_values(fn, helpers)


def test_a_scalar_converted_as_it_is_is_compiled_as_fp64_too():
    fn, _ = parsed("""
        def k(X, eps, scale, beta, gamma, n, BLOCK: tl.constexpr):
            x = tl.load(X + tl.arange(0, BLOCK)).to(tl.float32)
            g = gamma
            y = x * eps.to(tl.float32) + tl.cast(scale, tl.float32) + tl.full([1], g, tl.float32) + beta
            tl.store(X + tl.arange(0, BLOCK), (y * beta).to(tl.bfloat16))
    """)
    assert converted_scalars(fn) == {"eps", "scale", "gamma"}   # not beta: it meets a conversion only


def test_outputs_are_the_pointers_only_stored_to():
    fn, _ = parsed("""
        def k(X, Y, Out, Acc, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(X + offs) + tl.load(Acc + offs)
            tl.store(Out + offs, x)
            tl.atomic_add(Acc + offs, x)
            helper(Y)
    """)
    assert written_only(fn) == {"Out"}   # Acc is read too, Y handed to a helper that may load


# --- heuristics: sizes on each side of every boundary ------------------------------------

@pytest.mark.parametrize("heuristic, sizes", [
    ('a["n"] % a["BLOCK"] == 0', {4096, 4097}),          # divisible and not
    ('a["n"] > 2048', {4096, 2048}),                       # above and at the threshold
    ('a["n"] <= 8192', {4096, 8192, 16384}),
    ('a["n"] <= a["BLOCK"]', {4096, 16}),                  # below any guessed block, too
    ('a["BLOCK"] > 16', None),                             # reads no runtime int
    ('triton.next_power_of_2(a["n"])', None),              # tests nothing
])
def test_a_heuristic_is_evaluated_on_each_side_of_what_it_tests(heuristic, sizes):
    fn, tree = parsed(HEADER + f"""
@triton.heuristics({{"H": lambda a: {heuristic}}})
@triton.jit
def k(X, n, BLOCK: tl.constexpr, H: tl.constexpr):
    tl.store(X + tl.arange(0, BLOCK), H)
""")
    found = heuristic_sizes(fn, module_constants(tree))
    assert (set(found["n"].values) if "n" in found else None) == sizes


# --- values the kernel names --------------------------------------------------------------

def test_a_static_assert_names_the_value():
    hints = hints_of("""
        def k(X, N: tl.constexpr, M: tl.constexpr):
            tl.static_assert(N == 4)
            tl.static_assert(M in (2, 8) and N > 0)
            tl.store(X + tl.arange(0, N * M), 1.0)
    """)
    assert hints["N"] == (4,) and hints["M"] == (2, 8)


def test_a_constexpr_the_kernel_calls_is_a_function_guessed_none():
    """`if exists(ACTIVATION): o = ACTIVATION(o)`: no size is a function (lucidrains' bmm read
    `'int' object is not callable` under the guess 64)."""
    hints = hints_of("""
        def k(X, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
            o = tl.load(X + tl.arange(0, BLOCK))
            if ACTIVATION is not None:
                o = ACTIVATION(o)
            tl.store(X + tl.arange(0, BLOCK), o)
    """)
    assert hints["ACTIVATION"] == (None,) and hints["BLOCK"] != (None,)


def test_options_take_tritons_strings_never_a_size():
    hints = hints_of("""
        def k(A, B, C, PREC: tl.constexpr, EVICT: tl.constexpr, CACHE: tl.constexpr, P2: tl.constexpr):
            a = tl.load(A, eviction_policy=EVICT)
            b = tl.load(B, cache_modifier=CACHE)
            if P2 == "ieee":
                a = a * 2
            tl.store(C, tl.dot(a, b, input_precision=PREC) + tl.dot(a, b, input_precision=P2))
    """)
    assert hints["PREC"] == ("tf32",) and hints["EVICT"] == ("",) and hints["CACHE"] == ("",)
    assert hints["P2"] == ("ieee", "tf32")   # each branch, with allowed strings only


def test_a_mode_compared_with_the_modules_enum_takes_its_constants():
    hints = hints_of(HEADER + """
MODE_SUM = tl.constexpr(0)
MODE_MEAN = tl.constexpr(1)
MODE_MAX = tl.constexpr(2)


class Act:
    RELU = 0
    GELU = 1


@triton.jit
def k(X, MODE: tl.constexpr, ACT: tl.constexpr):
    x = tl.load(X)
    if MODE == MODE_MEAN:
        x = x / 2
    if ACT == Act.GELU:
        x = x * 0.5
    tl.store(X, x)
""")
    assert hints["MODE"] == (0, 1, 2)   # never 64, a value no launch passes
    assert hints["ACT"] == (0, 1)


@pytest.mark.parametrize("use, values", [
    ("keep = offs % SAVE_EVERY == 0", (4,)),              # a flag by name, but a divisor: never False
    ("keep = (offs // SAVE_EVERY) > 0", (4,)),
    ("keep = offs < tl.cdiv(BLOCK, SAVE_EVERY)", (4,)),
    ("keep = offs < 0\n    if SAVE_EVERY:\n        keep = offs % SAVE_EVERY == 0", (False, True)),   # tested first
])
def test_a_divisor_is_never_0_nor_false(use, values):
    hints = hints_of(f"""
def k(X, SAVE_EVERY: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    {use}
    tl.store(X + offs, 1.0, mask=keep)
""")
    assert hints["SAVE_EVERY"] == values


def test_a_loaded_dot_operand_takes_the_other_operands_type_never_i32():
    kinds = infer_param_kinds(parsed("""
        def k(A, S, Out, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if A.dtype.element_ty == tl.float16:
                pass
            a = tl.load(A + offs[:, None] * BLOCK + offs[None, :])
            s = tl.load(S + offs[:, None] * BLOCK + offs[None, :])
            tl.store(Out + (s % 4), tl.dot(a, s))
    """)[0])
    assert kinds["A"] == "*fp16" and kinds["S"] == "*fp16"


@pytest.mark.parametrize("accumulate", [
    "acc = tl.zeros((BLOCK, BLOCK), dtype=tl.int32)\n    acc += tl.dot(a, b)",
    "acc = tl.zeros((BLOCK, BLOCK), tl.int32)\n    acc = tl.dot(a, b, acc)",
    "acc = tl.dot(a, b, out_dtype=tl.int32)",
    "acc = tl.zeros((BLOCK, BLOCK), dtype=ACC)\n    acc += tl.dot(a, b)",   # a constexpr whose default says so
])
def test_an_integer_dot_takes_8_bit_operands(accumulate):
    """ao's int8 matmul: under fp32 guesses the int32 accumulator changed type in its loop."""
    kinds = infer_param_kinds(parsed(f"""
def k(A, B, C, BLOCK: tl.constexpr, ACC: tl.constexpr = tl.int32):
    offs = tl.arange(0, BLOCK)
    a = tl.load(A + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(B + offs[:, None] * BLOCK + offs[None, :])
    {accumulate}
    tl.store(C + offs[:, None] * BLOCK + offs[None, :], acc)
""")[0])
    assert (kinds["A"], kinds["B"], kinds["C"]) == ("*i8", "*i8", "*fp32")


def test_a_float_dot_s_operands_stay_as_they_were():
    kinds = infer_param_kinds(parsed("""
def k(A, B, C, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    acc += tl.dot(tl.load(A + offs[:, None] * BLOCK + offs[None, :]), tl.load(B + offs[:, None] * BLOCK + offs[None, :]))
    tl.store(C + offs[:, None] * BLOCK + offs[None, :], acc)
""")[0])
    assert kinds["A"] == kinds["B"] == "*fp32"


# --- a compiler crash under a guess is a misfit, searched --------------------------------

def test_a_compiler_crash_under_a_guessed_zero_is_searched():
    from ptxdiff.compile import refit
    from ptxdiff.specs.guesses import value
    from ptxdiff.specs.resolve import Spec

    src = "def k(x, S: tl.constexpr, BLOCK: tl.constexpr):\n    y = x % S\n"
    spec = Spec(signature=(("x", "*fp32"), ("S", "constexpr"), ("BLOCK", "constexpr")),
                constexprs=(("S", False), ("BLOCK", 64)), num_warps=4, num_stages=3,
                guessed=(value("S", False), value("BLOCK", 64)))
    crash = RuntimeError("PassManager::run failed")   # triton's MLIR pipeline; the reproducer went to stderr
    tried: list[dict] = []

    def attempt(s: Spec) -> BaseException | None:
        tried.append(dict(s.constexprs))
        return crash if not dict(s.constexprs)["S"] else None

    assert refit.crashed(crash)
    assert refit.search(attempt, spec, crash, SimpleNamespace(src=src)) == {"S": 1}
    assert tried[0]["S"] == 1   # the falsy guess first


# --- end to end: `ptxdiff diff` between two commits -------------------------------------

def _rows(tmp_path, old: str, new: str, capsys) -> list[dict]:
    repo = make_repo(tmp_path, {"ops/k.py": old})
    commit(repo, "change", {"ops/k.py": new})
    return run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--all"], capsys)["kernels"]


def _verdicts(rows: list[dict]) -> set[str]:
    assert all(r["error"] is None for r in rows), [(r["spec"], r["error"]) for r in rows]
    return {r["verdict"] for r in rows}



@pytest.mark.integration
@pytest.mark.parametrize("new, verdict", [
    ("x * y", "structural"),                                          # the upcast dropped: bf16 math
    ("tl.cast(x, tl.float32) * tl.cast(y, tl.float32)", "identical"),  # control: the same upcast
])
def test_an_upcast_dropped_shows_under_16_bit_inputs(tmp_path, capsys, new, verdict):
    rows = _rows(tmp_path, PRODUCT.replace("EXPR", "x.to(tl.float32) * y.to(tl.float32)"),
                 PRODUCT.replace("EXPR", new), capsys)
    by_type = {r["spec_detail"]["signature"]["X"]: r["verdict"] for r in rows}
    assert _verdicts(rows) and by_type["*fp32"] == "identical"   # under the fp32 guess alone it read identical
    assert by_type["*bf16"] == verdict
    assert {r["spec_detail"]["signature"]["Out"] for r in rows} == {"*fp32"}   # an output stays fp32



@pytest.mark.integration
@pytest.mark.parametrize("old, new, verdict", [
    ("scale", "scale.to(tl.float32)", "structural"),       # the fix: fp64 math under torch.compile gone
    ("scale.to(tl.float32)", "scale", "structural"),       # its reversal
    ("scale.to(tl.float32)", "tl.cast(scale, tl.float32)", "identical"),   # control
])
def test_a_scalar_cast_shows_under_fp64_scalars(tmp_path, capsys, old, new, verdict):
    rows = _rows(tmp_path, SCALAR.replace("EXPR", old), SCALAR.replace("EXPR", new), capsys)
    by_width = {r["spec_detail"]["signature"]["scale"]: r["verdict"] for r in rows}
    assert _verdicts(rows) and by_width["fp32"] == "identical" and by_width["fp64"] == verdict



@pytest.mark.integration
@pytest.mark.parametrize("new, verdicts", [
    ("True", {"structural", "identical"}),                   # n % BLOCK != 0 compiled EVEN=False before
    ('a["n"] % a["BLOCK"] < 1', {"identical"}),                # control: the same test
])
def test_a_heuristic_made_constant_shows_at_a_size_it_separated(tmp_path, capsys, new, verdicts):
    rows = _rows(tmp_path, EVEN.replace("EXPR", 'a["n"] % a["BLOCK"] == 0'), EVEN.replace("EXPR", new),
                 capsys)
    assert _verdicts(rows) == verdicts
    assert any("n=4097" in r["spec"] for r in rows)


@pytest.mark.integration
def test_a_guess_that_makes_constant_arithmetic_impossible_is_searched(tmp_path, capsys):
    """`0xFF >> (8 - BITS)` of a guessed BITS of 64 is a negative shift: Python's ValueError while
    triton folds constants, a misfit like a shape's, searched to a size that fits (KIVI)."""
    repo = make_repo(tmp_path, {"ops/k.py": HEADER + """
@triton.jit
def unpack(Q, Out, BITS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = 0xFF >> (8 - BITS)
    tl.store(Out + offs, tl.load(Q + offs) & mask)
"""})
    rows = run_json(["show", "-C", str(repo), "HEAD"], capsys)["kernels"]
    assert [r["error"] for r in rows] == [None]
    assert 1 <= dict(rows[0]["spec_detail"]["constexprs"])["BITS"] <= 8



DOT_PAIR = HEADER + """
@triton.jit
def attend(Q, K, V, Out, BLOCK: tl.constexpr):
    idx = tl.arange(0, BLOCK)[:, None] * BLOCK + tl.arange(0, BLOCK)[None, :]
    q = tl.load(Q + idx)
    k = tl.load(K + idx)
    v = tl.load(V + idx)
    p = tl.dot(EXPR, k)
    tl.store(Out + idx, tl.dot(p.to(tl.float16), v))
"""


@pytest.mark.integration
def test_of_two_operands_that_disagree_the_odd_one_out_changes(tmp_path, capsys):
    """K and V are guessed fp16 (the dots' other operands are fp16); the old side's `tl.dot(q, k)`
    has Q (fp32, or bf16) against K and asks each for the other's type: Q, the odd one out,
    takes fp16; K taking fp32 would break the new side's `tl.dot(q.to(tl.float16), k)`, and
    every row failed (DeepSpeed's attention kernel, on triton 3.0's words for the same error)."""
    rows = _rows(tmp_path, DOT_PAIR.replace("EXPR", "q"), DOT_PAIR.replace("EXPR", "q.to(tl.float16)"), capsys)
    assert _verdicts(rows) == {"identical"}   # with Q fp16 the cast is no change
    assert {(r["spec_detail"]["signature"]["Q"], r["spec_detail"]["signature"]["K"]) for r in rows} == {("*fp16", "*fp16")}


@pytest.mark.integration
def test_kernels_built_inside_a_function_that_imports_triton_compile(tmp_path, capsys):
    """pytorch/ao: kernels and their helper defined in a function whose own body imports triton;
    every row read `reads tl, a local of _build()`."""
    repo = make_repo(tmp_path, {"ops/k.py": """
def _build():
    import triton
    import triton.language as tl

    @triton.jit
    def twice(x):
        return x * 2.0

    @triton.jit
    def scale(X, Y, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(Y + offs, twice(tl.load(X + offs)))

    return scale
"""})
    rows = run_json(["show", "-C", str(repo), "HEAD"], capsys)["kernels"]
    assert [r["kernel"] for r in rows] == ["ops/k.py::_build.scale"]
    assert [r["error"] for r in rows] == [None]
