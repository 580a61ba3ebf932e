"""Bare `triton.compile` of one spec as ptxdiff's JSON gives it (`spec_detail`), with no ptxdiff
in the way: compile_overhead.py's baseline and compile_ceiling.py's workers."""

from __future__ import annotations

import importlib.util
from typing import Any


def load_kernel(file: str, kernel: str, module: str) -> Any:
    """The JITFunction `kernel` of the module at `file`, imported as `module` (autotune and
    heuristics wrappers taken off)."""
    spec = importlib.util.spec_from_file_location(module, file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, kernel)
    while not hasattr(fn, "params"):
        fn = fn.fn
    return fn


def compile_spec(fn: Any, d: dict) -> None:
    """One real compile of `fn` for sm_90 with the spec's signature, constexprs, warps and stages."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = list(d["signature"])
    attrs = {(names.index(p),): [["tt.divisibility", 16]] for p, t in d["signature"].items() if t.startswith("*")}
    triton.compile(ASTSource(fn=fn, signature=d["signature"], constexprs=d["constexprs"], attrs=attrs),
                   target=GPUTarget("cuda", 90, 32), options={"num_warps": d["num_warps"], "num_stages": d["num_stages"]})
