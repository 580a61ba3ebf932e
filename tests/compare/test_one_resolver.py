"""What is fingerprinted is what is built, end to end: changes to what a kernel computes that
leave its text alone (statement order, import aliases, equal names in two modules, star imports,
a module shadowed by a package) are seen by `ptxdiff diff`, the `git diff` driver, the pre-push
gate and `ptxdiff ci`; the plain change is the control. A cache entry is served only for the
source it was built from: one forged under another kernel's key (local or shared) is compiled again."""

from __future__ import annotations

import gzip
import json

import pytest

from helpers import (
    cache_entries,
    commit,
    git,
    kernel_lines,
    make_repo,
    ptxdiff,
    pushed_repo,
    rows_by_kernel,
    run_main,
    write,
)
from ptxdiff.compare.cache import source_hash
from ptxdiff.discovery.kernels import discover
from ptxdiff.source.modules import FileSet

pytestmark = pytest.mark.integration

HEAD = "import triton\nimport triton.language as tl\n"
OPS = HEAD + """

@triton.jit
def root(a):
    return tl.sqrt(a)


@triton.jit
def square(a):
    return a * a
"""


def kernel(name: str, body: str, above: str = "") -> str:
    return HEAD + above + f"""

@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body}, mask=mask)
"""


def const(value: int) -> str:
    return HEAD + f"C = tl.constexpr({value})\n"


ALIASES = "from pkg.ops import root as f, square as g\n"
BOTH, PLAIN = "f(g(x) + 1.0)", "g(f(x) + 1.0)"     # the kernel reads both aliases; the plain edit swaps the calls
SWAPPED = "from pkg.ops import square as f, root as g\n"
SQRT_H = HEAD + "\n\n@triton.jit\ndef h(a):\n    return tl.sqrt(a)\n"
SQUARE_H = HEAD + "\n\n@triton.jit\ndef h(a):\n    return a * a\n"

BEFORE = {
    "pkg/__init__.py": "", "pkg/ops.py": OPS,
    "pkg/one.py": const(1), "pkg/two.py": const(2), "pkg/c1.py": const(1), "pkg/c2.py": const(3),
    "pkg/helpers.py": SQRT_H,
    "pkg/k_alias.py": kernel("k_alias", BOTH, ALIASES),
    "pkg/k_rebind.py": kernel("k_rebind", "x * C", "C = tl.constexpr(2)\nC = tl.constexpr(1)\n"),
    "pkg/k_consts.py": kernel("k_consts", "x * c1.C - c2.C", "from pkg import c1, c2\n"),
    "pkg/k_star.py": kernel("k_star", "x * C", "from pkg.two import *\nfrom pkg.one import *\n"),
    "pkg/k_redef.py": kernel("k_redef", "h(x)", SQUARE_H[len(HEAD):] + SQRT_H[len(HEAD):]),
    "pkg/k_shadow.py": kernel("k_shadow", "helpers.h(x)", "from pkg import helpers\n"),
    "pkg/k_plain.py": kernel("k_plain", BOTH, ALIASES),
    "pkg/k_quiet.py": kernel("k_quiet", BOTH, ALIASES),
    "pkg/k_cond.py": kernel("k_cond", "x * C", "FLAG = True\nC = tl.constexpr(1)\nif FLAG:\n    C = tl.constexpr(2)\n"),
    "alt/__init__.py": "from . import other as sub\n", "alt/sub.py": SQRT_H, "alt/other.py": SQUARE_H,
    "pkg/k_sub.py": kernel("k_sub", "m.h(x)", "import alt.sub as m\n"),
}
# each hostile edit changes what its kernel computes and leaves the kernel's text alone
HOSTILE = {
    "pkg/k_alias.py": kernel("k_alias", BOTH, SWAPPED),
    "pkg/k_rebind.py": kernel("k_rebind", "x * C", "C = tl.constexpr(1)\nC = tl.constexpr(2)\n"),
    "pkg/c1.py": const(3), "pkg/c2.py": const(1),
    "pkg/k_star.py": kernel("k_star", "x * C", "from pkg.one import *\nfrom pkg.two import *\n"),
    "pkg/k_redef.py": kernel("k_redef", "h(x)", SQRT_H[len(HEAD):] + SQUARE_H[len(HEAD):]),
    "pkg/helpers/__init__.py": SQUARE_H,
    "pkg/k_cond.py": kernel("k_cond", "x * C", "FLAG = True\nif FLAG:\n    C = tl.constexpr(2)\nC = tl.constexpr(1)\n"),
    "pkg/k_sub.py": kernel("k_sub", "m.h(x)", "from alt import sub as m\n"),   # the package's `sub`, not the module
    # the control: the plain change; and a change that is none (comments, a line shift)
    "pkg/k_plain.py": kernel("k_plain", PLAIN, ALIASES),
    "pkg/k_quiet.py": "# moved down\n\n" + kernel("k_quiet", BOTH, ALIASES.rstrip() + "  # the helpers\n"),
}
SEEN = {f"pkg/{k}.py::{k}" for k in ("k_alias", "k_rebind", "k_consts", "k_star", "k_redef", "k_shadow", "k_cond",
                                      "k_sub", "k_plain")}


def report(repo, *args: str, env: dict | None = None) -> dict:
    p = ptxdiff(["diff", "HEAD~1", "HEAD", "-q", "--format", "json", *args], repo, env=env)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def verdicts(found: dict) -> dict[str, set[str]]:
    return {k: {r["verdict"] for r in rows} for k, rows in rows_by_kernel(found).items()}


def test_every_change_to_what_a_kernel_reads_is_seen_by_diff(tmp_path, cache):
    repo = make_repo(tmp_path, BEFORE)
    commit(repo, "the same text, other kernels", HOSTILE)
    got = verdicts(report(repo))
    # alt/sub.py's h, which k_sub called before and no kernel calls after, is a kernel of its own now,
    # as a discovery of each whole side says (a stored update from the other side hid it, 957329a)
    assert got.pop("alt/sub.py::h") == {"added"}, got
    assert set(got) == SEEN, got                          # k_quiet's comments and line shift are no change
    assert all(v == {"structural"} for v in got.values()), got


# -- one class (swapped import aliases) through every way ptxdiff is run -----------------------

ALIAS_FILES = {"pkg/__init__.py": "", "pkg/ops.py": OPS, "pkg/k.py": kernel("k", BOTH, ALIASES)}
KID = "pkg/k.py::k"


@pytest.mark.parametrize("edit", [SWAPPED, None], ids=["aliases swapped", "control: plain change"])
def test_swapped_aliases_are_seen_by_git_diff_the_push_gate_and_ci(tmp_path, cache, capsys, edit):
    repo, bare = pushed_repo(tmp_path, capsys, ALIAS_FILES)
    changed = kernel("k", BOTH, edit) if edit else kernel("k", PLAIN, ALIASES)
    commit(repo, "k", {"pkg/k.py": changed})

    # the diff driver under real `git diff`
    proc = git(repo, "diff", "HEAD~1", "HEAD", check=False, env={"PTXDIFF_FORCE": "1"})
    assert proc.returncode == 0, proc.stderr
    (line,) = kernel_lines(proc.stdout)
    assert line.startswith(f"ptxdiff sm_90 {KID} ") and " structural" in line, line

    # the pre-push gate, a real push to a bare remote
    pushed = git(repo, "push", "origin", "main", check=False)
    assert pushed.returncode != 0 and KID in pushed.stderr and "structural" in pushed.stderr, pushed.stderr
    assert git(bare, "rev-parse", "main").stdout != git(repo, "rev-parse", "HEAD").stdout

    # ptxdiff ci
    base = git(repo, "rev-parse", "HEAD~1").stdout.strip()
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--base", base, "--head", "HEAD", "--target", "sm_90",
                           "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc == 1, err
    ci = json.loads((tmp_path / "r.json").read_text())
    assert verdicts(ci) == {KID: {"structural"}}
    assert "structural" in (tmp_path / "c.md").read_text()


# -- the cache serves an entry only for the source it was built from ---------------------------

TWO = {"pkg/__init__.py": "", "pkg/ops.py": OPS,
       "pkg/a.py": kernel("a_kernel", BOTH, ALIASES), "pkg/b.py": kernel("b_kernel", "x * 2.0")}
TWO_NEW = {"pkg/a.py": kernel("a_kernel", PLAIN, ALIASES), "pkg/b.py": kernel("b_kernel", "x * 2.0 + 1.0")}


def forge(source: bytes, key: str, named: str | None = None) -> bytes:
    """An entry with another kernel's results, under `key`: the envelope says `key`; `named`: each
    result also claims to be built from that fingerprint's source (b_kernel's)."""
    entry = json.loads(gzip.decompress(source))
    if named is not None:
        entry["value"] = [{**r, "source": source_hash(named, "pkg/b.py::b_kernel", 90, r.get("key"), r.get("spec"))}
                          for r in entry["value"]]
    return gzip.compress(json.dumps({**entry, "key": key}).encode())


@pytest.mark.parametrize("tier", ["local", "shared"])
def test_an_entry_forged_under_another_kernels_key_is_compiled_again(tmp_path, cache, tier):
    # with a shared tier the key's toolchain part is the portable one: every run here has it
    target = cache if tier == "local" else tmp_path / "shared"
    env = None if tier == "local" else {"PTXDIFF_REMOTE_CACHE": f"file://{target}"}
    repo = make_repo(tmp_path, TWO)
    commit(repo, "both change", TWO_NEW)
    report(repo, "--", "pkg/a.py", env=env)
    of_a = cache_entries(cache)
    true = verdicts(report(repo, env=env))
    assert true == {"pkg/a.py::a_kernel": {"structural"}, "pkg/b.py::b_kernel": {"structural"}}
    of_b = [p for p in cache_entries(cache) if p not in of_a]
    assert len(of_a) == 2 and len(of_b) == 2                # old and new side of each
    a_entry, sides = of_a[0].read_bytes(), sides_of(of_b)
    # both sides of b get the same (a's old) results: served, b would read `identical`
    forged = {name: forge(a_entry, name.split("/")[1].split(".")[0]) for name in sides}
    for path in cache_entries(cache):
        path.unlink()
    write(target, forged)
    again = report(repo, env=env)
    assert verdicts(again) == true
    assert {r["cache"] for r in rows_by_kernel(again)["pkg/b.py::b_kernel"]} == {"compiled"}
    # the control: the same forgery naming b's source is served, and b reads `identical`
    # (so what refused the first one is the source check)
    renamed = {name: forge(a_entry, name.split("/")[1].split(".")[0], named=fp) for name, fp in sides.items()}
    for path in set(cache_entries(cache) + cache_entries(target)):
        path.unlink()
    write(target, renamed)
    control = report(repo, env=env)
    assert verdicts(control) == {**true, "pkg/b.py::b_kernel": {"identical"}}, control["messages"]


def fingerprint(files: dict[str, str], kid: str) -> str:
    return discover(FileSet({p: t.encode() for p, t in files.items()})).kernels[kid].fingerprint


def sides_of(entries: list) -> dict[str, str]:
    """Entry name -> the fingerprint of the side of b_kernel it was compiled for."""
    kid = "pkg/b.py::b_kernel"
    prints = [fingerprint(TWO, kid), fingerprint({**TWO, **TWO_NEW}, kid)]
    out = {}
    for path in entries:
        results = json.loads(gzip.decompress(path.read_bytes()))["value"]
        out[path.parent.name + "/" + path.name] = next(
            fp for fp in prints
            if results[0]["source"] == source_hash(fp, kid, 90, results[0].get("key"), results[0].get("spec")))
    return out


def test_a_module_that_resolves_two_ways_blocks_with_one_line(tmp_path, cache):
    files = {"util.py": SQRT_H, "src/lib/__init__.py": "", "ops/k.py": kernel("k", "h(x)", "from util import h\n")}
    repo = make_repo(tmp_path, files)
    commit(repo, "a src/ module of the same name", {"src/util.py": SQUARE_H})   # the kernel's file is untouched
    p = ptxdiff(["diff", "HEAD~1", "HEAD", "-q", "--format", "json", "--check"], repo)
    assert p.returncode == 1, p.stderr
    (row,) = rows_by_kernel(json.loads(p.stdout))["ops/k.py::k"]
    assert row["kernel"] == "ops/k.py::k" and row["verdict"] == "failed" and row["blocking"], row
    assert "`util` is util.py or src/util.py" in row["error"] and "python_path" in row["error"]
    # named in python_path, the root is not ambiguous: the kernel reads src/util.py's h, a change
    (tmp_path / "roots.toml").write_text('python_path = ["src"]\n')
    named = verdicts(report(repo, "--config", str(tmp_path / "roots.toml")))
    assert named == {"ops/k.py::k": {"structural"}}, named
