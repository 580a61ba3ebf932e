"""The constexpr sizes that meet in one block of a kernel, read from its body (the cost rule's input)."""

from __future__ import annotations

import ast
import textwrap

from ptxdiff.discovery.tiles import kernel_tiles, sorts, unrolled_loops


def tiles(body: str, sizes: tuple[str, ...] = ("HC", "BLOCK_M", "BLOCK_N", "N")) -> tuple[tuple[str, ...], ...]:
    fn = ast.parse("def k(x_ptr, HC, BLOCK_M, BLOCK_N, N):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return kernel_tiles(fn, frozenset(sizes))


def test_a_square_tile_of_one_size_and_an_outer_product_of_two():
    assert tiles("""
        rows = tl.arange(0, HC)[:, None]
        cols = tl.arange(0, HC)[None, :]
        x = tl.load(x_ptr + rows * HC + cols)
    """) == (("HC", "HC"),)
    assert tiles("""
        offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
        a = tl.load(x_ptr + tl.arange(0, BLOCK_M)[:, None] * N + tl.arange(0, BLOCK_N)[None, :])
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    """) == (("BLOCK_M", "BLOCK_N"),)


def test_a_block_of_three_dimensions_or_of_a_product_of_sizes_multiplies_them_all():
    """fla's fused_chunk_based: `tl.zeros([BK * BK, BV])` holds BK x BK x BV elements; its two
    largest sizes alone (BK x BV) made its compile look like a tenth of what it was."""
    assert tiles("h = tl.zeros([BLOCK_M * BLOCK_M, BLOCK_N], dtype=tl.float32)") == (("BLOCK_M", "BLOCK_M", "BLOCK_N"),)
    assert tiles("h = tl.zeros((HC, BLOCK_M, BLOCK_N), dtype=tl.float32)") == (("HC", "BLOCK_M", "BLOCK_N"),)
    assert tiles("h = tl.zeros([BLOCK_M * 2, BLOCK_N], dtype=tl.float32)") == ()   # a literal factor: not read


def test_one_dimensional_blocks_and_sizes_that_are_not_constexprs_make_no_tile():
    assert tiles("offs = tl.arange(0, BLOCK_M)\nx = tl.load(x_ptr + offs)") == ()
    assert tiles("x = tl.arange(0, HC)[:, None] + tl.arange(0, n)[None, :]", sizes=("HC",)) == ()
    assert tiles("acc = tl.zeros((BLOCK_M, 16), dtype=tl.float32)") == ()


def unrolled(body: str, sizes: tuple[str, ...] = ("TMAX", "K", "BLOCK_K")):
    fn = ast.parse("def k(x_ptr, n, TMAX, K, BLOCK_K):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return unrolled_loops(fn, frozenset(sizes))


def test_static_range_loops_are_read_with_the_unrolled_loops_around_them():
    outer, inner, tiled = (("TMAX", -1), ("", 0), ("", -1)), (("", 1), ("TMAX", 0), ("", 1)), \
        (("", 0), ("K", 0), ("BLOCK_K", 0))
    assert unrolled("""
        for t in tl.static_range(TMAX - 1, 0, -1):
            if t > 0:
                for s in tl.static_range(1, TMAX):
                    x = x + s
        for k0 in tl.static_range(0, K, BLOCK_K):
            x = x + k0
    """) == ((outer,), (outer, inner), (tiled,))
    # a loop triton does not unroll, or bounds that are not literals or constexprs: not counted,
    # while what it holds still is, with the unrolled loops around it
    assert unrolled("""
        for i in range(0, n):
            for j in tl.static_range(4):
                x = x + j
        for i in tl.static_range(n):
            x = x + i
    """) == (((("", 0), ("", 4), ("", 1)),),)


def sorted_in(*sources: str) -> int:
    fns = [ast.parse(textwrap.dedent(s)).body[0] for s in sources]
    assert all(isinstance(fn, ast.FunctionDef) for fn in fns)
    return sorts(fns)   # type: ignore[arg-type]


def test_sorts_are_counted_in_the_kernel_and_its_helpers_however_called():
    """A sort compiles log2(n) x (log2(n) + 1) / 2 stages over its block: `tl.sort`, a tensor's
    `.topk`, a repository's `argsort` helper, and a bitonic merge written out as a `static_range`
    up to a log2 of a shape."""
    kernel = """
        def route(x_ptr, BLOCK: tl.constexpr):
            keys = tl.load(x_ptr + tl.arange(0, BLOCK))
            ordered = tl.sort(keys.to(tl.uint32), 0)
            best = (keys * 2).topk(4)
            idx = argsort(keys, ordered)
    """
    written_out = """
        def argsort(x, ids):
            n_dims: tl.constexpr = tl.standard._log2(x.shape[0])
            for i in tl.static_range(1, n_dims + 1):
                x, ids = _bitonic_merge(x, ids, i, n_dims)
            return x, ids
    """
    assert sorted_in(kernel) == 3
    assert sorted_in(kernel, written_out) == 4
    # loops with other bounds and calls named otherwise are not sorts
    assert sorted_in("""
        def k(x_ptr, N: tl.constexpr):
            n = tl.cdiv(N, 2)
            for i in tl.static_range(1, N):
                x = tl.maximum(tl.load(x_ptr + i), 0)
            y = tl.sum(x, 0)
    """) == 0
