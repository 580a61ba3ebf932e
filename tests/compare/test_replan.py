"""Plans made again for a compared pair from what its first compiles said, on in-memory needs:
both sides get the same new plan, their results are cleared, and only they compile again."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ptxdiff.compare import replan
from ptxdiff.compare.replan import Need
from ptxdiff.compare.session import SHRINK_FIRST
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.compile.protocol import Failure
from ptxdiff.git.repo import Side
from ptxdiff.repo_config import KernelConfig
from ptxdiff.specs.detail import SpecDetail
from ptxdiff.specs.plan import Choice, Plan, combo_key

GUESSED = Plan(constexprs=(Choice("BLOCK", (64,), "guessed"),))
FACT = Plan(constexprs=(Choice("BLOCK", (128,), "call-site"),))
KERNEL = SimpleNamespace(id="ops/k.py::k", name="k")


def result(constexprs: dict, guessed: dict | None = None, **extra: object) -> SpecResult:
    spec = SpecDetail.from_json({"constexprs": constexprs, "guessed": guessed or {}})
    return SpecResult("k", "k", spec, **extra)  # type: ignore[arg-type]


def need(side: str, plan: Plan, results: list[SpecResult], pair: int = 0) -> Need:
    return Need(Side(side, None if side == "new" else "c0ffee"), KERNEL, plan, KernelConfig(), pair,
                {0: results})


def test_pairs_of_groups_by_pair_in_first_seen_order():
    a, b, c = need("old", GUESSED, [], 1), need("new", GUESSED, [], 0), need("new", GUESSED, [], 1)
    assert replan.pairs_of([a, b, c]) == [[a, c], [b]]


def test_matched_gives_the_guessing_side_the_other_sides_facts():
    old = need("old", FACT, [result({"BLOCK": 128}), result({"BLOCK": 256})])
    new = need("new", GUESSED, [result({"BLOCK": 64}, {"BLOCK": 64})])
    assert replan.matched([old, new]) == [new]
    assert new.plan.choice("BLOCK") == Choice("BLOCK", (128, 256), "guessed", "as the other side's configs give it")
    assert new.results == {} and old.plan == FACT and old.results


@pytest.mark.parametrize("old_results, new_results", [
    ([result({"BLOCK": 128}, {"BLOCK": 128})], [result({"BLOCK": 64}, {"BLOCK": 64})]),   # both guess
    ([result({"BLOCK": "big"})], [result({"BLOCK": 64}, {"BLOCK": 64})]),                   # not a number
    ([SpecResult(None, "-", error="-", failure=Failure.ABSENT)], [result({"BLOCK": 64}, {"BLOCK": 64})]),  # no spec
])
def test_matched_leaves_pairs_without_facts_for_a_guess(old_results, new_results):
    old, new = need("old", GUESSED, old_results), need("new", GUESSED, new_results)
    assert replan.matched([old, new]) == []
    assert new.plan == GUESSED and new.results


def test_matched_needs_two_sides():
    alone = need("new", GUESSED, [result({"BLOCK": 64}, {"BLOCK": 64})])
    assert replan.matched([alone]) == [] and alone.plan == GUESSED


def test_shrunk_replans_both_sides_when_either_is_over_the_cost_rule():
    big = Plan(constexprs=(Choice("BLOCK", (1024,), "guessed"),))
    over = result({"BLOCK": 1024}, error=SHRINK_FIRST, failure=Failure.OVER_COST)
    old, new = need("old", big, [over]), need("new", big, [result({"BLOCK": 1024})])
    other = need("new", big, [result({"BLOCK": 1024})], pair=1)
    assert replan.shrunk([old, new, other]) == [old, new]
    assert old.plan == new.plan == big.shrunk() and old.plan.choice("BLOCK").values == (256,)
    assert other.plan == big and other.results


def test_shrunk_keeps_the_sizes_a_refit_found():
    """`K: guessed 64, which does not fit; 256 does` (a static_assert): divided by 4 it would fail again."""
    plan = Plan(constexprs=(Choice("K", (64,), "guessed"), Choice("BLOCK", (1024,), "guessed"))).refitted(
        {("K", 64): 256})
    assert [c.values for c in plan.shrunk().constexprs] == [(256,), (256,)]


def test_shrunk_replans_sizes_a_heuristic_computed_from_a_stand_in():
    """No guessed constexpr to divide, but a heuristic read a representative int: shrunk all the same;
    a pair none of whose results is over the cost rule (`guarded`) keeps its plan."""
    plan = Plan(constexprs=(Choice("act", ("relu",), "guessed"),))
    guessed = {"n (read by heuristic BLOCK)": 4096}
    over = result({"BLOCK": 4096}, guessed, error=SHRINK_FIRST, failure=Failure.OVER_COST)
    old, new = need("old", plan, [over]), need("new", plan, [])
    assert replan.shrunk([old, new]) == [old, new] and old.plan.shrink > 1
    alone = need("new", plan, [result({"BLOCK": 16}, {"n": 16})])
    assert replan.shrunk([alone]) == [] and alone.plan == plan


def test_retyped_lends_found_types_to_combinations_that_failed_without_their_own():
    found = result({"BLOCK": 64}, retype={"x": "*i32"}, error="TypeError")
    failed = result({"BLOCK": 128}, error="TypeError")
    fine = result({"BLOCK": 256})
    old, new = need("old", GUESSED, [found, failed]), need("new", GUESSED, [fine])
    assert replan.retyped([old, new]) == [old, new]
    assert old.plan == new.plan
    assert old.plan.retype_for({"BLOCK": 64}, ()) == old.plan.retype_for({"BLOCK": 128}, ()) == {"x": "*i32"}
    assert old.plan.retype_for({"BLOCK": 256}, ()) == {}
    assert combo_key({"BLOCK": 64}) in dict(old.plan.retypes)


def test_the_bf16_family_keeps_the_types_its_own_search_found():
    """ao's `tl.div_rn(x, amax)` takes fp32 only: under the bf16 family the search gives the
    pointer fp32, which used to be read back as bf16 (the fp32 family's types were mapped onto
    it), so the row could never compile. A bf16 spec that failed without a search of its own
    borrows the fp32 family's types, its fp32 pointers as bf16."""
    bf16 = {"x:": "*bf16", "y:": "*bf16"}
    own = result({"BLOCK": 64}, bf16, retype={"x": "*fp32"}, error="TypeError")
    fp32 = result({"BLOCK": 64}, {"x:": "*fp32", "y:": "*fp32"}, retype={"y": "*fp32", "z": "*i32"}, error="TypeError")
    borrower = result({"BLOCK": 128}, bf16, error="TypeError")
    old = need("old", GUESSED, [own, fp32, borrower])
    assert replan.retyped([old]) == [old]
    guesses = SpecDetail.from_json({"guessed": bf16}).guessed
    assert old.plan.retype_for({"BLOCK": 64}, guesses) == {"x": "*fp32"}
    assert old.plan.retype_for({"BLOCK": 64}, ()) == {"y": "*fp32", "z": "*i32"}
    assert old.plan.retype_for({"BLOCK": 128}, guesses) == {"x": "*fp32", "y": "*bf16", "z": "*i32"}


def test_retyped_without_a_search_result_changes_nothing():
    old, new = need("old", GUESSED, [result({"BLOCK": 64}, error="TypeError")]), need("new", GUESSED, [])
    assert replan.retyped([old, new]) == [] and old.results


def test_refitted_replaces_the_guess_on_both_sides():
    old = need("old", GUESSED, [result({"BLOCK": 64}, refit={"BLOCK": 16}, error="shape")])
    new = need("new", GUESSED, [result({"BLOCK": 64}, error="shape")])
    assert replan.refitted([old, new]) == [old, new]
    assert old.plan == new.plan and old.plan.choice("BLOCK").values == (16,)
    assert old.plan.refits == (("BLOCK", 64, 16),)


def test_refitted_ignores_a_refit_of_a_value_that_is_not_a_number():
    old = need("old", GUESSED, [result({"BLOCK": "x"}, refit={"BLOCK": 16})])
    assert replan.refitted([old]) == [] and old.plan == GUESSED


def test_specs_that_fit_one_guess_otherwise_take_the_largest_fit():
    """Fast-LLM's `inner_dim % block_size_inner == 0` under configs of 32 and 64: the guessed 16
    fits one as 32 and the other as 64; 64 fits both (whichever spec's result comes first)."""
    guessed = Plan(constexprs=(Choice("K", (16,), "guessed"),))
    for sizes in ((32, 64), (64, 32)):
        old = need("old", guessed, [result({"K": 16}, refit={"K": s}, error="shape") for s in sizes])
        replan.refitted([old])
        assert old.plan.choice("K").values == (64,) and old.plan.refits == (("K", 16, 64),)


def test_the_replans_run_in_order():
    """The last refit fits what a shrink (after the first, in the round that finds a pair over the
    cost rule) changed."""
    names = [f.__name__ for f in replan.REPLANS]
    assert names == ["matched", *["retyped"] * replan.RETYPE_ROUNDS, "refitted", "retyped", "refitted"]
