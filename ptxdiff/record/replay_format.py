"""Replayable launches: what one launch of a recorded spec was given, enough to launch it again.

A spec's line in `.ptxdiff/launches.jsonl` may carry `"replay"`: a few representative launches
(the most frequent and the largest, `--keep-launches`), each with its grid, every run-time
argument (a tensor's dtype, shape, strides, storage offset and the buffer it lives in; a
scalar's value) and the buffers' sizes in bytes (two arguments on one buffer alias). For the
values: an integer tensor's exact range (indices stay in bounds), a float tensor's finite range
rounded outward to powers of two (so a re-recording of random data gives the same bytes) and
whether it held NaN or Inf. Pure: no torch, no triton.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ptxdiff.errors import ConfigError

DEFAULT_KEEP_LAUNCHES = 3
# float ranges are kept within +-CAP: past it is mostly what an output buffer held before the
# launch (torch.empty), which would change the file at every recording
CAP = 2.0 ** 16


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument: where it lies in its buffer and what kind of values it held."""

    dtype: str                      # torch's name: "float32", "int64", "bool"
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int                     # storage offset, in elements
    buffer: int                     # index into Replay.buffers; arguments on one buffer alias
    low: float | int | None = None  # integers: exact min; floats: finite min rounded outward
    high: float | int | None = None
    nan: bool = False
    inf: bool = False

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"dtype": self.dtype, "shape": list(self.shape), "stride": list(self.stride),
                     "offset": self.offset, "buffer": self.buffer}
        if self.low is not None and self.high is not None:
            out["range"] = [self.low, self.high]
        if self.nan:
            out["nan"] = True
        if self.inf:
            out["inf"] = True
        return out


@dataclass(frozen=True)
class Unrecorded:
    """A run-time argument of a kind replay does not make (a tuple, a tensor descriptor...)."""

    kind: str


Arg = TensorArg | Unrecorded | bool | int | float | None


@dataclass(frozen=True)
class Replay:
    """One representative launch of a spec."""

    grid: tuple[int, int, int]
    args: tuple[tuple[str, Arg], ...]     # run-time parameters in the kernel's order
    buffers: tuple[int, ...]              # bytes
    count: int

    @property
    def size(self) -> int:
        return sum(self.buffers)

    def shape_json(self) -> dict[str, object]:
        """Everything but the count and the value ranges: the launch's identity."""
        return {"grid": list(self.grid), "args": {k: _arg_json(v, stats=False) for k, v in self.args},
                "buffers": list(self.buffers)}

    def as_json(self) -> dict[str, object]:
        return {"grid": list(self.grid), "args": {k: _arg_json(v, stats=True) for k, v in self.args},
                "buffers": list(self.buffers), "count": self.count}

    def key(self) -> str:
        return json.dumps(self.shape_json(), sort_keys=True)

    def label(self) -> str:
        """`64x1000 fp32`: the first tensor's shape and dtype, for the row."""
        first = next((a for _, a in self.args if isinstance(a, TensorArg)), None)
        if first is None:
            return "grid " + "x".join(map(str, self.grid))
        return "x".join(map(str, first.shape)) + " " + SHORT_DTYPES.get(first.dtype, first.dtype)


SHORT_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


def _arg_json(arg: Arg, stats: bool) -> object:
    if isinstance(arg, TensorArg):
        out = arg.as_json()
        if not stats:
            for k in ("range", "nan", "inf"):
                out.pop(k, None)
        return out
    if isinstance(arg, Unrecorded):
        return {"unrecorded": arg.kind}
    if isinstance(arg, float) and not math.isfinite(arg):
        return {"float": repr(arg)}
    return arg


def _ints(v: object, where: str, what: str, least: int | None = None) -> tuple[int, ...]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v) \
            or (least is not None and any(x < least for x in v)):
        raise ConfigError(f"{where}: replay {what} must be a list of integers"
                          + (f" >= {least}" if least is not None else ""))
    return tuple(v)


def _arg(name: str, v: object, where: str, buffers: int) -> Arg:
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if not isinstance(v, dict):
        raise ConfigError(f"{where}: replay argument {name!r} must be a value or an object")
    if set(v) == {"unrecorded"} and isinstance(v["unrecorded"], str):
        return Unrecorded(v["unrecorded"])
    if set(v) == {"float"} and v["float"] in ("inf", "-inf", "nan"):
        return float(v["float"])
    known = {"dtype", "shape", "stride", "offset", "buffer", "range", "nan", "inf"}
    if not {"dtype", "shape", "stride", "offset", "buffer"} <= set(v) or set(v) - known:
        raise ConfigError(f"{where}: replay argument {name!r} must have dtype, shape, stride, offset, buffer "
                          "(and optionally range, nan, inf)")
    shape, stride = _ints(v["shape"], where, "shape", 0), _ints(v["stride"], where, "stride")
    if len(shape) != len(stride) or not isinstance(v["dtype"], str):
        raise ConfigError(f"{where}: replay argument {name!r}: shape and stride differ in length")
    offset, buffer = v["offset"], v["buffer"]
    if not isinstance(offset, int) or offset < 0 or not isinstance(buffer, int) or not 0 <= buffer < buffers:
        raise ConfigError(f"{where}: replay argument {name!r}: bad offset or buffer")
    low = high = None
    if "range" in v:
        r = v["range"]
        if not (isinstance(r, list) and len(r) == 2 and all(isinstance(x, (int, float)) for x in r) and r[0] <= r[1]):
            raise ConfigError(f"{where}: replay argument {name!r}: range must be [low, high]")
        low, high = r
    return TensorArg(v["dtype"], shape, stride, offset, buffer, low, high, v.get("nan") is True, v.get("inf") is True)


def from_json(obj: object, where: str) -> Replay:
    if not isinstance(obj, dict) or set(obj) != {"grid", "args", "buffers", "count"}:
        raise ConfigError(f"{where}: a replay entry must have exactly grid, args, buffers and count")
    grid = _ints(obj["grid"], where, "grid", 0)
    buffers = _ints(obj["buffers"], where, "buffers", 0)
    if len(grid) != 3 or not isinstance(obj["args"], dict):
        raise ConfigError(f"{where}: replay grid must have 3 dimensions and args must be an object")
    count = obj["count"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ConfigError(f"{where}: replay count must be an integer >= 1")
    args = tuple((k, _arg(k, v, where, len(buffers))) for k, v in obj["args"].items())
    return Replay((grid[0], grid[1], grid[2]), args, buffers, count)


def merge(a: Replay, b: Replay) -> Replay:
    """The same launch shape seen twice (two processes): counts add, value ranges widen."""
    args = []
    for (name, x), (_, y) in zip(a.args, b.args):
        if isinstance(x, TensorArg) and isinstance(y, TensorArg):
            low = _widen(min, x.low, y.low)
            high = _widen(max, x.high, y.high)
            x = TensorArg(x.dtype, x.shape, x.stride, x.offset, x.buffer, low, high, x.nan or y.nan, x.inf or y.inf)
        args.append((name, x))
    return Replay(a.grid, tuple(args), a.buffers, a.count + b.count)


def _widen(pick: Callable[[float, float], float], x: float | None, y: float | None) -> float | None:
    if x is None or y is None:
        return x if y is None else y
    return pick(x, y)


def select(replays: Iterable[Replay], keep: int) -> tuple[Replay, ...]:
    """Same shapes merged; the `keep` most frequent, the last place going to the largest."""
    by_key: dict[str, Replay] = {}
    for r in replays:
        k = r.key()
        by_key[k] = r if k not in by_key else merge(by_key[k], r)
    ranked = sorted(by_key.values(), key=lambda r: (-r.count, -r.size, r.key()))
    if keep <= 0:
        return ()
    chosen = ranked[:keep]
    largest = max(ranked, key=lambda r: (r.size, -r.count), default=None)
    if largest is not None and largest not in chosen and keep > 1:
        chosen = ranked[:keep - 1] + [largest]
    return tuple(sorted(chosen, key=lambda r: (-r.count, -r.size, r.key())))


def outward(x: float, up: bool) -> float:
    """A float rounded away from zero to a power of two (0 and tiny values to 0): a recording of
    random values gives the same range every time."""
    if x == 0 or abs(x) < 2.0 ** -24:
        return 0.0
    mag = 2.0 ** math.ceil(math.log2(abs(x)))
    if (x > 0) == up:
        return math.copysign(mag, x)
    return math.copysign(2.0 ** math.floor(math.log2(abs(x))), x)


def rounded(r: Replay) -> Replay:
    """A launch as the hook saw it -> as recorded: float ranges rounded outward (`outward`)."""
    args = []
    for name, a in r.args:
        if isinstance(a, TensorArg) and is_float(a.dtype) and a.low is not None and a.high is not None:
            a = dataclasses.replace(a, low=min(CAP, max(-CAP, outward(float(a.low), False))),
                                    high=min(CAP, max(-CAP, outward(float(a.high), True))))
        args.append((name, a))
    return dataclasses.replace(r, args=tuple(args))


def is_float(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat"))
