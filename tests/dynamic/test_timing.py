"""timing.py: imports cheaply, fails clearly without a GPU, measures sensibly with one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ptxdiff.dynamic import timing
from ptxdiff.errors import PtxdiffError


@pytest.mark.integration
def test_import_does_not_pull_torch():
    code = "import sys, ptxdiff.dynamic.timing, ptxdiff.dynamic.stats; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_no_gpu_error_is_a_ptxdiff_error():
    assert issubclass(timing.NoGpuError, PtxdiffError)


@pytest.mark.no_gpu
def test_measure_without_gpu_raises_clear_error():
    with pytest.raises(timing.NoGpuError) as exc:
        timing.measure(lambda: None, lambda: None)
    msg = str(exc.value)
    assert "GPU" in msg and "\n" not in msg


@pytest.mark.no_gpu
def test_require_gpu_without_gpu():
    with pytest.raises(timing.NoGpuError):
        timing.require_gpu()


@pytest.mark.gpu
def test_measure_on_gpu_aa_and_slower():
    import torch
    x = torch.randn(1 << 24, device="cuda")
    y = torch.randn(int((1 << 24) * 1.5), device="cuda")
    same = timing.measure(lambda: x * 2.0, lambda: x * 2.0, rounds=15)
    assert same.verdict == "within-noise"
    assert same.l2 == "warm"
    slower = timing.measure(lambda: x * 2.0, lambda: y * 2.0, rounds=15)
    assert slower.verdict == "slower" and slower.ratio > 1.2
