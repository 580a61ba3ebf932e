"""The bounds on what ptxdiff parses: a module too large, too deep or too big a tree is read like
one that does not parse, with an error that names the bound, and never crashes discovery."""

from __future__ import annotations

import ast
import json
import sys

import pytest

from helpers import HEADER, commit, make_repo, ptxdiff, scale_kernel
from ptxdiff.discovery.kernels import discover
from ptxdiff.source.bounds import MAX_BYTES, MAX_DEPTH, MAX_NODES, parse_module, size_error, tree_error
from ptxdiff.source.modules import FileSet, ModuleIndex

TERMS = "X = " + " + ".join(["1"] * 200_000) + "\n"   # a left-leaning tree 200,000 deep
DEEP = "X = " + "-" * 1000 + "1\n"                      # parses (Python's parser allows ~3000): 1000 deep
WHAT = "for a module ptxdiff parses"


def test_a_module_over_the_size_bound_is_not_parsed_and_says_why():
    assert size_error("ops/k.py", MAX_BYTES) is None
    assert size_error("ops/k.py", 40_000_000) == "ops/k.py: 40.0 MB, over the 1 MB bound for a module ptxdiff parses"
    big = (scale_kernel() + "#" * MAX_BYTES).encode()
    mod = ModuleIndex(FileSet({"ops/k.py": big})).parse("ops/k.py")
    assert mod.tree is None and mod.error is not None and "over the 1 MB bound" in mod.error


def test_a_200000_term_expression_is_a_bound_hit_not_a_recursion_error():
    tree, error = parse_module(TERMS, "ops/s.py")
    assert tree is None
    assert error == f"ops/s.py: nested too deeply for Python's parser, over the {MAX_DEPTH}-level bound {WHAT}"


@pytest.mark.parametrize("source, line", [
    (DEEP, 1),
    ("X = a" + ".b" * 1000 + "\n", 1),   # attributes and their `Load` contexts: the line of the nearest node with one
    # an elif chain nests one level per branch: the `c` of `elif c == 197:` (line 395) is 201 deep
    ("if c == 0:\n    X = 0\n" + "".join(f"elif c == {i}:\n    X = {i}\n" for i in range(1, 300)), 395),
])
def test_nesting_past_the_depth_bound_is_refused_with_its_line(source, line):
    tree, error = parse_module(source, "ops/d.py")
    assert tree is None
    assert error == f"ops/d.py:{line}: syntax nested more than {MAX_DEPTH} levels deep, over the bound {WHAT}"


def test_brackets_past_python_s_own_bound_are_a_syntax_error():
    tree, error = parse_module("X = " + "(" * 1000 + "1" + ")" * 1000 + "\n", "ops/p.py")
    assert tree is None and error == "ops/p.py:1: SyntaxError: too many nested parentheses"


def test_a_tree_of_more_nodes_than_the_bound_is_refused():
    flat = "X = [" + "0," * MAX_NODES + "]\n"
    assert len(flat) < MAX_BYTES   # the size bound alone would let it through
    tree, error = parse_module(flat, "ops/f.py")
    assert tree is None and error == f"ops/f.py: more than {MAX_NODES:,} syntax-tree nodes, over the bound {WHAT}"


def test_every_corpus_module_is_within_the_bounds():
    from helpers import CORPUS

    for path in sorted(CORPUS.glob("*/*.py")):
        text = path.read_text()
        assert size_error(str(path), len(text.encode())) is None
        assert tree_error(ast.parse(text), str(path)) is None, path


def _shapes(depth: int) -> dict[str, str]:
    """The deepest-recursing shapes of a module-level value, `depth` levels deep in all."""
    d = depth - 4   # Module > Assign > the value..., and the last leaf's context
    return {
        "unary": "X = " + "-" * d + "1\n",
        "sum": "X = " + " + ".join(["1"] * d) + "\n",
        "calls": "X = f" + "(1)" * d + "\n",
        "lambdas": "X = " + "lambda: " * d + "1\n",
        "conditionals": "X = " + "1 if c else " * d + "1\n",
        "elif": "if c == 0:\n    X = 0\n" + "".join(f"elif c == {i}:\n    X = {i}\n" for i in range(1, d - 1)),
    }


def _depth(tree: ast.AST) -> int:
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        deepest = max(deepest, depth)
        todo += [(child, depth + 1) for child in ast.iter_child_nodes(node)]
    return deepest


def _deep_stack(frames: int, fn):
    return fn() if frames == 0 else _deep_stack(frames - 1, fn)


@pytest.mark.parametrize("shape", sorted(_shapes(MAX_DEPTH)))
def test_a_module_at_the_depth_bound_goes_through_every_walk_of_discovery(shape):
    """At the bound, with 150 frames of callers above (pytest, the CLI), discovery's recursive
    walks (ast.dump of the fingerprint, the launch-site visitor, parameter inference) and
    ast.unparse still fit in Python's stack: the bound is what keeps them from crashing."""
    source = _shapes(MAX_DEPTH)[shape]
    expr = source[4:].strip() if source.startswith("X = ") else "n"
    files = {"ops/k.py": (source + scale_kernel("x * X")).encode(),
             "ops/run.py": f"from ops.k import scale_kernel\ndef run(x, y, n):\n    scale_kernel[(1,)](x, y, {expr})\n".encode()}
    tree, error = parse_module(files["ops/k.py"].decode(), "ops/k.py")
    assert error is None and tree is not None
    assert MAX_DEPTH - 2 <= _depth(tree) <= MAX_DEPTH   # at the bound
    found = _deep_stack(150, lambda: discover(FileSet(files)))
    assert set(found.kernels) == {"ops/k.py::scale_kernel"} and not found.broken
    _deep_stack(150, lambda: (ast.dump(tree), ast.unparse(tree)))
    assert sys.getrecursionlimit() <= 1000   # what the bound was measured against


def test_a_module_past_a_bound_is_a_broken_file_with_its_kernel_named():
    files = {"ops/s.py": (TERMS + scale_kernel(name="sum_kernel")).encode(),
             "ops/d.py": (DEEP + scale_kernel(name="deep_kernel")).encode(),
             "ops/b.py": (scale_kernel(name="big_kernel") + "#" * MAX_BYTES).encode()}
    found = discover(FileSet(files))
    assert not found.kernels
    assert {p: (b.names, "bound" in b.error) for p, b in found.broken.items()} == {
        "ops/s.py": (("sum_kernel",), True), "ops/d.py": (("deep_kernel",), True), "ops/b.py": (("big_kernel",), True)}


@pytest.mark.integration
def test_a_branch_with_modules_past_the_bounds_gets_failed_rows_naming_them(tmp_path):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "bounds", {
        "ops/terms.py": TERMS + scale_kernel(name="terms_kernel"),
        "ops/deep.py": HEADER + DEEP + scale_kernel(name="deep_kernel"),
        "ops/big.py": scale_kernel(name="big_kernel") + "".join(f"V{i} = {i} + {i}\n" for i in range(80_000)),
    })
    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "-q"], repo)
    assert proc.returncode in (0, 1), proc.stderr
    rows = {r["kernel"]: r for r in json.loads(proc.stdout)["kernels"]}
    assert set(rows) == {"ops/terms.py::terms_kernel", "ops/deep.py::deep_kernel", "ops/big.py::big_kernel"}
    assert all(r["verdict"] == "failed" for r in rows.values())
    assert "nested too deeply for Python's parser" in rows["ops/terms.py::terms_kernel"]["error"]
    assert "nested more than 200 levels deep" in rows["ops/deep.py::deep_kernel"]["error"]
    assert "MB, over the 1 MB bound for a module ptxdiff parses" in rows["ops/big.py::big_kernel"]["error"]
