"""The cost rule: a spec's cost from its sizes alone (no clock), which guessed sizes it shrinks,
and the order it gives compiles."""

from __future__ import annotations

from ptxdiff.specs import cost
from ptxdiff.specs.guesses import Guess, GuessKind
from ptxdiff.specs.resolve import Spec


def spec(constexprs: dict, warps: int = 4, stages: int = 3, guessed: tuple[str, ...] = (),
         heuristic: bool = False) -> Spec:
    guesses = tuple(Guess(GuessKind.VALUE, name, constexprs[name]) for name in guessed)
    if heuristic:
        guesses += (Guess(GuessKind.HEURISTIC, "n", 4096, "BLOCK"),)
    return Spec(signature=(("x", "*fp32"),) + tuple((k, "constexpr") for k in constexprs),
                constexprs=tuple(constexprs.items()), num_warps=warps, num_stages=stages, guessed=guesses)


def test_the_estimate_is_the_tile_of_the_two_largest_sizes_per_thread():
    assert cost.per_thread(spec({"BLOCK": 1024})) == 1024 / 128
    assert cost.per_thread(spec({"M": 64, "N": 64, "K": 32, "GROUP": 8})) == 64 * 64 / 128
    assert cost.per_thread(spec({"BATCH": 4096, "SPATIAL": 4}, warps=1)) == 512   # attorch's batch_norm at 1 warp
    assert cost.per_thread(spec({"eps": 1e-6, "FLAG": True, "ODD": 3})) == 1 / 128   # no size at all


def test_only_guessed_sizes_over_the_limit_are_shrunk():
    big = {"BATCH": 4096, "SPATIAL": 4}
    assert cost.too_costly(spec(big, warps=1, heuristic=True))         # sizes a heuristic computed from a stand-in
    assert cost.too_costly(spec(big, warps=1, guessed=("BATCH",)))
    assert not cost.too_costly(spec(big, warps=1))                      # facts (a launch site's values) stay
    assert not cost.too_costly(spec(big, warps=8, heuristic=True))     # 64 elements per thread: under the limit
    assert not cost.too_costly(spec({"M": 128, "N": 128, "K": 64}, guessed=("M", "N", "K")))
    assert not cost.too_costly(spec({"BLOCK": 16, "R": 8192}, warps=1, guessed=("BLOCK",)))   # 16 is not shrinkable


def test_the_order_puts_larger_tiles_and_more_stages_first_and_is_deterministic():
    small, tile, staged = spec({"BLOCK": 128}), spec({"M": 64, "N": 64}, stages=1), spec({"M": 64, "N": 64}, stages=4)
    assert cost.estimate(small) < cost.estimate(tile) < cost.estimate(staged)
    assert [cost.estimate(s) for s in (small, tile, staged)] == [cost.estimate(s) for s in (small, tile, staged)]


def test_a_tile_the_kernel_s_body_shapes_counts_when_larger_than_the_two_largest_sizes():
    """`tl.arange(0, HC)[:, None]` against `tl.arange(0, HC)[None, :]`: an HC x HC tile, which the
    two largest sizes (HC x 16) miss; a tile of sizes the spec does not have is read as absent."""
    square = spec({"HC": 256, "N": 16, "M": 16}, guessed=("HC",))
    assert cost.per_thread(square) == 256 * 16 / 128 and not cost.too_costly(square)
    assert cost.per_thread(square, (("HC", "HC"),)) == 256 * 256 / 128 and cost.too_costly(square, (("HC", "HC"),))
    assert cost.per_thread(square, (("HC", "NOPE"),)) == 256 * 16 / 128
    assert cost.estimate(square, (("HC", "HC"),)) > cost.estimate(square)


def test_a_block_of_a_product_of_sizes_counts_every_factor():
    """fla's fused_chunk_based at BK=BV=64 (guessed) and 4 warps: `tl.zeros([BK * BK, BV])` holds
    2,048 elements a thread, where the two largest sizes say 32; it hit the 300 s bound, started
    behind every spec the estimate ranked above it."""
    chunk = spec({"BT": 16, "BK": 64, "BV": 64}, guessed=("BK", "BV"))
    assert cost.per_thread(chunk) == 64 * 64 / 128 and not cost.too_costly(chunk)
    assert cost.per_thread(chunk, (("BK", "BK", "BV"),)) == 64 ** 3 / 128 and cost.too_costly(chunk, (("BK", "BK", "BV"),))


def test_unrolled_loops_put_a_kernel_first_by_their_trips_and_decide_no_shrink():
    """A small tile whose body triton unrolls TMAX x TMAX times compiles longer than a large tile
    with no loop (Liger-Kernel's sinkhorn backward: 6 s against matmul's 3 s): it starts first.
    The estimate orders compiles only; the shrink rule reads the tile alone."""
    outer, inner = (("TMAX", -1), ("", 0), ("", -1)), (("", 1), ("TMAX", 0), ("", 1))
    loops = ((outer,), (outer, inner))
    small = spec({"HC": 4, "TMAX": 20}, guessed=("TMAX",))
    assert cost.unrolled_copies(small, loops) == 19 + 19 * 19
    assert cost.estimate(small, (("HC", "HC"),), loops) > cost.estimate(spec({"BLOCK_M": 128, "BLOCK_N": 128}))
    assert cost.too_costly(small) is False
    # a bound the spec does not give (a runtime value) counts one trip
    assert cost.unrolled_copies(spec({"HC": 4}), loops) == 2


def test_a_sort_puts_its_kernel_first_by_its_stages_and_decides_no_shrink():
    """Liger-Kernel's MoE router sorts 4096 keys at 4 warps: 32 elements a thread, the tile of an
    elementwise kernel, yet its compile ran 8 s, the last to finish at 16 cores. Its 78
    compare-and-swap stages put it ahead of a 128 x 128 matmul; the shrink rule reads the tile alone."""
    router = spec({"TOKENS_PER_BLOCK": 512, "K_POW2": 8}, stages=3)
    assert cost.sort_stages(4096) == 78 and cost.sort_stages(2) == 1 and cost.sort_stages(1) == 0
    assert cost.estimate(router, sorts=1) > cost.estimate(spec({"BLOCK_M": 128, "BLOCK_N": 128}))
    assert cost.estimate(router, sorts=2) > cost.estimate(router, sorts=1) > cost.estimate(router)
    assert not cost.too_costly(spec({"TOKENS_PER_BLOCK": 512, "K_POW2": 8}, guessed=("TOKENS_PER_BLOCK",)))
