"""The compile worker's process-level tricks, each checked in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.integration   # each test starts an interpreter or ptxas


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)


def test_deferred_torch_is_not_imported_until_used_and_then_works_fully():
    proc = _run("""
        import sys
        from ptxdiff.compile import worker as compiler
        compiler.defer_torch()
        import torch
        assert "torch._C" not in sys.modules, "import torch alone must stay cheap"
        x = torch.zeros(3)                      # first use loads the real module
        import torch.nn.functional as F         # submodules still import
        assert torch.float16 is not None        # the stub keeps delegating after the swap
        assert float(F.relu(x - 1).sum()) == 0.0
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_deferred_torch_leaves_an_already_imported_torch_alone():
    proc = _run("""
        import sys, torch
        from ptxdiff.compile import worker as compiler
        compiler.defer_torch()
        assert sys.modules["torch"] is torch
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr


def test_own_ptxas_log_has_the_spill_counts_triton_3_2_does_not_print():
    """Triton 3.2 deletes ptxas's -v report: the worker runs the toolchain's ptxas for it, for
    the target the PTX names (sm_90a here), and reads the same numbers from it."""
    from helpers import DATA
    from ptxdiff.compile.worker import own_ptxas_log
    from ptxdiff.metrics import sass

    log = own_ptxas_log((DATA / "ptx" / "add.ptx").read_text(), 90)
    assert "sm_90a" in log
    parsed = sass.ptxas_log(log)
    assert (parsed.spill_store_bytes, parsed.spill_load_bytes) == (0, 0)
    assert parsed == sass.ptxas_log((DATA / "ptx" / "add.ptxas.log").read_text())
