"""ptx.py on real PTX from triton 3.9 (tests/data/ptx, see its README) and small hand-written PTX."""

from __future__ import annotations

import re

import pytest

from helpers import DATA
from ptxdiff.metrics import ptx

PTX = DATA / "ptx"


def load(tag: str) -> str:
    return (PTX / f"{tag}.ptx").read_text()


def study_instruction_count(text: str) -> int:
    """The study's count: indented lines that start with a lowercase mnemonic (no `@%p` lines)."""
    return sum(1 for line in text.splitlines() if re.match(r"^\s+[a-z]", line))


def renumber(text: str, shift: int) -> str:
    """The same PTX with every %r/%rd/%p register renumbered (a bijection)."""
    return re.sub(r"%(rd|r|p)(\d+)\b", lambda m: f"%{m.group(1)}{int(m.group(2)) + shift}", text)


# -- normalise -----------------------------------------------------------------------------------

def test_fixture_really_has_what_normalise_must_remove():
    raw = load("add")
    for needle in (".loc", ".file", "//", ".section\t.debug_info", ".section\t.debug_macinfo", "add_kernel",
                   "$L__tmp0"):
        assert needle in raw, needle


def test_normalise_removes_debug_info_comments_and_kernel_name():
    norm = ptx.normalise(load("add"))
    for gone in (".loc", ".file", "//", "/*", ".section", ".debug", "DW_", ".b8", "add_kernel", "$L__tmp",
                 "$L__func", "k_add.py", "inline asm"):
        assert gone not in norm, gone
    assert ".visible .entry KERNEL(" in norm
    assert "ld.param.b64 %rd4, [KERNEL_param_0];" in norm
    # instructions survive, whitespace collapsed
    assert "add.f32 %r3, %r1, %r2;" in norm
    assert "@%p1 ld.global.b32 { %r1 }, [ %rd1 + 0 ];" in norm
    assert "@%p1 st.global.b32 [ %rd3 + 0 ], { %r3 };" in norm
    assert "\n\n" not in norm and "\t" not in norm
    assert norm.endswith("}\n")


def test_normalise_is_idempotent():
    norm = ptx.normalise(load("add"))
    assert ptx.normalise(norm) == norm


def test_rename_and_line_shift_normalise_equal():
    base, renamed, commented = load("add"), load("add_renamed"), load("add_commented")
    assert base != renamed and base != commented
    assert "vector_sum" in renamed and "add_kernel" not in renamed
    # the commented source moves every .loc line
    assert re.findall(r"\.loc\t1 \d+", base) != re.findall(r"\.loc\t1 \d+", commented)
    assert ptx.normalise(base) == ptx.normalise(renamed) == ptx.normalise(commented)


def test_real_changes_survive_normalise():
    assert ptx.normalise(load("add")) != ptx.normalise(load("mul"))
    assert ptx.normalise(load("leaky")) != ptx.normalise(load("leaky_01"))
    assert ptx.normalise(load("sub")) != ptx.normalise(load("sub_swapped"))


@pytest.mark.parametrize("name", ["add", "max", "ret", "mov"])
def test_kernel_named_like_an_opcode_keeps_its_instructions(name):
    raw = load("add")
    renamed = raw.replace("add_kernel", name)
    norm = ptx.normalise(renamed)
    assert norm == ptx.normalise(raw)
    assert "add.f32 %r3, %r1, %r2;" in norm and "ret;" in norm and "mov.u32 %r4, %ctaid.x;" in norm


def test_kernel_name_that_prefixes_another_identifier_is_not_touched():
    text = """
.visible .entry k(
\t.param .u64 k_param_0
)
{
\t.reg .b64 %rd<3>;
\tld.param.u64 %rd1, [k_param_0];
\tmov.u64 %rd2, kx;
\tret;
}
"""
    norm = ptx.normalise(text)
    assert ".entry KERNEL(" in norm and "[KERNEL_param_0]" in norm
    assert "mov.u64 %rd2, kx;" in norm


def test_debug_sections_removed_wherever_their_brace_closes():
    text = """
.visible .entry k()
{
\tret;
}
\t.section\t.debug_abbrev
\t{
.b8 1                                   // Abbreviation Code
\t}
\t.section\t.debug_macinfo\t{\t}
\t.section\t.debug_str { .b8 0 }
"""
    norm = ptx.normalise(text)
    assert norm == ".visible .entry KERNEL()\n{\nret;\n}\n"


def test_entry_names():
    assert ptx.entry_names(load("add")) == ["add_kernel"]
    assert ptx.entry_names(load("add_renamed")) == ["vector_sum"]
    assert ptx.entry_names(".func (.param .b32 r) helper(.param .b32 a)\n{ ret; }\n"
                           ".visible .entry main_k()\n{ ret; }") == ["main_k", "helper"]


# -- statements / metrics --------------------------------------------------------------------------

def test_statements_parse_predicates_operands_and_labels():
    text = """
.visible .entry k(.param .u32 k_param_0)
{
\t.reg .pred %p<2>;
\t.reg .b32 %r<4>;
\tld.param.b32 %r1, [k_param_0];
\tmov.u32 %r2, 0;
$L__BB0_1:                              // loop
\tadd.s32 %r2, %r2, 1;
\tsetp.lt.s32 %p1, %r2, %r1;
\t@%p1 bra $L__BB0_1;
\t@!%p1 st.global.v2.b32 [ %rd1 + 0 ], { %r1, %r2 };
\tret;
}
"""
    ins, labels = ptx.statements(text)
    assert [i.opcode for i in ins] == ["ld.param.b32", "mov.u32", "add.s32", "setp.lt.s32", "bra",
                                       "st.global.v2.b32", "ret"]
    assert labels == {"$L__BB0_1": 2}
    assert ins[4].predicate == "@%p1" and ins[4].operands == ("$L__BB0_1",)
    assert ins[5].predicate == "@!%p1"
    assert ins[5].operands == ("[ %rd1 + 0 ]", "{ %r1, %r2 }")
    assert ins[6].operands == ()


def test_metrics_of_add_kernel():
    raw = load("add")
    m = ptx.metrics(raw)
    # .reg .pred %p<2>; .reg .b32 %r<10>; .reg .b64 %rd<8>;
    assert m.ptx_regs_by_type == {"b32": 10, "b64": 8, "pred": 2}
    assert m.ptx_regs == 20
    assert m.ptx_instrs == 21
    assert m.ptx_opcodes == {
        "add.f32": 1, "add.s64": 3, "and.b32": 1, "ld.global.b32": 2, "ld.param.b32": 1, "ld.param.b64": 3,
        "mov.u32": 4, "mul.wide.s32": 1, "or.b32": 1, "ret": 1, "setp.lt.s32": 1, "shl.b32": 1,
        "st.global.b32": 1,
    }
    assert sum(m.ptx_opcodes.values()) == m.ptx_instrs
    assert m.ptx_local_bytes == 0 and m.ptx_shared_bytes == 0


def test_predicated_instructions_are_counted_unlike_the_study():
    raw = load("add")
    predicated = len(re.findall(r"^\s*@%p\d+ ", raw, re.M))
    assert predicated == 3  # two masked loads, one masked store
    assert ptx.metrics(raw).ptx_instrs == study_instruction_count(raw) + predicated


def test_metrics_unchanged_by_name_and_position():
    a, b, c = (ptx.metrics(load(t)) for t in ("add", "add_renamed", "add_commented"))
    assert a == b == c


def test_metrics_of_other_fixtures():
    leaky, leaky01 = ptx.metrics(load("leaky")), ptx.metrics(load("leaky_01"))
    assert (leaky.ptx_regs, leaky.ptx_instrs) == (19, 19)
    assert leaky == leaky01  # the study's semantic class: counts are blind
    fma, nofma = ptx.metrics(load("fma")), ptx.metrics(load("fma_nofusion"))
    assert (fma.ptx_regs, fma.ptx_instrs) == (23, 25)
    assert (nofma.ptx_regs, nofma.ptx_instrs) == (24, 26)
    assert fma.ptx_opcodes["fma.rn.f32"] == 1 and "mul.rn.f32" not in fma.ptx_opcodes
    assert nofma.ptx_opcodes["mul.rn.f32"] == 1 and nofma.ptx_opcodes["add.rn.f32"] == 1
    assert "fma.rn.f32" not in nofma.ptx_opcodes
    add, mul = ptx.metrics(load("add")), ptx.metrics(load("mul"))
    assert (add.ptx_regs, add.ptx_instrs) == (mul.ptx_regs, mul.ptx_instrs)
    assert add.ptx_opcodes != mul.ptx_opcodes


def test_metrics_local_shared_and_register_forms():
    text = """
.extern .shared .align 16 .b8 global_smem[];
.shared .align 4 .f32 tile[256];
.visible .entry k()
{
\t.local .align 8 .b8 \t__local_depot0[40];
\t.reg .b64 \t%SP;
\t.reg .pred \t%p<3>;
\t.reg .b16 \t%rs<5>;
\t.reg .f32 \t%f<7>;
\tret;  // .reg .b32 %r<100>; in a comment is not a declaration
}
"""
    m = ptx.metrics(text)
    assert m.ptx_regs_by_type == {"b16": 5, "b64": 1, "f32": 7, "pred": 3}
    assert m.ptx_regs == 16
    assert m.ptx_local_bytes == 40
    assert m.ptx_shared_bytes == 1024  # 256 x f32; the extern (dynamic) array has no size
    assert m.ptx_instrs == 1


def test_as_dict_has_the_design_keys():
    d = ptx.metrics(load("add")).as_dict()
    assert set(d) == {"ptx_regs", "ptx_regs_by_type", "ptx_instrs", "ptx_opcodes", "ptx_local_bytes",
                      "ptx_shared_bytes"}


# -- value numbering -------------------------------------------------------------------------------

def test_value_numbers_one_per_instruction():
    raw = load("add")
    assert len(ptx.value_numbers(raw)) == ptx.metrics(raw).ptx_instrs


def test_value_numbers_ignore_register_numbering():
    raw = load("add")
    shifted = renumber(raw, 40)
    assert ptx.normalise(shifted) != ptx.normalise(raw)
    assert ptx.value_numbers(shifted) == ptx.value_numbers(raw)


def test_value_numbers_ignore_label_names():
    text = """
.visible .entry k(.param .u32 k_param_0)
{
\tld.param.b32 %r1, [k_param_0];
$L__BB0_1:
\tadd.s32 %r1, %r1, 1;
\tsetp.lt.s32 %p1, %r1, 9;
\t@%p1 bra $L__BB0_1;
\tret;
}
"""
    other = text.replace("$L__BB0_1", "$L__BB7_3")
    assert ptx.value_numbers(text) == ptx.value_numbers(other)


def test_value_numbers_see_a_changed_data_flow():
    # same opcodes and counts: only which register feeds which instruction differs
    a, b = load("sub"), load("sub_swapped")
    assert ptx.metrics(a) == ptx.metrics(b)
    assert ptx.value_numbers(a) != ptx.value_numbers(b)
    assert ptx.value_numbers(a, mask_immediates=True) != ptx.value_numbers(b, mask_immediates=True)


def test_value_numbers_treat_commutative_operands_as_one_value():
    raw = load("add")
    swapped = raw.replace("add.f32 \t%r3, %r1, %r2;", "add.f32 \t%r3, %r2, %r1;")
    assert swapped != raw
    assert ptx.value_numbers(swapped) == ptx.value_numbers(raw)
    # but not for a subtraction
    sub = load("sub")
    flipped = sub.replace("sub.f32 \t%r3, %r1, %r2;", "sub.f32 \t%r3, %r2, %r1;")
    assert flipped != sub and ptx.value_numbers(flipped) != ptx.value_numbers(sub)


def test_mask_immediates_hides_only_constants():
    a, b = load("leaky"), load("leaky_01")
    assert ptx.value_numbers(a) != ptx.value_numbers(b)
    assert ptx.value_numbers(a, mask_immediates=True) == ptx.value_numbers(b, mask_immediates=True)
    # masking does not make different operations equal
    assert ptx.value_numbers(load("add"), mask_immediates=True) != ptx.value_numbers(load("mul"),
                                                                                     mask_immediates=True)


def test_swapped_loads_are_a_permutation():
    a, b = ptx.value_numbers(load("add")), ptx.value_numbers(load("add_swapped_loads"))
    assert a != b
    assert sorted(a) == sorted(b)


# -- the order of memory operations ----------------------------------------------------------------

ORDERED = """
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
	ld.param.b64 %rd1, [k_param_0];
	ld.param.b64 %rd2, [k_param_1];
	ld.global.b32 %r1, [%rd1];
	ld.global.b32 %r2, [%rd2];
	st.shared.b32 [%rd1], %r1;
	bar.sync 0;
	ld.shared.b32 %r3, [%rd2];
	add.f32 %r4, %r3, %r2;
	st.global.b32 [%rd2], %r4;
	ret;
}
"""


def _swap(text: str, a: str, b: str) -> str:
    """The PTX with lines `a` and `b` exchanged."""
    lines = text.splitlines()
    i, j = lines.index(a), lines.index(b)
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n"


def test_memory_order_lists_effects_barriers_and_loads_but_not_params_or_values():
    ops = [op for op, _ in ptx.memory_order(ORDERED)]
    assert sorted(ops[:2]) == ["ld.global.b32", "ld.global.b32"]
    assert ops[2:] == ["st.shared.b32", "bar.sync", "ld.shared.b32", "st.global.b32", "ret"]


def test_two_loads_between_the_same_effects_may_swap():
    swapped = _swap(ORDERED, "\tld.global.b32 %r1, [%rd1];", "\tld.global.b32 %r2, [%rd2];")
    assert ptx.value_numbers(swapped) != ptx.value_numbers(ORDERED)
    assert ptx.memory_order(swapped) == ptx.memory_order(ORDERED)


@pytest.mark.parametrize("a,b", [
    ("\tbar.sync 0;", "\tld.shared.b32 %r3, [%rd2];"),          # the load no longer waits for the barrier
    ("\tst.shared.b32 [%rd1], %r1;", "\tbar.sync 0;"),           # the store is no longer before it
    ("\tld.global.b32 %r2, [%rd2];", "\tst.shared.b32 [%rd1], %r1;"),  # a load moved past a store
])
def test_a_load_store_or_barrier_moved_across_another_changes_the_order(a, b):
    moved = _swap(ORDERED, a, b)
    assert sorted(ptx.value_numbers(moved)) == sorted(ptx.value_numbers(ORDERED))
    assert ptx.memory_order(moved) != ptx.memory_order(ORDERED)


def test_atomics_fences_and_branch_targets_keep_their_place():
    text = """
.visible .entry k(.param .u64 k_param_0)
{
	ld.param.b64 %rd1, [k_param_0];
	atom.global.add.u32 %r1, [%rd1], 1;
	fence.acq_rel.gpu;
	ld.global.b32 %r2, [%rd1+4];
$L__BB0_1:
	red.global.add.u32 [%rd1+8], %r2;
	ret;
}
"""
    ops = [op for op, _ in ptx.memory_order(text)]
    assert ops == ["atom.global.add.u32", "fence.acq_rel.gpu", "ld.global.b32", "label", "red.global.add.u32", "ret"]
    assert ptx.memory_order(_swap(text, "\tatom.global.add.u32 %r1, [%rd1], 1;", "\tfence.acq_rel.gpu;")) \
        != ptx.memory_order(text)


def test_memory_order_of_real_kernels():
    """A moved debug_barrier and swapped overlapping stores change it; pure reordering does not."""
    assert ptx.memory_order(load("barrier_before")) != ptx.memory_order(load("barrier_after"))
    assert ptx.memory_order(load("stores")) != ptx.memory_order(load("stores_swapped"))
    assert ptx.memory_order(load("pure")) == ptx.memory_order(load("pure_swapped"))
    assert ptx.memory_order(load("add")) == ptx.memory_order(load("add_swapped_loads"))


# -- a kernel with a noinline helper (.func declared, called, defined) -----------------------------

def test_entry_names_puts_the_kernel_first_and_lists_each_function_once():
    assert ptx.entry_names(load("noinline")) == ["caller_kernel", "k_noinline_$_helper__fp32"]


def test_normalise_with_a_noinline_helper():
    norm = ptx.normalise(load("noinline"))
    assert "caller_kernel" not in norm and "k_noinline_$_helper__fp32" not in norm
    assert "call.uni (retval0), KERNEL, (param0);" in norm
    assert "ld.param.b32 %r1, [KERNEL_param_0];" in norm
    assert "fma.rn.f32 %r2, %r1, 0f40000000, 0f3F800000;" in norm


def test_metrics_count_every_function_body():
    m = ptx.metrics(load("noinline"))
    # kernel: %p<2> %r<5> %rd<6>; helper: %r<3>
    assert m.ptx_regs_by_type == {"b32": 8, "b64": 6, "pred": 2}
    assert m.ptx_instrs == 19
    assert m.ptx_opcodes["ret"] == 2 and m.ptx_opcodes["call.uni"] == 1
    # `.param .b32 param0;` inside the call sequence and the forward declaration are not instructions
    assert not any(op.startswith(".") for op in m.ptx_opcodes)


# -- source_lines: the .loc normalising drops, kept for the HTML view -----------------------------
@pytest.mark.parametrize("tag", sorted(p.stem for p in PTX.glob("*.ptx")))
def test_source_lines_cover_every_normalised_line(tag):
    text = load(tag)
    lines = ptx.source_lines(text)
    assert sum(n for n, _, _ in lines.runs) == len(ptx.normalise(text).splitlines())
    assert lines.files == (f"/tmp/ptxgen/k_{tag if tag != 'fma_nofusion' else 'fma'}.py",)


def test_source_lines_name_the_line_each_instruction_came_from():
    text = load("add")
    lines = ptx.source_lines(text)
    per_line = [(f, n) for count, f, n in lines.runs for _ in range(count)]
    norm = ptx.normalise(text).splitlines()
    at = {line: per_line[i] for i, line in enumerate(norm)}
    assert at["add.f32 %r3, %r1, %r2;"] == (0, 12)              # `x + y` on k_add.py's line 12
    assert at["setp.lt.s32 %p1, %r9, %r6;"] == (0, 9)           # `mask = offs < n`
    assert at["ret;"] == (0, 6)
    assert per_line[0] == (-1, 0)                               # `.version`: before any .loc
    assert len(lines.runs) < len(norm) / 3                      # run-length coded


def test_source_lines_read_both_spellings_of_file():
    text = ('.visible .entry k()\n{\n.loc 2 5 1\nret;\n.loc 1 7 0\nexit;\n}\n'
            '.file 1 "ops" "a.py@abc"\n.file 2 "/abs/b.py"\n')
    lines = ptx.source_lines(text)
    assert lines.files == ("/abs/b.py", "ops/a.py@abc")
    assert lines.runs == ((2, -1, 0), (1, 0, 5), (2, 1, 7))     # `}` keeps the last .loc
    assert ptx.SourceLines.from_json(lines.as_json()) == lines


@pytest.mark.parametrize("stored", [None, [], {"files": ["a"]}, {"files": [1], "runs": []},
                                    {"files": ["a"], "runs": [[1, 1, 3]]}, {"files": ["a"], "runs": [[0, 0, 3]]},
                                    {"files": ["a"], "runs": [[1, 0]]}, {"files": ["a"], "runs": [[1, 0, True]]}])
def test_a_malformed_stored_mapping_reads_as_none(stored):
    assert ptx.SourceLines.from_json(stored) is None
