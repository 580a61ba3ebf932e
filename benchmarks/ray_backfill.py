"""Backfilling notes for a real history: this machine's pool against Ray, same notes, Ray's cost.

    git clone -q /work/.mirror/linkedin+Liger-Kernel/repo /tmp/E-liger
    python benchmarks/ray_backfill.py /tmp/E-liger --last 7d54ff88 --commits 100 [--target sm_90]

(Up to Liger-Kernel's 7d54ff88, the range that holds the last 100 commits touching
src/liger_kernel/ops has 518 commits, 60 of which change a kernel and get a note.)

Takes the range that ends at --last and holds --commits first-parent commits touching a Python
file under --kernels (default src/liger_kernel/ops), then runs on it, as fresh processes, each
with an empty cache and no notes:
  local  `ptxdiff notes RANGE --target sm_90` (this machine's process pool, all its cores)
  ray    the same with `--executor ray` (a local Ray instance on the same cores)
and writes to --out: the range, commits looked at, notes written, compile jobs (the progress
lines: one per spec compiled) and (kernel, target) spec jobs (cache entries), the wall seconds of
each, the ratio ray/local (this machine is shared and noisy: read the ratio, not the seconds),
whether every commit's note is byte-identical, and seconds of one core per compile job. A run
that passes --cap seconds is stopped and said to be. --rounds alternates the order (local, ray;
then ray, local; ...) so load from others falls on both; the first local run is followed by a
warm one (its cache full) to tell the driver's own work from the compiles.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PTXDIFF = [sys.executable, "-m", "ptxdiff"]
PROGRESS = re.compile(r"^\[\d+/\d+\] ", re.M)


def git(repo: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True, check=check)


def pick_range(repo: str, last: str, commits: int, kernels: str) -> tuple[str, list[str]]:
    """A..B ending at `last` with `commits` first-parent commits that touch kernel files."""
    touched = git(repo, "log", "--first-parent", "--format=%H", last, "--", f"{kernels}/*.py",
                  f"{kernels}/**/*.py").stdout.split()[:commits]
    if len(touched) < commits:
        raise SystemExit(f"only {len(touched)} commits touch {kernels} up to {last}")
    oldest = touched[-1]
    return f"{oldest}^..{git(repo, 'rev-parse', last).stdout.strip()}", touched


def notes(repo: str) -> dict[str, str]:
    listed = git(repo, "notes", "--ref", "ptxdiff", "list", check=False).stdout.split()
    return {c: git(repo, "notes", "--ref", "ptxdiff", "show", c).stdout for c in listed[1::2]}


def run(repo: str, rev_range: str, target: str, executor: str, cap: float, cache: str) -> dict:
    """One backfill with the cache in `cache` and no notes to begin with."""
    git(repo, "update-ref", "-d", "refs/notes/ptxdiff", check=False)
    env = {**os.environ, "PTXDIFF_CACHE_DIR": cache, "PTXDIFF_PROGRESS": "1", "PYTHONPATH": str(ROOT)}
    args = [*PTXDIFF, "notes", rev_range, "-C", repo, "--target", target, "--executor", executor]
    start = time.monotonic()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=cap)
        code, err = proc.returncode, proc.stderr
    except subprocess.TimeoutExpired as e:
        code = None
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
    wall = time.monotonic() - start
    if code != 0:
        print(f"{executor}: exit {code}\n{err[-3000:]}", file=sys.stderr)
    return {"executor": executor, "code": code, "wall": wall, "jobs": len(PROGRESS.findall(err)),
            "entries": len(list(Path(cache).glob("??/*.json.gz"))), "notes": notes(repo)}


def cold(repo: str, rev_range: str, target: str, executor: str, cap: float, warm: bool) -> dict:
    """A backfill from an empty cache; with `warm`, then again from the cache it filled (what
    is left is the driver's own work: walking, discovery, planning, cache reads)."""
    cache = tempfile.mkdtemp(prefix="ptxdiff-bench-cache-")
    try:
        r = run(repo, rev_range, target, executor, cap, cache)
        if warm:
            again = run(repo, rev_range, target, executor, cap, cache)
            r["warm"], r["warm_jobs"] = again["wall"], again["jobs"]
        return r
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--last", default="HEAD", help="the newest commit of the range")
    ap.add_argument("--commits", type=int, default=50, help="kernel-touching commits in the range")
    ap.add_argument("--kernels", default="src/liger_kernel/ops", help="the folder whose Python files hold kernels")
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of (local, ray), the order alternating")
    ap.add_argument("--cap", type=float, default=2700.0, help="seconds a run may take before it is stopped")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "ray_backfill.txt"))
    args = ap.parse_args()

    rev_range, touched = pick_range(args.repo, args.last, args.commits, args.kernels)
    looked = len(git(args.repo, "rev-list", rev_range).stdout.split())
    cores = len(os.sched_getaffinity(0))
    runs: list[dict] = []
    for i in range(args.rounds):
        for executor in (("local", "ray") if i % 2 == 0 else ("ray", "local")):
            r = cold(args.repo, rev_range, args.target, executor, args.cap, warm=executor == "local" and i == 0)
            r["round"] = i + 1
            runs.append(r)
            print(f"round {i + 1} {executor}: {r['wall']:.1f} s, {r['jobs']} compile jobs, {len(r['notes'])} notes",
                  file=sys.stderr)
    git(args.repo, "update-ref", "-d", "refs/notes/ptxdiff", check=False)
    first = runs[0]
    differ = sorted({c[:10] for r in runs[1:] for c in set(first["notes"]) | set(r["notes"])
                     if first["notes"].get(c) != r["notes"].get(c)})
    lines = [
        f"ptxdiff notes {rev_range} --target {args.target}  ({args.repo}, python {sys.version.split()[0]}, "
        f"{cores} cores, shared with other work: read the ratios, not the seconds)",
        f"range: {looked} commits looked at, {len(touched)} of them touch {args.kernels} "
        f"({touched[-1][:10]}..{touched[0][:10]}); {len(first['notes'])} change kernels (get a note)",
        "round  run    exit  wall s  compile jobs  spec jobs  notes",
    ]
    for r in runs:
        exit_ = "cap" if r["code"] is None else str(r["code"])
        lines.append(f"{r['round']:5d}  {r['executor']:<5}  {exit_:>4}  {r['wall']:6.1f}  {r['jobs']:12d}  "
                     f"{r['entries']:9d}  {len(r['notes']):5d}")
    ratios = []
    for i in range(1, args.rounds + 1):
        wall = {r["executor"]: r["wall"] for r in runs if r["round"] == i}
        ratios.append(wall["ray"] / wall["local"])
    lines.append("ratio ray/local (wall, same round): " + ", ".join(f"{x:.2f}x" for x in ratios)
                 + f"; mean {sum(ratios) / len(ratios):.2f}x")
    lines.append("notes byte-identical for every commit, every run: " + (
        "yes" if not differ and first["notes"] and all(r["code"] == 0 for r in runs) else f"NO ({', '.join(differ[:10])})"))
    warm, jobs, written = first.get("warm", float("nan")), first["jobs"] or 1, len(first["notes"]) or 1
    compile_s = (first["wall"] - warm) * cores / jobs
    lines += [
        f"driver's own work (a warm run: walk, discovery, planning, cache reads): {warm:.1f} s, "
        f"{warm / looked:.3f} s per commit looked at ({first.get('warm_jobs', 0)} jobs ran again: results "
        "that are never cached, as a crash)",
        f"a compile job: {compile_s:.2f} s of one core here ((cold - warm) x {cores} cores / {first['jobs']} jobs, round 1)",
        f"per noted commit: {first['jobs'] / written:.1f} compile jobs, {first['entries'] / written:.1f} spec jobs",
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text, end="")
    return 0 if not differ and all(r["code"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
