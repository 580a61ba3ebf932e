"""Signature types of a kernel's parameters, inferred from how the kernel uses them and their names.

Offline there is no launch to read types from, so each runtime parameter gets the type its use
implies: an address's pointer term is a pointer (`*i32` when the values loaded through it are used
as integers: a commit widening them to int64 then shows), a loop bound or a comparison an
integer, a scalar added to loaded values a float. Names decide only where use says nothing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection
from dataclasses import dataclass, field

from ptxdiff.discovery.dot_operands import (
    cast_dot_operands,
    handed_operand_types,
    integer_dot_operands,
    loaded_dot_operands,
)
from ptxdiff.discovery.hints import INTEGER_ONLY, Hint
from ptxdiff.discovery.stated_types import stated_element_types
from ptxdiff.source.syntax import (
    asserted_dtypes,
    assigned_value,
    dotted_name,
    is_constexpr,
    names_in,
    signature_annotation,
    walk,
)
from ptxdiff.strenum import StrEnum


class ParamMark(StrEnum):
    """A parameter kind that names no triton type but tells the spec planner what to compile."""

    CONSTEXPR1 = "constexpr1"   # 1 (a descriptor's innermost stride, or what a launch site passes): triton's constant 1


@dataclass(frozen=True)
class Param:
    """One parameter of a kernel and what its source says of it (a guess, where it has no value)."""

    name: str
    constexpr: bool
    kind: str | None  # inferred signature type for runtime params ("*fp32", "i32", "fp32"), or None
    hint: Hint | None = None   # a constexpr with no default: the guess its use in the kernel suggests
    optional: bool = False     # a runtime param the kernel tests against None
    written: bool = False      # a pointer the kernel only stores to: it stays fp32 in the bf16 family (plan.py)
    converted: bool = False    # a scalar the kernel converts as it is (`eps.to(tl.float32)`): compiled as fp64 too


_LOAD_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
               "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor"}
# triton 3.3's device-side TMA calls: their first argument (`desc_ptr=`) is the address of a
# descriptor, a pointer (a workspace typed i32 crashes triton's inliner)
_DESCRIPTOR_CALLS = {"experimental_device_tensormap_create1d", "experimental_device_tensormap_create2d",
                     "experimental_tensormap_fenceproxy_acquire", "_experimental_descriptor_load",
                     "_experimental_descriptor_store"}
_SEEDED = {"rand", "randn", "randint", "randint4x", "rand4x", "randn4x", "philox"}  # the first argument is a seed
_INT_CALLS = {"range", "static_range", "cdiv", "multiple_of", "max_contiguous", "min", "max"}  # min/max: Python's, on scalars
_FLOAT_NAMES = ("eps", "epsilon", "scale", "alpha", "beta", "slope", "temperature", "softcap",
                "momentum", "dropout_p", "p_drop", "theta", "lambd", "margin", "label_smoothing")
_INT_NAMES = ("stride", "_size", "size_", "_len", "numel", "n_elements", "_dim",
              "offset", "batch", "seq", "_idx", "ignore_index", "n_cols", "n_rows", "seed")
_INT_WORD_PREFIXES = re.compile(r"(?:^|_)(?:n|num|start)_|(?:^|_)start$")  # n_rows, num_heads, start_m; not non_/mean_
_DIMENSIONS = "NMKLDHTBSCE"   # one-letter dimension names
_INT_SUFFIXES = ("stride",)  # Mean_ptr_row_stride, Scale_row_stride: an int whatever the name starts with
# operators whose operands are integers: pointer evidence here, and the device-function harness
INTEGER_OPS = (*INTEGER_ONLY, ast.Mod)


def _pointer_terms(expr: ast.expr) -> set[str]:
    """Names that are additive terms of an address expression (`X + i * s + offs` -> X, offs)."""
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, (ast.Add, ast.Sub)):
        return _pointer_terms(expr.left) | (_pointer_terms(expr.right) if isinstance(expr.op, ast.Add) else set())
    if isinstance(expr, ast.Name):
        return {expr.id}
    if isinstance(expr, ast.Subscript):
        return _pointer_terms(expr.value)
    if isinstance(expr, ast.Call) and _selects(expr):   # `tl.where(c, A1, tl.where(d, A2, A3))`: between pointers
        return {t for a in expr.args[1:] for t in _pointer_terms(a)}
    return set()


def _selects(expr: ast.expr) -> bool:
    """A `tl.where` whose branches are names or such selects themselves."""
    return isinstance(expr, ast.Call) and dotted_name(expr.func)[-1:] == ["where"] and len(expr.args) == 3 and \
        all(isinstance(a, ast.Name) or _selects(a) for a in expr.args[1:])


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


@dataclass
class _Locals:
    """How a kernel's locals relate to its params (assignments only, read once)."""

    params: list[str]
    derived: dict[str, set[str]]  # local -> the additive terms of its value (`p = X + ...`): pointers it may hold
    uses: dict[str, set[str]]     # local -> every name its value reads
    aliases: dict[str, set[str]]  # local -> each name assigned to it whole (`do = DO`, then `do = SLIDE_DO`)

    def roots(self, address: ast.expr) -> tuple[set[str], set[str]]:
        """Every additive term of an address (through locals), and the `*ptr*` params among them."""
        todo, seen = list(_pointer_terms(address)), set()
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(self.derived.get(n, ()))
        return seen, {n for n in seen if n in self.params and "ptr" in n.lower()}


def _whole(value: ast.expr) -> set[str]:
    """The names a value is, whole: `DO`; either of `SlidingOut if sliding else Out`."""
    if isinstance(value, ast.Name):
        return {value.id}
    if isinstance(value, ast.IfExp):
        return _whole(value.body) | _whole(value.orelse)
    return set()


def _locals(params: list[str], nodes: list[ast.AST]) -> _Locals:
    derived: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}
    aliases: dict[str, set[str]] = {}
    for node in nodes:
        target, value = assigned_value(node)
        if isinstance(target, ast.Name) and value is not None:
            derived.setdefault(target.id, set()).update(_pointer_terms(value))
            uses.setdefault(target.id, set()).update(names_in(value))
            aliases.setdefault(target.id, set()).update(_whole(value))
        elif isinstance(target, (ast.Tuple, ast.List)) and value is not None:  # `lo, hi = tl.split(out)`
            for name in names_in(target):
                uses.setdefault(name, set()).update(names_in(value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):  # `k_len += nxt - cur`
            uses.setdefault(node.target.id, set()).update(names_in(node.value))
    return _Locals(params, derived, uses, aliases)


def _loads_in(value: ast.expr) -> list[ast.Call]:
    """The loads whose results a value is made of: not those that only compute an address or a
    mask inside another call (`tl.load(X + tl.load(Idx))` is made of X's values, not Idx's)."""
    value = _uncast(value)
    if isinstance(value, ast.Call):
        return [value] if dotted_name(value.func)[-1:] == ["load"] and value.args else \
            [c for a in value.args for c in _loads_in(a)] if dotted_name(value.func)[-1:] in (
                ["minimum"], ["maximum"], ["where"], ["abs"]) else []
    if isinstance(value, ast.BinOp):
        return _loads_in(value.left) + _loads_in(value.right)
    if isinstance(value, ast.IfExp):
        return _loads_in(value.body) + _loads_in(value.orelse)
    if isinstance(value, ast.UnaryOp):
        return _loads_in(value.operand)
    return []


def _loaded_from(flow: _Locals, nodes: list[ast.AST]) -> dict[str, set[str]]:
    """Locals holding values loaded from a param pointer (`y = tl.load(Y_ptr + i).to(tl.int64)`), and
    locals computed from them (`row_offs = row_start + m_offs`): local -> the pointers loaded from."""
    params = flow.params
    loaded_from: dict[str, set[str]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            # `x = tl.load(p).to(...) if HAS_X else 0`, `n = tl.load(Seqlen + b) - tl.load(Start + b)`
            for value in _loads_in(node.value):
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
    descriptor_unit_strides: set[str] = field(default_factory=set)  # a descriptor's innermost stride
    element_types: dict[str, str] = field(default_factory=dict)  # `P.dtype.element_ty == tl.float16`: "*fp16"
    indexed: dict[str, int] = field(default_factory=dict)  # `stride_x[2]`: a tuple param, its largest index

    def address(self, arg: ast.expr, flow: _Locals, loaded_from: dict[str, set[str]]) -> set[str]:
        """The address a load, store or atomic is given: its pointer term, and the offsets beside it
        (returned: the names the pointer may be, through locals)."""
        seen, named = flow.roots(arg)
        inner = names_in(arg)
        # a loaded value is never the pointer term: `X + tl.load(Y)` offsets X by ints
        offsets = {n for n in seen | inner | set().union(*(flow.uses.get(t, ()) for t in seen))
                   if n in loaded_from}
        self.index_pointers.update(*(loaded_from[n] for n in offsets))
        seen -= offsets
        # an address has one pointer term: next to a `*ptr*` param the others are offsets, and
        # so are dimension names (`ROWSCALE + M + row`)
        candidates = seen & set(flow.params)
        if not named and len(candidates) > 1:   # and so are names that say int (`X + stride_x`)
            # a word that says int first, then a dimension's letter: in `M + offs_m`, offs_m from
            # `start_m + tl.arange(...)`, start_m is the offset and M (a row statistic) the pointer
            for sized in ({n for n in candidates if int_named(n) and len(n) > 1},
                          {n for n in candidates if len(n) == 1 and n in _DIMENSIONS}):
                if sized and sized != candidates:
                    self.ints |= sized
                    seen -= sized
                    candidates -= sized
        self.pointer_roots |= named or seen
        self.ints |= seen - named if named else set()
        self.ints |= inner - _pointer_terms(arg)
        return named or seen

    def comparison(self, node: ast.Compare) -> None:
        # `X is None` / `X is not None` says nothing of X's type (an optional pointer, often)
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return
        names = _names_outside_calls(node)  # not MASK in `tl.load(MASK) == 0`
        if any(isinstance(c, ast.Constant) and isinstance(c.value, float) for c in (node.left, *node.comparators)):
            self.floats |= names  # `if DELTA != 0.0`: a float scalar
        else:
            self.compared |= names


# `tl.dot_scaled` formats -> the element type of an operand in that format (e2m1: two per byte)
SCALED_FORMATS = {"e4m3": "*fp8e4nv", "e5m2": "*fp8e5", "e2m1": "*u8", "bf16": "*bf16", "fp16": "*fp16"}

def _unit_strides(nodes: list[ast.AST], params: list[str]) -> set[str]:
    """Params given as the innermost stride of `tl.make_tensor_descriptor`: a tensor descriptor
    needs a contiguous last dimension, so every real launch passes 1 there, and triton makes a 1
    the constant 1 (compiled as a runtime i32 instead, the descriptor does not build)."""
    found: set[str] = set()
    for node in nodes:
        if not (isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["make_tensor_descriptor"]):
            continue
        strides = next((k.value for k in node.keywords if k.arg == "strides"),
                       node.args[2] if len(node.args) > 2 else None)
        if isinstance(strides, (ast.List, ast.Tuple)) and strides.elts and isinstance(strides.elts[-1], ast.Name) \
                and strides.elts[-1].id in params:
            found.add(strides.elts[-1].id)
    return found


def _evidence(flow: _Locals, nodes: list[ast.AST], loaded_from: dict[str, set[str]]) -> _Evidence:
    found = _Evidence()
    with_values: list[tuple[str, str]] = []  # (param, local) meeting in +, -, *, /
    # a spin lock, `atomic_cas(lock, 0, 1)`: triton requires the pointer's element type to be the
    # compared value's, an int's
    locks: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            left, right = _uncast(node.left), _uncast(node.right)
            for a, b in ((left, right), (right, left)):
                if isinstance(a, ast.Name) and a.id in flow.params and isinstance(b, ast.Name):
                    with_values.append((a.id, b.id))
        if isinstance(node, ast.Call):
            chain = dotted_name(node.func)
            name = chain[-1] if chain else ""
            if name in _LOAD_CALLS or name in _DESCRIPTOR_CALLS:
                arg = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("pointer", "base", "desc_ptr")), None)
                if arg is not None:
                    roots = found.address(arg, flow, loaded_from)
                    if name == "atomic_cas" and len(node.args) > 1 and isinstance(cmp := node.args[1], ast.Constant) \
                            and type(cmp.value) is int:
                        locks |= roots & set(flow.params)
            if name in _INT_CALLS:
                found.ints |= {n for a in node.args for n in names_in(a)}
        elif isinstance(node, ast.Compare):
            found.comparison(node)
    # values used in //, %, shifts or bit operations, as loop bounds or as random seeds are
    # integers: the pointer they come from holds ints (`for i in range(0, tl.load(Seqlen + b), BLOCK)`)
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, INTEGER_OPS):
            sides: list[ast.AST] = [node.left, node.right]
        elif isinstance(node, ast.Call) and dotted_name(node.func)[-1:] in (["range"], ["static_range"]):
            sides = list(node.args)
        elif isinstance(node, ast.Call) and dotted_name(node.func)[-1:] and dotted_name(node.func)[-1] in _SEEDED \
                and node.args:
            sides = [node.args[0]]
        else:
            continue
        for side in sides:
            for name in _names_outside_calls(side):
                if name in loaded_from:
                    found.index_pointers.update(loaded_from[name])
    found.descriptor_unit_strides = _unit_strides(nodes, flow.params)
    found.element_types = stated_element_types(nodes, flow.params)
    for lock in sorted(locks):
        found.element_types.setdefault(lock, "*i32")
    integer_dot_operands(nodes, set(flow.params), loaded_from, found.element_types, found.index_pointers)
    # `tl.dot(a, b)` takes operands of one type: a pointer whose element type is known gives it
    # to the pointer the other operand is loaded from (not to one whose values are shifted or
    # masked: packed ints that the kernel dequantizes). A boolean mask is never a dot operand: an
    # operand computed with a mask's values (`qk + tl.where(mask_block, 0, -inf)`) is not typed by it
    for node in nodes:
        if isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["dot"] and len(node.args) >= 2:
            operands = [{q for n in names_in(a) for q in loaded_from.get(n, ())} for a in node.args[:2]]
            for mine, theirs in (operands, operands[::-1]):
                known = {found.element_types[q] for q in theirs if found.element_types.get(q, "*i1") != "*i1"}
                if len(known) == 1:
                    for q in mine - found.index_pointers:
                        found.element_types.setdefault(q, next(iter(known)))
    _float_dot_operands(nodes, loaded_from, found)
    loaded_dot_operands(nodes, loaded_from, found.element_types)
    cast_dot_operands(nodes, loaded_from, found.element_types, found.index_pointers)
    # `tl.load(ptrs + g).to(tl.pointer_type(dtype))`: the values are addresses, 64-bit ints
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "to" and \
                node.args and dotted_name(getattr(node.args[0], "func", node.args[0]))[-1:] == ["pointer_type"]:
            for load in _loads_in(node.func.value):
                found.element_types.update(dict.fromkeys(flow.roots(load.args[0])[0] & set(flow.params), "*i64"))
    # `tl.cast(p, tl.pointer_type(T))`, `p.to(tl.pointer_type(T))` of a parameter used as no pointer
    # otherwise: an address (`x.data_ptr()`), which triton's int-to-pointer cast takes as 64-bit only
    for node in nodes:
        if (cast := _pointer_cast_of(node)) in flow.params and cast not in found.pointer_roots:
            found.element_types.setdefault(cast, "i64")
    # `tl.dot_scaled(a, a_scale, "e4m3", b, b_scale, fmt, ...)`: the scales are e8m0 bytes, an
    # operand given a literal format is that type
    for node in nodes:
        if isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["dot_scaled"]:
            args = dict(zip(("lhs", "lhs_scale", "lhs_format", "rhs", "rhs_scale", "rhs_format"), node.args))
            args.update({k.arg: k.value for k in node.keywords if k.arg})
            for role in ("lhs", "rhs"):
                fmt = args.get(f"{role}_format")
                kind = SCALED_FORMATS.get(fmt.value) if isinstance(fmt, ast.Constant) and isinstance(
                    fmt.value, str) else None
                for part, typed in ((f"{role}_scale", "*u8"), (role, kind)):
                    if part in args and typed:
                        for q in {q for n in names_in(args[part]) for q in loaded_from.get(n, ())}:
                            found.element_types.setdefault(q, typed)
    for node in nodes:   # a tuple argument (`x.stride()` passed whole) read by constant index
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in flow.params \
                and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int and node.slice.value >= 0:
            found.indexed[node.value.id] = max(found.indexed.get(node.value.id, 0), node.slice.value)
    # a scalar added to or multiplying values loaded from memory (not indices) is a float: `w + offset`
    for p, local in with_values:   # but values times a stride are offsets (`start * stride_kn`)
        if STRIDE_WORD.search(p.lower()) and local in loaded_from:
            found.index_pointers |= loaded_from[local]
    for p, local in with_values:
        if local in loaded_from and loaded_from[local] and not loaded_from[local] & found.index_pointers:
            found.floats.add(p)
    return found


def _float_dot_operands(nodes: list[ast.AST], loaded_from: dict[str, set[str]], found: _Evidence) -> None:
    """A pointer named for a float (`scales`, `w_scale_ptr`) whose values feed an operand of a
    float `tl.dot` (the other operand loaded from a pointer that is not an index) is a float
    pointer of the other operand's type, though the operand is also made of ints
    (`b = ((b >> 4) - zeros) * scales`): typed `*i32`, the dot's operands would differ."""
    for node in nodes:
        if not (isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["dot"] and len(node.args) >= 2):
            continue
        operands = [{q for n in names_in(a) for q in loaded_from.get(n, ())} for a in node.args[:2]]
        for mine, theirs in (operands, operands[::-1]):
            floats = theirs - found.index_pointers
            if not floats:
                continue
            known = {found.element_types[q] for q in floats if q in found.element_types}
            for q in mine:
                if FLOAT_POINTER.search(q.lower()):
                    found.element_types.setdefault(q, next(iter(known)) if len(known) == 1 else "*fp32")


# a name that says stride (`stride_kn`, `kv_stride`): an int, whatever values it meets
STRIDE_WORD = re.compile(r"(?:^|_)stride(?:_|s?$)")
# a pointer named for integer contents (`cu_seqlens_k`, `offsets`, `block_indices`, `token_ids`)
INT_POINTER = re.compile(r"seq_?lens?(?:_|$)|(?:^|_)(?:offsets|indices|idx|ids|lengths|counts)(?:_|$)")
# a pointer named for a float word (`scales`, `a_scale_ptr`, `Alpha`)
FLOAT_POINTER = re.compile(r"(?:^|_)(?:" + "|".join(_FLOAT_NAMES) + r")s?(?:_|$)")


def int_named(p: str) -> bool:
    """A name that says integer: a size, count, stride, offset (`n_rows`, `seq_len`, `M`)."""
    low = p.lower()
    return any(s in low for s in _INT_NAMES) or bool(_INT_WORD_PREFIXES.search(low)) \
        or len(p) == 1 and p in _DIMENSIONS


def _pointer_cast_of(node: ast.AST) -> str | None:
    """The name cast to a pointer type by `tl.cast(name, tl.pointer_type(T))` or
    `name.to(tl.pointer_type(T))`, else None."""
    if not isinstance(node, ast.Call):
        return None
    if dotted_name(node.func)[-1:] == ["cast"] and len(node.args) == 2:
        value, to = node.args
    elif isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args:
        value, to = node.func.value, node.args[0]
    else:
        return None
    typed = dotted_name(to.func)[-1:] == ["pointer_type"] if isinstance(to, ast.Call) else False
    return value.id if typed and isinstance(value, ast.Name) else None


def _kind(p: str, annotation: ast.expr | None, found: _Evidence) -> str | None:
    """One parameter's type: its string or `tl.pointer_type(...)` annotation, else what its use says, else its name."""
    low = p.lower()
    if (typed := signature_annotation(annotation)) is not None:
        return typed
    if p in found.descriptor_unit_strides:
        return ParamMark.CONSTEXPR1
    if p in found.element_types:
        return found.element_types[p]
    if p in found.indexed and p not in found.pointer_roots:
        return "(" + ",".join(["i32"] * (found.indexed[p] + 1)) + ")"
    if (low.endswith(_INT_SUFFIXES) or STRIDE_WORD.search(low)) and p not in found.pointer_roots:
        return "i32"
    if "ptr" in low or p in found.pointer_roots and p not in found.ints | found.compared:  # use beats a name
        # index pointers: *i32, so a commit widening their values to int64 shows as a change
        return "*i32" if p in found.index_pointers or INT_POINTER.search(low) else "*fp32"
    if p in found.floats and p not in found.ints or not int_named(p) and \
            any(f == low or low.endswith("_" + f) or low.startswith(f + "_") for f in _FLOAT_NAMES):
        return "fp32"   # a float word names a float, unless an int word is there too (`beta_out_stride_0`)
    if p in found.ints | found.compared or int_named(p):
        return "i32"
    return None


def infer_param_kinds(fn: ast.FunctionDef, constexprs: bool = False) -> dict[str, str | None]:
    """Signature types for runtime params (and constexprs too, when asked) from names and use;
    None where it cannot be told."""
    params = [a.arg for a in fn.args.args if constexprs or not is_constexpr(a.annotation)]
    nodes = list(walk(fn))
    flow = _locals(params, nodes)
    loaded_from = _loaded_from(flow, nodes)
    found = _evidence(flow, nodes, loaded_from)
    for p, (what, short) in asserted_dtypes(fn).items():   # what the kernel's static_assert demands
        if p in params and what == "element":
            found.element_types[p] = "*" + short
    annotations = {a.arg: a.annotation for a in fn.args.args}
    return {p: _kind(p, annotations.get(p), found) for p in params}


def kinds_through_helpers(fn: ast.FunctionDef, kinds: dict[str, str | None],
                          helpers: dict[str, ast.FunctionDef], depth: int = 2) -> dict[str, str | None]:
    """`kinds` with what the jit helpers `fn` passes its params to say of them: a param the kernel
    only hands on is a pointer when a helper loads from it, and a pointer the helper gives a
    type by use (`*i32`: its values index, seed or bound loops) takes that type over the
    default `*fp32`; a pointer the kernel loads values from and hands the values to a helper that
    dots them with a typed operand takes that type. What the kernel's own use says otherwise stands."""
    out = dict(kinds)
    said: dict[str, dict[str, str | None]] = {}   # per helper, however often it is called
    handed: dict[str, dict[str, str]] = {}
    flow = _locals(list(out), list(walk(fn)))
    loaded = _loaded_from(flow, list(walk(fn)))
    for call in (n for n in walk(fn) if isinstance(n, ast.Call)):
        helper = helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if helper is None or helper is fn or depth <= 0:
            continue
        if helper.name not in said:
            said[helper.name] = kinds_through_helpers(helper, infer_param_kinds(helper), helpers, depth - 1)
            handed[helper.name] = _handed(helper)
        theirs = said[helper.name]
        params = [a.arg for a in helper.args.args]
        # a name, or the base of an address passed (`lock_ptr + pid % 4`)
        passed = [(b, params[i]) for i, a in enumerate(call.args) if i < len(params) and (b := _address_base(a))]
        passed += [(b, k.arg) for k in call.keywords if k.arg and (b := _address_base(k.value))]
        for local, their in passed:
            held = loaded.get(local, set()) & out.keys()
            if their in handed[helper.name] and len(held) == 1 and out[next(iter(held))] in (None, "*fp32"):
                out[held.pop()] = handed[helper.name][their]
            kind = theirs.get(their)
            if not kind or not kind.startswith("*"):
                continue
            for mine in _params_held(local, out, flow):
                own = out[mine]
                if own is None or not own.startswith("*") or own == "*fp32" and kind != "*fp32":
                    out[mine] = kind
    return out


def _address_base(address: ast.expr) -> str | None:
    """The name an address starts from: `Locks` in `Locks + pid * 2 + 1`, `X` in `X`."""
    while isinstance(address, ast.BinOp) and isinstance(address.op, (ast.Add, ast.Sub)):
        address = address.left
    return address.id if isinstance(address, ast.Name) else None


def _handed(helper: ast.FunctionDef) -> dict[str, str]:
    """dot_operands.handed_operand_types of a helper."""
    params = [a.arg for a in helper.args.args if not is_constexpr(a.annotation)]
    nodes = list(walk(helper))
    flow = _locals(params, nodes)
    loaded = _loaded_from(flow, nodes)
    return handed_operand_types(nodes, set(params), loaded, _evidence(flow, nodes, loaded).element_types)


def _params_held(local: str, params: Collection[str], flow: _Locals) -> list[str]:
    """The params a name the kernel passes on may hold: itself; each param a local is assigned
    whole, one branch or another (`do = DO` / `do = SLIDE_DO`, then `do += off`: a pointer either
    way); else the one param among a local's address terms (`K_ptrs = K + offs`), or the one
    not named for an int."""
    if local in params:
        return [local]
    whole = sorted(n for n in flow.aliases.get(local, ()) if n in params)
    if whole:
        return whole
    terms = [n for n in flow.roots(ast.Name(id=local))[0] if n in params]
    terms = [n for n in terms if not int_named(n)] if len(terms) > 1 else terms
    return terms if len(terms) == 1 else []


def addressed(fn: ast.FunctionDef) -> frozenset[str]:
    """Runtime params a load, store or atomic takes as its address's pointer term (through the
    kernel's locals: `tl.load(dloss_ptr + row * stride)`) and no use says are ints: pointers
    whatever a guess says, so a type search never tries them as scalars (a scalar there fails
    further down the kernel, which is no nearer to compiling)."""
    params = [a.arg for a in fn.args.args if not is_constexpr(a.annotation)]
    nodes = list(walk(fn))
    flow = _locals(params, nodes)
    found = _evidence(flow, nodes, _loaded_from(flow, nodes))
    return frozenset(p for p in params if p in found.pointer_roots and p not in found.ints | found.compared)


def params_behind(fn: ast.FunctionDef, names: set[str], among: Collection[str] | None = None) -> list[str]:
    """The kernel's runtime params (or those of `among`) that the values of `names` are computed
    from (through its assignments), nearest first: the suspects when a line of the kernel fails
    on a type (or on a shape)."""
    params = [a.arg for a in fn.args.args if (a.arg in among if among is not None else not is_constexpr(a.annotation))]
    flow = _locals(params, list(walk(fn)))
    order: list[str] = []
    todo, seen = sorted(names), set(names)
    while todo:
        name = todo.pop(0)
        if name in params:
            order.append(name)
        for n in sorted(flow.uses.get(name, set()) | flow.derived.get(name, set())):
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return order


_WRITES = {"store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg", "atomic_and", "atomic_or",
           "atomic_xor"}


def written_only(fn: ast.FunctionDef) -> frozenset[str]:
    """Pointer params the kernel stores to and never loads from (`tl.store(Out + offs, y)`): an
    output, whose element type a real launch often keeps at fp32 while the inputs are 16-bit
    (the bf16 family leaves it so, and a conversion dropped before the store then shows)."""
    params = [a.arg for a in fn.args.args if not is_constexpr(a.annotation)]
    nodes = list(walk(fn))
    flow = _locals(params, nodes)
    read: set[str] = set()
    written: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        name = dotted_name(node.func)[-1:]
        arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pointer"), None)
        if arg is None or not name:
            continue
        roots = flow.roots(arg)[0] & set(params)
        if name[0] in _WRITES:
            written |= roots
        elif name[0] in _LOAD_CALLS:
            read |= roots
        elif name[0] not in _INT_CALLS:   # handed to a helper: it may load from it
            read |= {n for a in node.args for n in flow.roots(a)[0] & set(params)}
    return frozenset(written - read)
