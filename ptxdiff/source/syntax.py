"""Small questions asked of Python syntax trees, shared by discovery, specs, the builder and the corpus.

Pure AST work: nothing is imported or evaluated.
"""

from __future__ import annotations

import ast
import copy
import itertools
import operator
import re
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_LINE_END = re.compile(r"\r\n|\r|\n")

# the nodes below each module, class and function walked so far, while its tree lives
_WALKED: weakref.WeakKeyDictionary[ast.AST, tuple[ast.AST, ...]] = weakref.WeakKeyDictionary()
_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def walk(node: ast.AST) -> Iterable[ast.AST]:
    """`ast.walk`, in its order, kept for a module, class or function: discovery asks some forty
    questions of each kernel's body (and of its module), and walking it again for each was most
    of a cold run's time before the first compile. Trees are not changed once parsed
    (`strip_docstrings` runs first)."""
    if not isinstance(node, _SCOPES):
        return ast.walk(node)
    below = _WALKED.get(node)
    if below is None:   # the node itself is not kept: the weak key would never be let go
        below = _WALKED[node] = tuple(ast.walk(node))[1:]
    return itertools.chain((node,), below)


def python_lines(text: str) -> list[str]:
    """A module's lines as Python's tokenizer counts them, each ending in "\\n" (the last one
    may have no end): only `\\r\\n`, `\\r` and `\\n` end a line. `str.splitlines` also splits at
    `\\x0c`, `\\x1c`-`\\x1e`, `\\x85`, `\\u2028`..., which Python reads as ordinary characters: line
    numbers from the AST would then point at other lines (a decoy function above the kernel)."""
    lines, start = [], 0
    for end in _LINE_END.finditer(text):
        lines.append(text[start:end.start()] + "\n")
        start = end.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def single_assignment(stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """`name = value` or `name: T = value` to one plain name: (name, value); else None."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id, stmt.value
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
        return stmt.target.id, stmt.value
    return None


def dotted_name(node: ast.expr) -> list[str]:
    """`a.b.c` -> ["a", "b", "c"]; a call's callee; [] when the root is not a plain name (`x[0].to`)."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def last_name(node: ast.expr) -> str:
    """The last name of `a.b.c` or `name`, whatever the root (`tl.load(p).to` -> "to"); "" otherwise.

    Unlike dotted_name it does not need a plain root, so method calls on any value are seen."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def attribute_chains(node: ast.AST) -> list[list[str]]:
    """Every dotted name `a.b.c` under `node` (with its prefixes `a.b`), in walk order."""
    return [c for sub in walk(node) if isinstance(sub, ast.Attribute) and (c := dotted_name(sub))]


def is_constexpr(annotation: ast.expr | None) -> bool:
    """`x: tl.constexpr` (or `"tl.constexpr"` as a string, or `tl.constexpr(tl.int1)`, or an alias
    named for it, `tl_constexpr = tl.constexpr`): a compile-time parameter. Triton's own rule is
    that the annotation's text holds "constexpr"."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Call):
        annotation = annotation.func
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return "constexpr" in annotation.value
    chain = dotted_name(annotation)
    return bool(chain) and "constexpr" in chain[-1] and not chain[-1].startswith("constexpr_function")


# triton's short names of its dtypes (runtime/jit.py's type_canonicalisation_dict), by dtype name
_DTYPES = {**{f"int{n}": f"i{n}" for n in (1, 8, 16, 32, 64)}, **{f"uint{n}": f"u{n}" for n in (8, 16, 32, 64)},
           **{f"float{n}": f"fp{n}" for n in (16, 32, 64)}, "bfloat16": "bf16",
           **{f"float8{v}": f"fp8{v}" for v in ("e4nv", "e5", "e4b15", "e4b8", "e5b16")}}


def pointer_annotation(annotation: ast.expr | None) -> str | None:
    """`tl.pointer_type(tl.int64)` (a pointer type object as the annotation, under any module
    alias, nested for pointers to pointers): the signature type triton reads from it ("*i64"; its
    `const` and address space do not change it); None for any other annotation."""
    if not (isinstance(annotation, ast.Call) and len(annotation.args) == 1 and dotted_name(annotation.func)[-1:] ==
            ["pointer_type"] and all(k.arg in ("address_space", "const") for k in annotation.keywords)):
        return None
    element = annotation.args[0]
    inner = pointer_annotation(element)
    if inner is not None:
        return "*" + inner
    chain = dotted_name(element)
    return "*" + _DTYPES[chain[-1]] if chain and chain[-1] in _DTYPES else None


# calls through which a module may bind names no statement of it shows
_DYNAMIC_BINDERS = {"globals", "exec", "eval", "setattr", "vars", "__import__", "locals"}


def binds_nowhere(tree: ast.Module, name: str) -> bool:
    """Whether no statement of the module could bind `name` as a global: nothing in the module's
    own scope assigns, defines, imports, loops, `with`s, walruses, catches or match-captures it
    (a function's locals are its own), no `global` of it anywhere, and no call that binds names
    dynamically (`globals().update(...)`, `exec`). Star imports are the caller's to read
    (ModuleIndex.binds knows the repository's)."""
    for node in walk(tree):
        if isinstance(node, ast.Global) and name in node.names or \
                isinstance(node, ast.Call) and last_name(node.func) in _DYNAMIC_BINDERS:
            return False
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name == name:
                return False
            todo += node.decorator_list   # evaluated in the module's scope; the body is not
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) or \
                isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                    a.name != "*" and (a.asname or a.name.split(".")[0]) == name for a in node.names) or \
                isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == name or \
                isinstance(node, ast.MatchMapping) and node.rest == name or \
                isinstance(node, ast.ExceptHandler) and node.name == name:
            return False
        todo += ast.iter_child_nodes(node)
    return True


def dtype_short(node: ast.expr) -> str | None:
    """`tl.float8e4nv`, `gl.bfloat16` (a dtype of triton's, under any alias): its short name in a
    signature (`fp8e4nv`, `bf16`); None for anything else."""
    chain = dotted_name(node)
    return _DTYPES.get(chain[-1]) if len(chain) >= 2 else None


def asserted_dtypes(fn: ast.FunctionDef) -> dict[str, tuple[str, str]]:
    """Element types `static_assert` demands of the kernel's params (issue 37: the kernel's own
    words): `static_assert(p.dtype.element_ty == tl.float32)` -> {p: ("element", "fp32")} (a
    pointer's), `static_assert(d.dtype == gl.float8e4nv)` -> {d: ("dtype", "fp8e4nv")} (a
    descriptor's or a scalar's)."""
    found: dict[str, tuple[str, str]] = {}
    for node in walk(fn):
        if not (isinstance(node, ast.Call) and last_name(node.func) == "static_assert" and node.args):
            continue
        test = node.args[0]
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
            continue
        for side, other in ((test.left, test.comparators[0]), (test.comparators[0], test.left)):
            chain, short = dotted_name(side), dtype_short(other)
            if short is None or len(chain) < 2:
                continue
            if chain[1:] == ["dtype", "element_ty"]:
                found.setdefault(chain[0], ("element", short))
            elif chain[1:] == ["dtype"]:
                found.setdefault(chain[0], ("dtype", short))
    return found


def signature_annotation(annotation: ast.expr | None) -> str | None:
    """The signature type an annotation gives triton: a string's text (`"*fp16"`), or what it reads
    from a pointer type object (pointer_annotation)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value
    return pointer_annotation(annotation)


def literal(node: ast.expr, consts: Mapping[str, object]) -> tuple[bool, object]:
    """A constant's value: a literal, `-literal`, or a module constant with a literal value."""
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return True, -node.operand.value
    if isinstance(node, ast.Name) and node.id in consts:
        return True, consts[node.id]
    return False, None


def call_args(node: ast.expr) -> tuple[list[ast.expr], dict[str, ast.expr]]:
    """A call's positional and keyword arguments (`**kw` left out); nothing for a non-call."""
    if not isinstance(node, ast.Call):
        return [], {}
    return list(node.args), {k.arg: k.value for k in node.keywords if k.arg}


def strip_docstrings(tree: ast.AST) -> None:
    """Docstrings are not code: drop them from modules, classes and functions (statements only
    are walked, so this stays cheap on large modules)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            node.body = body = body[1:] or [ast.Pass()]
        for stmt in body:
            todo.append(stmt)
        for block in ("orelse", "finalbody"):
            todo.extend(getattr(node, block, []) or [])
        todo.extend(getattr(node, "handlers", []) or [])


def names_in(node: ast.AST) -> set[str]:
    """Every name an expression or statement reads or binds."""
    return {n.id for n in walk(node) if isinstance(n, ast.Name)}


def assigned_value(node: ast.AST) -> tuple[ast.expr | None, ast.expr | None]:
    """The target and value of a single-target assignment, annotated ones included
    (`out_dtype: tl.constexpr = out_ptr.dtype.element_ty`)."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        return node.targets[0], node.value
    if isinstance(node, ast.AnnAssign):
        return node.target, node.value
    return None, None


# what each comparison operator does (the evaluator's, and `static_truth`'s)
COMPARISONS: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: operator.contains(b, a), ast.NotIn: lambda a, b: not operator.contains(b, a)}


def static_truth(test: ast.expr, values: Mapping[str, object]) -> bool | None:
    """The truth of an `if` test that reads only constexprs of known value and literals
    (`not FLAG`, `MODE == 1 and HAS_BIAS`), as triton decides it at compile time; None where
    it reads anything else."""
    if isinstance(test, ast.Constant):
        return bool(test.value)
    if isinstance(test, ast.Name):
        return bool(values[test.id]) if test.id in values else None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = static_truth(test.operand, values)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        parts = [static_truth(v, values) for v in test.values]
        if None in parts:
            return None
        return all(parts) if isinstance(test.op, ast.And) else any(parts)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in COMPARISONS:
        sides = []
        for node in (test.left, test.comparators[0]):
            if isinstance(node, ast.Name) and node.id in values:
                sides.append(values[node.id])
            elif isinstance(node, ast.Constant):
                sides.append(node.value)
            else:
                return None
        try:
            return bool(COMPARISONS[type(test.ops[0])](sides[0], sides[1]))
        except TypeError:
            return None
    return None


class _Taken(ast.NodeTransformer):
    def __init__(self, values: Mapping[str, object]):
        self.values = values

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        truth = static_truth(node.test, self.values)
        if truth is None:
            return node
        return (node.body if truth else node.orelse) or [ast.Pass()]


def taken_branches(fn: ast.FunctionDef, values: Mapping[str, object]) -> ast.FunctionDef:
    """A copy of `fn` with each `if` that `static_truth` decides replaced by the branch it takes:
    the statements a compile with these constexpr values reaches (a parameter loaded from only
    under `if IS_TENSOR:` is an int where the flag is off)."""
    copied = _Taken(values).visit(copy.deepcopy(fn))
    assert isinstance(copied, ast.FunctionDef)
    return copied
