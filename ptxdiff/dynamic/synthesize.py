"""Synthesised launches: `--outputs` for a kernel with no wrapper and no recording (issue 39).

What ptxdiff already knows of a compared kernel (the spec its rows compiled: the run-time
parameters' types, the constexprs, num_warps/stages) is turned into a few launches with
seeded inputs, run on old and new the way recorded launches are replayed (dynamic/replay.py:
the same buffers, views, values and launch; dynamic/oracle.py runs them). Here, pure: which
specs and how many shapes (the budget), and each shape's launch from the kernel's own
numbers (its float literals, the program axes it reads), as `Replay` records.

A shape gives every size-like int parameter a value (non-powers of two, a block's edges so a
block is partial, 1), every stride-like one a row-major layout over those sizes, every pointer
its own buffer: a data region large enough for the sizes and strides, between two guard zones
(filled with a per-buffer byte pattern before the launch, compared bit for bit after), so an
overrun by one side is a difference, not undefined. Float inputs are uniform over a range
that crosses every literal of the kernel's body (a clamp at 6 sees values above 6), a unit
range and a small one (where an epsilon matters), shape by shape.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from typing import Any

from ptxdiff.record.launches import Launch
from ptxdiff.record.replay_format import Replay, TensorArg
from ptxdiff.specs.detail import SpecDetail
from ptxdiff.specs.plan import SpecSource

SHAPES = 8                    # launches per kernel: the budget, a count (never a clock)
MAX_SPECS = 4                 # distinct specs of a kernel the shapes are spread over
SEED = 39
MAX_ELEMENTS = 1 << 20        # a data region's elements at most (a shape's sizes shrink to fit)
MAX_PROGRAMS = 2048           # programs of one synthesised launch (the interpreter runs them one by one)
GUARD = 64                    # guard elements before and after a data region, at least
PAD = 3                       # a row's pitch past its widest size
ROWS = 3                      # programs on axis 0 at least, for a kernel with strides (a row each)
SOURCES = (SpecSource.RECORDED, SpecSource.CONFIG, SpecSource.CALL_SITE, SpecSource.GUESSED)   # the spec to trust most first

# one size parameter: non-powers of two, a prime, 1, a large odd one; a block's edges replace some
ONE_SIZE = (1000, 129, 7, 257, 1, 100, 513, 31)
# several: smaller (their product bounds the work) and different per parameter
MANY_SIZES = (67, 33, 7, 129, 1, 20, 65, 31, 45, 3)
SCALES = ("wide", "unit", "small", "wide", "unit", "wide", "small", "unit")
DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "i8": "int8",
          "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "i1": "bool", "u1": "bool",
          "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}
INTS, FLOATS = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"), ("fp16", "bf16", "fp32", "fp64")


class Unsynthesisable(Exception):
    """A kernel no launch can be made for: the message is the one-line reason."""


@dataclass(frozen=True)
class SynthSpec:
    """One spec of a kernel, as its row compiled it."""

    signature: tuple[tuple[str, str], ...]    # run-time parameters in order, with their types
    constexprs: tuple[tuple[str, object], ...]
    num_warps: int
    num_stages: int


@dataclass(frozen=True)
class SynthPlan:
    """What to synthesise for one kernel (picklable): its id on each side, its specs, the budget."""

    old_id: str
    new_id: str
    params: tuple[str, ...]
    specs: tuple[SynthSpec, ...]
    shapes: int = SHAPES
    seed: int = SEED
    # the parameters the repository's launch sites pass: a constexpr not among them takes each
    # side's own default where the two sides declare different ones (a default changed is a change)
    passed: tuple[str, ...] = ()


def synth_spec(params: list[str], detail: SpecDetail | None) -> SynthSpec | None:
    """The spec a row compiled, as launches are made for it; None where none can be (no
    spec, a tuple parameter)."""
    if detail is None:
        return None
    sig = detail.signature
    consts = detail.constexprs
    runtime = tuple((p, sig[p]) for p in params if p in sig and sig[p] != "constexpr" and p not in consts)
    if any(not isinstance(t, str) for _, t in runtime):
        return None
    return SynthSpec(runtime, tuple((k, consts[k]) for k in params if k in consts),
                     int(detail.num_warps or 4), int(detail.num_stages or 3))


def plan_for(old_id: str, new_id: str, params: list[str], details: list[tuple[str | None, SpecDetail | None]],
             shapes: int = SHAPES, passed: tuple[str, ...] = ()) -> SynthPlan | str:
    """The plan from a kernel's rows ((spec_source, spec_detail) each), or why there is none."""
    specs: list[SynthSpec] = []
    order = sorted(details, key=lambda d: SOURCES.index(d[0]) if d[0] in SOURCES else len(SOURCES))
    for _, detail in order:
        spec = synth_spec(params, detail)
        if spec is not None and spec not in specs:
            specs.append(spec)
    if not specs:
        return "no compiled spec of it to launch (no parameter types)"
    return SynthPlan(old_id, new_id, tuple(params), tuple(specs[:MAX_SPECS]), shapes, passed=passed)


# ---- what the kernel's source says (read in the worker, from the jit functions' text) ----

def literals(source: str) -> list[float]:
    """The float literals of a kernel's text (`6.0`, `0.044715`, `float("-inf")` is not one)."""
    try:
        tree = ast.parse(_dedent(source))
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, float) and math.isfinite(node.value):
            out.append(abs(node.value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool) \
                and 2 < abs(node.value) <= 64:
            out.append(float(abs(node.value)))   # an int bound (`tl.minimum(x, 6)`), small ones only
    return out


def program_axes(source: str) -> set[int]:
    """The axes `tl.program_id(k)` reads (0 where it reads none)."""
    axes = {int(m) for m in re.findall(r"program_id\(\s*(?:axis\s*=\s*)?([0-2])\s*\)", source)}
    return axes or {0}


def _dedent(source: str) -> str:
    lines = source.splitlines()
    pad = min((len(x) - len(x.lstrip()) for x in lines if x.strip()), default=0)
    return "\n".join(x[pad:] for x in lines)


# ---- one shape ----

@dataclass(frozen=True)
class Shape:
    """One synthesised launch: the spec's launch record, its Replay, the guard zones, its label."""

    launch: Launch
    replay: Replay
    guard: int                 # elements before each data region (and at least as many after)
    region: tuple[int, ...]    # elements of each buffer's data region
    label: str
    seed: int


def _role(name: str) -> str:
    low = name.lower()
    if "stride" in low:
        return "stride"
    if "seed" in low:
        return "seed"
    if "offset" in low or low in ("start", "base"):
        return "zero"
    return "size"


def _family(name: str) -> str:
    """`stride_xm`, `stride_xn` -> `stride_x`; `x_stride_0`, `x_stride_1` -> `x_stride`."""
    head, _, tail = name.rpartition("_")
    return head if head and len(tail) == 1 else name[:-1]


def _blocks(constexprs: dict[str, Any]) -> list[tuple[str, int]]:
    return [(k, v) for k, v in constexprs.items()
            if "BLOCK" in k.upper() and isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 1 << 16]


def _fixed_sizes(constexprs: dict[str, Any], cap: int) -> list[int]:
    """The sizes a spec fixes at compile time (`H_dim: tl.constexpr`, a block aside), at most `cap`:
    a kernel whose widths are constexprs reads that far into its buffers."""
    return [min(v, cap) for k, v in constexprs.items() if isinstance(v, int) and not isinstance(v, bool)
            and v > 1 and "BLOCK" not in k.upper() and _role(k) == "size"]


def _sizes(names: list[str], index: int, blocks: list[int], cap: int) -> dict[str, int]:
    """Each size parameter's value at shape `index`: block edges (partial blocks) on some shapes."""
    out = {}
    edge = {1: 1, 3: 2, 7: -1}.get(index % SHAPES)   # B+1, 2B+1, B-1
    for j, name in enumerate(names):
        if len(names) == 1:
            v = ONE_SIZE[index % len(ONE_SIZE)]
        else:
            v = MANY_SIZES[(index + 3 * j) % len(MANY_SIZES)]
        if edge is not None and blocks and j == 0:
            b = blocks[0]
            v = b + 1 if edge == 1 else 2 * b + 1 if edge == 2 else max(1, b - 1)
        out[name] = max(1, min(v, cap))
    return out


def _grid(axes: set[int], sizes: dict[str, int], blocks: list[tuple[str, int]], rows: int) -> tuple[int, int, int]:
    """A program per block of the largest size (axis 0), at least `rows` (a kernel with strides
    may take a row per program); where the kernel reads axis 1 or 2, a program per block of the
    size its block's name points at, else one."""
    def block_for(size: str, k: int) -> int:
        for name, b in blocks:
            tail = name.upper().replace("BLOCK_SIZE", "").replace("BLOCK", "").strip("_")
            if tail and tail == size.upper().rpartition("_")[2]:
                return b
        return blocks[k][1] if k < len(blocks) else (blocks[0][1] if blocks else 1)
    names = list(sizes)
    grid = [1, 1, 1]
    if not names:
        return (1, 1, 1)
    if axes <= {0}:
        biggest = max(names, key=lambda n: sizes[n])
        grid[0] = max(rows, -(-sizes[biggest] // block_for(biggest, 0)))
    else:
        for k in sorted(axes):
            name = names[k] if k < len(names) else names[-1]
            grid[k] = -(-sizes[name] // block_for(name, k))
    while grid[0] * grid[1] * grid[2] > MAX_PROGRAMS:
        k = grid.index(max(grid))
        grid[k] = max(1, grid[k] // 2)
    return (grid[0], grid[1], grid[2])


def _scalar(name: str, typ: str, sizes: dict[str, int], strides: dict[str, int], index: int,
            seed: int) -> bool | int | float:
    low = name.lower()
    if typ in ("i1", "u1"):
        return index % 2 == 0
    if typ in FLOATS:
        if "eps" in low:
            return 1e-5
        return 0.5 + (index % 3) * 0.75
    role = _role(name)
    if role == "stride":
        return strides[name]
    if role == "seed":
        return seed + 1234
    if role == "zero":
        return 0
    return sizes[name]


def shape(plan: SynthPlan, index: int, lits: list[float], axes: set[int]) -> Shape:
    """The launch of shape `index` (deterministic: the same for old and new, every run)."""
    spec = plan.specs[index % len(plan.specs)]
    consts = dict(spec.constexprs)
    blocks = _blocks(consts)
    ints = [n for n, t in spec.signature if t in INTS and _role(n) == "size"]
    stride_names = [n for n, t in spec.signature if t in INTS and _role(n) == "stride"]
    families: dict[str, list[str]] = {}
    for n in stride_names:
        families.setdefault(_family(n), []).append(n)
    depth = max((len(f) for f in families.values()), default=0)
    # with strides a region spans one more dimension than the longest stride family (a row index
    # taken from the grid), so sizes shrink until that fits MAX_ELEMENTS
    cap = MAX_ELEMENTS if not stride_names else int(MAX_ELEMENTS ** (1 / (depth + 1))) - PAD
    sizes = _sizes(ints, index, [b for _, b in blocks], cap)
    # a row's pitch is wider than any size, the spec's fixed ones too (rows padded): a stride
    # taken for a width shows, and a width the kernel reads from a constexpr fits its buffers
    pitch = max([*sizes.values(), *_fixed_sizes(consts, cap)], default=1) + (PAD if stride_names else 0)
    strides = {}
    for members in families.values():
        for pos, n in enumerate(members):   # row-major: (.., pitch, 1); a lone stride is a row's
            strides[n] = pitch ** (len(members) - 1 - pos if len(members) > 1 else 1)
    region_elems = min(MAX_ELEMENTS, pitch ** (depth + 1) if stride_names else pitch)
    seed = plan.seed + index
    scale = SCALES[index % len(SCALES)]
    wide = max([4.0] + [2 * v for v in lits if 0 < v <= 1e4])
    lo_hi = {"wide": wide, "unit": 1.0, "small": 1e-3}[scale]
    guard = max([GUARD] + [b for _, b in blocks if b <= 4096])
    args: list[tuple[str, object]] = []
    buffers: list[int] = []
    regions: list[int] = []
    smallest = min(sizes.values(), default=1)
    for name, typ in spec.signature:
        if typ.startswith("*"):
            elem = typ[1:].removeprefix("k")
            dtype = DTYPES.get(elem)
            if dtype is None:
                raise Unsynthesisable(f"parameter {name} is a {typ} pointer, a type synthesised inputs do not make")
            if elem in FLOATS:
                low, high = -lo_hi, lo_hi
            elif dtype == "bool":
                low, high = 0, 1
            else:
                low, high = 0, max(0, smallest - 1)   # index-like: stays in bounds
            width = _itemsize(dtype)
            args.append((name, TensorArg(dtype, (region_elems,), (1,), guard, len(buffers), low, high)))
            buffers.append((2 * guard + region_elems) * width)
            regions.append(region_elems)
        elif typ in INTS or typ in FLOATS or typ in ("i1", "u1"):
            args.append((name, _scalar(name, typ, sizes, strides, index, seed)))
        else:
            raise Unsynthesisable(f"parameter {name} is a {typ}, a kind synthesised inputs do not make")
    grid = _grid(axes, sizes, blocks, ROWS if stride_names else 1)
    replay = Replay(grid, tuple(args), tuple(buffers), 1)   # type: ignore[arg-type]
    sig = dict(spec.signature)
    launch = Launch(plan.new_id, plan.params, sig, consts, (), spec.num_warps, spec.num_stages, {}, None,
                    "synthesised", 1, (replay,))
    said = ", ".join(f"{k}={v}" for k, v in {**sizes, **strides}.items()) or "no sizes"
    label = f"{said} grid {'x'.join(map(str, grid))} {scale} values"
    return Shape(launch, replay, guard, tuple(regions), label, seed)


def _itemsize(dtype: str) -> int:
    if dtype in ("bool", "int8", "uint8") or dtype.startswith("float8"):
        return 1
    return {"float16": 2, "bfloat16": 2, "int16": 2, "float32": 4, "int32": 4}.get(dtype, 8)
