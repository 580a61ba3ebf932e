"""Reproducers: an `outputs-differ` row of synthesised launches (dynamic/oracle.py) written out as
one standalone script (`ptxdiff diff A B --outputs --repro DIR`): the old and the new module's
text, the launch (grid, arguments, constexprs, num_warps/stages), the seed and the shape, and the
comparison (an A/A run first). It needs triton and torch alone: on a CPU it runs in triton's
interpreter, on a GPU on the device. Exit 1 when old and new differ, 0 when they agree.
Pure: no torch, no triton here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

TEMPLATE = r'''#!/usr/bin/env python3
"""ptxdiff reproducer: {kernel}, old {old_rev} against new {new_rev}.

Synthesised launch {shape_index} (seed {seed}): {shape}.
ptxdiff saw it first differ at {where}.
Runs with triton and torch alone: `python {name}` (no GPU: triton's interpreter, TRITON_INTERPRET=1).
Exit 1 when old and new differ (after an A/A run of old), 0 when they agree.
"""
import importlib.util
import os
import sys
import tempfile

try:
    import torch
    GPU = torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"
except ImportError:
    sys.exit("this reproducer needs torch")
if not GPU:
    os.environ["TRITON_INTERPRET"] = "1"   # before triton is imported
import triton  # noqa: E402

OLD_SOURCE = {old_src!r}
NEW_SOURCE = {new_src!r}
OLD_KERNEL, NEW_KERNEL = {old_name!r}, {new_name!r}
LAUNCH = {launch_literal}
SEED = {seed}
TOLERANCES = {{"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5)}}


def load(source, name, tag):
    folder = tempfile.mkdtemp(prefix="ptxdiff-repro-")
    path = os.path.join(folder, f"repro_{{tag}}.py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(f"repro_{{tag}}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    kernel = getattr(module, name)
    while type(kernel).__name__ not in ("JITFunction", "InterpretedFunction") and hasattr(kernel, "fn"):
        kernel = kernel.fn   # under @triton.autotune / @triton.heuristics: the jit function
    return kernel


def make_args():
    """The launch's arguments: the same bytes on every call (ptxdiff's replay.make_args)."""
    gen = torch.Generator().manual_seed(SEED)
    buffers = [torch.zeros(n, dtype=torch.uint8) for n in LAUNCH["buffers"]]
    args, views = {{}}, []
    for name, a in LAUNCH["args"].items():
        if not isinstance(a, dict):
            args[name] = a
            continue
        dtype = getattr(torch, a["dtype"])
        view = torch.empty(0, dtype=dtype).set_(buffers[a["buffer"]].untyped_storage(), a["offset"], a["shape"],
                                                a["stride"])
        n = view.numel()
        low, high = a["range"]
        if dtype == torch.bool:
            values = torch.randint(0, 2, (n,), generator=gen).bool()
        elif not dtype.is_floating_point:
            values = torch.randint(int(low), int(high) + 1, (n,), generator=gen, dtype=torch.int64).to(dtype)
        else:
            top = min(2.0 ** 16, float(torch.finfo(dtype).max))
            lo, hi = max(float(low), -top), min(float(high), top)
            values = (torch.rand(n, generator=gen, dtype=torch.float32) * (hi - lo) + lo).to(dtype)
        view.copy_(values.reshape(view.shape))
        views.append((name, a, dtype))
    guard = LAUNCH["guard"]
    for i, (name, a, dtype) in enumerate(views):   # guard zones: a byte pattern per buffer
        raw, width = buffers[a["buffer"]], dtype.itemsize
        raw[:guard * width] = 0x7F - i % 32
        raw[(guard + a["shape"][0]) * width:] = 0x7F - i % 32
    device = "cuda" if GPU else "cpu"
    moved = [b.to(device) for b in buffers]
    for name, a, dtype in views:
        args[name] = torch.empty(0, dtype=dtype, device=device).set_(
            moved[a["buffer"]].untyped_storage(), a["offset"], a["shape"], a["stride"])
    return args


def constexpr(value):
    import triton.language as tl
    if isinstance(value, str) and value.startswith("tl."):
        return getattr(tl, value[3:])
    return value


def run(kernel):
    args = make_args()
    consts = {{k: constexpr(v) for k, v in LAUNCH["constexprs"].items()}}
    kernel[tuple(LAUNCH["grid"])](**args, **consts, num_warps=LAUNCH["num_warps"], num_stages=LAUNCH["num_stages"])
    return args


def whole(view):
    storage = view.untyped_storage()
    return torch.empty(0, dtype=view.dtype, device=view.device).set_(
        storage, 0, (storage.nbytes() // view.element_size(),), (1,)).cpu()


def first_difference(a_args, b_args, exact):
    guard = LAUNCH["guard"]
    for name, view in a_args.items():
        if not isinstance(view, torch.Tensor):
            continue
        a, b = whole(view), whole(b_args[name])
        bad = ~(a.view(torch.uint8).reshape(a.numel(), -1) == b.view(torch.uint8).reshape(b.numel(), -1)).all(-1)
        if not exact and a.is_floating_point():
            region = slice(guard, guard + view.numel())
            rtol, atol = TOLERANCES.get(str(a.dtype).rpartition(".")[2], TOLERANCES["float32"])
            da, db = a[region].double(), b[region].double()
            ok = (torch.isnan(da) & torch.isnan(db)) | (da == db) | ((da - db).abs() <= atol + rtol * db.abs())
            bad[region] = ~ok
        where = torch.nonzero(bad)
        if where.numel():
            i = int(where[0])
            return f"{{name}}[{{i - guard}}]: old {{a[i].item()!r}}, new {{b[i].item()!r}}"
    return None


if __name__ == "__main__":
    old_kernel, new_kernel = load(OLD_SOURCE, OLD_KERNEL, "old"), load(NEW_SOURCE, NEW_KERNEL, "new")
    first = run(old_kernel)
    again = first_difference(first, run(old_kernel), exact=True)
    print("A/A: equal" if again is None else f"A/A: old differs from itself at {{again}} (nondeterministic)")
    if again is not None:
        sys.exit(2)
    found = first_difference(first, run(new_kernel), exact=False)
    print("outputs equal" if found is None else f"outputs differ: {{found}}")
    sys.exit(1 if found else 0)
'''


def file_name(kernel: str) -> str:
    """`ops/k.py::gelu_kernel` -> `ops_k.py__gelu_kernel.py`."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", kernel.replace("::", "__").replace("/", "_")) + ".py"


def script(kernel: str, old_kernel: str, result: dict[str, Any], old_src: str, new_src: str, revs: tuple[str, str]) -> str:
    """The reproducer of one fuzzed `outputs-differ` result."""
    launch = result["launch"]
    where = f"{result['buffer']}[{result['index']}]: old {result['old']}, new {result['new']}"
    return TEMPLATE.format(kernel=kernel, old_rev=revs[0], new_rev=revs[1], shape_index=result.get("shape_index", 0),
                           seed=result["seed"], shape=result["shape"], where=where, name=file_name(kernel),
                           old_src=old_src, new_src=new_src, old_name=old_kernel.partition("::")[2],
                           new_name=kernel.partition("::")[2], launch_literal=repr(launch))


def write(where: Path, kernel: str, old_kernel: str, result: dict[str, Any], old_src: str, new_src: str,
          revs: tuple[str, str]) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / file_name(kernel)
    path.write_text(script(kernel, old_kernel, result, old_src, new_src, revs))
    return path
