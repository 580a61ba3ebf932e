"""The corpus's ground truth: labels.label() on small hand-made pairs, tricky ones included."""

from __future__ import annotations

import textwrap

import pytest

from ptxdiff.corpus.labels import label

BASE = '''
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(x_ptr + offs, mask=mask, other=0.0)
    b = tl.load(y_ptr + offs, mask=mask, other=0.0)
    out = a * 0.5 - b
    tl.store(out_ptr + offs, out, mask=mask)


def launch(x, y, out):
    k[(1,)](x, y, out, x.numel())
'''


def variant(old: str, new: str, text: str = BASE) -> str:
    assert old in text, old
    return text.replace(old, new)


def lab(new: str, old: str = BASE) -> str:
    return label(textwrap.dedent(old), textwrap.dedent(new), "k")


def test_identical_source_is_a_refactor():
    assert lab(BASE) == "refactor"


@pytest.mark.parametrize("new", [
    variant("    out = a * 0.5 - b\n", "    # scale a, then subtract\n    out = a * 0.5 - b\n"),
    variant("def k(", "def k(  ").replace("BLOCK: tl.constexpr = 128", "BLOCK: tl.constexpr=128"),
    variant("@triton.jit\ndef k", "\n\n\n@triton.jit\ndef k"),
    variant("    offs = ", '    """A docstring."""\n    offs = '),
])
def test_comments_formatting_docstrings_and_line_shifts_are_refactors(new):
    assert lab(new) == "refactor"


def test_consistent_rename_of_locals_and_params_is_a_refactor():
    new = BASE.replace("mask", "in_bounds").replace("in_bounds=in_bounds", "mask=in_bounds")
    new = new.replace("x_ptr", "src_ptr")
    assert lab(new) == "refactor"


def test_a_rename_that_swaps_meaning_is_structural():
    new = variant("    out = a * 0.5 - b\n", "    out = b * 0.5 - a\n")
    assert lab(new) == "structural"


def test_reordering_independent_loads_is_a_refactor_but_dependent_statements_are_not():
    load_a = "    a = tl.load(x_ptr + offs, mask=mask, other=0.0)\n"
    load_b = "    b = tl.load(y_ptr + offs, mask=mask, other=0.0)\n"
    independent = variant(load_a + load_b, load_b + load_a)
    assert lab(independent) == "refactor"
    dependent = variant("    mask = offs < n\n    a = tl.load(x_ptr + offs, mask=mask, other=0.0)\n",
                        "    a = tl.load(x_ptr + offs, mask=mask, other=0.0)\n    mask = offs < n\n")
    assert lab(dependent) == "structural"


def test_commuting_a_sum_or_product_is_a_refactor_but_not_a_difference():
    assert lab(variant("a * 0.5 - b", "0.5 * a - b")) == "refactor"
    assert lab(variant("a * 0.5 - b", "b - a * 0.5")) == "structural"


@pytest.mark.parametrize("old,new", [
    ("a * 0.5", "a * 0.25"),                        # a float literal
    ("other=0.0)\n    b", "other=1.0)\n    b"),      # a padding value
    ("BLOCK: tl.constexpr = 128", "BLOCK: tl.constexpr = 256"),  # a constexpr default
    ("other=0.0)\n    b", "other=-1.0)\n    b"),     # a negative literal folds into one constant
])
def test_literal_changes_are_constant_only(old, new):
    assert lab(variant(old, new)) == "constant-only"


def test_float_inf_spelling_counts_as_a_literal():
    old = variant("other=0.0)\n    b", 'other=float("-inf"))\n    b')
    assert lab(variant('float("-inf")', "0.0", old), old) == "constant-only"


def test_a_constant_that_selects_an_operation_is_still_constant_only_by_the_rule():
    """The rule is deliberately syntactic: tl.sum(x, axis=0) -> axis=1 is a literal change even
    though it changes the computation. The corpus report shows such pairs as counter-examples."""
    old = variant("    out = a * 0.5 - b\n", "    out = tl.sum(a, axis=0) - b\n")
    assert lab(variant("axis=0", "axis=1", old), old) == "constant-only"


def test_changing_an_operation_is_structural():
    assert lab(variant("a * 0.5 - b", "a * 0.5 + b")) == "structural"
    assert lab(variant("    out = a * 0.5 - b\n", "    out = tl.exp(a * 0.5) - b\n")) == "structural"


def test_code_the_kernel_never_reads_is_not_part_of_the_change():
    new = BASE + "\n\ndef reference(x):\n    return x * 2\n"
    assert lab(new) == "refactor"


def test_an_edit_in_a_called_jit_helper_counts():
    old = variant("    out = a * 0.5 - b\n", "    out = helper(a) - b\n").replace(
        "@triton.jit\ndef k", "@triton.jit\ndef helper(v):\n    return v * 0.5\n\n\n@triton.jit\ndef k")
    assert lab(variant("return v * 0.5", "return v + 0.5", old), old) == "structural"
    assert lab(variant("return v * 0.5", "return v * 0.7", old), old) == "constant-only"


def test_renaming_a_kernel_param_that_shares_a_name_with_a_host_local_is_a_refactor():
    old = variant("    k[(1,)](x, y, out, x.numel())\n", "    n = x.numel()\n    k[(1,)](x, y, out, n, BLOCK=128)\n")
    new = old.replace("out_ptr, n, BLOCK", "out_ptr, n_elements, BLOCK").replace("offs < n\n", "offs < n_elements\n")
    assert "n_elements" in new and "n = x.numel()" in new
    assert lab(new, old) == "refactor"
