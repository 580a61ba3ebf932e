"""How the PTX/SASS fixtures in tests/data/ptx were made (run by hand, never by the tests).

    cd /work/main && .venv/bin/python tests/data/ptx/src/make_fixtures.py /tmp/out

Offline compile for GPUTarget("cuda", 90, 32), num_warps=4, BLOCK=128, triton 3.9,
TRITON_DEFAULT_FP_FUSION=1. The spill fixture is k_spill.py with BLOCK=2048 and maxnreg=24
(only its ptxas log and `cuobjdump -res-usage` output are kept).
"""
import contextlib
import importlib
import io
import os
import subprocess
import sys

os.environ["TRITON_DEFAULT_FP_FUSION"] = "1"
os.environ["TRITON_ALWAYS_COMPILE"] = "1"
os.environ["TRITON_DUMP_PTXAS_LOG"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

OUT = sys.argv[1]
CUOBJDUMP = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/cuobjdump")
NVDISASM = os.path.join(os.path.dirname(triton.__file__), "backends/nvidia/bin/nvdisasm")
LISTED = ("add", "mul")   # `nvdisasm -c` kept: the SASS listing the worker keeps for the HTML report
JOBS = [  # tag, module, kernel, number of pointer params, extra options
    ("add", "k_add", "add_kernel", 3, {}),
    ("add_renamed", "k_add_renamed", "vector_sum", 3, {}),
    ("add_commented", "k_add_commented", "add_kernel", 3, {}),
    ("add_swapped_loads", "k_add_swapped_loads", "add_kernel", 3, {}),
    ("mul", "k_mul", "add_kernel", 3, {}),
    ("sub", "k_sub", "sub_kernel", 3, {}),
    ("sub_swapped", "k_sub_swapped", "sub_kernel", 3, {}),
    ("leaky", "k_leaky", "leaky_relu_kernel", 2, {}),
    ("leaky_01", "k_leaky_01", "leaky_relu_kernel", 2, {}),
    ("fma", "k_fma", "axpy_kernel", 4, {}),
    ("fma_nofusion", "k_fma", "axpy_kernel", 4, {"enable_fp_fusion": False}),
    ("noinline", "k_noinline", "caller_kernel", 2, {}),
    ("barrier_before", "k_barrier_before", "exchange_kernel", 2, {}),
    ("barrier_after", "k_barrier_after", "exchange_kernel", 2, {}),
    ("stores", "k_stores", "overlap_kernel", 2, {}),
    ("stores_swapped", "k_stores_swapped", "overlap_kernel", 2, {}),
    ("pure", "k_pure", "two_outputs_kernel", 3, {}),
    ("pure_swapped", "k_pure_swapped", "two_outputs_kernel", 3, {}),
]
os.makedirs(OUT, exist_ok=True)
for tag, modname, fname, nptr, extra in JOBS:
    k = getattr(importlib.import_module(modname), fname)
    sig = {p: "*fp32" if i < nptr else ("i32" if p == "n" else "constexpr") for i, p in enumerate(k.arg_names)}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ck = triton.compile(ASTSource(fn=k, signature=sig, constexprs={"BLOCK": 128}),
                            target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, **extra})
    with open(f"{OUT}/{tag}.ptx", "w") as f:
        f.write(ck.asm["ptx"])
    cubin = f"{OUT}/{tag}.cubin"
    with open(cubin, "wb") as f:
        f.write(ck.asm["cubin"])
    dump = subprocess.run([CUOBJDUMP, "-res-usage", "-sass", cubin], capture_output=True, text=True, check=True)
    with open(f"{OUT}/{tag}.sass", "w") as f:
        f.write(dump.stdout)
    if tag in LISTED:
        listing = subprocess.run([NVDISASM, "-c", cubin], capture_output=True, text=True, check=True)
        with open(f"{OUT}/{tag}.nvdisasm", "w") as f:
            f.write(listing.stdout)
    with open(f"{OUT}/{tag}.ptxas.log", "w") as f:
        f.write(buf.getvalue())
