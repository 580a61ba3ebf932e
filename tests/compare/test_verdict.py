"""verdict.py: each fixture pair (tests/data/ptx/README.md) gets the verdict design.md names."""

from __future__ import annotations

import pytest

from helpers import DATA
from ptxdiff.compare import verdict
from ptxdiff.metrics import ptx

PTX = DATA / "ptx"


def side(tag: str) -> tuple[str, dict]:
    """What the engine hands classify: the normalised PTX and the metrics of one compile."""
    raw = (PTX / f"{tag}.ptx").read_text()
    return ptx.normalise(raw), ptx.metrics(raw).as_dict()


def classify(old_tag: str, new_tag: str, old_extra: dict | None = None, new_extra: dict | None = None) -> str:
    old_ptx, old_m = side(old_tag)
    new_ptx, new_m = side(new_tag)
    return verdict.classify(old_ptx, new_ptx, {**old_m, **(old_extra or {})}, {**new_m, **(new_extra or {})})


PAIRS = [
    ("add", "add", "identical"),
    ("add", "add_renamed", "identical"),
    ("add", "add_commented", "identical"),
    ("add", "add_swapped_loads", "reordered"),
    ("add", "mul", "structural"),            # equal counts, one opcode differs
    ("sub", "sub_swapped", "structural"),    # equal opcodes and counts, different data flow
    ("leaky", "leaky_01", "constants-only"),  # the study's "semantic" pair
    ("fma", "fma_nofusion", "structural"),   # fma vs mul + add
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
    m = ptx.metrics(raw).as_dict()
    assert ptx.normalise(shifted) != ptx.normalise(raw)
    assert verdict.classify(ptx.normalise(raw), ptx.normalise(shifted), m, ptx.metrics(shifted).as_dict()) \
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
    new_m = {**old_m, "ptx_opcodes": {**old_m["ptx_opcodes"], "add.f32": 0, "mul.f32": 1}}
    assert verdict.classify(old_ptx, old_ptx + "x", old_m, new_m) == "structural"


def test_delta():
    _, a = side("fma")
    _, b = side("fma_nofusion")
    a.update(regs=16, occupancy=1.0, spill_store_bytes=None, sass_instrs=27)
    b.update(regs=18, occupancy=0.875, spill_store_bytes=4, sass_instrs=28)
    d = verdict.delta(a, b)
    assert d["ptx_regs"] == 1 and d["ptx_instrs"] == 1
    assert d["regs"] == 2 and isinstance(d["regs"], int)
    assert d["occupancy"] == -0.125
    assert d["sass_instrs"] == 1
    assert "spill_store_bytes" not in d  # one side unknown: no delta
    assert "ptx_opcodes" not in d and "ptx_regs_by_type" not in d
    assert verdict.delta(None, b) == {} and verdict.delta(a, None) == {}


def test_delta_rounds_floats():
    assert verdict.delta({"occupancy": 0.1}, {"occupancy": 0.3}) == {"occupancy": 0.2}


def test_strongest():
    assert verdict.strongest(["identical", "reordered", "constants-only"]) == "reordered"
    assert verdict.strongest(["identical", "structural", "reordered"]) == "structural"
    assert verdict.strongest(["added", "failed", "structural"]) == "failed"
    assert verdict.strongest(["removed", "structural"]) == "removed"
    assert verdict.strongest(["identical"]) == "identical"
    assert verdict.strongest([]) is None


def test_order_is_strongest_first():
    from ptxdiff import config

    assert verdict.ORDER is config.VERDICTS   # one vocabulary: the verdicts `block` may name are these
    assert verdict.ORDER == ("failed", "unmeasured", "added", "removed", "structural", "reordered", "constants-only",
                             "identical")


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


@pytest.mark.parametrize("old,new", [("leaky", "leaky_01"), ("add", "add_swapped_loads")])
def test_constants_only_and_reordered_quote_the_first_differing_lines(old, new):
    old_ptx, new_ptx = side(old)[0], side(new)[0]
    a, b = next((a, b) for a, b in zip(old_ptx.splitlines(), new_ptx.splitlines()) if a != b)
    assert why(old, new) == f"{' '.join(a.split())} -> {' '.join(b.split())}"


def test_identical_has_no_reason_and_counts_are_named_when_opcodes_agree():
    assert why("add", "add_renamed") is None
    m = {"ptx_opcodes": {"add.f32": 1}, "regs": 26}
    assert verdict.reason("structural", "a", "b", m, {**m, "regs": 46}) == "regs 26 -> 46"


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
