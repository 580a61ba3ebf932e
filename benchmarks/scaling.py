"""The same answer at any scale, and warm means instant (issue 40).

For each --jobs value, `ptxdiff show REV --format json` of one repository, cold (a fresh cache of
its own) and then warm (that cache again), each a fresh process: wall seconds, the speedup of
each cold run against --jobs 1 (or the smallest value given), how many specs each compiled, and
whether the rows' JSON is byte-identical across every run (cold and warm, every --jobs), with
where the results came from (`cache`) and the timing fields aside. The machine is named in the
output (CPU count, model, load before and after), which goes to stdout and to --out.

    python benchmarks/scaling.py REPO [--rev HEAD] [--jobs 1 2 4 16] [--path PATH...] [--out FILE]
                                 [--rows-out FILE] [--rows-like FILE]
    python benchmarks/scaling.py --corpus [--jobs 1 2]    # the embedded corpus as the repository

Needs nothing but ptxdiff's virtual environment (python, pygit2, triton); no GPU.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ASIDE = ("cache", "timing")   # per row: where its results came from, GPU timing (a clock's)


def machine() -> str:
    """CPU count (and how many this process may use), model, load: the line naming the machine."""
    model = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        model = platform.processor() or model
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{os.cpu_count()} CPUs ({usable} usable), {model}, {platform.system()} {platform.release()}"


def load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def rows_of(text: str) -> str:
    """The rows' JSON as one canonical text, with what may differ between cold and warm aside."""
    report = json.loads(text[text.index("{"):])
    rows = [{k: v for k, v in row.items() if k not in ASIDE} for row in report["kernels"]]
    return json.dumps({"head": report["head"], "toolchain": report["toolchain"], "kernels": rows,
                       "messages": report.get("messages")}, sort_keys=True)


def show(repo: str, rev: str, jobs: int, cache: str, paths: list[str]) -> tuple[float, str, int]:
    """One `ptxdiff show`: (wall seconds, canonical rows, specs compiled)."""
    env = dict(os.environ, PTXDIFF_CACHE_DIR=cache, PTXDIFF_PROGRESS="0")
    cmd = [sys.executable, "-m", "ptxdiff", "show", rev, "--format", "json", "--jobs", str(jobs), "-q",
           *(["--", *paths] if paths else [])]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    report = json.loads(proc.stdout[proc.stdout.index("{"):])
    compiled = sum(1 for r in report["kernels"] if r.get("cache") == "compiled")
    return elapsed, rows_of(proc.stdout), compiled


def corpus_repo(work: Path) -> str:
    from ptxdiff.corpus.pairs import build_repo, load_pairs

    repo = work / "corpus"
    build_repo(load_pairs(), repo, [90])
    return str(repo)


def first_difference(a: str, b: str) -> str:
    rows_a, rows_b = json.loads(a)["kernels"], json.loads(b)["kernels"]
    if len(rows_a) != len(rows_b):
        return f"{len(rows_a)} rows against {len(rows_b)}"
    differing = [(x, y) for x, y in zip(rows_a, rows_b) if x != y]
    if not differing:
        return "the messages differ"
    out = [f"{len(differing)} rows differ"]
    for x, y in differing[:3]:   # each with the values that differ, so the cause can be read
        keys = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        out.append(f"{x.get('kernel')} [{x.get('spec')}]: {', '.join(keys)} differ")
        out += [f"    {k}: {str(x.get(k))[:400]!r}\n    {' ' * len(k)}  {str(y.get(k))[:400]!r}" for k in keys]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", nargs="?", help="a repository's work tree (a clone)")
    ap.add_argument("--corpus", action="store_true", help="the embedded corpus as the repository")
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--path", nargs="+", default=[], help="only the kernels under these paths (`show -- PATH...`)")
    ap.add_argument("--out", help="also write the result here (default: benchmarks/results/scaling_<repo>_<N>cpu.txt)")
    ap.add_argument("--rows-out", help="write the rows' canonical JSON here (for --rows-like of another run)")
    ap.add_argument("--rows-like", help="say whether the rows are byte-identical to this --rows-out file's "
                                        "(another build of ptxdiff, another machine)")
    args = ap.parse_args()
    if bool(args.repo) == args.corpus:
        ap.error("name a repository or --corpus")
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-scaling-"))
    try:
        repo = corpus_repo(work) if args.corpus else os.path.abspath(args.repo)
        name = "corpus" if args.corpus else Path(repo).name
        head = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=repo, capture_output=True,
                              text=True).stdout.strip()
        lines = [f"ptxdiff show {args.rev} --format json{' -- ' + ' '.join(args.path) if args.path else ''} of {name} "
                 f"at {head}, "
                 f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC",
                 f"machine: {machine()}", f"load average before: {load()}"]
        print("\n".join(lines), flush=True)
        runs: list[tuple[int, float, int, float, int]] = []
        texts: list[str] = []
        for jobs in sorted(set(args.jobs)):
            cache = str(work / f"cache-j{jobs}")
            cold, cold_rows, cold_compiled = show(repo, args.rev, jobs, cache, args.path)
            warm, warm_rows, warm_compiled = show(repo, args.rev, jobs, cache, args.path)
            runs.append((jobs, cold, cold_compiled, warm, warm_compiled))
            texts += [cold_rows, warm_rows]
            print(f"  --jobs {jobs}: cold {cold:.1f} s ({cold_compiled} rows compiled), warm {warm:.2f} s "
                  f"({warm_compiled} rows compiled)", flush=True)
        base = runs[0][1]
        kernels = json.loads(texts[0])["kernels"]
        rows, failed = len(kernels), sum(r["verdict"] == "failed" for r in kernels)
        shrunk = sum(any("guessed sizes divided by" in n for n in (r.get("spec_detail") or {}).get("notes") or ())
                     for r in kernels)
        lines += [f"load average after: {load()}",
                  f"{rows} rows, {failed} failed, {shrunk} with guessed sizes shrunk by the cost rule",
                  f"{'jobs':>5} {'cold s':>8} {'speedup':>8} {'compiled':>9} {'warm s':>8} {'warm compiled':>14}"]
        for jobs, cold, compiled, warm, warm_compiled in runs:
            lines.append(f"{jobs:>5} {cold:>8.1f} {base / cold:>7.2f}x {compiled:>9} {warm:>8.2f} {warm_compiled:>14}")
        same = all(t == texts[0] for t in texts)
        lines.append("rows' JSON (where results came from and timing aside) byte-identical across all "
                     f"{len(texts)} runs: {'yes' if same else 'NO'}")
        if not same:
            other = next(t for t in texts if t != texts[0])
            lines.append(f"first difference: {first_difference(texts[0], other)}")
        if args.rows_out:
            Path(args.rows_out).write_text(texts[0], encoding="utf-8")
        if args.rows_like:
            like = Path(args.rows_like).read_text(encoding="utf-8")
            lines.append(f"rows byte-identical to {args.rows_like}'s: {'yes' if like == texts[0] else 'NO'}")
            if like != texts[0]:
                lines.append(f"first difference: {first_difference(like, texts[0])}")
        print("\n".join(lines[3:]))
        out = Path(args.out) if args.out else ROOT / "benchmarks" / "results" / f"scaling_{name}_{os.cpu_count()}cpu.txt"
        out.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"written to {out}")
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
