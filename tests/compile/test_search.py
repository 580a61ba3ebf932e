"""The walk shared by the compile searches, on in-memory errors: where an error points, which
names it depends on, and how the walk keeps a step that fails further down."""

from __future__ import annotations

import ast

import pytest

from ptxdiff.compile import search
from ptxdiff.specs.resolve import Spec

KERNEL = """\
def k(x, n, m, BLOCK: tl.constexpr):
    a = x + n
    b = helper(a, m)
    c = b * 2
"""
HELPER = """\
def helper(p, q):
    r = p >> 1
    return r + q
"""


class Located(Exception):
    """What triton's CompilationError carries: the source and the node it failed at."""

    def __init__(self, text: str, src: str, node: ast.AST | None):
        super().__init__(text)
        self.src, self.node, self.error_message = src, node, text


def line(src: str, n: int) -> ast.stmt:
    """The statement on line `n` of `src` (1-based) of its first function."""
    fn = search.function_of(src)
    assert fn is not None
    return next(s for s in fn.body if s.lineno == n)


def at(src: str, n: int, text: str = "boom", cause: BaseException | None = None) -> Located:
    error = Located(text, src, line(src, n))
    error.__cause__ = cause
    return error


def test_chain_follows_causes_and_stops_at_32():
    inner = ValueError("inner")
    outer = RuntimeError("outer")
    outer.__cause__ = inner
    assert search.chain(outer) == [outer, inner]
    loop = RuntimeError("loop")
    loop.__cause__ = loop
    assert len(search.chain(loop)) == 32


@pytest.mark.parametrize("src, found", [
    (KERNEL, "k"), ("    def f():\n        pass\n", "f"), ("x = 1\n", None), ("def (:\n", None)])
def test_function_of(src, found):
    fn = search.function_of(src)
    assert (fn.name if fn else None) == found


@pytest.mark.parametrize("error, all_params, names", [
    (at(KERNEL, 4), False, {"c", "b"}),                                 # the kernel's own line
    (at(KERNEL, 3, cause=at(HELPER, 2)), False, {"a"}),                 # inside the helper: only `p`'s argument
    (at(KERNEL, 3, cause=at(HELPER, 3)), False, {"a", "m"}),            # `r + q`: r from p, and q
    (at(HELPER, 2), False, set()),                                      # not the kernel's error
    (Located("no node", KERNEL, None), False, set()),
])
def test_failing_names(error, all_params, names):
    assert search.failing_names(error, KERNEL, all_params) == names


def test_position_and_further():
    early, late = at(KERNEL, 2), at(KERNEL, 4)
    assert search.position(late, KERNEL) == [(KERNEL, 4)]
    assert search.position(at(KERNEL, 3, cause=at(HELPER, 3)), KERNEL) == [(KERNEL, 3), (HELPER, 3)]
    assert search.further(late, early, KERNEL) and not search.further(early, late, KERNEL)
    assert not search.further(early, at(KERNEL, 2), KERNEL)
    # at the same call, a later line inside the same helper is further
    assert search.further(at(KERNEL, 3, cause=at(HELPER, 3)), at(KERNEL, 3, cause=at(HELPER, 2)), KERNEL)
    # past the front end (ptxas refusing an instruction on this target: ao's fp4 kernels on sm_90)
    ptxas = RuntimeError("ptxas: Feature 'cvt.e2m1x2.f32' not supported on .target 'sm_90a'")
    assert search.further(ptxas, late, KERNEL) and not search.further(late, ptxas, KERNEL)
    assert not search.further(ptxas, RuntimeError("another with no line"), KERNEL)


def test_message_and_bare():
    error = at(KERNEL, 2, "size 64 of 128", cause=ValueError("got 3"))
    assert search.message(error) == "Located: size 64 of 128 ValueError: got 3"
    assert search.bare(error) == "Located: size N of N ValueError: got N"


SPEC = Spec(signature=(("x", "*fp32"), ("n", "i32")), constexprs=(), num_warps=4, num_stages=3)


def walk(failures: dict[str, BaseException | None], trials: list[list[dict]], max_tries: int = 16,
         sideways_ok: bool = False, relevant=lambda e: True) -> tuple[dict | None, list[str]]:
    """Walk with attempts that fail as `failures` says for the trial's value of `x` (via the spec's
    type of x); what it returns and the values it tried, in order."""
    tried: list[str] = []

    def attempt(spec: Spec) -> BaseException | None:
        value = dict(spec.signature)["x"]
        tried.append(value)
        return failures[value]

    def apply(spec: Spec, trial: dict) -> Spec:
        return Spec(signature=(("x", trial.get("x", "*fp32")), ("n", "i32")), constexprs=(), num_warps=4, num_stages=3)

    got = search.walk(attempt, SPEC, at(KERNEL, 2), KERNEL, lambda changed, error: trials, apply, relevant,
                      max_tries, sideways_ok)
    return got, tried


def test_walk_returns_the_first_trial_that_compiles():
    got, tried = walk({"a": at(KERNEL, 2), "b": None, "c": None}, [[{"x": "a"}, {"x": "b"}, {"x": "c"}]])
    assert got == {"x": "b"} and tried == ["a", "b"]


def test_walk_keeps_a_step_that_fails_further_down_and_goes_on_from_there():
    failures = {"a": at(KERNEL, 4), "b": at(KERNEL, 2)}
    got, tried = walk(failures, [[{"x": "a"}, {"x": "b"}]])
    # "a" gets further; the next round offers the same trials, all tried: what was kept
    assert got == {"x": "a"} and tried == ["a", "b"]


def test_walk_stops_when_the_error_further_down_is_no_longer_relevant():
    got, tried = walk({"a": at(KERNEL, 4, "other"), "b": None}, [[{"x": "a"}, {"x": "b"}]],
                      relevant=lambda e: "other" not in str(e))
    assert got == {"x": "a"} and tried == ["a"]


def test_walk_tries_a_later_tier_once_the_first_is_spent_and_honours_max_tries():
    failures = {"a": at(KERNEL, 2), "b": at(KERNEL, 2), "c": None}
    assert walk(failures, [[{"x": "a"}], [{"x": "b"}, {"x": "c"}]]) == ({"x": "c"}, ["a", "b", "c"])
    assert walk(failures, [[{"x": "a"}], [{"x": "b"}, {"x": "c"}]], max_tries=2) == (None, ["a", "b"])


def test_walk_takes_the_smallest_step_that_leaves_an_irrelevant_complaint_at_the_same_place():
    failures = {"a": at(KERNEL, 2, "scale"), "b": at(KERNEL, 2, "same")}
    got, _ = walk(failures, [[{"x": "a"}, {"x": "b"}]], relevant=lambda e: "scale" not in str(e))
    assert got == {"x": "a"}


def test_walk_sideways_only_when_allowed():
    failures = {"a": at(KERNEL, 2, "operand 1"), "b": at(KERNEL, 2, "boom")}
    assert walk(failures, [[{"x": "a"}, {"x": "b"}]])[0] is None
    # a step that changes the complaint at the same place is kept as the start of the next round
    assert walk(failures, [[{"x": "a"}, {"x": "b"}]], sideways_ok=True)[0] == {"x": "a"}
