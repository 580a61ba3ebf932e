"""What a kernel body may ask of torch: the limits of its dtypes.

Quantization kernels compute constants from torch inside the body, which triton's code generator
evaluates at compile time (`FP8_MAX: tl.constexpr = torch.finfo(torch.float8_e4m3fn).max`).
Torch is never imported for a build, and a kernel's globals hold no real module, so `torch`
there is a stand-in: its dtypes by name and `finfo` / `iinfo` answered from a table of the values
torch gives. Nothing else of torch is reachable from a kernel.
"""

from __future__ import annotations

import types
from dataclasses import dataclass


@dataclass(frozen=True)
class TorchDType:
    name: str

    def __repr__(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True)
class FInfo:
    bits: int
    max: float
    tiny: float
    eps: float
    resolution: float
    dtype: str

    @property
    def min(self) -> float:
        return -self.max

    @property
    def smallest_normal(self) -> float:
        return self.tiny


@dataclass(frozen=True)
class IInfo:
    bits: int
    min: int
    max: int
    dtype: str


# torch 2.x's answers (torch.finfo / torch.iinfo), by dtype name
FLOATS = {
    "float64": FInfo(64, 1.7976931348623157e+308, 2.2250738585072014e-308, 2.220446049250313e-16, 1e-15, "float64"),
    "float32": FInfo(32, 3.4028234663852886e+38, 1.1754943508222875e-38, 1.1920928955078125e-07, 1e-06, "float32"),
    "float16": FInfo(16, 65504.0, 6.103515625e-05, 0.0009765625, 0.001, "float16"),
    "bfloat16": FInfo(16, 3.3895313892515355e+38, 1.1754943508222875e-38, 0.0078125, 0.01, "bfloat16"),
    "float8_e4m3fn": FInfo(8, 448.0, 0.015625, 0.125, 1.0, "float8_e4m3fn"),
    "float8_e5m2": FInfo(8, 57344.0, 6.103515625e-05, 0.25, 1.0, "float8_e5m2"),
    "float8_e4m3fnuz": FInfo(8, 240.0, 0.0078125, 0.125, 1.0, "float8_e4m3fnuz"),
    "float8_e5m2fnuz": FInfo(8, 57344.0, 3.0517578125e-05, 0.125, 1.0, "float8_e5m2fnuz"),
}
INTS = {name: IInfo(bits, lo, hi, name) for name, bits, lo, hi in (
    ("int8", 8, -128, 127), ("int16", 16, -32768, 32767), ("int32", 32, -2**31, 2**31 - 1),
    ("int64", 64, -2**63, 2**63 - 1), ("uint8", 8, 0, 255))}
ALIASES = {"float": "float32", "half": "float16", "double": "float64", "int": "int32", "long": "int64",
           "short": "int16"}


def _name(dtype: object) -> str:
    dtype = getattr(dtype, "value", dtype)   # triton may hand it over wrapped as a constexpr
    if isinstance(dtype, TorchDType):
        return dtype.name
    raise TypeError(f"torch dtype expected, got {dtype!r}")


class finfo:  # torch's name; a class, as torch's is (triton refuses plain functions in a kernel)
    def __new__(cls, dtype: object = None) -> FInfo:  # type: ignore[misc]
        name = "float32" if dtype is None else _name(dtype)
        if name not in FLOATS:
            raise TypeError(f"torch.finfo() requires a floating point input type, got torch.{name}")
        return FLOATS[name]


class iinfo:  # torch's name
    def __new__(cls, dtype: object) -> IInfo:  # type: ignore[misc]
        name = _name(dtype)
        if name not in INTS:
            raise TypeError(f"torch.iinfo() requires an integer input type, got torch.{name}")
        return INTS[name]


def stand_in() -> types.ModuleType:
    """The `torch` a kernel's globals hold: dtypes by name, `finfo`, `iinfo`."""
    module = types.ModuleType("torch", "ptxdiff's stand-in for torch in a kernel: dtype limits only")
    for name in [*FLOATS, *INTS]:
        setattr(module, name, TorchDType(name))
    for alias, name in ALIASES.items():
        setattr(module, alias, TorchDType(name))
    module.finfo = finfo  # type: ignore[attr-defined]
    module.iinfo = iinfo  # type: ignore[attr-defined]
    return module
