"""What a jit function's text may not say: names and attributes that reach Python internals.

Triton's code generator evaluates a kernel body for real: attribute chains with `getattr`,
subscripts with `[]`, and any callable that is not a jit function is called directly. From any
real object, `x.__class__`, `f.__globals__` or `"{0.__globals__}".format(f)` lead to every module
of the process, and a jit function object's own API (`tl.sum.get_capture_scope()`, `.fn`,
`.used_global_vals`) hands out the globals of triton's modules. So before a jit function is built,
its AST is read and what could walk there is refused, with the place and the expression. Pure AST
work: nothing is imported or evaluated.
"""

from __future__ import annotations

import ast
import string
from collections.abc import Iterator

from ptxdiff.discovery.spelling import TRITON_BUILTINS
from ptxdiff.source.syntax import dotted_name, walk

# Public attributes of triton's jit-function objects (JITFunction, ConstexprFunction) that hand out
# their module's globals, their Python function, caches, hooks or a launcher. A kernel never reads
# them; the builder adds the ones the installed triton has (namespace.jit_internals).
JIT_INTERNALS = frozenset({
    "add_pre_run_hook", "binder", "cache", "cache_hook", "create_binder", "device_caches", "fn",
    "get_capture_scope", "is_gluon", "kernel", "kernel_cache", "launch_metadata", "params", "parse",
    "pre_run_hooks", "preload", "repr", "run", "signature", "used_global_vals", "warmup",
})

# Language names an older triton had that a newer one renamed (the API unchanged), old -> new:
# a kernel written for the older triton reads the new name's builtin under ours, as the shims of
# repositories that support both do (`tl._experimental_make_tensor_descriptor`, triton 3.3).
RENAMED = {"_experimental_make_tensor_descriptor": "make_tensor_descriptor"}
# Language modules an older triton had on `tl` that a newer one moved, old name -> its module now:
# triton 2.x's `tl.libdevice.erf(x)` is 3.x's `triton.language.extra.libdevice.erf(x)`.
MOVED = {"libdevice": "triton.language.extra.libdevice"}
# Language modules whose names an older triton had that a newer one keeps in another module: triton
# 2.x's `tl.math` was libdevice (`tl.math.fast_expf`, `tl.math.round`), 3.x keeps those there.
MOVED_INTO = {"triton.language.math": "triton.language.extra.libdevice"}

# Decorators of triton's that make a function Python its code generator runs while it compiles: a
# constexpr function (interpreted by the builder), and a builtin or extern (the repository's own ops,
# `@builtin def rank(axis, _semantic=None)`: never built from source).
BUILTIN_DECORATORS = TRITON_BUILTINS

ATTRIBUTE_BUILTINS = ("getattr", "hasattr", "setattr", "delattr")
FORMAT_METHODS = ("format", "format_map")


def dunder(name: str) -> bool:
    """`__x__`: the names Python gives its own internals (`__builtins__`, `__class__`, `__import__`).
    A name that only starts with two underscores (CUDA's `__syncthreads`, `__shfl_sync`, as a
    repository's language extension names its intrinsics) is an ordinary global."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _snippet(node: ast.AST) -> str:
    lines = ast.unparse(node).splitlines()
    text = lines[0] if lines else type(node).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _walks_fields(text: str, depth: int = 0) -> str | None:
    """Why a format string is refused: a replacement field that reads an attribute or an item
    (`{0.__globals__}`, `{x[key]}`), also inside a nested spec, or text that does not parse
    (`str.format` renders the fields before the error); None when it only places values."""
    try:
        for _, field, spec, _ in string.Formatter().parse(text):
            if field is not None and ("." in field or "[" in field):
                return f"a format field that walks attributes or items (`{{{field}}}`)"
            inner = None if not spec else "a format spec nested too deep" if depth >= 4 \
                else _walks_fields(spec, depth + 1)
            if inner is not None:
                return inner
    except ValueError:
        return "a format string that does not parse"
    return None


def _attribute_name(name: str, denied: frozenset[str]) -> str | None:
    if name.startswith("_") and name not in RENAMED:
        return "an attribute starting with _ reaches Python internals"
    if name in denied:
        return f"`.{name}` of triton's jit-function objects reaches their module's globals"
    return None


def _call(node: ast.Call, denied: frozenset[str]) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in ATTRIBUTE_BUILTINS:
        name = node.args[1] if len(node.args) > 1 and not any(isinstance(a, ast.Starred) for a in node.args) else None
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)) or node.keywords:
            return f"{func.id} with an attribute that is not a string literal"
        return _attribute_name(name.value, denied)
    if isinstance(func, ast.Attribute) and func.attr in FORMAT_METHODS:
        if not (isinstance(func.value, ast.Constant) and isinstance(func.value.value, str)):
            return f"{func.attr} on a string that is not a literal: its fields could walk attributes"
        if (why := _walks_fields(func.value.value)) is not None:
            return why
    if isinstance(func, ast.Name) and func.id == "format" and len(node.args) > 1:
        spec = node.args[1]
        if not (isinstance(spec, ast.Constant) and isinstance(spec.value, str)):
            return "format with a spec that is not a string literal"
        if (why := _walks_fields(spec.value)) is not None:
            return why
    return None


def _spec_text(spec: ast.JoinedStr) -> str:
    """An f-string format spec's text as far as the AST tells it: its literal parts and the nested
    fields that are string literals (`f"{x:{'{0.a}'}}"` reads `{0.a}`)."""
    parts = []
    for value in spec.values:
        if isinstance(value, ast.FormattedValue):
            value = value.value
        if isinstance(value, ast.Constant):
            parts.append(str(value.value))
    return "".join(parts)


def _refusal(node: ast.AST, parents: dict[int, ast.AST], denied: frozenset[str],
             modules: frozenset[str], helpers: frozenset[str]) -> str | None:
    """Why `node` is refused, or None."""
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id in modules and node.attr.startswith("_") \
                and not dunder(node.attr):
            return None
        if node.attr in helpers and not dunder(node.attr):
            return None
        return _attribute_name(node.attr, denied)
    if isinstance(node, ast.Name):
        if dunder(node.id):
            return "a name of the form __x__ reaches Python internals"
        parent = parents.get(id(node))
        if node.id in ATTRIBUTE_BUILTINS and not (isinstance(parent, ast.Call) and parent.func is node):
            return f"{node.id} used as a value: only a direct call with a string literal is read"
        return None
    if isinstance(node, ast.arg) and dunder(node.arg):
        return "a name of the form __x__ reaches Python internals"
    if isinstance(node, ast.keyword) and node.arg and node.arg.startswith("_"):
        return "a keyword starting with _ is one of triton's own (_semantic, _generator, _builder)"
    if isinstance(node, ast.Call):
        return _call(node, denied)
    if isinstance(node, ast.FormattedValue) and isinstance(node.format_spec, ast.JoinedStr):
        return _walks_fields(_spec_text(node.format_spec))
    return None


def _nodes(fn: ast.FunctionDef) -> Iterator[tuple[ast.AST, dict[int, ast.AST]]]:
    """The body and the parameters' annotations, with each node's parent (defaults and decorators
    are the evaluator's: triton's code generator never sees them)."""
    parents: dict[int, ast.AST] = {}
    roots: list[ast.AST] = [*fn.body, *(a for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs,
                                                    fn.args.vararg, fn.args.kwarg] if a is not None)]
    if fn.returns is not None:
        roots.append(fn.returns)
    for root in roots:
        for node in walk(root):
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
            yield node, parents


def refusal(fn: ast.FunctionDef, denied: frozenset[str] = JIT_INTERNALS,
            modules: frozenset[str] = frozenset(),
            helpers: frozenset[str] = frozenset()) -> tuple[ast.AST, str] | None:
    """The first node of a jit function that could reach Python internals, and why; None when
    there is none. `modules` are the global names the body reads that are repository modules:
    their stand-ins hold only what the builder put on them, so a module's private helper
    (`mx_kernels._to_e8m0(x)`, one underscore) may be read through them. `helpers` are the
    jit functions triton's language modules keep under one underscore (`tl.standard._log2`):
    triton's own jit code, read by name (namespace.language_helpers)."""
    for node, parents in _nodes(fn):
        why = _refusal(node, parents, denied, modules, helpers)
        if why is not None:
            return node, why
    return None


def describe(path: str, node: ast.AST, why: str) -> str:
    """One line: `ops/k.py:7: refused `f.__globals__`: the attribute ...`."""
    line = getattr(node, "lineno", None)
    where = f"{path}:{line}" if line else path
    shown = node.arg if isinstance(node, (ast.arg, ast.keyword)) and node.arg else _snippet(node)
    return f"{where}: refused `{shown}`: {why}"


def body_names(fn: ast.FunctionDef) -> set[str]:
    """Names a function body reads from its module (params and locals excluded)."""
    loads: set[str] = set()
    stores = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]}
    for stmt in fn.body:
        for sub in walk(stmt):
            if isinstance(sub, ast.Name):
                (loads if isinstance(sub.ctx, ast.Load) else stores).add(sub.id)
    return loads - stores


def first_use(fn: ast.FunctionDef, name: str) -> ast.AST:
    """Where a function body first reads a name (for the line of a refusal)."""
    return next((sub for stmt in fn.body for sub in walk(stmt) if isinstance(sub, ast.Name) and sub.id == name), fn)


def body_chains(fn: ast.FunctionDef) -> list[tuple[list[str], ast.Attribute]]:
    """Every dotted name `a.b.c` of a function body (with its prefixes), with its node."""
    return [(c, sub) for stmt in fn.body for sub in walk(stmt) if isinstance(sub, ast.Attribute)
            and (c := dotted_name(sub))]
