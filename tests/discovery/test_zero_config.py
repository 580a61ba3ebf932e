"""Zero configuration: guesses from the kernel's use of its parameters, facts from its launch
sites, one plan for both sides, and specs that say where each value came from."""

from __future__ import annotations

import ast
import itertools
import textwrap

import pytest

from helpers import HEADER, commit, make_repo
from ptxdiff.discovery.callsites import Fact
from ptxdiff.discovery.descriptors import descriptor_types
from ptxdiff.discovery.hints import constexpr_hints, optional_params
from ptxdiff.discovery.kernels import discover
from ptxdiff.discovery.params import infer_param_kinds
from ptxdiff.repo_config import Config
from ptxdiff.source.modules import FileSet
from ptxdiff.specs.cover import cover_combinations as _cover
from ptxdiff.specs.launch import inputs_of
from ptxdiff.specs.plan import make

KERNEL = HEADER + '''
MODE_A: tl.constexpr = tl.constexpr(0)
MODE_B: tl.constexpr = tl.constexpr(1)


@triton.heuristics({"HAS_BIAS": lambda args: args["b_ptr"] is not None})
@triton.jit
def k(x_ptr, b_ptr, y_ptr, n, eps, offset, mode: tl.constexpr, HAS_BIAS: tl.constexpr, affine: tl.constexpr,
      X_dtype: tl.constexpr, BLOCK: tl.constexpr, ROWS: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    for r in range(ROWS):
        x = x + 1
    if mode == MODE_A:
        x = x.to(tl.float32)
    if affine:
        x = x * 2.0
    if HAS_BIAS:
        x += tl.load(b_ptr + offs, mask=mask)
    y = x * tl.rsqrt(x + eps) + offset
    tl.store(y_ptr + offs, y.to(X_dtype), mask=mask)


def launch(x, b, y, eps, affine):
    n = x.numel()
    k[(1,)](x, b, y, n, eps, 0.5, 1, affine=affine, X_dtype=tl.float16, BLOCK=256, ROWS=2, num_warps=8)


def launch_no_bias(x, y):
    k[(1,)](x, None, y, x.numel(), 1e-6, 0.5, 0, affine=True, X_dtype=tl.float16, BLOCK=256, ROWS=2, num_warps=8)
'''


def fn_of(src: str, name: str = "k") -> tuple[ast.FunctionDef, ast.Module]:
    tree = ast.parse(textwrap.dedent(src))
    return next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name), tree


def test_constexpr_hints_come_from_use():
    src = HEADER + '''
C0 = 0
@triton.jit
def k(x_ptr, MODE: tl.constexpr, HAS_X: tl.constexpr, flag: tl.constexpr, DT: tl.constexpr, BLOCK_M: tl.constexpr,
      BLOCK_N: tl.constexpr, STEPS: tl.constexpr, K: tl.constexpr, scale: tl.constexpr, W: tl.constexpr,
      DEFAULTED: tl.constexpr = 3):
    a = tl.zeros([BLOCK_M, BLOCK_N], dtype=DT)
    if MODE == C0 or MODE == 2:
        a += 1
    if flag:
        a += 2
    for i in tl.static_range(STEPS):
        a += K
    for j in tl.static_range(1, W):
        a += j
    a = a * scale + tl.load(x_ptr)
'''
    fn, tree = fn_of(src)
    from ptxdiff.discovery.hints import module_constants
    from ptxdiff.discovery.params import infer_param_kinds
    hints = constexpr_hints(fn, module_constants(tree), infer_param_kinds(fn, constexprs=True))
    assert hints["DEFAULTED"].values == (64,)             # used only where its default cannot be had
    assert hints["MODE"].values == (0, 2, 64)             # compared with a module constant and a literal, and neither
    assert hints["HAS_X"].values == (False, True)         # a flag by its name
    assert hints["flag"].values == (False, True)          # tested by `if`
    assert hints["DT"].values == ("tl.float32",)          # used as a dtype
    assert hints["BLOCK_M"].values == hints["BLOCK_N"].values == (64,)  # tiles
    assert hints["STEPS"].values == (2,)                  # a loop count
    assert hints["W"].values == (2,)                      # bounds an unrolled loop: small, not a size
    fn, _ = fn_of(HEADER + '''
@triton.jit
def k(x_ptr, NB: tl.constexpr, BLOCK_D: tl.constexpr):
    s = tl.zeros([NB], dtype=tl.float32)
    for i in tl.static_range(0, NB):
        s = tl.where(tl.arange(0, NB) == i, tl.sum(tl.load(x_ptr + i * BLOCK_D + tl.arange(0, BLOCK_D))), s)
''')
    unrolled = constexpr_hints(fn, {})
    assert unrolled["NB"].values == (4,) and unrolled["BLOCK_D"].values == (64,)  # an unrolled block stays small
    assert hints["K"].values == (64,)                     # some size
    assert hints["scale"].values == (1e-6,)               # multiplies a loaded value: a float


def test_a_lone_block_over_two_aranges_is_a_tile_side():
    """`offs_m[:, None]` and `offs_n[None, :]` from `tl.arange(0, B)`: B x B elements, so B is 64,
    not a row kernel's 1024 (a 1024 x 1024 tile compiles for many minutes)."""
    fn, tree = fn_of(HEADER + '''
@triton.jit
def k(x_ptr, M, N, BLOCK_SIZE: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    offs_n = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs_m[:, None] * N + offs_n[None, :])
''')
    assert constexpr_hints(fn, {})["BLOCK_SIZE"].values == (64,)
    fn, _ = fn_of(HEADER + '''
@triton.jit
def k(x_ptr, N, BLOCK_SIZE: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK_SIZE))
''')
    assert constexpr_hints(fn, {})["BLOCK_SIZE"].values == (1024,)
    fn, _ = fn_of(HEADER + '''
@triton.jit
def k(x_ptr, N, BLOCK_SIZE: tl.constexpr):
    for i in range(0, N, BLOCK_SIZE):
        x = tl.load(x_ptr + i + tl.arange(0, BLOCK_SIZE))
    for i in range(0, N, BLOCK_SIZE):
        tl.store(x_ptr + i + tl.arange(0, BLOCK_SIZE), x)
''')
    assert constexpr_hints(fn, {})["BLOCK_SIZE"].values == (1024,)   # two passes over a row: still a row


def test_a_pointer_advanced_by_loaded_offsets_stays_a_pointer():
    """`h += boh * K` with `boh` loaded from another pointer: h is still the address, and its
    stores make it a pointer (not an int nobody can store through)."""
    from ptxdiff.discovery.params import infer_param_kinds
    fn, _ = fn_of(HEADER + '''
@triton.jit
def k(h, offsets, K: tl.constexpr):
    boh = tl.load(offsets + tl.program_id(0)).to(tl.int64)
    h += boh * K
    p_h = h + tl.arange(0, K)
    tl.store(p_h, tl.zeros([K], dtype=tl.float32))
''')
    kinds = infer_param_kinds(fn)
    assert kinds["h"] == "*fp32" and kinds["offsets"] == "*i32"


def test_optional_params_and_descriptors():
    fn, tree = fn_of(KERNEL)
    assert optional_params(fn) == {"b_ptr"}               # its heuristic tests it against None
    src = HEADER + '''
def hook(nargs):
    BM = nargs["BLOCK_M"]
    nargs["a_desc"].block_shape = [BM, nargs["BLOCK_K"]]
@triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "BLOCK_K": 32}, pre_hook=hook)], key=[])
@triton.jit
def k(a_desc, b_desc, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    a = a_desc.load([0, 0])
    for kk in range(0, 128, BLOCK_K):
        b = b_desc.load([0, tl.program_id(0) * BLOCK_M, kk])
'''
    fn, tree = fn_of(src)
    assert descriptor_types(fn, tree) == {"a_desc": "tensordesc<fp32[{BLOCK_M}, {BLOCK_K}]>",
                                          "b_desc": "tensordesc<fp32[1, {BLOCK_M}, {BLOCK_K}]>"}


def test_gluon_descriptors_take_the_element_type_the_kernel_asserts():
    """Gluon's host TMA descriptors: the first argument of a TMA copy or read for its block type,
    typed with what `static_assert(desc.dtype == ...)` says, a guessed tile per dimension, and the
    default NVMMA layout (the worker writes it as its triton does)."""
    src = """
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import tma


@gluon.jit
def k(a_desc, d_desc, s_desc, q_desc, r_desc, scale_ptr, BM: gl.constexpr):
    gl.static_assert(a_desc.dtype == gl.float8e4nv, "A must use FP8 E4M3")
    gl.static_assert(scale_ptr.dtype.element_ty == gl.float32)
    smem = gl.allocate_shared_memory(a_desc.dtype, a_desc.block_type.shape, a_desc.layout)
    tma.async_copy_shared_to_global(d_desc, [0, 0], smem)
    x = s_desc.block_type.shape[2]
    BLOCK_M: gl.constexpr = a_desc.block_type.shape[0]
    gl.static_assert(q_desc.block_type.shape == [1, BLOCK_M])
    gl.static_assert(r_desc.block_type.shape == [BM, 2])
"""
    fn, tree = fn_of(src)
    assert descriptor_types(fn, tree) == {"a_desc": "tensordesc<fp8e4nv[64, 64],nvmma>",
                                          "d_desc": "tensordesc<fp32[64, 64],nvmma>",
                                          "s_desc": "tensordesc<fp32[64, 64, 64],nvmma>",
                                          "q_desc": "tensordesc<fp32[1, 64],nvmma>",     # as asserted
                                          "r_desc": "tensordesc<fp32[{BM}, 2],nvmma>"}
    assert infer_param_kinds(fn)["scale_ptr"] == "*fp32"


def test_a_gluon_descriptor_s_default_layout_is_written_as_the_worker_s_triton_writes_it():
    from ptxdiff.compile.invoke import gluon_descriptor

    assert gluon_descriptor("*fp16") == "*fp16"
    typed = gluon_descriptor("tensordesc<fp8e4nv[64, 64],nvmma>")
    assert typed.startswith("tensordesc<fp8e4nv[64, 64],NVMMASharedLayout(swizzle_byte_width=64, element_bitwidth=8")


def test_launch_sites_give_facts():
    found = discover(FileSet({"ops/k.py": KERNEL.encode()}))
    kernel = found.kernels["ops/k.py::k"]
    facts = dict(kernel.launch)
    assert facts["n"] == (Fact("type", "i32"),)                              # x.numel()
    assert facts["offset"] == (Fact("value", 0.5),)
    assert facts["mode"] == (Fact("value", 1), Fact("value", 0))             # both sites, both values
    assert "b_ptr" not in facts          # a tensor at one site, None at the other: nothing agreed on
    assert facts["X_dtype"] == (Fact("value", "tl.float16"),)
    assert facts["num_warps"] == (Fact("value", 8),)
    assert "eps" not in facts                                                 # a wrapper parameter


def test_constexprs_every_site_passes_one_expression_are_alike():
    """`BLOCK_M=B, BLOCK_N=B` at every site: compiled together. A site that passes them apart,
    or leaves one out, unties them."""
    from ptxdiff.discovery.callsites import passed_alike

    def alike(*sites: str) -> tuple[tuple[str, ...], ...]:
        calls = [ast.parse(s).body[0].value for s in sites]
        return passed_alike(calls, ["x", "BLOCK_M", "BLOCK_N", "BLOCK_K"], frozenset({"BLOCK_M", "BLOCK_N", "BLOCK_K"}))
    assert alike("k[g](x, BLOCK_M=B, BLOCK_N=B, BLOCK_K=32)") == (("BLOCK_M", "BLOCK_N"),)
    assert alike("k[g](x, B, B, C)", "k[g](x, BLOCK_M=64, BLOCK_N=64, BLOCK_K=C)") == (("BLOCK_M", "BLOCK_N"),)
    assert alike("k[g](x, BLOCK_M=B, BLOCK_N=B)", "k[g](x, BLOCK_M=B, BLOCK_N=B2)") == ()
    assert alike("k[g](x, BLOCK_M=B, BLOCK_N=B)", "k[g](x, BLOCK_M=B)") == ()
    assert alike() == ()


def test_float_the_builtin_is_a_scalar_and_float_the_method_a_tensor():
    from ptxdiff.discovery.callsites import classify

    def fact(src):
        return classify(ast.parse(src).body[0].value, None, {})
    assert fact("float(scale)") == Fact("type", "fp32")
    assert fact("x.amax(dim=-1).float()") == Fact("type", "*fp32")   # Liger passes this for a *_ptr
    assert fact("y.half()") == Fact("type", "*fp16")
    # arithmetic says a type only where both sides do: `1.0 / absmax` of a tensor is a tensor
    # (bitsandbytes passes it for `absmax_inv_ptr`; read as a float, its row failed in `tl.load`)
    assert fact("1.0 / absmax") is None and fact("n * 2") is None
    assert fact("float(s) * 2") == Fact("type", "fp32")


def test_plan_prefers_launch_sites_to_guesses_and_is_the_same_for_both_sides():
    kernel = discover(FileSet({"ops/k.py": KERNEL.encode()})).kernels["ops/k.py::k"]
    inputs = inputs_of(kernel, {}, Config())
    plan = make(kernel, kernel, kernel, inputs)
    by_name = {c.name: c for c in plan.constexprs}
    assert by_name["BLOCK"].values == (256,) and by_name["BLOCK"].source == "call-site"
    assert by_name["mode"].values == (1, 0)
    assert {c.name: c for c in plan.types}["offset"].values == ("fp32",)
    assert plan.choice("num_warps", "options").values == (8,)
    assert make(kernel, kernel, kernel, inputs).key() == plan.key()


def test_a_side_whose_launch_cannot_be_read_takes_the_other_side_s_values_not_a_guess():
    """The old side launches with BLOCK=256 and 8 warps; the new side's launcher is gone from
    the repository (nothing to read): it compiles the old side's values, said as a guess, so
    an unchanged body does not read as a change of guesses. A readable site that passes no
    num_warps means the default, and nothing is borrowed."""
    old = discover(FileSet({"ops/k.py": KERNEL.encode()})).kernels["ops/k.py::k"]
    without = KERNEL[:KERNEL.index("def launch(")]
    new = discover(FileSet({"ops/k.py": without.encode()})).kernels["ops/k.py::k"]
    plan = make(new, old, new, inputs_of(new, {}, Config()))
    block = plan.choice("BLOCK")
    assert block.values == (256,) and block.source == "guessed" and "other side" in block.why
    assert plan.choice("num_warps", "options").values == (8,)
    assert make(old, old, new, inputs_of(old, {}, Config())).choice("BLOCK").source == "call-site"


def test_cover_compiles_every_pair_of_values_at_least_once():
    combos, note = _cover([("a", (0, 1, 2)), ("f", (False, True))], 4)
    assert len(combos) == 6 and note and {(c["a"], c["f"]) for c in combos} == {
        (a, f) for a in (0, 1, 2) for f in (False, True)}
    combos, note = _cover([("f", (False, True)), ("g", (False, True))], 4)
    assert len(combos) == 4 and note is None
    # three flags past max_specs: a diagonal never compiles `if A: if not B:`; pairs do, whatever C is
    flags = [(n, (False, True)) for n in "ABC"]
    combos, note = _cover(flags, 6)
    assert note and len(combos) < 8
    for x, y in itertools.combinations("ABC", 2):
        assert {(c[x], c[y]) for c in combos} == {(p, q) for p in (False, True) for q in (False, True)}
    # bounded: ten flags take a covering set, not 1024 specs
    combos, note = _cover([(f"F{i}", (False, True)) for i in range(10)], 6)
    assert len(combos) <= 24 and "each pair of values" in (note or "")


@pytest.mark.integration
def test_zero_config_measures_and_says_what_was_guessed(tmp_path):
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": KERNEL})
    commit(repo, "v2", {"ops/k.py": KERNEL.replace("x = x * 2.0", "x = x * 3.0 + 1.0")})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    assert report.rows and all(row.error is None for row in report.rows), [row.error for row in report.rows]
    assert {row.verdict for row in report.rows} <= {"structural", "identical", "constants-only"}
    assert "structural" in {row.verdict for row in report.rows}
    detail = report.rows[0].spec_detail
    assert report.rows[0].spec_source == "guessed"
    assert detail.constexprs["BLOCK"] == 256 and detail.num_warps == 8  # launch-site facts
    assert detail.signature["offset"] == "fp32"
    # the optional bias pointer is compiled both ways: as a pointer and as None
    # (the kernel converts, `x.to(tl.float32)`: its pointers are compiled as bf16 too)
    assert {row.spec_detail.signature["b_ptr"] for row in report.rows} == {"*fp32", "*bf16", "constexpr"}
    assert {row.spec_detail.constexprs.get("HAS_BIAS") for row in report.rows} == {True, False}


@pytest.mark.integration
def test_a_side_tipped_past_max_specs_is_covered_like_the_other(tmp_path):
    """An added optional pointer doubles the new side's combinations past max_specs: both sides
    then compile the same covering set, so every row pairs (no spec reads `removed`)."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    old = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, n, HAS_A: tl.constexpr, HAS_B: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if HAS_A:
        x = x + 1.0
    if HAS_B:
        x = x * 2.0
    tl.store(out_ptr + offs, x, mask=offs < n)
'''
    new = old.replace("def k(x_ptr, out_ptr,", "def k(x_ptr, y_ptr, out_ptr,").replace(
        "    tl.store(", "    if y_ptr is not None:\n        x = x + tl.load(y_ptr + offs, mask=offs < n)\n    tl.store(")
    repo = make_repo(tmp_path, {"ops/k.py": old})
    commit(repo, "v2", {"ops/k.py": new})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    verdicts = [row.verdict for row in report.rows]
    assert len(report.rows) == 4 and "removed" not in verdicts and "added" not in verdicts, verdicts
    assert all(row.error is None for row in report.rows)
    assert {(row.spec_detail.constexprs["HAS_A"], row.spec_detail.constexprs["HAS_B"])
            for row in report.rows} == {(a, b) for a in (False, True) for b in (False, True)}
    warm = Engine(r, jobs=2)
    again = warm.compare(r.side("HEAD~1"), r.side("HEAD"))  # from the cache: nothing compiled, nothing started
    assert warm.measurer.compiles == 0 and not warm.measurer.loaded_now and [row.verdict for row in again.rows] == verdicts


@pytest.mark.integration
def test_constexpr_functions_are_interpreted_not_run(tmp_path):
    """`@tl.constexpr def f(dtype)`: host code triton calls while compiling; the evaluator answers."""
    src = HEADER + '''
@tl.constexpr
def accum_type(dtype: tl.dtype) -> tl.dtype:
    if dtype.is_bf16() or dtype.is_fp16():
        return tl.float32
    return dtype


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    acc = tl.cumsum(x.to(accum_type(x.dtype)), 0)
    tl.store(out_ptr + offs, acc, mask=offs < n)
'''
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": src})
    r = Repo(repo)
    (row,) = Engine(r, jobs=1).compare(None, r.side("HEAD")).rows
    assert row.error is None and row.new is not None and row.new.ptx_instrs > 0


@pytest.mark.integration
def test_a_constexpr_function_of_the_repository_is_interpreted_and_hashed_by_its_own_text(tmp_path):
    """`@triton.constexpr_function` (triton 3.6+): triton hashes a constexpr function by reading its
    source and what it names; the callable ptxdiff hands it is hashed by the repository function's
    text, never read (it failed as `TypeError: cannot pickle 'Repository' object`)."""
    src = HEADER + '''
@triton.constexpr_function
def quarter(n):
    return n // 4


@triton.constexpr_function
def tile_of(n, floor):
    return max(floor, quarter(n))   # one constexpr function calling another: Python calls it


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    T: tl.constexpr = tile_of(BLOCK, 16)
    offs = tl.arange(0, T)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x SCALE, mask=offs < n)
'''
    (row,) = _pair_rows(tmp_path, src, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural"


@pytest.mark.integration
def test_device_functions_a_decorator_turns_into_kernels_are_compiled_in_a_harness(tmp_path):
    src = HEADER + '''
from ops.codegen import pointwise


@pointwise(promotion=[(0, 1)])
@triton.jit
def shift(a, b):
    return a << b
'''
    codegen = "def pointwise(**kw):\n    return lambda fn: fn\n"
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/codegen.py": codegen, "ops/k.py": src})
    commit(repo, "v2", {"ops/k.py": src.replace("a << b", "(a << b) | 1")})
    r = Repo(repo)
    (row,) = Engine(r, jobs=1).compare(r.side("HEAD~1"), r.side("HEAD")).rows
    assert row.error is None and row.verdict == "structural"
    # shifted values are integers: the harness loads them through *i32 pointers
    assert row.spec_detail.signature["a_ptr"] == "*i32"
    assert any("elementwise harness" in n for n in row.spec_detail.notes)


def test_integer_evidence_for_pointers_and_sizes():
    src = HEADER + '''
@triton.jit
def k(counts_ptr, out_ptr, n, BLOCK_M: tl.constexpr, GROUP_SIZE: tl.constexpr, NUM_STAGES: tl.constexpr):
    offs = tl.arange(0, 16)
    c = tl.load(counts_ptr + offs) if n > 0 else 0
    blocks = (c + BLOCK_M - 1) // BLOCK_M
    tl.store(out_ptr + offs, blocks.to(tl.float32) * 0.5 / BLOCK_M)
'''
    fn, tree = fn_of(src)
    from ptxdiff.discovery.hints import module_constants
    from ptxdiff.discovery.params import infer_param_kinds
    kinds = infer_param_kinds(fn, constexprs=True)
    assert kinds["counts_ptr"] == "*i32"     # its values meet `//`
    hints = constexpr_hints(fn, module_constants(tree), kinds)
    assert hints["BLOCK_M"].values == (64,)  # a block by its name, though it divides a float
    assert hints["GROUP_SIZE"].values == hints["NUM_STAGES"].values == (4,)


def test_a_name_with_a_float_word_and_an_int_word_is_an_int():
    """`beta_out_stride_0` starts like `beta` (a float) but is a stride; `beta` alone is a float."""
    from ptxdiff.discovery.params import infer_param_kinds

    fn, _ = fn_of(HEADER + '''
@triton.jit
def k(beta_out_ptr, beta_out_stride_0, beta, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(beta_out_ptr + offs * beta_out_stride_0, tl.full((BLOCK,), 1.0, tl.float32) * beta)
''')
    kinds = infer_param_kinds(fn)
    assert (kinds["beta_out_stride_0"], kinds["beta"]) == ("i32", "fp32")


def test_guesses_cover_every_branch_a_comparison_selects():
    """`if BLOCK == 1024: ... else: ...`: each compared value and one that matches none."""
    fn, tree = fn_of(HEADER + '''
@triton.jit
def k(x_ptr, BLOCK: tl.constexpr, MODE: tl.constexpr, ACT: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if BLOCK == 1024:
        x = x + 1.0
    if MODE in (1, 2):
        x = x * 2.0
    if ACT == "gelu":
        x = x * 3.0
    if SCALE != 0.5:
        x = x * SCALE
    tl.store(x_ptr + offs, x)
''')
    hints = constexpr_hints(fn, module_constants_of(tree))
    assert hints["BLOCK"].values == (1024, 64) and hints["BLOCK"].branches
    assert hints["MODE"].values == (1, 2, 64)
    assert hints["ACT"].values == ("gelu", "")
    assert hints["SCALE"].values == (0.5, 1e-6)


def test_a_constexpr_passed_to_a_helper_is_guessed_as_the_helper_uses_it():
    """`quant_policy` is compared inside the helper it is passed to (with module constants): each
    compared value and one that matches none, not one size that reaches only the `else`; one the
    helper tests by `if` is a flag."""
    from ptxdiff.discovery.hints import module_functions

    fn, tree = fn_of(HEADER + '''
Q_INT4 = tl.constexpr(4)
Q_INT8 = tl.constexpr(8)


@triton.jit
def _quant(x, policy: tl.constexpr):
    if policy == Q_INT8:
        return x * 2.0
    elif policy == Q_INT4:
        return _inner(x, mode=policy)
    else:
        tl.static_assert(False, "Unsupported quant policy")


@triton.jit
def _inner(x, mode: tl.constexpr):
    return x * 3.0 if mode == 5 else x


@triton.jit
def k(x_ptr, quant_policy: tl.constexpr):
    tl.store(x_ptr, _quant(tl.load(x_ptr), quant_policy))
''', name="k")
    assert constexpr_hints(fn, module_constants_of(tree))["quant_policy"].values == (64,)
    hints = constexpr_hints(fn, module_constants_of(tree), helpers=module_functions(tree))
    assert hints["quant_policy"].values == (8, 4, 5, 64) and hints["quant_policy"].branches
    flag, tree = fn_of(HEADER + '''
@triton.jit
def _noise(x, ROUND: tl.constexpr):
    if ROUND:
        return x + 1.0
    return x


@triton.jit
def k(x_ptr, STOCHASTIC: tl.constexpr):
    tl.store(x_ptr, _noise(tl.load(x_ptr), STOCHASTIC))
''', name="k")
    assert constexpr_hints(flag, {}, helpers=module_functions(tree))["STOCHASTIC"].values == (False, True)


def _pair_rows(tmp_path, src: str, change: str, jobs: int = 2) -> list:
    """The rows of a repository whose one kernel file `src` changes ` SCALE` to `change`."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", change)})
    r = Repo(repo)
    return Engine(r, jobs=jobs).compare(r.side("HEAD~1"), r.side("HEAD")).rows


def module_constants_of(tree):
    from ptxdiff.discovery.hints import module_constants
    return module_constants(tree)


def test_both_sides_compile_the_branches_either_side_compares_with():
    """A branch that adds `elif MODE == 7:` gets 7 compiled on the old side too: the guesses stay
    the same on both sides, and the new branch is seen."""
    from ptxdiff.specs import plan as planmod
    from ptxdiff.specs.launch import LaunchInputs

    def kernel(extra: str):
        src = HEADER + f'''
@triton.jit
def k(x_ptr, MODE: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if MODE == 1:
        x = x + 1.0{extra}
    tl.store(x_ptr + offs, x)
'''
        return discover(FileSet({"ops/k.py": src.encode()})).kernels["ops/k.py::k"]

    old, new = kernel(""), kernel("\n    elif MODE == 7:\n        x = x * 9.0")
    plans = [planmod.make(side, old, new, LaunchInputs(), 6) for side in (old, new)]
    values = plans[0].choice("MODE").values
    assert plans[1].choice("MODE").values == values
    assert {1, 7} <= set(values) and any(v not in (1, 7) for v in values)


@pytest.mark.integration
def test_a_string_mode_only_the_new_side_compares_does_not_fit_the_old_side(tmp_path):
    """`elif MODE == "b":` added, each branch binding `y`: under "b" the old side reaches no
    branch and fails on `y`; that row, and the value matching neither side, do not block."""
    from ptxdiff.compare.rows import NO_BRANCH, UNFIT
    src = HEADER + '''
@triton.jit
def k(x_ptr, MODE: tl.constexpr):
    offs = tl.arange(0, 16)
    x = tl.load(x_ptr + offs)
    if MODE == "a":
        y = x + 1.0 SCALE
    tl.store(x_ptr + offs, y)
'''
    rows = _pair_rows(tmp_path, src, '\n    elif MODE == "b":\n        y = x * 9.0', jobs=1)
    by_mode = {row.spec_detail.constexprs["MODE"]: row for row in rows}
    assert (by_mode["a"].verdict, by_mode["a"].error) == ("identical", None)
    assert (by_mode["b"].verdict, by_mode["b"].why, by_mode["b"].blocking) == ("failed", NO_BRANCH, False)
    (unmatched,) = [row for mode, row in by_mode.items() if mode not in ("a", "b")]
    assert (unmatched.why, unmatched.blocking) == (UNFIT, False)


def test_loop_bounds_and_descriptor_strides_type_their_params():
    src = HEADER + '''
@triton.jit
def k(X, Seqlen, Start, Out, stride_m, stride_d, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    n = tl.load(Seqlen + b) - tl.load(Start + b)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        acc += tl.load(X + i + tl.arange(0, BLOCK))
    desc = tl.make_tensor_descriptor(Out, shape=[n, BLOCK], strides=[stride_m, stride_d], block_shape=[BLOCK, BLOCK])
    desc.store([0, 0], acc[None, :] + tl.zeros([BLOCK, BLOCK], dtype=tl.float32))
'''
    fn, _ = fn_of(src)
    from ptxdiff.discovery.params import infer_param_kinds
    kinds = infer_param_kinds(fn)
    assert kinds["Seqlen"] == kinds["Start"] == "*i32"   # their values bound a loop
    assert kinds["X"] == "*fp32"
    assert kinds["stride_d"] == "constexpr1"             # a descriptor's innermost stride: 1, a constant
    assert kinds["stride_m"] == "i32"


RETYPE = HEADER + '''
@triton.jit
def _length(Lens, b):
    return tl.load(Lens + b)


length_of = _length


@triton.jit
def k(x_ptr, Lens, out_ptr, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    n = length_of(Lens, b)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(0, n, BLOCK):
        acc += tl.load(x_ptr + i + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc SCALE)
'''


@pytest.mark.integration
def test_a_guessed_type_that_does_not_compile_is_searched_and_both_sides_use_the_result(tmp_path):
    """`Lens` is used only inside a helper, called by an alias that discovery does not follow:
    the guess (a scalar) does not compile. The search
    finds a pointer to ints, and both sides compile with it (the old side's guess compiled in
    neither), so the pair is measured and the row says what was retyped."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": RETYPE.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": RETYPE.replace(" SCALE", " * 2.0")})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    assert [row.error for row in report.rows] == [None], [row.error for row in report.rows]
    row = report.rows[0]
    assert row.verdict == "structural"
    assert row.spec_detail.signature["Lens"] == "*i32"
    assert any("Lens: guessed i32, which does not compile; *i32 does" in n for n in row.spec_detail.notes)
    again = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))   # warm: the same, nothing compiled
    assert [(x.verdict, x.spec_detail.signature["Lens"]) for x in again.rows] == [("structural", "*i32")]


@pytest.mark.integration
def test_a_constexpr_autotuned_on_one_side_and_guessed_on_the_other_compiles_the_configs_on_both(tmp_path):
    """The old side autotunes BLOCK over two configs; the new side drops the decorator and its
    launcher cannot be read: its BLOCK is a guess. It compiles the old side's values instead,
    so the unchanged body pairs up spec by spec and reads identical."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    body = '''
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    tuned = HEADER + '''
@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 512})], key=["n"])''' + body
    repo = make_repo(tmp_path, {"ops/k.py": tuned})
    commit(repo, "v2", {"ops/k.py": HEADER + body})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    assert sorted((row.verdict, row.spec_detail.constexprs["BLOCK"]) for row in report.rows) == [
        ("identical", 32), ("identical", 512)], [(row.verdict, row.spec, row.error) for row in report.rows]


def test_stride_constexprs_are_guessed_contiguous():
    src = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, stride_xm, STRIDE_XD: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + tl.program_id(0) * stride_xm + offs * STRIDE_XD)
    tl.store(out_ptr + offs, x)
'''
    fn, tree = fn_of(src)
    from ptxdiff.discovery.hints import module_constants
    hints = constexpr_hints(fn, module_constants(tree), {})
    assert hints["STRIDE_XD"].values == (1,) and "contiguous" in hints["STRIDE_XD"].why


CAST = HEADER + '''
@triton.jit
def k(X, Out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    y = BODY
    tl.store(Out + offs, y, mask=offs < n)
'''


@pytest.mark.integration
def test_a_cast_to_the_pointers_element_type_is_compiled_with_bf16_pointers_too(tmp_path):
    """Adding `.to(X.dtype.element_ty)` changes nothing under fp32 pointers (the guess) and
    rounds to bf16 under bf16 ones: both families are compiled on both sides, so it shows."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": CAST.replace("BODY", "x.to(tl.float32) * 3.0 + 1.0")})
    commit(repo, "cast", {"ops/k.py": CAST.replace("BODY", "(x.to(tl.float32) * 3.0).to(X.dtype.element_ty) + 1.0")})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    by_type = {row.spec_detail.signature["X"]: row.verdict for row in report.rows}
    assert by_type == {"*fp32": "identical", "*bf16": "structural"}, [(row.spec, row.error) for row in report.rows]


BRANCHES = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, n, MODE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if MODE == 1:
        y = x * 2.0
    if MODE == 2:
        y = x * SCALE
    tl.store(out_ptr + offs, y, mask=offs < n)
'''


@pytest.mark.integration
def test_a_guessed_value_that_fits_no_branch_fails_alike_on_both_sides_and_does_not_block(tmp_path):
    """`MODE` selects one of two branches that define `y`; the guess that matches neither (for an
    `else` a kernel might have) makes `y` undefined on both sides. That row is a guess that does
    not fit: shown, said, not blocking; the rows of the real branches carry the verdict."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compare.rows import UNFIT
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": BRANCHES.replace("SCALE", "3.0")})
    commit(repo, "v2", {"ops/k.py": BRANCHES.replace("SCALE", "4.0 + 1.0")})
    r = Repo(repo)
    rows = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).rows
    by_mode = {row.spec_detail.constexprs["MODE"]: row for row in rows}
    assert by_mode[2].verdict == "structural" and by_mode[2].blocking
    assert by_mode[1].verdict == "identical"
    (unfit,) = [row for mode, row in by_mode.items() if mode not in (1, 2)]
    assert unfit.verdict == "unmeasured" and not unfit.blocking and unfit.why == UNFIT


@pytest.mark.integration
def test_a_tuple_of_strides_read_by_index_is_a_tuple_param(tmp_path):
    """`stride_x` is `x.stride()` passed whole and read as `stride_x[0]`, `stride_x[2]`: a
    tuple of ints, compiled as one."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    src = HEADER + '''
@triton.jit
def k(X, OUT, n, stride_x, BLOCK: tl.constexpr):
    b = tl.program_id(0)
    X = X + b * stride_x[0] + tl.program_id(1) * stride_x[2]
    offs = tl.arange(0, BLOCK)
    tl.store(OUT + offs, tl.load(X + offs, mask=offs < n) SCALE, mask=offs < n)
'''
    fn, _ = fn_of(src.replace(" SCALE", ""))
    from ptxdiff.discovery.params import infer_param_kinds
    assert infer_param_kinds(fn)["stride_x"] == "(i32,i32,i32)"
    repo = make_repo(tmp_path, {"ops/k.py": src.replace(" SCALE", "")})
    commit(repo, "v2", {"ops/k.py": src.replace(" SCALE", " * 2.0")})
    r = Repo(repo)
    rows = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).rows
    assert [(row.verdict, row.error) for row in rows] == [("structural", None)]


def test_a_descriptor_stride_passed_as_x_stride_stays_the_constant_one():
    """The launch passes `q.stride(1)` (a type fact, i32) where the kernel gives it to a tensor
    descriptor as the innermost stride: a contiguous launch passes 1, which triton makes a
    constant, so the plan keeps it the constant 1."""
    src = HEADER + '''
@triton.jit
def k(Q, Out, n, stride_q_m, stride_q_d, BLOCK: tl.constexpr):
    desc = tl.make_tensor_descriptor(Q, shape=[n, BLOCK], strides=[stride_q_m, stride_q_d], block_shape=[BLOCK, BLOCK])
    tl.store(Out + tl.arange(0, BLOCK), tl.sum(desc.load([0, 0]), axis=0))


def launch(q, out):
    k[(1,)](q, out, q.shape[0], q.stride(0), q.stride(1), BLOCK=64)
'''
    kernel = discover(FileSet({"ops/k.py": src.encode()})).kernels["ops/k.py::k"]
    plan = make(kernel, kernel, kernel, inputs_of(kernel, {}, Config()))
    assert plan.choice("stride_q_d", "types").values == ("constexpr1",)
    assert plan.choice("stride_q_m", "types").values == ("i32",)


SUBTILED = HEADER + '''

def hook(nargs):
    SUB = nargs.get("EPILOGUE_SUBTILE", False)
    BM = nargs["BLOCK_M"]
    BN = nargs["BLOCK_N"]
    nargs["a_desc"].block_shape = [BM, BN]
    if SUB:
        nargs["c_desc"].block_shape = [BM, BN // 2]
    else:
        nargs["c_desc"].block_shape = [BM, BN]


@triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "EPILOGUE_SUBTILE": s}, pre_hook=hook)
                          for s in (False, True)], key=[])
@triton.jit
def k(a_desc, c_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr):
    acc = a_desc.load([0, 0]) * SCALE
    if EPILOGUE_SUBTILE:
        acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        acc0, acc1 = tl.split(acc)
        c_desc.store([0, 0], acc0)
        c_desc.store([0, BLOCK_N // 2], acc1)
    else:
        c_desc.store([0, 0], acc)
'''


def test_a_pre_hook_that_shapes_a_descriptor_under_a_flag_gives_each_spec_its_shape():
    """Triton's persistent-matmul tutorial (and tritonbench): `if EPILOGUE_SUBTILE:` the hook makes
    c_desc's block half as wide. Read only at the hook's top level, c_desc took a guessed tile and
    every subtiled spec failed (`expected value shape [64, 64], got [64, 32]`)."""
    fn, tree = fn_of(SUBTILED.replace("SCALE", "2.0"))
    types = descriptor_types(fn, tree)
    assert types["c_desc"] == "tensordesc<fp32[EPILOGUE_SUBTILE ? {BLOCK_M}, {BLOCK_N//2} : {BLOCK_M}, {BLOCK_N}]>"
    from ptxdiff.discovery.descriptors import fill
    assert fill(types["c_desc"], {"BLOCK_M": 64, "BLOCK_N": 64, "EPILOGUE_SUBTILE": True}) == "tensordesc<fp32[64, 32]>"
    assert fill(types["a_desc"], {"BLOCK_M": 64, "BLOCK_N": 128}) == "tensordesc<fp32[64, 128]>"
    with pytest.raises(KeyError):
        fill(types["c_desc"], {"BLOCK_M": 64, "BLOCK_N": 64})
    with pytest.raises(KeyError):   # a branch's `BN // 0` is an error of the spec, never a crash
        fill("tensordesc<fp32[{BLOCK_N//0}]>", {"BLOCK_N": 64})
    zero = SUBTILED.replace("SCALE", "2.0").replace("BN // 2", "BN // 0")
    assert "//0" not in descriptor_types(*fn_of(zero))["c_desc"]
    # a kernel the hook is shared with that has no EPILOGUE_SUBTILE: `nargs.get(..., False)`'s branch
    plain = SUBTILED.replace("SCALE", "2.0").replace(", EPILOGUE_SUBTILE: tl.constexpr", "").replace(
        "if EPILOGUE_SUBTILE:", "if False:")
    assert descriptor_types(*fn_of(plain))["c_desc"] == "tensordesc<fp32[{BLOCK_M}, {BLOCK_N}]>"



def test_a_pre_hook_that_holds_a_shape_in_a_local_under_a_flag_gives_each_spec_its_shape():
    """tritonbench 0efdc53db9: `if nargs["TRANSPOSE_B"]: b_block_shape = [BN, BK] else: b_block_shape =
    [BK, BN]`, then `nargs["b_desc"].block_shape = b_block_shape`. Read only where a list is assigned
    to the descriptor, b_desc took the kernel's guess, and the transposed specs failed (`second index
    of first shape (128) must be equal to first index of second shape (64)`)."""
    src = SUBTILED.replace("SCALE", "2.0").replace(
        '''    if SUB:
        nargs["c_desc"].block_shape = [BM, BN // 2]
    else:
        nargs["c_desc"].block_shape = [BM, BN]''', '''    if SUB:
        c_shape = [BM, BN // 2]
    else:
        c_shape = [BM, BN]
    nargs["c_desc"].block_shape = c_shape''')
    assert "c_shape = [BM, BN // 2]" in src
    assert descriptor_types(*fn_of(src))["c_desc"] == \
        "tensordesc<fp32[EPILOGUE_SUBTILE ? {BLOCK_M}, {BLOCK_N//2} : {BLOCK_M}, {BLOCK_N}]>"
    # a local that is not a whole list of known dims says nothing: the kernel's guess stands
    unknown = src.replace("c_shape = [BM, BN // 2]", "c_shape = [BM, foo(BN)]")
    assert "EPILOGUE_SUBTILE ?" not in descriptor_types(*fn_of(unknown)).get("c_desc", "")

TWICE = HEADER + '''

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr, CHUNK: tl.constexpr):
    offs = tl.arange(0, CHUNK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


k = triton.heuristics({"CHUNK": lambda args: 32})(k)


def launch(x):
    k[(1,)](x, x.numel(), BLOCK=128)
'''


def test_a_kernel_defined_twice_is_the_def_the_module_binds_last():
    """OpenNLPLab/lightning-attention defines `_fwd_none_diag_kernel` twice in one module and
    launches the second: before, the first def was read (no CHUNK), and the compile of the second
    failed with "constexpr 'CHUNK' has no default". Wrapping it again keeps the def it wraps."""
    kernel = discover(FileSet({"ops/k.py": TWICE.encode()})).kernels["ops/k.py::k"]
    assert [p.name for p in kernel.params] == ["x_ptr", "n", "BLOCK", "CHUNK"]
    assert kernel.lineno == TWICE.splitlines().index("def k(x_ptr, n, BLOCK: tl.constexpr, CHUNK: tl.constexpr):") + 1


HOST_DESCRIPTORS = HEADER + '''
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def k(a_desc, c_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, FP8: tl.constexpr):
    acc = a_desc.load([0, 0])
    lo, hi = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
    c_desc.store([0, 0], lo + c_desc.load([0, 0]))
    out_desc.store([0, BLOCK_N // 2], hi)


def launch(a, c, fp8):
    BM, BN = 128, 256
    a_desc = TensorDescriptor.from_tensor(a, [BM, BN])
    c_desc = TensorDescriptor(c, c.shape, c.stride(), block_shape=[BM, BN // 2])
    if fp8:
        out_desc = TensorDescriptor.from_tensor(torch.empty_like(c), [BM, BN // 2])
    else:
        out_desc = c_desc
    k[(1,)](a_desc, c_desc, out_desc, BLOCK_M=BM, BLOCK_N=BN, FP8=fp8)
'''


def test_a_descriptor_made_at_the_launch_takes_the_block_shape_it_is_made_with():
    """modded-nanogpt's `TensorDescriptor.from_tensor(c, [BLOCK_SIZE_M, BLOCK_SIZE_N // 2])` at the
    launch, in a kernel that stores half tiles: before, the shape was guessed from the kernel's use
    ([BM, BN]) and every spec failed (`incompatible dimensions at index 1: 128 and 256`). A local
    made in each branch, or another descriptor in one, counts where each says the same."""
    kernel = discover(FileSet({"ops/k.py": HOST_DESCRIPTORS.encode()})).kernels["ops/k.py::k"]
    kinds = {p.name: p.kind for p in kernel.params}
    assert kinds["a_desc"] == "tensordesc<fp32[{BLOCK_M}, {BLOCK_N}]>"
    assert kinds["c_desc"] == kinds["out_desc"] == "tensordesc<fp32[{BLOCK_M}, {BLOCK_N//2}]>"
    # a branch that makes another shape says nothing: the kernel's use decides, as before
    other = HOST_DESCRIPTORS.replace("out_desc = c_desc", "out_desc = TensorDescriptor.from_tensor(c, [BM, 64])")
    kinds = {p.name: p.kind for p in discover(FileSet({"ops/k.py": other.encode()})).kernels["ops/k.py::k"].params}
    assert kinds["out_desc"] != "tensordesc<fp32[{BLOCK_M}, {BLOCK_N//2}]>" and kinds["out_desc"].startswith("tensordesc")


@pytest.mark.integration
def test_a_subtiled_epilogue_compiles_both_ways(tmp_path):
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/k.py": SUBTILED.replace("SCALE", "2.0")})
    commit(repo, "v2", {"ops/k.py": SUBTILED.replace("SCALE", "3.0")})
    r = Repo(repo)
    rows = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).rows
    assert sorted((dict(row.spec_detail.constexprs)["EPILOGUE_SUBTILE"], row.error) for row in rows if row.spec_detail) == \
        [(False, None), (True, None)], [(row.spec, row.error) for row in rows]


@pytest.mark.integration
def test_an_added_kernel_whose_guessed_values_fit_one_branch_only_is_measured_there(tmp_path):
    """An added kernel: the guess that reaches no branch defining `y` fails, the others compile.
    The failing rows are guesses that do not fit (shown, not blocking), as for both sides."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compare.rows import UNFIT_ONE_SIDE
    from ptxdiff.git.repo import Repo

    repo = make_repo(tmp_path, {"ops/other.py": "X = 1\n"})
    commit(repo, "v2", {"ops/k.py": BRANCHES.replace("SCALE", "3.0")})
    r = Repo(repo)
    rows = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).rows
    by_mode = {row.spec_detail.constexprs["MODE"]: row for row in rows}
    assert by_mode[1].verdict == by_mode[2].verdict == "added" and by_mode[1].error is by_mode[2].error is None
    (unfit,) = [row for mode, row in by_mode.items() if mode not in (1, 2)]
    assert unfit.verdict == "added" and unfit.error and not unfit.blocking and unfit.why == UNFIT_ONE_SIDE


@pytest.mark.integration
def test_a_jit_function_that_returns_values_and_is_never_launched_is_compiled_in_a_harness(tmp_path):
    """A device function nobody in the repository calls by name (`f = a if X else b` picks it):
    as an entry point triton cannot lower its `return`, so it is compiled inside the harness."""
    src = HEADER + '''
@triton.jit
def next_pow2_log(val, eps: tl.constexpr):
    return tl.exp2(tl.ceil(tl.log2(val)) + eps SCALE)
'''
    (row,) = _pair_rows(tmp_path, src, " + val", jobs=1)
    assert row.error is None and row.verdict == "structural"
    assert row.spec_detail.signature["val_ptr"] == "*fp32"
    assert any("elementwise harness" in n for n in row.spec_detail.notes)


@pytest.mark.integration
def test_a_device_function_that_reduces_along_axis_1_is_compiled_in_a_harness_of_tiles(tmp_path):
    """`tl.max(x, axis=1)[:, None]` needs two dimensions: the harness loads square tiles."""
    src = HEADER + '''
@triton.jit
def row_softmax(x):
    x = tl.exp(x - tl.max(x, axis=1)[:, None])
    return x / tl.sum(x, axis=1)[:, None] SCALE
'''
    (row,) = _pair_rows(tmp_path, src, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural"
    assert row.spec_detail.constexprs["BLOCK"] == 64


@pytest.mark.integration
def test_a_value_a_helper_uses_in_bit_operations_is_an_integer_in_the_harness(tmp_path):
    """native-sparse-attention's `argsort(x, ids)`: `ids ^ ...` two helpers down; guessed a float,
    triton refused the xor of two bfloat16s on both sides. The helpers' integer operands are the
    caller's, passed by position or keyword."""
    src = HEADER + '''
@triton.jit
def _swap(x, ids, flip):
    ix = x.to(tl.int32, bitcast=True)
    return (ix ^ flip).to(x.dtype, bitcast=True), ids ^ flip


@triton.jit
def _merge(x, ids):
    return _swap(x, ids=ids, flip=1)


@triton.jit
def ordered(x, ids):
    x, ids = _merge(x, ids)
    return x SCALE, ids
'''
    (row,) = _pair_rows(tmp_path, src, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural"
    assert row.spec_detail.signature["ids_ptr"] == "*i32" and row.spec_detail.signature["x_ptr"] == "*fp32"
    assert not any("does not compile" in n for n in row.spec_detail.notes)   # typed so, not searched after a failure


RETYPE_FLOWS = HEADER + '''
@triton.jit
def _seeded(x, seed_ptr):
    seed = tl.load(seed_ptr)
    tl.static_assert(seed.dtype.is_int())
    return x + seed


@triton.jit
def k(x_ptr, seed_base_ptr, out_ptr, n, GROUP: tl.constexpr):
    HALF: tl.constexpr = GROUP // 2
    out_dtype: tl.constexpr = out_ptr.dtype.element_ty
    offs = tl.program_id(0) * GROUP + tl.arange(0, GROUP)
    x = _seeded(tl.load(x_ptr + offs, mask=offs < n, other=0.0), seed_base_ptr)
    packed = x.to(out_dtype)
    lo, hi = tl.split(packed.reshape((HALF, 2), can_reorder=False))
    tl.store(out_ptr + tl.arange(0, HALF), lo | (hi << 4) SCALE)
'''


@pytest.mark.integration
def test_the_type_search_follows_annotated_locals_unpacking_and_static_asserts_on_types(tmp_path):
    """`out_ptr` reaches `lo | hi` through an annotated local and a tuple unpacking; `seed_base_ptr`
    fails a helper's `tl.static_assert(seed.dtype.is_int())`: both are searched and found."""
    rows = _pair_rows(tmp_path, RETYPE_FLOWS, " | 1", jobs=2)
    assert rows and all(row.error is None for row in rows), [row.error for row in rows]
    sig = rows[0].spec_detail.signature
    assert (sig["out_ptr"], sig["seed_base_ptr"]) == ("*i32", "*i32")


BORROWED = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, n, GROUPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.sigmoid(tl.load(x_ptr + offs, mask=offs < n, other=0))
    if GROUPS == 1:
        y = x
    else:
        y = tl.max(tl.reshape(x, (GROUPS, BLOCK)), axis=1)
    tl.store(out_ptr + tl.arange(0, BLOCK), y SCALE)
'''


@pytest.mark.integration
def test_every_guess_compiles_the_types_found_so_its_row_tells_its_own_misfit(tmp_path):
    """`x_ptr` is guessed `*i32` (its `other=0`); under GROUPS=1 the search finds `*fp32`. A guess
    of GROUPS that fails further on (a reshape it does not fit) compiles that type too (found
    as far as it goes, or lent from GROUPS=1), so its row tells the real misfit, not the type
    error all guesses share."""
    rows = _pair_rows(tmp_path, BORROWED, " * 2.0", jobs=2)
    assert {row.spec_detail.signature["x_ptr"] for row in rows} == {"*fp32"}
    fits = [row for row in rows if row.error is None]
    assert fits and all(row.verdict == "structural" for row in fits)
    assert all("reshape" in row.error for row in rows if row.error), [row.error for row in rows]


def test_a_block_size_a_helper_divides_by_a_constant_is_guessed_no_smaller():
    """`BLOCK_N` reaches `_swizzle` as `OUTER`, which makes a shape of `OUTER // 128`: a guess of 64
    would make that 0 (`Shape element 0 must be a power of 2`), so the guess is 128."""
    from ptxdiff.discovery.hints import module_functions

    fn, tree = fn_of(HEADER + '''
@triton.jit
def _swizzle(s, OUTER: tl.constexpr, INNER: tl.constexpr):
    return tl.reshape(s, [OUTER // 128, 4, 32, INNER // 64, 4])


@triton.jit
def k(x_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    s = tl.load(x_ptr + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    tl.store(x_ptr + tl.arange(0, 16), tl.ravel(_swizzle(s, BLOCK_N, BLOCK_M)))
''')
    hints = constexpr_hints(fn, module_constants_of(tree), helpers=module_functions(tree))
    assert (hints["BLOCK_N"].values, hints["BLOCK_M"].values) == ((128,), (64,))


def test_a_helper_in_another_module_says_how_a_block_size_is_divided():
    """The same swizzle helper imported from another module of the repository (and defined
    under a guard, as packages do): discovery reads it as it reads the kernel's own module."""
    helpers = HEADER + '''
if True:
    @triton.jit
    def _swizzle(s, OUTER: tl.constexpr, INNER: tl.constexpr):
        return tl.reshape(s, [OUTER // 128, 4, 32, INNER // 64, 4])
'''
    kernel = HEADER + '''
from ops.swizzle import _swizzle


@triton.jit
def k(x_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    s = tl.load(x_ptr + tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :])
    tl.store(x_ptr + tl.arange(0, 16), tl.ravel(_swizzle(s, BLOCK_N, BLOCK_M)))
'''
    found = discover(FileSet({"ops/k.py": kernel.encode(), "ops/swizzle.py": helpers.encode(), "ops/__init__.py": b""}))
    params = {p.name: p for p in found.kernels["ops/k.py::k"].params}
    assert (params["BLOCK_N"].hint.values, params["BLOCK_M"].hint.values) == ((128,), (64,))


SCALED_DOT = HEADER + '''
@triton.jit
def mx(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, a_dtype: tl.constexpr, b_dtype: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    sa = tl.load(sa_ptr + offs[:, None] * (BLOCK // 32) + tl.arange(0, BLOCK // 32)[None, :])
    sb = tl.load(sb_ptr + offs[:, None] * (BLOCK // 32) + tl.arange(0, BLOCK // 32)[None, :])
    acc = tl.dot_scaled(a, sa, a_dtype, b, sb, b_dtype, tl.zeros((BLOCK, BLOCK), dtype=tl.float32))
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc SCALE)


def run(a, b, sa, sb, c):
    mx[(1,)](a, b, sa, sb, c, "e4m3", "e4m3", BLOCK=64)
'''


@pytest.mark.integration
def test_scaled_dot_operands_take_the_type_their_format_asks_for_both_at_once(tmp_path):
    """`tl.dot_scaled`'s scales are e8m0 bytes (`*u8`, from use); both operands in `e4m3` fail
    alike under the fp32 guess, so fixing one alone gets nowhere: the search gives both the type
    the error asks for in one step."""
    (row,) = _pair_rows(tmp_path, SCALED_DOT, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    sig = row.spec_detail.signature
    assert [sig[p] for p in ("a_ptr", "b_ptr", "sa_ptr", "sb_ptr")] == ["*fp8e4nv", "*fp8e4nv", "*u8", "*u8"]


REFIT = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, n_group: tl.constexpr, group_size: tl.constexpr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    best = tl.max(tl.reshape(x, (n_group, group_size)), axis=1)
    tl.store(out_ptr + tl.arange(0, n_group), best SCALE)
'''


@pytest.mark.integration
def test_guessed_sizes_the_kernels_shapes_cannot_take_are_searched(tmp_path):
    """`tl.reshape` of a 64-element block to the guesses (64, 64) cannot be: a search finds sizes
    that fit, both sides compile them, and the row says which guess it replaced."""
    rows = _pair_rows(tmp_path, REFIT, " * 2.0", jobs=2)
    assert rows and all(row.error is None and row.verdict == "structural" for row in rows), [x.error for x in rows]
    (row,) = rows
    c = row.spec_detail.constexprs
    assert c["n_group"] * c["group_size"] == c["BLOCK"], c
    assert any("which does not fit the kernel" in n for n in row.spec_detail.notes)


SPREAD = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, BLOCK_A: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_C: tl.constexpr):
    a = tl.load(x_ptr + tl.arange(0, BLOCK_A))
    t = tl.broadcast_to(a[:, None, None, None], (BLOCK_A, BLOCK_B, BLOCK_C, 8))
    tl.store(out_ptr + tl.arange(0, BLOCK_A), tl.sum(tl.sum(tl.sum(t, 3), 2), 1) SCALE)
'''


@pytest.mark.integration
def test_guessed_sizes_whose_block_is_larger_than_triton_allows_are_searched(tmp_path):
    """Three guessed block sizes of 64 in one shape (64 x 64 x 64 x 8: more elements than
    triton's maximum of 2**20, `numel ... exceeds triton maximum tensor numel`): searched like a
    misfit; before, every spec failed."""
    (row,) = _pair_rows(tmp_path, SPREAD, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    c = row.spec_detail.constexprs
    assert c["BLOCK_A"] * c["BLOCK_B"] * c["BLOCK_C"] * 8 <= 2 ** 20, c
    assert any("which does not fit the kernel" in n for n in row.spec_detail.notes)


EXPONENT = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, eps_exp: tl.constexpr):
    e = tl.load(x_ptr + tl.arange(0, 64)).to(tl.int32)
    e = tl.maximum(e, 127 + eps_exp)
    tl.store(out_ptr + tl.arange(0, 64), (1 << e) SCALE)
'''


@pytest.mark.integration
def test_a_guessed_float_that_the_kernel_uses_as_an_int_is_searched(tmp_path):
    """`eps_exp` reads like a float (its name), but the kernel shifts by it: the float guess
    cannot compile, no type of a runtime param mends it, and the int 1 does."""
    (row,) = _pair_rows(tmp_path, EXPONENT, " + 1", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    assert row.spec_detail.constexprs["eps_exp"] == 1
    assert "eps_exp: guessed 1e-06, which does not fit the kernel; 1 does" in row.spec_detail.notes


def test_params_a_kernel_only_hands_to_helpers_take_the_helpers_types():
    """`KCache` is only passed on (the kernel alone would guess a scalar), `seed_ptr` only seeds
    `tl.randint` inside the helper (a float pointer by default): the helpers' use types them."""
    src = HEADER + '''
@triton.jit
def _fill(cache, vals, offs):
    tl.store(cache + offs, vals)


@triton.jit
def _noise(x, seed_ptr, offs):
    seed = tl.load(seed_ptr)
    return x + tl.randint(seed, offs).to(tl.float32)


@triton.jit
def k(X, KCache, seed_base_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    _fill(KCache, _noise(x, seed_base_ptr, offs), offs)
'''
    kernel = discover(FileSet({"ops/k.py": src.encode()})).kernels["ops/k.py::k"]
    kinds = {p.name: p.kind for p in kernel.params}
    assert (kinds["KCache"], kinds["seed_base_ptr"], kinds["X"]) == ("*fp32", "*i32", "*fp32")


INT_DOT = HEADER + '''
@triton.jit
def k(a_ptr, b_ptr, c_ptr, K, BLOCK: tl.constexpr, ACC_TYPE: tl.constexpr = tl.int32):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=ACC_TYPE)
    for k in range(0, K, BLOCK):
        a = tl.load(a_ptr + offs[:, None] * K + k + offs[None, :])
        b = tl.load(b_ptr + (k + offs[:, None]) * BLOCK + offs[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc SCALE)
'''


@pytest.mark.integration
def test_an_integer_dot_takes_int8_operands(tmp_path):
    """An int32 accumulator carried through a loop makes a matmul of integers (fp32 operands
    cannot compile); `tl.dot` takes 8-bit integers only (`Unsupported lhs dtype int32`), so
    `a_ptr` takes `*i8`, and then `b_ptr` the type of the operand just mended (`Both operands
    must be same dtype. Got int8 and fp32`)."""
    (row,) = _pair_rows(tmp_path, INT_DOT, " * 2", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    sig = row.spec_detail.signature
    assert (sig["a_ptr"], sig["b_ptr"]) == ("*i8", "*i8"), sig


INT_VIEW = HEADER + '''
from triton.language import core
from triton.language.standard import _log2

try:
    get_int_dtype = triton.runtime.jit.constexpr_function(core.get_int_dtype)
except Exception:
    get_int_dtype = core.get_int_dtype


@triton.jit
def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, BLOCK))
    idtype = get_int_dtype(bitwidth=x.dtype.primitive_bitwidth, signed=True)
    n_dims: tl.constexpr = _log2(BLOCK)
    y = (x.to(idtype, bitcast=True) ^ n_dims).to(x.dtype, bitcast=True)
    tl.store(out_ptr + tl.arange(0, BLOCK), y SCALE)
'''


@pytest.mark.integration
def test_tritons_own_helpers_a_bitonic_sort_imports_compile(tmp_path):
    """`core.get_int_dtype` is a plain function of triton's that a newer triton wants wrapped in
    `constexpr_function`: its stand-in is that wrap. `_log2` is one of triton's own (private)
    jit functions, imported by name: a kernel may call it like the public ones."""
    (row,) = _pair_rows(tmp_path, INT_VIEW, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error


MX_GROUPS = HEADER + '''
@triton.jit
def mx(a_ptr, b_ptr, sa_ptr, sb_ptr, c_ptr, BLOCK: tl.constexpr, group_size: tl.constexpr,
       stride_sa_m: tl.constexpr, stride_sa_g: tl.constexpr, stride_sb_n: tl.constexpr, stride_sb_g: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    G: tl.constexpr = BLOCK // group_size
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    sa = tl.load(sa_ptr + offs[:, None] * stride_sa_m + tl.arange(0, G)[None, :] * stride_sa_g)
    sb = tl.load(sb_ptr + offs[:, None] * stride_sb_n + tl.arange(0, G)[None, :] * stride_sb_g)
    fmt: tl.constexpr = "e4m3"
    acc = tl.dot_scaled(a, sa, fmt, b, sb, fmt, tl.zeros((BLOCK, BLOCK), dtype=tl.float32))
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], acc SCALE)
'''


@pytest.mark.integration
def test_a_type_search_that_leaves_a_size_complaint_hands_on_to_the_size_search(tmp_path):
    """fp8 operands mend `Unexpected dtype for e4m3` (the format is a local, so the guess was
    fp32); what the same line says next is about sizes (`scale factor must be 16 or 32`: the
    guessed `group_size`), so the types are kept and the size search tries the sizes the
    message asks for on the guess that is the size it got (before the scales' strides)."""
    (row,) = _pair_rows(tmp_path, MX_GROUPS, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    sig, c = row.spec_detail.signature, row.spec_detail.constexprs
    assert (sig["a_ptr"], sig["b_ptr"]) == ("*fp8e4nv", "*fp8e4nv"), sig
    assert c["group_size"] in (16, 32), c


FP8_BESIDE = HEADER + '''
@triton.jit
def k(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    bits = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = bits.to(tl.uint8).to(tl.float8e4nv, bitcast=True)
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b) SCALE)
'''


@pytest.mark.integration
def test_a_dot_operand_beside_an_fp8_one_takes_fp8(tmp_path):
    """`b` is decoded to fp8 in the kernel, so `a` (guessed fp32) cannot meet it
    (`Unsupported rhs dtype fp8e4nv`): fp8 goes with fp8 only, and `a_ptr` takes it."""
    (row,) = _pair_rows(tmp_path, FP8_BESIDE, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    assert row.spec_detail.signature["a_ptr"] == "*fp8e4nv", row.spec_detail.signature


@pytest.mark.integration
def test_a_parameter_cast_to_a_pointer_type_is_a_64_bit_address_and_compiles(tmp_path):
    """`tl.cast(inp, tl.pointer_type(tl.float8e4nv))` and `addr.to(tl.pointer_type(tl.float16))` of
    parameters used as nothing else: triton's int-to-pointer cast takes 64-bit integers only (an
    i32 guess failed in triton's verifier: `'tt.int_to_ptr' op operand #0 must be 64-bit`)."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    src = HEADER + '''
@triton.jit
def deq(out, inp, addr, m, BM: tl.constexpr = 16):
    off = tl.arange(0, BM)
    x = tl.load(tl.cast(inp, tl.pointer_type(tl.float8e4nv)) + off, off < m).to(tl.float32)
    y = tl.load(addr.to(tl.pointer_type(tl.float16)) + off, off < m).to(tl.float32)
    tl.store(out + off, x SCALE y, off < m)
'''
    repo = make_repo(tmp_path, {"ops/k.py": src.replace("SCALE", "+")})
    commit(repo, "v2", {"ops/k.py": src.replace("SCALE", "*")})
    r = Repo(repo)
    report = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD"))
    assert [row.verdict for row in report.rows] == ["structural"], [row.error for row in report.rows]
    assert report.rows[0].spec_detail.signature["inp"] == report.rows[0].spec_detail.signature["addr"] == "i64"


@pytest.mark.integration
def test_a_device_function_s_params_named_like_the_harness_s_locals_keep_their_values(tmp_path):
    """Triton-distributed's `multimem_st_p_b32(ptr, val, mask)`: the harness loaded the `mask`
    param's value into the local its own stores masked with (`Mask must have boolean scalar type`
    on both sides); the harness's locals are named apart from the function's params."""
    src = HEADER + '''
@triton.jit
def pick(offs, mask, result0):
    return tl.where(mask != 0, offs, result0) SCALE
'''
    (row,) = _pair_rows(tmp_path, src, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    assert any("elementwise harness" in n for n in row.spec_detail.notes)


@pytest.mark.integration
def test_a_device_function_that_takes_a_pointer_and_returns_values_is_compiled_in_a_harness(tmp_path):
    """Triton-distributed's `bisect_left_kernel(sorted_values_ptr, target_values, N)`: it loads
    through a pointer and returns an index block; compiled as an entry point, triton's passes
    failed on its `return` (an MLIR pipeline failure on both sides). The harness hands the pointer
    on and loads the other input."""
    src = HEADER + '''
@triton.jit
def bisect_left(sorted_ptr, targets, N: tl.constexpr):
    index = tl.full((targets.numel, ), -1, dtype=tl.int32)
    for i in tl.range(N):
        x = tl.load(sorted_ptr + i)
        index = tl.where(index >= 0, index, tl.where(x >= targets, i, -1))
    return tl.where(index == -1, N, index) SCALE
'''
    (row,) = _pair_rows(tmp_path, src, " + 1", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    assert row.spec_detail.signature["sorted_ptr"].startswith("*") and "targets_ptr" in row.spec_detail.signature
    assert any("elementwise harness" in n for n in row.spec_detail.notes)


HOOKED = HEADER + '''

def hook(nargs):
    BM = nargs["BLOCK_M"]
    BN = nargs["BLOCK_N"]
    BK = nargs["BLOCK_K"]
    nargs["a_desc"].block_shape = [BM, BK]
    B_SHAPE
    nargs["c_desc"].block_shape = [BM, BN]


@triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, pre_hook=hook)], key=[])
@triton.jit
def k(a_desc, b_desc, c_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr FLAG):
    a = a_desc.load([0, 0])
    LOAD_B
    c_desc.store([0, 0], tl.dot(a, b))
'''


@pytest.mark.integration
def test_a_descriptor_the_other_side_shapes_by_a_flag_this_side_lacks_takes_this_side_s_shape(tmp_path):
    """tritonbench 0efdc53db9 renames `IS_TRANSPOSE` to `TRANSPOSE_A`/`TRANSPOSE_B`, which its new
    pre_hook shapes the descriptors by: the old side, with no such flag, failed every spec (`names a
    value no spec gives`) where it takes its own hook's shape."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo

    old = HOOKED.replace("B_SHAPE", 'nargs["b_desc"].block_shape = [BN, BK]').replace(" FLAG", "").replace(
        "LOAD_B", "b = b_desc.load([0, 0]).T")
    new = HOOKED.replace("B_SHAPE", 'if nargs["TRANSPOSE_B"]:\n        b_shape = [BN, BK]\n    else:\n'
                         '        b_shape = [BK, BN]\n    nargs["b_desc"].block_shape = b_shape').replace(
        " FLAG", ", TRANSPOSE_B: tl.constexpr").replace(
        "LOAD_B", "if TRANSPOSE_B:\n        b = b_desc.load([0, 0]).T\n    else:\n        b = b_desc.load([0, 0])")
    repo = make_repo(tmp_path, {"ops/k.py": old})
    commit(repo, "v2", {"ops/k.py": new})
    r = Repo(repo)
    rows = Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).rows
    assert rows and all(row.error is None for row in rows), [row.error for row in rows]
    assert {row.spec_detail.constexprs.get("TRANSPOSE_B") for row in rows} == {True, False}



def test_a_mode_enum_another_module_defines_gives_the_guesses():
    """Fast-LLM: `class ActivationType(str, enum.Enum)` in its config module, aliased in the kernel's
    module (`_Act: tl_constexpr = ActivationType`) and compared with (`activation_type ==
    _Act.gelu.value`, `== _Act.squared_relu`): the mode was guessed 16, which takes the kernel's
    `raise` branch, and every row failed. The guesses are the enum's values."""
    config = "import enum\n\n\nclass Act(str, enum.Enum):\n    gelu = 'gelu'\n    relu = 'relu'\n"
    kernel = HEADER + '''
from ops.config import Act

_Act: tl.constexpr = Act


@triton.jit
def act_kernel(x_ptr, ACT: tl.constexpr):
    x = tl.load(x_ptr)
    if ACT == _Act.gelu.value:
        y = x * 0.5
    elif ACT == _Act.relu:
        y = tl.maximum(x, 0.0)
    else:
        raise NotImplementedError()
    tl.store(x_ptr, y)
'''
    found = discover(FileSet({"ops/__init__.py": b"", "ops/config.py": config.encode(), "ops/k.py": kernel.encode()}))
    (act,) = [p for p in found.kernels["ops/k.py::act_kernel"].params if p.name == "ACT"]
    assert act.hint is not None and set(act.hint.values) == {"gelu", "relu"}


@pytest.mark.integration
def test_a_dot_of_a_guessed_small_count_takes_a_size_the_dot_accepts(tmp_path):
    """Triton-distributed's gemm_a2a: a dot whose inner size a count guessed small (`n_heads`: 4) sets failed
    `Input shapes should have M >= 16` on both sides; the size search takes it as a misfit."""
    src = HEADER + '''
@triton.jit
def k(x_ptr, out_ptr, n_heads: tl.constexpr, BLOCK: tl.constexpr):
    offs_h = tl.arange(0, n_heads)
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs[:, None] * n_heads + offs_h[None, :]).to(tl.float16)
    acc = tl.dot(a, tl.trans(a))
    tl.store(out_ptr + offs[:, None] * BLOCK + offs[None, :], acc SCALE)
'''
    rows = _pair_rows(tmp_path, src, " * 2.0", jobs=1)
    assert rows and all(row.error is None for row in rows), [row.error for row in rows]
    assert {row.verdict for row in rows} == {"structural"}
    assert all(row.spec_detail.constexprs["n_heads"] >= 16 for row in rows), [row.spec for row in rows]


@pytest.mark.integration
def test_a_launch_left_stale_by_the_signature_says_nothing_of_the_parameters(tmp_path):
    """flashattention2-custom-mask 7d7af66f25: `_attn_fwd[grid](q, k, v, sm_scale, M, o, ...)` after a
    `mask` parameter went in before `sm_scale`. What it passes by position lands on other parameters
    (a stride on `Out`, read as an i32), and `Out`, a pointer the kernel stores through, failed
    (`Expected base to be a pointer type`). Python could not bind that launch: it gives no facts. A
    launch that binds (a default, a `**kwargs` of known keys) still does."""
    src = HEADER + '''
@triton.jit
def k(x_ptr, mask_ptr, scale, out_ptr, n, BLOCK: tl.constexpr, EXTRA: tl.constexpr = 1):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = tl.load(mask_ptr + offs, mask=offs < n)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * scale * m SCALE, mask=offs < n)


def run(x, out, scale):
    extra = {}
    k[(1,)](x, scale, out, x.numel(), BLOCK=128, **extra)
'''
    found = discover(FileSet({"ops/k.py": src.replace(" SCALE", "").encode()})).kernels["ops/k.py::k"]
    assert dict(found.launch) == {}
    bound = src.replace("k[(1,)](x, scale, out, x.numel(), BLOCK=128, **extra)",
                        "k[(1,)](x, x, scale, out, x.numel(), **dict(BLOCK=128))")
    facts = dict(discover(FileSet({"ops/k.py": bound.replace(" SCALE", "").encode()})).kernels["ops/k.py::k"].launch)
    assert facts["BLOCK"][0].value == 128
    # a misspelt keyword (lightllm's `siliding_window=`) explains what is missing: its facts stand
    typo = src.replace("k[(1,)](x, scale, out, x.numel(), BLOCK=128, **extra)",
                       "k[(1,)](x, x, scale, out, nn=x.numel(), BLOCK=128)")
    facts = dict(discover(FileSet({"ops/k.py": typo.replace(" SCALE", "").encode()})).kernels["ops/k.py::k"].launch)
    assert facts["BLOCK"][0].value == 128
    (row,) = _pair_rows(tmp_path, src, " * 2.0", jobs=1)
    assert row.error is None and row.verdict == "structural", row.error
    assert row.spec_detail.signature["out_ptr"].startswith("*")
