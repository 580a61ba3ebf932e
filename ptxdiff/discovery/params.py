"""Signature types of a kernel's parameters, inferred from how the kernel uses them and their names.

Offline there is no launch to read types from, so each runtime parameter gets the type its use
implies: an address's pointer term is a pointer (`*i32` when the values loaded through it are used
as integers: a commit widening them to int64 then shows), a loop bound or a comparison an
integer, a scalar added to loaded values a float. Names decide only where use says nothing.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from ptxdiff.discovery.hints import Hint
from ptxdiff.source.syntax import dotted_name, is_constexpr


@dataclass(frozen=True)
class Param:
    """One parameter of a kernel and what its source says of it (a guess, where it has no value)."""

    name: str
    constexpr: bool
    kind: str | None  # inferred signature type for runtime params ("*fp32", "i32", "fp32"), or None
    hint: Hint | None = None   # a constexpr with no default: the guess its use in the kernel suggests
    optional: bool = False     # a runtime param the kernel tests against None


_LOAD_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
               "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor"}
_INT_CALLS = {"range", "static_range", "cdiv", "multiple_of", "max_contiguous"}
_FLOAT_NAMES = ("eps", "epsilon", "scale", "alpha", "beta", "slope", "temperature", "softcap",
                "momentum", "dropout_p", "p_drop", "theta", "lambd", "margin", "label_smoothing")
_INT_NAMES = ("stride", "_size", "size_", "_len", "numel", "n_elements", "_dim",
              "offset", "batch", "seq", "_idx", "ignore_index", "n_cols", "n_rows", "seed")
_INT_WORD_PREFIXES = re.compile(r"(?:^|_)(?:n|num)_")  # n_rows, num_heads, x_n_rows; not non_/mean_
_INT_SUFFIXES = ("stride",)  # Mean_ptr_row_stride, Scale_row_stride: an int whatever the name starts with
# operators whose operands are integers: pointer evidence here, and the device-function harness
INTEGER_OPS = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor, ast.FloorDiv, ast.Mod)


def _pointer_terms(expr: ast.expr) -> set[str]:
    """Names that are additive terms of an address expression (`X + i * s + offs` -> X, offs)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        return _pointer_terms(expr.left) | (_pointer_terms(expr.right) if isinstance(expr.op, ast.Add) else set())
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.Subscript):
        return _pointer_terms(expr.value)
    return set()


def _names_outside_calls(node: ast.AST) -> set[str]:
    """Names an expression uses directly, not as arguments of a call inside it."""
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Call):
        return set()
    return set().union(*(_names_outside_calls(child) for child in ast.iter_child_nodes(node)))


def _uncast(node: ast.expr) -> ast.expr:
    """`x.to(tl.float32)` -> `x`: a cast does not change what x is."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
        node = node.func.value
    return node


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


@dataclass
class _Locals:
    """How a kernel's locals relate to its params (assignments only, read once)."""

    params: list[str]
    derived: dict[str, set[str]]  # local -> the additive terms of its value (`p = X + ...`): pointers it may hold
    uses: dict[str, set[str]]     # local -> every name its value reads

    def roots(self, address: ast.expr) -> tuple[set[str], set[str]]:
        """Every additive term of an address (through locals), and the `*ptr*` params among them."""
        todo, seen = list(_pointer_terms(address)), set()
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.derived.get(n, ()))
        return seen, {n for n in seen if n in self.params and "ptr" in n.lower()}


def _locals(params: list[str], nodes: list[ast.AST]) -> _Locals:
    derived: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            derived.setdefault(node.targets[0].id, set()).update(_pointer_terms(node.value))
            uses.setdefault(node.targets[0].id, set()).update(_names_in(node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):  # `k_len += nxt - cur`
            uses.setdefault(node.target.id, set()).update(_names_in(node.value))
    return _Locals(params, derived, uses)


def _loaded_from(flow: _Locals, nodes: list[ast.AST]) -> dict[str, set[str]]:
    """Locals holding values loaded from a param pointer (`y = tl.load(Y_ptr + i).to(tl.int64)`), and
    locals computed from them (`row_offs = row_start + m_offs`): local -> the pointers loaded from."""
    params = flow.params
    loaded_from: dict[str, set[str]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            for value in map(_uncast, values):  # `x = tl.load(p).to(...) if HAS_X else 0`
                if isinstance(value, ast.Call) and dotted_name(value.func)[-1:] == ["load"] and value.args:
                    seen, named = flow.roots(value.args[0])
                    loaded_from.setdefault(node.targets[0].id, set()).update(named or (seen & set(params)))
    # a param pointer advanced by loaded offsets (`h += boh * K`) is still the pointer, not a value
    advanced = {node.target.id for node in nodes if isinstance(node, ast.AugAssign) and isinstance(
        node.target, ast.Name) and node.target.id in params and isinstance(node.op, (ast.Add, ast.Sub))}
    advanced |= {name for name, terms in flow.derived.items() if name in params and name in terms}
    changed = True
    while changed:
        changed = False
        for local, names in flow.uses.items():
            if local in advanced:
                continue
            sources = set().union(*(loaded_from[n] for n in names if n in loaded_from and n != local))
            if not sources <= loaded_from.get(local, set()):
                loaded_from.setdefault(local, set()).update(sources)
                changed = True
    return loaded_from


@dataclass
class _Evidence:
    """What the kernel's use says of its names."""

    index_pointers: set[str] = field(default_factory=set)  # pointers whose values are offsets of another address: ints
    pointer_roots: set[str] = field(default_factory=set)
    ints: set[str] = field(default_factory=set)
    floats: set[str] = field(default_factory=set)
    compared: set[str] = field(default_factory=set)  # `offs < n`: an int, unless a float literal says otherwise

    def address(self, arg: ast.expr, flow: _Locals, loaded_from: dict[str, set[str]]) -> None:
        """The address a load, store or atomic is given: its pointer term, and the offsets beside it."""
        seen, named = flow.roots(arg)
        inner = _names_in(arg)
        # a loaded value is never the pointer term: `X + tl.load(Y)` offsets X by ints
        offsets = {n for n in seen | inner | set().union(*(flow.uses.get(t, ()) for t in seen))
                   if n in loaded_from}
        self.index_pointers.update(*(loaded_from[n] for n in offsets))
        seen -= offsets
        # an address has one pointer term: next to a `*ptr*` param the others are offsets
        self.pointer_roots |= named or seen
        self.ints |= seen - named if named else set()
        self.ints |= inner - _pointer_terms(arg)

    def comparison(self, node: ast.Compare) -> None:
        # `X is None` / `X is not None` says nothing of X's type (an optional pointer, often)
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return
        names = _names_outside_calls(node)  # not MASK in `tl.load(MASK) == 0`
        if any(isinstance(c, ast.Constant) and isinstance(c.value, float) for c in (node.left, *node.comparators)):
            self.floats |= names  # `if DELTA != 0.0`: a float scalar
        else:
            self.compared |= names


def _evidence(flow: _Locals, nodes: list[ast.AST], loaded_from: dict[str, set[str]]) -> _Evidence:
    found = _Evidence()
    with_values: list[tuple[str, str]] = []  # (param, local) meeting in +, -, *, /
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            left, right = _uncast(node.left), _uncast(node.right)
            for a, b in ((left, right), (right, left)):
                if isinstance(a, ast.Name) and a.id in flow.params and isinstance(b, ast.Name):
                    with_values.append((a.id, b.id))
        if isinstance(node, ast.Call):
            chain = dotted_name(node.func)
            name = chain[-1] if chain else ""
            if name in _LOAD_CALLS:
                arg = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("pointer", "base")), None)
                if arg is not None:
                    found.address(arg, flow, loaded_from)
            if name in _INT_CALLS:
                found.ints |= {n for a in node.args for n in _names_in(a)}
        elif isinstance(node, ast.Compare):
            found.comparison(node)
    # values used in //, %, shifts or bit operations are integers: the pointer they come from holds ints
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, INTEGER_OPS):
            for side in (node.left, node.right):
                for name in _names_outside_calls(side):
                    if name in loaded_from:
                        found.index_pointers.update(loaded_from[name])
    # a scalar added to or multiplying values loaded from memory (not indices) is a float: `w + offset`
    for p, local in with_values:
        if local in loaded_from and loaded_from[local] and not loaded_from[local] & found.index_pointers:
            found.floats.add(p)
    return found


def _kind(p: str, annotation: ast.expr | None, found: _Evidence) -> str | None:
    """One parameter's type: its string annotation, else what its use says, else its name."""
    low = p.lower()
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value
    if low.endswith(_INT_SUFFIXES) and p not in found.pointer_roots:
        return "i32"
    if "ptr" in low or p in found.pointer_roots and p not in found.ints | found.compared:  # use beats a name
        # index pointers: *i32, so a commit widening their values to int64 shows as a change
        return "*i32" if p in found.index_pointers else "*fp32"
    if p in found.floats and p not in found.ints or \
            any(f == low or low.endswith("_" + f) or low.startswith(f + "_") for f in _FLOAT_NAMES):
        return "fp32"
    if p in found.ints | found.compared or any(s in low for s in _INT_NAMES) or _INT_WORD_PREFIXES.search(low) \
            or len(p) == 1 and p.isupper() and p in "NMKLDHTBSCE":
        return "i32"
    return None


def infer_param_kinds(fn: ast.FunctionDef, constexprs: bool = False) -> dict[str, str | None]:
    """Signature types for runtime params (and constexprs too, when asked) from names and use;
    None where it cannot be told."""
    params = [a.arg for a in fn.args.args if constexprs or not is_constexpr(a.annotation)]
    nodes = list(ast.walk(fn))
    flow = _locals(params, nodes)
    loaded_from = _loaded_from(flow, nodes)
    found = _evidence(flow, nodes, loaded_from)
    annotations = {a.arg: a.annotation for a in fn.args.args}
    return {p: _kind(p, annotations.get(p), found) for p in params}
