"""Kernels written for a triton of the repository's own: a fork it builds (a git submodule such as
`3rdparty/triton` whose URL is not triton's) and whose compiler the kernel needs, because it calls,
from its body or its jit helpers', builtins the repository defines over a part of that fork's
compiler that no release of triton has (`from triton._C.libtriton.distributed import ir`, then
`@builtin def rank(axis, _semantic=None): ... _semantic.builder.create_get_rank(...)`), or that call
a builder method no release has, themselves or through the repository's functions (`extern_call`'s
`create_extern_call`), also where the kernel reaches them through a stub its module's decorator
dispatches by name to a vendor module (`libshmem_device.my_pe`). Triton runs
a builtin as Python while it compiles, against its own builder and dialect: no release of triton
compiles such a kernel, and ptxdiff never runs a revision's code, so the kernel is shown as written
for that fork, like another backend's, never as a failed NVIDIA row. The repository's plain triton
kernels compile as any other. Pure AST work.
"""

from __future__ import annotations

import ast
import re

from ptxdiff.discovery.spelling import GLUON, JIT, TRITON_BUILTINS, Spelling
from ptxdiff.discovery.triton_builder import UPSTREAM_BUILDER
from ptxdiff.source.modules import Files, ModuleIndex, ParsedModule, nested_statements
from ptxdiff.source.syntax import walk

FORK = "Triton fork"   # the backend such a kernel is shown as written for
GITMODULES = ".gitmodules"

# triton's own repositories: a submodule of one of them is triton itself, built from source
_UPSTREAM = re.compile(r"[:/](triton-lang|openai)/triton(\.git)?/*$", re.IGNORECASE)
_SECTION = re.compile(r"^\s*\[submodule\s+\"([^\"]*)\"\s*\]\s*$")
_KEY = re.compile(r"^\s*(path|url)\s*=\s*(.*?)\s*$")


def own_triton(files: Files) -> str | None:
    """The fork of triton the repository builds (`3rdparty/triton: <url>`), from its `.gitmodules`:
    a submodule whose folder is named triton and whose URL is not triton's own; None if none."""
    if GITMODULES not in files:
        return None
    entries: list[dict[str, str]] = []
    for line in files.read(GITMODULES).decode("utf-8", "replace").splitlines():
        if _SECTION.match(line):
            entries.append({})
        elif entries and (m := _KEY.match(line)):
            entries[-1][m.group(1)] = m.group(2)
    for entry in entries:
        path, url = entry.get("path", "").rstrip("/"), entry.get("url", "")
        if path.rsplit("/", 1)[-1].lower() == "triton" and url and not _UPSTREAM.search(url):
            return f"{path}: {url}"
    return None


def _definition(index: ModuleIndex, meaning: str) -> tuple[ParsedModule, ast.FunctionDef] | None:
    """The repository `def` a meaning names (`def:path:line`)."""
    path, _, line = meaning[len("def:"):].rpartition(":")
    mod = index.parse(path)
    if mod.tree is None:
        return None
    found = next((s for top in mod.tree.body for s in nested_statements(top)
                  if isinstance(s, ast.FunctionDef) and str(s.lineno) == line), None)
    return (mod, found) if found is not None else None


# the submodules of `triton._C.libtriton` of triton's releases 3.0-3.9 (tests check the installed one's)
UPSTREAM_LIBTRITON = frozenset({"amd", "gluon_ir", "gsan_testing", "interpreter", "ir", "linear_layout", "llvm",
                                "nvidia", "passes", "proton"})


def fork_dialect(mod: ParsedModule) -> str | None:
    """A part of a fork's compiler the module imports (`from triton._C.libtriton.distributed import
    ir`: "distributed"), one no release of triton has; None if it imports none."""
    assert mod.tree is not None
    for top in mod.tree.body:
        for stmt in nested_statements(top):
            if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
                parts = stmt.module.split(".")
                subs = [parts[3]] if parts[:3] == ["triton", "_C", "libtriton"] and len(parts) > 3 else \
                    [a.name for a in stmt.names] if parts == ["triton", "_C", "libtriton"] else []
            elif isinstance(stmt, ast.Import):
                subs = [a.name.split(".")[3] for a in stmt.names if a.name.startswith("triton._C.libtriton.")]
            else:
                continue
            for sub in subs:
                if sub not in UPSTREAM_LIBTRITON:
                    return sub
    return None


def _on_builder(node: ast.Attribute) -> bool:
    """`builder.create_x` or `_semantic.builder.create_x`: a method of triton's IR builder."""
    owner = node.value
    return node.attr.startswith(("create_", "get_")) and (
        isinstance(owner, ast.Name) and owner.id == "builder" or isinstance(owner, ast.Attribute) and owner.attr == "builder")


_REACH = 8   # repository functions followed from a builtin, at most, deep


def fork_builder_methods(index: ModuleIndex, spelling: Spelling, mod: ParsedModule, fn: ast.FunctionDef) -> set[str]:
    """The builder methods no release of triton has (`create_extern_call`) that `fn` calls, itself
    or through the repository's plain functions it calls (Triton-distributed's `extern_call`)."""
    found: set[str] = set()
    todo, seen = [(mod, fn, 0)], {id(fn)}
    while todo:
        where, body, depth = todo.pop()
        for node in walk(body):
            if isinstance(node, ast.Attribute) and _on_builder(node) and node.attr not in UPSTREAM_BUILDER:
                found.add(node.attr)
            elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) and depth < _REACH:
                meaning = spelling.meaning(where, node.func)
                called = _definition(index, meaning) if meaning is not None and meaning.startswith("def:") else None
                if called is not None and id(called[1]) not in seen and not spelling.decorator_kinds(*called) & {JIT, GLUON}:
                    seen.add(id(called[1]))
                    todo.append((*called, depth + 1))
    return found


def _builtin(index: ModuleIndex, spelling: Spelling, mod: ParsedModule, fn: ast.FunctionDef) -> bool:
    """A builtin of the fork's own: a `def` under `@builtin`/`@extern` (Python triton runs while it
    compiles) over a part of the fork's compiler that no release has: in a module that imports it,
    or calling, itself or through the repository's functions, a builder method no release has. A
    builtin over what every triton has (inline asm, `extern_elementwise`) is no sign of the fork:
    its rows say that ptxdiff does not run it."""
    return any(spelling.meaning(mod, d.func if isinstance(d, ast.Call) else d) in TRITON_BUILTINS
               for d in fn.decorator_list) and (fork_dialect(mod) is not None
                                                or bool(fork_builder_methods(index, spelling, mod, fn)))


def _stub(fn: ast.FunctionDef) -> bool:
    """A decorated `def` whose body is a docstring, `...` or `pass`: its decorator makes what it is."""
    return bool(fn.decorator_list) and all(
        isinstance(s, ast.Pass) or isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
        and (s.value.value is Ellipsis or isinstance(s.value.value, str)) for s in fn.body)


def _dispatched(index: ModuleIndex, mod: ParsedModule, name: str) -> list[tuple[ParsedModule, ast.FunctionDef]]:
    """The functions named `name` at the top of the repository modules `mod` imports: what a stub
    of that name dispatches to (Triton-distributed's `@_shmem_module.dispatch def my_pe(): ...`
    picks the active vendor module's `my_pe` while triton compiles)."""
    out: list[tuple[ParsedModule, ast.FunctionDef]] = []
    for path in sorted(index.imported_paths(mod.path) - {mod.path}):
        other = index.parse(path)
        if other.tree is not None:
            out += [(other, s) for s in other.tree.body if isinstance(s, ast.FunctionDef) and s.name == name]
    return out


def repository_builtins(index: ModuleIndex, spelling: Spelling, mod: ParsedModule, fn: ast.FunctionDef) -> list[str]:
    """The repository's own triton builtins a kernel calls, from its body or the bodies of the jit
    functions it calls (transitively)."""
    todo: list[tuple[ParsedModule, ast.FunctionDef]] = [(mod, fn)]
    seen = {id(fn)}
    names: set[str] = set()
    while todo:
        where, body = todo.pop()
        for node in walk(body):
            if not isinstance(node, ast.Call) or not isinstance(node.func, (ast.Name, ast.Attribute)):
                continue
            meaning = spelling.meaning(where, node.func)
            found = _definition(index, meaning) if meaning is not None and meaning.startswith("def:") else None
            if found is None or id(found[1]) in seen:
                continue
            seen.add(id(found[1]))
            if spelling.decorator_kinds(*found) & {JIT, GLUON}:
                todo.append(found)
            elif _builtin(index, spelling, *found) or _stub(found[1]) and any(
                    _builtin(index, spelling, *target) for target in _dispatched(index, found[0], found[1].name)):
                names.add(found[1].name)
    return sorted(names)


def fork_note(fork: str, builtins: tuple[str, ...]) -> str:
    """Why a kernel is not compiled: the fork it is written for, and the builtins that need it."""
    shown = ", ".join(builtins[:4]) + (f" and {len(builtins) - 4} more" if len(builtins) > 4 else "")
    return (f"written for the repository's own triton ({fork}): it calls builtins the repository defines "
            f"over that triton ({shown}), Python its compiler runs; ptxdiff compiles with triton's releases")

