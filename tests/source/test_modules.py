"""The parsed modules of a snapshot: which statements a top-level statement holds, and what a
module that cannot be read gives."""

from __future__ import annotations

import ast
import textwrap

from ptxdiff.source.bounds import MAX_BYTES
from ptxdiff.source.modules import FileSet, ModuleIndex, nested_statements


def test_nested_statements_in_source_order_not_into_definitions():
    tree = ast.parse(textwrap.dedent("""
        try:
            A = 1
            if A:
                B = 2
            elif A > 1:
                C = 3
            else:
                D = 4
        except ImportError:
            E = 5
        else:
            F = 6
        finally:
            G = 7
    """))
    names = [s.targets[0].id for s in nested_statements(tree.body[0]) if isinstance(s, ast.Assign)]
    assert names == ["A", "B", "C", "D", "F", "G", "E"]   # body, orelse, finalbody, then the handlers
    fn = ast.parse("def f():\n    X = 1\n").body[0]
    assert list(nested_statements(fn)) == [fn]


def test_nested_statements_of_an_elif_chain_deeper_than_the_stack():
    """An `elif` chain nests as deep as it is long; the walk keeps a work list instead of recursing."""
    chain: ast.stmt = ast.Pass()
    for i in range(5000):
        chain = ast.If(test=ast.Constant(i), body=[ast.Pass()], orelse=[chain])
    assert sum(1 for _ in nested_statements(chain)) == 2 * 5000 + 1


def test_a_module_that_cannot_be_read_has_no_tree_and_says_why():
    index = ModuleIndex(FileSet({"big.py": b"#" * (MAX_BYTES + 1), "bad.py": b"def f(:\n", "latin.py": b"X = '\xff'\n",
                                 "ok.py": b"X = 1\n"}))
    assert index.parse("big.py").error == "big.py: 1.0 MB, over the 1 MB bound for a module ptxdiff parses"
    assert index.parse("bad.py").error == "bad.py:1: SyntaxError: invalid syntax"
    assert index.parse("latin.py").error == "latin.py: not text in UTF-8 or in the encoding its coding line names"
    ok = index.parse("ok.py")
    assert ok.error is None and ok.tree is not None and set(ok.bindings) == {"X"}
