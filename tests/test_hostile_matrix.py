"""Issue 27's classes, each built again in a new way, through the four ways ptxdiff judges a
change: `ptxdiff diff`, `git diff` (the installed driver), the pre-push hook (a real push to a
bare remote) and `ptxdiff ci`. One repository holds a small kernel per class; one commit makes
every change at once. Each class must be seen and block at every entry point; the controls
(comments and a line shift only) must not be seen at all.

Classes: a reordered rebinding, swapped import aliases, a star import's winner changed, a
package that shadows a module, a config pin / a recording / `max_specs` only the branch has, a
change under nested flags, a computed launch value, a moved barrier, swapped overlapping stores,
a parameter made constexpr."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from helpers import HEADER, add_origin, commit, git, isolate, kernel_lines, make_repo, rows_by_kernel

pytestmark = [pytest.mark.integration, pytest.mark.module_env]   # one repository, compiled once


def kernel(name: str, body: str, above: str = "", below: str = "") -> str:
    return HEADER + above + f'''

@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body}, mask=mask)
''' + below


def helper(body: str) -> str:
    return HEADER + f"\n\n@triton.jit\ndef h(a):\n    return {body}\n"


def guarded(name: str, body: str) -> str:
    """`body` runs only when BLOCK > 128; the launch site passes 256."""
    return HEADER + f'''

@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if BLOCK > 128:
        y = {body}
    else:
        y = x * 2.0
    tl.store(out_ptr + offs, y, mask=offs < n)


def run(x, out):
    {name}[(1,)](x, out, x.numel(), BLOCK=256)
'''


def tuned(body: str) -> str:
    """Four autotune configs; `body` only where BLOCK > 256 (the last config)."""
    configs = ", ".join(f"triton.Config({{'BLOCK': {b}}})" for b in (64, 128, 256, 512))
    return HEADER + f'''

@triton.autotune(configs=[{configs}], key=["n"])
@triton.jit
def k_tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if BLOCK > 256:
        x = {body}
    tl.store(out_ptr + offs, x, mask=offs < n)
'''


def nested(body: str, comment: str = "") -> str:
    """Six guessed flags; `body` under `if A: if B: if not C: if not D:` (pairwise misses it)."""
    return HEADER + f'''

@triton.jit
def k_nested(x_ptr, out_ptr, n, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr,
             E: tl.constexpr, F: tl.constexpr):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if A:
        if B:
            if not C:
                if not D:{comment}
                    x = {body}
    if E:
        x = x + 1.0
    if F:
        x = x * 0.5
    tl.store(out_ptr + offs, x, mask=offs < n)
'''


def computed(other: str) -> str:
    return HEADER + f'''

@triton.jit
def k_computed(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if BLOCK == 128:
        y = x * 2.0
    else:
        y = {other}
    tl.store(out_ptr + offs, y, mask=offs < n)


def run(x, out):
    n = x.numel()
    k_computed[(1,)](x, out, n, BLOCK=triton.next_power_of_2(max(n, 512)))
'''


def exchange(first: str, second: str) -> str:
    return HEADER + f'''

@triton.jit
def k_barrier(x_ptr, out_ptr, BLOCK: tl.constexpr = 128):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)
{first}
{second}
    tl.store(x_ptr + offs, y * 2.0)
'''


def overlap(first: str, second: str) -> str:
    return HEADER + f'''

@triton.jit
def k_stores(x_ptr, out_ptr, BLOCK: tl.constexpr = 64):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
{first}
{second}
'''


def shift(offset: str) -> str:
    return HEADER + f'''

@triton.jit
def k_param(x_ptr, out_ptr, n, {offset}, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) - offset, mask=mask)


def launch(x, out, n):
    k_param[(1,)](x, out, n, 0.25)
'''


BARRIER, READ_BACK = "    tl.debug_barrier()", "    y = tl.load(out_ptr + (BLOCK - 1 - offs))"
STORE_A, STORE_B = "    tl.store(out_ptr + offs, x)", "    tl.store(out_ptr + offs + 2, x - 1.0)"
MODULES = "import pkg.m1 as a\nimport pkg.m2 as b\n"
RECORDED = {"kernel": "pkg/k_recorded.py::k_recorded", "params": ["x_ptr", "out_ptr", "n", "BLOCK"],
            "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, "constexprs": {"BLOCK": 128},
            "divisible_by_16": ["x_ptr", "out_ptr"], "num_warps": 4, "num_stages": 3, "options": {},
            "autotune": None, "via": "interpreter", "count": 1}

BEFORE = {
    "pkg/__init__.py": "", "pkg/m1.py": helper("tl.sqrt(a)"), "pkg/m2.py": helper("a * a"),
    "pkg/shade.py": helper("tl.sqrt(a)"),
    "pkg/k_rebind.py": kernel("k_rebind", "f(x)", "from pkg.m1 import h as root\nfrom pkg.m2 import h as square\n"
                              "f = square\nf = root\n"),
    "pkg/k_alias.py": kernel("k_alias", "a.h(b.h(x) + 1.0)", MODULES),
    "pkg/k_star.py": kernel("k_star", "h(x)", "from pkg.m1 import *\nfrom pkg.m2 import h\n"),
    "pkg/k_shadow.py": kernel("k_shadow", "s.h(x)", "import pkg.shade as s\n"),
    "pkg/k_pinned.py": guarded("k_pinned", "x * 3.0"),
    "pkg/k_recorded.py": guarded("k_recorded", "x * 3.0"),
    "pkg/k_tuned.py": tuned("x * 3.0"),
    "pkg/k_nested.py": nested("x * 3.0"),
    "pkg/k_computed.py": computed("x * 3.0"),
    "pkg/k_barrier.py": exchange(BARRIER, READ_BACK),
    "pkg/k_stores.py": overlap(STORE_A, STORE_B),
    "pkg/k_param.py": shift("offset"),
    "pkg/k_quiet.py": kernel("k_quiet", "a.h(x)", MODULES),
    "pkg/k_quiet_flags.py": nested("x * 3.0").replace("k_nested", "k_quiet_flags"),
}
# each change is one class of issue 27; the kernel's own text is untouched where it can be
CHANGED = {
    "pkg/k_rebind.py": kernel("k_rebind", "f(x)", "from pkg.m1 import h as root\nfrom pkg.m2 import h as square\n"
                              "f = root\nf = square\n"),
    "pkg/k_alias.py": kernel("k_alias", "a.h(b.h(x) + 1.0)", "import pkg.m2 as a\nimport pkg.m1 as b\n"),
    "pkg/k_star.py": kernel("k_star", "h(x)", "from pkg.m2 import h\nfrom pkg.m1 import *\n"),
    "pkg/shade/__init__.py": helper("a * a"),
    "pkg/k_pinned.py": guarded("k_pinned", "tl.exp(x)"),
    "pkg/k_recorded.py": guarded("k_recorded", "tl.exp(x)"),
    ".ptxdiff/launches.jsonl": json.dumps(RECORDED) + "\n",
    "pkg/k_tuned.py": tuned("tl.exp(x)"),
    "ptxdiff.toml": 'max_specs = 1\n\n[kernels."pkg/k_pinned.py::k_pinned".constexprs]\nBLOCK = 128\n',
    "pkg/k_nested.py": nested("tl.exp(x)"),
    "pkg/k_computed.py": computed("tl.exp(x)"),
    "pkg/k_barrier.py": exchange(READ_BACK, BARRIER),
    "pkg/k_stores.py": overlap(STORE_B, STORE_A),
    "pkg/k_param.py": shift("offset: tl.constexpr"),
    # controls: comments and a line shift
    "pkg/k_quiet.py": "# the helpers\n\n" + kernel("k_quiet", "a.h(x)", MODULES, "# end\n"),
    "pkg/k_quiet_flags.py": nested("x * 3.0", "  # the innermost case").replace("k_nested", "k_quiet_flags"),
}
CASES = {   # class -> (kernel, the verdicts it must have among its rows)
    "reordered rebinding": ("k_rebind", {"structural"}),
    "swapped import aliases": ("k_alias", {"structural"}),
    "star-import winner": ("k_star", {"structural"}),
    "package shadows module": ("k_shadow", {"structural"}),
    "branch-only pin": ("k_pinned", {"structural", "failed"}),
    "branch-only recording": ("k_recorded", {"structural", "failed"}),
    "branch-only max_specs": ("k_tuned", {"structural"}),
    "nested flags": ("k_nested", {"structural"}),
    "computed launch value": ("k_computed", {"structural"}),
    "moved barrier": ("k_barrier", {"structural"}),
    "swapped overlapping stores": ("k_stores", {"structural"}),
    "parameter made constexpr": ("k_param", {"structural"}),
}
CONTROLS = ("k_quiet", "k_quiet_flags")
ENTRIES = ("diff", "git diff", "pre-push", "ci")
VERDICTS = ("structural", "reordered", "constants-only", "identical", "failed", "unmeasured", "added", "removed")


def kid(name: str) -> str:
    return f"pkg/{name}.py::{name}"


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """{entry point: {kernel id: (verdicts, blocking)}} of the one commit, each computed when
    first asked for."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("matrix")
    isolate(tmp, mp)
    repo = make_repo(tmp, BEFORE)
    add_origin(repo, tmp)
    commit(repo, "every class at once", CHANGED)
    yield functools.cache(lambda entry: _judge(entry, repo, tmp))
    mp.undo()


def _rows(report: dict) -> dict[str, tuple[set[str], bool]]:
    return {k: ({r["verdict"] for r in rows}, any(r["blocking"] for r in rows))
            for k, rows in rows_by_kernel(report).items()}


def _judge(entry: str, repo: Path, tmp: Path) -> dict[str, tuple[set[str], bool]]:
    from ptxdiff.cli.main import main

    if entry == "diff":
        out = tmp / "diff.json"
        rc = main(["-C", str(repo), "diff", "--check", "--format", "json", "-q", "-o", str(out), "HEAD~1", "HEAD"])
        assert rc == 1
        return _rows(json.loads(out.read_text()))
    if entry == "ci":
        base = git(repo, "rev-parse", "HEAD~1").stdout.strip()
        rc = main(["-C", str(repo), "ci", "-q", "--base", base, "--head", "HEAD",
                   "--comment-file", str(tmp / "c.md"), "--json-file", str(tmp / "r.json")])
        assert rc == 1
        return _rows(json.loads((tmp / "r.json").read_text()))
    assert main(["install", "-C", str(repo)]) == 0
    if entry == "git diff":   # the driver's lines: `ptxdiff TARGET KERNEL [spec] VERDICT ...`
        proc = git(repo, "diff", "HEAD~1", "HEAD", check=False, env={"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "600"})
        assert proc.returncode == 0, proc.stderr
        return _said([(ln.split()[2], ln) for ln in kernel_lines(proc.stdout)])
    # the pre-push hook's table: a row per kernel change in the block list
    pushed = git(repo, "push", "origin", "main", check=False)
    assert pushed.returncode != 0, pushed.stderr
    return _said([(ln.split()[0], ln) for ln in pushed.stderr.splitlines() if ln.startswith("pkg/")])


def _said(lines: list[tuple[str, str]]) -> dict[str, tuple[set[str], bool]]:
    """{kernel: (verdicts, blocking)} from lines of text, each naming its kernel: a line blocks
    where its verdict does by default (structural, failed)."""
    found: dict[str, tuple[set[str], bool]] = {}
    for name, line in lines:
        verdicts = {w.strip("(),") for w in line.split()} & set(VERDICTS)   # a kernel's line counts its specs' too
        seen, blocks = found.get(name, (set(), False))
        found[name] = (seen | verdicts, blocks or bool(verdicts & {"structural", "failed"}))
    return found


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("case", CASES)
def test_each_class_is_seen_and_blocks(judged, entry, case):
    name, want = CASES[case]
    verdicts, blocking = judged(entry).get(kid(name), (set(), False))
    assert want <= verdicts and blocking, (case, entry, verdicts, sorted(judged(entry)))


@pytest.mark.parametrize("entry", ENTRIES)
def test_comments_and_a_line_shift_are_not_seen(judged, entry):
    seen = set(judged(entry))
    assert kid("k_nested") in seen and not {kid(n) for n in CONTROLS} & seen, sorted(seen)
