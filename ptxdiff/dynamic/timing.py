"""GPU timing of old vs new with a measured noise band (``ptxdiff diff --time``).

Protocol (``measure``):

1. Warm-up: each callable runs a few times on a side stream (this is where Triton compiles).
2. CUDA graphs: each callable is captured into its own ``torch.cuda.CUDAGraph`` holding ``launches``
   back-to-back calls, so one replay amortises the CPU launch cost over many kernel runs. Three
   graphs are captured: ``old``, ``new`` and ``old2`` -- a second, independent capture of
   ``old_fn`` that is the A/A control. ``launches`` and ``reps`` are chosen from a quick estimate of
   one call's time unless given: a graph lasts about ``target_graph_us`` and a timed batch
   (``reps`` replays) about ``target_batch_us``.
   Two choices here were forced by measurements on an H200 (benchmarks/results/, *_run.md):
   - **One shared graph memory pool** (``shared_pool=True``): memory a callable allocates and frees
     inside the graph (typically the wrapper's output tensor) gets the same addresses in old, new
     and old2. With a private pool per graph, two captures of the *same* callable differed by up to
     +-3% at 2 us and up to 1% at 30-90 us for as long as they lived (8 of 24 A/A comparisons were
     confidently called faster/slower).
   - **Re-captured every round** (``recapture=True``), in a seeded random order, without emptying
     the allocator cache. Even in a shared pool, a graph instance keeps a fixed offset of up to
     +-0.7% (kernels under ~30 us) for its lifetime; captured once per measurement, a bootstrap over
     rounds cannot see it and 15 of 72 A/A comparisons were false calls. Re-capturing makes the
     instance a per-round random effect that the CI and the A/A band both include. The pool is kept
     alive across re-captures (one graph at a time is replaced) and ``torch.cuda.graph`` is not used
     for them, because it empties the allocator cache: the resulting cudaFree/cudaMalloc churn put
     100 MB+ buffers on a placement ~11% slower in about half the rounds (821 vs 913 us).
3. Rounds (default 30): in each round the three graphs are timed in an order shuffled by a seeded
   RNG. Timing one graph = one untimed warm-up replay, then a CUDA event, ``reps`` replays, a CUDA
   event; all three are queued without host synchronisation so the GPU never idles inside a timed
   batch; the host synchronises once per round. One sample = elapsed / (reps * launches), in us
   per call.
4. L2 is **warm**, deliberately: the same prepared inputs are used by every replay and the untimed
   replay right before each timed batch puts them (as far as they fit, 50 MB on H100/H200) in L2.
   No flush between rounds. This measures steady-state back-to-back throughput of the callable,
   not a cold first call; the result says so (``TimingResult.l2 == "warm"``).
5. Statistics (ptxdiff.dynamic.stats): per-round ratios new/old, median, 95% percentile-bootstrap CI over
   rounds (paired); the same for old2/old gives the A/A band; the verdict is ``faster``/``slower``
   only when the whole CI lies outside 1 +- band.

The callables must be graph-capturable: launch work on the current stream, no host sync, no
``.item()``/``.cpu()``. Allocations inside them (e.g. ``torch.zeros_like`` for the output) are
captured too and are part of what is timed. GPU clocks are not locked; interleaving and the
paired statistic are what protect against clock drift.

torch is imported inside functions only, so importing this module is cheap and works without it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

from ptxdiff.dynamic import stats
from ptxdiff.errors import PtxdiffError

L2_STATE = "warm"
METHOD = ("CUDA graphs ({launches} launches/graph, {reps} replays/sample, {capture}), old/new/old2 interleaved "
          "in seeded random order, {rounds} rounds, L2 warm (untimed replay before each timed batch)")


class NoGpuError(PtxdiffError):
    """GPU timing was asked for on a machine without a usable CUDA GPU (or without torch)."""


def require_gpu() -> ModuleType:
    """Return the torch module, or raise NoGpuError with one line saying why."""
    try:
        import torch
    except Exception as e:
        raise NoGpuError(f"GPU timing needs torch with CUDA; torch is not importable ({e.__class__.__name__})") from e
    if not torch.cuda.is_available():
        raise NoGpuError("GPU timing needs a CUDA GPU; torch.cuda.is_available() is false on this machine")
    return torch


def _warm(torch: ModuleType, fns: list[Callable[[], object]], times: int) -> None:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(times):
            for fn in fns:
                fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()


def _capture(torch: ModuleType, fn: Callable[[], object], launches: int, pool: Any = None, stream: Any = None) -> Any:
    """Capture ``launches`` calls of fn into a new graph (in ``pool`` if given) on a side stream.

    Unlike ``torch.cuda.graph`` this does not empty the allocator cache first (see the module
    docstring: cache churn moves large buffers between fast and slow placements)."""
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    side = stream or torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        if pool is None:
            g.capture_begin()
        else:
            g.capture_begin(pool=pool)
        try:
            for _ in range(launches):
                fn()
        finally:
            g.capture_end()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    return g


def _time_replays(torch: ModuleType, g: Any, reps: int) -> float:
    """Milliseconds for ``reps`` replays, preceded by one untimed replay (host-synchronised)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    g.replay()
    start.record()
    for _ in range(reps):
        g.replay()
    end.record()
    end.synchronize()
    ms: float = start.elapsed_time(end)
    return ms


def measure(old_fn: Callable[[], object], new_fn: Callable[[], object], rounds: int = 30, reps: int | None = None, *,
            launches: int | None = None, seed: int = 0, n_boot: int = 2000, level: float = 0.95,
            warmup: int = 3, target_graph_us: float = 200.0, target_batch_us: float = 2000.0,
            max_launches: int = 200, min_band: float = 0.0, shared_pool: bool = True, recapture: bool = True,
            keep_samples: bool = True,
            progress: Callable[[str], None] | None = None) -> stats.TimingResult:
    """Time ``new_fn`` against ``old_fn`` (zero-argument callables that launch on prepared GPU
    inputs) with the protocol in the module docstring; return the new/old TimingResult, whose
    band comes from the A/A copy (old2 vs old). Raises NoGpuError without a GPU."""
    torch = require_gpu()
    if rounds < 3:
        raise ValueError("rounds must be >= 3")
    say = progress or (lambda _msg: None)

    say("warming up (compiling) old and new")
    _warm(torch, [old_fn, new_fn], warmup)

    pool = torch.cuda.graph_pool_handle() if shared_pool else None
    side = torch.cuda.Stream()
    g1 = None  # kept alive until the main graphs exist, so the shared pool never drops to zero users
    if launches is None or reps is None:
        g1 = _capture(torch, old_fn, 1, pool, side)
        _time_replays(torch, g1, 3)
        est_us = max(_time_replays(torch, g1, 10) * 1000.0 / 10, 0.5)
        if launches is None:
            launches = max(1, min(max_launches, math.ceil(target_graph_us / est_us)))
        if reps is None:
            reps = max(1, min(1000, math.ceil(target_batch_us / (launches * est_us))))
    else:
        est_us = float("nan")
    if launches < 1 or reps < 1:
        raise ValueError("launches and reps must be >= 1")

    fns = {"old": old_fn, "new": new_fn, "old2": old_fn}
    rng = random.Random(seed)
    names = list(fns)
    order = list(fns)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    per_call = 1000.0 / (reps * launches)  # ms per batch -> us per call
    ev = {k: (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for k in fns}
    say(f"timing: {rounds} rounds of old/new/old2 (A/A), CUDA graphs of {launches} launches, {reps} replays each")
    graphs: dict[str, Any] = {}
    for r in range(rounds):
        if recapture or not graphs:
            rng.shuffle(names)
            for k in names:  # replace one graph at a time: the pool keeps >= 1 user throughout
                if graphs.pop(k, None) is not None and pool is None:
                    torch.cuda.empty_cache()  # private pools: free the replaced graph's memory
                graphs[k] = _capture(torch, fns[k], launches, pool, side)
            g1 = None
        rng.shuffle(order)
        for k in order:
            g = graphs[k]
            g.replay()                   # untimed: graph upload, L2 warm, GPU busy before the start event
            ev[k][0].record()
            for _ in range(reps):
                g.replay()
            ev[k][1].record()
        torch.cuda.synchronize()
        for k in fns:
            samples[k].append(ev[k][0].elapsed_time(ev[k][1]) * per_call)
        if (r + 1) % 10 == 0 or r + 1 == rounds:
            say(f"round {r + 1}/{rounds}")
    graphs.clear()
    torch.cuda.synchronize()

    extra: dict[str, object] = {
        "launches_per_graph": launches, "reps": reps, "seed": seed, "est_call_us": est_us,
        "recapture": recapture, "shared_pool": shared_pool, "old2_median_us": stats.median(samples["old2"])}
    if keep_samples:
        extra["samples_us"] = samples
    return stats.compare(samples["old"], samples["new"], samples["old2"], n_boot=n_boot, seed=seed, level=level,
                         min_band=min_band, l2=L2_STATE,
                         method=METHOD.format(launches=launches, reps=reps, rounds=rounds,
                                              capture=("re-captured every round" if recapture else "captured once")
                                              + (", one shared memory pool" if shared_pool else ", a pool each")),
                         extra=extra)
