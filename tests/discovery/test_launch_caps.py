"""The range a size computed at a launch site lies in, from the host code's own caps (caps.py):
read in statement order, through tuple assignments, `min`/`max`, `next_power_of_2`, literal
arithmetic and both arms of a conditional; a parameter or a loop's value is unbounded."""

from __future__ import annotations

import ast
import textwrap

import pytest

from ptxdiff.discovery.caps import UNBOUNDED, fitting_size, hull, launch_range, shown, within


def range_of(body: str, consts: dict[str, object] | None = None) -> tuple[int | None, int | None]:
    """The range of the BLOCK argument of the launch `k[grid](x, BLOCK=...)` in `run`'s `body`."""
    fn = ast.parse("def run(x, n, K, V, P=128):\n" + textwrap.indent(textwrap.dedent(body), "    ")).body[0]
    assert isinstance(fn, ast.FunctionDef)
    call = next(c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Subscript))
    return launch_range(next(kw.value for kw in call.keywords if kw.arg == "BLOCK"), fn, consts or {})


@pytest.mark.parametrize(("body", "expected"), [
    ("B = min(K, 16)\nk[(1,)](x, BLOCK=B)", (None, 16)),
    # fla's fused_chunk_based: the second assignment reads the first, whatever K and V are
    ("BK, BV = min(K, 16), min(V, 32)\nBK, BV = max(BK, 16), max(BV, 16)\nk[(1,)](x, BLOCK=BK)", (16, 16)),
    ("BK, BV = min(K, 16), min(V, 32)\nBK, BV = max(BK, 16), max(BV, 16)\nk[(1,)](x, BLOCK=BV)", (16, 32)),
    ("B = triton.next_power_of_2(min(n, 4096))\nk[(1,)](x, BLOCK=B)", (None, 4096)),
    ("k[(1,)](x, BLOCK=max(16, triton.next_power_of_2(min(n, 100))))", (16, 128)),
    ("k[(1,)](x, BLOCK=2 * min(n, 64))", (None, 128)),
    ("k[(1,)](x, BLOCK=min(n, 64) // 4)", (None, 16)),
    ("k[(1,)](x, BLOCK=1024 if n > 4096 else min(n, 256))", (None, 1024)),
    ("if n > 8:\n    B = 64\nelse:\n    B = min(n, 32)\nk[(1,)](x, BLOCK=B)", (None, 64)),
    ("B = 16\nif n > 8:\n    B = 64\nk[(1,)](x, BLOCK=B)", (16, 64)),
    ("B = 16\nk[(1,)](x, BLOCK=B)\nB = 4096", (16, 16)),            # an assignment after the launch
    ("with ctx():\n    B = min(n, 64)\nk[(1,)](x, BLOCK=B)", (None, 64)),
    ("k[(1,)](x, BLOCK=min(n, CAP))", (None, 512)),                   # a module constant
    ("k[(1,)](x, BLOCK=P)", UNBOUNDED),                               # a parameter: its caller decides
    ("for B in (16, 32):\n    k[(1,)](x, BLOCK=B)", UNBOUNDED),
    ("B = n\nB += 1\nk[(1,)](x, BLOCK=min(B, 8))", (None, 8)),
    ("k[(1,)](x, BLOCK=min(*sizes))", UNBOUNDED),
])
def test_a_computed_size_lies_in_the_range_its_caps_give(body, expected):
    assert range_of(body, {"CAP": 512}) == expected


def test_ranges_unite_hold_and_name_the_size_a_guess_outside_them_becomes():
    assert hull([(16, 16), (None, 32)]) == (None, 32) and hull([(16, 32), (64, 64)]) == (16, 64)
    assert within(16, (None, 16)) and not within(64, (None, 16)) and within(True, (0, 0)) and within("x", (1, 1))
    assert fitting_size((16, 32)) == 32 and fitting_size((None, 100)) == 64 and fitting_size((33, 60)) is None
    assert fitting_size((8, None)) == 8 and fitting_size((None, None)) is None
    assert shown((None, 4096)) == "..4096" and shown((16, 32)) == "16..32"
