"""What a compile process settles in triton once, before its first compile (`invoke.settle`): its
cache key, and its first-compile state, by compiling this kernel of ptxdiff's own.
"""

import sys
from typing import Any, cast

import triton
import triton.language as tl

from ptxdiff.specs.resolve import Spec


@triton.jit  # type: ignore[untyped-decorator]
def settling_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    b = tl.load(b_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, b))


SETTLING_SPEC = Spec(signature=(("a_ptr", "*fp16"), ("b_ptr", "*fp16"), ("c_ptr", "*fp32"), ("BLOCK", "constexpr")),
                     constexprs=(("BLOCK", 32),), num_warps=4, num_stages=3)


def settle_triton_key() -> None:
    """Triton keys its compile cache by a hash of its own sources and libtriton (`triton_key`,
    ~0.3 s on each start). A worker's cache is private and removed with it (invoke.py's
    `private_triton_home`), and the triton it compiles with cannot change while it lives, so
    the installation's version and place key it as well; triton's own warm-up pool replaces
    the function the same way. Every triton module that imported it by name gets the stand-in."""
    key = f"ptxdiff-{triton.__version__}-{triton.__file__}"
    for name, module in list(sys.modules.items()):
        found = getattr(module, "triton_key", None) if name.startswith("triton") else None
        if callable(found) and getattr(found, "__module__", "").startswith("triton"):
            cast(Any, module).triton_key = lambda: key
