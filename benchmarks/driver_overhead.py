"""Costs of the git integration, each against a baseline measured in the same run.

1. Warm per-file cost of the diff driver: `git diff` through the installed driver (kernel lines
   forced on, and piped as a tool would) against `git diff --no-ext-diff` on the same change,
   per changed file with a kernel and per .py file without one. Targets: <= 50 ms and <= 10 ms.
   Best of --repeat runs.
2. The time budget: a cold `git diff` (empty cache, PTXDIFF_DRIVER_BUDGET=--budget) returns
   within budget + 1 s and says what is still compiling; once the background filler is done,
   the next `git diff` shows the kernel lines.
3. `git diff HEAD~8 HEAD~4` on a temporary clone of Liger-Kernel (--liger; never modified),
   driver installed, warm. Target: <= 1 s in all.
4. `ptxdiff log` over a history of >= 50 commits: compiles done against distinct versions of
   the kernel (must be equal: every version is compiled once, the cache serves the rest).
    python benchmarks/driver_overhead.py [--repeat 5] [--commits 60] [--budget 3] [--liger PATH]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxdiff.corpus.pairs import corpus_dir, load_pairs  # noqa: E402

PAIRS = ["gelu", "leaky_relu", "silu", "l2norm", "rmsnorm", "softmax", "relu6_clamp_bound", "elu_module_alpha"]


def git(repo: Path, *args: str, env: dict) -> str:
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def timed(cmd: list[str], cwd: Path, env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, out


def best_of(n: int, cmd: list[str], cwd: Path, env: dict) -> float:
    return min(timed(cmd, cwd, env)[0] for _ in range(n))


def install(repo: Path, env: dict) -> None:
    subprocess.run([sys.executable, "-m", "ptxdiff", "install"], cwd=repo, env=env, check=True, capture_output=True)


def wait_for_filler(repo: Path, env: dict) -> None:
    """Until the background filler has done every queued comparison (its lock; then the rest here)."""
    state = Path(git(repo, "rev-parse", "--absolute-git-dir", env=env).strip()) / "ptxdiff" / "driver"
    while True:
        subprocess.run([sys.executable, "-I", "-m", "ptxdiff", "driver-fill", str(state)], env=env, check=True,
                       capture_output=True)
        fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.close(fd)
        if not (state / "queue").exists() or not os.listdir(state / "queue"):
            return


def kernel_lines(text: str) -> int:
    return sum(ln.startswith("ptxdiff ") for ln in text.splitlines())


def corpus_repo(work: Path, env: dict) -> tuple[Path, list]:
    """8 corpus kernels and 8 plain .py files, each changed in the work tree."""
    repo = work / "driver"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", env=env)
    pairs = load_pairs(names=PAIRS)
    for p in pairs:
        (repo / f"{p.name}.py").write_text(p.source(corpus_dir(), "old"))
    for i in range(len(pairs)):  # ordinary Python files
        (repo / f"util{i}.py").write_text(f"def util{i}(x):\n    return x + {i}\n")
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "old", env=env)
    install(repo, env)
    for p in pairs:
        (repo / f"{p.name}.py").write_text(p.source(corpus_dir(), "new"))
    for i in range(len(pairs)):
        (repo / f"util{i}.py").write_text(f"def util{i}(x):\n    return x - {i}\n")
    return repo, pairs


def budget(repo: Path, env: dict, seconds: float, pairs: list) -> None:
    cold = {**env, "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": str(seconds)}
    elapsed, out = timed(["git", "diff"], repo, cold)
    notes = [ln for ln in out.splitlines() if ln.startswith("ptxdiff:")]
    print(f"budget: cold git diff with driver_budget {seconds:g} s returned in {elapsed:.2f} s "
          f"({'within' if elapsed <= seconds + 1 else 'NOT within'} budget + 1 s), {kernel_lines(out)} kernel lines, "
          f"note: {notes[0][:110] if notes else 'none'}")
    start = time.perf_counter()
    wait_for_filler(repo, env)
    elapsed, out = timed(["git", "diff"], repo, cold)
    print(f"budget: the background filler finished {time.perf_counter() - start:.1f} s later; the next git diff "
          f"took {elapsed:.2f} s and shows {kernel_lines(out)} kernel lines for {len(pairs)} changed kernel files")


def driver_cost(repo: Path, env: dict, repeat: int, pairs: list) -> None:
    forced = {**env, "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"}
    subprocess.run(["git", "diff"], cwd=repo, env=forced, check=True, capture_output=True)  # fill the caches
    print(f"diff driver, warm, {len(pairs)} changed files of each kind (best of {repeat}; target: kernel files "
          f"<= 50 ms, plain .py files <= 10 ms per file over git):")
    noop = repo.parent / "noop-driver"
    noop.write_text("#!/bin/sh\nexit 0\n")
    noop.chmod(0o755)
    for kind, spec in (("kernel files", [f"{p.name}.py" for p in pairs]), ("plain .py files", ["util*.py"])):
        plain = best_of(repeat, ["git", "diff", "--no-ext-diff", "--", *spec], repo, env)
        # what git itself spends to run any external driver (a shell script that does nothing)
        floor = best_of(repeat, ["git", "-c", f"diff.ptxdiff.command={noop}", "diff", "--", *spec], repo, env)
        print(f"  {kind:16} git diff --no-ext-diff {plain * 1000:6.1f} ms; a do-nothing driver costs git "
              f"{(floor - plain) / len(pairs) * 1000:4.1f} ms per file")
        for mode, e in (("kernel lines", forced), ("piped", env)):
            with_driver = best_of(repeat, ["git", "diff", "--", *spec], repo, e)
            print(f"  {kind:16} {mode:12} through ptxdiff {with_driver * 1000:6.1f} ms | ratio "
                  f"{with_driver / plain:5.1f}x | {(with_driver - plain) / len(pairs) * 1000:5.1f} ms per file")


def liger(source: Path, work: Path, env: dict, repeat: int) -> None:
    """A throwaway clone (sparse: the source lacks one LFS-like blob); the source is only read."""
    repo = work / "liger"
    git(work, "clone", "-q", "-n", str(source), str(repo), env=env)
    git(repo, "sparse-checkout", "set", "--no-cone", "/*", "!/test/resources/tiny_shakespeare_tokenized/", env=env)
    subprocess.run(["git", "checkout", "-q"], cwd=repo, env=env, capture_output=True)
    install(repo, env)
    files = git(repo, "diff", "--name-only", "HEAD~8", "HEAD~4", "--", "*.py", env=env).split()
    cmd = ["git", "diff", "HEAD~8", "HEAD~4"]
    forced = {**env, "PTXDIFF_FORCE": "1"}
    cold, _ = timed(cmd, repo, forced)
    wait_for_filler(repo, env)
    plain = best_of(repeat, [*cmd, "--no-ext-diff"], repo, env)
    warm = best_of(repeat, cmd, repo, forced)
    piped = best_of(repeat, cmd, repo, env)
    _, out = timed(cmd, repo, forced)
    print(f"Liger-Kernel git diff HEAD~8 HEAD~4 ({len(files)} .py files, {kernel_lines(out)} kernel lines): cold "
          f"{cold:.2f} s (budget 10 s) | warm {warm:.3f} s with kernel lines, {piped:.3f} s piped | "
          f"git --no-ext-diff {plain:.3f} s (target: warm <= 1 s)")


def log_compiles(work: Path, env: dict, n_commits: int) -> None:
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compare.history import history
    from ptxdiff.git.repo import Repo

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
    events = history(Repo(repo), engine, "leaky_relu_kernel").events
    elapsed = time.perf_counter() - start
    compiles = engine.measurer.compiles
    print(f"ptxdiff log over {n_commits} commits: {len(events)} versions listed, {versions} distinct versions "
          f"written, {compiles} compiles ({'equal' if compiles == versions == len(events) else 'NOT EQUAL'})"
          f", {elapsed:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--commits", type=int, default=60)
    ap.add_argument("--budget", type=float, default=3.0, help="driver_budget for the cold run (s)")
    ap.add_argument("--liger", type=Path, default=Path("/work/repos/Liger-Kernel"),
                    help="a Liger-Kernel clone to copy (skipped when missing)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-driver-bench-"))
    env = dict(os.environ, PTXDIFF_CACHE_DIR=str(work / "cache"), GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b",
               GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@b")
    for var in ("PTXDIFF_SKIP", "PTXDIFF_FORCE", "PTXDIFF_DRIVER_BUDGET", "GIT_PAGER_IN_USE"):
        env.pop(var, None)
    os.environ.update(PTXDIFF_CACHE_DIR=str(work / "cache"))
    repo, pairs = corpus_repo(work, env)
    budget(repo, env, args.budget, pairs)
    driver_cost(repo, env, args.repeat, pairs)
    if (args.liger / ".git").exists() or (args.liger / "HEAD").exists():
        liger(args.liger, work, env, args.repeat)
    else:
        print(f"Liger-Kernel: {args.liger} not found, skipped")
    log_compiles(work, env, args.commits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
