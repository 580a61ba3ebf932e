"""`triton.compile` of one spec, in the API of whichever triton (3.0 to 3.9) this process has, in
a process settled once before its first compile (`settle`), with a triton home of its own.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import re
import shutil
import tempfile
from typing import Any

from ptxdiff.binaries import pin_fp_fusion
from ptxdiff.specs.resolve import Spec

TRITON_HOME_VARS = ("TRITON_HOME", "TRITON_CACHE_DIR", "TRITON_DUMP_DIR", "TRITON_OVERRIDE_DIR")


def private_triton_home(path: str) -> None:
    """Each worker compiles with its own triton cache and dump folders: nothing is written to
    ~/.triton, and one side never reads what the other side compiled."""
    home, cache, dump, override = TRITON_HOME_VARS
    os.environ[home] = path
    os.environ[cache] = os.path.join(path, "cache")
    os.environ[dump] = os.path.join(path, "dump")
    os.environ[override] = os.path.join(path, "override")


def constexpr_value(value: object) -> object:
    """A config string naming a triton dtype ("tl.bfloat16", "triton.language.float16") means that
    dtype: TOML has no dtype values and kernels take `X_dtype: tl.constexpr`; so does a dtype the
    evaluator read from the kernel's source. Other strings stay."""
    from ptxdiff.evaluator.values import DType
    name = value.name if isinstance(value, DType) else \
        value.rpartition(".")[2] if isinstance(value, str) and value.startswith(("tl.", "triton.language.")) else None
    if name is not None:   # a dtype the evaluator read from the source (a default `= tl.int32`), or a config string
        import triton.language as tl
        dtype = getattr(tl, name, None)
        if isinstance(dtype, tl.dtype):
            return dtype
    return value


def triton_compile(jit: Any, spec: Spec, cc: int) -> Any:
    """`triton.compile` of one spec for sm_`cc`, in the API of the triton this process has (3.0 to 3.9),
    in a process settled first (`settle`)."""
    import triton

    settle()
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    if getattr(jit, "is_gluon", lambda: False)():   # a Gluon kernel: Gluon's front end (triton 3.4 and later)
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    names = [p for p, _ in spec.signature]
    divisible = spec.divisible if spec.divisible is not None else [p for p, t in spec.signature if t.startswith("*")]
    attrs = {(names.index(p),): [["tt.divisibility", 16]] for p in divisible if p in names}
    constexprs = {k: constexpr_value(v) for k, v in spec.constexprs}
    signature = {p: tuple(t[1:-1].split(",")) if t.startswith("(") else gluon_descriptor(t)
                 for p, t in spec.signature}
    if "constexprs" in inspect.signature(ASTSource).parameters:
        src = ASTSource(fn=jit, signature=signature, constexprs=constexprs, attrs=attrs)
    else:  # triton 3.0-3.2: `constants`, and the attributes as an AttrsDescriptor
        src = ASTSource(fn=jit, signature=signature, constants=constexprs,
                        attrs=_attrs_descriptor([names.index(p) for p in divisible if p in names]))
    return triton.compile(src, target=GPUTarget("cuda", cc, 32),
                          options={"num_warps": spec.num_warps, "num_stages": spec.num_stages, **dict(spec.options)})


_settled = False


def settle() -> None:
    """Settle triton once in this process, before its first compile (a forked worker inherits it):
    the forkserver's preload does it before it forks; a toolchain's forkserver cannot import
    ptxdiff under Python 3.11 (its `main` ignores the import path it is handed, and the preload's
    ImportError is skipped), so there each worker does it here.

    Triton 3.2 and 3.3 compile the first kernel of a process otherwise than every later one (a
    dot tile of ours under 3.2: 1,140 PTX lines first, 1,109 after; lightllm's
    grouped_matmul_kernel: 2,545 and 2,513 instructions; 3.6 and 3.9 do not), so a spec's metrics
    hung on whether it was its worker's first compile, and so on `--jobs`: one compile of
    ptxdiff's own kernel, in a triton home removed after it, puts the process past that point."""
    global _settled
    if _settled:
        return
    _settled = True
    from ptxdiff.compile import settle as settling

    settling.settle_triton_key()
    home = tempfile.mkdtemp(prefix="ptxdiff-settle-")
    saved = {k: os.environ.get(k) for k in TRITON_HOME_VARS}
    try:
        private_triton_home(home)
        pin_fp_fusion()   # as every worker compiles (triton 3.9 warns where it is unset)
        # what it prints (triton 3.6's ptxas log) is nobody's: a worker settles inside its first compile,
        # whose printed text would otherwise start with it (and so depend on --jobs)
        with contextlib.redirect_stdout(io.StringIO()):
            triton_compile(settling.settling_kernel, settling.SETTLING_SPEC, 90)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def gluon_descriptor(kind: str) -> str:
    """A Gluon descriptor's type with the default layout named (`tensordesc<fp8e4nv[64, 64],nvmma>`,
    hints.gluon_descriptors) as this triton writes it: `NVMMASharedLayout.get_default_for(block
    shape, dtype)`, what a host's `TensorDescriptor` takes; any other type as it is."""
    from ptxdiff.discovery.descriptors import DEFAULT_SHARED

    found = re.fullmatch(rf"tensordesc<(\w+)\[([\d, ]+)\],{DEFAULT_SHARED}>", kind)
    if found is None:
        return kind
    import triton.language as tl
    from triton.experimental.gluon import language as gl

    shape = [int(d) for d in found.group(2).split(",")]
    layout = gl.NVMMASharedLayout.get_default_for(shape, tl.str_to_ty(found.group(1), None))
    return f"tensordesc<{found.group(1)}[{found.group(2)}],{layout!r}>"


def _attrs_descriptor(divisible: list[int]) -> Any:
    """The divisibility hints as triton 3.0-3.2 take them (3.3 and later take `attrs` as a dict)."""
    try:
        from triton.backends.compiler import AttrsDescriptor  # 3.2
    except ImportError:   # 3.0 and 3.1: a dataclass of argument indices
        from triton.compiler.compiler import AttrsDescriptor
        return AttrsDescriptor(divisible_by_16=tuple(divisible), equal_to_1=())
    return AttrsDescriptor.from_hints(dict.fromkeys(divisible, 16))
