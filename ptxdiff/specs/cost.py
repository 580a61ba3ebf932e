"""What a spec costs to compile, estimated from its sizes alone: a rule of the kernel, never a clock.

triton unrolls a block's elements over the threads of its warps: the code, and with it the time
and memory of a compile, grows with the elements each thread holds. Offline nothing says which
sizes meet in one tile; most tiles are 2-D, so the estimate takes the tile of the spec's two
largest power-of-two integer constexprs over the spec's threads (`batch_norm`'s heuristic sizes
from stood-in arguments, 4096 x 4 at one warp: 512 elements per thread), and software
pipelining (`num_stages`) copies the loop body once per stage.

Two things read it, and neither changes with load, `--jobs` or the machine:
- the shrink rule: a spec whose guessed sizes make the estimate exceed LIMIT is not compiled; its
  pair compiles the guessed sizes shrunk on both sides (plan.Plan.shrunk), and the rows say so;
- the order of compiles: the costliest first, so a long compile does not start last and decide
  the wall time. Order never changes a result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ptxdiff.specs.guesses import GuessKind

if TYPE_CHECKING:
    from ptxdiff.discovery.tiles import Bound, Tiles, Unrolled
    from ptxdiff.specs.resolve import Spec

GUESSED_SIZE = 32      # a guessed size the shrink rule divides (plan.smaller) is a power of two from here
LIMIT = 256            # elements per thread past which guessed sizes are shrunk (128x128 at 4 warps: 128)


def _is_size(value: object) -> bool:
    return type(value) is int and value >= 2 and value & (value - 1) == 0


def per_thread(spec: Spec, tiles: Tiles = ()) -> float:
    """Elements per thread of the spec's largest tile: the tile of its two largest sizes, or a block
    the kernel's body shapes (`tiles`, discovery/tiles.py: a square one of one size, a dimension
    that is a product of sizes) if larger."""
    sizes = sorted((int(v) for _, v in spec.constexprs if _is_size(v)), reverse=True)   # type: ignore[call-overload]
    tile = 1
    for size in sizes[:2]:
        tile *= size
    values = dict(spec.constexprs)
    for factors in tiles:
        got = [values.get(f) for f in factors]
        if all(_is_size(v) for v in got):
            product = 1
            for v in got:
                product *= int(v)   # type: ignore[call-overload]
            tile = max(tile, product)
    return tile / (max(1, spec.num_warps) * 32)


def estimate(spec: Spec, tiles: Tiles = (), unrolled: Unrolled = (), sorts: int = 0) -> float:
    """A relative compile cost: the per-thread tile, once per pipeline stage and once more for each
    compare-and-swap stage of each sort (`tl.sort` of 4096 elements: 78 stages over the block),
    plus the cost every compile has (a spec of tiny blocks still runs the whole pass pipeline),
    once more for each trip of each loop triton unrolls (`tl.static_range(TMAX - 1)` inside
    another: TMAX squared copies of the inner body). It orders compiles only: the shrink rule
    reads the tile alone."""
    tile = per_thread(spec, tiles)
    passes = max(1, spec.num_stages) + sorts * sort_stages(tile * max(1, spec.num_warps) * 32)
    return (64.0 + tile * passes) * (1 + unrolled_copies(spec, unrolled))


def sort_stages(elements: float) -> int:
    """The compare-and-swap stages of a bitonic sort of `elements` (triton's `tl.sort`): for
    n = 2**k, k x (k + 1) / 2."""
    k = max(0, int(elements).bit_length() - 1)
    return k * (k + 1) // 2


def unrolled_copies(spec: Spec, unrolled: Unrolled) -> float:
    """The bodies of the kernel's unrolled loops triton compiles under `spec`'s values: the trips of
    each loop times those of the unrolled loops around it (a bound the spec does not give: one)."""
    values = dict(spec.constexprs)

    def value(bound: Bound) -> int | None:
        name, offset = bound
        if not name:
            return offset
        v = values.get(name)
        return v + offset if type(v) is int else None

    total = 0.0
    for chain in unrolled:
        copies = 1.0
        for loop in chain:
            start, stop, step = (value(b) for b in loop)
            copies *= len(range(start, stop, step)) if start is not None and stop is not None and step else 1
        total += copies
    return total


def guessed_sizes(spec: Spec) -> bool:
    """Whether some of the spec's sizes are guesses the shrink rule could divide: a guessed
    constexpr size, or a size a heuristic computed from a stood-in argument."""
    values = dict(spec.constexprs)
    return any(g.kind is GuessKind.HEURISTIC or g.kind is GuessKind.VALUE and _is_size(values.get(g.name))
               and int(values[g.name]) >= GUESSED_SIZE for g in spec.guessed)   # type: ignore[call-overload]


def too_costly(spec: Spec, tiles: Tiles = ()) -> bool:
    """The shrink rule: guessed sizes whose largest tile is over LIMIT elements per thread."""
    return per_thread(spec, tiles) > LIMIT and guessed_sizes(spec)
