"""Modules named and found the way the repository's own install does: setuptools' `package_dir`
(pyproject.toml, setup.cfg, setup.py) puts a folder under another package name, so a relative
import that climbs out of it lands in a real parent package; without one, a relative import above
the top-level package is refused in one line that names the import, the file, the line and why."""

from __future__ import annotations

import ast
import json

import pytest

from helpers import commit, make_repo, ptxdiff, rows_by_kernel
from ptxdiff.discovery.kernels import discover
from ptxdiff.discovery.memo import changed_paths, update
from ptxdiff.source.installs import Installs, declared
from ptxdiff.source.modules import AboveTop, FileSet, ModuleIndex, submodule

SETUP_PY = 'from setuptools import setup\nDIRS = {"triton.ops": "./ops/"}\nsetup(name="x", package_dir=DIRS)\n'
KERNEL = """from .. import jit
from .. import language as tl


@jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * SCALE, mask=mask)
"""


def files(**extra: str) -> FileSet:
    base = {"ops/__init__.py": "", "ops/k.py": KERNEL, "language.py": "", "tests/test_k.py": ""}
    return FileSet({p: t.encode() for p, t in {**base, **extra}.items()})


def first_from(index: ModuleIndex, path: str) -> ast.ImportFrom:
    tree = index.parse(path).tree
    assert tree is not None
    stmt = tree.body[1]
    assert isinstance(stmt, ast.ImportFrom)
    return stmt


def test_package_dir_is_read_from_each_declaring_file_the_first_naming_a_key_wins():
    assert declared(files(**{"setup.py": SETUP_PY})) == Installs((), (("triton.ops", "ops"),), "setup.py")
    cfg = "[metadata]\nname = x\n[options]\npackage_dir =\n    =python\n    mylib.ops = ops\n"
    assert declared(files(**{"setup.cfg": cfg})) == Installs(("python",), (("mylib.ops", "ops"),), "setup.cfg")
    toml = '[tool.setuptools.package-dir]\nmylib = "."\n"mylib.ops" = "kernels"\n'
    both = declared(files(**{"pyproject.toml": toml, "setup.py": SETUP_PY}))
    assert both.packages == (("mylib.ops", "kernels"), ("triton.ops", "ops"), ("mylib", ""))   # longest folder first
    assert both.source == "pyproject.toml, setup.py"
    # the one folder packages are found in is a root, as package_dir's "" is
    found = '[tool.setuptools.packages.find]\nwhere = ["python"]\n'
    assert declared(files(**{"pyproject.toml": found})).roots == ("python",)
    poetry = '[tool.poetry]\npackages = [{include = "pkg", from = "lib"}]\n'
    assert declared(files(**{"pyproject.toml": poetry})).roots == ("lib",)
    assert declared(files(**{"setup.cfg": "[options.packages.find]\nwhere = lib\n"})).roots == ("lib",)
    # what is no package name, leaves the repository or is not a literal is not an install
    odd = 'from setuptools import setup\nsetup(package_dir={"a-b": "x", "c": "../up", "d": "/abs", "triton": "t"})\n'
    assert declared(files(**{"setup.py": odd})) == Installs()
    assert declared(files(**{"setup.py": "setup(package_dir={'a': f()})\n"})) == Installs()
    assert declared(files(**{"pyproject.toml": "not toml [", "setup.cfg": "[options\n"})) == Installs()


def test_a_package_installed_under_another_name_is_named_and_found_by_it():
    index = ModuleIndex(files(**{"setup.py": SETUP_PY}))
    assert index.module_name("ops/k.py") == "triton.ops.k" and index.module_name("ops/__init__.py") == "triton.ops"
    assert index.module_name("tests/test_k.py") == "tests.test_k"
    assert index.path_of("triton.ops.k") == "ops/k.py" and index.path_of("triton.ops") == "ops/__init__.py"
    assert index.path_of("triton") is None and index.path_of("triton.language") is None   # the real triton
    assert index.absolute(index.parse("ops/k.py"), first_from(index, "ops/k.py")) == "triton"
    assert "setup.py" in index.probed["triton.ops.k"]   # a changed install re-resolves


def test_a_repository_root_installed_as_a_package_takes_the_climb():
    index = ModuleIndex(files(**{"pyproject.toml": '[tool.setuptools.package-dir]\nmylib = "."\n'}))
    assert index.module_name("ops/k.py") == "mylib.ops.k"
    assert index.absolute(index.parse("ops/k.py"), first_from(index, "ops/k.py")) == "mylib"
    assert index.path_of("mylib.language") == "language.py" and index.path_of("mylib") is None
    assert index.namespace("mylib") and index.namespace("mylib.ops") and not index.namespace("mylib.nothing")


def test_a_repository_root_with_an_init_is_the_package_one_climb_above_the_top():
    index = ModuleIndex(files(**{"__init__.py": ""}))
    base = index.absolute(index.parse("ops/k.py"), first_from(index, "ops/k.py"))
    assert base == "" and index.path_of(base) == "__init__.py"
    assert index.path_of(submodule(base, "language")) == "language.py"


def test_a_package_dir_root_is_an_import_root():
    index = ModuleIndex(FileSet({"setup.cfg": b"[options]\npackage_dir =\n    =python\n",
                                 "python/pkg/__init__.py": b"", "python/pkg/k.py": b""}))
    assert index.module_name("python/pkg/k.py") == "pkg.k" and index.path_of("pkg.k") == "python/pkg/k.py"


def test_a_climb_above_the_top_level_package_says_exactly_why_in_one_line():
    index = ModuleIndex(files())
    with pytest.raises(AboveTop) as e:
        index.absolute(index.parse("ops/k.py"), first_from(index, "ops/k.py"))
    assert str(e.value) == ("ops/k.py:2: `from .. import language as tl` climbs above the top-level package `ops` "
                            "(no package_dir in pyproject.toml, setup.cfg or setup.py installs `ops` inside another package): "
                            "the module's own error, which Python raises at this revision too")
    rooted = ModuleIndex(files(**{"__init__.py": "", "ops/k.py": "import x\nfrom ... import y\n"}))
    with pytest.raises(AboveTop, match=r"inside another package; the repository root has an __init__\.py, the "
                                       r"top of its climb\): the module's own error"):
        rooted.absolute(rooted.parse("ops/k.py"), first_from(rooted, "ops/k.py"))
    # installed, but climbing past the installed name's top
    deep = ModuleIndex(files(**{"setup.py": SETUP_PY, "ops/k.py": "import x\nfrom ... import y\n"}))
    with pytest.raises(AboveTop, match=r"^ops/k\.py:2: `from \.\.\. import y` climbs above the top-level package "
                                       r"`triton` \(setup\.py installs ops as `triton\.ops`\): the module's own error"):
        deep.absolute(deep.parse("ops/k.py"), first_from(deep, "ops/k.py"))
    # a top-level module's `from . import x` reads the repository root's x, as before
    top = ModuleIndex(FileSet({"k.py": b"import a\nfrom . import x\n", "x.py": b""}))
    assert top.absolute(top.parse("k.py"), first_from(top, "k.py")) == ""


def test_the_closure_records_the_climb_and_an_install_declared_later_rediscovers_it():
    before = discover(files(**{"ops/k.py": KERNEL.replace("SCALE", "2.0")}))
    kernel = before.kernels["ops/k.py::scale_kernel"]
    assert "setup.py" in kernel.probes and "pyproject.toml" in kernel.probes
    installed = files(**{"ops/k.py": KERNEL.replace("SCALE", "2.0"), "setup.py": SETUP_PY})
    after = update(before, installed, (), {"setup.py"})
    assert after.kernels["ops/k.py::scale_kernel"].fingerprint == discover(installed).kernels[
        "ops/k.py::scale_kernel"].fingerprint != kernel.fingerprint
    assert after.kernels["ops/k.py::scale_kernel"].module == "triton.ops.k"


class Snapshot(FileSet):
    def content_id(self, path: str) -> bytes:
        return self.files[path]


def test_an_edited_install_file_is_a_changed_path_and_other_files_are_not():
    before = Snapshot({"k.py": b"", "pyproject.toml": b"", "setup.cfg": b"", "README.md": b""})
    after = Snapshot({"k.py": b"", "pyproject.toml": b"[tool]", "setup.py": b"", "README.md": b"new",
                      ".gitmodules": b"[submodule]"})   # a triton fork's submodule: discovery/forks.py
    assert changed_paths(before, after) == {"pyproject.toml", "setup.cfg", "setup.py", ".gitmodules"}


@pytest.mark.integration
def test_diff_builds_what_the_install_makes_importable_and_refuses_the_rest_exactly(tmp_path):
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": KERNEL.replace("SCALE", "2.0")})
    commit(repo, "scale", {"ops/k.py": KERNEL.replace("SCALE", "3.0")})
    proc = ptxdiff(["diff", "HEAD^", "HEAD", "--format", "json"], repo)
    row = rows_by_kernel(json.loads(proc.stdout))["ops/k.py::scale_kernel"][0]
    assert row["verdict"] == "unmeasured" and row["old"] is None and row["new"] is None
    assert "ops/k.py:1: `from .. import jit` climbs above the top-level package `ops` (no package_dir" in row["error"]
    commit(repo, "install", {"setup.py": SETUP_PY})
    commit(repo, "scale", {"ops/k.py": KERNEL.replace("SCALE", "4.0")})
    proc = ptxdiff(["diff", "HEAD^", "HEAD", "--format", "json"], repo)
    row = rows_by_kernel(json.loads(proc.stdout))["ops/k.py::scale_kernel"][0]
    assert row["verdict"] == "constants-only" and row["old"]["regs"] and row["new"]["regs"], row


def test_the_builder_takes_the_climb_the_closure_takes():
    from ptxdiff.evaluator.interp import Interp
    from ptxdiff.instantiate.builder import Builder
    from ptxdiff.targets import Device

    kernel = KERNEL.replace("from .. import jit", "from triton import jit").replace(
        "from .. import language as tl", "import triton.language as tl\nfrom .. import consts")
    snapshot = files(**{"__init__.py": "", "consts.py": "import triton.language as tl\nSCALE = tl.constexpr(3.0)\n",
                        "ops/k.py": kernel.replace("SCALE", "consts.SCALE")})
    found = discover(snapshot).kernels["ops/k.py::scale_kernel"]
    assert "consts.py" in found.paths
    builder = Builder(Interp(ModuleIndex(snapshot), Device.for_target(90)), "installs")
    built = builder.jit(builder.interp.env("ops/k.py").resolve("scale_kernel"))
    assert built.__globals__["consts"].SCALE == 3.0
