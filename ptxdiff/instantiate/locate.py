"""A triton compile error at the repository file's own line: `ops/relu.py:12:44: NameError: ...`.

Triton says where an error is relative to the `def` of the jit function it was compiling
(`at 6:43:`), and an error inside a helper is wrapped in one at the kernel's call of it. Kernels
are built from their effective source with the file's own line numbers (instantiate/builder.py registers
each module's text under `path@revision`), so the innermost error, the jit function whose source
it quotes and that function's first line give the place in the file. Worker side: triton is
imported by the caller.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any


def _innermost(error: BaseException) -> BaseException:
    """The CompilationError that a chain of them (kernel -> helper -> ...) was raised for."""
    seen = 0
    while error.__cause__ is not None and hasattr(error.__cause__, "src") and seen < 32:
        error, seen = error.__cause__, seen + 1
    return error


def _jit_functions(jit: Any, limit: int = 256) -> list[Any]:
    """The jit functions a kernel can reach through its globals (helpers, their helpers, and
    those behind a module alias), the kernel first."""
    found: list[Any] = []
    todo = [jit]
    while todo and len(found) < limit:
        fn = todo.pop()
        if any(fn is f for f in found):
            continue
        found.append(fn)
        for value in getattr(getattr(fn, "fn", None), "__globals__", {}).values():
            if hasattr(value, "src") and hasattr(value, "fn"):
                todo.append(value)
            elif type(value).__name__ == "module" and not getattr(value, "__name__", "").startswith(("triton", "math")):
                todo += [v for v in vars(value).values() if hasattr(v, "src") and hasattr(v, "fn")]
    return found


MESSAGE_WIDTH = 600   # characters of triton's message a row keeps (the log has it all)


def message(error: BaseException) -> str:
    """`Type: message` of a compile error, whole, on one line: the innermost CompilationError's
    own message, else the exception it was raised for (triton's `at 42:20: ^` alone says nothing)."""
    inner = _innermost(error)
    original = inner.__context__ if inner.__context__ is not None and not hasattr(inner.__context__, "src") else None
    if original is not None:
        kind, text = type(original).__name__, str(original)
    elif hasattr(inner, "src"):
        kind, text = type(inner).__name__, getattr(inner, "error_message", None) or ""
    else:
        kind, text = type(inner).__name__, str(inner)
    text = " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    if len(text) > MESSAGE_WIDTH:
        text = text[:MESSAGE_WIDTH - 1] + "…"
    return f"{kind}: {text}" if text else kind


def _source_line(error: BaseException) -> str | None:
    """The source line triton points at, as written."""
    inner = _innermost(error)
    node, src = getattr(inner, "node", None), getattr(inner, "src", None)
    if node is None or not src or not hasattr(node, "lineno"):
        return None
    lines = src.split("\n")
    return lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else None


def _where(fn: Any, node: ast.stmt | ast.expr) -> tuple[str, int, int] | None:
    """(path, line, column from 1) of an AST node of `fn`'s source, in its file."""
    filename = fn.fn.__code__.co_filename
    path, at, _ = filename.rpartition("@")
    if not at:
        return None  # not a repository file (ptxdiff's own harness text)
    try:
        lines, first = inspect.getsourcelines(fn.fn)
    except (OSError, TypeError):
        return None
    def_index = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("def ")), 0)
    indent = len(lines[def_index]) - len(lines[def_index].lstrip())
    return path, first + def_index + node.lineno - 1, indent + node.col_offset + 1


def described(error: BaseException, jit: Any) -> str:
    """A compile error in full, on one line: `path:line:col: Type: message (at: source line)`,
    the place in the repository's file where it can be told."""
    where = located(error, jit)
    line = _source_line(error)
    text = where or message(error)
    return f"{text} (at: {line})" if line else text


def located(error: BaseException, jit: Any) -> str | None:
    """`path:line:col: Type: message` for a triton CompilationError of kernel `jit`; None when
    the place cannot be told (then the caller keeps triton's own words)."""
    inner = _innermost(error)
    node, src = getattr(inner, "node", None), getattr(inner, "src", None)
    if node is None or src is None or not hasattr(node, "lineno"):
        return None
    fn = next((f for f in _jit_functions(jit) if getattr(f, "src", None) == src), None)
    where = _where(fn, node) if fn is not None else None
    if where is None:
        return None
    path, line, column = where
    return f"{path}:{line}:{column}: {message(error)}"
