"""The base decides what weakens the gate, and guesses cover what a change can reach: each case
built the way a hostile or careless author would (a pin, `max_specs`, a recording or
`python_path` only the branch has; a change under two flags of three; a launch value offline
reading cannot tell; flags reordered), judged by `ptxdiff diff --check` and a real `git push`
through the pre-push hook, some by `ptxdiff ci` and the git diff driver too; each with a control
where the same change, made plainly, is seen."""

from __future__ import annotations

import json
import os

import pytest

from helpers import HEADER, commit, git, head, install, kernel_lines, make_repo, pushed_repo, run_main

pytestmark = pytest.mark.integration

K = "ops/k.py::k"


def guarded(body: str, block: int = 256, site: str = "BLOCK=256") -> str:
    """A kernel whose `body` runs only when BLOCK > 128, launched by a wrapper passing `site`."""
    return HEADER + f'''
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if BLOCK > 128:
        y = {body}
    else:
        y = x * 2.0
    tl.store(out_ptr + offs, y, mask=offs < n)


def run(x, out):
    k[(1,)](x, out, x.numel(), {site})
'''


def flags(body: str, params: str = "A: tl.constexpr, B: tl.constexpr, C: tl.constexpr") -> str:
    """A kernel of three flags (no launch site: they are guessed) with `body` under `if A: if not B:`."""
    return HEADER + f'''
@triton.jit
def k(x_ptr, out_ptr, n, {params}):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if A:
        if not B:
            x = {body}
    if C:
        x = x + 1.0
    tl.store(out_ptr + offs, x, mask=offs < n)
'''


def check(repo, capsys) -> tuple[int, dict]:
    """`ptxdiff diff --check` of the last commit: (exit code, JSON report)."""
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "-q", "HEAD~1", "HEAD"], capsys)
    assert rc in (0, 1), err
    return rc, json.loads(out)


def verdicts(report: dict) -> set[str]:
    return {r["verdict"] for r in report["kernels"] if r["kernel"] == K}


def judged(tmp_path, capsys, name: str, base: dict, change: dict) -> tuple[int, dict, int, str]:
    """A repository at `base`, pushed; `change` committed on it: the diff --check exit code and
    report, and the pre-push hook's exit code and stderr."""
    repo, _ = pushed_repo(tmp_path / name, capsys, base)
    commit(repo, "change", change)
    rc, report = check(repo, capsys)
    push = git(repo, "push", "-q", "origin", "main", check=False)
    return rc, report, push.returncode, push.stderr


def assert_blocked(rc: int, report: dict, push_rc: int, stderr: str, *want: str) -> None:
    assert rc == 1, report["kernels"]
    assert push_rc != 0, stderr
    assert set(want) <= verdicts(report), report["kernels"]


PIN = '[kernels."ops/k.py::k".constexprs]\nBLOCK = 128\n'


def test_a_pin_only_the_branch_has_does_not_hide_a_change_from_the_gate(tmp_path, capsys):
    base = {"ops/k.py": guarded("x * 3.0")}
    # control: the change made plainly is seen
    assert_blocked(*judged(tmp_path, capsys, "plain", base, {"ops/k.py": guarded("tl.exp(x)")}), "structural")
    # the branch pins BLOCK to the side its change is not on: the gate compiles the base's word
    # (no pin: the call site's 256) and says the pin, which contradicts the call site, and blocks
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "pinned", base,
                                         {"ops/k.py": guarded("tl.exp(x)"), "ptxdiff.toml": PIN})
    assert_blocked(rc, report, push_rc, stderr, "structural", "failed")
    (said,) = {r["error"] for r in report["kernels"] if r["verdict"] == "failed"}
    assert said.startswith("config ptxdiff.toml pins BLOCK = 128 where the launch site passes 256 (ops/k.py:")
    structural = [r for r in report["kernels"] if r["verdict"] == "structural"]
    assert structural and all(r["blocking"] for r in structural)
    assert all(r["spec_detail"]["constexprs"]["BLOCK"] == 256 for r in structural)
    assert any("used for the report" in m and "not the gate" in m for m in report["messages"])
    assert "pins BLOCK = 128" in stderr


def test_the_issue_s_pin_with_a_new_call_site_value_blocks(tmp_path, capsys):
    """The call site now passes 256, the branch pins the old 128: the body change under BLOCK > 128
    is compiled (today's 'identical'), and the pin is said."""
    base = {"ops/k.py": guarded("x * 3.0", site="BLOCK=128")}
    change = {"ops/k.py": guarded("tl.exp(x)", site="BLOCK=256"), "ptxdiff.toml": PIN}
    assert_blocked(*judged(tmp_path, capsys, "pinned", base, change), "structural", "failed")


def test_a_pin_the_base_has_still_compiles_the_call_site_s_values(tmp_path, capsys):
    """A pin on the base that the branch's new call site contradicts (a careless author): the
    gate compiles the call site's value as well, and the stale pin blocks."""
    base = {"ops/k.py": guarded("x * 3.0", site="BLOCK=128"), "ptxdiff.toml": PIN}
    change = {"ops/k.py": guarded("tl.exp(x)", site="BLOCK=256")}
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "stale", base, change)
    assert_blocked(rc, report, push_rc, stderr, "structural", "failed")
    assert any(r["verdict"] == "structural" and r["spec_detail"]["constexprs"]["BLOCK"] == 256 for r in report["kernels"])


def test_max_specs_only_the_branch_lowers_does_not_lower_what_the_gate_compiles(tmp_path, capsys):
    base = {"ops/k.py": flags("x * 3.0")}
    under_c = {"ops/k.py": flags("x * 3.0").replace("x = x + 1.0", "x = tl.exp(x) + 1.0")}   # seen by any cover
    assert_blocked(*judged(tmp_path, capsys, "plain", base, under_c), "structural")
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "narrowed", base,
                                         {**under_c, "ptxdiff.toml": "max_specs = 1\n"})
    assert_blocked(rc, report, push_rc, stderr, "structural")
    assert any("max_specs" in m and "the base side's" in m for m in report["messages"])


def recording(block: int) -> str:
    line = {"kernel": K, "params": ["x_ptr", "out_ptr", "n", "BLOCK"],
            "signature": {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}, "constexprs": {"BLOCK": block},
            "divisible_by_16": ["x_ptr", "out_ptr"], "num_warps": 4, "num_stages": 3, "options": {},
            "autotune": None, "via": "interpreter", "count": 1}
    return json.dumps(line) + "\n"


def test_a_recording_only_the_branch_has_does_not_decide_the_gate(tmp_path, capsys):
    base = {"ops/k.py": guarded("x * 3.0")}
    change = {"ops/k.py": guarded("tl.exp(x)"), ".ptxdiff/launches.jsonl": recording(128)}
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "recorded", base, change)
    assert_blocked(rc, report, push_rc, stderr, "structural", "failed")
    assert any(r["error"] and r["error"].startswith("recorded launch (.ptxdiff/launches.jsonl) pins BLOCK = 128")
               for r in report["kernels"])
    # a recording that agrees with the call site is knowledge: nothing said, the change seen
    agreeing = {"ops/k.py": guarded("tl.exp(x)"), ".ptxdiff/launches.jsonl": recording(256)}
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "agreeing", base, agreeing)
    assert_blocked(rc, report, push_rc, stderr, "structural")
    assert "failed" not in verdicts(report)


def helper_kernel() -> str:
    return HEADER + '''from helpers import f


@triton.jit
def k(x_ptr, out_ptr, n):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, f(x), mask=offs < n)
'''


def helper(body: str) -> str:
    return HEADER + f"@triton.jit\ndef f(x):\n    return {body}\n"


def test_python_path_only_the_branch_sets_does_not_decide_the_gate(tmp_path, capsys):
    """The branch points `python_path` at a copy of the old helper: the gate resolves imports as
    the base does, so the changed helper that Python imports is compiled."""
    base = {"ops/k.py": helper_kernel(), "helpers.py": helper("x * 2.0")}
    assert_blocked(*judged(tmp_path, capsys, "plain", base, {"helpers.py": helper("tl.exp(x)")}), "structural")
    change = {"helpers.py": helper("tl.exp(x)"), "shadow/helpers.py": helper("x * 2.0"),
              "ptxdiff.toml": 'python_path = ["shadow"]\n'}
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "shadowed", base, change)
    assert_blocked(rc, report, push_rc, stderr, "structural")
    assert any("python_path" in m for m in report["messages"])


def test_a_change_under_two_of_three_flags_is_compiled(tmp_path, capsys):
    base = {"ops/k.py": flags("x * 3.0")}
    # control: the change outside the flags
    plain = {"ops/k.py": flags("x * 3.0").replace("    if C:", "    x = tl.exp(x)\n    if C:")}
    assert_blocked(*judged(tmp_path, capsys, "plain", base, plain), "structural")
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "nested", base, {"ops/k.py": flags("tl.exp(x)")})
    assert_blocked(rc, report, push_rc, stderr, "structural")
    structural = [r["spec_detail"]["constexprs"] for r in report["kernels"] if r["verdict"] == "structural"]
    assert structural and all(c["A"] is True and c["B"] is False for c in structural)
    # a covering set, not all 8 combinations
    assert len([r for r in report["kernels"] if r["kernel"] == K]) < 8


def computed(other: str) -> str:
    """BLOCK computed at the launch site (offline unknown), with a default, compared with 128."""
    return HEADER + f'''
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if BLOCK == 128:
        y = x * 2.0
    else:
        y = {other}
    tl.store(out_ptr + offs, y, mask=offs < n)


def run(x, out):
    n = x.numel()
    k[(1,)](x, out, n, BLOCK=triton.next_power_of_2(min(n, 256)))
'''


def test_a_launch_value_computed_at_the_site_covers_both_branches(tmp_path, capsys, monkeypatch):
    base = {"ops/k.py": computed("x * 3.0")}
    # control: the change where the default compiles it
    plain = {"ops/k.py": computed("x * 3.0").replace("y = x * 2.0", "y = tl.exp(x)")}
    assert_blocked(*judged(tmp_path, capsys, "plain", base, plain), "structural")
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "computed", base, {"ops/k.py": computed("tl.exp(x)")})
    assert_blocked(rc, report, push_rc, stderr, "structural")
    blocks = {r["spec_detail"]["constexprs"]["BLOCK"] for r in report["kernels"] if r["spec_detail"]}
    assert 128 in blocks and len(blocks) > 1


def reordered(then: str, other: str, params: str) -> str:
    return HEADER + f'''
@triton.jit
def k(x_ptr, out_ptr, n, {params}):
    offs = tl.arange(0, 128)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if TRANSPOSE_B:
        x = {then}
    else:
        x = {other}
    if FLAG:
        x = x + 1.0
    tl.store(out_ptr + offs, x, mask=offs < n)
'''


def test_rows_pair_by_equal_flag_values_never_across_a_flag(tmp_path, capsys):
    """Parameters reordered (every spec key changes) and the flag's branches swapped: each row
    compares equal flag values, so every row is the change it is (structural)."""
    old_params, new_params = "TRANSPOSE_B: tl.constexpr, FLAG: tl.constexpr", "FLAG: tl.constexpr, TRANSPOSE_B: tl.constexpr"
    base = {"ops/k.py": reordered("tl.exp(x)", "tl.sqrt(x)", old_params)}
    change = {"ops/k.py": reordered("tl.sqrt(x)", "tl.exp(x)", new_params)}
    rc, report, push_rc, stderr = judged(tmp_path, capsys, "swapped", base, change)
    assert_blocked(rc, report, push_rc, stderr, "structural")
    rows = [r for r in report["kernels"] if r["kernel"] == K]
    assert len(rows) == 4 and {r["verdict"] for r in rows} == {"structural"}, [(r["spec"], r["verdict"])
                                                                               for r in rows]
    for r in rows:   # a label shows `FLAG=True -> False`, or both labels whole, where values differ
        words = r["spec"].split()
        assert "True" not in words and "False" not in words, r["spec"]
        values = dict(w.split("=") for w in words if "=" in w)
        assert len(values) == len({w for w in words if "=" in w}), r["spec"]


def test_ci_and_the_diff_driver_see_a_pin_only_the_branch_has(tmp_path, capsys, monkeypatch):
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    repo = make_repo(tmp_path, {"ops/k.py": guarded("x * 3.0")})
    install(repo, capsys)
    base = head(repo)
    commit(repo, "plain", {"ops/k.py": guarded("tl.exp(x)")})
    plain = head(repo)
    commit(repo, "pinned", {"ptxdiff.toml": PIN})
    for rev, want in ((plain, {"structural"}), ("HEAD", {"structural", "failed"})):
        rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--base", base, "--head", rev,
                               "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")],
                              capsys)
        assert rc == 1, err
        assert want <= verdicts(json.loads((tmp_path / "r.json").read_text()))
        diff = git(repo, "diff", base, rev, env={"PTXDIFF_FORCE": "1", **os.environ}, check=False)
        lines = kernel_lines(diff.stdout)
        assert any(K in ln and "structural" in ln for ln in lines), lines
