"""The benchmark scripts whose figures the evidence quotes still run against the code they measure:
pool_trace.py wraps the pool's internals (a move of the queue broke every traced run once), and
launch_caps.py patches discovery. Each on a throwaway repository, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HEADER, make_repo, scale_kernel

pytestmark = pytest.mark.integration
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_pool_trace_writes_each_compile_of_a_traced_show(tmp_path):
    repo = make_repo(tmp_path, {"k.py": scale_kernel()})
    out = tmp_path / "trace.jsonl"
    env = {**os.environ, "TRACE_OUT": str(out), "PTXDIFF_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(BENCHMARKS / "pool_trace.py"), "show", "HEAD", "--format", "json",
                           "--jobs", "1", "-q"], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert any(line.get("op") == "compile" and line["outcome"] == "ok" for line in lines), lines
    assert lines[-1]["exit"] == 0


def test_launch_caps_names_a_kernel_whose_launcher_caps_a_guessed_size(tmp_path):
    source = HEADER + '''
@triton.jit
def k(x_ptr, BK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BK), 1.0)


def run(x, K):
    k[(1,)](x, BK=max(min(K, 16), 16))
'''
    repo = make_repo(tmp_path, {"k.py": source})
    done = subprocess.run([sys.executable, str(BENCHMARKS / "launch_caps.py"), str(repo)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "1 whose values differ" in done.stdout and "k.py::k: BK (64,) -> (16,)" in done.stdout, done.stdout
