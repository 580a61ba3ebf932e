"""Attributes of the values the evaluator knows, one handler per kind of value.

Methods of plain values come from a closed list (`str.split`, `dict.get`...); a repository
class, an enum member, a constexpr, a `triton.Config`, a dtype answer what they hold; packages
that are never imported are asked through the host mixin. Anything else is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ptxdiff.evaluator.core import InterpCore, dispatch
from ptxdiff.evaluator.installed import real_object
from ptxdiff.evaluator.scope import Bound, Function, Module
from ptxdiff.evaluator.values import (
    DTYPE_QUESTIONS,
    PLAIN,
    Class,
    Constexpr,
    DType,
    DTypeQuestion,
    EnumMember,
    External,
    Opaque,
    Props,
    Raised,
    Refused,
    Target,
    TritonConfig,
    Version,
)

_METHODS = {
    str: {"format", "startswith", "endswith", "lower", "upper", "split", "rsplit", "join", "replace", "strip",
          "lstrip", "rstrip", "find", "rfind", "count", "isdigit", "isalpha", "isalnum", "isupper", "islower",
          "partition", "rpartition", "zfill", "title", "capitalize", "splitlines", "index", "casefold", "removeprefix",
          "removesuffix", "ljust", "rjust", "center"},
    list: {"append", "extend", "insert", "pop", "index", "count", "copy", "remove", "reverse", "sort", "clear"},
    tuple: {"index", "count"},
    dict: {"get", "items", "keys", "values", "update", "copy", "setdefault", "pop", "clear"},
    set: {"add", "update", "union", "intersection", "difference", "issubset", "issuperset", "discard", "copy",
          "remove", "pop"},
    frozenset: {"union", "intersection", "difference", "issubset", "issuperset", "copy"},
    int: {"bit_length", "real", "imag", "numerator", "denominator", "to_bytes"},
    float: {"is_integer", "real", "imag", "hex"},
    range: {"start", "stop", "step", "index", "count"},
}


class AttributesMixin(InterpCore):
    """`obj.name` for every value the evaluator hands around: `attribute`."""

    def attribute(self, obj: Any, name: str, importing: bool = False) -> Any:
        if isinstance(obj, External):
            return self.external_attribute(obj, name, importing)
        handler = dispatch(_ATTRIBUTES, obj)
        if handler is not None:
            return handler(self, obj, name)
        return self._other_attribute(obj, name)

    def _module_attribute(self, obj: Module, name: str) -> Any:
        return self.attribute_of_module(obj, name)

    def _class_attribute(self, obj: Class, name: str) -> Any:
        if name in obj.namespace:
            value = obj.namespace[name]
            if isinstance(value, Function) and any(
                    isinstance(d, External) and d.dotted == "builtins.classmethod" for d in value.decorators):
                return Bound(value, obj)
            return value
        if name == "__name__":
            return obj.name
        raise Raised("AttributeError", f"type object {obj.name!r} has no attribute {name!r}")

    def _enum_member_attribute(self, obj: EnumMember, name: str) -> Any:
        if name == "value":
            return obj.value
        if name == "name":
            return obj.name
        raise Raised("AttributeError", name)

    def _constexpr_attribute(self, obj: Constexpr, name: str) -> Any:
        if name == "value":
            return obj.value
        raise Refused(f"attribute {name} of a constexpr")

    def _config_attribute(self, obj: TritonConfig, name: str) -> Any:
        if name == "kwargs":
            return dict(obj.kwargs)
        if name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
            return getattr(obj, name)
        if name == "all_kwargs":   # `config.all_kwargs()`: the kwargs and the options that are set
            options = {k: getattr(obj, k) for k in ("num_warps", "num_ctas", "num_stages", "maxnreg")}
            return {**dict(obj.kwargs), **{k: v for k, v in options.items() if v is not None}}.copy
        raise Refused(f"attribute {name} of a triton.Config")

    def _record_attribute(self, obj: Target | Version, name: str) -> Any:
        if hasattr(obj, name) and not name.startswith("_"):
            return getattr(obj, name)
        raise Raised("AttributeError", name)

    def _props_attribute(self, obj: Props, name: str) -> Any:
        return obj.attr(name)

    def _dtype_attribute(self, obj: DType, name: str) -> Any:
        if name in DTYPE_QUESTIONS:  # triton's own answers about one of its dtypes (pure)
            answer = getattr(real_object(f"triton.language.{obj.name}"), name)
            return DTypeQuestion(answer) if callable(answer) else answer
        if name == "name":
            return obj.name
        raise Refused(f"attribute {name} of {obj!r}")

    def _opaque_attribute(self, obj: Opaque, name: str) -> Any:
        return Opaque(f"{obj.what}.{name}")

    def _other_attribute(self, obj: Any, name: str) -> Any:
        """An exception's args, a function's name, the listed methods of plain values."""
        if isinstance(obj, Raised) and name == "args":
            return (obj.message,)
        if isinstance(obj, Function) and name in ("__name__", "__qualname__"):
            return obj.name
        for kind, names in _METHODS.items():
            if isinstance(obj, kind) and not isinstance(obj, bool) and name in names:
                return getattr(obj, name)
        if isinstance(obj, PLAIN):
            raise Raised("AttributeError", f"{type(obj).__name__!r} object has no attribute {name!r}")
        raise Refused(f"attribute {name} of {obj!r}")


_ATTRIBUTES: dict[type, Callable[[AttributesMixin, Any, str], Any]] = {
    Module: AttributesMixin._module_attribute,
    Class: AttributesMixin._class_attribute,
    EnumMember: AttributesMixin._enum_member_attribute,
    Constexpr: AttributesMixin._constexpr_attribute,
    TritonConfig: AttributesMixin._config_attribute,
    Target: AttributesMixin._record_attribute,
    Version: AttributesMixin._record_attribute,
    Props: AttributesMixin._props_attribute,
    DType: AttributesMixin._dtype_attribute,
    Opaque: AttributesMixin._opaque_attribute,
}
