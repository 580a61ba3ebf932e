"""Launch values behind data (issue 41): a constexpr a launch site passes through `**CFG`, a
module dict, a second call site, a conditional, a tuple unpacking, `functools.partial`, kwargs
built in a loop, or computes (`triton.next_power_of_2(min(n, 4096))`) is covered as the literal
case is. Each case is built the way a careless author or an attacker would, judged by
`ptxdiff diff --check` and a real `git push` through the pre-push hook (the held-out case by the
git diff driver too), each beside its control: the same change made plainly, which blocks."""

from __future__ import annotations

import json
import os

import pytest

from helpers import HEADER, commit, git, install, kernel_lines, make_repo, run_main
from helpers import gate_judged as judged

pytestmark = pytest.mark.integration

K = "ops/k.py::k"


def flagged(site: str, *, other: str = "x + 1.0", top: str = "", default: str = "") -> str:
    """A kernel whose FLAG picks `x * 2.0` or `other`, launched by `run` with `site` (its body
    lines, indented by four)."""
    return HEADER + top + f'''

@triton.jit
def k(x_ptr, y_ptr, n, FLAG: tl.constexpr{default}, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if FLAG:
        y = x * 2.0
    else:
        y = {other}
    tl.store(y_ptr + offs, y, mask=mask)


def run(x, y):
    n = x.numel()
{site}
'''


def sized(site: str, body: str = "    y = x * 2.0", top: str = "") -> str:
    """A kernel of one block size (no default), launched by `run` with `site`."""
    return HEADER + top + f'''

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
{body}
    tl.store(y_ptr + offs, y, mask=mask)


def run(x, y):
    n = x.numel()
{site}
'''


# the held-out case: the body's new branch runs for every block size but 1024
BRANCHED = "    if BLOCK == 1024:\n        y = x * 2.0\n    else:\n        y = tl.exp(x)"
LITERAL = "    k[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)"
COMPUTED = "    B = triton.next_power_of_2(min(n, 4096))\n    grid = (triton.cdiv(n, B),)\n    k[grid](x, y, n, BLOCK=B)"


def rows(report: dict) -> list[dict]:
    return [r for r in report["kernels"] if r["kernel"] == K]


def assert_blocked(rc: int, report: dict, push_rc: int, stderr: str) -> list[dict]:
    """Both the check and the push blocked, on a structural row; the kernel's rows."""
    assert rc == 1, [(r["spec"], r["verdict"]) for r in rows(report)]
    assert push_rc != 0, stderr
    assert any(r["verdict"] == "structural" and r["blocking"] for r in rows(report)), rows(report)
    return rows(report)


def test_the_held_out_computed_block_size_compiles_every_branch_and_blocks(tmp_path, capsys):
    """Exactly as stated: the site passed 1024, now `B = triton.next_power_of_2(min(n, 4096))`;
    the body's change is under `if BLOCK == 1024: old else: new`. It read `identical`, with
    `launch: BLOCK 1024 -> <i32>` and 1024 the one value compiled."""
    base = sized(LITERAL)
    # control: the change made plainly, at the value the site passes
    assert_blocked(*judged(tmp_path / "plain", capsys, base, sized(LITERAL, "    y = tl.exp(x)")))
    got = assert_blocked(*judged(tmp_path / "held", capsys, base, sized(COMPUTED, BRANCHED)))
    blocks = {r["spec_detail"]["constexprs"]["BLOCK"]: r["verdict"] for r in got}
    assert blocks[1024] == "identical" and "structural" in {v for b, v in blocks.items() if b != 1024}, blocks
    assert all(r["launch"] and "BLOCK 1024 -> <..4096>" in r["launch"] for r in got)
    # the same through the git diff driver
    repo = make_repo(tmp_path / "driver", {"ops/k.py": base})
    install(repo, capsys)
    commit(repo, "change", {"ops/k.py": sized(COMPUTED, BRANCHED)})
    diff = git(repo, "diff", "HEAD~1", "HEAD", env={**os.environ, "PTXDIFF_FORCE": "1"})
    lines = [ln for ln in kernel_lines(diff.stdout) if K in ln]
    assert any("structural" in ln and "BLOCK=1024" not in ln for ln in lines), diff.stdout


def test_a_computed_block_size_on_both_sides_compiles_every_branch(tmp_path, capsys):
    got = assert_blocked(*judged(tmp_path, capsys, sized(COMPUTED), sized(COMPUTED, BRANCHED)))
    assert len({r["spec_detail"]["constexprs"]["BLOCK"] for r in got}) > 1


@pytest.mark.parametrize("cfg", ["dict(FLAG={})", '{{"FLAG": {}}}'], ids=["dict-call", "dict-literal"])
def test_a_flag_flipped_through_kwargs_of_a_module_dict_blocks(tmp_path, capsys, cfg):
    site = "    k[(1,)](x, y, n, **CFG)"
    base = flagged(site, top=f"CFG = {cfg.format(True)}\n")
    # control: the flag flipped at the call site itself
    assert_blocked(*judged(tmp_path / "plain", capsys, flagged("    k[(1,)](x, y, n, FLAG=True)"),
                           flagged("    k[(1,)](x, y, n, FLAG=False)")))
    got = assert_blocked(*judged(tmp_path / "kwargs", capsys, base, flagged(site, top=f"CFG = {cfg.format(False)}\n")))
    assert any("FLAG True -> False" in (r["launch"] or "") for r in got)


@pytest.mark.parametrize(("old_top", "new_top", "old_key", "new_key"), [
    ('MODES = {"fast": True, "exact": False}', 'MODES = {"fast": False, "exact": False}', "fast", "fast"),
    ('MODES = {"fast": True, "exact": False}', 'MODES = {"fast": True, "exact": False}', "fast", "exact"),
], ids=["dict-edited", "key-changed"])
def test_a_flag_flipped_through_a_module_dict_entry_blocks(tmp_path, capsys, old_top, new_top, old_key, new_key):
    base = flagged(f'    k[(1,)](x, y, n, FLAG=MODES["{old_key}"])', top=old_top + "\n")
    change = flagged(f'    k[(1,)](x, y, n, FLAG=MODES["{new_key}"])', top=new_top + "\n")
    got = assert_blocked(*judged(tmp_path, capsys, base, change))
    assert any("FLAG True -> False" in (r["launch"] or "") for r in got)


def test_a_module_dict_the_module_changes_is_not_read_as_its_literal(tmp_path, capsys):
    """`MODES["fast"] = False` somewhere in the module: the entry is not a fact, both values
    are compiled, so a change under the other branch is seen."""
    top = 'MODES = {"fast": True}\n\n\ndef slow():\n    MODES["fast"] = False\n'
    site = '    k[(1,)](x, y, n, FLAG=MODES["fast"])'
    assert_blocked(*judged(tmp_path, capsys, flagged(site, top=top), flagged(site, top=top, other="tl.exp(x)")))


def test_a_second_call_site_that_passes_the_other_value_compiles_both(tmp_path, capsys):
    """The old kernel was launched with FLAG=True only; the branch changes the code under
    `not FLAG` and adds a site that passes False: that row was `added`, which does not block."""
    one = "    k[(1,)](x, y, n, FLAG=True)"
    two = one + "\n\n\ndef run_exact(x, y):\n    k[(1,)](x, y, x.numel(), FLAG=False)"
    # control: the one site flips to False
    assert_blocked(*judged(tmp_path / "plain", capsys, flagged(one),
                           flagged("    k[(1,)](x, y, n, FLAG=False)", other="tl.exp(x)")))
    got = assert_blocked(*judged(tmp_path / "second", capsys, flagged(one), flagged(two, other="tl.exp(x)")))
    by_flag = {r["spec_detail"]["constexprs"]["FLAG"]: r["verdict"] for r in got}
    assert by_flag == {True: "identical", False: "structural"}, by_flag


def test_a_site_that_leaves_a_constexpr_to_its_default_beside_one_that_passes_it(tmp_path, capsys):
    """One site passes FLAG=False, another leaves it to its default (True): both are compiled."""
    sites = "    k[(1,)](x, y, n)\n\n\ndef run_exact(x, y):\n    k[(1,)](x, y, x.numel(), FLAG=False)"
    got = assert_blocked(*judged(tmp_path, capsys, flagged(sites, default=" = True"),
                                 flagged(sites, default=" = True", other="tl.exp(x)")))
    assert {r["spec_detail"]["constexprs"]["FLAG"] for r in got} >= {True, False}


def test_a_conditional_at_the_call_site_compiles_both_values(tmp_path, capsys):
    base = sized(LITERAL, "    if BLOCK < 1024:\n        y = x + 1.0\n    else:\n        y = x * 2.0")
    change = sized("    BLOCK = 1024 if n > 4096 else 256\n    k[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)",
                   "    if BLOCK < 1024:\n        y = tl.exp(x)\n    else:\n        y = x * 2.0")
    got = assert_blocked(*judged(tmp_path, capsys, base, change))
    by_block = {r["spec_detail"]["constexprs"]["BLOCK"]: r["verdict"] for r in got}
    assert by_block[256] == "structural" and by_block[1024] == "identical", by_block


def test_a_local_assigned_in_each_branch_is_each_value(tmp_path, capsys):
    site = ("    if n > 4096:\n        BLOCK = 1024\n    else:\n        BLOCK = 256\n"
            "    k[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK)")
    body = "    if BLOCK < 1024:\n        y = {}\n    else:\n        y = x * 2.0"
    got = assert_blocked(*judged(tmp_path, capsys, sized(site, body.format("x + 1.0")),
                                 sized(site, body.format("tl.exp(x)"))))
    assert {r["spec_detail"]["constexprs"]["BLOCK"] for r in got} == {256, 1024}


def test_a_tuple_unpacked_launch_value_compiles_every_branch(tmp_path, capsys):
    pick = "\n\ndef pick(n):\n    return (1024, 4) if n > 4096 else (256, 2)\n"
    site = "    BLOCK, num_warps = pick(n)\n    k[(triton.cdiv(n, BLOCK),)](x, y, n, BLOCK=BLOCK, num_warps=num_warps)"
    got = assert_blocked(*judged(tmp_path, capsys, sized(LITERAL), sized(site, BRANCHED, top=pick)))
    assert len({r["spec_detail"]["constexprs"]["BLOCK"] for r in got}) > 1


def test_a_flag_flipped_through_functools_partial_blocks(tmp_path, capsys):
    site = "    launch = functools.partial(k[(1,)], FLAG={})\n    launch(x, y, n)"
    top = "import functools\n"
    got = assert_blocked(*judged(tmp_path, capsys, flagged(site.format(True), top=top),
                                 flagged(site.format(False), top=top)))
    assert any("FLAG True -> False" in (r["launch"] or "") for r in got)


def test_kwargs_built_in_a_loop_may_pass_any_constexpr(tmp_path, capsys):
    """`**kw` that offline reading cannot tell may override FLAG's default: both values of FLAG
    are compiled, so a change under the branch the default does not take is seen."""
    site = "    kw = {}\n    for name in ('FLAG',):\n        kw[name] = False\n    k[(1,)](x, y, n, **kw)"
    got = assert_blocked(*judged(tmp_path, capsys, flagged(site, default=" = True"),
                                 flagged(site, default=" = True", other="tl.exp(x)")))
    assert {r["spec_detail"]["constexprs"]["FLAG"] for r in got} >= {True, False}


def test_ptxdiff_ci_sees_the_held_out_case_and_a_flag_behind_kwargs(tmp_path, capsys, monkeypatch):
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    site = "    k[(1,)](x, y, n, **CFG)"
    repo = make_repo(tmp_path, {"ops/k.py": sized(LITERAL), "ops/f.py": flagged(site, top="CFG = dict(FLAG=True)\n")})
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    commit(repo, "change", {"ops/k.py": sized(COMPUTED, BRANCHED), "ops/f.py": flagged(site, top="CFG = dict(FLAG=False)\n")})
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--base", base, "--head", "HEAD",
                           "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc == 1, err
    got = json.loads((tmp_path / "r.json").read_text())["kernels"]
    for kid in (K, "ops/f.py::k"):
        assert any(r["kernel"] == kid and r["verdict"] == "structural" and r["blocking"] for r in got), got


def test_a_flag_flipped_through_a_bound_launcher_blocks(tmp_path, capsys):
    site = "    launch = k[(1,)]\n    launch(x, y, n, FLAG={})"
    got = assert_blocked(*judged(tmp_path, capsys, flagged(site.format(True)), flagged(site.format(False))))
    assert any("FLAG True -> False" in (r["launch"] or "") for r in got)


TILED = HEADER + '''

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    a = tl.load(x_ptr + rows[:, None] * 16 + tl.arange(0, 16)[None, :])
    b = tl.load(x_ptr + tl.arange(0, 16)[:, None] + rows[None, :] * 16)
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc += tl.dot(a, b)   # [BLOCK_M, BLOCK_M]: the kernel takes BLOCK_N == BLOCK_M only
    y = {body}
    tl.store(y_ptr + rows[:, None] * BLOCK_N + cols[None, :], y)


def run(x, y):
    n = x.numel()
    BLOCK = 64 if n > 4096 else 32
    k[(1,)](x, y, n, BLOCK_M=BLOCK, BLOCK_N=BLOCK)
'''


def test_constexprs_passed_one_local_are_compiled_together(tmp_path, capsys):
    """`BLOCK_M=BLOCK, BLOCK_N=BLOCK` launches 64/64 and 32/32, never 64/32: crossed, the values
    made shapes the kernel does not take, rows failed and blocked whatever the change."""
    got = assert_blocked(*judged(tmp_path, capsys, TILED.format(body="acc * 2.0"), TILED.format(body="tl.exp(acc)")))
    sizes = [(r["spec_detail"]["constexprs"]["BLOCK_M"], r["spec_detail"]["constexprs"]["BLOCK_N"]) for r in got]
    assert sorted(set(sizes)) == [(32, 32), (64, 64)], sizes
    assert all(r["verdict"] == "structural" and not r.get("error") for r in got), got


SQUARE = HEADER + '''

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    x = tl.load(x_ptr + offs)
    if BLOCK_M != BLOCK_N:
        x = {body}
    tl.store(y_ptr + offs, x)


def run(x, y):
    n = x.numel()
    BLOCK = 64 if n > 4096 else 32
    k[(1,)](x, y, n, BLOCK_M=BLOCK, BLOCK_N=BLOCK)
'''


def test_a_change_guarded_by_constexprs_passed_one_value_compiles_them_crossed(tmp_path, capsys):
    """A branch that passes one local to both and changes only what runs where they differ: no
    launch of its own reaches the change, and the gate still sees it (the guard rule crosses them)."""
    got = assert_blocked(*judged(tmp_path, capsys, SQUARE.format(body="x * 2.0"), SQUARE.format(body="tl.exp(x)")))
    crossed = {(r["spec_detail"]["constexprs"]["BLOCK_M"], r["spec_detail"]["constexprs"]["BLOCK_N"]): r["verdict"]
               for r in got}
    assert crossed[(64, 32)] == crossed[(32, 64)] == "structural" and crossed[(64, 64)] == "identical", crossed


TRAPPED = HEADER + '''

@triton.jit
def k(x_ptr, y_ptr, n, FLAG: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
{trap}    if FLAG:
        y = x * 2.0
    else:
        y = x + 1.0
    tl.store(y_ptr + offs, y{read})
'''


def test_a_branch_that_breaks_one_way_of_a_flag_is_still_compiled_that_way(tmp_path, capsys):
    """Only `if not FLAG:` binds `z`, read after: the new side compiles with FLAG false only, and
    read alone that narrows the guess (hints.required_flags). The base compiles both ways, so both
    are compiled on both sides: the new side's FLAG=True fails where the old one compiled, and the
    push is blocked."""
    base = TRAPPED.format(trap="", read="")
    trapped = TRAPPED.format(trap="    if not FLAG:\n        z = 0.0\n", read=" + z")
    rc, report, push_rc, _ = judged(tmp_path, capsys, base, trapped)
    got = {r["spec_detail"]["constexprs"]["FLAG"]: r["verdict"] for r in rows(report)}
    assert rc == 1 and push_rc != 0 and got.get(True) == "failed", got
