"""On a GPU machine: a real Liger-Kernel commit replayed from recorded launches, no kernel config.

You bring the two sides (none of Liger-Kernel's code is in this repository):
    git -C Liger-Kernel archive C^ src/liger_kernel -o base.tar
    git -C Liger-Kernel diff C^ C -- src/liger_kernel > change.patch
This makes a throwaway repository of `base.tar`, records what a small script of Liger's norm ops
launches (`ptxdiff record --device gpu`), commits the recording, applies `change.patch` as the
next commit and runs `ptxdiff diff A B --outputs --time` with no kernel config. It prints the
table, the JSON's outputs and timing per kernel and the recording's size per kernel.

    python benchmarks/gpu_replay_liger.py base.tar change.patch
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUN = '''
import sys
sys.path.insert(0, "src")
import torch
from liger_kernel.ops import layer_norm, fused_add_rms_norm, poly_norm, rms_norm

torch.manual_seed(0)
for rows, cols in ((4096, 4096), (2048, 8192)):
    x = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(cols, device="cuda", dtype=torch.bfloat16)
    layer_norm.layer_norm_forward(x, w, b, 1e-5)
    fused_add_rms_norm.fused_add_rms_norm_forward(x, r, w, 1e-6, 0.0, "llama")
    poly_norm.poly_norm_forward(x, torch.randn(3, device="cuda", dtype=torch.bfloat16), b[:1].clone(), 1e-6)
    rms_norm.rms_norm_forward(x, w, 1e-6, 0.0, "llama", None)
torch.cuda.synchronize()
'''


def sh(cmd: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        print(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}", flush=True)
        raise SystemExit(f"failed: {' '.join(cmd)} ({done.returncode})")
    return done


def main(argv: list[str]) -> int:
    base, patch = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-liger-"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               HOME=str(work.parent / (work.name + "-home")), GIT_CONFIG_NOSYSTEM="1",
               GIT_AUTHOR_NAME="p", GIT_AUTHOR_EMAIL="p@x", GIT_COMMITTER_NAME="p", GIT_COMMITTER_EMAIL="p@x")
    Path(env["HOME"]).mkdir(exist_ok=True)
    with tarfile.open(base) as tar:
        tar.extractall(work, filter="data")
    (work / "run_norms.py").write_text(RUN)
    git = ["git", "-c", "init.defaultBranch=main"]
    sh([*git, "init", "-q"], work, env)
    sh([*git, "add", "-A"], work, env)
    sh([*git, "commit", "-qm", "Liger-Kernel at C^ (src/liger_kernel)"], work, env)
    done = sh([sys.executable, "-m", "ptxdiff", "record", "--device", "gpu", "--", sys.executable, "run_norms.py"],
              work, env)
    print(done.stdout + done.stderr, flush=True)
    lines = (work / ".ptxdiff" / "launches.jsonl").read_text().splitlines()
    kernels = {json.loads(line).get("kernel") for line in lines if line.strip()}
    size = (work / ".ptxdiff" / "launches.jsonl").stat().st_size
    print(f"recording: {size} bytes, {len(lines)} lines, {len(kernels)} kernels "
          f"({size / max(len(kernels), 1):.0f} bytes per kernel)\n", flush=True)
    sh([*git, "add", "-A"], work, env)
    sh([*git, "commit", "-qm", "recorded launches"], work, env)
    old = sh(["git", "rev-parse", "HEAD"], work, env).stdout.strip()
    sh(["git", "apply", str(patch)], work, env)
    sh([*git, "commit", "-qam", "the real commit C"], work, env)
    new = sh(["git", "rev-parse", "HEAD"], work, env).stdout.strip()
    ptxdiff = [sys.executable, "-m", "ptxdiff"]
    print("$ ptxdiff diff A B --outputs --time --format json   (no kernel config)", flush=True)
    done = sh([*ptxdiff, "diff", old, new, "--outputs", "--time", "--format", "json"], work, env)
    print(done.stderr[-3000:], flush=True)
    report = json.loads(done.stdout)
    for row in report["kernels"]:
        out, timing = row.get("outputs") or {}, row.get("timing") or {}
        print(f"{row['kernel']} [{row['spec']}] {row['verdict']}: outputs {out.get('result')} "
              f"({out.get('via', '')} {out.get('reason', '') or ''}); time {timing.get('result')} "
              f"{timing.get('ratio', '')} {timing.get('reason', '') or ''}", flush=True)
        for t in timing.get("launches", []):
            print(f"    {t['launch']} x{t['count']}: {t['ratio']:.3f} [{t['ci_lo']:.3f}, {t['ci_hi']:.3f}] "
                  f"band ±{t['band'] * 100:.2f}% {t['result']} ({t['old_median_us']:.1f} -> {t['new_median_us']:.1f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
