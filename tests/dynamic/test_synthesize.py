"""Synthesised launches (dynamic/synthesize.py), pure: which spec, how many shapes, each shape's
sizes, strides, buffers, guards, grid and value range from the kernel's own numbers."""

from __future__ import annotations

import pytest

from ptxdiff.dynamic.synthesize import SHAPES, SynthPlan, Unsynthesisable, literals, plan_for, program_axes, shape
from ptxdiff.record.replay_format import TensorArg
from ptxdiff.specs.detail import SpecDetail

PARAMS = ["x_ptr", "out_ptr", "n", "BLOCK"]


def detail(block: int = 256, **sig: str) -> SpecDetail:
    signature = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", **sig, "BLOCK": "constexpr"}
    return SpecDetail(signature, {"BLOCK": block}, num_warps=4, num_stages=3)


def plan(params: list[str] = PARAMS, block: int = 256, **kw: str) -> SynthPlan:
    got = plan_for("k.py::k", "k.py::k", params, [("guessed", detail(block, **kw))])
    assert isinstance(got, SynthPlan)
    return got


def test_the_spec_to_trust_most_comes_first_and_constexprs_are_not_arguments():
    got = plan_for("k.py::k", "k.py::k", PARAMS, [("guessed", detail(64)), ("recorded", detail(128))])
    assert isinstance(got, SynthPlan)
    assert [dict(s.constexprs)["BLOCK"] for s in got.specs] == [128, 64]
    assert [n for n, _ in got.specs[0].signature] == ["x_ptr", "out_ptr", "n"]
    assert "no compiled spec" in plan_for("k.py::k", "k.py::k", PARAMS, [(None, None)])


def test_shapes_cover_non_powers_of_two_partial_blocks_and_one():
    p = plan()
    sizes = [dict(shape(p, i, [], {0}).replay.args)["n"] for i in range(SHAPES)]
    assert len(sizes) == SHAPES == 8 and 1 in sizes
    assert any(s & (s - 1) for s in sizes)                       # not a power of two
    assert any(s > 256 and s % 256 for s in sizes)               # a partial last block
    assert {257, 513, 255} <= set(sizes)                         # the block's edges


def test_a_buffer_is_its_data_region_between_two_guard_zones_and_the_grid_covers_it():
    s = shape(plan(), 0, [], {0})
    args = dict(s.replay.args)
    x = args["x_ptr"]
    assert isinstance(x, TensorArg) and x.shape == (args["n"],) and x.offset == s.guard >= 256
    assert s.replay.buffers[x.buffer] == (2 * s.guard + args["n"]) * 4
    assert s.replay.grid == (-(-args["n"] // 256), 1, 1)


def test_values_cross_the_kernels_own_constants():
    s = shape(plan(), 0, literals("def k(x):\n    return tl.minimum(tl.maximum(x, 0.0), 6.0)"), {0})
    x = dict(s.replay.args)["x_ptr"]
    assert isinstance(x, TensorArg) and x.low is not None and x.high is not None and x.low < -6 and x.high > 6
    scales = {shape(plan(), i, [6.0], {0}).label.split()[-2] for i in range(SHAPES)}
    assert scales == {"wide", "unit", "small"}                   # an epsilon matters on small values


def test_strides_are_row_major_per_family_and_differ():
    params = ["x_ptr", "out_ptr", "M", "N", "stride_xm", "stride_xn", "stride_om", "stride_on", "BLOCK"]
    sig = {"M": "i32", "N": "i32", "stride_xm": "i32", "stride_xn": "i32", "stride_om": "i32", "stride_on": "i32"}
    p = plan(params, **sig)
    args = dict(shape(p, 0, [], {0, 1}).replay.args)
    assert args["stride_xn"] == args["stride_on"] == 1
    assert args["stride_xm"] == args["stride_om"] == max(args["M"], args["N"]) + 3   # rows padded past the widths


def test_literals_and_program_axes():
    text = "def k(x):\n    y = x * 0.044715 + 3\n    i = tl.program_id(axis=1)\n    return y, float('-inf')"
    assert sorted(literals(text)) == [0.044715, 3.0]
    assert program_axes(text) == {1} and program_axes("def k(): pass") == {0}


def test_a_kind_of_argument_it_cannot_make_is_said():
    p = plan(PARAMS + ["d"], d="tensordesc<fp16[64, 64]>")
    with pytest.raises(Unsynthesisable, match="tensordesc"):
        shape(p, 0, [], {0})


def test_a_lone_stride_is_a_rows_pitch_and_a_kernel_with_strides_gets_several_rows():
    params = ["x_ptr", "out_ptr", "n_cols", "stride_x", "BLOCK"]
    s = shape(plan(params, 1024, n_cols="i32", stride_x="i32"), 0, [], {0})
    args = dict(s.replay.args)
    assert args["stride_x"] == args["n_cols"] + 3 and s.replay.grid[0] >= 3
    x = args["x_ptr"]
    assert isinstance(x, TensorArg) and x.shape[0] >= 3 * args["stride_x"]


def test_a_width_fixed_by_a_constexpr_fits_the_buffers():
    # Liger's _token_gather_weighted_sum_kernel: no run-time size, `H_dim: tl.constexpr` the row's
    # width, a lone row stride; its buffers were 16 elements and every load of a row ran past them
    params = ["y_ptr", "out_ptr", "stride_y", "stride_out", "H_dim", "BLOCK_H"]
    signature = {"y_ptr": "*fp32", "out_ptr": "*fp32", "stride_y": "i32", "stride_out": "i32",
                 "H_dim": "constexpr", "BLOCK_H": "constexpr"}
    got = plan_for("k.py::k", "k.py::k", params,
                   [("guessed", SpecDetail(signature, {"H_dim": 300, "BLOCK_H": 64}, num_warps=4, num_stages=3))])
    assert isinstance(got, SynthPlan)
    args = dict(shape(got, 0, [], {0}).replay.args)
    assert args["stride_y"] == args["stride_out"] == 303          # a row's pitch past the fixed width
    y = args["y_ptr"]
    assert isinstance(y, TensorArg) and y.shape[0] >= 300
