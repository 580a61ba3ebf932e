"""What does the HTML report's SASS cost, and who pays it?

Builds a throwaway repo of the embedded corpus (every pair: old sides, then new sides), fills the
compile cache with one `ptxdiff diff A B`, then measures, as wall time of fresh processes (the
best of --repeat runs; these machines are noisy):
  text        `ptxdiff diff A B` (warm): what a run without a page costs;
  html cold   `ptxdiff diff A B --format html -o F` with no SASS listing stored: every cubin
              of the page disassembled (nvdisasm -c, in one sandboxed worker, --jobs at a time);
  html warm   the same again: every listing read from `<cache>/sass/`.
Prints the cubins a page needs, the seconds and the CPU seconds of ptxdiff and every process it
started (the sandboxed nvdisasm worker and its nvdisasm too), and
what the kept cubins add to the compile cache.
    python benchmarks/html_sass.py [--repeat 3] [--jobs 2]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxdiff.corpus.pairs import build_repo, load_pairs  # noqa: E402


def _subreaper() -> None:
    """Orphans of the commands (the compile workers' forkserver outlives ptxdiff by a moment)
    become this process's children, so their CPU is counted when they are reaped."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER (Linux)


def _reap() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed(cmd: list[str], cwd: str, env: dict) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and everything it started)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    _reap()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    if "lacks some SASS" in proc.stderr:
        raise SystemExit(f"the page lacks SASS: {proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def _without_cubins(path: Path) -> bytes:
    """A cache entry as it would be stored without its packed cubins."""
    entry = json.loads(gzip.decompress(path.read_bytes()))
    entry["value"] = [{k: v for k, v in r.items() if k != "cubin"} for r in entry["value"]]
    return gzip.compress(json.dumps(entry).encode(), mtime=0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    _subreaper()
    pairs = load_pairs()
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-bench-html-"))
    repo = work / "repo"
    first, second = build_repo(pairs, repo, [90])
    cache = work / "cache"
    env = dict(os.environ, PTXDIFF_CACHE_DIR=str(cache))
    diff = [sys.executable, "-m", "ptxdiff", "diff", first, second, "--quiet", "--jobs", str(args.jobs)]
    page = work / "report.html"
    html = [*diff, "--format", "html", "-o", str(page)]
    timed(diff, str(repo), env)   # fill the compile cache
    results: dict[str, list[tuple[float, float]]] = {"text": [], "html cold": [], "html warm": []}
    for _ in range(args.repeat):
        results["text"].append(timed(diff, str(repo), env))
        shutil.rmtree(cache / "sass", ignore_errors=True)
        results["html cold"].append(timed(html, str(repo), env))
        results["html warm"].append(timed(html, str(repo), env))
    text = page.read_text()
    views = len(re.findall(r'id="sass-\d+"', text))
    listings = len(list((cache / "sass").glob("*/*.sass.gz")))
    rows = text.count('<details class="row"')
    print(f"{len(pairs)} corpus pairs, {rows} rows, {views} with a SASS view, "
          f"{listings} distinct cubins disassembled; --jobs {args.jobs}, best of {args.repeat} runs")
    print(f"{'run':10} {'seconds':>8} {'cpu s':>8}")
    for k, v in results.items():
        wall = min(w for w, _ in v)
        cpu = min(c for _, c in v)
        print(f"{k:10} {wall:8.2f} {cpu:8.2f}")
    sizes = [(p.stat().st_size, len(_without_cubins(p))) for p in cache.glob("*/*.json.gz")]
    total, bare = sum(a for a, _ in sizes), sum(b for _, b in sizes)
    print(f"compile cache: {len(sizes)} entries, {total / 1024:.0f} KB; without the cubins {bare / 1024:.0f} KB")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
