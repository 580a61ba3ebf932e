"""What `tl.dot` says of the element types of the pointers its operands are loaded from
(discovery/params.py's evidence): its operands take one type, an integer dot's are 8-bit ints, an
operand cast to a dtype gives that type to the other. Pure AST work."""

from __future__ import annotations

import ast
from collections.abc import Collection

from ptxdiff.source.syntax import assigned_value, dotted_name, names_in, walk

# triton dtype names as a signature writes them
SIGNATURE_TYPES = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "float8e4nv": "fp8e4nv",
                   "float8e5": "fp8e5", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8",
                   "uint16": "u16", "uint32": "u32", "uint64": "u64", "int1": "i1"}


def cast_to(node: ast.expr, casts: dict[str, str]) -> str | None:
    """The signature type a value is cast to (`p.to(tl.float16)`, or a local assigned so), or None."""
    if isinstance(node, ast.Name):
        return casts.get(node.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast") \
            and node.args and dotted_name(node.args[0])[-1:] and dotted_name(node.args[0])[-1] in SIGNATURE_TYPES:
        return "*" + SIGNATURE_TYPES[dotted_name(node.args[0])[-1]]
    return None


def _int32(node: ast.expr | None, names: Collection[str] = ()) -> bool:
    """`tl.int32`, or a name that is (a constexpr whose default is `tl.int32`: `ACC_TYPE`)."""
    return node is not None and (dotted_name(node)[-1:] == ["int32"] or isinstance(node, ast.Name) and node.id in names)


def integer_dot_operands(nodes: list[ast.AST], params: set[str], loaded_from: dict[str, set[str]],
                         element_types: dict[str, str], index_pointers: set[str]) -> None:
    """An integer `tl.dot`, one that accumulates into `tl.zeros(..., dtype=tl.int32)` (`acc +=
    tl.dot(a, b)`, `acc = tl.dot(a, b, acc)`) or says `out_dtype=tl.int32`, takes 8-bit ints:
    the pointers its operands are loaded from are `*i8` (an int8 GEMM's accumulator under fp32
    guesses never compiled: the loop-carried value changed type)."""
    fn = next((n for n in nodes if isinstance(n, ast.FunctionDef)), None)
    args = fn.args.args if fn is not None else []
    ints = {a.arg for a, d in zip(args[len(args) - len(fn.args.defaults):], fn.args.defaults) if _int32(d)} \
        if fn is not None else set()
    accumulators: set[str] = set()
    for node in nodes:
        target, value = assigned_value(node)
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and \
                dotted_name(value.func)[-1:] in (["zeros"], ["full"]) and \
                (_int32(next((k.value for k in value.keywords if k.arg == "dtype"), None), ints)
                 or len(value.args) == 2 and _int32(value.args[1], ints) or len(value.args) == 3 and _int32(value.args[2], ints)):
            accumulators.add(target.id)
    dots: list[ast.Call] = []
    for node in nodes:
        target, value = (node.target, node.value) if isinstance(node, ast.AugAssign) else assigned_value(node)
        into = isinstance(target, ast.Name) and target.id in accumulators
        for call in (n for n in walk(value) if isinstance(n, ast.Call)) if value is not None else ():
            if dotted_name(call.func)[-1:] == ["dot"] and len(call.args) >= 2 and (
                    into or any(k.arg == "out_dtype" and _int32(k.value) for k in call.keywords)):
                dots.append(call)
    # a load through a block pointer (`tl.load(a_block_ptr)`): the param its `base=` names
    bases: dict[str, set[str]] = {}
    for node in nodes:
        target, value = assigned_value(node)
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and \
                dotted_name(value.func)[-1:] == ["make_block_ptr"]:
            base = next((k.value for k in value.keywords if k.arg == "base"), value.args[0] if value.args else None)
            bases.setdefault(target.id, set()).update(names_in(base) & params if base is not None else set())
    through: dict[str, set[str]] = {}
    for node in nodes:
        target, value = assigned_value(node)
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and dotted_name(value.func)[-1:] == ["load"] \
                and value.args and isinstance(value.args[0], ast.Name) and value.args[0].id in bases:
            through[target.id] = bases[value.args[0].id]
    for call in dots:
        for operand in call.args[:2]:
            pointers = {q for n in names_in(operand) for q in loaded_from.get(n, set()) | through.get(n, set())}
            for q in pointers - index_pointers:
                element_types.setdefault(q, "*i8")


def cast_dot_operands(nodes: list[ast.AST], loaded_from: dict[str, set[str]], element_types: dict[str, str],
                      index_pointers: set[str]) -> None:
    """An operand of `tl.dot` cast to a dtype (`p = p.to(tl.float16)`; `tl.dot(p, v)`) gives that
    type to the pointers the other operand is loaded from (`v = tl.load(V_ptrs)`, not values
    computed from loads): `tl.dot` takes operands of one type."""
    casts: dict[str, str] = {}
    loaded: set[str] = set()   # locals that are one load's values
    for node in nodes:
        target, value = assigned_value(node)
        if isinstance(target, ast.Name) and value is not None and (cast := cast_to(value, {})) is not None:
            casts[target.id] = cast
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and dotted_name(value.func)[-1:] == ["load"]:
            loaded.add(target.id)
    for node in nodes:
        if isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["dot"] and len(node.args) >= 2:
            for mine, theirs in (node.args[:2], node.args[1::-1]):
                cast = cast_to(theirs, casts)
                if cast is None:
                    continue
                pointers = {q for n in names_in(mine) & loaded for q in loaded_from.get(n, ())}
                for q in pointers - index_pointers:
                    element_types.setdefault(q, cast)


def loaded_dot_operands(nodes: list[ast.AST], loaded_from: dict[str, set[str]], element_types: dict[str, str]) -> None:
    """An operand of `tl.dot` that is one load's values as loaded (`b = tl.load(B + offs)`;
    `tl.dot(a, b)`) takes the other operand's known element type even where its values also
    index or meet integer operators elsewhere: `tl.dot` takes operands of one type, so a `*i32`
    beside an fp16 operand never compiles (issue 37)."""
    plain: dict[str, set[str]] = {}   # a local bound once, to one plain load -> its pointers
    bound: dict[str, int] = {}
    for node in nodes:
        target, value = assigned_value(node)
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            target = node.target
        for name in names_in(target) if target is not None and not isinstance(node, (ast.For,)) else ():
            bound[name] = bound.get(name, 0) + 1
        if isinstance(target, ast.Name) and isinstance(value, ast.Call) and dotted_name(value.func)[-1:] == ["load"]:
            plain[target.id] = loaded_from.get(target.id, set())
    plain = {n: q for n, q in plain.items() if bound.get(n) == 1}
    for node in nodes:
        if not (isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["dot"] and len(node.args) >= 2):
            continue
        operands = [{q for n in names_in(a) for q in loaded_from.get(n, ())} for a in node.args[:2]]
        for arg, theirs in ((node.args[0], operands[1]), (node.args[1], operands[0])):
            if not (isinstance(arg, ast.Name) and arg.id in plain):
                continue
            known = {element_types[q] for q in theirs if element_types.get(q, "*i1") not in ("*i1", "*i32")}
            if len(known) == 1:
                for q in plain[arg.id]:
                    if element_types.get(q) in (None, "*i32"):
                        element_types[q] = next(iter(known))


def handed_operand_types(nodes: list[ast.AST], params: set[str], loaded_from: dict[str, set[str]],
                         element_types: dict[str, str]) -> dict[str, str]:
    """A helper's params that its `tl.dot` takes as handed to it (values the kernel loaded, not
    pointers: `qkT = tl.dot(k, qT)` in a helper given `k`) -> the element type of the other operand,
    where what that is loaded from has one known type: the kernel's pointer `k` is loaded from
    takes it (FastVideo's `_attn_bwd_dkdv`: qT from a bf16 Q, so the kernel's K is bf16)."""
    out: dict[str, str] = {}
    for node in nodes:
        if not (isinstance(node, ast.Call) and dotted_name(node.func)[-1:] == ["dot"] and len(node.args) >= 2):
            continue
        for mine, other in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
            if isinstance(mine, ast.Name) and mine.id in params and mine.id not in loaded_from:
                known = {element_types[q] for n in names_in(other) for q in loaded_from.get(n, ())
                         if element_types.get(q, "*i1") not in ("*i1", "*i32")}
                if len(known) == 1:
                    out.setdefault(mine.id, known.pop())
    return out
