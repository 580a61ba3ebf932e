"""On a GPU machine: the whole dynamic path as a user meets it.

Builds a repo from corpus pairs (old commit, new commit), then runs
  ptxdiff diff A B --outputs --time              (table: static deltas, outputs, timing)
  PTXDIFF_TIME=1 git diff (installed driver)     (the same inline under git diff)
    python benchmarks/gpu_diff.py [pair ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxdiff.corpus.pairs import build_repo, corpus_dir, load_pairs  # noqa: E402

# one-dimensional kernels: make_inputs(n) is n elements, so time_size sets the work directly
DEFAULT = ["gelu", "leaky_relu", "silu", "elu_module_alpha", "perf_block_constexpr"]


def main(names: list[str]) -> int:
    pairs = load_pairs(names=names or DEFAULT)
    work = Path(tempfile.mkdtemp(prefix="ptxdiff-gpu-"))
    first, second = build_repo(pairs, work, [90], kernel_keys={"time_size": 1 << 24})
    env = dict(os.environ, PTXDIFF_PROGRESS="1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    ptxdiff = [sys.executable, "-m", "ptxdiff"]
    print("$ ptxdiff diff A B --outputs --time", flush=True)
    subprocess.run([*ptxdiff, "diff", first, second, "--outputs", "--time"], cwd=work, env=env)
    # the inline view: old side committed, new side in the work tree
    subprocess.run(["git", "checkout", "-q", "-f", first], cwd=work, env=env, check=True)
    for p in pairs:
        (work / "kernels" / f"{p.name}.py").write_text(p.source(corpus_dir(), "new"))
    subprocess.run([*ptxdiff, "install"], cwd=work, env=env, check=True, capture_output=True)
    print("\n$ PTXDIFF_TIME=1 git diff   (metrics block lines only)", flush=True)
    out = subprocess.run(["git", "diff"], cwd=work, env={**env, "PTXDIFF_FORCE": "1", "PTXDIFF_TIME": "1"},
                         capture_output=True, text=True)
    print("\n".join(line for line in out.stdout.splitlines() if line.startswith("ptxdiff")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
