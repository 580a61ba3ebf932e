"""The parsed modules of a snapshot: which statements a top-level statement holds, and what a
module that cannot be read gives."""

from __future__ import annotations

import ast
import textwrap

from ptxdiff.source.bounds import MAX_BYTES
from ptxdiff.source.modules import FileSet, ModuleIndex, nested_statements


def test_nested_statements_in_source_order_not_into_definitions():
    tree = ast.parse(textwrap.dedent("""
        try:
            A = 1
            if A:
                B = 2
            elif A > 1:
                C = 3
            else:
                D = 4
        except ImportError:
            E = 5
        else:
            F = 6
        finally:
            G = 7
    """))
    names = [s.targets[0].id for s in nested_statements(tree.body[0]) if isinstance(s, ast.Assign)]
    assert names == ["A", "B", "C", "D", "F", "G", "E"]   # body, orelse, finalbody, then the handlers
    fn = ast.parse("def f():\n    X = 1\n").body[0]
    assert list(nested_statements(fn)) == [fn]


def test_nested_statements_of_an_elif_chain_deeper_than_the_stack():
    """An `elif` chain nests as deep as it is long; the walk keeps a work list instead of recursing."""
    chain: ast.stmt = ast.Pass()
    for i in range(5000):
        chain = ast.If(test=ast.Constant(i), body=[ast.Pass()], orelse=[chain])
    assert sum(1 for _ in nested_statements(chain)) == 2 * 5000 + 1


def test_a_module_that_cannot_be_read_has_no_tree_and_says_why():
    index = ModuleIndex(FileSet({"big.py": b"#" * (MAX_BYTES + 1), "bad.py": b"def f(:\n", "latin.py": b"X = '\xff'\n",
                                 "ok.py": b"X = 1\n"}))
    assert index.parse("big.py").error == "big.py: 1.0 MB, over the 1 MB bound for a module ptxdiff parses"
    assert index.parse("bad.py").error == "bad.py:1: SyntaxError: invalid syntax"
    assert index.parse("latin.py").error == "latin.py: not text in UTF-8 or in the encoding its coding line names"
    ok = index.parse("ok.py")
    assert ok.error is None and ok.tree is not None and set(ok.bindings) == {"X"}


def index(*paths: str, roots: tuple[str, ...] = ()) -> ModuleIndex:
    return ModuleIndex(FileSet(dict.fromkeys(paths, b"")), roots)


def test_modules_are_found_as_pythons_path_finder_finds_them():
    # a package before a module of the same name, a module before a namespace folder
    assert index("x.py", "x/__init__.py").path_of("x") == "x/__init__.py"
    assert index("x.py", "x/y.py").path_of("x") == "x.py"
    assert index("x.py", "x/y.py").path_of("x.y") is None          # a module has no submodules
    assert index("x/y.py").path_of("x.y") == "x/y.py"              # a namespace package
    assert index("x/__init__.py", "x/y.py", "x/y/__init__.py").path_of("x.y") == "x/y/__init__.py"
    # a configured root comes first on sys.path, then the repository root
    assert index("python/ops.py", "ops.py", roots=("python",)).path_of("ops") == "python/ops.py"


def test_an_automatic_src_root_is_one_only_when_python_would_import_from_it():
    src = index("src/pkg/__init__.py", "src/pkg/k.py", "tests/test_k.py")
    assert src.roots[0] == "src" and src.path_of("pkg.k") == "src/pkg/k.py" and not src.ambiguous
    assert src.module_name("src/pkg/k.py") == "pkg.k"
    # src/ is a package itself (`import src.pkg`), or holds no module: it is no import root
    package = index("src/__init__.py", "src/pkg/__init__.py", "src/pkg/k.py")
    assert "src" not in package.roots and package.path_of("pkg.k") is None
    assert package.path_of("src.pkg.k") == "src/pkg/k.py"
    assert "src" not in index("src/main.cpp", "src/tools/gen/run.py", "ops.py").roots
    # found on one root only: that file; on both: ambiguous, and said in one line
    both = index("src/ops.py", "src/pkg/__init__.py", "ops/__init__.py", "ops/k.py")
    assert both.path_of("ops.k") == "ops/k.py" and both.path_of("ops") == "ops/__init__.py"   # the root first
    assert "ops.k" in both.ambiguous
    assert "`ops` is ops/__init__.py or src/ops.py" in both.ambiguous["ops"]
    assert "\n" not in both.ambiguous["ops"]
    assert both.path_of("pkg") == "src/pkg/__init__.py" and "pkg" not in both.ambiguous
    # a regular package on a later root wins over a namespace portion on an earlier one, whatever the order
    spread = index("ops/k.py", "src/ops/__init__.py", "src/ops/k.py")
    assert spread.path_of("ops.k") == "src/ops/k.py" and not spread.ambiguous


def test_a_package_one_folder_down_is_found_as_with_that_folder_on_sys_path():
    """`python/pkg/` (Triton-distributed's layout: its setup.py installs from python/) is `pkg`
    where `pkg` is found nowhere else; its files keep their names from the root."""
    tree = index("python/pkg/__init__.py", "python/pkg/jit.py", "python/pkg/ops/k.py", "python/setup.py",
                 "tests/test_k.py", "python/triton/__init__.py")
    assert tree.path_of("pkg.jit") == "python/pkg/jit.py" and tree.module_name("python/pkg/ops/k.py") == "python.pkg.ops.k"
    assert tree.path_of("pkg") == "python/pkg/__init__.py" and not tree.ambiguous
    assert tree.path_of("setup") is None              # only the package, not every module of the folder
    assert tree.path_of("triton") is None             # triton is the toolchain's, even in a fork's tree
    assert "python/pkg/__init__.py" in tree.probed["pkg.jit"]
    # found at the root too, or in two such folders, or the folder a package itself: as before
    assert index("python/pkg/__init__.py", "pkg/__init__.py").path_of("pkg") == "pkg/__init__.py"
    assert index("python/pkg/__init__.py", "lib/pkg/__init__.py").path_of("pkg") is None
    assert index("python/__init__.py", "python/pkg/__init__.py").path_of("pkg") is None
    # a new package in such a folder changes what the name is: its file is probed before it exists
    # a folder of namespace packages keeps its names: `..` from kernels/attention/k.py is `kernels`
    spaced = index("kernels/attention/__init__.py", "kernels/attention/k.py", "kernels/utils.py")
    assert spaced.path_of("attention.k") == "kernels/attention/k.py" and spaced.module_name(
        "kernels/attention/k.py") == "kernels.attention.k"
    mod = spaced.parse("kernels/attention/k.py")
    assert spaced.absolute(mod, ast.parse("from ..utils import f").body[0]) == "kernels.utils"
    fresh = index("lib/other.py", "lib/x/y.py", "ops.py")
    assert fresh.path_of("pkg") is None and "lib/pkg/__init__.py" in fresh.probed["pkg"]


def test_star_imports_export_what_python_exports():
    files = {"a.py": b"__all__ = ['X']\nX = 1\nY = 2\n_Z = 3\n", "b.py": b"Y = 2\n_Z = 3\nfrom a import *\n"}
    idx = ModuleIndex(FileSet(files))
    assert idx.exports("a.py", "X") and not idx.exports("a.py", "Y")
    assert idx.exports("b.py", "Y") and not idx.exports("b.py", "_Z") and idx.exports("b.py", "X")
    assert idx.binds("b.py", "_Z") and not idx.binds("b.py", "W")
