"""The parsed modules of one snapshot: each file parsed once, its top-level bindings indexed.

Discovery, fingerprints and the restricted evaluator all ask the same questions of a module
(which statements bind a name, what a relative import refers to, which path a dotted name is),
so they share one index per snapshot. Nothing is imported or executed.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ptxdiff.source.bounds import parse_module, size_error
from ptxdiff.source.installs import DECLARING, declared
from ptxdiff.source.syntax import attribute_chains, binds_nowhere, strip_docstrings, walk
from ptxdiff.source.triton1 import meta_as_params


class FileSet:
    """An in-memory stand-in for a git Snapshot (corpus labels, tests): path -> bytes."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files
        self.paths = frozenset(files)

    def __contains__(self, path: str) -> bool:
        return path in self.files

    def read(self, path: str) -> bytes:
        return self.files[path]


class Files(Protocol):
    """What the index reads of a snapshot: a git Snapshot or a FileSet."""

    @property
    def paths(self) -> frozenset[str]: ...

    def __contains__(self, path: str) -> bool: ...

    def read(self, path: str) -> bytes: ...


@dataclass
class ParsedModule:
    """One file of the snapshot: its tree (docstrings dropped) or why it has none, and its bindings."""

    path: str
    name: str
    tree: ast.Module | None
    error: str | None = None
    bindings: dict[str, list[ast.stmt]] = field(default_factory=dict)
    stars: list[ast.ImportFrom] = field(default_factory=list)
    star_blocks: list[ast.stmt] = field(default_factory=list)   # the top-level statement of each star import
    position: dict[int, int] = field(default_factory=dict)       # id of a top-level statement -> its index


def names_bound(stmt: ast.stmt) -> list[str]:
    """Names one simple statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n.id for t in stmt.targets for n in walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    if isinstance(stmt, ast.Import):
        return [(a.asname or a.name.split(".")[0]) for a in stmt.names]
    if isinstance(stmt, ast.ImportFrom):
        return [(a.asname or a.name) for a in stmt.names if a.name != "*"]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [n.id for n in walk(stmt.target) if isinstance(n, ast.Name)]
    return []


def nested_statements(stmt: ast.stmt) -> Iterator[ast.stmt]:
    """A statement and, for `if`/`try`/`with`/`for` blocks, every statement inside them
    (not inside function or class bodies), in source order. A work list, not recursion: a long
    `elif` chain nests as deep as it is long."""
    todo = [stmt]
    while todo:
        current = todo.pop()
        yield current
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        inner = [sub for block in ("body", "orelse", "finalbody") for sub in getattr(current, block, []) or []]
        inner += [sub for handler in getattr(current, "handlers", []) or [] for sub in handler.body]
        todo.extend(reversed(inner))


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


def _collect_bindings(mod: ParsedModule, stmts: list[ast.stmt]) -> None:
    """name -> the top-level statements that bind or change it. A name bound inside an
    `if`/`try`/`with` block maps to the whole block: its test and other branches decide the value."""
    for i, stmt in enumerate(stmts):
        mod.position[id(stmt)] = i
        names: list[str] = []
        for inner in nested_statements(stmt):
            names += names_bound(inner)
            if isinstance(inner, ast.ImportFrom) and any(a.name == "*" for a in inner.names):
                mod.stars.append(inner)
                mod.star_blocks.append(stmt)
            if isinstance(inner, ast.ExceptHandler) and inner.name:
                names.append(inner.name)
        changed = mutated_name(stmt)
        if changed:
            names.append(changed)
        for name in dict.fromkeys(names):
            mod.bindings.setdefault(name, []).append(stmt)


def _free_names(node: ast.AST) -> set[str]:
    """Names a definition reads from its enclosing module."""
    loads: set[str] = set()
    stores: set[str] = set()
    for sub in walk(node):
        if isinstance(sub, ast.Name):
            (loads if isinstance(sub.ctx, ast.Load) else stores).add(sub.id)
        elif isinstance(sub, ast.arg):
            stores.add(sub.arg)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        # decorators and defaults are evaluated in the module, the body sees params as locals
        outer = set()
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                outer |= {n.id for n in walk(expr) if isinstance(n, ast.Name)}
        return (loads - stores) | outer
    return loads - stores


def _src_layout(paths: frozenset[str]) -> bool:
    """src/ is an import root: it is no package itself and holds a package or module directly."""
    if "src/__init__.py" in paths:
        return False
    return any(p.startswith("src/") and p.endswith(".py") and (p.count("/") == 1 or
               p.count("/") == 2 and p.endswith("/__init__.py")) for p in paths)


def _folder_packages(paths: frozenset[str], roots: tuple[str, ...],
                     installed: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """(name, folder) of each package one folder down that Python finds with that folder on
    sys.path, as a repository's `python/` or `lib/` is when it is installed or run from there:
    `D/P/__init__.py` where `D` is a top-level folder that is no package itself nor an import root
    already, and `P` is found nowhere else (not at the root, under no other such folder, installed
    by no package_dir, not `triton`, which is the toolchain's). Only what an import of `P` finds
    changes (it found nothing before); the files keep their names from the repository root, so
    that a folder of namespace packages (`kernels/attention/` with no `kernels/__init__.py`,
    imported as `kernels.attention`) climbs in relative imports as before."""
    taken = {name.split(".")[0] for name, _ in installed}
    at_root = {p.split("/")[0].removesuffix(".py") for p in paths}
    holders: dict[str, list[str]] = {}
    for p in paths:
        parts = p.split("/")
        if len(parts) == 3 and parts[2] == "__init__.py" and parts[1].isidentifier() and \
                not parts[0].startswith(".") and parts[0] not in roots and f"{parts[0]}/__init__.py" not in paths:
            holders.setdefault(parts[1], []).append(parts[0])
    return tuple(sorted((name, f"{folders[0]}/{name}") for name, folders in holders.items()
                        if len(folders) == 1 and name != "triton" and name not in taken and name not in at_root))


def _deep_packages(paths: frozenset[str]) -> dict[str, str]:
    """name -> folder of each package two or more folders down whose name no other folder has:
    where a package vendored deep in the repository may be (`unsloth_zoo/_vendored/fla/`)."""
    folders: dict[str, list[str]] = {}
    for p in paths:
        parts = p.split("/")
        if len(parts) > 3 and parts[-1] == "__init__.py" and parts[-2].isidentifier() and \
                not any(part.startswith(".") for part in parts):
            folders.setdefault(parts[-2], []).append("/".join(parts[:-1]))
    return {name: found[0] for name, found in folders.items() if len(found) == 1 and name != "triton"}


def _imports_itself(snapshot: Files, name: str, folder: str) -> bool:
    """Whether a module of the package in `folder` imports it by its own top-level name (`from
    fla.utils import exp2` in `.../fla/ops/op.py`): it was vendored, and the repository puts the
    folder's parent on sys.path at run time, so that the import finds it (the first 50 modules)."""
    own = re.compile(rb"(?m)^\s*(?:from\s+" + re.escape(name.encode()) + rb"(?:\.|\s)|import\s+"
                     + re.escape(name.encode()) + rb"\b)")
    modules = sorted(p for p in snapshot.paths if p.startswith(folder + "/") and p.endswith(".py"))[:50]
    return any(own.search(snapshot.read(p)) for p in modules)


def _literal_all(mod: ParsedModule) -> set[str] | None:
    """The names of a module's `__all__` when it is a literal list or tuple of strings."""
    for stmt in mod.bindings.get("__all__", ()):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, (ast.List, ast.Tuple)):
            return {e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return None


def _decode(data: bytes) -> str:
    """Source bytes as Python reads them: UTF-8, or the encoding the coding cookie names."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    return data.decode(encoding)


def submodule(base: str, name: str) -> str:
    """`base.name`; `name` itself under the repository root as a package (base "")."""
    return f"{base}.{name}" if base else name


# Python itself refuses such an import: no one can import that side, as no one can parse a syntax error
OWN_IMPORT_ERROR = "the module's own error, which Python raises at this revision too"


class AboveTop(ValueError):
    """A relative import that climbs above its module's top-level package (Python's ImportError
    "attempted relative import beyond top-level package"); the message names the import, the file
    and line, and the install that makes the package top-level."""


class ModuleIndex:
    """Parsed modules of one snapshot, addressed by path or dotted name, parsed once each.

    Names follow the repository's own install (installs.py): a folder its `package_dir` installs
    as package `P` holds `P`'s modules, and a `package_dir` root is found like src/. An import of
    a package found nowhere else finds it one folder down (`python/P/`), as with that folder on sys.path."""

    def __init__(self, snapshot: Files, roots: tuple[str, ...] = ()):
        self.snapshot = snapshot
        self.installs = declared(snapshot)
        configured = tuple(dict.fromkeys(r.strip("/") for r in roots if r.strip("/")))
        auto = tuple(dict.fromkeys((*self.installs.roots, *(("src",) if _src_layout(snapshot.paths) else ()))))
        auto = tuple(r for r in auto if r and r not in configured)
        # longest root first, so src/pkg/x.py is "pkg.x" and not "src.pkg.x"
        self.roots = tuple(sorted({*configured, *auto, ""}, key=len, reverse=True))
        self.packages = (*self.installs.packages, *_folder_packages(snapshot.paths, self.roots, self.installs.packages))
        self._deep = _deep_packages(snapshot.paths)
        self._vendored: dict[str, bool] = {}   # a deep package's name -> whether its modules import it so
        # the folders that could hold such a package: a new one there changes what a name is
        self._holders = sorted({p.split("/")[0] for p in snapshot.paths if p.count("/") > 1} - {*self.roots, "."}
                               - {p.split("/")[0] for p in snapshot.paths if p.endswith("/__init__.py") and p.count("/") == 1})
        # a file's name: the longest folder holding it, of the installed packages' and the roots'
        self._prefixes = sorted([*((folder, name) for name, folder in self.installs.packages),
                                 *((r, "") for r in self.roots)], key=lambda fp: (-len(fp[0]), not fp[1]))
        # sys.path as Python could have it: the configured roots first, then the repository root
        # (the working directory of a script or test run there); an automatic src/ root is where
        # an installed src-layout package is found, after or before the root: both are tried
        self._auto = auto
        self._orders = [(*configured, "", *auto)] + ([(*configured, *auto, "")] if auto else [])
        self._by_path: dict[str, ParsedModule] = {}
        self._summaries: dict[int, tuple[str, frozenset[str], tuple[tuple[str, ...], ...]]] = {}
        self._found: dict[str, str | None] = {}
        self._dirs: frozenset[str] | None = None
        self._exports: dict[tuple[str, str], bool] = {}
        self.ambiguous: dict[str, str] = {}    # dotted name -> why it has no one file
        self.probed: dict[str, frozenset[str]] = {}   # dotted name -> the files whose presence decides it

    def module_name(self, path: str) -> str:
        folder, package = self._prefix(path)
        rel = path[len(folder) + 1:] if folder else path
        parts = rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        return ".".join([*([package] if package else []), *parts])

    def _prefix(self, path: str) -> tuple[str, str]:
        """(folder, package installed from it or "" for a root) that names the file at `path`."""
        return next(((f, p) for f, p in self._prefixes if not f or path.startswith(f + "/")), ("", ""))

    def _installed(self, dotted: str) -> tuple[str, list[str]] | None:
        """(folder, the parts after the package) when `dotted` is in a package the install puts
        in a folder of its own."""
        for name, folder in sorted(self.packages, key=lambda nf: -len(nf[0])):   # the innermost
            if dotted == name or dotted.startswith(name + "."):
                return folder, dotted[len(name) + 1:].split(".") if dotted != name else []
        return None

    def namespace(self, dotted: str) -> bool:
        """Whether `dotted` is a folder holding modules but no __init__.py (a namespace package)."""
        installed = self._installed(dotted)
        if installed is not None:
            rel = "/".join([installed[0], *installed[1]]).strip("/")
            return any(p.startswith(rel + "/") if rel else True for p in self.snapshot.paths)
        rel = dotted.replace(".", "/") + "/"
        return any(p.startswith(f"{r}/{rel}" if r else rel) for r in self.roots for p in self.snapshot.paths)

    def path_of(self, dotted: str) -> str | None:
        """The file `import dotted` loads, found as Python's path finder finds it: on each root in
        sys.path order, a package (`x/__init__.py`) before a module (`x.py`) before a namespace
        folder (`x/`, whose portions on every root are searched for the next part); a module has
        no submodules. When the two orders of an automatic src/ root give different files, the
        name is ambiguous (`ambiguous` says why) and the root-first file is returned."""
        if dotted not in self._found:
            probes: set[str] = set()
            found = [self._find(dotted, order, probes) for order in self._orders]
            self._found[dotted] = found[0]
            self.probed[dotted] = frozenset(probes)
            if len(set(found)) > 1:
                shown = " or ".join(f or "no file" for f in found)
                self.ambiguous[dotted] = (f"`{dotted}` is {shown} depending on whether the repository root or "
                                          f"{' or '.join(r + '/' for r in self._auto)} "
                                          f"comes first on sys.path: name the import root in python_path")
        return self._found[dotted]

    def _find(self, dotted: str, order: tuple[str, ...], probes: set[str]) -> str | None:
        probes.update(DECLARING)   # the install decides where a package's modules are
        if not dotted:             # the repository root as a package (absolute())
            probes.add("__init__.py")
            return "__init__.py" if "__init__.py" in self.snapshot else None
        # a package one folder down is found where it is nowhere else (_folder_packages)
        probes.update(f"{top}/{dotted.split('.')[0]}/__init__.py" for top in self._holders)
        installed = self._installed(dotted)
        if installed is not None:
            folder, rest = installed
            if rest:
                return self._walk(rest, [folder], probes)
            init = f"{folder}/__init__.py" if folder else "__init__.py"
            probes.add(init)
            return init if init in self.snapshot else None
        found = self._walk(dotted.split("."), list(order), probes)
        top, _, inner = dotted.partition(".")
        home = self._deep.get(top)
        if found is not None or home is None:
            return found
        if top not in self._vendored:
            self._vendored[top] = _imports_itself(self.snapshot, top, home)
        if self._vendored[top]:
            # a package vendored deep (`.../_vendored/fla/`) importing itself: found nowhere else
            probes.add(f"{home}/__init__.py")
            return self._walk(inner.split("."), [home], probes) if inner else f"{home}/__init__.py"
        return found

    def _walk(self, parts: list[str], search: list[str], probes: set[str]) -> str | None:
        found: str | None = None
        for i, part in enumerate(parts):
            portions: list[str] = []
            found = None
            for folder in search:
                base = f"{folder}/{part}" if folder else part
                probes.update((base + "/__init__.py", base + ".py"))
                if base + "/__init__.py" in self.snapshot:
                    found = base + "/__init__.py"
                elif base + ".py" in self.snapshot:
                    found = base + ".py"
                elif base in self._folders():
                    portions.append(base)
                    continue
                else:
                    continue
                break
            if found is None:
                if not portions:
                    return None
                search = portions   # a namespace package: its portions on every root
            elif i < len(parts) - 1:
                if not found.endswith("/__init__.py"):
                    return None
                search = [found[:-len("/__init__.py")]]
        return found

    def _folders(self) -> frozenset[str]:
        if self._dirs is None:
            self._dirs = frozenset(p.rsplit("/", k)[0] for p in self.snapshot.paths
                                   for k in range(1, p.count("/") + 1))
        return self._dirs

    def star_provides(self, mod: ParsedModule, stmt: ast.ImportFrom, name: str) -> str | None:
        """The module a `from m import *` of `mod` takes `name` from (a repository file), or
        None when it does not bind `name` there."""
        try:
            target = self.path_of(self.absolute(mod, stmt))
        except AboveTop:
            return None
        return target if target is not None and self.exports(target, name) else None

    def binds(self, path: str, name: str) -> bool:
        """Whether the module at `path` has `name` after it ran: a statement or a star import binds it."""
        mod = self.parse(path)
        return name in mod.bindings or any(self.star_provides(mod, star, name) for star in mod.stars)

    def binds_nowhere(self, path: str, name: str) -> bool:
        """Whether the module at `path` could not bind `name` at all: no statement of it
        (syntax.binds_nowhere), no star import of a repository module that exports it, and no
        star import of a module outside the repository (whose names are not known here)."""
        mod = self.parse(path)
        if mod.tree is None or not binds_nowhere(mod.tree, name) or self.binds(path, name):
            return False
        for star in mod.stars:
            try:
                if self.path_of(self.absolute(mod, star)) is None:
                    return False
            except AboveTop:
                return False
        return True

    def exports(self, path: str, name: str) -> bool:
        """Whether `from <module at path> import *` binds `name`: it is in the module's literal
        `__all__`, or (no `__all__`) a public name the module binds, itself or by its own star imports."""
        key = (path, name)
        if key not in self._exports:
            self._exports[key] = False   # a cycle of star imports adds nothing
            mod = self.parse(path)
            listed = _literal_all(mod)
            if listed is not None:
                self._exports[key] = name in listed
            elif not name.startswith("_"):
                self._exports[key] = name in mod.bindings or any(
                    self.star_provides(mod, star, name) for star in mod.stars)
        return self._exports[key]

    def summary(self, stmt: ast.stmt) -> tuple[str, frozenset[str], tuple[tuple[str, ...], ...]]:
        """(position-free dump, free names, attribute chains) of a module-level statement,
        computed once: many kernels share the same helpers and constants."""
        key = id(stmt)
        if key not in self._summaries:
            chains = tuple(dict.fromkeys(tuple(c) for c in attribute_chains(stmt) if len(c) > 1))
            self._summaries[key] = (ast.dump(stmt, include_attributes=False), frozenset(_free_names(stmt)), chains)
        return self._summaries[key]

    def text(self, path: str) -> str:
        """A module's source as Python reads it: UTF-8, or the encoding its coding cookie names;
        a triton 1.x kernel's `**meta` read as the constexpr parameters it meant (triton1.py)."""
        return meta_as_params(_decode(self.snapshot.read(path)))

    def parse(self, path: str) -> ParsedModule:
        """A module's tree, or why there is none: it does not parse, or it is over a bound on what
        ptxdiff reads (bounds.py: its size is checked before it is decoded or parsed)."""
        if path in self._by_path:
            return self._by_path[path]
        mod = ParsedModule(path=path, name=self.module_name(path), tree=None)
        data = self.snapshot.read(path)
        mod.error = size_error(path, len(data))
        if mod.error is None:
            try:
                text = _decode(data)
            except (UnicodeDecodeError, LookupError):
                mod.error = f"{path}: not text in UTF-8 or in the encoding its coding line names"
            else:
                mod.tree, mod.error = parse_module(meta_as_params(text), path)
        if mod.tree is not None:
            strip_docstrings(mod.tree)
            _collect_bindings(mod, mod.tree.body)
        self._by_path[path] = mod
        return mod

    def imported_paths(self, path: str) -> set[str]:
        """The repository files the module at `path` imports, anywhere in it (`import a.b`: a and
        a.b; `from a import b`: a, and a.b where b is a module); none where it does not parse."""
        mod = self.parse(path)
        if mod.tree is None:
            return set()
        dotted: set[str] = set()
        for node in ast.walk(mod.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    dotted |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
            elif isinstance(node, ast.ImportFrom):
                try:
                    base = self.absolute(mod, node)
                except AboveTop:
                    continue
                dotted |= {base, *(submodule(base, a.name) for a in node.names if a.name != "*")}
        return {found for d in dotted if d and (found := self.path_of(d)) is not None}

    def absolute(self, mod: ParsedModule, stmt: ast.ImportFrom) -> str:
        """The dotted module a `from ... import` names, relative imports resolved against `mod`.
        One that climbs above the top-level package raises AboveTop, as Python does. The
        repository root is a package when it has an __init__.py; it is named "" (submodule()), and
        a top-level module's `from . import x` reads the root's `x` as before."""
        if not stmt.level:
            return stmt.module or ""
        package = mod.name.split(".") if mod.name else []
        if not mod.path.endswith("__init__.py"):
            package = package[:-1]
        rooted = "__init__.py" in self.snapshot and self._prefix(mod.path) == ("", "")
        if stmt.level > max(len(package) + rooted, 1):
            raise AboveTop(self._above(mod, stmt, package))
        package = package[: len(package) - (stmt.level - 1)] if stmt.level > 1 else package
        return ".".join([*package, *([stmt.module] if stmt.module else [])])

    def _above(self, mod: ParsedModule, stmt: ast.ImportFrom, package: list[str]) -> str:
        return f"{self._climb(mod, stmt, package)}: {OWN_IMPORT_ERROR}"

    def _climb(self, mod: ParsedModule, stmt: ast.ImportFrom, package: list[str]) -> str:
        text = ast.unparse(stmt)
        where = f"{mod.path}:{stmt.lineno}: `{text[:117] + '...' if len(text) > 120 else text}` climbs above"
        if not package:
            return f"{where} the top-level module `{mod.name}`"
        installed = next(((n, f) for n, f in self.installs.packages if mod.name.startswith(n + ".")), None)
        if installed is not None:
            return (f"{where} the top-level package `{package[0]}` ({self.installs.source} installs "
                    f"{installed[1] or 'the repository root'} as `{installed[0]}`)")
        root = "; the repository root has an __init__.py, the top of its climb" if "__init__.py" in self.snapshot else ""
        return (f"{where} the top-level package `{package[0]}` (no package_dir in {', '.join(DECLARING[:-1])} or "
                f"{DECLARING[-1]} installs `{package[0]}` inside another package{root})")
