"""Find the Triton kernels of a snapshot, from ASTs alone: which jit functions are kernels, what
their parameters are, what the repository's launch sites pass them, and their fingerprints.

Nothing is imported here, so discovery and change detection never load triton. The fingerprint
of a kernel's effective source is fingerprint.py's, parameter types params.py's, the harness of
device functions harness.py's.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import itertools
import re
from dataclasses import dataclass

from ptxdiff.discovery.callsites import Fact, HostFunction, binds, launch_calls, merge, module_dicts, passed_alike, site_facts
from ptxdiff.discovery.decorators import Found, backend_of, jit_objects, unresolved
from ptxdiff.discovery.descriptors import descriptor_types
from ptxdiff.discovery.documented import documented_types
from ptxdiff.discovery.evidence import converted_scalars, converts_values, heuristic_sizes
from ptxdiff.discovery.fanout import fork_map
from ptxdiff.discovery.fingerprint import Closure, kernel_closure
from ptxdiff.discovery.forks import FORK, own_triton, repository_builtins
from ptxdiff.discovery.guards import Guards, kernel_guards
from ptxdiff.discovery.harness import device_harness, harness_rank
from ptxdiff.discovery.hints import constexpr_hints, module_constants, module_functions, optional_params
from ptxdiff.discovery.hooks import Hooks, kernel_hooks
from ptxdiff.discovery.params import Param, infer_param_kinds, kinds_through_helpers, written_only
from ptxdiff.discovery.spelling import Spelling
from ptxdiff.discovery.tiles import Tiles, Unrolled, kernel_tiles, sorts, unrolled_loops
from ptxdiff.source.bounds import size_error
from ptxdiff.source.modules import AboveTop, Files, ModuleIndex, ParsedModule, nested_statements, submodule
from ptxdiff.source.syntax import dotted_name, is_constexpr, single_assignment, walk


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
    # constexprs every launch site passes one expression (`BLOCK_M=BLOCK, BLOCK_N=BLOCK`): one value
    # at every launch, compiled together (discovery/callsites.py `passed_alike`)
    alike: tuple[tuple[str, ...], ...] = ()
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
    # its launch hooks and autotune settings (`reset_to_zero`, `pre_hook`, ...: discovery/hooks.py),
    # part of its identity: a change of one is a change of the kernel whatever its PTX
    hooks: Hooks = ()
    # the `def` triton compiles, where the name it is bound to differs (`k = triton.jit(_k)`: "_k")
    function: str = ""
    # why ptxdiff cannot build it (a function that uses triton's language but is no jit object it
    # can resolve): its rows fail with this, so a change to it is never silent
    unresolved: str = ""
    # the other backend it is written for ("Ascend (NPU)", "ROCm (AMD)"...; forks.FORK for a
    # triton of the repository's own): not compiled, said in one line
    backend: str = ""
    # a kernel of forks.FORK: the fork (`3rdparty/triton: URL`) and the builtins over it that it calls
    fork: str = ""
    fork_builtins: tuple[str, ...] = ()
    # the constexpr sizes that meet in one block of its body (discovery/tiles.py): the cost rule
    tiles: Tiles = ()
    # its `tl.static_range` loops (discovery/tiles.py): compiled once per trip, the cost estimate's
    unrolled: Unrolled = ()
    # the sorts it and its jit helpers compile (discovery/tiles.py): log-squared passes, the cost estimate's
    sorts: int = 0
    # the jit helpers its source reaches ("path::name"): a stored discovery brought up to date
    # (memo.py) knows which functions of the files it reads again the files it keeps still call
    helpers: frozenset[str] = frozenset()


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
_Site = tuple[ast.Call, HostFunction | None, dict[str, object], str]


def discover(snapshot: Files, roots: tuple[str, ...] = (), paths: set[str] | None = None, jobs: int = 1,
             called: frozenset[str] = frozenset(), known: frozenset[str] = frozenset()) -> Discovery:
    """Every kernel (whatever `triton.jit` returned, not used as a helper by another) of the
    snapshot, and every function that uses triton's language but is no jit object ptxdiff can
    resolve (`unresolved`: its rows fail saying why).

    `paths` limits which files are read (history walks one file); helpers called from files
    outside it are then not recognised as helpers, but for those `called` names ("path::name",
    the helpers of the kernels of the other files: memo.py), and a launch of a function of theirs
    launches a function of that name here, but for those `known` (the other files' jit objects).
    `jobs`: how many processes may read the kernels (fanout.py); the same Discovery at any number.
    """
    index = ModuleIndex(snapshot, roots)
    spelling = Spelling(index)
    fork = own_triton(snapshot)
    candidates = sorted(p for p in snapshot.paths if p.endswith(".py") and (paths is None or p in paths))
    found: list[tuple[ParsedModule, ast.Module, Found, Closure]] = []
    broken: dict[str, Broken] = {}
    helpers: set[tuple[str, str]] = {(path, name) for path, _, name in (c.rpartition("::") for c in called)}
    reaches: dict[tuple[str, str], set[tuple[str, str]]] = {}
    odd: list[Kernel] = []
    backends: dict[str, str] = {}
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
        objects = jit_objects(spelling, mod)
        backends[path] = backend_of(path, mod)
        for obj in objects:
            closure = kernel_closure(index, mod, obj.name, spelling)
            found.append((mod, mod.tree, obj, closure))
            reaches[(path, obj.name)] = _helpers_named(obj, closure, objects, path)
            helpers |= reaches[(path, obj.name)]
        helpers |= {(path, name) for name in _nested_helpers(objects)}
        for name, fn, _, why in unresolved(spelling, mod, objects):
            closure = kernel_closure(index, mod, name, spelling)
            odd.append(Kernel(id=f"{path}::{name}", path=path, name=name, module=mod.name, lineno=fn.lineno,
                              fingerprint=closure.fingerprint(), params=(), paths=frozenset(closure.paths),
                              names=frozenset(closure.names), function=fn.name, unresolved=why))
    launched, sites = _launches(index, {(mod.path, obj.name) for mod, _, obj, _ in found},
                                {(path, name) for path, _, name in (k.rpartition("::") for k in known)})
    chosen: list[tuple[ParsedModule, ast.Module, Found, Closure, bool, list[_Site]]] = []
    for mod, tree, obj, closure in found:
        last = obj.name.rsplit(".", 1)[-1]
        own_sites = sites.get((mod.path, obj.name)) or (sites.get((mod.path, last), []) if obj.nested else [])
        # a class member is launched where a launch names it (`Ops.k[grid]`), not wherever a `forward[grid]` is
        is_launched = bool(own_sites) if obj.nested else bool(own_sites) or last in launched
        if (mod.path, obj.name) in helpers and not is_launched and not obj.kinds & {"autotune", "heuristics"}:
            continue
        if obj.nested and not is_launched and instance_method(obj.fn) and id(obj.fn) in _methods(tree):
            continue   # an aggregate's method (`state.advance()` in a kernel): a helper of the kernels that call it
        chosen.append((mod, tree, obj, closure, is_launched, own_sites))
    kernels: dict[str, Kernel] = {}
    read = fork_map(lambda item: _kernel(index, snapshot, *item), chosen, jobs)
    for (mod, _, obj, _, _, _), kernel in zip(chosen, read):
        kernel = dataclasses.replace(kernel, helpers=frozenset(f"{p}::{n}" for p, n in reaches[(mod.path, obj.name)]))
        backend = backends.get(mod.path, "")
        if not backend and fork and (builtins := repository_builtins(index, spelling, mod, obj.fn)):
            kernel = dataclasses.replace(kernel, fork=fork, fork_builtins=tuple(builtins))
            backend = FORK
        kernels[kernel.id] = dataclasses.replace(kernel, backend=backend) if backend else kernel
    for kernel in odd:
        kernels.setdefault(kernel.id, kernel)
    return Discovery(kernels, broken)


def agreed_forks(old: Kernel | None, new: Kernel | None, base_fork: str | None) -> tuple[Kernel | None, Kernel | None]:
    """A compared kernel is written for a triton fork (forks.py) only where the base revision builds
    that fork (`base_fork`, its `.gitmodules`) and every side it has says so: a branch that declares a
    fork, or adds a kernel over one its base does not build, is compiled as any change, and fails
    and blocks where its builtins cannot be built, never passes as a line the gate does not read."""
    sides = [k for k in (old, new) if k is not None]
    if all(k.backend == FORK and k.fork == base_fork for k in sides) or not any(k.backend == FORK for k in sides):
        return old, new

    def unforked(k: Kernel | None) -> Kernel | None:
        return dataclasses.replace(k, backend="", fork="", fork_builtins=()) if k and k.backend == FORK else k
    return unforked(old), unforked(new)


def still_defined(snapshot: Files, kernel: Kernel, roots: tuple[str, ...] = ()) -> Kernel | None:
    """The other side's stand-in for a kernel it no longer has but whose `def` it still has in
    the same file (at any depth): a kernel that fails saying so, never a removal (issue 41). None
    when the function is gone."""
    if kernel.path not in snapshot:
        return None
    mod = ModuleIndex(snapshot, roots).parse(kernel.path)
    name = kernel.function or kernel.name.rsplit(".", 1)[-1]
    if mod.tree is None:   # a file that no longer parses (and had no decorator its scan knows): not a removal
        why = f"{kernel.id}: its file cannot be read at this revision: {mod.error}"
        return Kernel(id=kernel.id, path=kernel.path, name=kernel.name, module=mod.name, lineno=kernel.lineno,
                      fingerprint="unread:" + hashlib.sha256(why.encode(errors="surrogateescape")).hexdigest(),
                      params=(), paths=frozenset({kernel.path}), function=name, unresolved=why)
    fn = next((n for n in walk(mod.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name),
              None)
    if fn is None:
        return None
    why = (f"{kernel.id} is no jit object ptxdiff can resolve any more, but its function {name} is still defined "
           f"({kernel.path}:{fn.lineno}): a kernel whose function is still there is not removed")
    text = ast.dump(fn, include_attributes=False).encode()
    return Kernel(id=kernel.id, path=kernel.path, name=kernel.name, module=mod.name, lineno=fn.lineno,
                  fingerprint="defined:" + hashlib.sha256(text).hexdigest(), params=(),
                  paths=frozenset({kernel.path}), function=name, unresolved=why)


def instance_method(fn: ast.FunctionDef) -> bool:
    """A def that takes its instance first (`def advance(self)`, no `@staticmethod`): in a class
    body it is a method triton calls on a value of the class (an `@aggregate`'s), never launched."""
    args = [*fn.args.posonlyargs, *fn.args.args]
    return bool(args) and args[0].arg == "self" and not any(
        dotted_name(d) in (["staticmethod"], ["classmethod"]) for d in fn.decorator_list)


def _helpers_named(obj: Found, closure: Closure, objects: list[Found], path: str) -> set[tuple[str, str]]:
    """The jit helpers a jit object's closure reaches, less a jit function of its own top-level
    statement that its `def` never names: the statements of one `if HAVE_TRITON:` block are each
    kernel's definition (its fingerprint reads them all), and the block's own lines
    (`k = autotune(configs)(_k_impl)`) name every kernel in it; none is the others' helper for that."""
    siblings = {o.name for o in objects if o.top is obj.top and o is not obj}
    named = {n.id for n in walk(obj.fn) if isinstance(n, ast.Name)} | \
        {n.attr for n in walk(obj.fn) if isinstance(n, ast.Attribute)}
    return {(p, n) for p, n in closure.jit_helpers - {(path, obj.name)}
            if not (p == path and n in siblings and n.rsplit(".", 1)[-1] not in named)}


def _nested_helpers(objects: list[Found]) -> set[str]:
    """Jit objects of class or function bodies that another jit object of the module calls
    (`Ops._helper(x)`, or `_helper(x)` from the same body): helpers, like module-level ones."""
    out: set[str] = set()
    for obj in objects:
        if not obj.nested:
            continue
        parts = obj.name.split(".")
        for other in objects:
            if other is obj:
                continue
            same = other.name.split(".")[:-1] == parts[:-1]
            for node in walk(other.fn):
                if isinstance(node, ast.Call):
                    chain = dotted_name(node.func)
                    if chain == parts or same and chain == parts[-1:]:
                        out.add(obj.name)
    return out


def _kernel(index: ModuleIndex, snapshot: Files, mod: ParsedModule, tree: ast.Module, obj: Found, closure: Closure,
            launched: bool, own_sites: list[_Site]) -> Kernel:
    """One jit object as a Kernel: its parameters, their types and hints, its launch sites."""
    fn = obj.fn
    helper_defs = _helper_defs(index, closure)
    inferred = kinds_through_helpers(fn, infer_param_kinds(fn, constexprs=True), helper_defs)
    runtime = {a.arg: inferred.get(a.arg) for a in fn.args.args if not is_constexpr(a.annotation)}
    inferred.update(documented_types(snapshot.read(mod.path).decode("utf-8", "replace"), fn, runtime))
    inferred.update(descriptor_types(fn, tree, [(call, where) for call, where, *_ in own_sites]))
    own = module_constants(tree)
    hints = constexpr_hints(fn, {**imported_class_constants(index, mod, tree), **own}, inferred,
                            {**module_functions(tree), **helper_defs})
    hints.update(heuristic_sizes(fn, own))   # runtime ints a heuristic tests
    optional = optional_params(fn)
    written, converted = written_only(fn), converted_scalars(fn)
    params = tuple(Param(a.arg, constexpr, None if constexpr else inferred.get(a.arg), hints.get(a.arg),
                         a.arg in optional, a.arg in written, a.arg in converted)
                   for a in fn.args.args for constexpr in [is_constexpr(a.annotation)])
    harness, params = (None, params) if launched else device_harness(fn, params, helper_defs)
    names = [a.arg for a in fn.args.args]
    constexprs = frozenset(p.name for p in params if p.constexpr)
    launch = merge([way for call, where, consts, site in own_sites if binds(call, where, consts, fn, constexprs)
                    for way in site_facts(call, where, names, consts, f"{site}:{call.lineno}", constexprs)],
                   constexprs)
    kid = f"{mod.path}::{obj.name}"
    # the files of its launch sites are part of what it is compiled with, like its helpers'
    read = frozenset(closure.paths) | {site for *_, site in own_sites}
    return Kernel(id=kid, path=mod.path, name=obj.name, module=mod.name, lineno=fn.lineno,
                  fingerprint=closure.fingerprint(), params=params, paths=read,
                  names=frozenset(closure.names), launch=tuple(launch.items()),
                  alike=tuple(group for group in passed_alike([call for call, *_ in own_sites], names, constexprs)
                              if len(launch.get(group[0], ())) > 1),   # one value launched: nothing to cross
                  harness=harness, harness_rank=harness_rank(fn) if harness else 1,
                  element_casts=casts_to_element_types(fn) or converts_values(fn, helper_defs),
                  probes=frozenset(closure.probes - closure.paths),
                  guards=kernel_guards(fn, constexprs, helper_defs),
                  hooks=kernel_hooks(index, mod, fn),
                  function=fn.name if fn.name != obj.name.rsplit(".", 1)[-1] else "",
                  tiles=kernel_tiles(fn, constexprs), unrolled=unrolled_loops(fn, constexprs),
                  sorts=sorts([fn, *helper_defs.values()]))


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
    for node in walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("to", "cast"):
            for arg in [*node.args, *(k.value for k in node.keywords if k.arg == "dtype")]:
                if any(isinstance(n, ast.Attribute) and n.attr == "element_ty" for n in walk(arg)):
                    return True
    return False


_SUBSCRIPTED = re.compile(rb"(\w+)\s*\[")


def _launches(index: ModuleIndex, objects: set[tuple[str, str]], known: set[tuple[str, str]] | None = None
              ) -> tuple[set[str], dict[tuple[str, str], list[_Site]]]:
    """Launch sites (`name[grid](...)`) of the given jit functions ((path, name)), in any module of
    the snapshot (a host wrapper need not mention triton): the names launched where the launch is
    not of a known one of them (any jit function of that name may be what runs), and the sites per
    kernel. A launch of another module's function of the same name (`sla.py`'s `_attn_bwd_dq[grid]`)
    does not make a helper of this one (`_attn_bwd_dq(...)` in a kernel of `sparse.py`) launched, nor
    does a launch of one of `known`, jit functions of files not read (a discovery of some files)."""
    launched: set[str] = set()
    sites: dict[tuple[str, str], list[_Site]] = {}
    names = {name.rsplit(".", 1)[-1] for _, name in objects}
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
        methods: dict[int, str] | None = None
        for name, call, fn in launch_calls(mod.tree):
            if name not in names:
                continue
            assert isinstance(call.func, ast.Subscript)  # launch_calls finds `x[grid](...)` only
            chain = dotted_name(call.func.value)
            if len(chain) == 2 and chain[0] in ("self", "cls") and fn is not None:   # `self.kernel[grid]` in a method
                methods = _methods(mod.tree) if methods is None else methods
                target = (mod.path, f"{methods[id(fn)]}.{name}") if id(fn) in methods else None
            else:
                target = _launch_target(index, mod, call.func.value)
            if target not in objects and target not in (known or ()):
                launched.add(name)
            if target is not None:
                consts = {**module_dicts(mod.tree), **module_constants(mod.tree)} if consts is None else consts
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
    if len(chain) == 2 and _class_home(index, mod, chain[0]):   # a kernel of a class body: `Ops.kernel[grid](...)`
        return _class_home(index, mod, chain[0]) or mod.path, ".".join(chain)
    for parts, member in ((chain[1:-1], name), (chain[1:-2], ".".join(chain[-2:]))):
        if member != name and len(chain) < 3:
            continue   # `module.Class.kernel[grid]`: the module, then the class
        for stmt in root:
            path = _imported(index, mod, stmt, chain[0], parts)
            home = _class_home(index, index.parse(path), chain[-2]) if path and member != name else path
            if home:
                return home, member
        for stmt in root:   # `from ops.k import Ops` ... `Ops.kernel[grid]`
            if isinstance(stmt, ast.ImportFrom) and len(chain) == 2:
                alias = next((a for a in stmt.names if (a.asname or a.name) == chain[0]), None)
                target = index.path_of(_absolute(index, mod, stmt)) if alias else None
                home = _class_home(index, index.parse(target), alias.name) if alias and target else None
                if alias and home:
                    return home, f"{alias.name}.{name}"
    return None


def _methods(tree: ast.Module) -> dict[int, str]:
    """id of each function defined directly in a class body (`if` blocks included) -> the class's
    qualified name (`Outer.Inner`)."""
    out: dict[int, str] = {}
    todo: list[tuple[list[ast.stmt], str]] = [(tree.body, "")]
    while todo:
        body, prefix = todo.pop()
        for stmt in (s for top in body for s in nested_statements(top)):
            if isinstance(stmt, ast.ClassDef):
                name = prefix + stmt.name
                out.update((id(m), name) for top in stmt.body for m in nested_statements(top)
                           if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)))
                todo.append((stmt.body, name + "."))
    return out


def _class_home(index: ModuleIndex, mod: ParsedModule, name: str, depth: int = 0) -> str | None:
    """The module that defines class `name` as `mod` binds it: `mod` itself, or the module a
    star import or a `from m import name` of it takes the name from (a package's re-exports)."""
    if mod.tree is None or depth > 8:
        return None
    for stmt in mod.bindings.get(name, ()):
        for inner in nested_statements(stmt):
            if isinstance(inner, ast.ClassDef) and inner.name == name:
                return mod.path
            if isinstance(inner, ast.ImportFrom) and any((a.asname or a.name) == name for a in inner.names):
                alias = next(a for a in inner.names if (a.asname or a.name) == name)
                target = index.path_of(_absolute(index, mod, inner))
                if target is not None and target != mod.path:
                    return _class_home(index, index.parse(target), alias.name, depth + 1)
    if name not in mod.bindings:
        for star in reversed(mod.stars):   # the last star import that provides the name wins
            target = index.star_provides(mod, star, name)
            if target is not None and target != mod.path:
                return _class_home(index, index.parse(target), name, depth + 1)
    return None


def _imported(index: ModuleIndex, mod: ParsedModule, stmt: ast.stmt, root: str, parts: list[str]) -> str | None:
    """The repository module `root.parts...` names when `stmt` binds `root` by an import."""
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if (alias.asname or alias.name.split(".")[0]) == root:
                dotted = ".".join([alias.name, *parts]) if alias.asname else ".".join([alias.name.split(".")[0], *parts])
                path = index.path_of(dotted)
                if path:
                    return path
    elif isinstance(stmt, ast.ImportFrom):
        base = _absolute(index, mod, stmt)
        found = next((a for a in stmt.names if (a.asname or a.name) == root), None)
        return index.path_of(".".join([submodule(base, found.name), *parts])) if found else None
    return None


def imported_class_constants(index: ModuleIndex, mod: ParsedModule, tree: ast.Module) -> dict[str, object]:
    """`Act.gelu` for a class of constants another module of the repository defines and this one
    imports (`from pkg.config import ActivationType`, an enum of modes a kernel compares with), also
    under a module-level alias of it (`_Act: tl.constexpr = ActivationType`): the values a kernel's
    comparisons name, as module_constants gives a class of its own module's."""
    found: dict[str, object] = {}
    classes: dict[str, str] = {}   # a name this module binds -> the class it imports
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and (path := index.path_of(_absolute(index, mod, stmt))):
            other = index.parse(path)
            defined = {s.name: s for s in other.tree.body if isinstance(s, ast.ClassDef)} if other.tree else {}
            for alias in stmt.names:
                if alias.name in defined:
                    classes[alias.asname or alias.name] = alias.name
                    body = ast.Module(body=[defined[alias.name]], type_ignores=[])
                    found.update({f"{alias.asname or alias.name}.{k.split('.', 1)[1]}": v
                                  for k, v in module_constants(body).items() if "." in k})
        elif (assigned := single_assignment(stmt)) and isinstance(assigned[1], ast.Name) and assigned[1].id in classes:
            prefix = f"{assigned[1].id}."
            found.update({f"{assigned[0]}.{k[len(prefix):]}": v for k, v in list(found.items()) if k.startswith(prefix)})
    return found


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
