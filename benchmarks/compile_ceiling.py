"""How linearly can Triton compiles scale on this machine, with no ptxdiff at all? (issue 40)

ptxdiff's cold run is bound by its compiles; its speedup from 1 to N workers can be no better
than that of bare `triton.compile` calls spread over N processes on the same machine. This runs
the corpus's specs (those compile_overhead.py's baseline compiles, `--rounds` times over, each a
real compile: TRITON_ALWAYS_COMPILE, a triton cache of each process's own) in a pool of N fresh
processes that each import triton first, as ptxdiff's workers do, taking one spec at a time, for
each N of `--jobs`. Prints, per N: the wall time, the speedup over N=1, and the mean seconds of
one compile (its slowdown over N=1 is what the machine costs a compile when every core is busy:
shared caches, memory bandwidth, clocks).

    python benchmarks/compile_ceiling.py [--jobs 1,2,4,16] [--rounds 8]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bare_compile import compile_spec, load_kernel
from compile_overhead import corpus_jobs

_KERNELS: dict[tuple[str, str], object] = {}


def _start() -> None:
    """A worker: triton imported once, its cache its own, every compile a real one."""
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="ceiling-triton-")
    import triton  # noqa: F401


def _compile(job: dict) -> float:
    key = (job["file"], job["kernel"])
    if key not in _KERNELS:
        _KERNELS[key] = load_kernel(job["file"], job["kernel"], f"m{len(_KERNELS)}")
    start = time.perf_counter()
    compile_spec(_KERNELS[key], job["spec"])
    return time.perf_counter() - start


def run(jobs: list[dict], n: int) -> tuple[float, float]:
    """Wall seconds of the whole pool (its start and imports included), and the mean seconds of one compile."""
    start = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(n, initializer=_start) as pool:
        seconds = list(pool.imap_unordered(_compile, jobs, chunksize=1))
    return time.perf_counter() - start, sum(seconds) / len(seconds)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="1,2,4,16")
    ap.add_argument("--rounds", type=int, default=8)
    args = ap.parse_args()
    _, _, _, n_compiles = corpus_jobs(work := Path(tempfile.mkdtemp(prefix="ptxdiff-ceiling-")))
    specs = json.loads((work / "jobs.json").read_text())
    jobs = [*specs["old"], *specs["new"]] * args.rounds
    print(f"bare triton.compile, {len(jobs)} compiles ({n_compiles} corpus specs x {args.rounds}), "
          f"{os.cpu_count()} CPUs")
    print(f"{'processes':>9} {'wall s':>8} {'speedup':>8} {'s/compile':>10} {'slowdown':>9}")
    base: tuple[float, float] | None = None
    for n in (int(j) for j in args.jobs.split(",")):
        wall, each = run(jobs, n)
        base = base or (wall, each)
        print(f"{n:9d} {wall:8.2f} {base[0] / wall:7.2f}x {each:10.3f} {each / base[1]:8.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
