"""Element types a kernel's own code states for its pointers, before any guess: a comparison of a
pointer's element type with a dtype (`if X.dtype.element_ty == tl.float16:`). Pure AST work
(params.py reads it as evidence).
"""

from __future__ import annotations

import ast

from ptxdiff.discovery.dot_operands import SIGNATURE_TYPES
from ptxdiff.source.syntax import dotted_name


def _element_of(node: ast.expr, aliases: dict[str, str]) -> str | None:
    """The param whose element type an expression is: `P.dtype.element_ty`, or a local holding it."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    chain = dotted_name(node)
    return chain[0] if len(chain) == 3 and chain[1:] == ["dtype", "element_ty"] else None


def stated_element_types(nodes: list[ast.AST], params: list[str]) -> dict[str, str]:
    """Pointers whose element type the kernel compares with a dtype (`if X.dtype.element_ty ==
    tl.float16:`): the first such dtype is their type, so the branches that define values run."""
    aliases: dict[str, str] = {}
    for n in nodes:
        target = n.targets[0] if isinstance(n, ast.Assign) else n.target if isinstance(n, ast.AnnAssign) else None
        value = getattr(n, "value", None)
        p = _element_of(value, {}) if isinstance(target, ast.Name) and isinstance(value, ast.expr) else None
        if p in params and isinstance(target, ast.Name):
            aliases[target.id] = p
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq):
            for a, b in ((node.left, node.comparators[0]), (node.comparators[0], node.left)):
                p, dtype = _element_of(a, aliases), dotted_name(b)[-1:]
                if p in params and dtype and dtype[0] in SIGNATURE_TYPES:
                    found.setdefault(p, "*" + SIGNATURE_TYPES[dtype[0]])
    return found
