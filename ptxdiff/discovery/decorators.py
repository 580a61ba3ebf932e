"""Which functions of a module are Triton jit objects, read from the AST alone.

A kernel is whatever `triton.jit` returned (spelling.py says what a name means): a `def` under a
jit decorator however it is spelled, or a name bound to a call that jits a function
(`k = triton.jit(_k)`, `k = triton.autotune(...)(triton.jit(_k))`), at module level (inside
`if`/`try` blocks too), in a class body (`Ops.k`) or in a function body (`launch._k`, a kernel
defined inside the host function that launches it). A function that uses triton's language
(`tl.load`, `tl.program_id`...) but is none of these is `unresolved`: discovery reports it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ptxdiff.discovery.spelling import GLUON, JIT, TRITON_DECORATORS, Spelling
from ptxdiff.source.modules import ParsedModule, names_bound, nested_statements
from ptxdiff.source.syntax import dotted_name, single_assignment, walk

__all__ = ["TRITON_DECORATORS", "Found", "backend_of", "closure_reads", "jit_objects", "locate", "unresolved"]

_MAX_NESTING = 4   # classes and functions walked into, one inside another


@dataclass(frozen=True)
class Found:
    """One jit object of a module: the name it is bound to (`k`, `Ops.k`, `launch._k`), the `def`
    triton compiles, the Triton decorators applied (jit, autotune, heuristics, gluon) and the
    top-level statement that holds it."""

    name: str
    fn: ast.FunctionDef
    kinds: frozenset[str]
    top: ast.stmt
    nested: bool = False    # inside a class or function body


def _scopes(stmts: list[ast.stmt], prefix: str, depth: int) -> Iterator[tuple[str, list[ast.stmt], ast.stmt | None]]:
    """(prefix, statements of one scope with their `if`/`try` blocks flattened, None) for the
    module, then each class and function body below it (its qualified prefix)."""
    flat = [s for top in stmts for s in nested_statements(top)]
    yield prefix, flat, None
    if depth >= _MAX_NESTING:
        return
    for stmt in flat:
        if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from _scopes(stmt.body, f"{prefix}{stmt.name}.", depth + 1)


def jit_objects(spelling: Spelling, mod: ParsedModule) -> list[Found]:
    """Every jit object of a module, in source order of the top-level statements that hold them. A
    name a later top-level statement binds to the jit of another `def` is that one, as Python binds
    it (a module that defines `_fwd_kernel` twice launches the second); one wrapped again (`k =
    autotune(...)(k)`) stays where it was first made, and of the branches of one `if`/`try` the
    first is read, as before."""
    assert mod.tree is not None
    found_by_name: dict[str, Found] = {}
    module_defs = mod_defs(mod)
    for top in mod.tree.body:
        for prefix, flat, _ in _scopes([top], "", 0):
            defs = {s.name: s for s in flat if isinstance(s, ast.FunctionDef)}
            for stmt in flat:
                found = _found(spelling, mod, stmt, defs, module_defs)
                if found is None:
                    continue
                name, fn, kinds = found
                earlier = found_by_name.get(prefix + name)
                if earlier is not None and (earlier.fn is fn or earlier.top is top):
                    continue
                found_by_name.pop(prefix + name, None)   # (re-inserted: the order is the later one's)
                found_by_name[prefix + name] = Found(prefix + name, fn, kinds, top, bool(prefix))
    return list(found_by_name.values())


def mod_defs(mod: ParsedModule) -> dict[str, ast.FunctionDef]:
    """The module-level `def`s (inside `if`/`try` blocks too), the last of each name."""
    assert mod.tree is not None
    return {s.name: s for top in mod.tree.body for s in nested_statements(top) if isinstance(s, ast.FunctionDef)}


def _found(spelling: Spelling, mod: ParsedModule, stmt: ast.stmt, defs: dict[str, ast.FunctionDef],
           module_defs: dict[str, ast.FunctionDef]) -> tuple[str, ast.FunctionDef, frozenset[str]] | None:
    if isinstance(stmt, ast.FunctionDef):
        kinds = spelling.decorator_kinds(mod, stmt)
        return (stmt.name, stmt, frozenset(kinds)) if kinds & {JIT, GLUON} else None
    assigned = single_assignment(stmt)
    if assigned is None:
        return None
    target, value = assigned
    made = spelling.made(mod, value)
    if made is None:
        return None
    fn = defs.get(made.function) or module_defs.get(made.function)
    if fn is None:
        return None
    return target, fn, frozenset(made.kinds) | spelling.decorator_kinds(mod, fn)


# calls that only a kernel makes: a function that makes one is meant to be jitted
_KERNEL_CALLS = frozenset({"load", "store", "program_id", "num_programs", "arange", "atomic_add", "atomic_cas",
                           "atomic_xchg", "atomic_max", "atomic_min", "dot", "make_block_ptr",
                           "make_tensor_descriptor", "advance"})


def _language(spelling: Spelling, mod: ParsedModule, chain: list[str], cache: dict[tuple[str, bool], bool]) -> bool:
    """Whether `chain` (`tl.load`, `triton.language.load`) reaches triton's language: its root is
    bound to it (`import triton.language as tl`), or is `triton` followed by `language`; `tl` is
    triton's language wherever the module binds it to no other package."""
    if len(chain) == 1:
        return True   # imported from triton.language by name (_kernel_calls)
    key = (chain[0], chain[1:2] == ["language"])
    if key not in cache:
        meaning = spelling.name(mod, chain[0])
        if meaning is None:
            cache[key] = chain[0] == "tl"
        else:
            cache[key] = meaning == "triton.language" or meaning.startswith("triton.language.") or \
                meaning.endswith("gluon.language") or meaning == "triton" and key[1] or \
                chain[0] == "tl" and meaning.startswith("module:")
    return cache[key]


def _kernel_calls(mod: ParsedModule) -> list[tuple[int, int, list[str]]]:
    """(line, column, dotted callee) of every call of the module to what only a kernel calls:
    `x.load(...)`, or a name imported from triton's language (`from triton.language import store as S`)."""
    assert mod.tree is not None
    imported = {a.asname or a.name for top in mod.tree.body for s in nested_statements(top)
                if isinstance(s, ast.ImportFrom) and not s.level and (s.module or "").startswith("triton.language")
                for a in s.names if a.name in _KERNEL_CALLS}
    return [(n.lineno, n.col_offset, chain) for n in walk(mod.tree) if isinstance(n, ast.Call)
            and (len(chain := dotted_name(n.func)) >= 2 and chain[-1] in _KERNEL_CALLS or chain[:1] == chain
                 and chain and chain[0] in imported)]


def unresolved(spelling: Spelling, mod: ParsedModule, found: list[Found]) \
        -> list[tuple[str, ast.FunctionDef, ast.stmt, str]]:
    """Functions that use triton's language as only a kernel does (`tl.load`, `tl.program_id`)
    but are no jit object ptxdiff can resolve: (qualified name, def, top statement, why). A call
    belongs to the innermost function around it."""
    assert mod.tree is not None
    calls = _kernel_calls(mod)
    if not calls:
        return []
    defs = [(prefix + stmt.name, stmt, top) for top in mod.tree.body for prefix, flat, _ in _scopes([top], "", 0)
            for stmt in flat if isinstance(stmt, ast.FunctionDef)]
    jitted = {id(f.fn) for f in found}
    first: dict[int, list[str]] = {}
    cache: dict[tuple[str, bool], bool] = {}
    for line, _col, chain in sorted(calls):
        around = [d for _, d, _ in defs if d.lineno <= line <= (d.end_lineno or d.lineno)]
        if not around:
            continue
        inner = max(around, key=lambda d: d.lineno)
        # a def under a jit decorator is a jit function, also where another binding of its name is
        # the one found (`if IS_BLACKWELL: @triton.jit def safe_dot` ... `else: @triton.jit def safe_dot`)
        if id(inner) not in jitted and id(inner) not in first and not spelling.decorator_kinds(mod, inner) & \
                {JIT, GLUON} and _language(spelling, mod, chain, cache):
            first[id(inner)] = chain
    out = []
    for name, stmt, top in defs:
        if id(stmt) not in first:
            continue
        call = ".".join(first[id(stmt)])
        decorators = [ast.unparse(d) for d in stmt.decorator_list]
        why = (f"{name} calls {call} but is not a jit function ptxdiff can resolve: "
               + (f"its decorators ({', '.join('@' + d for d in decorators)}) are not triton.jit under "
                  "any spelling ptxdiff follows" if decorators else
                  "no decorator, and no `triton.jit(...)` of it that ptxdiff can follow (jitted at run time?)"))
        out.append((name, stmt, top, why))
    return out


# folders and modules of other backends than NVIDIA's whose triton is a fork of its own (Ascend's,
# Cambricon's...): their kernels are written for it, whatever they call; AMD's names are no such
# sign (a kernel in an `amd/` folder is often plain triton): what it uses decides (`_extension`)
_BACKEND_PATH = re.compile(r"(?:^|[/_])(ascend|npu|xpu|mlu|musa|cann|metax|iluvatar)(?=[/_]|$)", re.IGNORECASE)
_BACKEND_IMPORTS = {"torch_npu": "Ascend (NPU)", "triton_ascend": "Ascend (NPU)", "intel_extension_for_pytorch": "XPU",
                    "torch_mlu": "MLU", "torch_musa": "MUSA"}
# AMD's host packages (hip-python, rocSHMEM, MoRI): imported unguarded, the module runs on AMD's only
_AMD_IMPORTS = frozenset({"hip", "pyrocshmem", "mori"})
_BACKEND_NAMES = {"ascend": "Ascend (NPU)", "npu": "Ascend (NPU)", "cann": "Ascend (NPU)", "xpu": "XPU",
                  "rocm": "ROCm (AMD)", "amd": "ROCm (AMD)", "hip": "ROCm (AMD)", "mlu": "MLU", "musa": "MUSA",
                  "metax": "MetaX", "iluvatar": "Iluvatar"}


def _extension(chain: list[str]) -> str | None:
    """The backend whose own language a dotted name reaches: its `extra.<backend>` part, as in
    `triton.language.extra.hip` or a package's copy of that layout (`triton_dist.language.extra.hip`)."""
    return next((_BACKEND_NAMES[b.lower()] for a, b in zip(chain, chain[1:])
                 if a == "extra" and b.lower() in _BACKEND_NAMES), None)


def backend_of(path: str, mod: ParsedModule) -> str:
    """The other backend a module is written for ("" for NVIDIA's, or any): named by its folders
    or file for a backend with a triton of its own (`backends/triton_ascend/`, `ops/npu/`), or
    by what it uses, whatever its path: a backend's package (`import torch_npu`, even under
    `try:`), or, in a statement of the module's top level that no `if`/`try` guards (`elif
    is_hip(): from ...extra.hip import ...` is the other machine's branch), AMD's host packages
    (`from hip import hip`, `import pyrocshmem`) or a backend's language extension (`from
    triton.language.extra.hip import libdevice`, `tl.extra.hip.libdevice.exp`) or is part of one
    (`pkg/language/extra/hip/`). An `amd/`, `hip` or `rocm` folder alone says nothing: plain
    triton there compiles for NVIDIA."""
    m = _BACKEND_PATH.search(path[:-3] if path.endswith(".py") else path)
    if m:
        return _BACKEND_NAMES[m.group(1).lower()]
    if (own := _extension(path.split("/"))) is not None:   # the module is part of such an extension
        return own
    assert mod.tree is not None
    for stmt in mod.tree.body:
        for inner in nested_statements(stmt):   # `try: import torch_npu` too: no NVIDIA machine has it
            roots = [a.name.split(".")[0] for a in inner.names] if isinstance(inner, ast.Import) else \
                [(inner.module or "").split(".")[0]] if isinstance(inner, ast.ImportFrom) and not inner.level else []
            for root in roots:
                if root in _BACKEND_IMPORTS:
                    return _BACKEND_IMPORTS[root]
    for stmt in mod.tree.body:
        if isinstance(stmt, ast.Import):
            chains = [a.name.split(".") for a in stmt.names]
        elif isinstance(stmt, ast.ImportFrom):
            chains = [[*(stmt.module or "").split("."), a.name] for a in stmt.names] if not stmt.level else []
        elif not isinstance(stmt, (ast.If, ast.Try)):
            chains = [dotted_name(n) for n in walk(stmt) if isinstance(n, ast.Attribute)]
        else:
            continue
        for chain in chains:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) and chain[0] in _AMD_IMPORTS:
                return "ROCm (AMD)"
            if (found := _extension(chain)) is not None:
                return found
    return ""


def locate(mod: ParsedModule, qualname: str) -> tuple[ast.stmt, list[ast.stmt]] | None:
    """The statement that binds a nested jit object (`Ops.k`, `launch._k`) and the statements of
    its scope (class or function body, `if`/`try` blocks flattened); None when there is none."""
    assert mod.tree is not None
    *outer, last = qualname.split(".")
    flat = [s for top in mod.tree.body for s in nested_statements(top)]
    for part in outer:
        holder = next((s for s in flat if isinstance(s, (ast.ClassDef, ast.FunctionDef)) and s.name == part), None)
        if holder is None:
            return None
        flat = [s for top in holder.body for s in nested_statements(top)]
    for stmt in flat:
        if isinstance(stmt, ast.FunctionDef) and stmt.name == last or \
                isinstance(stmt, (ast.Assign, ast.AnnAssign)) and last in _targets(stmt):
            return stmt, flat
    return None


def _targets(stmt: ast.Assign | ast.AnnAssign) -> list[str]:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def enclosing(mod: ParsedModule, qualname: str) -> list[ast.ClassDef | ast.FunctionDef]:
    """The class and function bodies a nested jit object's qualified name goes through, outermost
    first."""
    assert mod.tree is not None
    flat = [s for top in mod.tree.body for s in nested_statements(top)]
    out: list[ast.ClassDef | ast.FunctionDef] = []
    for part in qualname.split(".")[:-1]:
        holder = next((s for s in flat if isinstance(s, (ast.ClassDef, ast.FunctionDef)) and s.name == part), None)
        if holder is None:
            break
        out.append(holder)
        flat = [s for top in holder.body for s in nested_statements(top)]
    return out


def static_locals(host: ast.FunctionDef) -> list[ast.stmt]:
    """The statements of a function's own body (not inside a block) that bind a name the same way
    whenever it runs, and that the name has no other binding in the body: imports (`import
    triton.language as tl` inside the function that defines the kernels) and `def`s. A kernel
    defined there reads these from its closure as reading the source gives them."""
    flat = [s for top in host.body for s in nested_statements(top)]
    counts: dict[str, int] = {}
    for stmt in flat:
        for name in names_bound(stmt):
            counts[name] = counts.get(name, 0) + 1
    return [s for s in host.body if isinstance(s, (ast.Import, ast.ImportFrom, ast.FunctionDef))
            and all(counts.get(name) == 1 for name in names_bound(s))]


def closure_reads(mod: ParsedModule, qualname: str, fn: ast.FunctionDef) -> list[tuple[str, str]]:
    """(name, function) for each name a jit function defined inside a function reads from that
    function's locals (its parameters and what its body binds, but its `static_locals`): values
    triton takes from the closure when the host function runs, which no reading of the source
    can give."""
    bound: dict[str, str] = {}
    for holder in enclosing(mod, qualname):
        flat = [s for top in holder.body for s in nested_statements(top)]
        if isinstance(holder, ast.FunctionDef):
            args = holder.args
            for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
                if a is not None:
                    bound[a.arg] = holder.name
            static = {name for s in static_locals(holder) for name in names_bound(s)}
            for stmt in flat:
                if stmt is not fn:
                    bound.update(dict.fromkeys((n for n in names_bound(stmt) if n not in static), holder.name))
    own = {a.arg for a in [*fn.args.args, *fn.args.kwonlyargs]} | {
        n.id for n in walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    reads = dict.fromkeys(n.id for stmt in fn.body for n in walk(stmt)
                          if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in own)
    return [(name, bound[name]) for name in reads if name in bound and name != fn.name]
