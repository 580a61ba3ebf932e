"""Two costs of the git integration, measured in one run against baselines of the same run.

1. Warm per-file cost of the diff driver: `git diff` through the installed driver (metrics block
   forced on, cache filled) against `git diff --no-ext-diff` on the same change, as a ratio and
   as seconds per changed file. Best of --repeat runs.
2. `ptxdiff log` over a history of >= 50 commits: compiles done against distinct versions of the
   kernel (must be equal: every version is compiled once, the cache serves the rest).
    python benchmarks/driver_overhead.py [--repeat 5] [--commits 60]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxdiff.corpus import corpus_dir, load_pairs  # noqa: E402

PAIRS = ["gelu", "leaky_relu", "silu", "l2norm", "rmsnorm", "softmax", "relu6_clamp_bound", "elu_module_alpha"]


def git(repo: Path, *args: str, env: dict) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def best_of(n: int, cmd: list[str], cwd: Path, env: dict) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def driver_cost(work: Path, env: dict, repeat: int) -> None:
    repo = work / "driver"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", env=env)
    pairs = load_pairs(names=PAIRS)
    for p in pairs:
        (repo / f"{p.name}.py").write_text(p.source(corpus_dir(), "old"))
    for i in range(len(pairs)):  # ordinary Python files: the driver's fast path
        (repo / f"util{i}.py").write_text(f"def util{i}(x):\n    return x + {i}\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "old", env=env)
    subprocess.run([sys.executable, "-m", "ptxdiff", "install"], cwd=repo, env=env, check=True, capture_output=True)
    for p in pairs:
        (repo / f"{p.name}.py").write_text(p.source(corpus_dir(), "new"))
    for i in range(len(pairs)):
        (repo / f"util{i}.py").write_text(f"def util{i}(x):\n    return x - {i}\n")
    forced = {**env, "PTXDIFF_FORCE": "1"}
    subprocess.run(["git", "diff"], cwd=repo, env=forced, check=True, capture_output=True)  # fill the cache
    print(f"diff driver, warm, {len(pairs)} changed files of each kind (best of {repeat}):")
    for kind, spec in (("kernel files", [f"{p.name}.py" for p in pairs]), ("plain .py files", ["util*.py"])):
        with_driver = best_of(repeat, ["git", "diff", "--", *spec], repo, forced)
        plain = best_of(repeat, ["git", "diff", "--no-ext-diff", "--", *spec], repo, env)
        print(f"  {kind:16} git diff --no-ext-diff {plain:6.3f} s | through ptxdiff {with_driver:6.3f} s | "
              f"ratio {with_driver / plain:5.0f}x | {(with_driver - plain) / len(pairs) * 1000:4.0f} ms per file")


def log_compiles(work: Path, env: dict, n_commits: int) -> None:
    from ptxdiff.engine import Engine
    from ptxdiff.git import Repo
    from ptxdiff.history import history

    repo = work / "history"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", env=env)
    source = load_pairs(names=["leaky_relu"])[0].source(corpus_dir(), "old")
    versions = 0
    for i in range(n_commits):
        if i % 6 == 0:  # a real change: a new slope, so a new effective source
            versions += 1
            text = source.replace("SLOPE: tl.constexpr = 0.01", f"SLOPE: tl.constexpr = {0.01 + versions / 1000:.3f}")
            (repo / "leaky.py").write_text(text)
        elif i % 6 == 3:  # a comment: not a change
            (repo / "leaky.py").write_text((repo / "leaky.py").read_text() + f"# note {i}\n")
        else:
            (repo / "README").write_text(f"commit {i}\n")
        git(repo, "add", "-A", env=env)
        git(repo, "commit", "-qm", f"commit {i}", env=env)
    engine = Engine(Repo(repo), jobs=2)
    start = time.perf_counter()
    events = history(Repo(repo), engine, "leaky_relu_kernel")
    elapsed = time.perf_counter() - start
    print(f"ptxdiff log over {n_commits} commits: {len(events)} versions listed, {versions} distinct versions "
          f"written, {engine.compiles} compiles ({'equal' if engine.compiles == versions == len(events) else 'NOT EQUAL'})"
          f", {elapsed:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--commits", type=int, default=60)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-driver-bench-"))
    env = dict(os.environ, PTXDIFF_CACHE_DIR=str(work / "cache"), GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    env.pop("PTXDIFF_SKIP", None)
    os.environ.update(PTXDIFF_CACHE_DIR=str(work / "cache"))
    driver_cost(work, env, args.repeat)
    log_compiles(work, env, args.commits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
