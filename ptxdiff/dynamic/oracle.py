"""The semantic oracle, worker side: synthesised launches (dynamic/synthesize.py) run on old
and new through the replay path (dynamic/replay.py: the kernels loaded, the arguments made and
the launch done by the same functions), with an A/A run first (old twice: a difference there
is nondeterminism, never a semantic change), guard zones around every buffer, and, in triton's
interpreter, every load and store checked against the buffers a launch was given (an access
outside all of them stops that side with the place, instead of reading or writing whatever
memory lies there). Every buffer is compared after the launch, guards bit for bit and the
data with the tolerances of `--outputs`; the first difference is named (buffer, index, old,
new, the shape). Worker side (torch, triton).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ptxdiff.dynamic.replay import Loaded, ReplayPlan, ReplayWorker, launch, load_kernels, make_args
from ptxdiff.dynamic.runner import TOLERANCES, RunError
from ptxdiff.dynamic.synthesize import Shape, SynthPlan, Unsynthesisable, literals, program_axes, shape
from ptxdiff.verdict import Outputs


class OutOfBounds(Exception):
    """A load or store of the interpreter outside every buffer of the launch."""


def _sources(side: Loaded) -> str:
    """The kernel's text and that of the jit functions it names (one level: a helper's literals)."""
    fn = getattr(side.kernel, "fn", side.kernel)
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):
        return ""
    extra = []
    for name, value in getattr(fn, "__globals__", {}).items():
        inner = getattr(value, "fn", None)
        if inner is not None and name in text and callable(inner):
            try:
                extra.append(inspect.getsource(inner))
            except (OSError, TypeError):
                continue
    return "\n".join([text, *extra])


@contextlib.contextmanager
def bounded(buffers: list[Any]) -> Iterator[None]:
    """In the interpreter: every masked load and store (atomics included) must fall inside one of
    `buffers`; OutOfBounds otherwise. Outside the interpreter: nothing (the guards still hold)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        yield
        return
    import numpy as np

    builder = interpreter.interpreter_builder
    spans = [(b.untyped_storage().data_ptr(), b.untyped_storage().data_ptr() + b.untyped_storage().nbytes())
             for b in buffers]

    def check(ptrs: Any, mask: Any, what: str) -> None:
        addr = np.asarray(ptrs.data, dtype=np.uint64)
        live = np.broadcast_to(np.asarray(mask.data, dtype=bool), addr.shape) if mask is not None else None
        addr = addr[live] if live is not None else addr.ravel()
        if not addr.size:
            return
        inside = np.zeros(addr.shape, dtype=bool)
        for lo, hi in spans:
            inside |= (addr >= lo) & (addr < hi)
        if not inside.all():
            raise OutOfBounds(f"{what} outside every buffer ({int((~inside).sum())} addresses)")

    saved = {k: getattr(builder, k) for k in ("create_masked_load", "create_masked_store", "create_atomic_rmw",
                                               "create_atomic_cas") if hasattr(builder, k)}

    def load(ptrs: Any, mask: Any, *a: Any) -> Any:
        check(ptrs, mask, "a load")
        return saved["create_masked_load"](ptrs, mask, *a)

    def store(ptrs: Any, value: Any, mask: Any, *a: Any) -> Any:
        check(ptrs, mask, "a store")
        return saved["create_masked_store"](ptrs, value, mask, *a)

    def rmw(op: Any, ptr: Any, val: Any, mask: Any, *a: Any) -> Any:
        check(ptr, mask, "an atomic")
        return saved["create_atomic_rmw"](op, ptr, val, mask, *a)

    def cas(ptr: Any, *a: Any) -> Any:
        check(ptr, None, "an atomic")
        return saved["create_atomic_cas"](ptr, *a)

    patched = {"create_masked_load": load, "create_masked_store": store, "create_atomic_rmw": rmw,
               "create_atomic_cas": cas}
    for k in saved:
        setattr(builder, k, patched[k])
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(builder, k, v)


def _buffers(args: dict[str, Any]) -> list[tuple[str, Any]]:
    import torch

    return [(k, v) for k, v in args.items() if isinstance(v, torch.Tensor)]


def _fill_guards(args: dict[str, Any], s: Shape) -> None:
    """Each buffer's guard zones get a byte pattern of their own (0x7F, 0x7E, ...): a value read
    past one buffer and stored past another still differs from what was there."""
    import torch

    for i, (_, view) in enumerate(_buffers(args)):
        storage = view.untyped_storage()
        raw = torch.empty(0, dtype=torch.uint8, device=view.device).set_(storage, 0, (storage.nbytes(),), (1,))
        width = view.element_size()
        raw[:s.guard * width].fill_(0x7F - i % 32)
        raw[(s.guard + view.numel()) * width:].fill_(0x7F - i % 32)


def _whole(view: Any) -> Any:
    """The whole buffer under a view, as the view's dtype (guards included)."""
    import torch

    storage = view.untyped_storage()
    return torch.empty(0, dtype=view.dtype, device=view.device).set_(
        storage, 0, (storage.nbytes() // view.element_size(),), (1,))


def first_difference(old: Any, new: Any, guard: int, exact: bool) -> dict[str, Any] | None:
    """Where two buffers (views of equal layout) first differ, or None: guards bit for bit, the
    data with `--outputs`' tolerances (exact for `exact` and for integers)."""
    import torch

    a, b = _whole(old).cpu(), _whole(new).cpu()
    dtype = str(old.dtype).rpartition(".")[2]
    region = slice(guard, guard + old.numel())
    bytes_a = a.view(torch.uint8).reshape(a.numel(), -1) if a.numel() else a.view(torch.uint8)
    bytes_b = b.view(torch.uint8).reshape(b.numel(), -1) if b.numel() else b.view(torch.uint8)
    same_bits = (bytes_a == bytes_b).all(dim=-1) if bytes_a.dim() > 1 else bytes_a == bytes_b
    bad = ~same_bits
    if not exact and (a.is_floating_point()):
        da, db = a[region].double(), b[region].double()
        rtol, atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
        nan_a, nan_b = torch.isnan(da), torch.isnan(db)
        close = (da - db).abs() <= atol + rtol * db.abs()
        ok = (nan_a & nan_b) | (da == db) | close
        bad[region] = ~ok
    where = torch.nonzero(bad)
    if not where.numel():
        return None
    i = int(where[0])
    value_a, value_b = a[i].item(), b[i].item()
    return {"index": i - guard, "old": value_a, "new": value_b, "dtype": dtype,
            "guard": "before" if i < guard else "after" if i >= guard + old.numel() else None}


@dataclass(frozen=True)
class Side:
    """One side's kernel and how a shape's launch reaches it: its own parameter names where they
    were renamed (by position), and the constexprs left to its own default."""

    loaded: Loaded
    names: dict[str, str]         # the plan's parameter name -> this side's
    own_defaults: frozenset[str]  # constexprs not passed: each side's own default applies

    def launch(self, s: Shape, args: dict[str, Any]) -> None:
        consts = {self.names.get(k, k): v for k, v in s.launch.constexprs.items() if k not in self.own_defaults}
        launch(self.loaded, dataclasses.replace(s.launch, constexprs=consts), s.replay,
               {self.names.get(k, k): v for k, v in args.items()})


def _parameters(side: Loaded) -> list[tuple[str, object]]:
    fn = getattr(side.kernel, "fn", side.kernel)
    try:
        return [(p.name, p.default) for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return []


def sides(plan: SynthPlan, old: Loaded, new: Loaded) -> tuple[Side, Side]:
    """Old and new as a shape's launch reaches them: a renamed parameter by its position, and a
    constexpr no launch site passes at each side's own default where the two declare different ones
    (a changed default is a change of what runs)."""
    o, n = _parameters(old), _parameters(new)
    empty = inspect.Parameter.empty

    def renamed(params: list[tuple[str, object]]) -> dict[str, str]:
        if len(params) != len(plan.params):
            return {}
        return {a: b for a, (b, _) in zip(plan.params, params) if a != b}
    old_names, new_names = renamed(o), renamed(n)
    old_defaults, new_defaults = dict(o), dict(n)
    own = frozenset(k for k in plan.params if k not in plan.passed
                    and new_defaults.get(new_names.get(k, k), empty) is not empty
                    and old_defaults.get(old_names.get(k, k), empty)
                    not in (empty, new_defaults.get(new_names.get(k, k), empty)))
    return Side(old, old_names, own), Side(new, new_names, own)


def _run(side: Side, s: Shape, device: str, gpu: bool) -> tuple[dict[str, Any], str | None]:
    """One side on a fresh copy of the shape's inputs: (its arguments after the launch, or why not)."""
    args = make_args(s.replay, device, seed=s.seed)
    _fill_guards(args, s)
    try:
        with contextlib.nullcontext() if gpu else bounded([v for _, v in _buffers(args)]):
            side.launch(s, args)
    except Exception as e:
        cause: BaseException | None = e
        while cause is not None and not isinstance(cause, OutOfBounds):   # the interpreter wraps it
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            return args, f"out of bounds: {cause}"
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return args, f"{type(e).__name__}: {first}"[:200]
    return args, None


def _compare(a: dict[str, Any], b: dict[str, Any], s: Shape, exact: bool) -> dict[str, Any] | None:
    for name, view in _buffers(a):
        found = first_difference(view, b[name], s.guard, exact)
        if found is not None:
            return {"buffer": name, **found}
    return None


def _said(value: object) -> object:
    return value if isinstance(value, (int, bool)) else float(f"{value:.6g}") if isinstance(value, float) else str(value)


def outputs(worker: ReplayWorker, plan: SynthPlan) -> dict[str, Any]:
    """Every synthesised shape: A/A (old twice, bit for bit), then old against new; with the CPU
    seconds it took (`cpu_s`, for benchmarks: the engine leaves it out of the row, whose results
    no clock may touch)."""
    import resource

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime
    start = cpu()
    return {**_outputs(worker, plan), "cpu_s": round(cpu() - start, 3)}


def _outputs(worker: ReplayWorker, plan: SynthPlan) -> dict[str, Any]:
    device = "cuda" if worker.gpu else "cpu"
    via = f"{plan.shapes} shapes, fuzzed"
    try:
        old_k, new_k = load_kernels(worker, ReplayPlan(plan.old_id, plan.new_id, ()))
    except RunError as e:
        return {"result": Outputs.NOT_RUN, "reason": str(e), "via": via, "fuzzed": True}
    old_side, new_side = sides(plan, old_k, new_k)
    old_src, new_src = _sources(old_k), _sources(new_k)
    lits = sorted(set(literals(old_src)) | set(literals(new_src)))
    axes = program_axes(old_src) | program_axes(new_src)
    checked, skipped, labels = 0, [], []
    for index in range(plan.shapes):
        try:
            s = shape(plan, index, lits, axes)
        except Unsynthesisable as e:
            return {"result": Outputs.NOT_RUN, "reason": str(e), "via": via, "fuzzed": True}
        first, why = _run(old_side, s, device, worker.gpu)
        if why is not None and worker.gpu:   # a fault may leave the CUDA context unusable: stop here
            worker.faulted = True
            return {"result": Outputs.NOT_RUN, "reason": f"old could not run at {s.label}: {why}", "via": via, "fuzzed": True}
        if why is not None:
            skipped.append(f"{s.label}: old {why}")
            continue
        again, why = _run(old_side, s, device, worker.gpu)
        aa = _compare(first, again, s, exact=True) if why is None else {"why": why}
        if aa is not None:
            return {"result": Outputs.NONDETERMINISTIC, "via": via, "fuzzed": True, "shape": s.label, "device": device,
                    "reason": "old run twice on the same inputs gave different outputs "
                              + (f"({aa['why']})" if "why" in aa else
                                 f"({aa['buffer']}[{aa['index']}]: {_said(aa['old'])} then {_said(aa['new'])})")}
        new, why = _run(new_side, s, device, worker.gpu)
        worker.faulted = worker.gpu and why is not None and not why.startswith("out of bounds")
        if why is not None and not why.startswith("out of bounds"):
            return {"result": Outputs.NOT_RUN, "reason": f"new could not run where old ran, at {s.label}: {why}",
                    "via": via, "fuzzed": True}
        found = {"buffer": "-", "index": None, "old": "ran", "new": why, "dtype": "-", "guard": None} \
            if why is not None else _compare(first, new, s, exact=False)
        checked += 1
        if found is not None:
            rtol, atol = TOLERANCES.get(str(found["dtype"]), (0.0, 0.0))
            return {"result": Outputs.DIFFER, "via": via, "fuzzed": True, "checked": checked, "device": device,
                    "buffer": found["buffer"], "index": found["index"], "guard": found["guard"],
                    "old": _said(found["old"]), "new": _said(found["new"]), "dtype": found["dtype"],
                    "shape": s.label, "n": s.label, "seed": s.seed, "rtol": rtol, "atol": atol,
                    "max_abs": _abs(found), "max_rel": _rel(found), "shape_index": index,
                    "launch": {**s.replay.as_json(), "constexprs": s.launch.constexprs,
                               "num_warps": s.launch.num_warps, "num_stages": s.launch.num_stages,
                               "guard": s.guard}}
        labels.append(s.label)
    if not checked:
        return {"result": Outputs.NOT_RUN, "reason": "no synthesised launch ran on old: " + "; ".join(skipped)[:600],
                "via": via, "fuzzed": True}
    return {"result": Outputs.EQUAL, "via": f"{checked} shapes, fuzzed", "fuzzed": True, "checked": checked,
            "device": device, "shapes": labels, **({"skipped": skipped} if skipped else {})}


def _abs(found: dict[str, Any]) -> float:
    try:
        return abs(float(found["old"]) - float(found["new"]))
    except (TypeError, ValueError):
        return float("inf")


def _rel(found: dict[str, Any]) -> float:
    try:
        return _abs(found) / max(abs(float(found["new"])), 1e-30)
    except (TypeError, ValueError):
        return float("inf")


class OracleWorker(ReplayWorker):
    """The run worker, with synthesised launches."""

    def synth_outputs(self, plan: SynthPlan) -> dict[str, Any]:
        return outputs(self, plan)
