"""One resolver: the fingerprint is the closure the builder builds from. Each change below changes
what a kernel computes the way an attacker or a careless author would write it (statement order,
import aliases, equal names in two modules, star imports, a module shadowed by a package), and
must change the kernel's fingerprint; a plain edit of the same kind is the control, and what does
not change the kernel (comments, docstrings, blank lines, line shifts, code it does not read) must
not change the fingerprint."""

from __future__ import annotations

import pytest

from ptxdiff.discovery.kernels import discover
from ptxdiff.evaluator.interp import Interp
from ptxdiff.source.modules import FileSet, ModuleIndex
from ptxdiff.targets import Device

HEAD = "import triton\nimport triton.language as tl\n"
OPS = HEAD + """
@triton.jit
def root(a):
    return tl.sqrt(a)


@triton.jit
def square(a):
    return a * a
"""


def kernel(body: str, imports: str = "", between: str = "") -> str:
    return HEAD + imports + between + f"""

@triton.jit
def k(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    tl.store(out_ptr, {body})
"""


def fp(files: dict[str, str], kid: str = "pkg/k.py::k") -> str:
    found = discover(FileSet({p: t.encode() for p, t in files.items()}))
    return found.kernels[kid].fingerprint


BASE = {"pkg/__init__.py": "", "pkg/ops.py": OPS,
        "pkg/one.py": HEAD + "C = tl.constexpr(1)\n", "pkg/two.py": HEAD + "C = tl.constexpr(2)\n"}

# (name, before, after): each `after` changes what the kernel computes
HOSTILE = [
    ("rebinding statements swapped",
     {"pkg/k.py": kernel("x * C", between="C = tl.constexpr(1)\nC = tl.constexpr(2)\n")},
     {"pkg/k.py": kernel("x * C", between="C = tl.constexpr(2)\nC = tl.constexpr(1)\n")}),
    ("a read moved across a rebinding",
     {"pkg/k.py": kernel("x * D", between="C = 1\nD = tl.constexpr(C)\nC = 2\n")},
     {"pkg/k.py": kernel("x * D", between="C = 1\nC = 2\nD = tl.constexpr(C)\n")}),
    ("jit helper aliases swapped",
     {"pkg/k.py": kernel("f(x) + g(x)", "from pkg.ops import root as f, square as g\n")},
     {"pkg/k.py": kernel("f(x) + g(x)", "from pkg.ops import square as f, root as g\n")}),
    ("one jit helper alias swapped, the other unused",
     {"pkg/k.py": kernel("f(x)", "from pkg.ops import root as f, square as g\n")},
     {"pkg/k.py": kernel("f(x)", "from pkg.ops import square as f, root as g\n")}),
    ("constant aliases swapped",
     {"pkg/k.py": kernel("x * A - B", "from pkg.one import C as A\nfrom pkg.two import C as B\n")},
     {"pkg/k.py": kernel("x * A - B", "from pkg.one import C as B\nfrom pkg.two import C as A\n")}),
    ("module aliases swapped",
     {"pkg/k.py": kernel("x * a.C - b.C", "import pkg.one as a\nimport pkg.two as b\n")},
     {"pkg/k.py": kernel("x * a.C - b.C", "import pkg.two as a\nimport pkg.one as b\n")}),
    ("equal-named constants of two modules swapped",
     {"pkg/k.py": kernel("x * one.C - two.C", "from pkg import one, two\n")},
     {"pkg/k.py": kernel("x * one.C - two.C", "from pkg import one, two\n"),
      "pkg/one.py": HEAD + "C = tl.constexpr(2)\n", "pkg/two.py": HEAD + "C = tl.constexpr(1)\n"}),
    ("the star import that wins changed (last wins)",
     {"pkg/k.py": kernel("x * C", "from pkg.one import *\nfrom pkg.two import *\n")},
     {"pkg/k.py": kernel("x * C", "from pkg.two import *\nfrom pkg.one import *\n")}),
    ("a star import after the module's own binding wins",
     {"pkg/k.py": kernel("x * C", "C = tl.constexpr(5)\nfrom pkg.two import *\n")},
     {"pkg/k.py": kernel("x * C", "C = tl.constexpr(5)\nfrom pkg.two import *\n"),
      "pkg/two.py": HEAD + "C = tl.constexpr(3)\n"}),
    ("a helper redefined later in the same module, definitions swapped",
     {"pkg/k.py": kernel("h(x)", between="@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n\n\n"
                                         "@triton.jit\ndef h(a):\n    return a * a\n")},
     {"pkg/k.py": kernel("h(x)", between="@triton.jit\ndef h(a):\n    return a * a\n\n\n"
                                         "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n")}),
    ("a conditional rebinding moved above the plain one",
     {"pkg/k.py": kernel("x * C", between="FLAG = True\nC = tl.constexpr(1)\nif FLAG:\n    C = tl.constexpr(2)\n")},
     {"pkg/k.py": kernel("x * C", between="FLAG = True\nif FLAG:\n    C = tl.constexpr(2)\nC = tl.constexpr(1)\n")}),
    ("a package added beside the module it shadows",
     {"pkg/k.py": kernel("helpers.h(x)", "from pkg import helpers\n"),
      "pkg/helpers.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n"},
     {"pkg/k.py": kernel("helpers.h(x)", "from pkg import helpers\n"),
      "pkg/helpers.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n",
      "pkg/helpers/__init__.py": HEAD + "@triton.jit\ndef h(a):\n    return a * a\n"}),
    ("`from pkg import sub` is the package's name, `import pkg.sub` the submodule",
     {"pkg/k.py": kernel("m.h(x)", "import pkg.sub as m\n"),
      "pkg/__init__.py": "from . import other as sub\n",
      "pkg/sub.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n",
      "pkg/other.py": HEAD + "@triton.jit\ndef h(a):\n    return a * a\n"},
     {"pkg/k.py": kernel("m.h(x)", "from pkg import sub as m\n"),
      "pkg/__init__.py": "from . import other as sub\n",
      "pkg/sub.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n",
      "pkg/other.py": HEAD + "@triton.jit\ndef h(a):\n    return a * a\n"}),
    ("a helper moved to the module a star import now takes it from",
     {"pkg/k.py": kernel("h(x)", "from pkg.one import *\nfrom pkg.two import *\n"),
      "pkg/one.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n",
      "pkg/two.py": HEAD + "@triton.jit\ndef g(a):\n    return a * a\n"},
     {"pkg/k.py": kernel("h(x)", "from pkg.one import *\nfrom pkg.two import *\n"),
      "pkg/one.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n",
      "pkg/two.py": HEAD + "@triton.jit\ndef h(a):\n    return a * a\n"}),
]


@pytest.mark.parametrize("name, before, after", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_a_change_to_what_the_kernel_reads_changes_its_fingerprint(name, before, after):
    assert fp({**BASE, **before}) != fp({**BASE, **before, **after})


def test_controls_a_plain_change_is_seen_and_what_the_kernel_does_not_read_is_not():
    files = {**BASE, "pkg/k.py": kernel("f(x)", "from pkg.ops import root as f, square as g\n")}
    plain = {**files, "pkg/k.py": kernel("g(x)", "from pkg.ops import root as f, square as g\n")}
    assert fp(files) != fp(plain)
    # comments, a docstring, blank lines, a line shift, an unrelated statement between the imports
    shifted = {**files, "pkg/k.py": '"""doc"""\n# a comment\n\n\n' + kernel(
        "f(\n        x)", "from pkg.ops import root as f, square as g  # why\nUNRELATED = 3\n")}
    assert fp(files) == fp(shifted)
    # an edit of a module the kernel does not read, or of a name of a read module it does not read
    other = {**files, "pkg/one.py": HEAD + "C = tl.constexpr(7)\n",
             "pkg/ops.py": OPS + "\n\n@triton.jit\ndef unused(a):\n    return a\n"}
    assert fp(files) == fp(other)


def test_a_star_import_binds_what_python_binds():
    star = {**BASE, "pkg/k.py": kernel("x * C", "from pkg.one import *\n")}
    hidden = {**star, "pkg/one.py": HEAD + "__all__ = ['D']\nC = tl.constexpr(1)\nD = 2\n"}
    edited = {**hidden, "pkg/one.py": HEAD + "__all__ = ['D']\nC = tl.constexpr(9)\nD = 2\n"}
    assert fp(hidden) == fp(edited)      # `__all__` leaves C out: the kernel's C is not pkg.one's
    assert fp(star) != fp({**star, "pkg/one.py": HEAD + "C = tl.constexpr(9)\n"})


def evaluated(files: dict[str, str], name: str, path: str = "pkg/k.py"):
    index = ModuleIndex(FileSet({p: t.encode() for p, t in files.items()}))
    return Interp(index, Device.for_target(90)).env(path).resolve(name)


def test_the_builder_resolves_star_imports_as_the_fingerprint_does():
    last = {**BASE, "pkg/k.py": "from pkg.one import *\nfrom pkg.two import *\n"}
    assert evaluated(last, "C").value == 2
    assert evaluated({**last, "pkg/k.py": "from pkg.two import *\nfrom pkg.one import *\n"}, "C").value == 1
    over = {**BASE, "pkg/k.py": "import triton.language as tl\nC = tl.constexpr(5)\nfrom pkg.two import *\n"}
    assert evaluated(over, "C").value == 2
    under = {**BASE, "pkg/k.py": "import triton.language as tl\nfrom pkg.two import *\nC = tl.constexpr(5)\n"}
    assert evaluated(under, "C").value == 5


def test_a_stored_discovery_brought_up_to_date_sees_a_package_that_now_shadows_a_module():
    from ptxdiff.discovery.memo import update

    before = {**BASE, "pkg/k.py": kernel("helpers.h(x)", "from pkg import helpers\n"),
              "pkg/helpers.py": HEAD + "@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n"}
    after = {**before, "pkg/helpers/__init__.py": HEAD + "@triton.jit\ndef h(a):\n    return a * a\n"}
    snapshot = FileSet({p: t.encode() for p, t in after.items()})
    base = discover(FileSet({p: t.encode() for p, t in before.items()}))
    assert "pkg/helpers/__init__.py" in base.kernels["pkg/k.py::k"].probes
    updated = update(base, snapshot, (), {"pkg/helpers/__init__.py"})
    assert updated.kernels["pkg/k.py::k"].fingerprint == fp(after) != fp(before)


def test_a_kernel_file_renamed_without_an_edit_builds_the_same_kernel():
    files = {**BASE, "pkg/k.py": kernel("f(x) * C", "from .ops import root as f\nfrom pkg.one import C\n")}
    moved = {**BASE, "pkg/k2.py": files["pkg/k.py"]}
    assert fp(files) == fp(moved, "pkg/k2.py::k")
    # moved to another package, its relative import now reads another module: a change
    other = {**BASE, "lib/__init__.py": "", "lib/ops.py": OPS, "lib/k.py": files["pkg/k.py"]}
    assert fp(files) != fp(other, "lib/k.py::k")
