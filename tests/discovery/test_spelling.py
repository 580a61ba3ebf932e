"""A kernel is whatever `triton.jit` returned, however it is spelled: aliases, the repository's own
decorators and factories (also imported from another module), call forms (also inside `try:`),
class bodies, function bodies, `__init__.py`; a function that uses triton's language but
resolves to no jit object is reported with why; other backends are marked."""

from __future__ import annotations

import ast

from ptxdiff.discovery.decorators import closure_reads
from ptxdiff.discovery.kernels import discover
from ptxdiff.source.modules import FileSet, ModuleIndex

BODY = '''(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2.0, mask=offs < n)
'''
HEAD = "import triton\nimport triton.language as tl\n"


def found(files: dict[str, str]) -> dict:
    return discover(FileSet({p: t.encode() for p, t in files.items()})).kernels


def test_aliases_of_jit_and_autotune() -> None:
    text = HEAD + '''from triton import jit as J
import triton as tr
from triton import autotune as at
JJ = triton.jit
jit = triton.jit


@J
def a''' + BODY + '''

@JJ
def b''' + BODY + '''

@tr.jit
def c''' + BODY + '''

@at(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@jit
def d''' + BODY
    kernels = found({"ops/k.py": text})
    assert set(kernels) == {"ops/k.py::a", "ops/k.py::b", "ops/k.py::c", "ops/k.py::d"}
    assert all(not k.unresolved and not k.backend for k in kernels.values())


def test_repository_decorators_and_factories_also_imported() -> None:
    deco = HEAD + '''

def triton_jit(**kw):
    return triton.jit(**kw)


def my_jit(fn):
    return triton.jit(fn)


def nested_factory(debug=False):
    def wrap(fn):
        return triton.jit(fn, debug=debug)
    return wrap
'''
    ops = HEAD + '''from .deco import triton_jit, my_jit
from . import deco


@triton_jit()
def a''' + BODY + '''

@my_jit
def b''' + BODY + '''

@deco.nested_factory(debug=False)
def c''' + BODY
    kernels = found({"pkg/__init__.py": "", "pkg/deco.py": deco, "pkg/ops.py": ops})
    assert set(kernels) == {"pkg/ops.py::a", "pkg/ops.py::b", "pkg/ops.py::c"}


def test_call_forms_also_in_try() -> None:
    text = HEAD + '''

def _k''' + BODY + '''

k = triton.jit(_k)


def _k2''' + BODY + '''

try:
    k2 = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])(triton.jit(_k2))
except ImportError:
    k2 = None


def k3''' + BODY + '''

k3 = triton.jit(k3)
'''
    kernels = found({"ops/k.py": text})
    assert set(kernels) == {"ops/k.py::k", "ops/k.py::k2", "ops/k.py::k3"}
    assert kernels["ops/k.py::k"].function == "_k" and kernels["ops/k.py::k3"].function == ""


def test_class_bodies_and_functions() -> None:
    text = HEAD + '''

class Ops:
    @staticmethod
    @triton.jit
    def k_static''' + BODY.replace("\n    ", "\n        ") + '''
    @triton.jit
    @staticmethod
    def _helper(x):
        return x * 2.0

    def _f''' + BODY.replace("\n    ", "\n        ") + '''
    k_attr = triton.jit(_f)


def launch(x, out):
    @triton.jit
    def k_inner''' + BODY.replace("\n    ", "\n        ") + '''
    k_inner[(1,)](x, out, x.numel())


def run(x, out):
    Ops.k_static[(1,)](x, out, x.numel())
'''
    kernels = found({"ops/k.py": text})
    assert set(kernels) == {"ops/k.py::Ops.k_static", "ops/k.py::Ops._helper", "ops/k.py::Ops.k_attr",
                            "ops/k.py::launch.k_inner"}
    assert kernels["ops/k.py::launch.k_inner"].launch, "its launch inside the host function is read"
    assert kernels["ops/k.py::Ops.k_static"].launch, "`Ops.k_static[grid](...)` is its launch site"


def test_class_helper_called_by_a_kernel_is_no_kernel() -> None:
    text = HEAD + '''

class Ops:
    @staticmethod
    @triton.jit
    def _helper(x):
        return x * 2.0

    @staticmethod
    @triton.jit
    def k(x_ptr, n):
        tl.store(x_ptr, Ops._helper(tl.load(x_ptr)))
'''
    assert set(found({"ops/k.py": text})) == {"ops/k.py::Ops.k"}


def test_an_aggregate_s_methods_are_helpers_of_the_kernels_that_call_them() -> None:
    """`@aggregate` classes (triton 3.4+) carry jit methods that take `self`: triton calls them on
    a value inside a kernel (`state.advance()`), never launches them; the kernel is the row."""
    text = HEAD + """from triton.language.core import _aggregate as aggregate


@aggregate
class State:
    index: tl.tensor

    @triton.constexpr_function
    def __init__(self, index):
        self.index = index

    @triton.jit
    def advance(self):
        return State(self.index + 1)


@triton.jit
def k(x_ptr, n):
    state = State(tl.program_id(0)).advance()
    tl.store(x_ptr + state.index, 1.0)
"""
    assert set(found({"ops/k.py": text})) == {"ops/k.py::k"}


def test_init_module() -> None:
    assert set(found({"pkg/__init__.py": HEAD + "\n\n@triton.jit\ndef k" + BODY})) == {"pkg/__init__.py::k"}


def test_unresolved_is_reported_with_why() -> None:
    text = HEAD + '''import mystery


@mystery.compile
def a''' + BODY + '''

def puzzle''' + BODY + '''

def host(x):
    return {tl.float16: 2}[x]
'''
    kernels = found({"ops/k.py": text})
    assert set(kernels) == {"ops/k.py::a", "ops/k.py::puzzle"}
    assert "@mystery.compile" in kernels["ops/k.py::a"].unresolved
    assert "calls tl.program_id" in kernels["ops/k.py::puzzle"].unresolved


def test_foreign_jit_is_no_kernel() -> None:
    text = "import numba\nimport cutlass.cute as cute\n\n@numba.jit\ndef f(x):\n    return x\n\n" \
           "@cute.jit\ndef g(x):\n    return x\n"
    assert found({"ops/k.py": text}) == {}


def test_other_backends_are_marked_and_gluon_is_a_kernel() -> None:
    kernels = found({
        "backends/triton_ascend/k.py": HEAD + "\n@triton.jit\ndef a" + BODY,
        "ops/npu/k.py": HEAD + "\n@triton.jit\ndef b" + BODY,
        "ops/c.py": HEAD + "try:\n    import torch_npu\nexcept ImportError:\n    pass\n\n@triton.jit\ndef c" + BODY,
        "ops/g.py": "from triton.experimental import gluon\nfrom triton.experimental.gluon import language as gl\n\n"
                    "@gluon.jit\ndef g(x_ptr):\n    gl.store(x_ptr, gl.load(x_ptr))\n",
        "ops/plain.py": HEAD + "\n@triton.jit\ndef d" + BODY,
    })
    assert {k: v.backend for k, v in kernels.items()} == {
        "backends/triton_ascend/k.py::a": "Ascend (NPU)", "ops/npu/k.py::b": "Ascend (NPU)",
        "ops/c.py::c": "Ascend (NPU)", "ops/g.py::g": "", "ops/plain.py::d": ""}


def test_an_amd_folder_is_amd_s_only_where_its_kernel_uses_amd_s_language() -> None:
    """Plain triton in `amd/` or `_hip.py` compiles for NVIDIA; an unguarded use of AMD's
    language extension (imported or spelled `tl.extra.hip...`) is AMD's wherever it is; a
    guarded import (`elif is_hip():`) is the other machine's branch."""
    hip = "\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.extra.hip.libdevice.fast_expf(tl.load(x_ptr)))\n"
    kernels = found({
        "kernels/amd/plain.py": HEAD + "\n@triton.jit\ndef a" + BODY,
        "ops/rocm_hip.py": HEAD + "\n@triton.jit\ndef b" + BODY,
        "kernels/amd/uses.py": HEAD + "from triton.language.extra.hip import libdevice\n\n@triton.jit\ndef c" + BODY,
        "ops/spelled.py": HEAD + hip,
        "ops/own.py": HEAD + "from mypkg.language.extra import hip as dl\n\n@triton.jit\ndef e" + BODY,
        "kernels/amd/host.py": HEAD + "import pyrocshmem\n\n@triton.jit\ndef g" + BODY,
        "pkg/language/extra/hip/ops.py": HEAD + "\n@triton.jit\ndef h" + BODY,
        "ops/guarded.py": HEAD + "if IS_HIP:\n    from triton.language.extra.hip import libdevice\nelse:\n"
                          "    from triton.language.extra.cuda import libdevice\n\n@triton.jit\ndef f" + BODY,
    })
    assert {k: v.backend for k, v in kernels.items()} == {
        "kernels/amd/plain.py::a": "", "ops/rocm_hip.py::b": "", "kernels/amd/uses.py::c": "ROCm (AMD)",
        "ops/spelled.py::k": "ROCm (AMD)", "ops/own.py::e": "ROCm (AMD)", "ops/guarded.py::f": "",
        "kernels/amd/host.py::g": "ROCm (AMD)", "pkg/language/extra/hip/ops.py::h": "ROCm (AMD)"}


def test_a_decorator_of_a_package_under_python_wrapping_jit_in_a_proxy() -> None:
    """A repository whose package lives in `python/pkg/` (installed from there) and whose `pkg.jit`
    returns its own proxy around `triton.jit(fn)`, re-exported by the package: kernels decorated
    with it, called or not, at module level or inside a host function, are jit objects."""
    jit = ("import triton\n\n\nclass Proxy:\n    def __init__(self, fn):\n        self.fn = fn\n\n\n"
           "def jit(fn=None, *, debug=None):\n    def decorator(fn):\n        jitted = triton.jit(fn, debug=debug)\n"
           "        return Proxy(jitted)\n    return decorator(fn) if fn is not None else decorator\n")
    kernels = found({
        "python/pkg/__init__.py": "from .jit import jit\n",
        "python/pkg/jit.py": jit,
        "python/pkg/kernels/k.py": "import triton.language as tl\nimport pkg\nfrom pkg.jit import jit as J\n\n"
                                   "@pkg.jit(debug=False)\ndef a" + BODY + "\n@J\ndef b" + BODY +
                                   "\ndef host(x):\n    @pkg.jit\n    def c" + BODY.replace("\n    ", "\n        ")
                                   + "    c[(1,)](x, x, 1)\n",
    })
    assert {k: v.module for k, v in kernels.items()} == dict.fromkeys(
        ["python/pkg/kernels/k.py::a", "python/pkg/kernels/k.py::b", "python/pkg/kernels/k.py::host.c"], "python.pkg.kernels.k")
    assert not any(k.unresolved for k in kernels.values())


def test_a_wrapper_given_jit_and_a_stub_for_machines_without_triton() -> None:
    init = '''try:
    import triton
    import triton.language as tl
except ImportError:
    triton = object()
    tl = triton


def try_decorate(get):
    def deco(*args, **kwargs):
        return get()(*args, **kwargs)
    return deco


triton_jit = try_decorate(lambda: triton.jit)
'''
    ops = "from pkg import tl, triton_jit\n\n\n@triton_jit()\ndef k" + BODY
    kernels = found({"pkg/__init__.py": init, "pkg/ops.py": ops})
    assert set(kernels) == {"pkg/ops.py::k"} and not kernels["pkg/ops.py::k"].unresolved


def test_tl_reexported_by_the_repository_still_reads_as_triton_language() -> None:
    init = "import triton\nimport triton.language as tl\n"
    ops = "from pkg import tl\nimport mystery\n\n\n@mystery.jit_it\ndef k" + BODY
    kernels = found({"pkg/__init__.py": init, "pkg/ops.py": ops})
    assert set(kernels) == {"pkg/ops.py::k"} and "not a jit function" in kernels["pkg/ops.py::k"].unresolved


def test_a_kernel_inside_a_function_reading_its_locals_is_told() -> None:
    text = HEAD + """

def launch(x, factor):
    scale = factor * 2
    @triton.jit
    def k(x_ptr, n):
        tl.store(x_ptr, tl.load(x_ptr) * scale)
    @triton.jit
    def plain(x_ptr, n):
        tl.store(x_ptr, tl.load(x_ptr) * 2.0)
"""
    mod = ModuleIndex(FileSet({"ops/k.py": text.encode()})).parse("ops/k.py")
    assert mod.tree is not None
    defs = {n.name: n for n in ast.walk(mod.tree) if isinstance(n, ast.FunctionDef)}
    assert closure_reads(mod, "launch.k", defs["k"]) == [("scale", "launch")]
    assert closure_reads(mod, "launch.plain", defs["plain"]) == []


def test_a_kernel_inside_a_function_reads_that_function_s_imports_and_helpers() -> None:
    """Imports and defs of the host function's own body, bound once, are what reading the source
    gives (pytorch/ao builds its kernels inside a function that imports triton)."""
    text = """

def build(flag):
    import triton
    import triton.language as tl
    if flag:
        tl = None
    from triton import language as lang
    @triton.jit
    def helper(x):
        return x * 2.0
    @triton.jit
    def k(x_ptr):
        tl.store(x_ptr, helper(lang.load(x_ptr)))
"""
    mod = ModuleIndex(FileSet({"ops/k.py": text.encode()})).parse("ops/k.py")
    assert mod.tree is not None
    defs = {n.name: n for n in ast.walk(mod.tree) if isinstance(n, ast.FunctionDef)}
    assert closure_reads(mod, "build.k", defs["k"]) == [("tl", "build")]   # bound twice: a closure value


def test_unresolved_through_the_full_language_name() -> None:
    text = "import triton\n\n\ndef f(x_ptr):\n    triton.language.store(x_ptr, 1.0)\n"
    kernels = found({"ops/k.py": text})
    assert "calls triton.language.store" in kernels["ops/k.py::f"].unresolved


def test_class_kernels_launched_through_a_package_and_class_helpers_of_another_module() -> None:
    lib = HEAD + "\n\nclass Act:\n    @staticmethod\n    @triton.jit\n    def forward(x):\n        return x * 2.0\n"
    kern = HEAD + "from pkg import lib\n\n\nclass Act:\n    @staticmethod\n    @triton.jit\n    def forward" + \
        BODY.replace("\n    ", "\n        ").replace("x * 2.0", "lib.Act.forward(x)")
    op = "from pkg import kernels\n\n\ndef run(x, out):\n    kernels.Act.forward[(1,)](x, out, x.numel())\n"
    kernels = found({"pkg/__init__.py": "", "pkg/lib.py": lib, "pkg/kernels/__init__.py": "from .act import *\n",
                     "pkg/kernels/act.py": kern, "pkg/op.py": op})
    assert set(kernels) == {"pkg/kernels/act.py::Act.forward"}, "lib's Act.forward is a helper, not a kernel"
    assert kernels["pkg/kernels/act.py::Act.forward"].launch, "its launch through the package's star import is read"


def test_unresolved_through_names_imported_from_the_language() -> None:
    text = "from triton.language import store as S, load\n\n\ndef f(x_ptr):\n    S(x_ptr, load(x_ptr) + 1.0)\n"
    assert "calls S" in found({"ops/k.py": text})["ops/k.py::f"].unresolved


def test_a_class_kernel_launched_from_its_own_methods() -> None:
    text = HEAD + "\n\nclass Op:\n    @staticmethod\n    @triton.jit\n    def _k" + BODY.replace("\n    ", "\n        ") + \
        "\n    def run(self, x, out):\n        self._k[(1,)](x, out, x.numel(), BLOCK=64)\n"
    kernel = found({"ops/k.py": text})["ops/k.py::Op._k"]
    assert dict(kernel.launch)["BLOCK"][0].value == 64


FORK_MODULES = '''[submodule "3rdparty/triton"]
\tpath = 3rdparty/triton
\turl = https://github.com/example/triton-dist-fork.git
'''
# a repository's language over its own triton: a builtin over a part of the fork's compiler no
# release has, and a proxy whose decorator makes a builtin at import over what every triton has
# (each a pattern of a real repository, written here from scratch)
FORK_LANGUAGE = '''from triton.language import core
from triton.language.core import builtin
from triton._C.libtriton.distributed import ir


@builtin
def rank(axis=-1, _semantic=None):
    return core.tensor(_semantic.builder.create_get_rank(axis), core.int32)


class Proxy:
    def dispatch(self, func):
        @core.builtin
        def wrapper(*args, **kwargs):
            return func(*args, **kwargs)
        return wrapper


_proxy = Proxy()


@_proxy.dispatch
def tid(axis):
    ...
'''


def test_kernels_that_call_the_builtins_of_the_repository_s_own_triton_fork_are_marked() -> None:
    files = {
        "pkg/lang.py": FORK_LANGUAGE,
        "pkg/k.py": HEAD + "from pkg.lang import rank, tid\nimport pkg.lang as dl\n\n"
                           "@triton.jit\ndef helper(x_ptr):\n    tl.store(x_ptr, dl.rank())\n\n"
                           "@triton.jit\ndef by_helper(x_ptr):\n    helper(x_ptr)\n\n"
                           "@triton.jit\ndef by_proxy(x_ptr):\n    tl.store(x_ptr, tid(0))\n\n"
                           "@triton.jit\ndef plain" + BODY,
    }
    marked = {k: (v.backend, v.fork, v.fork_builtins) for k, v in found({**files, ".gitmodules": FORK_MODULES}).items()}
    assert marked == {
        "pkg/k.py::by_helper": ("Triton fork", "3rdparty/triton: https://github.com/example/triton-dist-fork.git",
                                ("rank",)),
        # a builtin over what every triton has (a proxy's, inline asm): no sign of the fork; its rows
        # fail saying that ptxdiff does not run it
        "pkg/k.py::by_proxy": ("", "", ()), "pkg/k.py::plain": ("", "", ())}
    # triton itself as a submodule, or no submodule: a repository builtin is no sign of a fork (the
    # rows fail saying why, as before)
    upstream = FORK_MODULES.replace("example/triton-dist-fork", "triton-lang/triton")
    for other in ({**files, ".gitmodules": upstream}, files):
        assert all(not k.backend and not k.fork for k in found(other).values())


# a vendor's language over the fork, with no import of its dialect: a plain helper calls a builder
# method no release has, the builtins call the helper; a second module dispatches stubs to the
# vendor's functions by name (each a pattern of a real repository, written here from scratch)
VENDOR_LANGUAGE = '''from triton.language import core
import triton.language as tl


def lib_call(symbol, args, ret, _semantic=None):
    call = _semantic.builder.create_extern_call
    return core.tensor(call("libvendor", symbol, [a.handle for a in args]), ret)


@core.extern
def my_pe(_semantic=None):
    return lib_call("vendor_my_pe", [], core.int32, _semantic=_semantic)


@core.extern
def lane(_semantic=None):
    return tl.inline_asm_elementwise("mov.u32 $0, %laneid;", "=r", [], dtype=tl.int32, is_pure=True, pack=1,
                                     _semantic=_semantic)


@core.extern
def scratch(_semantic=None):
    return _semantic.builder.create_local_alloc(None)
'''
DISPATCH = '''import pkg.vendor.nv as nv
from triton.language import core


class Proxy:
    def __init__(self, module):
        self._module = module

    def dispatch(self, func):
        @core.builtin
        def wrapper(*args, **kwargs):
            return getattr(self._module, func.__name__)(*args, **kwargs)
        return wrapper


_proxy = Proxy(nv)


@_proxy.dispatch
def my_pe(_semantic=None):
    """Every vendor's."""
    ...


@_proxy.dispatch
def lane(_semantic=None):
    ...
'''


def test_builtins_over_a_builder_method_no_release_has_are_the_fork_s_however_reached() -> None:
    """Triton-distributed's nvshmem calls: `extern_call` builds `create_extern_call`, which only its own
    triton's builder has; the kernels reach it directly or through a stub dispatched by name. A
    builtin over inline asm or over a builder method a release has (`create_local_alloc`, Gluon's) is
    no sign of the fork, directly or dispatched."""
    kernels = ("@triton.jit\ndef direct(x_ptr):\n    tl.store(x_ptr, nv.my_pe())\n\n"
               "@triton.jit\ndef dispatched(x_ptr):\n    tl.store(x_ptr, shmem.my_pe())\n\n"
               "@triton.jit\ndef stock(x_ptr):\n    tl.store(x_ptr, shmem.lane() + nv.lane())\n\n"
               "@triton.jit\ndef gluon_method(x_ptr):\n    tl.store(x_ptr, nv.scratch())\n")
    files = {"pkg/__init__.py": "", "pkg/vendor/__init__.py": "", "pkg/vendor/nv.py": VENDOR_LANGUAGE,
             "pkg/shmem.py": DISPATCH, "pkg/k.py": HEAD + "import pkg.vendor.nv as nv\nimport pkg.shmem as shmem\n\n" + kernels,
             ".gitmodules": FORK_MODULES}
    marked = {k.rsplit("::", 1)[1]: (v.backend, v.fork_builtins) for k, v in found(files).items()}
    assert marked == {"direct": ("Triton fork", ("my_pe",)), "dispatched": ("Triton fork", ("my_pe",)),
                      "stock": ("", ()), "gluon_method": ("", ())}


def test_the_builder_methods_of_the_installed_triton_are_among_the_releases() -> None:
    from triton._C import libtriton

    from ptxdiff.discovery.triton_builder import UPSTREAM_BUILDER

    names = {a for m in (libtriton, *(getattr(libtriton, n) for n in dir(libtriton)))
             if type(m).__name__ == "module" for c in vars(m).values() if isinstance(c, type)
             for a in dir(c) if a.startswith(("create_", "get_"))}
    assert "create_extern_elementwise" in names and names <= UPSTREAM_BUILDER, sorted(names - UPSTREAM_BUILDER)


def test_a_stored_discovery_brought_up_to_date_sees_a_gitmodules_that_now_names_a_fork() -> None:
    from ptxdiff.discovery.memo import update

    files = {"pkg/lang.py": FORK_LANGUAGE,
             "pkg/k.py": HEAD + "from pkg.lang import rank\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, rank())\n"}
    base = discover(FileSet({p: t.encode() for p, t in files.items()}))
    after = FileSet({p: t.encode() for p, t in {**files, ".gitmodules": FORK_MODULES}.items()})
    assert base.kernels["pkg/k.py::k"].backend == ""
    assert update(base, after, (), {".gitmodules"}).kernels["pkg/k.py::k"].backend == "Triton fork"


def test_a_jit_function_defined_in_both_branches_of_an_if_is_no_unresolved_function() -> None:
    """`if IS_BLACKWELL: @triton.jit def safe_dot` ... `else: @triton.jit def safe_dot`: one binding
    is the jit object found, the other is a jit function too, never a row that fails as unresolved."""
    text = HEAD + '''from pkg.flags import IS_BLACKWELL

if IS_BLACKWELL:
    """A docstring-like string first in the branch."""
    @triton.jit
    def safe_dot(a, b):
        return tl.inline_asm_elementwise("mov.f32 $0, $1;", "=r,r", [tl.dot(a, b)], dtype=tl.float32,
                                         is_pure=True, pack=1)
else:
    @triton.jit
    def safe_dot(a, b):
        return tl.dot(a, b)


@triton.jit
def k(a_ptr, b_ptr, c_ptr):
    offs = tl.arange(0, 16)
    a = tl.load(a_ptr + offs[:, None] * 16 + offs[None, :])
    tl.store(c_ptr + offs[:, None] * 16 + offs[None, :], safe_dot(a, a))
'''
    kernels = found({"pkg/flags.py": "IS_BLACKWELL = False\n", "pkg/k.py": text})
    assert {k: v.unresolved for k, v in kernels.items()} == {"pkg/k.py::k": ""}


def test_a_fork_s_dialect_is_a_part_of_triton_s_compiler_no_release_has() -> None:
    import types

    import triton._C.libtriton as lib

    from ptxdiff.discovery.forks import UPSTREAM_LIBTRITON, fork_dialect

    def dialect(text: str) -> str | None:
        return fork_dialect(ModuleIndex(FileSet({"m.py": text.encode()}), ()).parse("m.py"))
    assert dialect("from triton._C.libtriton.distributed import ir\n") == "distributed"
    assert dialect("import triton._C.libtriton.distributed as d\n") == "distributed"
    assert dialect("from triton._C.libtriton import ir, passes\nfrom triton._C.libtriton.nvidia import x\n") is None
    # the installed triton's parts are all known as triton's own (a release that adds one fails here)
    assert {n for n in dir(lib) if isinstance(getattr(lib, n), types.ModuleType)} <= UPSTREAM_LIBTRITON
