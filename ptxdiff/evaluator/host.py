"""What is known of packages that are never imported: calls and attributes, by dotted name.

A call into triton, torch, math, itertools, packaging, os... is looked up in a table from the
dotted name to a small handler; a name without one is refused as host code. Questions about
the device are answered for the compile target (`Device`), never for this machine, and
environment variables read as unset, so a result never depends on the reviewer's shell.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import operator
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ptxdiff.evaluator import regex
from ptxdiff.evaluator.core import InterpCore
from ptxdiff.evaluator.installed import gluon_layout, installed_version, real_object, triton_constant, triton_module_exists
from ptxdiff.evaluator.scope import Function
from ptxdiff.evaluator.sizes import check_itertools, check_math
from ptxdiff.evaluator.values import (
    DTYPES,
    MAX_LEN,
    Applied,
    Class,
    Constexpr,
    DType,
    External,
    ModuleSpec,
    Opaque,
    Partial,
    Props,
    Raised,
    Refused,
    Target,
    TritonConfig,
    Version,
    parse_version,
)

_MATH_FUNCS = {"ceil", "floor", "sqrt", "log", "log2", "log10", "exp", "exp2", "pow", "isqrt", "gcd", "lcm", "prod",
               "fsum", "fabs", "isclose", "isfinite", "isinf", "isnan", "trunc", "copysign", "comb", "perm", "hypot",
               "sin", "cos", "tan", "atan", "atan2", "erf", "tanh", "ldexp", "frexp", "fmod", "degrees", "radians"}
_MATH_CONSTS = {"pi", "e", "inf", "nan", "tau"}
_OPERATOR_FUNCS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "neg", "and_", "or_", "xor", "not_", "eq",
                   "ne", "lt", "le", "gt", "ge", "itemgetter"}
IDENTITY_DECORATORS = {"functools.cache", "functools.lru_cache", "functools.wraps", "functools.cached_property",
                       "builtins.staticmethod", "builtins.classmethod", "builtins.property", "typing.overload",
                       "torch.compiler.disable", "torch.no_grad", "torch.inference_mode", "torch._dynamo.disable",
                       "torch.jit.ignore", "torch.jit.unused"}
# triton's decorators of host functions it calls while compiling (`@triton.constexpr_function`,
# Gluon's, `@tl.constexpr`): called from host code (another such function), the function itself
CONSTEXPR_FUNCTIONS = frozenset({"triton.language.constexpr", "triton.language.core.constexpr",
                                 "triton.constexpr_function", "triton.language.constexpr_function",
                                 "triton.language.core.constexpr_function",
                                 "triton.experimental.gluon.constexpr_function",
                                 "triton.experimental.gluon._runtime.constexpr_function"})
_OPERATOR_BINOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
                    "floordiv": operator.floordiv, "mod": operator.mod, "and_": operator.and_, "or_": operator.or_,
                    "xor": operator.xor}
# calls made for their effect on the host process only (a message, a seed, the allocator triton's
# runtime uses for TMA descriptors): what triton compiles does not depend on them; they answer None
_IGNORED_CALLS = {"warnings.warn", "warnings.filterwarnings", "builtins.print", "logging.basicConfig",
                  "triton.set_allocator", "triton.runtime._allocation.set_allocator", "torch.manual_seed",
                  "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.set_float32_matmul_precision",
                  "torch.cuda.set_device"}
_VERSION_WRAPPERS = ("Version", "parse_version", "version_parse")


def _chain_from_iterable(s: Iterable[Iterable[Any]]) -> Iterator[Any]:
    return itertools.chain.from_iterable(s)


# called with the wrong arguments it fails in Python, and the message names it: it keeps the name
# it had before this table existed (a lambda inside Interp._external_call)
_chain_from_iterable.__qualname__ = "Interp._external_call.<locals>.<lambda>"

_ITERTOOLS: dict[str, Callable[..., Any]] = {
    "itertools.product": itertools.product, "itertools.chain": itertools.chain,
    "itertools.combinations": itertools.combinations, "itertools.permutations": itertools.permutations,
    "itertools.chain.from_iterable": _chain_from_iterable, "itertools.accumulate": itertools.accumulate,
    "itertools.islice": itertools.islice,
}

# calls whose answer does not depend on their arguments or the target
_ANSWERS: dict[str, object] = {
    **dict.fromkeys(_IGNORED_CALLS),
    "platform.machine": "x86_64",
    "platform.system": "Linux",
    "triton.runtime.driver.active.get_current_device": 0,
    "torch.cuda.current_device": 0,
    "torch.cuda.is_available": True,
    "torch.cuda.is_initialized": True,
    "torch.cuda.device_count": 1,
    "torch.xpu.is_available": False,
    "torch.npu.is_available": False,
    "torch.mps.is_available": False,
    "torch.backends.mps.is_available": False,
    # torch's own probes for triton: ptxdiff compiles with triton, so it is there
    "torch.utils._triton.has_triton": True,
    "torch.utils._triton.has_triton_package": True,
}


# `shutil.which` of a vendor's device tool is a probe of the machine (`def is_cuda(): return
# shutil.which("nvidia-smi") is not None`): answered for the machine the compile target is, an
# NVIDIA one; any other program is host code
_NVIDIA_TOOLS = frozenset({"nvidia-smi", "nvcc", "ptxas", "cuobjdump", "nvdisasm", "ncu", "nsys"})
_OTHER_VENDORS_TOOLS = frozenset({"rocm-smi", "amd-smi", "rocminfo", "hipcc", "hipconfig", "mx-smi", "npu-smi",
                                  "xpu-smi", "sycl-ls", "cnmon", "ixsmi", "mthreads-gmi", "hl-smi"})


def _host_code(dotted: str) -> Refused:
    return Refused(f"calling {dotted}, which is host code", host_call=True)


class HostMixin(InterpCore):
    """Calls and attributes of packages that are never imported (`External` values)."""

    def external_call(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if dotted in _ANSWERS:
            return _ANSWERS[dotted]
        handler = _CALLS.get(dotted)
        if handler is not None:
            return handler(self, dotted, args, kwargs)
        if (layout := gluon_layout(dotted, args, kwargs)) is not None:   # a Gluon layout, in a constexpr function
            return layout
        if dotted.rsplit(".", 1)[-1] in _VERSION_WRAPPERS and len(args) == 1 \
                and isinstance(args[0], str) and not kwargs:
            # another package's wrapper around packaging's Version (unsloth_zoo.utils.Version)
            self.assumptions.append(f"{dotted}({args[0]!r}): assumed it parses a version like packaging's Version")
            return parse_version(args[0])
        raise _host_code(dotted)

    # -- the standard library --------------------------------------------------------------------------
    def _identity(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if args and not kwargs and len(args) == 1 and isinstance(args[0], (Function, Class)):
            return args[0]
        return External(dotted)  # `lru_cache(maxsize=1)` -> the decorator

    def _get_logger(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return Opaque("logger")

    def _math(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        for a in args:
            self.plain(a)
        check_math(dotted[5:], args)
        try:
            return self.sized(getattr(math, dotted[5:])(*args, **kwargs))
        except (ValueError, TypeError, OverflowError) as e:
            raise Raised(type(e).__name__, str(e)) from None

    def _operator(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        for a in args:
            if not isinstance(a, Version):
                self.plain(a)
        name = dotted[9:]
        if name in _OPERATOR_BINOPS and len(args) == 2 and not kwargs:
            # the evaluator's own operators, with their size checks (`operator.mul("a", 10**10)`)
            return self.binop(_OPERATOR_BINOPS[name], args[0], args[1])
        try:
            return getattr(operator, name)(*args)
        except (TypeError, ValueError, OverflowError, ZeroDivisionError) as e:
            raise Raised(type(e).__name__, str(e)) from None

    def _itertools(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        seqs = [self.iterate(a) if not isinstance(a, int) else a for a in args]
        fn = _ITERTOOLS[dotted]
        check_itertools(dotted, seqs, kwargs)
        try:
            return self.sized([tuple(x) if isinstance(x, tuple) else x for x in itertools.islice(
                fn(*seqs, **kwargs), MAX_LEN + 1)])
        except TypeError as e:
            raise Raised("TypeError", str(e)) from None

    def _partial(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return Partial(args[0], tuple(args[1:]), kwargs)

    def _reduce(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        fn, seq, *init = args
        items = self.iterate(seq)
        acc = init[0] if init else items.pop(0)
        for x in items:
            acc = self.call(fn, [acc, x], {})
        return acc

    def _regex(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.sized(regex.call(dotted[3:], args, kwargs))

    def _regex_match(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return regex.match_method(dotted.rsplit(".", 1)[1], args)

    def _getenv(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return args[1] if len(args) > 1 else kwargs.get("default")  # the environment reads as empty

    def _which(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        name = args[0] if args and isinstance(args[0], str) else None
        if name in _NVIDIA_TOOLS:
            return f"/usr/bin/{name}"
        if name in _OTHER_VENDORS_TOOLS:
            return None
        raise _host_code(dotted)

    def _parse_version(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return parse_version(args[0])

    def _find_spec(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if not (args and isinstance(args[0], str)):
            raise _host_code(dotted)
        if args[0] == "triton" or args[0].startswith("triton."):
            return ModuleSpec(args[0]) if triton_module_exists(args[0], quiet=True) else None
        raise Refused(f"whether {args[0]} is installed on the reviewer's machine", host_call=True)

    def _module_from_spec(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if not (args and isinstance(args[0], ModuleSpec)):
            raise _host_code(dotted)
        return self.module_value(args[0].dotted)

    def _import_module(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if not (args and isinstance(args[0], str)):
            raise _host_code(dotted)
        return self.module_value(args[0])

    # -- triton: configs, helpers ----------------------------------------------------------------------
    def _config(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return _config(args, kwargs)

    def _cdiv(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        a, b = args
        return -(-a // b)

    def _next_power_of_2(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        n = args[0]
        self.plain(n)
        return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()

    def _jit_call(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """`helper = triton.jit(_helper)`: the function, marked as a jit function as `@triton.jit`
        would (the marker goes last, after the decorators written above its `def`); with options
        (`triton.jit(_k, debug=True)`) the marker carries them; `triton.jit(**options)` alone is
        the decorator they make."""
        if not args:
            return Applied(External("triton.jit"), (), tuple(kwargs.items()))
        if len(args) != 1 or not isinstance(args[0], Function) or args[0].node is None:
            raise _host_code(dotted)
        fn = args[0]
        marker = Applied(External("triton.jit"), (), tuple(kwargs.items())) if kwargs else External("triton.jit")
        return dataclasses.replace(fn, decorators=(*fn.decorators, marker))

    def _decorator_call(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """`triton.autotune(configs=..., key=[...])`, `triton.heuristics({...})`: the decorator,
        with its arguments, that a call form applies (`k = triton.autotune(...)(k)`)."""
        name = "triton.autotune" if dotted.endswith("autotune") else "triton.heuristics"
        return Applied(External(name), tuple(args), tuple(kwargs.items()))

    def _constexpr(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        value = args[0] if args else None
        return value if isinstance(value, Constexpr) else Constexpr(value)

    # -- the device, as the compile target ------------------------------------------------------------
    def _current_target(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return Target("cuda", self.device.cc, 32)

    def _triton_device_properties(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.device.triton_properties()

    def _bf16_supported(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.device.cc >= 80

    def _device_capability(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return (self.device.cc // 10, self.device.cc % 10)

    def _device_name(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return self.device.name

    def _torch_device_properties(self, dotted: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        return Props("device properties", self.device.torch_properties())

    # -- attributes ----------------------------------------------------------------------------------
    def external_attribute(self, obj: External, name: str, importing: bool) -> Any:
        dotted = f"{obj.dotted}.{name}"
        if dotted.startswith("triton.language.") and name in DTYPES and dotted.count(".") == 2:
            return DType(name)
        if dotted.startswith("triton.language.core.") and name in DTYPES:
            return DType(name)
        if dotted in ("triton.__version__", "torch.__version__"):
            version = installed_version(dotted.split(".")[0])
            if version is None:
                raise Refused(f"{dotted}: the package is not installed")
            return version
        if obj.dotted == "math" and name in _MATH_CONSTS:
            return getattr(math, name)
        if dotted == "sys.platform":
            return "linux"
        if dotted == "sys.version_info":
            return tuple(sys.version_info)
        if dotted == "sys.maxsize":
            return sys.maxsize
        if dotted == "torch.version.hip":
            return None
        if dotted in ("triton.knobs.runtime.interpret", "triton.runtime.interpreter.enabled"):
            return False   # kernels are compiled, not interpreted (`TRITON_INTERPRET` reads as unset)
        if dotted == "torch.version.cuda":
            return "12.8"
        if dotted == "os.environ":
            return Props("os.environ", {})
        if dotted == "triton.runtime.driver.active.utils" or dotted == "triton.runtime.driver.active":
            return External(dotted)
        if (dotted.startswith("triton.") and not dotted.startswith("triton.runtime")) and not importing:
            real_object(dotted)  # `triton.language.gather` on this triton: AttributeError if missing
        constant = triton_constant(dotted)   # `core.CONSTEXPR_0`: the value it holds
        return constant if constant is not None else External(dotted)


_Handler = Callable[[HostMixin, str, list[Any], dict[str, Any]], Any]


def _each(names: Iterable[str], handler: _Handler) -> dict[str, _Handler]:
    return dict.fromkeys(names, handler)


_CALLS: dict[str, _Handler] = {
    **_each(IDENTITY_DECORATORS, HostMixin._identity),
    "logging.getLogger": HostMixin._get_logger,
    **_each((f"math.{name}" for name in _MATH_FUNCS), HostMixin._math),
    **_each((f"operator.{name}" for name in _OPERATOR_FUNCS), HostMixin._operator),
    **_each(_ITERTOOLS, HostMixin._itertools),
    "functools.partial": HostMixin._partial,
    "functools.reduce": HostMixin._reduce,
    **_each((f"re.{name}" for name in regex.FUNCTIONS), HostMixin._regex),
    **_each((f"re.Match.{name}" for name in regex.MATCH_METHODS), HostMixin._regex_match),
    **_each(("os.getenv", "os.environ.get"), HostMixin._getenv),
    "shutil.which": HostMixin._which,
    **_each(("packaging.version.parse", "packaging.version.Version", "pkg_resources.parse_version",
             "distutils.version.LooseVersion"), HostMixin._parse_version),
    "importlib.util.find_spec": HostMixin._find_spec,
    "importlib.import_module": HostMixin._import_module,
    "importlib.util.module_from_spec": HostMixin._module_from_spec,
    **_each(("triton.Config", "triton.runtime.autotuner.Config", "triton.runtime.Config"), HostMixin._config),
    **_each(("triton.cdiv", "triton.language.cdiv"), HostMixin._cdiv),
    **_each(("triton.next_power_of_2", "triton.language.next_power_of_2"), HostMixin._next_power_of_2),
    **_each(("triton.language.constexpr", "triton.language.core.constexpr"), HostMixin._constexpr),
    **_each(("triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit"), HostMixin._jit_call),
    **_each(("triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune", "triton.heuristics",
             "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics"), HostMixin._decorator_call),
    "triton.runtime.driver.active.get_current_target": HostMixin._current_target,
    "triton.runtime.driver.active.utils.get_device_properties": HostMixin._triton_device_properties,
    "torch.cuda.is_bf16_supported": HostMixin._bf16_supported,
    "torch.cuda.get_device_capability": HostMixin._device_capability,
    "torch.cuda.get_device_name": HostMixin._device_name,
    "torch.cuda.get_device_properties": HostMixin._torch_device_properties,
}


def _config(args: list[Any], kwargs: dict[str, Any]) -> TritonConfig:
    kw = args[0] if args else kwargs.pop("kwargs", {})
    if not isinstance(kw, dict):
        raise Refused("triton.Config with kwargs that are not a dict")
    names = ("num_warps", "num_stages", "num_ctas", "maxnreg")
    rest = dict(zip(names, args[1:]))
    for k, v in kwargs.items():
        if k in names:
            rest[k] = v
        elif k not in ("pre_hook", "ir_override"):
            raise Raised("TypeError", f"triton.Config got an unexpected argument {k!r}")
    values = {k: (v.value if isinstance(v, Constexpr) else v) for k, v in kw.items()}
    for k, v in values.items():
        if not isinstance(v, (int, float, str, bool, type(None), DType, tuple)):
            raise Refused(f"triton.Config value {k}={v!r}")
    num_stages = rest.get("num_stages")
    return TritonConfig(tuple(values.items()), rest.get("num_warps") or 4,
                        num_stages if num_stages is not None else 3,
                        rest.get("num_ctas") or 1, rest.get("maxnreg"))
