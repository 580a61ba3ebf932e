"""Running old and new: the same seeded inputs through both host wrappers (`--outputs`), and
GPU timing of both (`--time`). Worker side: one process holds both revisions.

The user names, per kernel, the host wrapper that launches it and an input generator
(`wrapper = "ops/gelu.py:launch"`, `inputs = "ops/gelu.py:make_inputs"`, called as
`make_inputs(n, dtype, generator) -> tuple`). Both are imported from each revision's git
objects with the same importer as the static path; the old revision's modules are forgotten
before the new one's are imported, so both sets of functions live side by side. Inputs come
from the newer side's generator and are fed to both wrappers.

Where there is no GPU the kernels run on the CPU through triton's interpreter
(TRITON_INTERPRET=1), which must be set before the kernel modules are imported; there the run
worker is sealed like a compile worker (compile/pool.py), since nothing it runs needs a device.
"""

from __future__ import annotations

import copy
import math
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ptxdiff.source.modules import ModuleIndex
from ptxdiff.verdict import Outputs

if TYPE_CHECKING:  # types only: the worker imports git where it starts
    from ptxdiff.git.values import Side

# Tolerances per dtype (torch.testing's defaults). Old and new run the same inputs on the same
# backend, so unchanged code gives bit-identical outputs; tolerance only forgives reassociation.
TOLERANCES = {"float64": (1e-7, 1e-7), "float32": (1.3e-6, 1e-5), "float16": (1e-3, 1e-5),
              "bfloat16": (1.6e-2, 1e-5)}
DEFAULT_SIZES = (1, 2, 7, 31, 127, 128, 129, 257, 1000, 1021)


GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd")
_gpu: bool | None = None


def runs_on_gpu() -> bool:
    """Whether a run worker started here would use a GPU: RunWorker's own test,
    torch.cuda.is_available(), asked once in a process of its own (this one imports no torch,
    and the pool must know before a worker starts whether to seal it); without a GPU device
    node, or with CUDA_VISIBLE_DEVICES empty, torch finds none and is not asked."""
    global _gpu
    if _gpu is None:
        hidden = os.environ.get("CUDA_VISIBLE_DEVICES") in ("", "-1")
        _gpu = not hidden and any(os.path.exists(p) for p in GPU_NODES) and _torch_sees_gpu()
    return _gpu


def _torch_sees_gpu() -> bool:
    import subprocess

    try:
        said = subprocess.run([sys.executable, "-I", "-c", "import torch; print(torch.cuda.is_available())"],
                              capture_output=True, text=True, timeout=300, cwd="/").stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return said.strip().endswith("True")


class RunError(Exception):
    """The check could not run (no wrapper configured, the interpreter refused the kernel...)."""


@dataclass(frozen=True)
class RunPlan:
    """What to run for one kernel (picklable, built by the engine from config)."""

    kernel: str
    wrapper: str
    inputs: str
    dtypes: tuple[str, ...]
    sizes: tuple[int, ...]
    time_size: int


def sizes_around(blocks: list[int], configured: tuple[int, ...] = ()) -> tuple[int, ...]:
    """1, primes, powers of two and +-1, each block size's edges and one larger case."""
    if configured:
        return tuple(configured)
    edges = {e for b in blocks if 1 < b <= 4096 for e in (b - 1, b, b + 1, 2 * b + 1)}
    return tuple(sorted(set(DEFAULT_SIZES) | edges))


def compare_outputs(old: Any, new: Any, dtype: str) -> tuple[bool, float, float]:
    """(within tolerance, max abs error, max rel error) of two wrapper results.

    NaN must sit at the same places in both, infinities must be equal; the rest is compared as
    |a - b| <= atol + rtol * |b|."""
    import torch

    rtol, atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
    olds, news = _tensors(old), _tensors(new)
    if len(olds) != len(news):
        return False, math.inf, math.inf
    ok, max_abs, max_rel = True, 0.0, 0.0
    for a, b in zip(olds, news):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False, math.inf, math.inf
        a, b = a.detach().cpu().double(), b.detach().cpu().double()
        nan_a, nan_b = torch.isnan(a), torch.isnan(b)
        if not torch.equal(nan_a, nan_b):
            return False, math.nan, math.nan
        finite = torch.isfinite(a) & torch.isfinite(b)
        if not torch.equal(a[~finite & ~nan_a], b[~finite & ~nan_b]):
            return False, math.inf, math.inf
        if finite.any():
            diff = (a[finite] - b[finite]).abs()
            ref = b[finite].abs()
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / ref.clamp_min(1e-30)).max()))
            ok = ok and bool((diff <= atol + rtol * ref).all())
    return ok, max_abs, max_rel


def _on(device: str, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Inputs on `device` with their exact layout: a column slice stays a strided view (a
    `.to()` would make it contiguous and hide every stride bug)."""
    import torch

    def move(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or t.device.type == device:
            return t
        storage = t.untyped_storage().to(device=device)
        return torch.empty(0, dtype=t.dtype, device=device).set_(storage, t.storage_offset(), t.size(), t.stride())
    return tuple(move(t) for t in inputs)


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


class RunWorker:
    """A worker holding an (old, new) pair of revisions."""

    def __init__(self, repo_dir: str, pair: tuple[Side, Side], roots: tuple[str, ...], sealed: bool = False) -> None:
        """Opens the repository and lists both sides' files (before a seal: the work tree's listing
        reads git metadata); torch and triton come in `start`, after it."""
        from ptxdiff.git import repo as git

        self.repo = git.Repo(repo_dir, fetches=not sealed)   # sealed: the parent fetched what both sides need
        self.pair = pair
        self.roots = roots
        self.sealed = sealed
        self.indexes = (ModuleIndex(self.repo.snapshot(pair[0]), roots), ModuleIndex(self.repo.snapshot(pair[1]), roots))
        sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") not in (self.repo.workdir, os.getcwd())]
        self._loaded: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.gpu = False

    def start(self) -> None:
        """Choose the device: the GPU where torch sees one and the worker is not sealed (a sealed
        worker reaches no device), else triton's interpreter, chosen before triton is imported."""
        from ptxdiff.binaries import pin_fp_fusion

        pin_fp_fusion()  # and nothing else of the compile worker's env: these launches are real
        import torch

        self.gpu = not self.sealed and torch.cuda.is_available()
        if not self.gpu:
            if "triton" in sys.modules:  # its own @jit library functions would not be interpretable
                raise RunError("triton was imported before the interpreter could be chosen")
            os.environ["TRITON_INTERPRET"] = "1"

    def _load(self, plan: RunPlan) -> tuple[Any, ...]:
        """(old wrapper, new wrapper, the base's inputs generator), each side imported from its own blobs."""
        key = (plan.wrapper, plan.inputs)
        if key in self._loaded:
            return self._loaded[key]
        from ptxdiff.instantiate import importer

        got = []
        for side, index in zip(self.pair, self.indexes):
            finder = importer.install(index, side.tag)
            try:
                got.append((self._resolve(index, plan.wrapper, "wrapper"), self._resolve(index, plan.inputs, "inputs")))
            finally:
                importer.uninstall(finder)
        # the base (old) side's input generator: a branch that edits it to give zeros does not choose
        # its own check's inputs (the branch is data)
        (old_wrapper, old_inputs), (new_wrapper, _) = got
        self._loaded[key] = (old_wrapper, new_wrapper, old_inputs)
        return self._loaded[key]

    @staticmethod
    def _resolve(index: ModuleIndex, ref: str, key: str) -> Any:
        import importlib

        path, _, attr = ref.partition(":")
        if not attr or not path.endswith(".py"):
            raise RunError(f'config key {key} = "{ref}" must look like "path/to/module.py:function"')
        if path not in index.snapshot:
            raise RunError(f'config key {key} = "{ref}": {path} is not a file of the repository at this revision')
        try:
            module = importlib.import_module(index.module_name(path))
        except Exception as e:
            raise RunError(f"import of {path} failed: {type(e).__name__}: {e}".splitlines()[0]) from None
        try:
            return getattr(module, attr)
        except AttributeError:
            raise RunError(f"{path} has no {attr} (config key {key})") from None

    def outputs(self, plan: RunPlan) -> dict[str, Any]:
        import torch

        try:
            old_wrapper, new_wrapper, make_inputs = self._load(plan)
        except RunError as e:
            return {"result": Outputs.NOT_RUN, "reason": str(e)}
        device = "cuda" if self.gpu else "cpu"
        checked = 0
        for dtype in plan.dtypes:
            torch_dtype = getattr(torch, dtype, None)
            if not isinstance(torch_dtype, torch.dtype):
                return {"result": Outputs.NOT_RUN, "reason": f"unknown dtype {dtype!r} (config key dtypes)"}
            for n in plan.sizes:
                inputs = _on(device, make_inputs(n, torch_dtype, torch.Generator().manual_seed(n)))
                try:  # each side gets its own copy, same strides and offsets (a wrapper may write)
                    old = old_wrapper(*copy.deepcopy(inputs))
                    new = new_wrapper(*copy.deepcopy(inputs))
                except Exception as e:
                    where = "the interpreter" if not self.gpu else "the GPU"
                    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    return {"result": Outputs.NOT_RUN, "reason": f"{where} could not run it at n={n}, {dtype}: "
                                                         f"{type(e).__name__}: {first}"[:300]}
                ok, max_abs, max_rel = compare_outputs(old, new, dtype)
                checked += 1
                if not ok:
                    rtol, atol = TOLERANCES.get(dtype, TOLERANCES["float32"])
                    return {"result": Outputs.DIFFER, "n": n, "dtype": dtype, "max_abs": max_abs, "max_rel": max_rel,
                            "rtol": rtol, "atol": atol, "checked": checked, "device": device}
        return {"result": Outputs.EQUAL, "checked": checked, "device": device,
                "sizes": list(plan.sizes), "dtypes": list(plan.dtypes)}

    def time(self, plan: RunPlan, min_band: float) -> dict[str, Any]:
        from ptxdiff.dynamic import timing

        if not self.gpu:
            return {"result": Outputs.NOT_RUN, "reason": "no GPU on this machine: timing needs one"}
        import torch

        try:
            old_wrapper, new_wrapper, make_inputs = self._load(plan)
        except RunError as e:
            return {"result": Outputs.NOT_RUN, "reason": str(e)}
        dtype = getattr(torch, plan.dtypes[0])
        inputs = _on("cuda", make_inputs(plan.time_size, dtype, torch.Generator().manual_seed(0)))
        result = timing.measure(lambda: old_wrapper(*inputs), lambda: new_wrapper(*inputs), min_band=min_band,
                                keep_samples=False)
        return {**result.as_dict(), "result": result.verdict, "summary": result.summary(), "n": plan.time_size}
