"""On a GPU machine: with recorded specs, do ptxdiff's offline registers equal what the CUDA
driver reports for the wrapper's own launch?

Builds a throwaway git repository with corpus kernels (and, with `--liger SRC`, a copy of
Liger-Kernel's `src/liger_kernel`, which you fetch yourself), runs their host wrappers under
`ptxdiff record --device gpu` (real launches: the recorded specs carry triton's own
specialisation, divisibility by 16 and ints equal to 1 included), commits the recording, then
asks `ptxdiff show` (the ordinary hermetic path: kernels built from source, specs from the
recording) for every kernel's `regs`/spills, and compares them with `n_regs`/`n_spills` of the
kernels the launches compiled (matched by num_warps, num_stages and constexpr values).

    python benchmarks/gpu_record_check.py [--liger ~/src/Liger-Kernel/src/liger_kernel] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRS = ["matmul", "softmax", "layernorm_eps", "gelu", "rmsnorm", "flash_attention", "l2norm"]

DRIVER_VARIANTS = '''
def driver_variants(jit, kid):
    """Every variant the launches compiled, with the driver's own numbers."""
    while not hasattr(jit, "device_caches") and hasattr(jit, "fn"):
        jit = jit.fn
    out = []
    for cache in getattr(jit, "device_caches", {}).values():  # none under the CPU interpreter
        for kernel in cache[0].values():
            kernel = kernel.result() if hasattr(kernel, "result") else kernel
            src = getattr(kernel, "src", None)
            consts = {}
            for key, value in (getattr(src, "constexprs", None) or {}).items():
                index = key[0] if isinstance(key, tuple) else key
                name = jit.arg_names[index] if isinstance(index, int) else str(index)
                consts[name] = value if isinstance(value, (int, float, bool, str, type(None))) else repr(value)
            out.append({"kernel": kid, "n_regs": kernel.n_regs, "n_spills": kernel.n_spills,
                        "num_warps": kernel.metadata.num_warps, "num_stages": kernel.metadata.num_stages,
                        "constexprs": consts})
    return out
'''

RUN_CORPUS = DRIVER_VARIANTS + '''
import importlib, json, sys
import torch
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"

out = []
for pair, name in [PAIRS]:
    mod = importlib.import_module(f"kernels.{pair}")
    for n in (1000, 4096):
        inputs = [t.to(DEVICE) if torch.is_tensor(t) else t for t in
                  mod.make_inputs(n, torch.float32, torch.Generator().manual_seed(0))]
        mod.launch(*inputs)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    out += driver_variants(getattr(mod, name), f"kernels/{pair}.py::{name}")
json.dump(out, open(sys.argv[1], "w"), indent=1)
'''

RUN_LIGER = DRIVER_VARIANTS + '''
import json, sys
sys.path.insert(0, "src")
import torch
from liger_kernel.ops import rms_norm, layer_norm, swiglu, geglu

torch.manual_seed(0)
x = torch.randn(8, 512, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
b = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
rms_norm.rms_norm_forward(x, w, 1e-6, 0.0, "llama", None)
rms_norm.rms_norm_forward(x, w, 1e-6, 1.0, "gemma", None)
layer_norm.layer_norm_forward(x, w, b, 1e-5)
g = torch.randn(8, 512, 11008, device="cuda", dtype=torch.bfloat16)
swiglu.swiglu_forward(g, g.clone())
geglu.geglu_forward(g, g.clone())
torch.cuda.synchronize()
out = []
for mod in (rms_norm, layer_norm, swiglu, geglu):
    path = "src/" + mod.__name__.replace(".", "/") + ".py"
    for name in dir(mod):
        if name.endswith("kernel") or "_kernel_" in name:
            out += driver_variants(getattr(mod, name), f"{path}::{name}")
json.dump(out, open(sys.argv[1], "w"), indent=1)
'''


def commit_all(repo: Path, message: str, parent: str | None) -> str:
    """Commit every file under `repo` (pygit2, no git binary needed on the GPU machine)."""
    from ptxdiff.git.repo import commit_tree
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in sorted(repo.rglob("*"))
             if p.is_file() and ".git" not in p.relative_to(repo).parts and "__pycache__" not in p.parts
             and not p.name.endswith(".json")}
    return commit_tree(str(repo), files, message, parent)


def ptxdiff(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ptxdiff", *args], cwd=repo, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def build(repo: Path, liger: Path | None) -> list[str]:
    from ptxdiff.corpus.pairs import load_pairs

    (repo / "kernels").mkdir(parents=True)
    (repo / "kernels" / "__init__.py").write_text("")
    pairs = list(load_pairs(names=PAIRS))
    for p in pairs:
        (repo / "kernels" / f"{p.name}.py").write_text(p.source(ROOT / "corpus", "old"))
    (repo / "run_corpus.py").write_text(RUN_CORPUS.replace("PAIRS", ", ".join(f"({p.name!r}, {p.kernel!r})" for p in pairs)))
    scripts = ["run_corpus.py"]
    if liger:
        shutil.copytree(liger, repo / "src" / "liger_kernel", ignore=shutil.ignore_patterns("__pycache__"))
        (repo / "run_liger.py").write_text(RUN_LIGER)
        scripts.append("run_liger.py")
    return scripts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--liger", type=Path, help="a copy of Liger-Kernel's src/liger_kernel")
    ap.add_argument("--keep", type=Path, help="build the repository here and keep it")
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--device", default="gpu", help="gpu, or interpreter for a dry run on a CPU")
    args = ap.parse_args(argv)
    repo = args.keep or Path(tempfile.mkdtemp(prefix="ptxdiff-gpu-record-"))
    scripts = build(repo, args.liger)
    first = commit_all(repo, "kernels", None)
    variants = []
    for script in scripts:
        out = repo / f"{script}.json"
        proc = ptxdiff(repo, "record", "--device", args.device, "--", sys.executable, script, str(out))
        print(proc.stdout + proc.stderr, end="")
        if out.exists():
            variants += json.loads(out.read_text())
    commit_all(repo, "recorded launches", first)
    files = sorted({v["kernel"].partition("::")[0] for v in variants})  # only the kernels that launched
    proc = ptxdiff(repo, "show", "HEAD", "--format", "json", "-q", "--target", args.target, "--", *files)
    if proc.returncode not in (0, 1):
        print(proc.stderr)
        return 1
    rows = [r for r in json.loads(proc.stdout)["kernels"] if r["kernel"] in {v["kernel"] for v in variants}]
    same = checked = 0
    for r in rows:
        detail = r["spec_detail"] or {}
        mine = [v for v in variants if v["kernel"] == r["kernel"] and v["num_warps"] == detail.get("num_warps")
                and v["num_stages"] == detail.get("num_stages")
                and all(detail.get("constexprs", {}).get(k) == val for k, val in v["constexprs"].items()
                        if k in detail.get("constexprs", {}))]
        if r["new"] is None or not mine:
            print(f"{r['kernel']} [{r['spec']}] ({r['spec_source']}): no launch to compare ({r['error'] or 'unmatched'})")
            continue
        checked += 1
        offline = (r["new"]["regs"], (r["new"]["spill_store_bytes"] or 0) > 0)
        launch = sorted({(v["n_regs"], v["n_spills"] > 0) for v in mine})
        ok = offline in launch
        same += ok
        print(f"{r['kernel']} [{r['spec']}] ({r['spec_source']}): offline regs {offline[0]} spills {offline[1]} | "
              f"launch n_regs/spills {launch} | {'OK' if ok else 'MISMATCH'}")
    print(f"recorded specs whose offline registers equal the wrapper's own launch: {same} of {checked}")
    if not args.keep:
        shutil.rmtree(repo, ignore_errors=True)
    return 0 if checked and same == checked else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
