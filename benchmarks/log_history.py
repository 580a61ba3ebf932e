"""Warm `ptxdiff log KERNEL` over a long history, against a baseline measured in the same run.

A synthetic repository (git fast-import) of --commits commits over --files Python files: most
commits change a file without a kernel, every --every-th one changes the kernel (a constant, so
each is a new version). `ptxdiff log` runs cold (empty compile cache) and then warm --repeat
times; the baseline is `git log --name-only` over the same history (every commit's changed paths, as
log must). Prints seconds and the ratio warm / baseline; --ptxdiff compares another install
(e.g. the unmodified code) on the same repository. --repo PATH times a real repository instead
(a clone without a checkout: log reads commits; give --kernel).

    python benchmarks/log_history.py [--commits 700] [--files 300] [--every 70] [--repeat 3]
        [--ptxdiff /work/main/.venv/bin/ptxdiff] [--repo PATH --kernel NAME]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * {factor}, mask=mask)
'''


def synthetic(path: Path, commits: int, files: int, every: int) -> None:
    """A repository made in one fast-import stream: pkg/kernel.py and `files` plain modules."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    lines: list[bytes] = []

    def blob(text: str) -> None:
        data = text.encode()
        lines.extend([b"data %d" % len(data), data])

    for i in range(commits):
        message = f"commit {i}"
        lines += [b"commit refs/heads/main", b"committer a <a@b> %d +0000" % (1_794_000_000 + 60 * i)]
        blob(message)
        if i == 0:
            lines.append(b"M 100644 inline pkg/kernel.py")
            blob(KERNEL.format(factor="1.0"))
            for f in range(files):
                lines.append(b"M 100644 inline pkg/mod%d.py" % f)
                blob(f"def f{f}():\n    return {f}\n")
        elif i % every == 0:
            lines.append(b"M 100644 inline pkg/kernel.py")
            blob(KERNEL.format(factor=f"{i}.0"))
        else:
            f = i % files
            lines.append(b"M 100644 inline pkg/mod%d.py" % f)
            blob(f"def f{f}():\n    return {i}\n")
    stream = b"\n".join(lines) + b"\n"
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input=stream, check=True)
    subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=path, check=True)


class Failed(Exception):
    pass


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise Failed(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=700)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--every", type=int, default=70)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ptxdiff", action="append", help="a ptxdiff executable (repeatable; default: this checkout's)")
    ap.add_argument("--repo", type=Path, help="time a real repository (a clone of it) instead")
    ap.add_argument("--kernel", default="scale_kernel")
    args = ap.parse_args()
    tools = args.ptxdiff or [str(Path(sys.executable).parent / "ptxdiff")]
    with tempfile.TemporaryDirectory(prefix="ptxdiff-log-bench-") as tmp:
        repo = Path(tmp) / "repo"
        if args.repo:
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(args.repo), str(repo)], check=True)
        else:
            synthetic(repo, args.commits, args.files, args.every)
        count = subprocess.run(["git", "rev-list", "--count", "--first-parent", "HEAD"], cwd=repo,
                               capture_output=True, text=True, check=True).stdout.strip()
        env = dict(os.environ)
        baseline = min(timed(["git", "log", "--first-parent", "--name-only", "--no-renames", "--oneline"], repo, env)
                       for _ in range(args.repeat))
        print(f"{count} commits; baseline `git log --name-only`: {baseline:.2f} s")
        for tool in tools:
            env["PTXDIFF_CACHE_DIR"] = str(Path(tmp) / "cache")
            shutil.rmtree(env["PTXDIFF_CACHE_DIR"], ignore_errors=True)
            cmd = [tool, "log", args.kernel, "-q"]
            try:
                cold = timed(cmd, repo, env)
                warm = min(timed(cmd, repo, env) for _ in range(args.repeat))
            except Failed as e:
                print(f"{tool}: {e}")
                continue
            print(f"{tool}: cold {cold:.2f} s, warm {warm:.2f} s (best of {args.repeat}), "
                  f"warm / baseline {warm / baseline:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
