"""On a GPU machine: `--outputs --time` with no kernel config, from recorded launches.

Builds a tmp repository of our own kernels, records what a small script launches
(`ptxdiff record -- python run.py`, on the GPU), commits the recording, changes three kernels and
runs `ptxdiff diff A B --outputs --time` with no wrapper config:
  reads_twice   new reads a second copy of x           expect: outputs-equal, timing slower
  rewrite       x * 2.0 -> x + x                       expect: outputs-equal, timing within-noise
  wrong         x * 2.0 -> x * 2.5                     expect: outputs-differ
then the same under `git diff` (PTXDIFF_TIME=1, driver installed). Prints the rows and a summary.

    python benchmarks/gpu_replay.py [--json FILE] [--git-diff-only]
Exit status: 0 when every expectation held, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KERNELS = '''\
import triton
import triton.language as tl


@triton.jit
def reads_twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    {twice}
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def rewrite_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {rewrite}, mask=m)


@triton.jit
def wrong_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, {wrong}, mask=m)
'''
OLD = {"twice": "y = x * 2.0", "rewrite": "x * 2.0", "wrong": "x * 2.0"}
# the second read is of the mirrored element: twice the bytes read from DRAM, the same values out
NEW = {"twice": "x2 = tl.load(x_ptr + (n - 1 - offs), mask=m)\n    y = x * 2.0 + x2 * 0.0",
       "rewrite": "x + x", "wrong": "x * 2.5"}

RUN = '''\
import torch
import triton
from ops.k import reads_twice_kernel, rewrite_kernel, wrong_kernel

for n, times in ((1 << 20, 3), (1 << 26, 1)):       # two sizes: two replayed launches each
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    for _ in range(times):
        for k in (reads_twice_kernel, rewrite_kernel, wrong_kernel):
            k[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
torch.cuda.synchronize()
'''

EXPECT = {"reads_twice_kernel": ("outputs-equal", "slower"), "rewrite_kernel": ("outputs-equal", "within-noise"),
          "wrong_kernel": ("outputs-differ", None)}


def sh(cmd: list[str], cwd: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if check and done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def build(work: Path, env: dict) -> tuple[str, str]:
    """The repository: kernels and run.py, recorded on the GPU, then the three changes."""
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    sh(["git", "init", "-q", "-b", "main"], work, env)
    (work / "ops").mkdir()
    (work / "ops" / "__init__.py").write_text("")
    (work / "ops" / "k.py").write_text(KERNELS.format(**OLD))
    (work / "run.py").write_text(RUN)
    sh([*git, "add", "-A"], work, env)
    sh([*git, "commit", "-qm", "kernels"], work, env)
    done = sh([sys.executable, "-m", "ptxdiff", "record", "--device", "gpu", "--", sys.executable, "run.py"], work, env)
    print(done.stdout + done.stderr, flush=True)
    size = (work / ".ptxdiff" / "launches.jsonl").stat().st_size
    print(f"recording: {size} bytes for 3 kernels ({size / 3:.0f} bytes per kernel)\n", flush=True)
    sh([*git, "add", "-A"], work, env)
    sh([*git, "commit", "-qm", "recorded launches"], work, env)
    old = sh(["git", "rev-parse", "HEAD"], work, env).stdout.strip()
    (work / "ops" / "k.py").write_text(KERNELS.format(**NEW))
    sh([*git, "commit", "-qam", "changes"], work, env)
    return old, sh(["git", "rev-parse", "HEAD"], work, env).stdout.strip()


def check(rows: list[dict]) -> list[str]:
    """One line per kernel: what was expected, what came, PASS or FAIL."""
    lines = []
    for name, (want_out, want_time) in EXPECT.items():
        row = next((r for r in rows if r["kernel"].endswith("::" + name)), None)
        if row is None:
            lines.append(f"FAIL {name}: no row")
            continue
        out = (row.get("outputs") or {}).get("result")
        timing = row.get("timing") or {}
        ok = out == want_out and (want_time is None or timing.get("result") == want_time)
        ratios = ", ".join(f"{t['launch']} x{t['count']}: {t['ratio']:.3f} [{t['ci_lo']:.3f}, {t['ci_hi']:.3f}] "
                           f"±{t['band'] * 100:.2f}% {t['result']} ({t['old_median_us']:.1f} -> "
                           f"{t['new_median_us']:.1f} us)" for t in timing.get("launches", []))
        lines.append(f"{'PASS' if ok else 'FAIL'} {name}: outputs {out} (want {want_out}), timing "
                     f"{timing.get('result')} (want {want_time or 'any'}); {ratios or timing.get('reason', '')}")
    return lines


def main(argv: list[str]) -> int:
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-replay-"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               HOME=str(work.parent / (work.name + "-home")), GIT_CONFIG_NOSYSTEM="1",
               PTXDIFF_CACHE_DIR=str(work.parent / (work.name + "-cache")))
    Path(env["HOME"]).mkdir(exist_ok=True)
    old, new = build(work, env)
    ptxdiff = [sys.executable, "-m", "ptxdiff"]
    print("$ ptxdiff diff A B --outputs --time --format json   (no kernel config: recorded launches replayed)",
          flush=True)
    if "--git-diff-only" in argv:
        report = {"kernels": []}
    else:
        done = sh([*ptxdiff, "diff", old, new, "--outputs", "--time", "--format", "json"], work, env)
        print(done.stderr, flush=True)
        report = json.loads(done.stdout)
    sh(["git", "checkout", "-q", "-f", old], work, env)
    (work / "ops" / "k.py").write_text(KERNELS.format(**NEW))
    sh([*ptxdiff, "install"], work, env)
    print("$ PTXDIFF_TIME=1 git diff   (ptxdiff lines; again while its background job runs)", flush=True)
    start, text = time.monotonic(), ""
    while time.monotonic() - start < 150:
        try:
            inline = subprocess.run(["git", "diff"], cwd=work, capture_output=True, text=True, timeout=60,
                                    env={**env, "PTXDIFF_FORCE": "1", "PTXDIFF_TIME": "1"})
        except subprocess.TimeoutExpired:
            print(f"  git diff did not return within 60 s ({time.monotonic() - start:.0f} s in)", flush=True)
            break
        text = inline.stdout + inline.stderr
        print(f"  git diff returned in the {time.monotonic() - start:.0f}th second", flush=True)
        if "git diff again" not in text:
            break
        time.sleep(5)
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.startswith("ptxdiff")), len(lines))
    shown = lines[first:]   # ptxdiff's block under the diff, wrapped lines included
    print("\n".join(shown), flush=True)
    for log in sorted(work.glob(".git/**/filler.log")):
        print(f"--- {log.relative_to(work)} (last lines)\n" + "\n".join(log.read_text().splitlines()[-15:]), flush=True)
    summary = check(report["kernels"]) if report["kernels"] else []
    timed = [name for name in EXPECT if any(line.endswith(f"::{name} time") or f"::{name} time " in line
                                            for line in shown)]
    summary.append(f"{'PASS' if len(timed) == len(EXPECT) else 'FAIL'} git diff with PTXDIFF_TIME=1: a time line "
                   f"for {len(timed)} of {len(EXPECT)} kernels ({', '.join(timed) or 'none'})")
    print("\nSUMMARY (no kernel config, recorded launches replayed on the GPU)")
    print("\n".join(summary))
    if "--json" in argv:
        Path(argv[argv.index("--json") + 1]).write_text(json.dumps({"summary": summary, "report": report}, indent=1))
    return 0 if all(line.startswith("PASS") for line in summary) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
