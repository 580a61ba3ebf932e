"""Replaying recorded launches: `--outputs` and `--time` for a kernel with no wrapper config.

The old and the new kernel are launched directly with a launch `ptxdiff record` kept
(record/replay_format.py): its grid, its constexprs and options, and inputs made from the recorded
metadata by one seeded generator, the same bytes for both sides (each side gets its own
buffers, with the recorded views and aliasing). What a kernel writes is what it outputs: every
tensor argument is compared after the launch, with the tolerances and the NaN rule of
`--outputs`. Timing takes each recorded launch shape in turn. Worker side (torch, triton).
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ptxdiff.dynamic.runner import (
    TOLERANCES,
    RunError,
    RunWorker,
    compare_outputs,
)
from ptxdiff.record.launches import Launch, match
from ptxdiff.record.replay_format import CAP, Replay, TensorArg, Unrecorded, is_float
from ptxdiff.source.modules import ModuleIndex
from ptxdiff.verdict import Outputs

SEED = 0
# what one side of one replayed launch may allocate, checked before anything is: its buffers, and
# each view's elements (a stride-0 view of 12 Gi elements needs a tiny buffer, and values for each)
MEMORY_BUDGET = 4 << 30
INT64 = (-(2 ** 63), 2 ** 63 - 1)
# the interpreter runs a kernel's programs one by one in Python: a launch recorded on a GPU with
# more than this is left to a GPU (its reason said), not left to time out with the others
INTERPRETER_MAX_PROGRAMS = 4096


@dataclass(frozen=True)
class ReplayPlan:
    """What to replay for one kernel (picklable): its id on each side and its recorded launches."""

    old_id: str
    new_id: str
    launches: tuple[Launch, ...]

    def shapes(self) -> list[tuple[Launch, Replay]]:
        return [(launch, r) for launch in self.launches for r in launch.replay]


def plan_for(old_id: str, new_id: str, params: list[str], recordings: list[dict[str, Any]]) -> ReplayPlan | None:
    """The recorded launches to replay for a kernel: the first recording (new side's, then old
    side's) whose launches of it fit its parameters and keep replayable launches; None if none."""
    for recording in recordings:
        launches, _ = match(recording, new_id, params)
        kept = tuple(launch for launch in launches if launch.replay)
        if kept:
            return ReplayPlan(old_id, new_id, kept)
    return None


class Unreplayable(Exception):
    """A launch that cannot be replayed: the message is the one-line reason."""


@dataclass(frozen=True)
class Loaded:
    """One side's kernel (the jit function that launches) and the @triton.jit functions its
    recorded launches pass as constexprs ({"jit": id} -> the side's own function)."""

    kernel: Any
    jits: dict[str, Any]


def load_kernels(worker: RunWorker, plan: ReplayPlan) -> tuple[Loaded, Loaded]:
    """(old, new): each side's module imported from its own blobs, the kernel unwrapped from
    its autotuner or heuristics down to the jit function that launches."""
    from ptxdiff.instantiate import importer

    got = []
    wanted = sorted({j for launch in plan.launches for v in launch.constexprs.values() for j in _jit_ids(v)})
    for side, index, kid in zip(worker.pair, worker.indexes, (plan.old_id, plan.new_id)):
        finder = importer.install(index, side.tag)
        try:
            path, _, name = kid.partition("::")
            try:
                module = importlib.import_module(index.module_name(path))
            except Exception as e:
                raise RunError(f"import of {path} failed: {type(e).__name__}: {e}".splitlines()[0]) from None
            obj = getattr(module, name, None)
            if obj is None:
                raise RunError(f"{path} has no {name}")
            got.append(Loaded(_launcher(obj), {j: f for j in wanted if (f := _jit(index, j)) is not None}))
        finally:
            importer.uninstall(finder)
    return got[0], got[1]


def _jit_ids(value: object) -> list[str]:
    if isinstance(value, dict) and isinstance(value.get("jit"), str):
        return [value["jit"]]
    return [j for v in value for j in _jit_ids(v)] if isinstance(value, list) else []


def _jit(index: ModuleIndex, kid: str) -> Any:
    """A @triton.jit function a launch passed as a constexpr, from this side; None if absent."""
    path, _, name = kid.partition("::")
    if path not in index.snapshot:
        return None
    try:
        return getattr(importlib.import_module(index.module_name(path)), name, None)
    except Exception:  # said when the launch needs it
        return None


def _launcher(obj: Any) -> Any:
    """The JITFunction (or the interpreter's InterpretedFunction) under autotuners and heuristics:
    the recorded launch names the Config's values itself."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(obj, (JITFunction, InterpretedFunction)) and hasattr(obj, "fn") and seen < 8:
        obj, seen = obj.fn, seen + 1
    if not isinstance(obj, (JITFunction, InterpretedFunction)):
        raise RunError(f"not a triton kernel: {type(obj).__name__}")
    return obj


def _constexpr(name: str, value: Any, jits: dict[str, Any]) -> Any:
    import triton.language as tl

    if "[" in name:
        raise Unreplayable(f"constexpr {name} is inside a tuple argument, which replay does not make")
    if isinstance(value, str) and value.startswith("tl.") and isinstance(getattr(tl, value[3:], None), tl.dtype):
        return getattr(tl, value[3:])
    if isinstance(value, dict):
        if set(value) == {"float"}:
            return float(value["float"])
        if set(value) == {"jit"} and value["jit"] in jits:
            return jits[value["jit"]]
        raise Unreplayable(f"constexpr {name} was recorded as {next(iter(value))} {next(iter(value.values()))!r}, "
                           "which replay cannot rebuild")
    if isinstance(value, list):
        return tuple(_constexpr(name, v, jits) for v in value)
    return value


def make_args(r: Replay, device: str, seed: int = SEED) -> dict[str, Any]:
    """The run-time arguments of a recorded launch: buffers of the recorded sizes, the recorded
    views into them, values of the recorded kind from one seeded generator (the same bytes every
    call, so both sides get the same inputs)."""
    import torch

    bounded(r)
    gen = torch.Generator().manual_seed(seed)
    buffers = [torch.zeros(n, dtype=torch.uint8) for n in r.buffers]
    views: dict[str, object] = {}
    for name, a in r.args:
        if isinstance(a, Unrecorded):
            raise Unreplayable(f"argument {name} is a {a.kind}, a kind ptxdiff record does not keep")
        if not isinstance(a, TensorArg):
            views[name] = a
            continue
        dtype = getattr(torch, a.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise Unreplayable(f"argument {name} has dtype {a.dtype}, unknown to this torch")
        view = _view(buffers[a.buffer], dtype, a)
        if view.numel():
            try:
                view.copy_(_values(a, dtype, view.numel(), gen).reshape(view.shape))
            except RuntimeError:  # a view that overlaps itself (stride 0): its buffer keeps zeros
                pass
        views[name] = (a, dtype)
    moved = [b.to(device) for b in buffers]
    return {name: _view(moved[v[0].buffer], v[1], v[0]) if isinstance(v, tuple) else v for name, v in views.items()}


def _gib(n: int) -> str:
    return f"{n / 2 ** 30:.3g} GiB"


def bounded(r: Replay, budget: int = MEMORY_BUDGET) -> None:
    """A recorded launch (the repository's data) checked before anything is allocated, one line
    (Unreplayable) where it asks for more than the budget, a view reaches past its recorded
    buffer, or an int, a scalar or an integer tensor's range, could index past every buffer (or
    is past int64): replayed, such a launch could take the machine's memory or the worker."""
    import torch

    if sum(r.buffers) > budget:
        raise Unreplayable(f"its buffers hold {_gib(sum(r.buffers))}, over the replay budget of {_gib(budget)}")
    largest = 0
    for name, a in r.args:
        if not isinstance(a, TensorArg):
            continue
        dtype = getattr(torch, a.dtype, None)
        size = dtype.itemsize if isinstance(dtype, torch.dtype) else 1
        elements = math.prod(a.shape)
        if elements * size > budget:
            raise Unreplayable(f"argument {name} is a view of {elements} elements ({a.dtype} {list(a.shape)}, stride "
                               f"{list(a.stride)}), over the replay budget of {_gib(budget)}")
        reach = (a.offset + sum((s - 1) * abs(st) for s, st in zip(a.shape, a.stride)) + 1) * size if elements else 0
        if reach > r.buffers[a.buffer] or any(st < 0 for st in a.stride):
            raise Unreplayable(f"argument {name} ({a.dtype} {list(a.shape)} at {a.offset}, stride {list(a.stride)}) "
                               f"reaches past its recorded buffer of {r.buffers[a.buffer]} bytes")
        largest = max(largest, r.buffers[a.buffer] // size)
    for name, v in _ints(r):
        if not INT64[0] <= v <= INT64[1] or abs(v) > max(largest, 1):
            shown = str(v) if len(str(v)) <= 24 else f"{str(v)[:20]}... ({len(str(v))} digits)"
            raise Unreplayable(f"argument {name} is {shown}, past the {largest} elements of its largest buffer: "
                               "replayed, it could index outside every buffer")


def _ints(r: Replay) -> list[tuple[str, int]]:
    """The ints a launch passes: scalars, and the bounds of each integer tensor's recorded range."""
    out: list[tuple[str, int]] = []
    for name, a in r.args:
        if isinstance(a, int) and not isinstance(a, bool):
            out.append((name, a))
        elif isinstance(a, TensorArg) and not is_float(a.dtype) and a.dtype != "bool" and a.low is not None \
                and a.high is not None:
            out += [(f"{name}'s range", _whole(a.low)), (f"{name}'s range", _whole(a.high))]
    return out


def _whole(v: float | int) -> int:
    """A recorded range bound as an int (one past int64 where it is no finite number)."""
    return v if isinstance(v, int) else int(v) if math.isfinite(v) else INT64[1] + 1


def _view(buffer: Any, dtype: Any, a: TensorArg) -> Any:
    import torch

    need = (a.offset + sum((s - 1) * st for s, st in zip(a.shape, a.stride)) + 1) * dtype.itemsize \
        if all(a.shape) else 0
    if need > buffer.numel():
        raise Unreplayable(f"a recorded view ({a.dtype} {list(a.shape)} at {a.offset}) reaches past its buffer")
    return torch.empty(0, dtype=dtype, device=buffer.device).set_(buffer.untyped_storage(), a.offset, a.shape, a.stride)


def _values(a: TensorArg, dtype: Any, n: int, gen: Any) -> Any:
    """n values of the recorded kind: integers uniform in their exact range, floats uniform in
    their finite range (standard normal when none was recorded), NaN and Inf sprinkled in where
    the recording saw them."""
    import torch

    if dtype == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool()
    if not is_float(a.dtype):
        first, last = (int(a.low), int(a.high)) if a.low is not None and a.high is not None else (0, 0)
        return torch.randint(first, last + 1, (n,), generator=gen, dtype=torch.int64).to(dtype)
    if a.low is None or a.high is None:
        out = torch.randn(n, generator=gen, dtype=torch.float32)
    else:
        top = min(CAP, float(torch.finfo(dtype).max))  # an fp16's range is smaller than CAP
        lo, hi = max(float(a.low), -top), min(float(a.high), top)
        out = torch.rand(n, generator=gen, dtype=torch.float32) * (hi - lo) + lo
    if a.nan:
        out[5::13] = math.nan
    if a.inf:
        out[7::17] = math.inf
    return out.to(dtype)


def launch(side: Loaded, recorded: Launch, r: Replay, args: dict[str, Any]) -> None:
    """One launch of a side's kernel as recorded: grid, arguments, constexprs, num_warps/stages,
    options."""
    constexprs = {k: _constexpr(k, v, side.jits) for k, v in recorded.constexprs.items()}
    options = {k: _constexpr(k, v, side.jits) for k, v in recorded.options.items()}
    side.kernel[r.grid](**args, **constexprs, num_warps=recorded.num_warps, num_stages=recorded.num_stages, **options)


def _bound(side: Loaded, recorded: Launch, r: Replay, args: dict[str, Any]) -> Callable[[], None]:
    return lambda: launch(side, recorded, r, args)


def _fault(e: BaseException, where: str) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{where} could not run it: {type(e).__name__}: {first}"[:300]


def _tensors(args: dict[str, Any]) -> list[tuple[str, Any]]:
    import torch

    return [(k, v) for k, v in args.items() if isinstance(v, torch.Tensor)]


def outputs(worker: ReplayWorker, plan: ReplayPlan) -> dict[str, Any]:
    """Every recorded launch, old and new on the same inputs; every tensor argument compared."""
    try:
        old_k, new_k = load_kernels(worker, plan)
    except RunError as e:
        return {"result": Outputs.NOT_RUN, "reason": str(e), "via": "replayed launch"}
    device = "cuda" if worker.gpu else "cpu"
    where = "the GPU" if worker.gpu else "the interpreter"
    checked, labels, skipped = 0, [], []
    for recorded, r in plan.shapes():
        label = r.label()
        programs = r.grid[0] * r.grid[1] * r.grid[2]
        if not worker.gpu and programs > INTERPRETER_MAX_PROGRAMS:
            skipped.append(f"{label}: {programs} programs, too many for the interpreter (a GPU replays it)")
            continue
        try:
            old_args, new_args = make_args(r, device), make_args(r, device)
            launch(old_k, recorded, r, old_args)
            launch(new_k, recorded, r, new_args)
        except Unreplayable as e:
            skipped.append(f"{label}: {e}")
            continue
        except Exception as e:  # one side failed where it ran: no claim of equal outputs
            worker.faulted = worker.gpu    # a fault may leave the CUDA context unusable: a fresh worker next
            return {"result": Outputs.NOT_RUN, "reason": f"replayed launch {label}: {_fault(e, where)}",
                    "via": f"replayed launch {label}"}
        for name, old_t in _tensors(old_args):
            dtype = str(old_t.dtype).rpartition(".")[2]
            ok, max_abs, max_rel = compare_outputs(old_t, new_args[name], dtype)
            if not ok:
                rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0) if not is_float(dtype) else TOLERANCES["float32"])
                return {"result": Outputs.DIFFER, "n": label, "dtype": dtype, "argument": name, "max_abs": max_abs,
                        "max_rel": max_rel, "rtol": rtol, "atol": atol, "checked": checked + 1, "device": device,
                        "via": f"replayed launch {label}"}
        checked += 1
        labels.append(label)
    if not checked:
        return {"result": Outputs.NOT_RUN, "reason": "no recorded launch could be replayed: " + "; ".join(skipped),
                "via": "replayed launch"}
    return {"result": Outputs.EQUAL, "checked": checked, "device": device, "launches": labels,
            "via": "replayed launch " + labels[0], **({"skipped": skipped} if skipped else {})}


def time(worker: ReplayWorker, plan: ReplayPlan, min_band: float) -> dict[str, Any]:
    """Each recorded launch shape timed old against new (timing.measure); the row's result is
    the shape where the most time goes (launch count x old median), JSON has them all."""
    from ptxdiff.dynamic import timing

    if not worker.gpu:
        return {"result": Outputs.NOT_RUN, "reason": "no GPU on this machine: timing needs one"}
    try:
        old_k, new_k = load_kernels(worker, plan)
    except RunError as e:
        return {"result": Outputs.NOT_RUN, "reason": str(e), "via": "replayed launch"}
    per_shape, skipped = [], []
    for recorded, r in plan.shapes():
        label = r.label()
        try:
            old_args, new_args = make_args(r, "cuda"), make_args(r, "cuda")
            result = timing.measure(_bound(old_k, recorded, r, old_args), _bound(new_k, recorded, r, new_args),
                                    min_band=min_band, keep_samples=False)
        except Unreplayable as e:
            skipped.append(f"{label}: {e}")
            continue
        except Exception as e:
            worker.faulted = True
            skipped.append(f"{label}: {_fault(e, 'the GPU')}")
            break
        per_shape.append({**result.as_dict(), "result": result.verdict, "summary": result.summary(),
                          "launch": label, "count": r.count})
    if not per_shape:
        return {"result": Outputs.NOT_RUN, "reason": "no recorded launch could be timed: " + "; ".join(skipped),
                "via": "replayed launch"}
    main = max(per_shape, key=lambda t: t["count"] * t["old_median_us"])
    more = f" (1 of {len(per_shape)} recorded launches, the most time)" if len(per_shape) > 1 else ""
    return {**main, "summary": f"replayed launch {main['launch']}{more}: {main['summary']}",
            "via": f"replayed launch {main['launch']}", "launches": per_shape,
            **({"skipped": skipped} if skipped else {})}


class ReplayWorker(RunWorker):
    """The run worker, with replays of recorded launches. `faulted`: a launch failed on the GPU,
    whose context may now be unusable; the worker asks to be replaced (compile/worker.serve)."""

    faulted = False

    def replay_outputs(self, plan: ReplayPlan) -> dict[str, Any]:
        return outputs(self, plan)

    def replay_time(self, plan: ReplayPlan, min_band: float) -> dict[str, Any]:
        return time(self, plan, min_band)
