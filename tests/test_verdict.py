"""verdict.py: each fixture pair (tests/data/ptx/README.md) gets the verdict design.md names."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from helpers import DATA, metrics
from ptxdiff import verdict
from ptxdiff.metrics import ptx
from ptxdiff.metrics.counts import Metrics

PTX = DATA / "ptx"


def side(tag: str) -> tuple[str, Metrics]:
    """What the engine hands classify: the normalised PTX and the metrics of one compile (its
    PTX counts; the others 0)."""
    raw = (PTX / f"{tag}.ptx").read_text()
    return ptx.normalise(raw), metrics(**ptx.metrics(raw).as_dict())


def classify(old_tag: str, new_tag: str, old_extra: dict | None = None, new_extra: dict | None = None) -> str:
    old_ptx, old_m = side(old_tag)
    new_ptx, new_m = side(new_tag)
    return verdict.classify(old_ptx, new_ptx, dataclasses.replace(old_m, **(old_extra or {})),
                            dataclasses.replace(new_m, **(new_extra or {})))


PAIRS = [
    ("add", "add", "identical"),
    ("add", "add_renamed", "identical"),
    ("add", "add_commented", "identical"),
    ("add", "add_swapped_loads", "reordered"),
    ("add", "mul", "structural"),            # equal counts, one opcode differs
    ("sub", "sub_swapped", "structural"),    # equal opcodes and counts, different data flow
    ("leaky", "leaky_01", "constants-only"),  # the study's "semantic" pair
    ("fma", "fma_nofusion", "structural"),   # fma vs mul + add
    ("barrier_before", "barrier_after", "structural"),   # a barrier moved past a load: same multiset
    ("stores", "stores_swapped", "structural"),          # overlapping stores swapped: same multiset
    ("pure", "pure_swapped", "reordered"),               # only loads and pure values swapped
]


@pytest.mark.parametrize("old,new,expected", PAIRS, ids=[f"{a}->{b}" for a, b, _ in PAIRS])
def test_fixture_pairs(old, new, expected):
    assert classify(old, new) == expected


@pytest.mark.parametrize("old,new,expected", PAIRS, ids=[f"{b}->{a}" for a, b, _ in PAIRS])
def test_fixture_pairs_are_symmetric(old, new, expected):
    assert classify(new, old) == expected


def test_register_renumbering_alone_is_identical():
    import re
    raw = (PTX / "add.ptx").read_text()
    shifted = re.sub(r"%(rd|r|p)(\d+)\b", lambda m: f"%{m.group(1)}{int(m.group(2)) + 7}", raw)
    m = metrics(**ptx.metrics(raw).as_dict())
    assert ptx.normalise(shifted) != ptx.normalise(raw)
    assert verdict.classify(ptx.normalise(raw), ptx.normalise(shifted), m, metrics(**ptx.metrics(shifted).as_dict())) \
        == "identical"


@pytest.mark.parametrize("key,old,new", [
    ("regs", 14, 16), ("spill_store_bytes", 0, 4), ("spill_load_bytes", 0, 4), ("stack_bytes", 0, 8),
    ("shared_bytes", 0, 1024), ("num_stages", 3, 4), ("local_bytes", 0, 8),
])
def test_machine_level_count_change_makes_otherwise_milder_change_structural(key, old, new):
    assert classify("leaky", "leaky_01", {key: old}, {key: new}) == "structural"
    assert classify("add", "add_swapped_loads", {key: old}, {key: new}) == "structural"


def test_sass_instruction_count_alone_is_not_structural():
    # ptxas schedules reordered PTX differently; the SASS count is reported, not a verdict input
    assert classify("add", "add_swapped_loads", {"sass_instrs": 23}, {"sass_instrs": 25}) == "reordered"
    assert classify("leaky", "leaky_01", {"sass_instrs": 23}, {"sass_instrs": 22}) == "constants-only"


def test_occupancy_alone_is_not_a_count():
    # occupancy follows from regs/shared/warps; on its own it is reported, not a verdict input
    assert classify("leaky", "leaky_01", {"occupancy": 1.0}, {"occupancy": 1.0}) == "constants-only"


def test_opcode_histogram_difference_is_structural_even_with_equal_text_lengths():
    old_ptx, old_m = side("add")
    new_m = dataclasses.replace(old_m, ptx_opcodes={**old_m.ptx_opcodes, "add.f32": 0, "mul.f32": 1})
    assert verdict.classify(old_ptx, old_ptx + "x", old_m, new_m) == "structural"


def test_delta():
    a = dataclasses.replace(side("fma")[1], regs=16, occupancy=1.0, spill_store_bytes=0, sass_instrs=27)
    b = dataclasses.replace(side("fma_nofusion")[1], regs=18, occupancy=0.875, spill_store_bytes=4, sass_instrs=28)
    d = verdict.delta(a, b)
    assert d["ptx_regs"] == 1 and d["ptx_instrs"] == 1
    assert d["regs"] == 2 and isinstance(d["regs"], int)
    assert d["occupancy"] == -0.125
    assert d["sass_instrs"] == 1 and d["spill_store_bytes"] == 4
    assert list(d) == list(verdict.NUMERIC)   # every count, in the JSON report's order; no histogram
    assert verdict.delta(None, b) == {} and verdict.delta(a, None) == {}


def test_delta_rounds_floats():
    assert verdict.delta(metrics(occupancy=0.1), metrics(occupancy=0.3))["occupancy"] == 0.2


def test_strongest():
    assert verdict.strongest(["identical", "reordered", "constants-only"]) == "reordered"
    assert verdict.strongest(["identical", "structural", "reordered"]) == "structural"
    assert verdict.strongest(["added", "failed", "structural"]) == "failed"
    assert verdict.strongest(["removed", "structural"]) == "removed"
    assert verdict.strongest(["identical"]) == "identical"
    assert verdict.strongest([]) is None


def test_order_is_strongest_first():
    from ptxdiff import repo_config

    assert repo_config.ORDER is verdict.ORDER   # one vocabulary: the verdicts `block` may name are these
    assert verdict.ORDER == ("failed", "unmeasured", "added", "removed", "structural", "reordered", "constants-only",
                             "identical", "unpaired")


def why(old_tag: str, new_tag: str) -> str | None:
    old_ptx, old_m = side(old_tag)
    new_ptx, new_m = side(new_tag)
    return verdict.reason(verdict.classify(old_ptx, new_ptx, old_m, new_m), old_ptx, new_ptx, old_m, new_m)


def test_a_structural_verdict_says_which_opcodes_moved():
    """x + y -> x * y: the counts are equal, the opcode changed, and the reason says so."""
    assert why("add", "mul") == "add.f32 -1, mul.f32 +1"
    assert why("fma", "fma_nofusion") == "add.rn.f32 +1, fma.rn.f32 -1, mul.rn.f32 +1"


def test_a_structural_verdict_with_the_same_opcodes_says_what_else_differs():
    reason = why("sub", "sub_swapped")
    assert reason is not None and reason.startswith("values computed differ: ") and " -> " in reason


@pytest.mark.parametrize("old,new", [("leaky", "leaky_01")])
def test_constants_only_quotes_the_first_differing_lines(old, new):
    old_ptx, new_ptx = side(old)[0], side(new)[0]
    a, b = next((a, b) for a, b in zip(old_ptx.splitlines(), new_ptx.splitlines()) if a != b)
    assert why(old, new) == f"{' '.join(a.split())} -> {' '.join(b.split())}"


def test_a_reordering_names_what_moved_with_registers_masked():
    """Issue 38: not `ld.param.b32 %r14, [K_param_12]; -> ld.param.b32 %r15, [K_param_12];`
    (a register renumbered), but which instruction moved before which."""
    assert why("pure", "pure_swapped") == \
        "add.f32 %r, %r, 0f40A00000 moved before mul.f32 %r, %r, 0f40400000 (6 instructions in another place)"
    text = (DATA / "ptx" / "add.ptx").read_text()
    zero, one = "\tld.param.b64 \t%rd4, [add_kernel_param_0];\n", "\tld.param.b64 \t%rd5, [add_kernel_param_1];\n"
    old, new = ptx.normalise(text), ptx.normalise(text.replace(zero + one, one + zero))
    assert verdict.what_moved(old, new) == \
        "ld.param.b64 %rd, [KERNEL_param_1] moved before ld.param.b64 %rd, [KERNEL_param_0]"
    assert verdict.what_moved(old, old) is None


@pytest.mark.parametrize("old,new,moved", [
    ("barrier_before", "barrier_after", "bar.sync moved after ld.global.b32"),
    ("barrier_after", "barrier_before", "ld.global.b32 moved after bar.sync"),
    ("stores", "stores_swapped", "st.global.b32 moved after another st.global.b32"),
])
def test_a_change_in_the_order_of_memory_operations_is_structural_and_named(old, new, moved):
    """Same instructions, same values: only where a barrier or store sits changed, which changes
    what a load reads or which store wins; the reason names the operation that moved."""
    assert Counter(ptx.value_numbers(side(old)[0])) == Counter(ptx.value_numbers(side(new)[0]))
    assert why(old, new) == f"order of memory operations changed: {moved}"


def test_identical_has_no_reason_and_counts_are_named_when_opcodes_agree():
    assert why("add", "add_renamed") is None
    m = metrics(ptx_opcodes={"add.f32": 1}, regs=26)
    assert verdict.reason("structural", "a", "b", m, dataclasses.replace(m, regs=46)) == "regs 26 -> 46"


def test_opcode_delta_counts_what_it_does_not_name():
    old = {f"op{i}": 1 for i in range(8)}
    assert verdict.opcode_delta(old, {}) == "op0 -1, op1 -1, op2 -1, op3 -1, op4 -1, op5 -1, 2 more"


@pytest.mark.parametrize("old,new,label", [
    ("BLOCK_SIZE=1024 w4 s3", "BLOCK_SIZE=2048 w4 s3", "BLOCK_SIZE=1024 -> 2048 w4 s3"),
    ("BLOCK=64 w4 s3", "BLOCK=64 w8 s3", "BLOCK=64 w4 -> w8 s3"),
    ("BLOCK=64 w4", "BLOCK=64 EVEN=True w4", "BLOCK=64 w4 -> BLOCK=64 EVEN=True w4"),
])
def test_a_spec_whose_values_changed_is_one_label(old, new, label):
    assert verdict.pair_label(old, new) == label


SIG = {"x_ptr": "*fp32", "n": "i32", "offset": "fp32", "BLOCK": "constexpr"}


@pytest.mark.parametrize("new,said", [
    ({**SIG, "offset": "constexpr"}, "offset: runtime fp32 -> constexpr"),
    ({**SIG, "BLOCK": "i32"}, "BLOCK: constexpr -> runtime i32"),
    ({k: v for k, v in SIG.items() if k != "n"}, "n: removed"),
    ({**SIG, "stride": "i64"}, "stride: added (i64)"),
    ({**SIG, "n": "i64"}, "n: i32 -> i64"),
    ({"n": "i32", "x_ptr": "*fp32", "offset": "fp32", "BLOCK": "constexpr"},
     "parameters reordered: x_ptr, n, offset, BLOCK -> n, x_ptr, offset, BLOCK"),
    ({"x_ptr": "*fp16", "m": "i32", "offset": "fp32", "BLOCK": "constexpr"}, "x_ptr: *fp32 -> *fp16, n: removed, m: added (i32)"),
    (SIG, None),
    ({"inp_ptr": "*fp32", "n_elements": "i32", "offset": "fp32", "BLOCK": "constexpr"}, None),   # renamed in place
    ({"n": "*fp32", "x_ptr": "i32", "offset": "fp32", "BLOCK": "constexpr"},
     "x_ptr: *fp32 -> i32, n: i32 -> *fp32, parameters reordered: x_ptr, n, offset, BLOCK -> n, x_ptr, offset, BLOCK"),
])
def test_a_signature_change_is_said_by_parameter_name(new, said):
    assert verdict.signature_change(SIG, new) == said


def test_a_signature_change_goes_first_in_the_reason_and_no_param_line_is_quoted():
    """`.param .u32 -> .param .u64` is what the PTX shows; the reason names the parameter."""
    old_ptx, old_m = side("leaky")
    retyped = old_ptx.replace(".param .u32", ".param .u64", 1)
    assert retyped != old_ptx and verdict.first_difference(old_ptx, retyped).startswith(".param .u32")
    assert verdict.reason("identical", old_ptx, retyped, old_m, old_m, "n: i32 -> i64") == "n: i32 -> i64"
    new_ptx, new_m = side("leaky_01")
    said = verdict.reason("constants-only", old_ptx, new_ptx.replace(".param .u32", ".param .u64", 1), old_m, new_m,
                          "n: i32 -> i64")
    assert said == "n: i32 -> i64; " + verdict.first_difference(old_ptx, new_ptx)
    assert ".param" not in said
    (add_ptx, add_m), (mul_ptx, mul_m) = side("add"), side("mul")
    assert verdict.reason("structural", add_ptx, mul_ptx, add_m, mul_m, "n: removed") == \
        "n: removed; add.f32 -1, mul.f32 +1"
