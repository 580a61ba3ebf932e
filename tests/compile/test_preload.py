"""The forkserver's preload (compile/preload.py): what every worker is forked from."""

import subprocess
import sys

import pytest

pytest.importorskip("triton")

PROBE = """
import triton, triton.runtime.cache as cache, triton.runtime.autotuner as autotuner
import ptxdiff.compile.preload
key = f"ptxdiff-{triton.__version__}-{triton.__file__}"
assert cache.triton_key() == key, cache.triton_key()
assert autotuner.triton_key() == key, autotuner.triton_key()
print("ok")
"""


@pytest.mark.integration
def test_triton_key_is_settled_without_hashing_triton():
    """triton's key of its private, short-lived cache is its version and place, not a ~0.3 s hash
    of its sources and libtriton on every start (in a process of its own: preload patches triton)."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
