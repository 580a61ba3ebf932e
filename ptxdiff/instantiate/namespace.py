"""Stand-ins for triton's modules (and `math`) in a kernel's globals.

Triton's code generator walks attribute chains with real `getattr` and calls what it finds, so a
real module in a kernel's globals reaches everything that module imported
(`tl.core.builtins.exec`). A kernel gets plain `types.ModuleType` objects instead, filled with
the public names of the real module that a kernel may use: triton's language builtins, its jit
functions, dtypes, classes, constexprs and constants, and submodules that are themselves triton
language modules (or `math`). Nothing else is reachable from them; from triton's top level only
what kernel bodies use. Worker side: imports triton.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import math
import os
import pkgutil
import sys
import types
from typing import Any

from ptxdiff.instantiate import torch_standin
from ptxdiff.instantiate.scan import JIT_INTERNALS, MOVED, MOVED_INTO, RENAMED
from ptxdiff.source.syntax import is_constexpr

# What kernel bodies use from `triton` itself (`triton.cdiv(N, BLOCK)`, `triton.language.x`).
TRITON_TOP = ("language", "cdiv", "next_power_of_2", "constexpr")
# triton's language modules: Triton's own, and Gluon's (`triton.experimental.gluon.language`,
# `gl.BlockedLayout`, `...nvidia.ampere.async_copy`), whose kernels compile with Gluon's front end
GLUON_LANGUAGE = "triton.experimental.gluon.language"
LANGUAGES = ("triton.language", GLUON_LANGUAGE)
# the types of triton's jit-function objects: Triton's, and Gluon's (GluonJITFunction)
_JIT_TYPES = ("triton.runtime.jit", "triton.experimental.gluon._runtime")
# Plain Python functions of triton.language that only compute on ints, bools and dtypes: kernels
# call them as constexpr functions (`get_int_dtype = triton.constexpr_function(core.get_int_dtype)`,
# which a newer triton asks for), so their stand-ins hold them wrapped as one; a triton before
# 3.6 has no constexpr functions and calls them as they are (`_log2` of its own sort).
PURE_HELPERS = ("get_int_dtype", "is_negative_zero", "_log2")

WITHHELD = "is not a name of triton's language that a kernel may use"

_PROXIES: dict[str, types.ModuleType] = {}
# this process compiles a side whose triton stands in for one before 3.0 (Side.triton2; a worker
# serves one side): set once, at the worker's start, by read_as_triton2
_AS_TRITON2 = False
# triton's own switch (3.0 and later) that reads a kernel's plain module globals as constants
GLOBALS_SWITCH = "TRITON_ALLOW_NON_CONSTEXPR_GLOBALS"


def read_as_triton2() -> None:
    """Compile in this process as triton 2.x read kernels: module globals a kernel reads are
    constants (`sqrt2 = math.sqrt(2)`; 3.x refuses them) and `tl.dot` takes 2.0's `trans_a` and
    `trans_b` (gone in 2.1). For a side whose release stands in for a triton before 3.0."""
    global _AS_TRITON2
    os.environ[GLOBALS_SWITCH] = "1"
    _AS_TRITON2 = True
    _PROXIES.clear()


def reading_as_triton2() -> bool:
    """Whether this process reads kernels as triton 2.x did (read_as_triton2)."""
    return _AS_TRITON2


def _dot_with_transposes(dot: Any, trans: Any) -> Any:
    """Triton 2.0's `tl.dot(a, b, trans_a=..., trans_b=...)`: the operands transposed with this
    triton's `tl.trans`, then its `tl.dot` (a builtin like it: the code generator passes both its
    private arguments, `_builder` or `_semantic`)."""
    @functools.wraps(dot)
    def wrapper(a: Any, b: Any, *args: Any, trans_a: bool = False, trans_b: bool = False, **kwargs: Any) -> Any:
        private = {k: v for k, v in kwargs.items() if k.startswith("_")}
        a = trans(a, **private) if trans_a else a
        b = trans(b, **private) if trans_b else b
        return dot(a, b, *args, **kwargs)
    return wrapper


def _language_module(name: str) -> bool:
    return name == "math" or any(name == root or name.startswith(f"{root}.") for root in LANGUAGES)


def _of_language(value: object) -> bool:
    """Defined in one of triton's language modules (its `__module__`)."""
    return str(getattr(value, "__module__", None) or "").startswith(LANGUAGES)


@functools.cache
def backend_modules() -> dict[str, types.ModuleType]:
    """Triton's code generator swaps a module named like a key for its value (generic libdevice
    -> the CUDA one) and then reads the real module: the stand-ins and the repository's module
    objects never carry one of these names."""
    mapping: dict[str, types.ModuleType] = {}
    try:
        from triton.language.extra.cuda import libdevice
        mapping["triton.language.extra.libdevice"] = libdevice
    except ImportError:  # pragma: no cover (an old triton without it)
        pass
    try:
        from triton.backends.nvidia.compiler import CUDABackend
        mapping.update(CUDABackend.get_module_map(None))  # it reads no state
    except Exception:  # another triton: the names above still hold
        pass
    return mapping


def _is_jit_callable(value: object) -> bool:
    """One of triton's own jit (or constexpr) functions: JITFunction, ConstexprFunction."""
    return type(value).__module__ in _JIT_TYPES and _of_language(value)


def private_language(value: object) -> bool:
    """What triton's language keeps under one underscore that is its own language code: a jit or
    constexpr function, a builtin (marked `__triton_builtin__`), or a plain function of its
    language modules that takes constexprs only, which triton through 3.3 calls as Python while it
    compiles (`tl.standard._log2(i: core.constexpr)`)."""
    return _is_jit_callable(value) or getattr(value, "__triton_builtin__", False) is True or _constexpr_helper(value)


def _constexpr_helper(value: object) -> bool:
    import inspect

    import triton.language as tl

    if not isinstance(value, types.FunctionType) or not _of_language(value):
        return False
    params = list(inspect.signature(value).parameters.values())
    return bool(params) and all(p.annotation in (tl.constexpr, "core.constexpr", "tl.constexpr", "constexpr")
                                for p in params)


def allowed(value: object, depth: int = 0) -> bool:
    """A value a kernel may get from triton's language modules or math: a language builtin, one of
    triton's jit functions, a dtype, a language class, a constexpr of an allowed value, a
    constant, a math function; never a module, a dict, a plain Python function or anything else
    through which other objects can be reached."""
    import triton.language as tl

    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return True
    if isinstance(value, tuple):
        return depth < 4 and all(allowed(v, depth + 1) for v in value)
    if isinstance(value, tl.dtype):
        return True
    if isinstance(value, tl.constexpr):
        return depth < 4 and allowed(value.value, depth + 1)
    if isinstance(value, type):  # triton.language's classes; ir's enums it re-exports (PropagateNan)
        return value.__module__.startswith((*LANGUAGES, "triton._C")) and not _holds_module(value)
    if isinstance(value, types.FunctionType):
        return value.__dict__.get("__triton_builtin__") is True and _of_language(value)
    if isinstance(value, types.BuiltinFunctionType):
        return value.__module__ == "math"
    return _is_jit_callable(value)


@functools.cache
def _import_language() -> None:
    """Import every public module of triton.language first, so that the stand-ins hold the same
    tree whatever was imported before (`tl.extra.libdevice` exists once someone imported it)."""
    for language in LANGUAGES:
        try:
            package = importlib.import_module(language)
        except ImportError:   # a triton before Gluon
            continue
        for found in pkgutil.walk_packages(package.__path__, f"{language}.", onerror=lambda name: None):
            if not any(part.startswith("_") for part in found.name.split(".")):
                try:
                    importlib.import_module(found.name)
                except Exception:  # a backend module that does not load here is not a kernel's
                    continue


def _holds_module(cls: type) -> bool:
    """A class with a module among its public attributes (`TritonSemantic.lang`): through it the
    real module would be reachable."""
    return any(isinstance(inspect.getattr_static(cls, attr, None), types.ModuleType)
               for attr in dir(cls) if not attr.startswith("_"))


def proxy(real: types.ModuleType) -> types.ModuleType:
    """The stand-in of one of triton's language modules (or math); built once per process."""
    _import_language()
    mapped = backend_modules().get(real.__name__, real)
    name = mapped.__name__
    if name in _PROXIES:
        return _PROXIES[name]
    import triton

    stand_in = types.ModuleType(name, f"ptxdiff's stand-in for {name}: public language names only")
    _PROXIES[name] = stand_in
    for attr, value in sorted(vars(mapped).items()):
        if attr.startswith("_") and (attr.startswith("__") or not (private_language(value) or attr in PURE_HELPERS)):
            continue   # a private name only for triton's own jit functions (`from ...standard import _log2`)
            # and builtins (`tl._experimental_descriptor_load`, triton 3.3)
        if isinstance(value, types.ModuleType):
            if _language_module(value.__name__):
                setattr(stand_in, attr, proxy(value))
        elif allowed(value):
            setattr(stand_in, attr, value)
        elif attr in PURE_HELPERS and isinstance(value, types.FunctionType):   # before 3.6 kernels call them as they are
            setattr(stand_in, attr, triton.constexpr_function(value) if hasattr(triton, "constexpr_function") else value)
    for old, new in RENAMED.items() if name == "triton.language" else ():
        value = vars(mapped).get(old, vars(stand_in).get(new))   # this triton's own, else the renamed one
        if value is not None and allowed(value):
            setattr(stand_in, old, value)
    for old, dotted in MOVED.items() if name == "triton.language" else ():
        moved = sys.modules.get(dotted)
        if old not in vars(stand_in) and moved is not None:
            setattr(stand_in, old, proxy(moved))
    if _AS_TRITON2 and name == "triton.language":
        stand_in.dot = _dot_with_transposes(mapped.dot, mapped.trans)  # type: ignore[attr-defined]
    donor = sys.modules.get(MOVED_INTO.get(name, ""))
    for attr, value in sorted(vars(proxy(donor)).items()) if donor is not None else ():
        if not attr.startswith("_") and attr not in vars(stand_in):
            setattr(stand_in, attr, value)
    return stand_in


def renamed_note(dotted: list[str], stand_in: object) -> str | None:
    """What a kernel's `tl._experimental_make_tensor_descriptor`, `tl.libdevice.erf` or
    `tl.math.fast_expf` is compiled as, when this triton has only the newer name or place (scan.py's
    RENAMED, MOVED, MOVED_INTO); None for any other name."""
    name = stand_in.__name__ if isinstance(stand_in, types.ModuleType) else ""
    if name == "triton.language" and len(dotted) > 2 and f"{name}.{dotted[1]}" in MOVED_INTO:
        name, dotted = f"{name}.{dotted[1]}", [".".join(dotted[:2]), *dotted[2:]]   # `tl.math.round`
    real, old = sys.modules.get(name), dotted[1] if len(dotted) > 1 else ""
    if real is None or not old or hasattr(real, old):
        return None
    if name in MOVED_INTO and hasattr(sys.modules.get(MOVED_INTO[name]), old):
        now, what = f"{MOVED_INTO[name]}.{old}", "place"
    elif name == "triton.language" and old in {**RENAMED, **MOVED}:
        now, what = RENAMED.get(old) or MOVED[old], "name" if old in RENAMED else "place"
    else:
        return None
    return f"`{'.'.join(dotted[:2])}` compiled as `{now}`, its {what} in this triton"


def triton_top() -> types.ModuleType:
    """The stand-in of `triton`: `language` and the few helpers kernel bodies call."""
    if "triton" not in _PROXIES:
        import triton
        import triton.language as tl

        stand_in = types.ModuleType("triton", "ptxdiff's stand-in for triton: what kernel bodies use")
        for attr in TRITON_TOP:
            if attr == "language":
                stand_in.language = proxy(tl)  # type: ignore[attr-defined]
            elif hasattr(triton, attr):
                setattr(stand_in, attr, getattr(triton, attr))
        try:   # Gluon's language, the one name of `triton.experimental` kernels read
            gluon_language = importlib.import_module(GLUON_LANGUAGE)
        except ImportError:
            pass
        else:
            experimental = types.ModuleType("triton.experimental", "ptxdiff's stand-in: Gluon's language only")
            gluon = types.ModuleType("triton.experimental.gluon", "ptxdiff's stand-in: Gluon's language only")
            gluon.language = proxy(gluon_language)  # type: ignore[attr-defined]
            experimental.gluon = gluon  # type: ignore[attr-defined]
            stand_in.experimental = experimental  # type: ignore[attr-defined]
        _PROXIES["triton"] = stand_in
    return _PROXIES["triton"]


def root(name: str) -> types.ModuleType | None:
    """The stand-in a dotted name starts from: `triton`, `math` or `torch` (dtype limits only,
    torch_standin.py); None for anything else."""
    if name == "triton":
        return triton_top()
    if name == "math":
        return proxy(math)
    if name == "torch":
        if "torch" not in _PROXIES:
            _PROXIES["torch"] = torch_standin.stand_in()
        return _PROXIES["torch"]
    return None


def lookup(dotted: str) -> tuple[bool, object]:
    """(True, value) for a dotted name kernels may use (`triton.language.float16`,
    `triton.language.extra.libdevice`, `math.pi`), read through the stand-ins; (False, None)
    when it is not one (a private name but one of triton's jit functions, a module triton
    imported, anything outside)."""
    parts = dotted.split(".")
    value: object = root(parts[0])
    if value is None:
        return False, None
    for attr in parts[1:]:
        if attr.startswith("__") or not isinstance(value, types.ModuleType) or attr not in vars(value):
            return False, None
        value = vars(value)[attr]
    return True, value


def withheld(value: object, attrs: list[str]) -> str | None:
    """`a.b` read from a stand-in: the dotted name of the first attribute the real module has but
    the stand-in leaves out (`triton.language.core.builtins`); None when there is none (a name
    this triton lacks too is triton's own error to give)."""
    for attr in attrs:
        if not (isinstance(value, types.ModuleType) and _PROXIES.get(value.__name__) is value):
            return None
        if attr in vars(value):
            value = vars(value)[attr]
            continue
        real = sys.modules.get(value.__name__)
        return f"{value.__name__}.{attr}" if real is not None and attr in vars(real) else None
    return None


def jit_internals() -> frozenset[str]:
    """The attribute names a kernel may not read (scan.JIT_INTERNALS), with those the installed
    triton's jit-function objects have that hold callables or mappings."""
    import triton.language as tl

    names = set(JIT_INTERNALS)
    for obj in (tl.sum, getattr(tl.target_info, "is_cuda", None) if hasattr(tl, "target_info") else None):
        if obj is None:
            continue
        for attr in {*dir(type(obj)), *vars(obj)}:
            if attr.startswith("_"):
                continue
            static = inspect.getattr_static(obj, attr, None)
            if callable(static) or isinstance(static, (staticmethod, classmethod, dict, set)) or \
                    isinstance(static, list) and not all(isinstance(v, (str, int)) for v in static):
                names.add(attr)
    return frozenset(names)


def language_helpers() -> frozenset[str]:
    """The jit functions and builtins this triton's language modules keep under one underscore
    (`tl.standard._log2` in older releases, `_sum_combine`), and the builtin methods of their
    classes (Gluon's `smem._reinterpret(...)` in 3.5-3.7): triton's own code, which a kernel may
    call like any public name (scan.refusal)."""
    _import_language()
    found = set()
    for name, module in list(sys.modules.items()):
        if module is None or not _language_module(name) or name == "math":
            continue
        for k, v in vars(module).items():
            if k.startswith("_") and not k.startswith("__") and private_language(v):
                found.add(k)
            if isinstance(v, type) and v.__module__ == name:
                found |= {a for a, m in vars(v).items() if a.startswith("_") and not a.startswith("__")
                          and getattr(m, "__triton_builtin__", False) is True}
    return frozenset(found)


def reserved(name: str) -> bool:
    """A module name triton's code generator would swap for a real module (backend_modules)."""
    return name in backend_modules()


def constexpr_annotations(tree: ast.Module | None) -> dict[str, Any]:
    """`__annotations__` of a module's globals annotated constexpr (`NUM: tl.constexpr = 1`): triton
    3.0 reads a kernel's global as a constant where the module annotates it so (3.3 and later refuse
    it, as they would the repository's own import); none: no key, as Python leaves it."""
    import triton.language as tl

    found = {stmt.target.id: tl.constexpr for stmt in (tree.body if tree is not None else ())
             if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and is_constexpr(stmt.annotation)}
    return {"__annotations__": found} if found else {}
