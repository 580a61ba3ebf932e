"""Issue 38 on our own kernels, end to end: an autotuned kernel whose Config list is only
reordered reads `identical` spec by spec (never a delta between two Configs); a change under
`git diff` (real git, the installed driver) and in `ptxdiff ci`'s comment is a line per kernel
with how many specs agree, the headline counting kernels; the JSON keeps every spec row."""

from __future__ import annotations

import json
import re

import pytest

from helpers import HEADER, commit, git, html, install, isolate, kernel_lines, make_repo, run_main

pytestmark = pytest.mark.integration

WAIT = {"PTXDIFF_DRIVER_BUDGET": "600", "PTXDIFF_FORCE": "1"}


def tuned(configs: list[int], body: str = "x * 2.0") -> str:
    listed = ", ".join(f'triton.Config({{"BLOCK": {b}}}, num_warps=4)' for b in configs)
    return HEADER + f'''
@triton.autotune(configs=[{listed}], key=["n"])
@triton.jit
def tuned_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body}, mask=mask)
'''


PLAIN = HEADER + '''
@triton.jit
def plain_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) {k}, mask=mask)
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("lines")
    isolate(tmp, mp)
    repo = make_repo(tmp, {"ops/t.py": tuned([64, 128, 256]), "ops/p.py": PLAIN.format(k="+ 1.0")})
    commit(repo, "reorder the configs", {"ops/t.py": tuned([256, 64, 128])})
    commit(repo, "change both kernels", {"ops/t.py": tuned([256, 64, 128], "x * x"), "ops/p.py": PLAIN.format(k="* 3.0 + 1.0")})
    yield repo
    mp.undo()


def test_a_reordered_config_list_pairs_each_config_with_itself(repo, capsys):
    rc, out, err = run_main(["-C", str(repo), "diff", "HEAD~2", "HEAD~1", "-q", "--format", "json", "--all"], capsys)
    assert rc == 0, err
    rows = [r for r in json.loads(out)["kernels"] if r["kernel"] == "ops/t.py::tuned_kernel"]
    assert sorted(r["spec"] for r in rows) == ["BLOCK=128 w4 s3", "BLOCK=256 w4 s3", "BLOCK=64 w4 s3"]
    assert {r["verdict"] for r in rows} == {"identical"} and not any(any(r["delta"].values()) for r in rows)


def test_git_diff_and_the_table_show_a_line_per_kernel_and_the_json_every_spec(repo, capsys):
    install(repo, capsys)
    text = git(repo, "diff", "HEAD~1", "HEAD", env=WAIT, text=False).stdout.decode()
    lines = kernel_lines(text)
    assert len(lines) == 2, text                                               # one per kernel
    (t,) = [ln for ln in lines if "tuned_kernel" in ln]
    assert "structural" in t and "(3 specs: 3 structural)" in " ".join(t.split())
    rc, out, err = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "-q"], capsys)
    assert rc == 0 and "3 specs: 3 structural" in " ".join(out.split()) and "2 kernels block: structural (4 rows)" in out
    rc, out, _ = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "-q", "--specs"], capsys)
    assert all(f"BLOCK={b}" in out for b in (64, 128, 256))                     # unfolded
    rc, out, _ = run_main(["-C", str(repo), "diff", "HEAD~1", "HEAD", "-q", "--format", "json"], capsys)
    assert len(json.loads(out)["kernels"]) == 4                                 # every spec row, as before


def test_ci_comments_a_line_per_kernel_and_counts_kernels(repo, tmp_path, capsys):
    comment = tmp_path / "comment.md"
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--base", "HEAD~1", "--head", "HEAD",
                           "--comment-file", str(comment), "--json-file", str(tmp_path / "r.json"),
                           "--html-file", ""], capsys)
    assert rc == 1, err
    body = comment.read_text()
    assert "2 kernels changed: 2 structural; **blocked** by 2 kernels (2 structural; 4 spec rows)" in body
    details = html(body).split("<details>")[1]
    assert len(re.findall(r"<tr>", details.split("<tbody>")[1].split("</tbody>")[0])) == 2
    assert "3 specs: 3 structural" in details
