"""What the compile workers' forkserver does once, before it forks any worker.

Imported only by the forkserver (pool.py), never by the process that runs ptxdiff, so the diff
driver's warm path still imports no triton. Every worker is forked from this state: triton and
the modules a first compile would import are loaded, and triton's cache key is settled here.
The forkserver dies with ptxdiff (and its workers with it: each dies with its parent).
"""

import sys
from typing import Any, cast

import triton
import triton.backends.nvidia.compiler
import triton.compiler.code_generator

from ptxdiff.compile import worker as compiler
from ptxdiff.sandbox import enter  # noqa: F401  (what every worker runs first: loaded once here)


def settle_triton_key() -> None:
    """Triton keys its compile cache by a hash of its own sources and libtriton (`triton_key`,
    ~0.3 s on each start). A worker's cache is private and removed with it (worker.py's
    `private_triton_home`), and the triton it compiles with cannot change while it lives, so
    the installation's version and place key it as well; triton's own warm-up pool replaces
    the function the same way. Every triton module that imported it by name gets the stand-in."""
    key = f"ptxdiff-{triton.__version__}-{triton.__file__}"
    for name, module in list(sys.modules.items()):
        found = getattr(module, "triton_key", None) if name.startswith("triton") else None
        if callable(found) and getattr(found, "__module__", "").startswith("triton"):
            cast(Any, module).triton_key = lambda: key


settle_triton_key()
compiler.die_with_parent()
