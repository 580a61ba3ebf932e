"""Values the guesses once never took (issue 41), at the gate: a precision change hidden under
fp32 guesses (`x.to(tl.float32) * w.to(tl.float32)` -> `x * w`), a heuristic made constant at a
size it separated, and a float scalar's width under `torch.compile` (fp64) pinned to fp32. Each
is judged by `diff --check` and a real `git push` through the pre-push hook, beside a control
that rewrites the same kernel without changing what it computes."""

from __future__ import annotations

import pytest

from helpers import EVEN, PRODUCT, SCALAR, gate_judged

pytestmark = pytest.mark.integration

@pytest.mark.parametrize("kernel, old, new, blocked", [
    (PRODUCT, "x.to(tl.float32) * y.to(tl.float32)", "x * y", True),
    (PRODUCT, "x.to(tl.float32) * y.to(tl.float32)", "tl.cast(x, tl.float32) * tl.cast(y, tl.float32)", False),
    (EVEN, 'a["n"] % a["BLOCK"] == 0', "True", True),
    (EVEN, 'a["n"] % a["BLOCK"] == 0', 'a["n"] % a["BLOCK"] < 1', False),
    (SCALAR, "scale", "scale.to(tl.float32)", True),
    (SCALAR, "scale.to(tl.float32)", "tl.cast(scale, tl.float32)", False),
], ids=["precision", "precision-control", "heuristic", "heuristic-control", "fp64-scalar", "fp64-scalar-control"])
def test_the_gate_sees_values_the_guesses_once_never_took(tmp_path, capsys, kernel, old, new, blocked):
    rc, report, push, err = gate_judged(tmp_path, capsys, kernel.replace("EXPR", old), kernel.replace("EXPR", new))
    verdicts = {r["verdict"] for r in report["kernels"]}
    assert (rc, push != 0) == ((1, True) if blocked else (0, False)), (verdicts, err)
    assert ("structural" in verdicts) is blocked, report["kernels"]
