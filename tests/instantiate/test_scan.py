"""What a jit function's text may not say, read from its AST before triton's code generator runs it."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from helpers import CORPUS
from ptxdiff.instantiate.scan import describe, refusal
from ptxdiff.source.syntax import dotted_name


def _fn(body: str, params: str = "x_ptr, n, BLOCK: tl.constexpr") -> ast.FunctionDef:
    text = f"def k({params}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    fn = ast.parse(text).body[0]
    assert isinstance(fn, ast.FunctionDef)
    return fn


def _why(body: str, params: str = "x_ptr, n, BLOCK: tl.constexpr") -> str | None:
    found = refusal(_fn(body, params))
    return None if found is None else describe("ops/k.py", *found)


@pytest.mark.parametrize(("body", "said"), [
    ("y = x_ptr.__class__", "ops/k.py:2: refused `x_ptr.__class__`: an attribute starting with _"),
    ("tl.core._unwrap_if_constexpr(n)", "refused `tl.core._unwrap_if_constexpr`: an attribute starting with _"),
    ("f = k.fn.__globals__", "refused `k.fn.__globals__`"),
    ("y = __builtins__", "refused `__builtins__`: a name of the form __x__"),
    ("__import__('os')", "refused `__import__`"),
    ("g = tl.sum.get_capture_scope()", "`.get_capture_scope` of triton's jit-function objects"),
    ("g = tl.sum.used_global_vals", "`.used_global_vals`"),
    ("g = tl.sum.fn", "`.fn` of triton's jit-function objects"),
    ("getattr(x_ptr, name)", "getattr with an attribute that is not a string literal"),
    ("getattr(x_ptr, '__class__')", "refused `getattr(x_ptr, '__class__')`: an attribute starting with _"),
    ("hasattr(tl.sum, 'get_capture_scope')", "jit-function objects"),
    ("getattr(x_ptr, *names)", "not a string literal"),
    ("g = getattr", "getattr used as a value"),
    ("x = tl.load(x_ptr, _semantic=None)", "refused `_semantic`: a keyword starting with _"),
    ("setattr(x_ptr, 'a', 1)\ndelattr(x_ptr, name)", "delattr with an attribute that is not a string literal"),
    ("tl.static_assert(False, '{0.__globals__}'.format(k))", "a format field that walks attributes or items"),
    ("tl.static_assert(False, '{x[k]}'.format_map(m))", "(`{x[k]}`)"),
    ("tl.static_assert(False, '{0:{1.a}}'.format(1, k))", "(`{1.a}`)"),
    ("tl.static_assert(False, '{0.a} {'.format(k))", "a format field that walks"),
    ("tl.static_assert(False, '{0} {'.format(k))", "a format string that does not parse"),
    ("tl.static_assert(False, MSG.format(k))", "format on a string that is not a literal"),
    ("tl.static_assert(False, f'{n}'.format(k))", "format on a string that is not a literal"),
    ("tl.static_assert(False, format(n, spec))", "format with a spec that is not a string literal"),
    ("tl.static_assert(False, f'{n:{w}.{p}} {n:>8}')", None),
    ("tl.static_assert(False, f'{n:{chr(0)}{\"{0.__globals__}\"}}')", "(`{0.__globals__}`)"),
])
def test_what_reaches_python_internals_is_refused_with_its_place(body, said):
    why = _why(body)
    if said is None:
        assert why is None
    else:
        assert why is not None and said in why, why


def test_an_annotation_is_read_too_and_the_line_is_the_files():
    why = _why("pass", params="x_ptr, BLOCK: tl.__class__")
    assert why == "ops/k.py:1: refused `tl.__class__`: an attribute starting with _ reaches Python internals"
    assert _why("pass", params="x_ptr, *, __class__: tl.constexpr") is not None


def test_what_kernels_write_passes():
    assert _why("""
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
        if hasattr(x, "dtype") and getattr(x, "dtype") == tl.float32:
            x = x * x.dtype.primitive_bitwidth
        tl.static_assert(BLOCK % 16 == 0, "BLOCK {} must be a multiple of {}".format(BLOCK, 16))
        tl.static_print(f"BLOCK={BLOCK:>6} {n!r} {x.shape[0]:.2f}")
        _private_helper(x)
        acc = tl.zeros((BLOCK,), dtype=tl.float32) + tl.sum(x, axis=0) + x.T.sum()
        tl.store(x_ptr + offs, acc, mask=offs < n)
    """) is None


def _jit_functions(root: Path):
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and any(dotted_name(d) in (["triton", "jit"], ["jit"])
                                                         for d in node.decorator_list):
                yield path, node


def test_no_kernel_of_the_corpus_is_refused():
    found = list(_jit_functions(CORPUS))
    assert len(found) > 100
    refused = [describe(str(p), *r) for p, fn in found if (r := refusal(fn)) is not None]
    assert refused == []


def test_triton_s_own_private_jit_helpers_may_be_called():
    """`tl.standard._log2(n)` (older tritons' sort helper) is triton's own jit code: named among
    the language's helpers it is read like a public name; other private names, and dunders
    even if named, stay refused."""
    helpers = frozenset({"_log2", "__class__"})
    assert refusal(_fn("y = tl.standard._log2(n)"), helpers=helpers) is None
    found = refusal(_fn("y = tl.core._unwrap_if_constexpr(n)"), helpers=helpers)
    assert found is not None and "starting with _" in found[1]
    assert refusal(_fn("y = x_ptr.__class__"), helpers=helpers) is not None


def test_a_name_that_only_starts_with_two_underscores_is_an_ordinary_global():
    """CUDA-style intrinsics a repository's language extension defines (`from ext import
    __syncthreads`, `ext.__shfl_sync(x)`) are read like any name; `__x__` names stay refused."""
    ext = frozenset({"ext"})
    assert refusal(_fn("__syncthreads()\nx = ext.__shfl_sync(x_ptr)\n__k = 1"), modules=ext) is None
    assert _why("pass", params="x_ptr, __n") is None
    assert "__x__" in (_why("y = __spec__") or "")
    found = refusal(_fn("y = ext.__dict__"), modules=ext)
    assert found is not None and "starting with _" in found[1]


def test_a_plain_function_of_triton_s_language_that_takes_constexprs_only_is_one_of_its_helpers():
    """triton through 3.3 keeps `_log2(i: core.constexpr)` as a plain function its code generator
    calls while it compiles (native-sparse-attention's sort reads `tl.standard._log2`): triton's own
    helper. A plain function of it that takes anything else is not."""
    import triton.language as tl

    from ptxdiff.instantiate.namespace import private_language

    def _log2(i: tl.constexpr):
        return i

    def _unwrap(x):
        return x
    for fn in (_log2, _unwrap):
        fn.__module__ = "triton.language.standard"
    assert private_language(_log2) and not private_language(_unwrap)
    _log2.__module__ = "ops.k"   # the repository's own: never triton's helper
    assert not private_language(_log2)
