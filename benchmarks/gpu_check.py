"""On a GPU machine: do the `regs` / spill figures ptxdiff computes offline match what the CUDA
driver reports for the same kernel (triton's CompiledKernel.n_regs / n_spills)?

Compiles each corpus kernel the offline way (ptxdiff.compile.worker, explicit GPUTarget), then launches
it for real through its host wrapper and reads the driver's numbers from the kernel's cache.
    python benchmarks/gpu_check.py [pair ...]
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from ptxdiff.compile import worker as compiler
from ptxdiff.corpus.pairs import corpus_dir, load_pairs
from ptxdiff.discovery.kernels import discover
from ptxdiff.repo_config import KernelConfig
from ptxdiff.source.modules import FileSet
from ptxdiff.specs.resolve import resolve


def main(names: list[str]) -> int:
    compiler.prepare_env()
    cc = torch.cuda.get_device_capability()
    cc = cc[0] * 10 + cc[1]
    rows, bad = [], 0
    for pair in load_pairs(names=names or None):
        if pair.config or pair.name.startswith("perf_"):
            continue
        path = corpus_dir() / "pairs" / pair.name / "old.py"
        spec_ = importlib.util.spec_from_file_location(f"corpus_{pair.name}", path)
        mod = importlib.util.module_from_spec(spec_)
        spec_.loader.exec_module(mod)
        kernel = discover(FileSet({"k.py": path.read_bytes()})).kernels[f"k.py::{pair.kernel}"]
        jit, declared = compiler._unwrap(getattr(mod, pair.kernel))
        spec = resolve(kernel, declared, KernelConfig())[0]
        import contextlib
        import io
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            ck = compiler._triton_compile(jit, spec, cc)
        m = compiler.measure(ck.asm["ptx"], ck.asm["cubin"], log.getvalue(), spec, cc, int(ck.metadata.shared))
        ck._init_handles()  # the CUDA driver loads exactly this cubin
        same = (ck.n_regs, ck.n_spills) == (m.regs, m.local_bytes // 4)
        bad += not same
        inputs = [t.cuda() if torch.is_tensor(t) else t for t in
                  mod.make_inputs(1000, torch.float32, torch.Generator().manual_seed(0))]
        with contextlib.redirect_stdout(io.StringIO()):
            mod.launch(*inputs)
            torch.cuda.synchronize()
        launched = [k for dev in jit.device_caches.values() for k in dev[0].values()] \
            if hasattr(jit, "device_caches") else list(jit.cache[0].values())
        runtime = [(k.n_regs, k.n_spills) for k in launched]
        rows.append((pair.name, f"ptxdiff regs {m.regs} local {m.local_bytes}B spill st/ld "
                     f"{m.spill_store_bytes}/{m.spill_load_bytes}",
                     f"driver on the same cubin n_regs {ck.n_regs} n_spills {ck.n_spills}", "OK" if same else "MISMATCH",
                     f"wrapper's own launch (runtime specialisation) {runtime}"))
    for r in rows:
        print(" | ".join(map(str, r)))
    print(f"same cubin: {len(rows) - bad} match, {bad} mismatch")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
