"""The tool's own triton (and the versions of installed packages), looked up for real.

Triton's modules and dtypes are the tool's code, not the repository's: whether
`triton.language.extra.libdevice` exists, what `tl.float8e5.is_fp8()` answers, which version
is installed, are questions about the tool's environment. Nothing of the repository is imported.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from pathlib import Path
from typing import Any

from ptxdiff.evaluator.values import DTYPES, Constexpr, DType, Raised


def installed_version(package: str) -> str | None:
    """A package's version from its dist-info folder name, without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    site = Path(next(iter(spec.submodule_search_locations))).parent
    found = sorted(site.glob(f"{package}-*.dist-info"))
    return found[-1].name[len(package) + 1:-len(".dist-info")] if found else None


def from_triton(value: Any) -> Any:
    """A value triton hands over (a dtype, a constexpr) as the evaluator's own."""
    try:
        import triton.language as tl
    except ImportError:  # pragma: no cover
        return value
    if isinstance(value, tl.constexpr):
        return from_triton(value.value)
    if isinstance(value, tl.dtype):
        for name in DTYPES:
            if getattr(tl, name, None) == value:
                return DType(name)
    if isinstance(value, (tuple, list)):
        return type(value)(from_triton(v) for v in value)
    return value


def triton_module_exists(dotted: str, quiet: bool = False) -> bool:
    """Import one of triton's own modules (the tool's, never the repository's) to see it exists."""
    try:
        importlib.import_module(dotted)
        return True
    except ImportError:
        if quiet:
            return False
        raise Raised("ModuleNotFoundError", f"No module named {dotted!r}") from None


def real_object(dotted: str) -> Any:
    """One of triton's (or math's) own objects, by dotted name: the tool's code, never the
    repository's. A missing module or attribute raises as Python would (`Raised`)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                raise Raised("AttributeError", f"module {'.'.join(parts[:i])!r} has no attribute {attr!r}")
            obj = getattr(obj, attr)
        return obj
    raise Raised("ModuleNotFoundError", f"No module named {parts[0]!r}")


_ABSENT = object()


def _language_object(dotted: str) -> Any:
    """One of triton's own objects outside its runtime (its language, compiler helpers), or
    _ABSENT where the name is not triton's or this triton has no such object."""
    if not dotted.startswith("triton.") or dotted.startswith("triton.runtime"):
        return _ABSENT
    try:
        return real_object(dotted)
    except Raised:
        return _ABSENT


def is_true_object(dotted: str) -> bool:
    """Whether a name of triton's is an object Python reads as true whatever its state: one whose
    type defines no `__bool__` and no `__len__` (a function, class, module, jit function); a
    repository's feature test (`getattr(gl, "barrier", None) or gl.thread_barrier`) takes the name
    this triton has. A constexpr (`tl.core.CONSTEXPR_0`, false) is not one."""
    obj = _language_object(dotted)
    return obj is not _ABSENT and not hasattr(type(obj), "__bool__") and not hasattr(type(obj), "__len__")


def triton_constant(dotted: str) -> Constexpr | None:
    """A constant of triton's own (`tl.core.CONSTEXPR_0`, a `tl.constexpr` of a plain value) as
    the value it holds: a kernel's default `descending: tl.constexpr = core.CONSTEXPR_0` is 0, read
    as triton reads it, not a name the compiler cannot convert. None for anything else; only a
    name spelled like a constant is looked up (an import of triton's modules stays a name)."""
    if not dotted.rpartition(".")[2].isupper():
        return None
    obj = _language_object(dotted)
    if obj is _ABSENT:
        return None
    import triton.language as tl
    if isinstance(obj, tl.constexpr) and (obj.value is None or isinstance(obj.value, (bool, int, float, str))):
        return Constexpr(obj.value)
    return None


GLUON_LANGUAGE = "triton.experimental.gluon.language"


def gluon_layout(dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """One of Gluon's layouts (`gl.NVMMADistributedLayout(version=[3, 0], ...)`, a frozen dataclass
    of ints and lists), built for real: triton's value, which a constexpr function hands back to
    the kernel it is compiling. None where `dotted` names no layout class of Gluon's."""
    if not dotted.startswith(f"{GLUON_LANGUAGE}.") or not dotted.endswith("Layout"):
        return None
    cls = real_object(dotted)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__.startswith(GLUON_LANGUAGE)):
        return None
    try:
        return cls(*(to_triton(a) for a in args), **{k: to_triton(v) for k, v in kwargs.items()})
    except (TypeError, ValueError, AssertionError) as e:
        raise Raised(type(e).__name__, str(e)) from None


def to_triton(value: Any) -> Any:
    """The evaluator's value as triton takes it: a dtype, else the value (lists and ints as they are)."""
    if isinstance(value, DType):
        import triton.language as tl
        return getattr(tl, value.name)
    if isinstance(value, (tuple, list)):
        return type(value)(to_triton(v) for v in value)
    return value


def is_gluon_layout(value: Any) -> bool:
    """An instance of one of Gluon's layout classes (gluon_layout)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type) \
        and type(value).__module__.startswith(GLUON_LANGUAGE)
