"""discovery/guards.py: which constexprs guard a change, on kernels parsed in memory, and the
covering set that compiles every combination of them (specs/resolve.py)."""

from __future__ import annotations

import ast
import itertools

from ptxdiff.discovery.guards import changed_guards, kernel_guards
from ptxdiff.specs.cover import GUARDED_COMBINATIONS, cover_combinations

NESTED = '''
def k(x_ptr, n, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr, E: tl.constexpr):
    x = tl.load(x_ptr)
    if A:
        if B:
            if not C:
                x = {body}
    y = x * 2.0 if D else x
    z = tl.where(E, y, x)
    tl.store(x_ptr, f(z, E))
'''

HELPER = '''
def f(v, flag):
    if flag:
        return {helper}
    return v
'''

CONSTEXPRS = frozenset("ABCDE")


def guards_of(body: str = "x * 3.0", helper: str = "v + 1.0"):
    fn = ast.parse(NESTED.format(body=body)).body[0]
    f = ast.parse(HELPER.format(helper=helper)).body[0]
    assert isinstance(fn, ast.FunctionDef) and isinstance(f, ast.FunctionDef)
    return kernel_guards(fn, CONSTEXPRS, {"f": f})


def test_a_change_under_three_nested_flags_names_all_three():
    assert changed_guards(guards_of(), guards_of(body="tl.exp(x)"), CONSTEXPRS) == ("A", "B", "C")


def test_a_ternary_and_a_where_guard_what_is_in_them():
    old = guards_of()
    fn = NESTED.format(body="x * 3.0").replace("x * 2.0 if D", "x * 4.0 if D")
    new = kernel_guards(ast.parse(fn).body[0], CONSTEXPRS, {"f": ast.parse(HELPER.format(helper="v + 1.0")).body[0]})
    assert changed_guards(old, new, CONSTEXPRS) == ("D",)


def test_a_helper_s_guard_is_the_kernel_constexpr_it_was_called_with():
    assert changed_guards(guards_of(), guards_of(helper="v * 5.0"), CONSTEXPRS) == ("E",)


def test_a_negated_condition_names_its_flag():
    fn = NESTED.format(body="x * 3.0")
    old = kernel_guards(ast.parse(fn).body[0], CONSTEXPRS, {})
    new = kernel_guards(ast.parse(fn.replace("if not C:", "if C:")).body[0], CONSTEXPRS, {})
    assert changed_guards(old, new, CONSTEXPRS) == ("A", "B", "C")


def test_control_an_unguarded_change_and_no_change_name_nothing():
    fn = NESTED.format(body="x * 3.0")
    old = kernel_guards(ast.parse(fn).body[0], CONSTEXPRS, {})
    new = kernel_guards(ast.parse(fn.replace("x = tl.load(x_ptr)", "x = tl.load(x_ptr) + 1.0")).body[0], CONSTEXPRS, {})
    assert changed_guards(old, new, CONSTEXPRS) == ()
    assert changed_guards(guards_of(), guards_of(), CONSTEXPRS) == ()


def test_a_parameter_made_constexpr_changes_no_guard():
    fn = NESTED.format(body="x * 3.0")
    old = kernel_guards(ast.parse(fn.replace(", E: tl.constexpr", ", E")).body[0], CONSTEXPRS - {"E"}, {})
    new = kernel_guards(ast.parse(fn).body[0], CONSTEXPRS, {})
    assert old != new and changed_guards(old, new, CONSTEXPRS - {"E"}) == ()


def test_helpers_that_call_themselves_end():
    f = ast.parse("def f(v, flag):\n    if flag:\n        return f(v, flag)\n    return v\n").body[0]
    fn = ast.parse("def k(x, A: tl.constexpr):\n    return f(x, A)\n").body[0]
    assert isinstance(f, ast.FunctionDef) and isinstance(fn, ast.FunctionDef)
    assert kernel_guards(fn, frozenset("A"), {"f": f})


def flags(n: int) -> list[tuple[str, tuple]]:
    return [(name, (True, False)) for name in "ABCDEFGH"[:n]]


def covers(combos: list[dict], names: str) -> bool:
    return all(any(all(c[k] is v for k, v in zip(names, values)) for c in combos)
               for values in itertools.product((True, False), repeat=len(names)))


def test_every_combination_of_the_guards_and_each_pair_of_the_rest():
    plain, _ = cover_combinations(flags(6), 6)
    assert not covers(plain, "ABCD")   # the pairwise set alone misses a change under four flags
    combos, note = cover_combinations(flags(6), 6, guards=("A", "B", "C", "D"))
    assert covers(combos, "ABCD") and len(combos) < 2 ** 6
    for x, y in itertools.combinations("ABCDEF", 2):
        assert covers(combos, x + y)
    assert note is not None and "every combination of A, B, C, D, which guard the change" in note


def test_guards_with_more_combinations_than_the_bound_are_said():
    combos, note = cover_combinations(flags(8), 6, guards=tuple("ABCDEFG"))
    assert GUARDED_COMBINATIONS < 2 ** 7
    assert note is not None and "the 128 combinations of A, B, C, D, E, F, G, which guard the change, are more than 64" in note
    for x, y in itertools.combinations("ABCDEFGH", 2):
        assert covers(combos, x + y)


def test_the_same_guards_give_both_sides_the_same_rows():
    old, _ = cover_combinations(flags(5), 6, guards=("A", "C"))
    new, _ = cover_combinations(list(reversed(flags(5))), 6, guards=("C", "A"))
    assert old == new


def test_a_stored_discovery_keeps_the_guards():
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.discovery.memo import from_json, to_json
    from ptxdiff.source.modules import FileSet

    src = "import triton\nimport triton.language as tl\n" + "@triton.jit\n" + NESTED.format(body="x * 3.0") + HELPER.format(
        helper="v + 1.0").replace("def f", "@triton.jit\ndef f")
    found = discover(FileSet({"k.py": src.encode()}))
    (k,) = found.kernels.values()
    assert k.guards and changed_guards(k.guards, (), CONSTEXPRS) == ("A", "B", "C", "D", "E")
    assert from_json(to_json(found)).kernels[k.id].guards == k.guards
