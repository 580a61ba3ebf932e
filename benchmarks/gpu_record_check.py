"""On a GPU machine: does an offline compile of the *recorded* spec give the registers the CUDA
driver reports for the wrapper's own launch?

1. `ptxdiff record --device gpu` runs this script's launch mode, which launches a few corpus
   kernels through their own wrappers (`launch(*make_inputs(...))` on CUDA tensors) and writes
   the driver's `n_regs`/`n_spills` of every variant the launch compiled;
2. each recorded spec (signature, constexprs incl. ints equal to 1, divisibility, num_warps,
   num_stages, options) is compiled offline for the GPU's target and loaded by the driver;
3. one row per kernel: the recorded spec, the real launch's numbers, the offline ones.

    python benchmarks/gpu_record_check.py [pair ...]        (default: matmul softmax layernorm_eps gelu)

Run from anywhere; the corpus files are part of this repository, so their ids are
`corpus/pairs/<pair>/old.py::<kernel>`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxdiff import recorded  # noqa: E402
from ptxdiff.corpus import corpus_dir, load_pairs  # noqa: E402

DEFAULT_PAIRS = ["matmul", "softmax", "layernorm_eps", "gelu"]


def _module(pair: str):
    path = corpus_dir() / "pairs" / pair / "old.py"
    spec = importlib.util.spec_from_file_location(f"corpus_{pair}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return path, mod


def _jit(obj):
    """The JITFunction behind autotune/heuristics wrappers."""
    while not hasattr(obj, "device_caches") and hasattr(obj, "fn"):
        obj = obj.fn
    return obj


def launch_mode(out: str, names: list[str]) -> int:
    """Child of `ptxdiff record`: launch each pair's kernel through its wrapper on the GPU and
    write what the driver says about every variant the launches compiled."""
    import torch

    result = {}
    for pair in load_pairs(names=names):
        path, mod = _module(pair.name)
        inputs = [t.cuda() if torch.is_tensor(t) else t for t in
                  mod.make_inputs(1000, torch.float32, torch.Generator().manual_seed(0))]
        with contextlib.redirect_stdout(io.StringIO()):
            mod.launch(*inputs)
            torch.cuda.synchronize()
        jit = _jit(getattr(mod, pair.kernel))
        variants = []
        for cache in jit.device_caches.values():
            for kernel in cache[0].values():
                kernel = kernel.result() if hasattr(kernel, "result") else kernel
                variants.append({"n_regs": kernel.n_regs, "n_spills": kernel.n_spills,
                                 "num_warps": kernel.metadata.num_warps, "num_stages": kernel.metadata.num_stages})
        result[f"{path.relative_to(ROOT).as_posix()}::{pair.kernel}"] = {"pair": pair.name, "driver": variants}
    Path(out).write_text(json.dumps(result, indent=1))
    return 0


def _key(name: str, params: tuple[str, ...]) -> tuple[int, ...]:
    """"t[1]" -> (index of t, 1): triton's path of an argument or tuple element."""
    base, _, rest = name.partition("[")
    return (params.index(base), *(int(i) for i in rest.replace("]", "").split("[") if i))


def _types(t):
    return tuple(_types(x) for x in t) if isinstance(t, list) else t


def offline_compile(jit, launch: recorded.Launch, cc: int) -> dict:
    """The recorded spec compiled offline (no launch), then loaded by the driver: its n_regs and
    n_spills, and the registers ptxdiff reads from the cubin. This builds the ASTSource straight
    from the recorded launch; once ptxdiff's compile path takes recorded specs (divisibility
    attributes included), call that here instead so the check covers ptxdiff's own path."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from ptxdiff import sass
    from ptxdiff.compiler import _constexpr_value, prepare_env
    from ptxdiff.toolchain import run_tool

    prepare_env()
    params = launch.params
    signature = {p: _types(launch.signature[p]) if p in launch.signature else "constexpr" for p in params}
    constexprs = {_key(k, params): _constexpr_value(v) for k, v in launch.constexprs.items()}
    attrs = {_key(k, params): [["tt.divisibility", 16]] for k in launch.divisible}
    src = ASTSource(fn=jit, signature=signature, constexprs=constexprs, attrs=attrs)
    with contextlib.redirect_stdout(io.StringIO()):
        ck = triton.compile(src, target=GPUTarget("cuda", cc, 32),
                            options={"num_warps": launch.num_warps, "num_stages": launch.num_stages, **launch.options})
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(ck.asm["cubin"])
        f.flush()
        res = sass.resource_usage(run_tool("cuobjdump", ["-res-usage", f.name]), ck.metadata.name)
    out = {"ptxdiff_regs": res.regs}
    try:
        ck._init_handles()  # the CUDA driver loads this cubin: its own count
        out.update(n_regs=ck.n_regs, n_spills=ck.n_spills)
    except Exception as e:  # no GPU here: the cubin's count only
        out["driver"] = f"not loaded ({type(e).__name__})"
    return out


def _spec(launch: recorded.Launch) -> str:
    return (f"w{launch.num_warps} s{launch.num_stages} div16[{','.join(launch.divisible)}] "
            f"const[{','.join(f'{k}={v}' for k, v in launch.constexprs.items())}]")


def main(names: list[str]) -> int:
    import torch

    names = names or DEFAULT_PAIRS
    cc = torch.cuda.get_device_capability()
    cc = cc[0] * 10 + cc[1]
    with tempfile.TemporaryDirectory() as tmp:
        file, driver = os.path.join(tmp, "launches.jsonl"), os.path.join(tmp, "driver.json")
        cmd = [sys.executable, "-m", "ptxdiff", "record", "--device", "gpu", "-o", file, "--",
               sys.executable, str(Path(__file__).resolve()), "--launch", driver, *names]
        subprocess.run(cmd, cwd=ROOT, check=True)
        launches = recorded.parse(Path(file).read_text(), file)
        real = json.loads(Path(driver).read_text())
    same = rows = 0
    for kid, seen in sorted(real.items()):
        _, mod = _module(seen["pair"])
        jit = _jit(getattr(mod, kid.rpartition("::")[2]))
        for launch in launches.get(kid, ()):
            off = offline_compile(jit, launch, cc)
            real_regs = sorted({v["n_regs"] for v in seen["driver"] if v["num_warps"] == launch.num_warps})
            ok = off.get("n_regs") in real_regs
            same, rows = same + ok, rows + 1
            print(" | ".join([seen["pair"], _spec(launch), f"launch n_regs {real_regs} spills "
                              f"{sorted({v['n_spills'] for v in seen['driver']})}",
                              f"offline n_regs {off.get('n_regs')} spills {off.get('n_spills')} "
                              f"(cubin {off['ptxdiff_regs']})", "OK" if ok else "MISMATCH"]))
        if kid not in launches:
            print(f"{seen['pair']} | not recorded: {kid}")
    print(f"recorded specs whose offline compile has the launch's registers: {same} of {rows}")
    return 0 if same == rows else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--launch"]:
        sys.exit(launch_mode(sys.argv[2], sys.argv[3:]))
    sys.exit(main(sys.argv[1:]))
