"""A hostile branch under every reviewing command: each payload class of the trust-boundary
issue in one branch, checked out, with the CLI started from the repository's root.

Commands: `ptxdiff diff`, `show`, `log`, `git diff` through the driver, `git log -p --ext-diff`,
and `git push` through the gate. After each: no payload left a marker, the secret in the
environment appears in no output, the exit status is a verdict (never 3), no process it started
is still alive (a subreaper collects the orphans), and the push is blocked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HEADER, add_origin, commit, git, install, make_repo, scale_kernel

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "ptxdiff")
SECRET = "ptxdiff-test-secret-6f1d"

# Runs a command as a child subreaper: orphans it leaves behind become its children, and after
# a grace period any still alive are listed and killed. Prints {"rc", "out", "err", "left"}.
REAPER = r'''
import ctypes, json, os, signal, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)          # PR_SET_CHILD_SUBREAPER
p = subprocess.run(json.loads(sys.argv[1]), cwd=sys.argv[2], capture_output=True, text=True, errors="replace")
def children():
    out = []
    for pid in os.listdir("/proc"):
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                out.append((int(pid), open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:200]))
        except (OSError, ValueError, IndexError):
            pass
    return out
for _ in range(100):                                          # a grace period of up to 10 s to finish
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break
    if not children():
        break
    time.sleep(0.1)
left = children()
for pid, _ in left:
    os.kill(pid, signal.SIGKILL)
print(json.dumps({"rc": p.returncode, "out": p.stdout, "err": p.stderr, "left": left}))
'''


def payload(marker: Path) -> str:
    return f"open({str(marker)!r}, 'w').write('ran')"


def hostile_files(markers: Path) -> dict[str, str | bytes]:
    """One kernel file per payload class, each payload writing its own marker."""
    m = {name: payload(markers / name) for name in (
        "body", "builtins", "annotation", "default", "assert", "constexpr", "helper", "shadow", "bomb")}
    body = HEADER + f'''
@triton.jit
def body_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    tl.core.builtins.exec({m["body"]!r})
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    via_builtins = HEADER + f'''
@triton.jit
def builtins_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    getattr(__builtins__, "exec")({m["builtins"]!r})
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    annotation = HEADER + f'''
@triton.jit
def annotation_kernel(x_ptr: tl.core.builtins.exec({m["annotation"]!r}), out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    default = HEADER + f'''
@triton.jit
def default_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = tl.core.builtins.exec({m["default"]!r})):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    static_assert = HEADER + f'''
@triton.jit
def assert_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    tl.static_assert(BLOCK > 0, tl.core.builtins.exec({m["assert"]!r}))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    constexpr = HEADER + f'''
RUN = tl.constexpr(tl.core.builtins.exec)


@triton.jit
def constexpr_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    RUN({m["constexpr"]!r})
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    helper_module = HEADER + f'''
@triton.jit
def twice(x):
    tl.core.builtins.exec({m["helper"]!r})
    return x * 2.0
'''
    uses_helper = HEADER + '''
from ops.helpers import twice


@triton.jit
def helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
'''
    environment = HEADER + '''
import os

TOKEN = os.environ.get("PTXDIFF_TEST_SECRET", "unset")
WALK = "{0.__globals__[os].environ}".format(tl.load)


@triton.jit
def environment_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    tl.static_assert(BLOCK < 0, TOKEN + WALK)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''
    # str.splitlines() splits this comment five more times than Python does: a reader that maps
    # lines with it finds `decoy` (the old body) where `decoy_kernel` (the new one) begins
    decoy = HEADER + '''
# \x0c\x1c\x1d\x1e\x85 control characters
def decoy(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
''' + scale_kernel("x * 2.0 + tl.sqrt(x)", name="decoy_kernel").replace(HEADER, "")
    both_fail = HEADER + '''
@triton.jit
def both_fail_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 1000 == 999, "no guess compiles this kernel")
    offs = tl.program_id(0) * 4 + tl.arange(0, 4)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2.0 + tl.sqrt(x), mask=offs < n)
'''
    bomb = HEADER + f'''
WIDE = tl.constexpr(len("a".ljust(10**10)) + pow(3, 10**10, None))
SIDE = [{m["bomb"]!r} for _ in range(10**12)]


@triton.jit
def bomb_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * WIDE, mask=offs < n)
'''
    shadow = payload(markers / "shadow") + "\nraise ImportError('shadow')\n"
    return {
        "ops/body.py": body, "ops/builtins.py": via_builtins, "ops/annotation.py": annotation,
        "ops/default.py": default, "ops/assert_.py": static_assert, "ops/constexpr.py": constexpr,
        "ops/helpers.py": helper_module, "ops/uses_helper.py": uses_helper, "ops/environment.py": environment,
        "ops/decoy.py": decoy, "ops/both_fail.py": both_fail, "ops/bomb.py": bomb,
        "ops/deep.py": HEADER + "DEEP = " + "+".join(["1"] * 200_000) + "\n" + scale_kernel(name="deep_kernel"),
        # shadows of what ptxdiff and its workers import, at the root of the checked-out branch
        "multiprocessing/__init__.py": shadow, "tabulate.py": shadow, "pygit2.py": shadow, "tomllib.py": shadow,
        "triton/__init__.py": shadow, "sitecustomize.py": shadow, "ops/shadow.py": scale_kernel("x * 3.0", name="shadow_kernel"),
        "pyproject.toml": '[tool.ptxdiff]\nblock = []\nexclude = ["ops/*"]\nblock_unmeasured = false\ntimeout = 1000000\n',
    }


def benign_files() -> dict[str, str]:
    """main: the same kernels, harmless (so every hostile file is a change of a known kernel)."""
    names = ["body", "builtins", "annotation", "default", "assert", "constexpr", "helper", "environment",
             "both_fail", "bomb", "deep", "shadow"]
    files = {f"ops/{'assert_' if n == 'assert' else 'uses_helper' if n == 'helper' else n}.py":
             scale_kernel(name=f"{n}_kernel") for n in names}
    files["ops/helpers.py"] = HEADER + "\n@triton.jit\ndef twice(x):\n    return x * 2.0\n"
    files["ops/decoy.py"] = scale_kernel(name="decoy_kernel")
    files["ops/both_fail.py"] = HEADER + '''
@triton.jit
def both_fail_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK % 1000 == 999, "no guess compiles this kernel")
    offs = tl.program_id(0) * 4 + tl.arange(0, 4)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, x * 2.0, mask=offs < n)
'''
    return files


def reaped(repo: Path, argv: list[str], env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-I", "-c", REAPER, json.dumps(argv), str(repo)], capture_output=True,
                          text=True, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


MUST_BLOCK = ("ops/body.py::body_kernel", "ops/builtins.py::builtins_kernel", "ops/annotation.py::annotation_kernel",
              "ops/assert_.py::assert_kernel", "ops/constexpr.py::constexpr_kernel",
              "ops/uses_helper.py::helper_kernel", "ops/environment.py::environment_kernel",
              "ops/decoy.py::decoy_kernel", "ops/both_fail.py::both_fail_kernel", "ops/bomb.py::bomb_kernel",
              "ops/shadow.py::shadow_kernel")


def test_a_hostile_branch_runs_nothing_under_any_reviewing_command_and_is_blocked(tmp_path, capsys):
    markers = tmp_path / "markers"
    markers.mkdir()
    repo = make_repo(tmp_path, benign_files())
    bare = add_origin(repo, tmp_path)
    install(repo, capsys)
    git(repo, "checkout", "-q", "-b", "hostile")
    commit(repo, "hostile", hostile_files(markers))
    env = {"PTXDIFF_TEST_SECRET": SECRET, "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "900",
           "PTXDIFF_MAX_TIMEOUT": "120"}

    commands = {
        "diff": [CLI, "diff", "main", "HEAD", "--format", "json", "-q"],
        "show": [CLI, "show", "HEAD", "--format", "json", "-q"],
        "log": [CLI, "log", "ops/body.py::body_kernel", "main..HEAD", "--format", "json"],
        "git diff": ["git", "diff", "main", "HEAD"],
        "git log": ["git", "log", "-p", "--ext-diff", "main..HEAD"],
        "push": ["git", "push", "origin", "hostile:main"],
    }
    results = {}
    for name, argv in commands.items():
        got = reaped(repo, argv, env)
        results[name] = got
        assert sorted(p.name for p in markers.iterdir()) == [], f"{name}: a payload ran"
        assert got["left"] == [], f"{name}: processes outlived the command: {got['left']}"
        assert got["rc"] in (0, 1), f"{name}: exit {got['rc']}: {got['err'][-2000:]}"
        assert SECRET not in got["out"] + got["err"], f"{name}: the environment leaked"

    diff = {r["kernel"]: r for r in json.loads(results["diff"]["out"])["kernels"]}
    for kid in MUST_BLOCK:
        assert kid in diff and diff[kid]["blocking"], (kid, diff.get(kid, {}).get("verdict"), diff.get(kid, {}).get("error"))
    assert diff["ops/both_fail.py::both_fail_kernel"]["verdict"] == "unmeasured"
    assert diff["ops/deep.py::deep_kernel"]["verdict"] in ("failed", "unmeasured")   # the parse bound, named
    messages = json.loads(results["diff"]["out"])["messages"]
    assert any("edits ptxdiff's own policy" in m for m in messages)
    assert results["push"]["rc"] == 1 and "blocked" in results["push"]["err"]
    assert git(bare, "rev-parse", "main").stdout == git(repo, "rev-parse", "main").stdout   # the remote is unchanged
    for name in ("git diff", "git log"):
        assert "ptxdiff sm_90 ops/body.py::body_kernel" in results[name]["out"], name
