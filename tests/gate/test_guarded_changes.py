"""A change nested under three or four guessed flags is compiled with every combination of the
flags that guard it (a pairwise covering set alone misses it: tests/discovery/test_guards.py),
judged by `ptxdiff diff --check` and a real `git push` through the pre-push hook; the control,
the same change outside the flags, is seen too, and an unrelated flag stays pairwise."""

from __future__ import annotations

import json

import pytest

from helpers import HEADER, commit, git, pushed_repo, run_main

pytestmark = pytest.mark.integration

K = "ops/k.py::k"


def nested(conditions: list[str], body: str, flags: str, outside: str = "x") -> str:
    """A kernel of guessed boolean `flags` whose `body` runs under `conditions`, nested."""
    params = ", ".join(f"{f}: tl.constexpr" for f in flags)
    inner = "".join(f"{'    ' * (i + 1)}if {c}:\n" for i, c in enumerate(conditions))
    pad = "    " * (len(conditions) + 1)
    return HEADER + f'''
@triton.jit
def k(x_ptr, out_ptr, n, {params}):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs, mask=offs < n)
    x = {outside}
{inner}{pad}x = {body}
    if {flags[-1]}:
        x = x + 1.0
    tl.store(out_ptr + offs, x, mask=offs < n)
'''


def judged(tmp_path, capsys, base: str, change: str) -> tuple[int, dict, int]:
    """`base` pushed to a bare remote, `change` committed: diff --check's exit code and report,
    and the pre-push hook's exit code."""
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": base})
    commit(repo, "change", {"ops/k.py": change})
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "-q", "HEAD~1", "HEAD"], capsys)
    assert rc in (0, 1), err
    return rc, json.loads(out), git(repo, "push", "-q", "origin", "main", check=False).returncode


@pytest.mark.parametrize(("conditions", "flags", "want"), [
    (["not A", "B", "C"], "ABCDE", {"A": False, "B": True, "C": True}),
    (["A", "B", "not C", "not D"], "ABCDEF", {"A": True, "B": True, "C": False, "D": False}),
], ids=["three", "four"])
def test_a_change_under_nested_flags_blocks(tmp_path, capsys, conditions, flags, want):
    base = nested(conditions, "x * 3.0", flags)
    # control: the same change outside the flags
    rc, report, push_rc = judged(tmp_path / "plain", capsys, base, nested(conditions, "x * 3.0", flags, "tl.exp(x)"))
    assert rc == 1 and push_rc != 0, report["kernels"]
    rc, report, push_rc = judged(tmp_path / "nested", capsys, base, nested(conditions, "tl.exp(x)", flags))
    assert rc == 1 and push_rc != 0, report["kernels"]
    rows = [r for r in report["kernels"] if r["kernel"] == K]
    structural = [r["spec_detail"]["constexprs"] for r in rows if r["verdict"] == "structural"]
    assert structural and all(all(c[f] is v for f, v in want.items()) for c in structural), rows
    assert {r["verdict"] for r in rows} <= {"structural", "identical"}
    # every combination of the guarding flags, each pair of the others: fewer than all
    assert len(rows) < 2 ** len(flags)
    seen = {tuple(r["spec_detail"]["constexprs"][f] for f in want) for r in rows}
    assert len(seen) == 2 ** len(want), seen
    notes = [n for r in rows for n in r["spec_detail"]["notes"]]
    assert any(f"every combination of {', '.join(sorted(want))}, which guard the change" in n for n in notes), notes
