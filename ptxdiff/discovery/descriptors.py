"""Runtime parameters that are host tensor descriptors, as the signature types triton reads
(`tensordesc<fp32[{BLOCK_M}, {BLOCK_K}]>`; Gluon's with their shared layout): from the kernel's
own use of them, the host code that makes them at the launch (`TensorDescriptor.from_tensor(c,
[BM, BN // 2])`), the autotune `pre_hook` that shapes them and what its `static_assert`s demand.

A type is a template filled per spec (`fill`): `{NAME}` is a constexpr's value, `{NAME//2}` and
`{NAME*2}` a multiple of it; `FLAG ? A : B` is A where the constexpr FLAG is true, else B (a
pre_hook's `if EPILOGUE_SUBTILE: nargs["c_desc"].block_shape = [BM, BN // 2]`)."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ptxdiff.discovery.callsites import HostFunction, arguments, assignments
from ptxdiff.discovery.hints import MANY_BLOCKS
from ptxdiff.source.syntax import asserted_dtypes, dotted_name, is_constexpr, last_name, names_in, walk

DESCRIPTOR_METHODS = {"load", "store", "atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or",
                      "atomic_xor", "gather", "scatter"}


def descriptor_types(fn: ast.FunctionDef, tree: ast.Module,
                     sites: Sequence[tuple[ast.Call, HostFunction | None]] = ()) -> dict[str, str]:
    """Runtime params that are host tensor descriptors (`desc.load([i, j])` in the kernel), as
    signature types `tensordesc<fp32[{BLOCK_M}, {BLOCK_K}]>`: the block shape comes from the
    autotune `pre_hook` that sets it (`nargs["desc_x"].block_shape = [BLOCK_M, BLOCK_K]`), else
    from the launch `sites` that make it, else one guessed tile per dimension from the kernel's
    use; `{NAME}` is a constexpr filled in per spec."""
    runtime = {a.arg for a in fn.args.args if not is_constexpr(a.annotation)}
    constexprs = {a.arg for a in fn.args.args if is_constexpr(a.annotation)}
    offsets: dict[str, list[ast.expr]] = {}
    for node in walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in DESCRIPTOR_METHODS and isinstance(node.func.value, ast.Name) and \
                node.func.value.id in runtime and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
            offsets.setdefault(node.func.value.id, node.args[0].elts)
    out = gluon_descriptors(fn, runtime)
    if not offsets:
        return out
    shapes = {**launch_shapes(sites, [a.arg for a in fn.args.args], frozenset(constexprs)),
              **_pre_hook_shapes(fn, tree, frozenset(constexprs))}
    steps = _block_steps(fn, constexprs)
    for name, elts in offsets.items():
        dims = shapes.get(name) or ", ".join(steps.get(ast.dump(e)) or ("1" if i < len(elts) - 2 else str(MANY_BLOCKS))
                                             for i, e in enumerate(elts))
        out.setdefault(name, f"tensordesc<fp32[{dims}]>")
    return out


# Gluon's TMA copies, whose first argument is a host tensor descriptor
TMA_COPIES = {"async_copy_global_to_shared", "async_copy_shared_to_global", "async_load", "async_store",
              "async_gather", "async_scatter"}
# the layout a Gluon descriptor's type names, filled in by the worker for its triton
# (`NVMMASharedLayout.get_default_for(block shape, dtype)`, as a host's `TensorDescriptor` takes it)
DEFAULT_SHARED = "nvmma"
GLUON_TILE = 64


def gluon_descriptors(fn: ast.FunctionDef, runtime: set[str]) -> dict[str, str]:
    """Runtime params that are Gluon's host TMA descriptors (the first argument of
    `tma.async_copy_global_to_shared(desc, ...)`, or read for `desc.block_type`/`desc.layout`), as
    `tensordesc<fp8e4nv[64, 64],nvmma>`: the element type the kernel's `static_assert(desc.dtype ==
    gl.float8e4nv)` names (else fp32), one guessed tile of GLUON_TILE per dimension (as many as
    `desc.block_type.shape[i]` reads, two at least), and the default NVMMA layout for them."""
    rank: dict[str, int] = {}
    for node in walk(fn):
        if isinstance(node, ast.Call) and last_name(node.func) in TMA_COPIES and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in runtime:
            rank.setdefault(node.args[0].id, 2)
        chain = dotted_name(node) if isinstance(node, ast.Attribute) else []
        if len(chain) >= 2 and chain[0] in runtime and chain[1] in ("block_type", "layout"):
            rank.setdefault(chain[0], 2)
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and type(node.slice.value) is int and dotted_name(node.value)[1:] == ["block_type", "shape"] \
                and (name := dotted_name(node.value)[0]) in runtime:
            rank[name] = max(rank.get(name, 2), node.slice.value + 1)
    asserted = asserted_dtypes(fn)
    shapes = _asserted_shapes(fn, set(rank))
    return {name: f"tensordesc<{asserted[name][1] if name in asserted else 'fp32'}"
                  f"[{', '.join(shapes.get(name) or [str(GLUON_TILE)] * n)}],{DEFAULT_SHARED}>"
            for name, n in rank.items()}


def _asserted_shapes(fn: ast.FunctionDef, descriptors: set[str]) -> dict[str, list[str]]:
    """The block shape `static_assert(desc.block_type.shape == [1, BLOCK_M])` demands: a literal
    size as it is, a constexpr parameter as `{NAME}` (filled in per spec), any other name the
    guessed tile (the kernel's own sizes read off another descriptor's guessed block)."""
    constexprs = {a.arg for a in fn.args.args if is_constexpr(a.annotation)}
    found: dict[str, list[str]] = {}
    for node in walk(fn):
        if not (isinstance(node, ast.Call) and last_name(node.func) == "static_assert" and node.args):
            continue
        test = node.args[0]
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and isinstance(test.comparators[0], ast.List)):
            continue
        chain = dotted_name(test.left)
        if len(chain) != 3 or chain[1:] != ["block_type", "shape"] or chain[0] not in descriptors:
            continue
        dims = []
        for e in test.comparators[0].elts:
            if isinstance(e, ast.Constant) and type(e.value) is int:
                dims.append(str(e.value))
            elif isinstance(e, ast.Name):
                dims.append(f"{{{e.id}}}" if e.id in constexprs else str(GLUON_TILE))
            else:
                break
        else:
            found.setdefault(chain[0], dims)
    return found


def _block_steps(fn: ast.FunctionDef, constexprs: set[str]) -> dict[str, str]:
    """Offset expressions of a descriptor access whose stride is one constexpr: `pid * BLOCK_M`
    (directly or through one local), a loop `for k in range(0, K, BLOCK_K)`: dump -> "{BLOCK_M}"."""
    assigned: dict[str, ast.expr] = {}
    for node in walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned[node.targets[0].id] = node.value
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Call) \
                and last_name(node.iter.func) in ("range", "static_range") and len(node.iter.args) == 3:
            assigned[node.target.id] = node.iter.args[2]
    out: dict[str, str] = {}
    for node in walk(fn):
        if not isinstance(node, ast.expr):
            continue
        exprs = [node] + ([assigned[node.id]] if isinstance(node, ast.Name) and node.id in assigned else [])
        found = {n for e in exprs for n in names_in(e) & constexprs}
        if len(found) == 1:
            out[ast.dump(node)] = "{" + found.pop() + "}"
    return out


def _pre_hook_shapes(fn: ast.FunctionDef, tree: ast.Module, constexprs: frozenset[str]) -> dict[str, str]:
    """`nargs["desc_x"].block_shape = [...]` in the functions the autotune configs name as pre_hook:
    the dims of each descriptor, `A` or `FLAG ? A : B` where an `if` of a constexpr picks one."""
    hooks = {k.value.id for dec in fn.decorator_list for node in walk(dec) if isinstance(node, ast.Call)
             for k in node.keywords if k.arg == "pre_hook" and isinstance(k.value, ast.Name)}
    shapes: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef) and stmt.name in hooks and stmt.args.args:
            shapes.update(_hook_block(stmt.body, _Hook(stmt.args.args[0].arg, constexprs, {}), {}))
    return {key: shape for key, shape in shapes.items() if not key.startswith(_LOCAL)}


_LOCAL = "local:"   # a shape held in a local of the hook (no param's name has a colon)


def launch_shapes(sites: Sequence[tuple[ast.Call, HostFunction | None]], params: list[str],
                  constexprs: frozenset[str]) -> dict[str, str]:
    """Block shapes a launch site gives its descriptors: the argument is a local its function makes
    once, `TensorDescriptor.from_tensor(c, [BM, BN // 2])` or `TensorDescriptor(c, shape, strides,
    [BM, BN // 2])`, whose dims are literals or locals the same launch passes for constexprs
    (`BLOCK_SIZE_N=BN`: "{BLOCK_SIZE_N//2}"); a local made in each branch, or another descriptor
    in one (`out_desc = aux_desc`), where each says the same. Kept where every site agrees."""
    said: dict[str, set[str | None]] = {}
    for call, host in sites:
        passed = arguments(call, params)
        aliases = {v.id: p for p, v in passed.items() if p in constexprs and isinstance(v, ast.Name)}
        for p, v in passed.items():
            if p not in constexprs and isinstance(v, ast.Name):
                said.setdefault(p, set()).add(_made_shape(host, v.id, aliases))
    return {p: shape for p, shapes in said.items() if len(shapes) == 1 and (shape := next(iter(shapes)))}


def _made_shape(host: HostFunction | None, local: str, aliases: dict[str, str], depth: int = 0) -> str | None:
    """The block shape of the descriptor a host local holds, as template dims; None if unknown."""
    made = assignments(host, local)
    shapes: set[str | None] = set()
    for value in made:
        if isinstance(value, ast.Name) and depth < 4:
            shapes.add(_made_shape(host, value.id, aliases, depth + 1))
            continue
        block = _block_shape(value) if isinstance(value, ast.Call) else None
        dims = [_hook_dim(e, "", aliases) for e in block or ()]
        shapes.add(", ".join(d for d in dims if d) if block and all(dims) else None)
    return shapes.pop() if len(shapes) == 1 else None


def _block_shape(call: ast.Call) -> list[ast.expr] | None:
    """The block shape a host `TensorDescriptor` is made with, as written."""
    position = {"from_tensor": 1, "TensorDescriptor": 3}.get(last_name(call.func) or "")
    if position is None:
        return None
    shape = next((k.value for k in call.keywords if k.arg == "block_shape"),
                 call.args[position] if len(call.args) > position else None)
    return shape.elts if isinstance(shape, (ast.List, ast.Tuple)) else None


@dataclass
class _Hook:
    """What a pre_hook's statements are read against: its `nargs` parameter, the kernel's
    constexprs, and the defaults its `nargs.get("FLAG", False)` reads give where the kernel has none
    (gathered as the reading goes)."""

    nargs: str
    constexprs: frozenset[str]
    defaults: dict[str, object]


def _hook_block(body: list[ast.stmt], hook: _Hook, aliases: dict[str, str]) -> dict[str, str]:
    """The shapes a run of a pre_hook's statements sets, by descriptor; an `if` whose test is a
    constexpr (`if EPILOGUE_SUBTILE:`, `if not FLAG:`) sets `FLAG ? A : B` (B: what was set before);
    one the kernel does not have takes its `nargs.get` default's branch (a hook shared by kernels).
    A shape may go through a local (`b_shape = [BN, BK]` under each branch, then `nargs["b_desc"].
    block_shape = b_shape`): kept under `_LOCAL` + its name, merged as descriptors' are."""
    shapes: dict[str, str] = {}
    for node in body:
        if isinstance(node, ast.If):
            negated = isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not)
            flag = _hook_dim(node.test.operand if negated and isinstance(node.test, ast.UnaryOp) else node.test,
                             hook.nargs, aliases)
            if not (flag and flag.startswith("{") and flag.endswith("}") and flag[1:-1].isidentifier()):
                continue
            name = flag[1:-1]
            then, other = _hook_block(node.body, hook, dict(aliases)), _hook_block(node.orelse, hook, dict(aliases))
            if negated:
                then, other = other, then
            if name not in hook.constexprs:
                if name not in hook.defaults:
                    continue   # `nargs["X"]` of a kernel without X: the hook fails there, nothing to read
                shapes.update(then if hook.defaults[name] else other)
                continue
            for desc in sorted(then.keys() | other.keys()):
                a, b = then.get(desc, shapes.get(desc)), other.get(desc, shapes.get(desc))
                if a and b and " ? " not in a + b:   # one flag's choice, not nested ones
                    shapes[desc] = a if a == b else f"{name} ? {a} : {b}"
            continue
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        if isinstance(target, ast.Name) and isinstance(node.value, (ast.List, ast.Tuple)):
            dims = [_hook_dim(e, hook.nargs, aliases) for e in node.value.elts]
            known = [d for d in dims if d]
            if len(known) == len(dims):
                shapes[_LOCAL + target.id] = ", ".join(known)
            else:
                shapes.pop(_LOCAL + target.id, None)
        elif isinstance(target, ast.Name):
            d = _hook_dim(node.value, hook.nargs, aliases)
            if d and d.startswith("{"):
                aliases[target.id] = d[1:-1]
            elif (got := _hook_get(node.value, hook.nargs)) is not None:   # `SUB = nargs.get("SUB", False)`
                aliases[target.id] = got[0]
                if len(got) > 1:
                    hook.defaults[got[0]] = got[1]
        elif isinstance(target, ast.Attribute) and target.attr == "block_shape" and \
                isinstance(target.value, ast.Subscript) and isinstance(target.value.slice, ast.Constant) and \
                isinstance(node.value, ast.Name) and isinstance(target.value.slice.value, str):
            if _LOCAL + node.value.id in shapes:
                shapes[target.value.slice.value] = shapes[_LOCAL + node.value.id]
        elif isinstance(target, ast.Attribute) and target.attr == "block_shape" and \
                isinstance(target.value, ast.Subscript) and isinstance(target.value.slice, ast.Constant) and \
                isinstance(node.value, (ast.List, ast.Tuple)):
            dims = [_hook_dim(e, hook.nargs, aliases) for e in node.value.elts]
            known = [d for d in dims if d]
            key = target.value.slice.value
            if len(known) == len(dims) and isinstance(key, str):  # (a key that is no str is never looked up)
                shapes[key] = ", ".join(known)
    return shapes


def _hook_get(e: ast.expr, nargs: str) -> tuple[str] | tuple[str, object] | None:
    """The constexpr `nargs.get("NAME", default)` reads, and its default where that is a literal."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "get" and \
            isinstance(e.func.value, ast.Name) and e.func.value.id == nargs and e.args and \
            isinstance(e.args[0], ast.Constant) and isinstance(e.args[0].value, str):
        default = e.args[1] if len(e.args) > 1 else ast.Constant(None)
        return (e.args[0].value, default.value) if isinstance(default, ast.Constant) else (e.args[0].value,)
    return None


def _hook_dim(e: ast.expr, nargs: str, aliases: dict[str, str]) -> str | None:
    """One dimension of a block shape a pre_hook sets: a literal, "{NAME}" for a constexpr read from
    `nargs["NAME"]` (directly or through a local), "{NAME//2}" or "{NAME*2}" for a multiple of one."""
    if isinstance(e, ast.Constant) and isinstance(e.value, int):
        return str(e.value)
    if isinstance(e, ast.Name) and e.id in aliases:
        return "{" + aliases[e.id] + "}"
    if isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id == nargs and \
            isinstance(e.slice, ast.Constant) and isinstance(e.slice.value, str):
        return "{" + e.slice.value + "}"
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.FloorDiv, ast.Mult)) and isinstance(e.right, ast.Constant) \
            and type(e.right.value) is int and e.right.value > 0 and (inner := _hook_dim(e.left, nargs, aliases)) \
            and inner.startswith("{"):
        return "{" + inner[1:-1] + ("//" if isinstance(e.op, ast.FloorDiv) else "*") + str(e.right.value) + "}"
    return None


_FIELD = re.compile(r"\{(\w+)(?:(//|\*)(\d+))?\}")
_CHOICE = re.compile(r"(\w+) \? ([^?:]*) : ([^?:]*)$")


def fill(template: str, constexprs: Mapping[str, object]) -> str:
    """A descriptor type template (above) filled with one spec's constexprs. KeyError where it
    names a constexpr the spec does not give a value of the right kind."""
    inner = re.search(r"\[(.*)\]", template)
    if inner and (choice := _CHOICE.match(inner.group(1))):
        flag = choice.group(1)
        if flag not in constexprs:
            raise KeyError(flag)
        template = template.replace(inner.group(1), choice.group(2) if constexprs[flag] else choice.group(3))

    def value(m: re.Match[str]) -> str:
        v = constexprs[m.group(1)]
        if type(v) is not int:
            raise KeyError(m.group(1))
        k = int(m.group(3) or 1)
        if k == 0:   # a template written by hand (`signature.` of a config) may say so
            raise KeyError(m.group(0))
        return str(v // k if m.group(2) == "//" else v * k)
    return _FIELD.sub(value, template)
