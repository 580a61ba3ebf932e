"""Kernels written for triton 1.x, read as the constexpr parameters they meant (issue 37).

Triton 1.x handed a kernel its launch's keyword arguments as `**meta`, read in the body as
`meta['BLOCK']`; triton 2.0 made them `BLOCK: tl.constexpr` parameters and refuses `**meta`
("JIT functions do not support **meta parameters"), so no release ptxdiff compiles with takes such
a kernel. Its source is read as 2.0 would have it written: `**meta` becomes one constexpr
parameter per key the body reads, and each `meta['KEY']` that parameter's name. The text keeps its
lines and every other column, so errors, fingerprints and the module's other code read as before;
a kernel that uses `meta` otherwise (passes it on, iterates it) is left as triton refuses it.
"""

from __future__ import annotations

import ast
import re

_KWARGS = re.compile(r"\*\*\s*[A-Za-z_]\w*\s*[,)]")
_KERNEL_DECORATORS = ("jit", "autotune", "heuristics")


def meta_as_params(text: str) -> str:
    """`text` with each jit function's `**meta` read as constexpr parameters; unchanged where no
    jit function takes `**kwargs`, or where the text does not parse (its error is the parser's)."""
    if not _KWARGS.search(text):
        return text
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return text
    language = _language_name(tree)
    if language is None:
        return text
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []   # (line index, start column, end column, replacement)
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.args.kwarg is not None and _is_kernel(fn):
            edits += _edits(fn, fn.args.kwarg, language, lines)
    for row, start, end, new in sorted(edits, reverse=True):
        line = lines[row]
        lines[row] = line[:start] + new + line[end:]
    return "".join(lines)


def _language_name(tree: ast.Module) -> str | None:
    """The module's name for triton.language (`tl`), or `triton.language` where only triton is
    imported; None where neither is."""
    found: str | None = None
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "triton.language" and alias.asname:
                    return alias.asname
                if alias.name in ("triton", "triton.language") and alias.asname is None:
                    found = "triton.language"
        elif isinstance(node, ast.ImportFrom) and node.module == "triton" and not node.level:
            for alias in node.names:
                if alias.name == "language":
                    return alias.asname or "language"
    return found


def _is_kernel(fn: ast.FunctionDef) -> bool:
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name in _KERNEL_DECORATORS:
            return True
    return False


def _edits(fn: ast.FunctionDef, kwarg: ast.arg, language: str, lines: list[str]) -> list[tuple[int, int, int, str]]:
    """The text edits of one kernel, or none when its `meta` is used other than as `meta['KEY']`
    on one line. A key is a parameter when the body reads it or an autotune config sets it."""
    meta = kwarg.arg
    reads = [n for n in ast.walk(fn) if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
             and n.value.id == meta and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str)
             and n.slice.value.isidentifier() and n.lineno == n.end_lineno]
    uses = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == meta]
    if len(uses) != len(reads):
        return []
    taken = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    keys = [k for k in dict.fromkeys([*(_key(n) for n in reads), *_config_keys(fn)]) if k not in taken]
    row = kwarg.lineno - 1
    star = lines[row].rfind("**", 0, _column(lines[row], kwarg.col_offset))
    if star < 0 or kwarg.end_col_offset is None:
        return []
    default = " = None" if fn.args.defaults or fn.args.kw_defaults else ""   # a parameter after defaults takes one
    params = ", ".join(f"{k}: {language}.constexpr{default}" for k in keys) or f"{meta}: {language}.constexpr = None"
    edits = [(row, star, _column(lines[row], kwarg.end_col_offset), params)]
    # `BLOCK = meta['BLOCK']`: a plain assignment would make the constexpr a Python int (which
    # `tl.arange` refuses); the parameter is the name itself, or a local constexpr of another name
    bound = {id(stmt.value): stmt for stmt in ast.walk(fn) if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
             and isinstance(stmt.targets[0], ast.Name) and stmt.lineno == stmt.end_lineno}
    for n in reads:
        stmt = bound.get(id(n))
        node, text = (n, _key(n)) if stmt is None else (stmt, _assigned(stmt, _key(n), language))
        assert node.end_col_offset is not None
        line = lines[node.lineno - 1]
        edits.append((node.lineno - 1, _column(line, node.col_offset), _column(line, node.end_col_offset), text))
    return edits


def _key(read: ast.Subscript) -> str:
    assert isinstance(read.slice, ast.Constant)
    return str(read.slice.value)


def _assigned(stmt: ast.Assign, key: str, language: str) -> str:
    target = stmt.targets[0]
    assert isinstance(target, ast.Name)
    return "pass" if target.id == key else f"{target.id}: {language}.constexpr = {key}"


def _config_keys(fn: ast.FunctionDef) -> list[str]:
    """The keys its decorators' `triton.Config({...})` dicts set."""
    return [k.value for deco in fn.decorator_list for call in ast.walk(deco) if isinstance(call, ast.Call)
            and (call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")) == "Config"
            and call.args and isinstance(call.args[0], ast.Dict)
            for k in call.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isidentifier()]


def _column(line: str, offset: int) -> int:
    """The character column of a UTF-8 byte offset (what ast gives) in `line`."""
    return len(line.encode()[:offset].decode(errors="ignore"))
