"""Where a spec's values come from (specs/plan.py): what a launch site passes is a fact and the
rest a guess, the same on both sides; a plan's key changes with what it compiles; and what the
compile searches found (shrunk sizes, refits, types) goes into the plan once."""

from __future__ import annotations

import json

from helpers import HEADER
from ptxdiff.discovery.kernels import Kernel, discover
from ptxdiff.repo_config import Config
from ptxdiff.source.modules import FileSet
from ptxdiff.specs.guesses import type_of
from ptxdiff.specs.plan import FAMILIES, MAX_SHRINK, SHRINK, Choice, Plan, combo_key, make, smaller

KERNEL = HEADER + '''
@triton.jit
def k(x_ptr, b_ptr, y_ptr, n, scale, flag, stride, BLOCK: tl.constexpr, HAS_B: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride, mask=offs < n)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs)
    if HAS_B:
        x = x * scale
    tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty))


def launch(x, y):
    k[(1,)](x, None, y, x.numel(), 0.5, True, 1, BLOCK=128, HAS_B=False, num_warps=4, num_stages=2)
'''
UNLAUNCHED = KERNEL[:KERNEL.index("def launch(")]

GUESSED_SIZES = Plan(constexprs=(Choice("BLOCK", (1024, 64, 48), "guessed"), Choice("N", (256,), "call-site")))


def kernel_of(src: str) -> Kernel:
    return discover(FileSet({"ops/k.py": src.encode()})).kernels["ops/k.py::k"]


def plan_of(this: Kernel, old: Kernel | None, new: Kernel | None) -> Plan:
    from ptxdiff.specs.launch import inputs_of

    return make(this, old, new, inputs_of(this, {}, Config()))


def by_name(choices: tuple[Choice, ...]) -> dict[str, tuple[tuple, str]]:
    return {c.name: (c.values, c.source) for c in choices}


def test_what_the_launch_site_passes_is_a_call_site_fact_typed_as_triton_would():
    kernel = kernel_of(KERNEL)
    plan = plan_of(kernel, kernel, kernel)
    assert by_name(plan.constexprs) == {"BLOCK": ((128,), "call-site"), "HAS_B": ((False,), "call-site")}
    types = by_name(plan.types)
    assert types["b_ptr"] == (("constexpr",), "call-site")      # None passed
    assert types["stride"] == (("constexpr1",), "call-site")    # 1 passed: triton makes it a constant
    assert types["scale"] == (("fp32",), "call-site") and types["flag"] == (("u1",), "call-site")
    assert types["n"] == (("i32",), "call-site")                # x.numel()
    assert types["x_ptr"] == (("*fp32",), "guessed")            # a tensor: its type is a guess
    assert by_name(plan.options) == {"num_warps": ((4,), "call-site"), "num_stages": ((2,), "call-site")}
    assert plan.optional == ()      # the site passes None: nothing left to compile both ways


def test_without_a_launch_site_everything_is_guessed_and_a_none_tested_pointer_is_optional():
    kernel = kernel_of(UNLAUNCHED)
    plan = plan_of(kernel, None, kernel)
    assert {c.source for c in (*plan.constexprs, *plan.types)} == {"guessed"}
    assert plan.choice("HAS_B").values == (False, True)         # a flag: both ways
    assert plan.optional == ("b_ptr",) and plan.options == ()
    assert plan.families == FAMILIES                             # it casts to a pointer's element type


def test_a_plan_is_the_same_whichever_side_asks_where_the_sides_are_alike():
    old, new = kernel_of(UNLAUNCHED), kernel_of(UNLAUNCHED)
    assert plan_of(old, old, new).key() == plan_of(new, old, new).key()


def test_the_key_changes_with_what_is_compiled_and_leaves_defaults_out():
    base = json.loads(Plan().key())
    assert Plan().key() == Plan().key() and "shrink" not in base and "families" not in base
    keys = {Plan().key(), Plan(cover=True).key(), Plan(max_specs=7).key(), Plan(families=FAMILIES).key(),
            GUESSED_SIZES.key(), GUESSED_SIZES.shrunk().key(), Plan(optional=("b_ptr",)).key()}
    assert len(keys) == 7


def test_smaller_divides_powers_of_two_from_32_and_leaves_everything_else():
    assert [smaller(v) for v in (4096, 1024, 64, 32)] == [4096 // SHRINK, 1024 // SHRINK, 16, 16]
    assert [smaller(v) for v in (16, 48, 0.5, True, "64")] == [16, 48, 0.5, True, "64"]


def test_shrunk_divides_guessed_sizes_at_most_twice_and_keeps_facts():
    shrunk = GUESSED_SIZES.shrunk()
    assert by_name(shrunk.constexprs) == {"BLOCK": ((256, 16, 48), "guessed"), "N": ((256,), "call-site")}
    assert shrunk.shrink == SHRINK and f"divided by {SHRINK}" in (shrunk.shrunk_note() or "")
    twice = shrunk.shrunk()
    assert by_name(twice.constexprs)["BLOCK"] == ((64, 16, 48), "guessed") and twice.shrink == MAX_SHRINK
    assert twice.shrunk() is twice and GUESSED_SIZES.shrunk_note() is None
    assert [p.shrunk_size(1024) for p in (GUESSED_SIZES, shrunk, twice)] == [1024, 256, 64]   # a heuristic's size
    facts_only = Plan(constexprs=(Choice("N", (256,), "call-site"),))
    assert facts_only.shrunk() is facts_only                      # nothing to shrink: the same plan
    assert facts_only.shrunk(heuristic_sizes=True).shrink == SHRINK   # a heuristic's sizes shrink


def test_a_refitted_value_stays_when_the_plan_is_shrunk():
    refit = GUESSED_SIZES.refitted({("BLOCK", 1024): 512})
    assert refit.choice("BLOCK").values == (512, 64, 48) and refit.refits == (("BLOCK", 1024, 512),)
    assert refit.refit_notes() == ["BLOCK: guessed 1024, which does not fit the kernel; 512 does"]
    assert refit.shrunk().choice("BLOCK").values == (512, 16, 48)
    assert refit.refitted({("BLOCK", 1024): 512}) is refit         # nothing new
    assert GUESSED_SIZES.refitted({("N", 256): 128}) is GUESSED_SIZES   # a fact is never refitted


def test_each_failing_guess_of_a_name_is_refitted_by_its_own_value():
    """gemlite's `group_size` guessed 16 and 4 (its comparisons), both failing in the dot's lowering:
    each value has its own fit, neither overwrites the other's."""
    refit = GUESSED_SIZES.refitted({("BLOCK", 1024): 512, ("BLOCK", 64): 32})
    assert refit.choice("BLOCK").values == (512, 32, 48)
    assert refit.refits == (("BLOCK", 1024, 512), ("BLOCK", 64, 32))
    # one fit never replaces another's, in any order: 1024 -> 64 and 64 -> 32 give (64, 32, 48)
    for found in ({("BLOCK", 1024): 64, ("BLOCK", 64): 32}, {("BLOCK", 64): 32, ("BLOCK", 1024): 64}):
        assert GUESSED_SIZES.refitted(found).choice("BLOCK").values == (64, 32, 48)


def test_matched_takes_the_other_sides_values_for_guesses_only():
    matched = GUESSED_SIZES.matched({"BLOCK": [128, 256], "N": [512], "M": [8]})
    assert by_name(matched.constexprs) == {"BLOCK": ((128, 256), "guessed"), "N": ((256,), "call-site"),
                                           "M": ((8,), "guessed")}
    unread = Plan(constexprs=(Choice("BLOCK", (1024, 64), "guessed"),), unread=("BLOCK",))
    assert unread.matched({"BLOCK": [128]}).choice("BLOCK").values == (128, 1024, 64)   # and every branch
    same = Plan(constexprs=(Choice("BLOCK", (128,), "call-site"),))
    assert same.matched({"BLOCK": [64]}) is same


def test_retyped_adds_what_a_later_search_finds_and_keeps_what_was_found():
    combo = {"BLOCK": 64, "HAS_B": True}
    first = Plan().retyped({combo_key(combo): {"x_ptr": "*i32"}})
    later = first.retyped({combo_key(combo): {"x_ptr": "*fp16", "n": "i64"}})
    assert later.retype_for(combo, ()) == {"x_ptr": "*i32", "n": "i64"}
    assert later.retype_for({"BLOCK": 64, "HAS_B": False}, ()) == {}
    assert later.retype_for(combo, (type_of("x_ptr", "*bf16"),)) == {}   # the bf16 family's are its own
    assert first.retyped({combo_key(combo): {"x_ptr": "*i32"}}) is first
    assert combo_key({"b": 1, "a": 2}) == combo_key({"a": 2, "b": 1})   # the order of the dict is not the key's


def test_a_param_one_side_leaves_unused_is_typed_by_the_side_that_uses_it():
    """modded-nanogpt's 57a65f15ae: the new side stops storing through `c_desc`, which then said
    nothing and was guessed i32 for both sides, and the old side's `c_desc.store(...)` failed on
    every spec. Each side compiles with the type the side that uses it gives."""
    uses = HEADER + '''
@triton.jit
def k(a_desc, c_desc, BLOCK: tl.constexpr):
    c_desc.store([0, 0], a_desc.load([0, 0]))
'''
    stops = uses.replace("c_desc.store([0, 0], a_desc.load([0, 0]))", "a_desc.store([0, 0], a_desc.load([0, 0]) * 2)")
    old, new = kernel_of(uses), kernel_of(stops)
    for this in (old, new):
        types = {c.name: c.values for c in plan_of(this, old, new).types}
        assert types["c_desc"][0].startswith("tensordesc<"), types
    # where neither side uses it, nothing says otherwise: an integer
    assert {c.name: c.values for c in plan_of(new, new, new).types}["c_desc"] == ("i32",)


CAPPED = HEADER + '''
@triton.jit
def k(q, o, K: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, BLOCK: tl.constexpr):
    b_h = tl.zeros([BK * BK, BV], dtype=tl.float32)
    offs = tl.arange(0, BLOCK)
    if BLOCK == 1024:
        b_h += 1.0
    tl.store(o + offs, tl.load(q + offs))


def launch(q, v):
    B, H, T, K = q.shape
    BK, BV = min(K, 16), min(v.shape[-1], 32)
    BK, BV = max(BK, 16), max(BV, 16)
    k[(1,)](q, q, K, BK, BV, BLOCK=triton.next_power_of_2(min(T, 512)))
'''


def test_a_size_the_launch_site_caps_is_guessed_within_its_caps_and_a_compared_one_at_every_branch():
    """fla's fused_chunk_based: `BK = max(min(K, 16), 16)` is 16 whatever K is, and BV is at most 32;
    guessed at 64 apart from its launch, BK x BK x BV made a 300 s compile. BLOCK's comparison with
    1024 keeps its branches, above the cap too: a change under either is compiled."""
    kernel = kernel_of(CAPPED)
    got = {c.name: c for c in plan_of(kernel, kernel, kernel).constexprs}
    assert (got["BK"].values, got["BK"].source) == ((16,), "call-site")
    assert got["BV"].values == (32,) and "within the launch site's caps (16..32)" in got["BV"].why
    assert 1024 in got["BLOCK"].values and len(got["BLOCK"].values) > 1 and "caps" not in got["BLOCK"].why
