"""`git diff` on a terminal while compiles run: the driver says it is waiting, on stderr, and
erases that line before git's output goes on, so nothing is left above the diff."""

from __future__ import annotations

import os
import pty
import subprocess

import pytest

from helpers import install, make_repo, scale_kernel, write

pytestmark = pytest.mark.integration


def test_the_waiting_line_is_erased(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    # a body unrolled 1024 times: its compile takes over the driver's 1 s before it speaks, on any
    # machine (a slow ptxas in the environment never reached the sandboxed workers' triton)
    write(repo, {"ops/k.py": scale_kernel("x * 3.0 + 1.0").replace(
        "    x = tl.load(x_ptr + offs, mask=mask)\n",
        "    x = tl.load(x_ptr + offs, mask=mask)\n    for i in tl.static_range(1024):\n        x = tl.exp(x) * 0.5 + x\n")})
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.run(["git", "--no-pager", "diff"], cwd=repo, stdout=subprocess.PIPE, stderr=secondary,
                              env={**os.environ, "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"},
                              timeout=600)
        os.close(secondary)
        seen = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(primary)
    assert proc.returncode == 0
    assert b"ptxdiff sm_90 ops/k.py::scale_kernel" in proc.stdout
    said = b"ptxdiff: compiling (waiting up to 600s, driver_budget)..."
    assert said in seen, seen
    assert seen.endswith(said + b"\r\x1b[K"), seen          # erased, and no newline left behind
