"""Find the Triton kernels of a snapshot, from ASTs alone: which jit functions are kernels, what
their parameters are, what the repository's launch sites pass them, and their fingerprints.

Nothing is imported here, so discovery and change detection never load triton. The fingerprint
of a kernel's effective source is fingerprint.py's, parameter types params.py's, the harness of
device functions harness.py's.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass

from ptxdiff.discovery.callsites import Fact, HostFunction, facts, launch_calls, merge
from ptxdiff.discovery.decorators import triton_kinds
from ptxdiff.discovery.documented import documented_types
from ptxdiff.discovery.evidence import converted_scalars, converts_values, heuristic_sizes
from ptxdiff.discovery.fingerprint import Closure, kernel_closure
from ptxdiff.discovery.guards import Guards, kernel_guards
from ptxdiff.discovery.harness import device_harness, harness_rank
from ptxdiff.discovery.hints import (
    constexpr_hints,
    descriptor_types,
    module_constants,
    module_functions,
    optional_params,
)
from ptxdiff.discovery.params import Param, infer_param_kinds, kinds_through_helpers, written_only
from ptxdiff.source.bounds import size_error
from ptxdiff.source.modules import AboveTop, Files, ModuleIndex, ParsedModule, nested_statements, submodule
from ptxdiff.source.syntax import dotted_name, is_constexpr


@dataclass(frozen=True)
class Kernel:
    """One kernel as discovery sees it: plain data, so it is stored per tree and compared across sides."""

    id: str
    path: str
    name: str
    module: str
    lineno: int
    fingerprint: str
    params: tuple[Param, ...]
    paths: frozenset[str]  # the repo files its effective source reads, and those of its launch sites
    names: frozenset[str] = frozenset()  # module-level names its effective source reads
    launch: tuple[tuple[str, tuple[Fact, ...]], ...] = ()  # what the repo's launch sites pass, by param
    # a device function never launched itself, that a wrapper decorator of the repo turns into
    # kernels (`@pointwise_dynamic` over `@triton.jit`): compiled inside an elementwise harness,
    # with this many outputs
    harness: int | None = None
    harness_rank: int = 1   # the dimensions of the harness's blocks (discovery/harness.py)
    # casts values to its pointers' element types (`.to(out.dtype.element_ty)`): a no-op under
    # fp32 guesses, so a second dtype family is compiled (specs/plan.py)
    element_casts: bool = False
    # files that do not decide what it reads now but would if they appeared or went (a package
    # `x/__init__.py` beside the module `x.py` it imports): a change to one discovers it again
    probes: frozenset[str] = frozenset()
    # its statements (and its helpers') under constexpr conditions, with those constexprs
    # (discovery/guards.py): what a change is guarded by, whose every combination is compiled
    guards: Guards = ()


@dataclass(frozen=True)
class Broken:
    """A file with kernels that cannot be read at this revision (syntax error, not UTF-8)."""

    path: str
    error: str
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Discovery:
    """A snapshot's kernels and the files whose kernels cannot be read."""

    kernels: dict[str, Kernel]   # by id
    broken: dict[str, Broken]    # by path


# a launch site: the call, the function around it (None at module level), its module's
# constants, its file
_Site = tuple[ast.Call, HostFunction | None, dict, str]


def discover(snapshot: Files, roots: tuple[str, ...] = (), paths: set[str] | None = None) -> Discovery:
    """Every kernel (a `@triton.jit` function not used as a helper by another) of the snapshot.

    `paths` limits which files are read (history walks one file); helpers called from files
    outside it are then not recognised as helpers.
    """
    index = ModuleIndex(snapshot, roots)
    candidates = sorted(p for p in snapshot.paths if p.endswith(".py") and (paths is None or p in paths))
    found: list[tuple[ParsedModule, ast.Module, ast.FunctionDef, Closure]] = []
    broken: dict[str, Broken] = {}
    helpers: set[tuple[str, str]] = set()
    for path in candidates:
        data = snapshot.read(path)
        if b"triton" not in data and b"jit" not in data:
            continue
        mod = index.parse(path)
        if mod.error:
            if JIT_DECORATOR.search(data):  # a file with no jit decorator at all is no kernel file
                broken[path] = Broken(path, mod.error, kernel_names_in(data))
            continue
        assert mod.tree is not None  # parsed without error
        defined: set[str] = set()
        for top in mod.tree.body:
            for stmt in nested_statements(top):
                if not isinstance(stmt, ast.FunctionDef) or stmt.name in defined or \
                        "jit" not in triton_kinds(index, mod, stmt):
                    continue
                defined.add(stmt.name)
                closure = kernel_closure(index, mod, stmt.name)
                found.append((mod, mod.tree, stmt, closure))
                helpers |= closure.jit_helpers - {(path, stmt.name)}
    launched, sites = _launches(index, {fn.name for _, _, fn, _ in found})
    kernels: dict[str, Kernel] = {}
    for mod, tree, fn, closure in found:
        kinds = triton_kinds(index, mod, fn)
        if (mod.path, fn.name) in helpers and fn.name not in launched and not kinds & {"autotune", "heuristics"}:
            continue
        helper_defs = _helper_defs(index, closure)
        inferred = kinds_through_helpers(fn, infer_param_kinds(fn, constexprs=True), helper_defs)
        runtime = {a.arg: inferred.get(a.arg) for a in fn.args.args if not is_constexpr(a.annotation)}
        inferred.update(documented_types(snapshot.read(mod.path).decode("utf-8", "replace"), fn, runtime))
        inferred.update(descriptor_types(fn, tree))
        hints = constexpr_hints(fn, module_constants(tree), inferred, {**module_functions(tree), **helper_defs})
        hints.update(heuristic_sizes(fn, module_constants(tree)))   # runtime ints a heuristic tests
        optional = optional_params(fn)
        written, converted = written_only(fn), converted_scalars(fn)
        params = tuple(Param(a.arg, constexpr, None if constexpr else inferred.get(a.arg), hints.get(a.arg),
                             a.arg in optional, a.arg in written, a.arg in converted)
                       for a in fn.args.args for constexpr in [is_constexpr(a.annotation)])
        harness, params = (None, params) if fn.name in launched else device_harness(fn, params)
        names = [a.arg for a in fn.args.args]
        own_sites = sites.get((mod.path, fn.name), ())
        constexprs = frozenset(p.name for p in params if p.constexpr)
        launch = merge([facts(call, where, names, consts, f"{site}:{call.lineno}", constexprs)
                        for call, where, consts, site in own_sites])
        kid = f"{mod.path}::{fn.name}"
        # the files of its launch sites are part of what it is compiled with, like its helpers'
        read = frozenset(closure.paths) | {site for *_, site in own_sites}
        kernels[kid] = Kernel(id=kid, path=mod.path, name=fn.name, module=mod.name, lineno=fn.lineno,
                              fingerprint=closure.fingerprint(), params=params, paths=read,
                              names=frozenset(closure.names), launch=tuple(launch.items()),
                              harness=harness, harness_rank=harness_rank(fn) if harness else 1,
                              element_casts=casts_to_element_types(fn) or converts_values(fn, helper_defs),
                              probes=frozenset(closure.probes - closure.paths),
                              guards=kernel_guards(fn, constexprs, helper_defs))
    return Discovery(kernels, broken)


def _helper_defs(index: ModuleIndex, closure: Closure) -> dict[str, ast.FunctionDef]:
    """The `def`s of the jit helpers a kernel's effective source reaches, by name."""
    out: dict[str, ast.FunctionDef] = {}
    for path, name in sorted(closure.jit_helpers):
        mod = index.parse(path)
        for top in mod.bindings.get(name, ()):
            for stmt in nested_statements(top):
                if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                    out.setdefault(name, stmt)
    return out


def casts_to_element_types(fn: ast.FunctionDef) -> bool:
    """Whether the kernel casts values to a pointer's element type (`x.to(Y.dtype.element_ty)`)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
            for arg in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
                if any(isinstance(n, ast.Attribute) and n.attr == "element_ty" for n in ast.walk(arg)):
                    return True
    return False


_SUBSCRIPTED = re.compile(rb"(\w+)\s*\[")


def _launches(index: ModuleIndex, names: set[str]) -> tuple[set[str], dict[tuple[str, str], list[_Site]]]:
    """Launch sites (`name[grid](...)`) of the given jit functions, in any module of the snapshot
    (a host wrapper need not mention triton): the names launched, and the sites per kernel."""
    launched: set[str] = set()
    sites: dict[tuple[str, str], list[_Site]] = {}
    if not names:
        return launched, sites
    wanted = {n.encode() for n in names}
    for path in sorted(p for p in index.snapshot.paths if p.endswith(".py")):
        data = index.snapshot.read(path)
        if size_error(path, len(data)) or wanted.isdisjoint(_SUBSCRIPTED.findall(data)):
            continue   # a module over the size bound is never parsed: not scanned either
        mod = index.parse(path)
        if mod.error:
            continue
        assert mod.tree is not None  # parsed without error
        consts = None
        for name, call, fn in launch_calls(mod.tree):
            if name not in names:
                continue
            launched.add(name)
            assert isinstance(call.func, ast.Subscript)  # launch_calls finds `x[grid](...)` only
            target = _launch_target(index, mod, call.func.value)
            if target is not None:
                consts = module_constants(mod.tree) if consts is None else consts
                sites.setdefault(target, []).append((call, fn, consts, mod.path))
    return launched, sites


def _launch_target(index: ModuleIndex, mod: ParsedModule, callee: ast.expr) -> tuple[str, str] | None:
    """(path, function name) a launch's callee refers to: a kernel of this module, one imported
    by name (`from ops.k import kernel`), or one reached through a module alias (`k.kernel`)."""
    chain = dotted_name(callee)
    if not chain:
        return None
    name = chain[-1]
    if len(chain) == 1:
        stmts = mod.bindings.get(name, [])
        for stmt in stmts:
            if isinstance(stmt, ast.ImportFrom):
                alias = next((a for a in stmt.names if (a.asname or a.name) == name), None)
                path = index.path_of(_absolute(index, mod, stmt)) if alias else None
                if alias and path:
                    return path, alias.name
        return mod.path, name
    root = mod.bindings.get(chain[0], [])
    for stmt in root:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if (alias.asname or alias.name.split(".")[0]) == chain[0]:
                    dotted = alias.name if alias.asname else ".".join([alias.name.split(".")[0], *chain[1:-1]])
                    path = index.path_of(dotted)
                    if path:
                        return path, name
        elif isinstance(stmt, ast.ImportFrom):
            base = _absolute(index, mod, stmt)
            found = next((a for a in stmt.names if (a.asname or a.name) == chain[0]), None)
            path = index.path_of(".".join([submodule(base, found.name), *chain[1:-1]])) if found else None
            if path:
                return path, name
    return None


def _absolute(index: ModuleIndex, mod: ParsedModule, stmt: ast.ImportFrom) -> str:
    """The module a `from` import names; "" (no module) when it climbs above the top package."""
    try:
        return index.absolute(mod, stmt)
    except AboveTop:
        return ""


JIT_DECORATOR = re.compile(rb"^[ \t]*@[\w.]*jit\b", re.MULTILINE)
# a line that starts with a triton decorator, up to 20 more decorator or blank lines, the def: a
# line is read by the 21 starts above it at most, so a file that does not parse is scanned in
# linear time whatever it holds
_DECORATED_DEF = re.compile(rb"^[ \t]*@triton\.(?:jit|autotune|heuristics)\b[^\n]*\n(?:[ \t]*(?:@[^\n]*)?\n){0,20}?"
                            rb"[ \t]*def[ \t]+(\w+)", re.MULTILINE)
MAX_BROKEN_NAMES = 256   # failed rows for one file that cannot be read


def kernel_names_in(text: bytes) -> tuple[str, ...]:
    """Best-effort names of jit functions in a file that does not parse or is over a bound on
    what ptxdiff parses (for `failed` rows): the first MAX_BROKEN_NAMES."""
    names = dict.fromkeys(m.group(1).decode() for m in itertools.islice(_DECORATED_DEF.finditer(text), 4 * MAX_BROKEN_NAMES))
    return tuple(itertools.islice(names, MAX_BROKEN_NAMES))


def renamed_id(kernel_id: str, renames: dict[str, str]) -> str:
    """The id a kernel had on the old side, following a rename of its file."""
    path, _, name = kernel_id.partition("::")
    return f"{renames.get(path, path)}::{name}"
