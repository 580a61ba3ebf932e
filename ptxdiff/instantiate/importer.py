"""Import a revision's modules straight from its snapshot: no checkout, work tree untouched.

A meta-path finder placed first on sys.meta_path serves every module whose file exists in the
snapshot, so `import ops.gelu`, relative imports and repo packages all resolve to that
revision's bytes. Source lines are put into linecache under a name that says which revision
they came from, which triton's `@jit` needs (it reads the function's source via inspect).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import linecache
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

from ptxdiff.git.values import printable
from ptxdiff.source.modules import ModuleIndex
from ptxdiff.source.syntax import python_lines


class SnapshotFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, index: ModuleIndex, tag: str):
        self.index = index
        self.tag = tag

    def filename(self, path: str) -> str:
        """Source name for tracebacks and triton's locations: UTF-8 whatever the path's bytes."""
        return f"{printable(path)}@{self.tag}"

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        file = self.index.path_of(fullname)
        if file is not None:
            is_pkg = file.endswith("/__init__.py")
            spec = importlib.util.spec_from_loader(fullname, self, origin=self.filename(file), is_package=is_pkg)
            spec.has_location = True  # type: ignore[union-attr]  # a loader always gives a spec
            return spec
        if self.index.namespace(fullname):
            spec = importlib.util.spec_from_loader(fullname, self, origin=None, is_package=True)
            return spec
        return None

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        file = self.index.path_of(module.__name__)
        if file is None:  # namespace package
            module.__path__ = []
            return
        text = self.index.snapshot.read(file).decode("utf-8")
        name = self.filename(file)
        linecache.cache[name] = (len(text), None, python_lines(text), name)
        module.__file__ = name
        if file.endswith("/__init__.py"):
            module.__path__ = []
        exec(compile(text, name, "exec", dont_inherit=True), module.__dict__)


def install(index: ModuleIndex, tag: str) -> SnapshotFinder:
    """Serve the snapshot's modules first; the cwd stops being an import root."""
    finder = SnapshotFinder(index, tag)
    sys.meta_path.insert(0, finder)
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]
    return finder


def uninstall(finder: SnapshotFinder) -> None:
    """Stop serving this snapshot and forget the modules it served, so another revision's
    modules of the same names can be imported next; objects already taken from them live on."""
    if finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name, module in list(sys.modules.items()):
        if getattr(getattr(module, "__spec__", None), "loader", None) is finder:
            del sys.modules[name]
