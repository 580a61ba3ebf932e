"""The corpus's ground truth: a source-level rule over two ASTs, independent of any PTX.

- refactor: equal up to comments, docstrings, formatting, consistent renaming of the module's
  own names, operand order of commutative + and *, and reordering of independent statements;
- constant-only: equal once every literal constant is masked (and not a refactor);
- structural: anything else.
Only the kernel's effective source (discovery's closure) and the host wrapper `launch` are
compared: code the kernel never reads is not part of the change. Helper extraction is *not*
recognised (it changes the AST's shape): such pairs show up as rule/hand-label disagreements in
the corpus report, on purpose, rather than being special-cased.
"""

from __future__ import annotations

import ast
from collections import Counter

from ptxdiff.discovery.kernels import discover
from ptxdiff.source.modules import FileSet
from ptxdiff.source.syntax import strip_docstrings
from ptxdiff.strenum import StrEnum


class Label(StrEnum):
    """What the source rule says a change is, in the evidence matrix's order."""

    STRUCTURAL = "structural"
    CONSTANT_ONLY = "constant-only"
    REFACTOR = "refactor"


def _parse(src: str) -> ast.Module:
    tree = ast.parse(src)
    strip_docstrings(tree)
    return tree


class _FoldSigns(ast.NodeTransformer):
    """-1.0 and float("-inf") are literals too."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            try:
                return ast.copy_location(ast.Constant(float(node.args[0].value)), node)
            except ValueError:
                return node
        return node

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant) \
                and isinstance(node.operand.value, (int, float)):
            value = -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
            return ast.copy_location(ast.Constant(value), node)
        return node


class _Mask(ast.NodeTransformer):
    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        return ast.Constant("#") if not isinstance(node.value, bool) and node.value is not None else node


def _first_bound(nodes: list[ast.AST]) -> list[str]:
    """Names bound in these statements (params, stores), in order of first appearance; not
    looking inside nested functions, which get their own scope."""
    names: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.append(node.id)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child)
    for n in nodes:
        visit(n)
    return list(dict.fromkeys(names))


class _Rename(ast.NodeTransformer):
    """Consistent renaming, scope by scope: module names globally, each function's params and
    locals on their own; keywords of calls to the module's own functions follow the callee's
    parameter names."""

    def __init__(self, tree: ast.Module):
        top = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        top += _first_bound([n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                          ast.ClassDef, ast.Import, ast.ImportFrom))])
        self.module = {n: f"_g{i}" for i, n in enumerate(dict.fromkeys(top))}
        self.params = {f.name: {a.arg: f"_l{i}" for i, a in enumerate(f.args.args)}
                       for f in tree.body if isinstance(f, ast.FunctionDef)}
        self.scope: dict[str, str] = {}

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        outer = self.scope
        local = _first_bound([node.args, *node.body])
        self.scope = {n: f"_l{i}" for i, n in enumerate(local)}
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        node.args = self.visit(node.args)
        node.body = [self.visit(b) for b in node.body]
        node.name = self.module.get(node.name, node.name) if not outer else self.scope.get(node.name, node.name)
        self.scope = outer
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.scope.get(node.id) or self.module.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.scope.get(node.arg, node.arg)
        node.annotation = self.visit(node.annotation) if node.annotation else None
        return node

    def visit_Call(self, node: ast.Call) -> ast.Call:
        callee = node.func.value if isinstance(node.func, ast.Subscript) else node.func
        mapping = self.params.get(callee.id, {}) if isinstance(callee, ast.Name) else {}
        self.generic_visit(node)
        for kw in node.keywords:
            if kw.arg in mapping:
                kw.arg = mapping[kw.arg]
        return node


def _alpha(tree: ast.Module) -> ast.Module:
    renamed: ast.Module = _Rename(tree).visit(tree)
    return renamed


class _Commute(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.BinOp:
        self.generic_visit(node)
        if isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = sorted((node.left, node.right), key=_dump)
            node.left, node.right = left, right
        return node


def _dump(tree: ast.AST) -> str:
    return ast.dump(tree, include_attributes=False)


def _reads_writes(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    reads: set[str] = set()
    writes: set[str] = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name):
            (reads if isinstance(n.ctx, ast.Load) else writes).add(n.id)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        reads.add(stmt.target.id)
    return reads, writes


def _independent_permutation(a: list[ast.stmt], b: list[ast.stmt]) -> bool:
    """b is a reordering of a that swaps no two statements depending on each other."""
    da, db = [_dump(s) for s in a], [_dump(s) for s in b]
    if Counter(da) != Counter(db):
        return False
    position: dict[str, list[int]] = {}
    for i, d in enumerate(db):
        position.setdefault(d, []).append(i)
    new_index = [position[d].pop(0) for d in da]
    effects = [_reads_writes(s) for s in a]
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            if new_index[i] > new_index[j]:
                ri, wi = effects[i]
                rj, wj = effects[j]
                if wi & (rj | wj) or wj & ri or _has_side_effect(a[i]) and _has_side_effect(a[j]):
                    return False
    return True


def _has_side_effect(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr)  # e.g. tl.store(...): keep stores in order


def _equal_up_to_reorder(a: ast.AST, b: ast.AST) -> bool:
    if type(a) is not type(b):
        return False
    for name, va in ast.iter_fields(a):
        vb = getattr(b, name, None)
        if isinstance(va, list) and va and isinstance(va[0], ast.stmt):
            if not isinstance(vb, list) or len(va) != len(vb):
                return False
            # not a reordering of the same statements: the statements in place, compared pairwise
            if [_dump(s) for s in va] != [_dump(s) for s in vb] and not _independent_permutation(va, vb) \
                    and not all(_equal_up_to_reorder(x, y) for x, y in zip(va, vb)):
                return False
        elif isinstance(va, list):
            if not isinstance(vb, list) or len(va) != len(vb):
                return False
            if not all(_equal_up_to_reorder(x, y) if isinstance(x, ast.AST) else x == y for x, y in zip(va, vb)):
                return False
        elif isinstance(va, ast.AST):
            if not isinstance(vb, ast.AST) or not _equal_up_to_reorder(va, vb):
                return False
        elif va != vb and name not in ("lineno", "col_offset", "end_lineno", "end_col_offset", "type_comment"):
            return False
    return True


def _relevant(src: str, kernel: str | None) -> ast.Module:
    """The module reduced to the kernel's effective source plus the host wrapper `launch`."""
    tree = _parse(src)
    if kernel is None:
        return tree
    found = discover(FileSet({"k.py": src.encode()}))
    k = found.kernels.get(f"k.py::{kernel}")
    keep = set(k.names) if k else set()
    keep |= {"launch", kernel}
    body: list[ast.stmt] = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)) or \
                isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name in keep or \
                isinstance(stmt, (ast.Assign, ast.AnnAssign)) and \
                {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & keep:
            body.append(stmt)
    tree.body = body
    return tree


def label(old_src: str, new_src: str, kernel: str | None = None) -> Label:
    """constant-only / structural / refactor for two versions of a module (see module doc)."""
    def tree(src: str, rename: bool = False) -> ast.Module:
        t = _FoldSigns().visit(_relevant(src, kernel))
        commuted: ast.Module = _Commute().visit(_alpha(t) if rename else t)  # commute last: operand order uses names
        return commuted
    a, b = tree(old_src), tree(new_src)
    if _dump(a) == _dump(b) or _dump(tree(old_src, True)) == _dump(tree(new_src, True)):
        return Label.REFACTOR
    if _equal_up_to_reorder(a, b):
        return Label.REFACTOR
    if _dump(_Mask().visit(tree(old_src))) == _dump(_Mask().visit(tree(new_src))):
        return Label.CONSTANT_ONLY
    return Label.STRUCTURAL
