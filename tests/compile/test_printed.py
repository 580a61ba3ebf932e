"""What compilers print stays off the terminal: triton's warnings and LLVM's crash text land in the
row's error (its telling line) and log; a compile that crashes its worker is remembered."""

from __future__ import annotations

import json

import pytest

from helpers import HEADER, commit, make_repo, ptxdiff
from ptxdiff.compile import printed

WARNS = HEADER + '''
@triton.jit
def warn_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.reshape(x, (BLOCK,), can_reorder=True)   # triton 3.9: a deprecation UserWarning
    tl.store(out_ptr + offs, y * {factor}, mask=offs < n)
'''

# three constraints for one argument: LLVM aborts the compiling process (UNREACHABLE, SIGABRT)
CRASHES = HEADER + '''
@triton.jit
def crash_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=offs < n)
'''

LLVM_CRASH = ("Failure value returned from cantFail wrapped call\n"
              "number of input constraints does not match number of parameters\n"
              "UNREACHABLE executed at llvm/include/llvm/Support/Error.h:779!\n")


def test_the_telling_line_is_an_error_not_a_warning_or_a_banner():
    mlir = ("/x/triton/language/core.py:2172: UserWarning: tl.reshape(can_reorder=True) is deprecated\n"
            "  warn_once(RESHAPE_CAN_REORDER_WARNING)\n"
            "loc(\"/k.py\":7:12): error: 'tt.dot' op operand 0 has an unsupported layout\n"
            "// -----// IR Dump Before ConvertTritonGPUToLLVM //----- //\n")
    assert printed.telling_line(mlir) == 'loc("/k.py":7:12): error: \'tt.dot\' op operand 0 has an unsupported layout'
    assert printed.telling_line("warning: x\nLLVM ERROR: out of memory\nAllocation failed\n") == "LLVM ERROR: out of memory"
    assert printed.telling_line(mlir.split("loc")[0]) is None                 # a warning says nothing went wrong
    assert printed.telling_line(LLVM_CRASH) is None
    assert printed.telling_line(LLVM_CRASH, crashed=True) == "number of input constraints does not match number of parameters"


def test_a_failed_compile_gets_the_telling_line_and_a_measured_one_only_the_log():
    failed = printed.attach({"error": "compile failed: PassManager::run failed", "log": "Traceback"},
                            "LLVM ERROR: out of memory\n")
    assert failed == {"error": "compile failed: PassManager::run failed (LLVM ERROR: out of memory)",
                      "log": "LLVM ERROR: out of memory\nTraceback"}
    measured = printed.attach({"metrics": {}, "ptx": ""}, "UserWarning: deprecated\n")
    assert measured["log"] == "UserWarning: deprecated\n" and "error" not in measured
    assert printed.attach([1, 2], "noise") == [1, 2]                        # specs: not a compile result


@pytest.mark.integration
def test_compiler_output_never_reaches_the_terminal_and_a_crash_is_remembered(tmp_path):
    repo = make_repo(tmp_path, {"warns.py": WARNS.format(factor="2.0")})
    commit(repo, "change", {"warns.py": WARNS.format(factor="3.0"), "crashes.py": CRASHES})

    proc = ptxdiff(["diff", "HEAD~1", "HEAD"], repo)
    assert proc.returncode == 0, proc.stderr
    for said in ("UserWarning", "warn_once", "UNREACHABLE", "cantFail"):
        assert said not in proc.stderr and said not in proc.stdout
    rows = {line.split(" [")[0]: line for line in proc.stdout.splitlines() if " [sm_" in line}
    assert "worker crashed (signal SIG" in rows["crashes.py::crash_kernel"]
    assert rows["crashes.py::crash_kernel"].endswith("number of input constraints does not match number of parameters")

    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "-q"], repo)
    assert proc.returncode == 0, proc.stderr
    by_kernel = {r["kernel"]: r for r in json.loads(proc.stdout)["kernels"]}
    crashed, warned = by_kernel["crashes.py::crash_kernel"], by_kernel["warns.py::warn_kernel"]
    assert not crashed["transient"] and "UNREACHABLE executed" in crashed["log"]     # the rest: in the log
    assert warned["verdict"] == "structural" and "can_reorder=True) is deprecated" in warned["log"]

    warm = ptxdiff(["diff", "HEAD~1", "HEAD"], repo)
    assert warm.stdout.splitlines()[-1] == "rows: 2 from the local cache"       # the crash too: nothing compiled


@pytest.mark.integration
def test_a_compile_that_failed_in_a_pass_carries_the_pass_mlir_names(tmp_path):
    """MLIR writes its diagnostics to fd 2, past Python: `try_compile` reads what this compile
    printed to the worker's capture and keeps the failed pass on the error (the refit's suspects)."""
    import subprocess
    import sys

    script = f"""
import os, sys
from ptxdiff.compile import printed, worker
printed.capture({str(tmp_path / "home")!r})
os.write(2, b"earlier compile: Pipeline failed while executing [`Earlier` on 'builtin.module' operation]\\n")

def failing(jit, spec, cc):
    os.write(2, b"k.py:6:0: note: Pipeline failed while executing [`TritonGPUAccelerateMatmul` on 'builtin.module' "
                b"operation]: reproducer generated at `std::errs`\\n")
    raise RuntimeError("PassManager::run failed")

worker.triton_compile = failing
_, error, _ = worker.try_compile(None, None, 90)
worker.triton_compile = lambda jit, spec, cc: (_ for _ in ()).throw(RuntimeError("no pass named"))
_, other, _ = worker.try_compile(None, None, 90)
with open({str(tmp_path / "said")!r}, "w") as f:
    f.write(f"{{error.failed_pass}} {{getattr(other, 'failed_pass', None)}}")
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "said").read_text() == "TritonGPUAccelerateMatmul None"
