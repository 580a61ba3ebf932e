"""Small questions asked of syntax trees: the lines of a module as Python counts them."""

from __future__ import annotations

import ast
import textwrap

from ptxdiff.source import syntax
from ptxdiff.source.syntax import asserted_dtypes, is_constexpr, pointer_annotation, python_lines


def test_lines_end_where_python_ends_them():
    text = "a = 1\r\nb = 2\rc = 3\n# \x0c\x1c\x1d\x1e\x85\u2028\u2029 x\nd = 4"
    lines = python_lines(text)
    assert lines == ["a = 1\n", "b = 2\n", "c = 3\n", "# \x0c\x1c\x1d\x1e\x85\u2028\u2029 x\n", "d = 4"]
    assert len(text.splitlines()) == 12                                # what str.splitlines would make of it
    for stmt in ast.parse(text).body:                                  # each statement's line is its own
        assert lines[stmt.lineno - 1].startswith(ast.unparse(stmt))


def test_an_empty_text_has_no_lines_and_a_final_newline_no_extra_one():
    assert python_lines("") == [] and python_lines("x\n") == ["x\n"] and python_lines("\n\n") == ["\n", "\n"]


def test_constexpr_as_triton_reads_it_the_annotation_text_holds_constexpr():
    def ann(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body
    for text in ("tl.constexpr", "tl_constexpr", "'tl.constexpr'", "tl.constexpr(tl.int1)", "constexpr"):
        assert is_constexpr(ann(text)), text
    for text in ("tl.tensor", "int", "'*fp32'", "tl.constexpr_function"):
        assert not is_constexpr(ann(text)), text


def test_a_pointer_type_annotation_is_the_signature_type_triton_reads_from_it():
    """Triton's `_normalize_ty` turns a `tl.pointer_type(...)` object into "*" and its element's name."""
    def ann(text: str) -> ast.expr:
        return ast.parse(text, mode="eval").body
    assert pointer_annotation(ann("tl.pointer_type(tl.int64)")) == "*i64"
    assert pointer_annotation(ann("triton.language.pointer_type(tl.bfloat16, const=True)")) == "*bf16"
    assert pointer_annotation(ann("tl.pointer_type(tl.pointer_type(tl.float32))")) == "**fp32"
    for text in ("tl.pointer_type(DTYPE)", "tl.int64", "'*i64'", "tl.pointer_type(tl.int64, print())", "f(tl.int64)"):
        assert pointer_annotation(ann(text)) is None, text


def test_walk_is_ast_walk_kept_per_function_while_its_tree_lives():
    import gc
    import weakref

    tree = ast.parse("def f(x):\n    if x:\n        return x + 1\n    return [y for y in x]\n")
    fn = tree.body[0]
    assert list(syntax.walk(fn)) == list(syntax.walk(fn)) == list(ast.walk(fn))   # in ast.walk's order, each time
    assert list(syntax.walk(tree)) == list(ast.walk(tree))
    gone = weakref.ref(fn)
    del tree, fn
    gc.collect()
    assert gone() is None   # what is kept of a walk does not keep its tree alive


def test_asserted_dtypes_are_what_a_static_assert_demands_of_a_param():
    fn = ast.parse(textwrap.dedent("""
        def k(a_desc, s_ptr, x, n):
            gl.static_assert(a_desc.dtype == gl.float8e4nv, 'A must use FP8 E4M3')
            tl.static_assert(tl.float32 == s_ptr.dtype.element_ty)
            tl.static_assert(x.dtype == tl.bfloat16)
            tl.static_assert(n == 4)
            tl.static_assert(y.dtype != tl.float16)
    """)).body[0]
    assert asserted_dtypes(fn) == {"a_desc": ("dtype", "fp8e4nv"), "s_ptr": ("element", "fp32"),
                                   "x": ("dtype", "bf16")}
