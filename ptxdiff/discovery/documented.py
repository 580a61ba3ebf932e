"""Parameter types a kernel's own text states: `# type:` comments on its parameters, and the
types its docstring gives them (`scale_ptr (float16): ...`, `x_ptr: pointer to bfloat16 input`).

Where a kernel says what its pointers hold, that beats what use and names suggest: a scale
pointer guessed `*i32` makes every `tl.dot` it feeds fail, though the docstring says float16.
Read from the source text between `def` and the first statement (the module index drops
docstrings); pure text work, nothing is imported.
"""

from __future__ import annotations

import ast
import re

# words naming an element type, as a signature writes it (the first one a line names wins)
_DTYPES = (("bfloat16", "bf16"), ("bf16", "bf16"), ("float16", "fp16"), ("fp16", "fp16"), ("half", "fp16"),
           ("float32", "fp32"), ("fp32", "fp32"), ("float64", "fp64"), ("fp64", "fp64"), ("double", "fp64"),
           ("float8e4nv", "fp8e4nv"), ("e4m3", "fp8e4nv"), ("float8e5", "fp8e5"), ("e5m2", "fp8e5"),
           ("uint8", "u8"), ("int8", "i8"), ("int16", "i16"), ("int32", "i32"), ("int64", "i64"),
           ("float", "fp32"), ("int", "i32"), ("bool", "i1"))
_WORD = re.compile(r"\b(" + "|".join(w for w, _ in _DTYPES) + r")\b", re.IGNORECASE)
_TYPE_COMMENT = re.compile(r"^\s*\**(\w+)\s*(?::[^,#=]*)?(?:=[^,#]*)?,?\s*(?:\)\s*:?\s*)?#\s*type:\s*(.+)$")
_DOC_LINE = re.compile(r"^\s*(?:[rRuU]?[\"']{3})?\s*\**(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def _dtype(text: str) -> str | None:
    """The first element type a piece of text names, as a signature writes it."""
    m = _WORD.search(text)
    return dict(_DTYPES)[m.group(1).lower()] if m else None


def _typed(kind: str | None, dtype: str) -> str:
    """A documented dtype for a param guessed `kind`: a pointer stays a pointer, to that dtype."""
    if kind is not None and kind.startswith("*"):
        return "*" + dtype
    return dtype


def documented_types(text: str, fn: ast.FunctionDef, kinds: dict[str, str | None]) -> dict[str, str]:
    """Types the kernel's text gives its runtime params (`kinds`: their guesses, which say which
    ones are pointers); only params whose documented type fits their guess's family change
    (a pointer's element type, a scalar's int or float), so a docstring's loose word never
    turns a pointer into a scalar."""
    lines = text.splitlines()
    start = fn.lineno - 1
    code = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    end = getattr(code[0], "lineno", None) if code else None
    part = lines[start:(end - 1) if end else (fn.end_lineno or start + 1)]
    found: dict[str, str] = {}
    for line in part:
        m = _TYPE_COMMENT.match(line) or _DOC_LINE.match(line)
        if not m or m.group(1) not in kinds or m.group(1) in found:
            continue
        words = m.group(2) or "" if m.re is _DOC_LINE else m.group(2)
        dtype = _dtype(words) or (_dtype(m.group(3)) if m.re is _DOC_LINE else None)
        kind = kinds[m.group(1)]
        if dtype is None or kind is None:
            continue
        pointer = kind.startswith("*")
        if pointer or (dtype in ("i32", "i64", "fp32", "fp64") and not kind.startswith("(")):
            found[m.group(1)] = _typed(kind, dtype)
    return found
