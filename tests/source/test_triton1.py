"""Triton 1.x kernels (`**meta`) read as the constexpr parameters they meant: the text keeps its
lines, and a kernel that uses `meta` otherwise is left as triton refuses it."""

from __future__ import annotations

import textwrap

import pytest

from helpers import make_repo, run_json
from ptxdiff.source.triton1 import meta_as_params

HEADER = "import triton\nimport triton.language as tl\n\n\n"
OLD_STYLE = HEADER + textwrap.dedent("""\
    @triton.autotune(configs=[triton.Config({'BLOCK': 128, 'GROUP': 8}, num_warps=4)], key=['n'])
    @triton.jit
    def scale(X, Y, n, **meta):
        BLOCK = meta['BLOCK']
        B2 = meta['BLOCK']
        offs = tl.program_id(0) * BLOCK + tl.arange(0, B2)
        x = tl.load(X + offs, mask=offs < n)
        tl.store(Y + offs, x * meta['ALPHA'], mask=offs < n)
    """)


def test_meta_reads_become_constexpr_parameters_on_the_same_lines():
    out = meta_as_params(OLD_STYLE)
    assert len(out.splitlines()) == len(OLD_STYLE.splitlines())
    assert "def scale(X, Y, n, BLOCK: tl.constexpr, ALPHA: tl.constexpr, GROUP: tl.constexpr):" in out
    assert "\n    pass\n" in out                           # `BLOCK = meta['BLOCK']`: the parameter itself
    assert "B2: tl.constexpr = BLOCK" in out                 # a local of another name stays a constexpr
    assert "x * ALPHA" in out and "meta" not in out.split("def scale")[1]


@pytest.mark.parametrize("src", [
    HEADER + "@triton.jit\ndef k(X, **meta):\n    helper(**meta)\n",       # meta passed on: triton's refusal stands
    HEADER + "def host(x, **kwargs):\n    return kwargs['a']\n",           # not a kernel
    "def k(X, **meta):\n    return meta['A']\n",                              # no triton import
    HEADER + "@triton.jit\ndef k(X, BLOCK: tl.constexpr):\n    pass\n",      # nothing to read
])
def test_other_code_is_left_as_it_is(src):
    assert meta_as_params(src) == src


def test_columns_are_characters_not_bytes():
    src = HEADER + "@triton.jit\ndef k(X, **meta):\n    y = 'é' + str(meta['A'])\n"
    assert meta_as_params(src).endswith("    y = 'é' + str(A)\n")


@pytest.mark.integration
def test_a_triton_1_kernel_compiles(tmp_path, capsys):
    """lucidrains' layernorm, softmax and bmm kernels: every row failed with `JIT functions do not
    support **meta parameters`."""
    repo = make_repo(tmp_path, {"ops/k.py": OLD_STYLE})
    rows = run_json(["show", "-C", str(repo), "HEAD"], capsys)["kernels"]
    assert rows and all(r["error"] is None for r in rows), [r["error"] for r in rows]
    assert {r["spec_detail"]["constexprs"]["BLOCK"] for r in rows} == {128}
