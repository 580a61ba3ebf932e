"""The values the restricted evaluator hands around, besides plain ints, strs, lists and dicts.

Each stands for something the evaluator knows without running it (a triton dtype, a
`triton.Config`, a builtin it allows, a name of a package that is never imported), so that
every other module of the evaluator can decide what to do with a value by its type. The limits
on work and size, the two exceptions (`Refused`, `Raised`) and the names a module sees without
binding them (Python's builtins, as far as they are allowed) live here for the same reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

ValueT = TypeVar("ValueT")   # a value passed through unchanged

MAX_STEPS = 500_000          # evaluated nodes per Interp: bounds loops and recursion of host code
MAX_LEN = 100_000            # elements of any list/str/tuple/dict built
MAX_BUILT = 20_000_000       # elements of all the lists/strs/tuples/dicts one Interp builds (~160 MB at most)
MAX_INT_BITS = 4096


class Refused(Exception):
    """The evaluator will not compute this; the message says what and where."""

    def __init__(self, reason: str, where: str | None = None, host_call: bool = False):
        super().__init__(reason)
        self.reason, self.where = reason, where
        self.host_call = host_call  # a call into a package that is not imported: `except Exception` may take it
        self.unreadable = False     # raised where a name bound to an Unreadable is read (not host code run)

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}" if self.where else self.reason


@dataclass(frozen=True)
class Unreadable:
    """A name bound to what the evaluator refused to compute (a class with an unknown base): the
    refusal is raised where the name is read, not where it was bound, so its neighbours stand."""

    refused: Refused


class Raised(Exception):
    """An exception the interpreted code raises; its own `try/except` may catch it."""

    def __init__(self, type_name: str, message: str = ""):
        super().__init__(f"{type_name}: {message}" if message else type_name)
        self.type_name, self.message = type_name, message


# Python's exception hierarchy, as far as `except X:` matching needs it
EXC_PARENTS = {
    "BaseException": None, "Exception": "BaseException", "ArithmeticError": "Exception",
    "ZeroDivisionError": "ArithmeticError", "OverflowError": "ArithmeticError", "LookupError": "Exception",
    "KeyError": "LookupError", "IndexError": "LookupError", "ImportError": "Exception",
    "ModuleNotFoundError": "ImportError", "NameError": "Exception", "AttributeError": "Exception",
    "TypeError": "Exception", "ValueError": "Exception", "RuntimeError": "Exception",
    "NotImplementedError": "RuntimeError", "AssertionError": "Exception", "OSError": "Exception",
    "StopIteration": "Exception", "RecursionError": "RuntimeError", "UnicodeError": "ValueError",
}


def is_subclass(name: str, parent: str) -> bool:
    """Whether exception class `name` is `parent` or derives from it (by EXC_PARENTS)."""
    current: str | None = name
    while current is not None:
        if current == parent:
            return True
        current = EXC_PARENTS.get(current)
    return False


# A class below whose name starts with `_` keeps the name it always had, under a public alias
# for the other modules: Python's own messages show a class's name (`argument of type '_Props'
# is not iterable`, an escaped `_Break`), and what a revision evaluates to must not depend on
# how the evaluator's modules are laid out.

# -- control flow of the interpreted code, carried by Python exceptions ----------------------------

class _Return(Exception):
    """`return value` inside an interpreted function."""

    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    """`break` inside an interpreted loop."""


class _Continue(Exception):
    """`continue` inside an interpreted loop."""


FunctionReturn = _Return
LoopBreak = _Break
LoopContinue = _Continue


# -- values the evaluator hands around ------------------------------------------------------------------

@dataclass(frozen=True)
class External:
    """A name from a package that is not imported (triton, torch, math...): `dotted` says which."""

    dotted: str

    def __repr__(self) -> str:
        return self.dotted


@dataclass(frozen=True)
class DType:
    """A triton dtype (`tl.float16`), by its name in triton.language."""

    name: str

    def __repr__(self) -> str:
        return f"tl.{self.name}"


@dataclass(frozen=True)
class Constexpr:
    """`tl.constexpr(value)` at module level."""

    value: object

    def __repr__(self) -> str:
        return f"constexpr({self.value!r})"


@dataclass(frozen=True)
class Applied:
    """A triton decorator made by a call (`triton.autotune(configs=...)`, `triton.jit(**kw)`),
    with its evaluated arguments: applied to a function it marks the function as the decorator
    would (`k = triton.autotune(...)(triton.jit(_k))`)."""

    decorator: External
    args: tuple[object, ...]
    kwargs: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class TritonConfig:
    """`triton.Config(kwargs, num_warps=..., num_stages=...)`, as the autotuner would see it."""

    kwargs: tuple[tuple[str, object], ...]
    num_warps: int = 4
    num_stages: int = 3
    num_ctas: int = 1
    maxnreg: int | None = None


@dataclass(frozen=True)
class Target:
    backend: str
    arch: int
    warp_size: int = 32


@dataclass
class Class:
    name: str
    namespace: dict[str, object]
    is_enum: bool = False
    # what its decorators evaluate to (None where one cannot be read): `@aggregate` makes it a
    # triton value type (builder.py builds it as triton's own)
    decorators: tuple[object, ...] = ()
    # its annotated fields in order, each with its evaluated annotation (`index: tl.tensor`)
    fields: tuple[tuple[str, object], ...] = ()
    module: str = ""   # the dotted name of the module that defines it (triton names an aggregate's type by it)
    mixed: bool = False   # an enum whose members are their values (a str or int base: EnumMember.mixed)

    def __repr__(self) -> str:
        return f"<class {self.name}>"


@dataclass(frozen=True)
class EnumMember:
    cls_name: str
    name: str
    value: object
    # a member of an enum with a str or int base (`class Mode(str, enum.Enum)`, IntEnum, StrEnum):
    # it is its value in comparisons and arithmetic, and in a kernel, as Python has it
    mixed: bool = False


class Opaque:
    """A host object whose methods do nothing that matters here (a logger): calls return None."""

    def __init__(self, what: str):
        self.what = what

    def __repr__(self) -> str:
        return f"<{self.what}>"


class ModuleSpec(Opaque):
    """What `importlib.util.find_spec` gives for one of triton's own modules that exists: true, its
    loader's methods do nothing, and `importlib.util.module_from_spec` makes it the module (the
    lookup shims of repositories that support several tritons: `libdevice_find("rsqrt")`)."""

    def __init__(self, dotted: str):
        super().__init__(f"spec of {dotted}")
        self.dotted = dotted


@dataclass(frozen=True)
class Version:
    """packaging.version.parse(...) for release numbers: enough to compare versions."""

    release: tuple[int, ...]
    text: str

    def _key(self, other: object) -> tuple[tuple[int, ...], tuple[int, ...]]:
        if isinstance(other, str):
            other = parse_version(other)
        if not isinstance(other, Version):
            raise Raised("TypeError", "version compared with a non-version")
        n = max(len(self.release), len(other.release))
        return self.release + (0,) * (n - len(self.release)), other.release + (0,) * (n - len(other.release))

    def __lt__(self, other: object) -> bool:
        a, b = self._key(other)
        return a < b

    def __le__(self, other: object) -> bool:
        a, b = self._key(other)
        return a <= b

    def __gt__(self, other: object) -> bool:
        a, b = self._key(other)
        return a > b

    def __ge__(self, other: object) -> bool:
        a, b = self._key(other)
        return a >= b

    @property
    def major(self) -> int:
        return self.release[0] if self.release else 0

    @property
    def minor(self) -> int:
        return self.release[1] if len(self.release) > 1 else 0


def parse_version(text: str) -> Version:
    digits = []
    for part in str(text).split("+")[0].split("."):
        num = "".join(itertools.takewhile(str.isdigit, part))
        if not num:
            break
        digits.append(int(num))
        if num != part:
            break
    return Version(tuple(digits), str(text))


class _Builtin:
    """A Python builtin the evaluator allows, called with evaluated arguments."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<builtin {self.name}>"


class _ExcClass:
    """An exception class name used in `raise X(...)` / `except X`."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


@dataclass(frozen=True)
class _Partial:
    """`functools.partial(fn, *args, **kwargs)`, applied when called."""

    fn: object
    args: tuple[object, ...]
    kwargs: dict[str, object] = field(default_factory=dict, hash=False)


class _Props:
    """A read-only record of answers (device properties, an empty environment)."""

    def __init__(self, what: str, values: dict[str, object]):
        self.what, self.values = what, values

    def attr(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        if self.what == "os.environ" and name in ("get",):
            return External("os.environ.get")
        raise Raised("AttributeError", f"{self.what} has no {name!r}")

    def item(self, key: Any) -> Any:
        if key in self.values:
            return self.values[key]
        raise Raised("KeyError", repr(key))

    def __repr__(self) -> str:
        return f"<{self.what}>"


Builtin = _Builtin
ExcClass = _ExcClass
Partial = _Partial
Props = _Props

DTYPES = {"int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
          "bfloat16", "float32", "float64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8", "float8e5b16",
          "fp8e4nv", "fp8e5", "float8_e4m3fn", "float8_e5m2"}
DTYPE_QUESTIONS = {"primitive_bitwidth", "is_fp8", "is_fp16", "is_bf16", "is_fp32", "is_fp64", "is_int", "is_bool",
                   "is_floating", "is_int_signed", "is_int_unsigned", "is_int1", "is_int8", "is_int16", "is_int32",
                   "is_int64", "is_uint8", "is_uint16", "is_uint32", "is_uint64", "is_standard_floating",
                   "fp_mantissa_width", "int_bitwidth", "exponent_bias"}


class _DTypeQuestion:
    """A bound method of a triton dtype (`x.is_bf16`): triton's own pure code, called here."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method

    def __repr__(self) -> str:
        return f"<{self.method.__name__}>"


DTypeQuestion = _DTypeQuestion


# -- plain values and their size -------------------------------------------------------------------------

DICT_VIEWS: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))  # `for k, v in d.items():`
PLAIN: tuple[type, ...] = (int, float, complex, str, bytes, bool, type(None), tuple, list, dict, set, frozenset,
                           range, slice, *DICT_VIEWS)


def check_size(value: ValueT) -> ValueT:
    """The value, unless it is larger than the evaluator builds (MAX_LEN elements, MAX_INT_BITS)."""
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) and len(value) > MAX_LEN:
        raise Refused(f"a value of {len(value)} elements (more than {MAX_LEN})")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise Refused("an integer of more than 4096 bits")
    return value


# -- names a module sees without binding them ----------------------------------------------------------

SAFE_BUILTINS = ("abs", "all", "any", "bool", "dict", "divmod", "enumerate", "float", "int", "len", "list", "max",
                 "min", "range", "reversed", "round", "set", "sorted", "str", "sum", "tuple", "zip", "frozenset",
                 "chr", "ord", "hex", "repr", "filter", "map", "isinstance", "hasattr", "getattr", "pow", "iter",
                 "next", "callable", "id", "hash", "format", "bin", "oct", "slice", "type")
UNSAFE_BUILTINS = {"open", "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "input",
                   "breakpoint", "exit", "quit", "memoryview", "setattr", "delattr", "super", "__build_class__",
                   "help", "dir"}
BUILTINS: dict[str, object] = {name: Builtin(name) for name in SAFE_BUILTINS}
BUILTINS.update({name: ExcClass(name) for name in EXC_PARENTS})
BUILTINS.update({"None": None, "True": True, "False": False, "print": External("builtins.print"),
                 "staticmethod": External("builtins.staticmethod"), "classmethod": External("builtins.classmethod"),
                 "property": External("builtins.property"), "object": External("builtins.object"),
                 "NotImplemented": NotImplemented, "Ellipsis": Ellipsis})


def unmixed(v: object) -> object:
    """A mixed enum member's value (`Mode.fast == "fast"` for `class Mode(str, enum.Enum)`); any
    other value as it is."""
    return v.value if isinstance(v, EnumMember) and v.mixed else v
