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


SETTLE_PROBE = """
from ptxdiff.compile import invoke, settle, worker
real = invoke.triton_compile


def noisy(jit, spec, cc):   # what triton 3.6 prints of a compile (ptxas -v's log)
    if jit is settle.settling_kernel:
        print("ptxas info    : Compiling entry function 'settling_kernel'")
    return real(jit, spec, cc)


invoke.triton_compile = noisy
_, error, printed = worker.try_compile(settle.settling_kernel, settle.SETTLING_SPEC, 90)
assert error is None, error
assert "settling_kernel" not in printed, printed
print("ok")
"""


@pytest.mark.integration
def test_the_settling_compile_prints_nothing_into_a_worker_s_first_compile(tmp_path):
    """A toolchain's worker settles triton inside its first compile: what that compile printed went
    into the first row's log, so Triton-distributed 2b4c24b5eb's rows differed between --jobs 1 and 2
    (a failed row's `log` began with ptxas's lines for `settling_kernel` at one of them)."""
    env = {"PATH": "/usr/bin:/bin", "TRITON_HOME": str(tmp_path), "HOME": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", SETTLE_PROBE], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:] + out.stdout[-2000:]
    assert out.stdout.strip().endswith("ok")
