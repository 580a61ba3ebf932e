"""Pins that contradict launch sites, rows paired by equal guesses, and the values on both sides
of an ordered comparison: pure functions on in-memory inputs."""

from __future__ import annotations

import ast
import dataclasses

from ptxdiff.compare.gate_inputs import contradictions, unpinned
from ptxdiff.compare.pairing import agree, pair_lone
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.discovery.callsites import Fact
from ptxdiff.discovery.hints import boundary
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.discovery.params import Param
from ptxdiff.record.launches import Launch
from ptxdiff.repo_config import KernelConfig, SpecConfig
from ptxdiff.specs.detail import SpecDetail


def kernel(*facts: tuple[str, tuple[Fact, ...]]) -> Kernel:
    params = (Param("x_ptr", False, "*fp32"), Param("BLOCK", True, None), Param("MODE", True, None))
    return Kernel(id="k.py::k", path="k.py", name="k", module="k", lineno=1, fingerprint="f", params=params,
                  paths=frozenset({"k.py"}), launch=tuple(facts))


def test_a_pin_contradicts_only_literal_launch_values_it_is_not_among():
    k = kernel(("BLOCK", (Fact("value", 256, "k.py:9"), Fact("value", 512, "w.py:3"))),
               ("MODE", (Fact("type", "i32", "k.py:9"),)))
    entry = KernelConfig(SpecConfig(constexprs={"BLOCK": 128, "MODE": 3}), (SpecConfig(constexprs={"BLOCK": 512}),))
    (found,) = contradictions(k, entry, (), "ptxdiff.toml")
    assert (found.name, found.pinned, found.passed) == ("BLOCK", 128, (256, 512))   # MODE: not a literal there
    assert found.line().startswith("config ptxdiff.toml pins BLOCK = 128 where the launch site passes 256|512 "
                                   "(k.py:9, w.py:3)")
    # True is not 1: a pin of another type is not what the site passes
    assert contradictions(kernel(("BLOCK", (Fact("value", 1),))), KernelConfig(SpecConfig(constexprs={"BLOCK": True})),
                          (), "f")
    launch = Launch("k.py::k", ("x_ptr", "BLOCK", "MODE"), {"x_ptr": "*fp32"}, {"BLOCK": 256, "MODE": 0}, (), 4, 3,
                    {}, None, "interpreter", 1)
    assert contradictions(k, None, (launch,), "f") == []
    stale = dataclasses.replace(launch, constexprs={"BLOCK": 64})
    assert [c.by for c in contradictions(k, None, (stale,), "f")] == ["recorded launch (.ptxdiff/launches.jsonl)"]


def test_unpinned_keeps_types_and_other_values():
    entry = KernelConfig(SpecConfig({"x_ptr": "*fp16"}, {"BLOCK": 128, "MODE": 1}, 8),
                         (SpecConfig(constexprs={"BLOCK": 64}),))
    out = unpinned(entry, {"BLOCK"})
    assert out.base == SpecConfig({"x_ptr": "*fp16"}, {"MODE": 1}, 8) and out.specs == (SpecConfig(),)


def result(**constexprs) -> SpecResult:
    return SpecResult("k", "k", spec=SpecDetail.from_json({
        "constexprs": constexprs, "guessed": {k: v for k, v in constexprs.items() if k != "BLOCK"}}))


def test_lone_specs_pair_by_equal_guesses_never_across_a_flag():
    old = [result(TRANSPOSE_B=v, BLOCK=128) for v in (True, False)]
    new = [result(TRANSPOSE_B=v, BLOCK=256) for v in (False, True)]   # a launch value changed, in another order
    by_key: dict[object, list] = {f"o{i}": [r, None] for i, r in enumerate(old)}
    by_key.update({f"n{i}": [None, r] for i, r in enumerate(new)})
    pair_lone(by_key, launched=True)
    pairs = [(a.spec.constexprs["TRANSPOSE_B"], b.spec.constexprs["TRANSPOSE_B"]) for a, b in by_key.values()]
    assert sorted(pairs) == [(False, False), (True, True)]
    assert agree(result(A=1), result(B=2)) and not agree(result(A=1), result(A=2))


def test_a_side_with_a_flag_fewer_pairs_each_spec_with_its_projection():
    old = [result(A=a) for a in (False, True)]
    new = [result(A=a, B=b) for a in (False, True) for b in (False, True)]
    by_key: dict[object, list] = {f"o{i}": [r, None] for i, r in enumerate(old)}
    by_key.update({f"n{i}": [None, r] for i, r in enumerate(new)})
    pair_lone(by_key)
    assert len(by_key) == 4 and all(a is not None and b is not None and agree(a, b) for a, b in by_key.values())


def test_both_sides_of_an_ordered_comparison():
    assert boundary(ast.Gt(), 1024) == (1024, 2048)          # a size stays a power of two
    assert boundary(ast.Lt(), 1024) == (1024, 512)
    assert boundary(ast.LtE(), 3) == (3, 4) and boundary(ast.GtE(), 3) == (3, 2)
    assert boundary(ast.Lt(), 1024, flipped=True) == (1024, 2048)   # `1024 < X`
    assert boundary(ast.Gt(), 0.5) == (0.5, 1.5)
    assert boundary(ast.Gt(), 1 << 17) == (1 << 17,)           # no far side past the largest size
    assert boundary(ast.Gt(), "a") == () and boundary(ast.Gt(), True) == ()
