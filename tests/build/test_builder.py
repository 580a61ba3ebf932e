"""Reading a revision never runs it: kernels are built from their effective source.

A hostile branch puts code everywhere a kernel's values come from (module top level, a helper
module, an autotune Config expression, a heuristic, a default); each payload would write a
marker file. Nothing writes it, and the branch's changed kernel is still measured. On the
corpus, building from source gives exactly what importing gives."""

from __future__ import annotations

import os

import pytest

from helpers import (
    HEADER,
    commit,
    git,
    make_repo,
    ptxdiff,
    run_main,
    scale_kernel,
)
from ptxdiff.compare.engine import Engine
from ptxdiff.corpus import pairs as corpus
from ptxdiff.git.repo import Repo

pytestmark = pytest.mark.integration


def hostile_kernel(marker: str, body: str) -> str:
    """A kernel module with a payload in every place a value could come from."""
    touch = f"open({marker!r}, 'w').write('ran')"
    return HEADER + f'''
import os
from ops import util

{touch}
PAYLOAD = {touch}
EVIL_BLOCK = int(os.system("touch {marker}") or 128)


def _side_effect():
    {touch}
    return 128


@triton.autotune(configs=[triton.Config({{"BLOCK": _side_effect()}}, num_warps=4)], key=["n"])
@triton.heuristics({{"EVEN": lambda args: os.system("touch {marker}") == 0}})
@triton.jit
def hostile_kernel(x_ptr, out_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr, K: tl.constexpr = EVIL_BLOCK):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if EVEN:
        x = x + 1.0
    tl.store(out_ptr + offs, util.twice({body}), mask=mask)
'''


def hostile_util(marker: str) -> str:
    return HEADER + f'''
open({marker!r}, 'w').write('ran')


@triton.jit
def twice(x):
    return x * 2.0
'''


@pytest.fixture
def hostile(tmp_path):
    marker = str(tmp_path / "MARKER")
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": hostile_kernel(marker, "x"),
                                "ops/util.py": hostile_util(marker)})
    git(repo, "checkout", "-q", "-b", "branch")
    commit(repo, "change the kernel", {"ops/k.py": hostile_kernel(marker, "x * 3.0 + x")})
    git(repo, "checkout", "-q", "main")
    return repo, marker


def test_reviewing_a_hostile_branch_runs_none_of_its_code(hostile, capsys):
    repo, marker = hostile
    rc, out, err = run_main(["diff", "-C", str(repo), "main", "branch", "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert not os.path.exists(marker)
    import json
    rows = json.loads(out)["kernels"]
    assert {r["kernel"] for r in rows} == {"ops/k.py::hostile_kernel"}
    assert "structural" in {r["verdict"] for r in rows}, rows
    # what was refused is said, with the expression and its line, and the values are guessed
    notes = " ".join(n for r in rows for n in r["spec_detail"]["notes"])
    assert "os.system" in notes and "ops/k.py:" in notes
    for args in (["diff", "main", "branch", "--check"], ["show", "branch"], ["log", "hostile_kernel", "branch"]):
        proc = ptxdiff([args[0], "-C", str(repo), *args[1:], "-q"], repo, python_flags=["-I"])
        assert proc.returncode in (0, 1), proc.stderr
        assert not os.path.exists(marker), args
    git(repo, "checkout", "-q", "branch")
    proc = ptxdiff(["diff", "main", "-q"], repo, python_flags=["-I"])
    assert proc.returncode in (0, 1), proc.stderr
    assert not os.path.exists(marker)


def test_importing_is_the_users_choice_and_then_it_does_run(hostile, capsys):
    repo, marker = hostile
    rc, out, err = run_main(["diff", "-C", str(repo), "main", "branch", "--import", "-q"], capsys)
    assert os.path.exists(marker)  # the user asked for it: the module's top level ran
    assert "imported" in out


def test_a_symlinked_module_is_link_text_not_a_module(tmp_path, capsys):
    outside = tmp_path / "outside.py"
    outside.write_text(scale_kernel(name="outside_kernel"))
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    os.symlink(outside, repo / "ops" / "linked.py")
    commit(repo, "a link")
    r = Repo(repo)
    report = Engine(r, jobs=1).compare(None, r.side("HEAD"), show_all=True)
    assert {row.kernel for row in report.rows} == {"ops/k.py::scale_kernel"}
    work = Engine(r, jobs=1).compare(None, r.side(None), show_all=True)
    assert {row.kernel for row in work.rows} == {"ops/k.py::scale_kernel"}


def test_compiles_use_a_private_triton_cache(tmp_path):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "v2", {"ops/k.py": scale_kernel("x * 3.0")})
    r = Repo(repo)
    assert Engine(r, jobs=2).compare(r.side("HEAD~1"), r.side("HEAD")).compiled == 2
    assert not (tmp_path / "home" / ".triton").exists()


def test_building_from_source_gives_what_importing_gives_on_the_corpus(tmp_path):
    pairs, hermetic = corpus.run([90], jobs=2, workdir=str(tmp_path / "a"))
    _, imported = corpus.run([90], jobs=2, workdir=str(tmp_path / "b"), imports=True)
    assert len(hermetic.rows) == len(pairs) == len(imported.rows)
    for a, b in zip(hermetic.rows, imported.rows):
        assert (a.kernel, a.spec, a.verdict) == (b.kernel, b.spec, b.verdict)
        assert a.error is None and b.error is None, (a.kernel, a.error, b.error)
        assert a.old == b.old and a.new == b.new, a.kernel


def test_every_git_touchpoint_on_a_hostile_branch_runs_none_of_its_code(hostile, tmp_path, capsys):
    """The branch also tries to replace the tool itself (`ptxdiff/__main__.py`, `pygit2.py` at its
    root). git diff shown and piped, git log -p --ext-diff, git show, and a real push through the
    pre-push hook: no marker, and the shown diff measures the changed kernel."""
    repo, marker = hostile
    shadow = f"open({marker!r}, 'w').write('shadowed')\n"
    git(repo, "checkout", "-q", "branch")
    commit(repo, "shadow the tool", {"ptxdiff/__init__.py": shadow, "ptxdiff/__main__.py": shadow, "pygit2.py": shadow,
                                      "tabulate.py": shadow})
    git(repo, "checkout", "-q", "main")
    rc, _, err = run_main(["install", "-C", str(repo)], capsys)
    assert rc == 0, err
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    for checked_out in ("main", "branch"):
        git(repo, "checkout", "-q", checked_out)
        shown = git(repo, "diff", "main..branch", env={"PTXDIFF_FORCE": "1"}).stdout
        assert "ptxdiff sm_90 ops/k.py::hostile_kernel" in shown and " structural" in shown, shown
        piped = git(repo, "diff", "main..branch").stdout
        assert piped == git(repo, "diff", "--no-ext-diff", "main..branch").stdout
        git(repo, "log", "-p", "--ext-diff", "-3", "branch", env={"PTXDIFF_FORCE": "1"})
        git(repo, "show", "--ext-diff", "branch~1", env={"PTXDIFF_FORCE": "1"})
        assert not os.path.exists(marker), checked_out
    push = git(repo, "push", "origin", "branch", check=False)
    assert push.returncode != 0 and "blocked" in push.stderr, push.stderr  # a structural change, measured
    assert not os.path.exists(marker)
