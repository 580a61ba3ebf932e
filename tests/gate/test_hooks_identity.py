"""Hooks are part of the kernel (issue 41): removing `reset_to_zero=['c_ptr']` from an autotuned
`atomic_add` kernel changes every result and not a line of PTX; it must not read a plain
`identical` that passes. Judged by `ptxdiff diff --check`, a real `git push` through the
pre-push hook and the git diff driver, beside its control (the kernel's code changed plainly)
and a config list reordered, which is no change. Every other setting, one change each."""

from __future__ import annotations

import json
import os

import pytest

from helpers import HEADER, commit, git, install, kernel_lines, make_repo, pushed_repo, run_main

pytestmark = pytest.mark.integration

K = "ops/k.py::k"
FIRST, SECOND = 'triton.Config({"BLOCK": 128}, num_warps=4)', 'triton.Config({"BLOCK": 256}, num_warps=8)'


def tuned(args: str = 'reset_to_zero=["c_ptr"]', top: str = "", configs: str = f"{FIRST}, {SECOND}",
          add: str = "tl.atomic_add(c_ptr + offs % 16, x, mask=mask)", jit: str = "@triton.jit") -> str:
    """An autotuned kernel that accumulates into c_ptr, with autotune's `args` besides configs and key."""
    return HEADER + top + f'''CONFIGS = [{configs}]


@triton.autotune(configs=CONFIGS, key=["n"]{", " + args if args else ""})
{jit}
def k(x_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    {add}


def run(x, c):
    n = x.numel()
    k[lambda m: (triton.cdiv(n, m["BLOCK"]),)](x, c, n)
'''


def check(repo, capsys) -> tuple[int, list[dict]]:
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "-q", "HEAD~1", "HEAD"], capsys)
    assert rc in (0, 1), err
    return rc, [r for r in json.loads(out)["kernels"] if r["kernel"] == K]


def judged(tmp_path, capsys, base: dict, change: dict) -> tuple[int, list[dict], int, str]:
    repo, _ = pushed_repo(tmp_path, capsys, base)
    commit(repo, "change", change)
    rc, rows = check(repo, capsys)
    push = git(repo, "push", "-q", "origin", "main", check=False)
    return rc, rows, push.returncode, push.stderr


def test_removing_reset_to_zero_blocks_with_the_setting_named(tmp_path, capsys):
    base = {"ops/k.py": tuned()}
    # control: the code itself changed (a store where the kernel accumulated)
    rc, rows, push_rc, _ = judged(tmp_path / "plain", capsys, base,
                                  {"ops/k.py": tuned(add="tl.store(c_ptr + offs % 16, x, mask=mask)")})
    assert rc == 1 and push_rc != 0 and {r["verdict"] for r in rows} == {"structural"}
    rc, rows, push_rc, stderr = judged(tmp_path / "hook", capsys, base, {"ops/k.py": tuned(args="")})
    assert rc == 1, rows
    assert push_rc != 0 and "autotune reset_to_zero ['c_ptr'] -> (none)" in stderr, stderr
    assert len(rows) == 2 and all(r["verdict"] == "structural" and r["blocking"] for r in rows), rows
    assert all(r["why"] == "autotune reset_to_zero ['c_ptr'] -> (none); the code: identical" for r in rows), rows
    assert all(not any(r["delta"].values()) for r in rows)   # not a line of PTX changed
    # under git diff, the driver's line says it
    repo = make_repo(tmp_path / "driver", base)
    install(repo, capsys)
    commit(repo, "change", {"ops/k.py": tuned(args="")})
    diff = git(repo, "diff", "HEAD~1", "HEAD", env={**os.environ, "PTXDIFF_FORCE": "1"})
    lines = [ln for ln in kernel_lines(diff.stdout) if K in ln]
    assert lines and all("structural" in ln and "reset_to_zero" in ln for ln in lines), diff.stdout


def test_reordering_the_config_list_is_no_change(tmp_path, capsys):
    base = {"ops/k.py": tuned(configs=f"{FIRST}, {SECOND}")}
    rc, rows, push_rc, stderr = judged(tmp_path, capsys, base, {"ops/k.py": tuned(configs=f"{SECOND}, {FIRST}")})
    assert rc == 0 and push_rc == 0, (rows, stderr)
    assert all(r["verdict"] == "identical" and not r["blocking"] for r in rows), rows


def test_a_hook_change_blocks_whatever_block_guessed_says(tmp_path, capsys):
    """Every value of these specs is guessed; the hook is a fact of the source."""
    base = {"ops/k.py": tuned(), "ptxdiff.toml": "block_guessed = false\n"}
    rc, rows, push_rc, _ = judged(tmp_path, capsys, base, {"ops/k.py": tuned(args="")})
    assert rc == 1 and push_rc != 0, rows


ZERO = 'def zero_c(nargs):\n    nargs["c_ptr"].zero_()\n\n\n'
PRUNE = "def prune(configs, named_args, **kwargs):\n    return configs\n\n\n"


@pytest.mark.parametrize(("old", "new", "said"), [
    ({"args": 'restore_value=["c_ptr"]'}, {"args": ""}, "autotune restore_value ['c_ptr'] -> (none)"),
    ({"args": "pre_hook=zero_c", "top": ZERO}, {"args": "pre_hook=zero_c", "top": ZERO.replace("zero_()", "fill_(1)")},
     "autotune pre_hook zero_c (the code it reads changed)"),
    ({"args": ""}, {"args": "post_hook=zero_c", "top": ZERO}, "autotune post_hook (none) -> zero_c"),
    ({"args": 'prune_configs_by={"early_config_prune": prune}', "top": PRUNE}, {"args": "", "top": PRUNE},
     "autotune prune_configs_by {'early_config_prune': prune} -> (none)"),
    ({"args": "warmup=25, rep=100"}, {"args": "warmup=1, rep=1"}, "autotune rep 100 -> 1"),
    ({"args": "use_cuda_graph=True"}, {"args": ""}, "autotune use_cuda_graph True -> (none)"),
    ({"args": "cache_results=True"}, {"args": "cache_results=False"}, "autotune cache_results True -> False"),
    ({"args": 'do_not_specialize=["n"]'}, {"args": ""}, "autotune do_not_specialize ['n'] -> (none)"),
    ({"configs": f'{FIRST[:-1]}, pre_hook=lambda nargs: nargs["c_ptr"].zero_()), {SECOND}'}, {},
     "Config pre_hook lambda nargs: nargs['c_ptr'].zero_() -> (none)"),
    ({}, {"jit": '@triton.jit(do_not_specialize_on_alignment=["x_ptr"])'},
     "jit do_not_specialize_on_alignment (none) -> ['x_ptr']"),
], ids=["restore_value", "pre_hook-code", "post_hook", "prune_configs_by", "warmup-rep", "use_cuda_graph",
        "cache_results", "do_not_specialize", "config-pre_hook", "jit-alignment"])
def test_every_setting_is_part_of_the_kernel(tmp_path, capsys, old, new, said):
    old, new = {"args": 'reset_to_zero=["c_ptr"]', **old}, {"args": 'reset_to_zero=["c_ptr"]', **new}
    repo = make_repo(tmp_path, {"ops/k.py": tuned(**old)})
    commit(repo, "change", {"ops/k.py": tuned(**new)})
    rc, rows = check(repo, capsys)
    assert rc == 1 and rows and all(r["verdict"] == "structural" and r["blocking"] for r in rows), rows
    assert all(said in r["why"] for r in rows), [r["why"] for r in rows]


def test_ptxdiff_ci_blocks_a_removed_reset_to_zero(tmp_path, capsys, monkeypatch):
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    repo = make_repo(tmp_path, {"ops/k.py": tuned()})
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    commit(repo, "change", {"ops/k.py": tuned(args="")})
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--base", base, "--head", "HEAD",
                           "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc == 1, err
    assert "reset_to_zero" in (tmp_path / "c.md").read_text()
    rows = json.loads((tmp_path / "r.json").read_text())["kernels"]
    assert rows and all(r["verdict"] == "structural" and r["blocking"] for r in rows if r["kernel"] == K)
