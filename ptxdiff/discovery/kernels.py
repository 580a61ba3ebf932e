"""Find the Triton kernels of a snapshot and fingerprint their *effective source*, from ASTs alone.

Effective source = the kernel (decorators included) plus, transitively, every module-level
binding of the repo it reads: `@triton.jit` helpers (also in other modules), constants,
config lists, functions used by decorators. Comments, docstrings, blank lines and line shifts do
not reach the fingerprint because it is built from `ast.dump` without positions.
Nothing is imported here, so discovery and change detection never load triton.
"""

from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize
from dataclasses import dataclass, field

from ptxdiff.discovery.callsites import Fact, facts, launch_calls, merge
from ptxdiff.discovery.hints import (
    Hint,
    constexpr_hints,
    descriptor_types,
    module_constants,
    optional_params,
)

_LOAD_CALLS = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
               "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor"}
_INT_CALLS = {"range", "static_range", "cdiv", "multiple_of", "max_contiguous"}
_FLOAT_NAMES = ("eps", "epsilon", "scale", "alpha", "beta", "slope", "temperature", "softcap",
                "momentum", "dropout_p", "p_drop", "theta", "lambd", "margin", "label_smoothing")
_INT_NAMES = ("stride", "_size", "size_", "_len", "numel", "n_elements", "_dim",
              "offset", "batch", "seq", "_idx", "ignore_index", "n_cols", "n_rows", "seed")
_INT_WORD_PREFIXES = re.compile(r"(?:^|_)(?:n|num)_")  # n_rows, num_heads, x_n_rows; not non_/mean_
_INT_SUFFIXES = ("stride",)  # Mean_ptr_row_stride, Scale_row_stride: an int whatever the name starts with


@dataclass(frozen=True)
class Param:
    name: str
    constexpr: bool
    kind: str | None  # inferred signature type for runtime params ("*fp32", "i32", "fp32"), or None
    hint: Hint | None = None   # a constexpr with no default: the guess its use in the kernel suggests
    optional: bool = False     # a runtime param the kernel tests against None


@dataclass(frozen=True)
class Kernel:
    id: str
    path: str
    name: str
    module: str
    lineno: int
    fingerprint: str
    params: tuple[Param, ...]
    paths: frozenset[str]  # the repo files its effective source reads
    names: frozenset[str] = frozenset()  # module-level names its effective source reads
    launch: tuple[tuple[str, tuple[Fact, ...]], ...] = ()  # what the repo's launch sites pass, by param
    # a device function never launched itself, that a wrapper decorator of the repo turns into
    # kernels (`@pointwise_dynamic` over `@triton.jit`): compiled inside an elementwise harness,
    # with this many outputs
    harness: int | None = None


@dataclass(frozen=True)
class Broken:
    """A file with kernels that cannot be read at this revision (syntax error, not UTF-8)."""

    path: str
    error: str
    names: tuple[str, ...] = ()


class FileSet:
    """An in-memory stand-in for a git Snapshot (corpus labels, tests): path -> bytes."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.paths = frozenset(files)

    def __contains__(self, path: str) -> bool:
        return path in self.files

    def read(self, path: str) -> bytes:
        return self.files[path]


@dataclass
class _Module:
    path: str
    name: str
    tree: ast.Module | None
    error: str | None = None
    bindings: dict[str, list[ast.stmt]] = field(default_factory=dict)
    stars: list[ast.ImportFrom] = field(default_factory=list)


def _chain(node: ast.expr) -> list[str]:
    """`a.b.c` -> ["a", "b", "c"]; a call's callee; [] for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return []


def decorator_kinds(fn: ast.FunctionDef) -> set[str]:
    kinds = set()
    for dec in fn.decorator_list:
        chain = _chain(dec)
        if chain and chain[-1] in ("jit", "autotune", "heuristics"):
            kinds.add(chain[-1])
    return kinds


def _foreign_root(index: ModuleIndex, mod: _Module, chain: list[str]) -> bool:
    """`@cute.jit`, `@numba.jit`, `@jax.jit`: the decorator's root name is imported from a package
    that is neither triton nor part of the repo, so the function is not a Triton kernel."""
    if len(chain) < 2:
        return False  # a bare `@jit` cannot be told apart; keep it
    stmts = mod.bindings.get(chain[0])
    if not stmts or not all(isinstance(st, (ast.Import, ast.ImportFrom)) for st in stmts):
        return False
    for stmt in stmts:
        if isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                return False  # relative: a repo module
            dotted = stmt.module or ""
        else:
            alias = next((a for a in stmt.names if (a.asname or a.name.split(".")[0]) == chain[0]), None)
            dotted = (alias.name if alias.asname else alias.name.split(".")[0]) if alias else ""
        if dotted.split(".")[0] == "triton" or index.path_of(dotted) or index.path_of(dotted.split(".")[0]):
            return False
    return True


def triton_kinds(index: ModuleIndex, mod: _Module, fn: ast.FunctionDef) -> set[str]:
    """decorator_kinds, ignoring decorators of other JIT compilers (`@cute.jit`)."""
    kinds = set()
    for dec in fn.decorator_list:
        chain = _chain(dec)
        if chain and chain[-1] in ("jit", "autotune", "heuristics") and not _foreign_root(index, mod, chain):
            kinds.add(chain[-1])
    return kinds


def _strip_docstrings(tree: ast.AST) -> None:
    """Docstrings are not code: drop them from modules, classes and functions (statements only
    are walked, so this stays cheap on large modules)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            node.body = body = body[1:] or [ast.Pass()]
        for stmt in body:
            todo.append(stmt)
        for block in ("orelse", "finalbody"):
            todo.extend(getattr(node, block, []) or [])
        todo.extend(getattr(node, "handlers", []) or [])


def _names_bound(stmt: ast.stmt) -> list[str]:
    """Names one simple statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name.split(".")[0]) for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [(a.asname or a.name) for a in stmt.names if a.name != "*"]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [n.id for n in ast.walk(stmt.target) if isinstance(n, ast.Name)]
    return []


def nested_statements(stmt: ast.stmt):
    """A statement and, for `if`/`try`/`with`/`for` blocks, every statement inside them
    (not inside function or class bodies)."""
    yield stmt
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    for block in ("body", "orelse", "finalbody"):
        for sub in getattr(stmt, block, []) or []:
            yield from nested_statements(sub)
    for handler in getattr(stmt, "handlers", []) or []:
        for sub in handler.body:
            yield from nested_statements(sub)


_MUTATORS = {"append", "extend", "insert", "update", "add", "setdefault", "pop", "remove", "sort", "clear"}


def mutated_name(stmt: ast.stmt) -> str | None:
    """`X.append(...)`, `X[k] = v`, `X[k] += v` at module level: the name of X (they change it)."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and f.attr in _MUTATORS and isinstance(f.value, ast.Name):
            return f.value.id
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AugAssign) else []
    for t in targets:
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return t.value.id
    return None


def _collect_bindings(mod: _Module, stmts: list[ast.stmt]) -> None:
    """name -> the top-level statements that bind or change it. A name bound inside an
    `if`/`try`/`with` block maps to the whole block: its test and other branches decide the value."""
    for stmt in stmts:
        names: list[str] = []
        for inner in nested_statements(stmt):
            names += _names_bound(inner)
            if isinstance(inner, ast.ImportFrom) and any(a.name == "*" for a in inner.names):
                mod.stars.append(inner)
            if isinstance(inner, ast.ExceptHandler) and inner.name:
                names.append(inner.name)
        changed = mutated_name(stmt)
        if changed:
            names.append(changed)
        for name in dict.fromkeys(names):
            mod.bindings.setdefault(name, []).append(stmt)


def _free_names(node: ast.AST) -> set[str]:
    """Names a definition reads from its enclosing module."""
    loads, stores = set(), set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else stores).add(sub.id)
        elif isinstance(sub, ast.arg):
            stores.add(sub.arg)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # decorators and defaults are evaluated in the module, the body sees params as locals
        outer = set()
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                outer |= {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        return (loads - stores) | outer
    return loads - stores


def _attribute_chains(node: ast.AST) -> list[list[str]]:
    return [c for sub in ast.walk(node) if isinstance(sub, ast.Attribute) and (c := _chain(sub))]


class ModuleIndex:
    """Parsed modules of one snapshot, addressed by path or dotted name, parsed once each."""

    def __init__(self, snapshot, roots: tuple[str, ...] = ()):
        self.snapshot = snapshot
        auto = ("src",) if any(p.startswith("src/") for p in snapshot.paths) else ()
        # longest root first, so src/pkg/x.py is "pkg.x" and not "src.pkg.x"
        self.roots = tuple(sorted({r.strip("/") for r in (*roots, *auto)} | {""}, key=len, reverse=True))
        self._by_path: dict[str, _Module] = {}
        self._summaries: dict[int, tuple] = {}

    def module_name(self, path: str) -> str:
        for root in self.roots:
            if not root or path.startswith(root + "/"):
                rel = path[len(root) + 1:] if root else path
                parts = rel[:-3].split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                return ".".join(parts)
        return path[:-3].replace("/", ".")

    def path_of(self, dotted: str) -> str | None:
        rel = dotted.replace(".", "/")
        for root in self.roots:
            base = f"{root}/{rel}" if root else rel
            for candidate in (base + ".py", base + "/__init__.py"):
                if candidate in self.snapshot:
                    return candidate
        return None

    def summary(self, stmt: ast.stmt) -> tuple[str, frozenset[str], tuple[tuple[str, ...], ...]]:
        """(position-free dump, free names, attribute chains) of a module-level statement,
        computed once: many kernels share the same helpers and constants."""
        key = id(stmt)
        if key not in self._summaries:
            chains = tuple(dict.fromkeys(tuple(c) for c in _attribute_chains(stmt) if len(c) > 1))
            self._summaries[key] = (ast.dump(stmt, include_attributes=False), frozenset(_free_names(stmt)), chains)
        return self._summaries[key]

    def text(self, path: str) -> str:
        """A module's source as Python reads it: UTF-8, or the encoding its coding cookie names."""
        data = self.snapshot.read(path)
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:
            encoding = "utf-8"
        return data.decode(encoding)

    def parse(self, path: str) -> _Module:
        if path in self._by_path:
            return self._by_path[path]
        mod = _Module(path=path, name=self.module_name(path), tree=None)
        try:
            text = self.text(path)
            mod.tree = ast.parse(text, filename=path)
        except (UnicodeDecodeError, LookupError):
            mod.error = f"{path}: not text in UTF-8 or in the encoding its coding line names"
        except SyntaxError as e:
            mod.error = f"{path}:{e.lineno}: SyntaxError: {e.msg}" if e.lineno else f"{path}: SyntaxError: {e.msg}"
        except ValueError as e:  # source with NUL bytes
            mod.error = f"{path}: {e}"
        if mod.tree is not None:
            _strip_docstrings(mod.tree)
            _collect_bindings(mod, mod.tree.body)
        self._by_path[path] = mod
        return mod

    def absolute(self, mod: _Module, stmt: ast.ImportFrom) -> str:
        if not stmt.level:
            return stmt.module or ""
        package = mod.name.split(".")
        if not mod.path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (stmt.level - 1)] if stmt.level > 1 else package
        return ".".join([*package, *([stmt.module] if stmt.module else [])])


class _Closure:
    """Walks one kernel's effective source and hashes it.

    The walk keeps its own work list instead of recursing, so import cycles, self-imports and
    long chains of re-exports cost nothing special: each (module, name) is looked at once."""

    def __init__(self, index: ModuleIndex):
        self.index = index
        self.parts: set[tuple[str, str]] = set()
        self.paths: set[str] = set()
        self.jit_helpers: set[tuple[str, str]] = set()
        self._seen: set[tuple[str, str]] = set()
        self._looked_up: set[tuple[str, str, tuple[str, ...]]] = set()
        self._todo: list[tuple] = []

    def add_definition(self, mod: _Module, name: str, stmts: list[ast.stmt]) -> None:
        self._todo.append((self._definition, mod, name, stmts))
        while self._todo:
            step, *args = self._todo.pop()
            step(*args)

    def _definition(self, mod: _Module, name: str, stmts: list[ast.stmt]) -> None:
        key = (mod.path, name)
        if key in self._seen:
            return
        self._seen.add(key)
        self.paths.add(mod.path)
        for stmt in stmts:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._follow_import(mod, name, stmt, ())
                continue
            dump, free, chains = self.index.summary(stmt)
            self.parts.add((name, dump))
            for inner in nested_statements(stmt):
                if isinstance(inner, (ast.Import, ast.ImportFrom)) and name in _names_bound(inner):
                    self._follow_import(mod, name, inner, ())
                elif isinstance(inner, ast.FunctionDef) and inner.name == name and "jit" in decorator_kinds(inner):
                    self.jit_helpers.add(key)
            for ref in free:
                self._lookup_later(mod, ref, ())
            for chain in chains:
                self._lookup_later(mod, chain[0], chain[1:])

    def _lookup_later(self, mod: _Module, name: str, rest: tuple[str, ...]) -> None:
        key = (mod.path, name, rest)
        if key not in self._looked_up:
            self._looked_up.add(key)
            self._todo.append((self._lookup, mod, name, rest))

    def _lookup(self, mod: _Module, name: str, rest: tuple[str, ...]) -> None:
        stmts = mod.bindings.get(name)
        if stmts:
            if all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in stmts):
                for stmt in stmts:
                    self._follow_import(mod, name, stmt, rest)
            else:
                self._todo.append((self._definition, mod, name, stmts))
            return
        for star in mod.stars:
            target = self.index.path_of(self.index.absolute(mod, star))
            if target:
                other = self.index.parse(target)
                if name in other.bindings:
                    self.paths.add(mod.path)
                    self._lookup_later(other, name, rest)
                    return

    def _follow_import(self, mod: _Module, name: str, stmt: ast.stmt, rest: tuple[str, ...]) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".")[0]
                if bound == name:
                    dotted = alias.name if alias.asname else alias.name.split(".")[0]
                    self._in_module(dotted, rest)
            return
        assert isinstance(stmt, ast.ImportFrom)
        base = self.index.absolute(mod, stmt)
        for alias in stmt.names:
            if (alias.asname or alias.name) != name:
                continue
            target = self.index.path_of(base)
            if target is not None and alias.name in self.index.parse(target).bindings:
                self.paths.add(target)
                self._lookup_later(self.index.parse(target), alias.name, rest)
            elif self.index.path_of(f"{base}.{alias.name}"):
                self._in_module(f"{base}.{alias.name}", rest)
            else:
                self.parts.add((name, f"external:{base}.{alias.name}"))

    def _in_module(self, dotted: str, rest: tuple[str, ...]) -> None:
        """Attribute access through a module alias: follow into repo modules, record others."""
        while rest and self.index.path_of(f"{dotted}.{rest[0]}"):
            dotted, rest = f"{dotted}.{rest[0]}", rest[1:]
        path = self.index.path_of(dotted)
        if path is None:
            self.parts.add((dotted, "external"))
            return
        self.paths.add(path)
        if rest:
            self._lookup_later(self.index.parse(path), rest[0], rest[1:])

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for name, dump in sorted(self.parts):
            h.update(name.encode() + b"\0" + dump.encode() + b"\0")
        return h.hexdigest()


def _is_constexpr(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        return annotation.value.endswith("constexpr")
    chain = _chain(annotation)
    return bool(chain) and chain[-1] == "constexpr"


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


def infer_param_kinds(fn: ast.FunctionDef, constexprs: bool = False) -> dict[str, str | None]:
    """Signature types for runtime params (and constexprs too, when asked) from names and use;
    None where it cannot be told."""
    params = [a.arg for a in fn.args.args if constexprs or not _is_constexpr(a.annotation)]
    nodes = list(ast.walk(fn))
    annotations = {a.arg: a.annotation for a in fn.args.args}
    # local names that hold pointers derived from params: p = X + ..., X += ...
    derived: dict[str, set[str]] = {}
    uses: dict[str, set[str]] = {}  # every name a local's value reads
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            derived.setdefault(node.targets[0].id, set()).update(_pointer_terms(node.value))
            uses.setdefault(node.targets[0].id, set()).update(
                n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):  # `k_len += nxt - cur`
            uses.setdefault(node.target.id, set()).update(
                n.id for n in ast.walk(node.value) if isinstance(n, ast.Name))

    def roots(address: ast.expr) -> tuple[set[str], set[str]]:
        """Every additive term of an address (through locals), and the `*ptr*` params among them."""
        todo, seen = list(_pointer_terms(address)), set()
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(derived.get(n, ()))
        return seen, {n for n in seen if n in params and "ptr" in n.lower()}

    # locals holding values loaded from a param pointer: y = tl.load(Y_ptr + i).to(tl.int64)
    loaded_from: dict[str, set[str]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            for value in map(_uncast, values):  # `x = tl.load(p).to(...) if HAS_X else 0`
                if isinstance(value, ast.Call) and _chain(value.func)[-1:] == ["load"] and value.args:
                    seen, named = roots(value.args[0])
                    loaded_from.setdefault(node.targets[0].id, set()).update(named or (seen & set(params)))
    # a param pointer advanced by loaded offsets (`h += boh * K`) is still the pointer, not a value
    advanced = {node.target.id for node in nodes if isinstance(node, ast.AugAssign) and isinstance(
        node.target, ast.Name) and node.target.id in params and isinstance(node.op, (ast.Add, ast.Sub))}
    advanced |= {name for name, terms in derived.items() if name in params and name in terms}
    changed = True  # and locals computed from them: row_offs = row_start + m_offs
    while changed:
        changed = False
        for local, names in uses.items():
            if local in advanced:
                continue
            sources = set().union(*(loaded_from[n] for n in names if n in loaded_from and n != local))
            if not sources <= loaded_from.get(local, set()):
                loaded_from.setdefault(local, set()).update(sources)
                changed = True
    index_pointers: set[str] = set()  # pointers whose values are offsets of another address: ints
    pointer_roots: set[str] = set()
    int_evidence: set[str] = set()
    float_evidence: set[str] = set()
    compared: set[str] = set()
    with_values: list[tuple[str, str]] = []  # (param, local) meeting in +, -, *, /
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            left, right = _uncast(node.left), _uncast(node.right)
            for a, b in ((left, right), (right, left)):
                if isinstance(a, ast.Name) and a.id in params and isinstance(b, ast.Name):
                    with_values.append((a.id, b.id))
        if isinstance(node, ast.Call):
            chain = _chain(node.func)
            name = chain[-1] if chain else ""
            if name in _LOAD_CALLS:
                arg = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("pointer", "base")), None)
                if arg is not None:
                    seen, named = roots(arg)
                    inner = {n.id for n in ast.walk(arg) if isinstance(n, ast.Name)}
                    # a loaded value is never the pointer term: `X + tl.load(Y)` offsets X by ints
                    offsets = {n for n in seen | inner | set().union(*(uses.get(t, ()) for t in seen))
                               if n in loaded_from}
                    index_pointers.update(*(loaded_from[n] for n in offsets))
                    seen -= offsets
                    # an address has one pointer term: next to a `*ptr*` param the others are offsets
                    pointer_roots |= named or seen
                    int_evidence |= seen - named if named else set()
                    int_evidence |= inner - _pointer_terms(arg)
            if name in _INT_CALLS:
                int_evidence |= {n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Compare):
            # `X is None` / `X is not None` says nothing of X's type (an optional pointer, often)
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                continue
            names = _names_outside_calls(node)  # not MASK in `tl.load(MASK) == 0`
            if any(isinstance(c, ast.Constant) and isinstance(c.value, float)
                   for c in (node.left, *node.comparators)):
                float_evidence |= names  # `if DELTA != 0.0`: a float scalar
            else:
                compared |= names  # `offs < n`: an int, unless a float literal says otherwise
    # values used in //, %, shifts or bit operations are integers: the pointer they come from holds ints
    for node in nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, _INTEGER_OPS):
            for side in (node.left, node.right):
                for name in _names_outside_calls(side):
                    if name in loaded_from:
                        index_pointers.update(loaded_from[name])
    # a scalar added to or multiplying values loaded from memory (not indices) is a float: `w + offset`
    for p, local in with_values:
        if local in loaded_from and loaded_from[local] and not loaded_from[local] & index_pointers:
            float_evidence.add(p)
    kinds: dict[str, str | None] = {}
    for p in params:
        low = p.lower()
        ann = annotations.get(p)
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            kinds[p] = ann.value
        elif low.endswith(_INT_SUFFIXES) and p not in pointer_roots:
            kinds[p] = "i32"
        elif "ptr" in low or p in pointer_roots and p not in int_evidence | compared:  # use beats a name
            # index pointers: *i32, so a commit widening their values to int64 shows as a change
            kinds[p] = "*i32" if p in index_pointers else "*fp32"
        elif p in float_evidence and p not in int_evidence or any(f == low or low.endswith("_" + f) or low.startswith(f + "_") for f in _FLOAT_NAMES):
            kinds[p] = "fp32"
        elif p in int_evidence | compared or any(s in low for s in _INT_NAMES) or _INT_WORD_PREFIXES.search(low) \
                or len(p) == 1 and p.isupper() and p in "NMKLDHTBSCE":
            kinds[p] = "i32"
        else:
            kinds[p] = None
    return kinds


@dataclass(frozen=True)
class Discovery:
    kernels: dict[str, Kernel]   # by id
    broken: dict[str, Broken]    # by path


def discover(snapshot, roots: tuple[str, ...] = (), paths: set[str] | None = None) -> Discovery:
    """Every kernel (a `@triton.jit` function not used as a helper by another) of the snapshot.

    `paths` limits which files are read (history walks one file); helpers called from files
    outside it are then not recognised as helpers.
    """
    index = ModuleIndex(snapshot, roots)
    candidates = sorted(p for p in snapshot.paths if p.endswith(".py") and (paths is None or p in paths))
    found: list[tuple[_Module, ast.FunctionDef, _Closure]] = []
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
        defined: set[str] = set()
        for top in mod.tree.body:
            for stmt in nested_statements(top):
                if not isinstance(stmt, ast.FunctionDef) or stmt.name in defined or \
                        "jit" not in triton_kinds(index, mod, stmt):
                    continue
                defined.add(stmt.name)
                closure = _Closure(index)
                closure.add_definition(mod, stmt.name, mod.bindings[stmt.name])
                found.append((mod, stmt, closure))
                helpers |= closure.jit_helpers - {(path, stmt.name)}
    launched, sites = _launches(index, {fn.name for _, fn, _ in found})
    kernels: dict[str, Kernel] = {}
    for mod, fn, closure in found:
        kinds = triton_kinds(index, mod, fn)
        if (mod.path, fn.name) in helpers and fn.name not in launched and not kinds & {"autotune", "heuristics"}:
            continue
        inferred = infer_param_kinds(fn, constexprs=True)
        inferred.update(descriptor_types(fn, mod.tree))
        hints = constexpr_hints(fn, module_constants(mod.tree), inferred)
        optional = optional_params(fn)
        params = tuple(Param(a.arg, constexpr, None if constexpr else inferred.get(a.arg), hints.get(a.arg),
                             a.arg in optional)
                       for a in fn.args.args for constexpr in [_is_constexpr(a.annotation)])
        harness = None
        if fn.name not in launched and _wrapped(fn) and not any((p.kind or "").startswith("*") for p in params) \
                and not any(isinstance(n, ast.Attribute) and n.attr == "program_id" for n in ast.walk(fn)):
            harness = _outputs(fn)
            params = harness_params(params, harness, _integer_operands(fn))
        names = [a.arg for a in fn.args.args]
        launch = merge([facts(call, where, names, consts) for call, where, consts in sites.get((mod.path, fn.name), ())])
        kid = f"{mod.path}::{fn.name}"
        kernels[kid] = Kernel(id=kid, path=mod.path, name=fn.name, module=mod.name, lineno=fn.lineno,
                              fingerprint=closure.fingerprint(), params=params, paths=frozenset(closure.paths),
                              names=frozenset(name for name, _ in closure.parts), launch=tuple(launch.items()),
                              harness=harness)
    return Discovery(kernels, broken)


def _wrapped(fn: ast.FunctionDef) -> bool:
    """A decorator of the repository's own wraps this jit function (not autotune-like)."""
    for dec in fn.decorator_list:
        chain = _chain(dec)
        keywords = dec.keywords if isinstance(dec, ast.Call) else []
        if chain and chain[-1] not in ("jit", "autotune", "heuristics") and not any(k.arg == "configs" for k in keywords):
            return True
    return False


def _outputs(fn: ast.FunctionDef) -> int:
    """How many values a device function returns (a tuple of k, or one; 0 when none)."""
    counts = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else 1
              for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None}
    return max(counts) if counts else 0


_INTEGER_OPS = (ast.LShift, ast.RShift, ast.BitAnd, ast.BitOr, ast.BitXor, ast.FloorDiv, ast.Mod)


def _integer_operands(fn: ast.FunctionDef) -> set[str]:
    """Names used in shifts, bit operations, // or %: integer values."""
    return {side.id for n in ast.walk(fn) if isinstance(n, ast.BinOp) and isinstance(n.op, _INTEGER_OPS)
            for side in (n.left, n.right) if isinstance(side, ast.Name)} | {
        n.operand.id for n in ast.walk(fn) if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert)
        and isinstance(n.operand, ast.Name)}


def harness_params(params: tuple[Param, ...], outputs: int, integers: set[str] = frozenset()) -> tuple[Param, ...]:
    """The elementwise harness around a device function: a pointer per input (`x` -> `x_ptr`,
    `*i32` for values used as integers, else `*fp32`), its constexprs as they are, a pointer per
    output, the element count and a block size."""
    inputs = tuple(Param(f"{p.name}_ptr", False, "*i32" if p.name in integers or p.kind == "i32" else "*fp32")
                   for p in params if not p.constexpr)
    kind = "*i32" if inputs and all(p.kind == "*i32" for p in inputs) else "*fp32"
    outs = tuple(Param(f"out{i}_ptr", False, kind) for i in range(outputs))
    constexprs = tuple(p for p in params if p.constexpr)
    block = Param("BLOCK", True, None, Hint((1024,), "the harness's block size"))
    return (*inputs, *outs, Param("n_elements", False, "i32"), *constexprs, block)


_SUBSCRIPTED = re.compile(rb"(\w+)\s*\[")


def _launches(index: ModuleIndex, names: set[str]):
    """Launch sites (`name[grid](...)`) of the given jit functions, in any module of the snapshot
    (a host wrapper need not mention triton): the names launched, and the sites per kernel."""
    launched: set[str] = set()
    sites: dict[tuple[str, str], list[tuple[ast.Call, ast.FunctionDef | None, dict]]] = {}
    if not names:
        return launched, sites
    wanted = {n.encode() for n in names}
    for path in sorted(p for p in index.snapshot.paths if p.endswith(".py")):
        if wanted.isdisjoint(_SUBSCRIPTED.findall(index.snapshot.read(path))):
            continue
        mod = index.parse(path)
        if mod.error:
            continue
        consts = None
        for name, call, fn in launch_calls(mod.tree):
            if name not in names:
                continue
            launched.add(name)
            target = _launch_target(index, mod, call.func.value)
            if target is not None:
                consts = module_constants(mod.tree) if consts is None else consts
                sites.setdefault(target, []).append((call, fn, consts))
    return launched, sites


def _launch_target(index: ModuleIndex, mod: _Module, callee: ast.expr) -> tuple[str, str] | None:
    """(path, function name) a launch's callee refers to: a kernel of this module, one imported
    by name (`from ops.k import kernel`), or one reached through a module alias (`k.kernel`)."""
    chain = _chain(callee)
    if not chain:
        return None
    name = chain[-1]
    if len(chain) == 1:
        stmts = mod.bindings.get(name, [])
        for stmt in stmts:
            if isinstance(stmt, ast.ImportFrom):
                alias = next((a for a in stmt.names if (a.asname or a.name) == name), None)
                path = index.path_of(index.absolute(mod, stmt)) if alias else None
                if path:
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
            base = index.absolute(mod, stmt)
            alias = next((a for a in stmt.names if (a.asname or a.name) == chain[0]), None)
            path = index.path_of(".".join([base, alias.name, *chain[1:-1]])) if alias else None
            if path:
                return path, name
    return None


JIT_DECORATOR = re.compile(rb"^[ \t]*@[\w.]*jit\b", re.MULTILINE)


def kernel_names_in(text: bytes) -> tuple[str, ...]:
    """Best-effort names of jit functions in a file that does not parse (for `failed` rows)."""
    names = re.findall(rb"@triton\.(?:jit|autotune|heuristics)[^\n]*\n(?:\s*@[^\n]*\n)*\s*def\s+(\w+)", text)
    return tuple(n.decode() for n in names)


def renamed_id(kernel_id: str, renames: dict[str, str]) -> str:
    """The id a kernel had on the old side, following a rename of its file."""
    path, _, name = kernel_id.partition("::")
    return f"{renames.get(path, path)}::{name}"

