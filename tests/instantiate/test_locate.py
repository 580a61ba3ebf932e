"""A compile error names the file's own line and column, as compilers do: in the kernel itself,
and in a jit helper of another module that the kernel calls (triton says `at 6:43:` relative to
the function it was compiling, wrapped in the kernel's call of the helper)."""

from __future__ import annotations

import pytest

from helpers import HEADER, make_repo, rows_by_kernel, run_json, scale_kernel, write

pytestmark = pytest.mark.integration


def where(text: str, needle: str) -> str:
    """`line:column` (both from 1) of `needle` in `text`."""
    before = text[:text.index(needle)]
    return f"{before.count(chr(10)) + 1}:{len(before) - before.rfind(chr(10))}"


def test_an_error_in_the_kernel_names_its_line_in_the_file(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/relu.py": scale_kernel(name="relu_kernel")})
    broken = scale_kernel("tl.maximum(x, zero)", name="relu_kernel")
    write(repo, {"ops/relu.py": broken})
    (row,) = run_json(["diff", "-C", str(repo)], capsys)["kernels"]
    assert row["verdict"] == "failed"
    assert f"compile failed: ops/relu.py:{where(broken, 'zero')}: NameError: zero is not defined" in row["error"]


def test_an_error_in_a_helper_of_another_module_names_the_helper_s_line(tmp_path, capsys):
    util = HEADER + "\n\n@triton.jit\ndef twice(x):\n    y = x * 2.0\n    return y + offset\n"
    kernel = HEADER + "from ops.util import twice\n" + scale_kernel("twice(x)", name="k_kernel").replace(HEADER, "")
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/util.py": util.replace("y + offset", "y"),
                                "ops/k.py": kernel})
    write(repo, {"ops/util.py": util})
    report = run_json(["diff", "-C", str(repo)], capsys)
    (row,) = rows_by_kernel(report)["ops/k.py::k_kernel"]
    assert f"ops/util.py:{where(util, 'offset')}: NameError: offset is not defined" in row["error"], row["error"]


def test_the_whole_message_and_the_source_line_are_kept(tmp_path, capsys):
    """A type error whose message spans lines keeps all of it, with the line triton points at."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(name="k_kernel")})
    broken = scale_kernel("tl.dot(x, x)", name="k_kernel")
    write(repo, {"ops/k.py": broken})
    (row,) = run_json(["diff", "-C", str(repo)], capsys)["kernels"]
    error = row["error"]
    assert f"compile failed: ops/k.py:{where(broken, 'tl.dot')}: " in error, error
    assert "equal ranks" in error and not error.rstrip(")").endswith("^")
    assert error.endswith("(at: tl.store(out_ptr + offs, tl.dot(x, x), mask=mask))"), error
