"""History on Ray: the same notes and the same log from Ray tasks as from the local pool, byte for
byte; a side that compiles with another triton (a toolchain) compiles on the nodes with the
node's own toolchain of that version; what a revision ships to the nodes (its commit, trees and
Python files, each object once); a node with another toolchain refuses, and so does one that
cannot install a side's toolchain; a bad --executor is one line.

The Ray tests start a local Ray instance (2 CPUs) once for the module; they skip where Ray is not
installed (pip install 'ptxdiff[ray]')."""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import cast

import pytest

from helpers import HEADER, commit, fake_toolchain, git, make_repo, run_main, scale_kernel
from ptxdiff.compile import ray_executor
from ptxdiff.compile.pool import Pool
from ptxdiff.compile.protocol import Outcome, SpecsRequest
from ptxdiff.compile.ray_executor import NodeSettings, execute, revision_objects
from ptxdiff.git.repo import Repo, Side

SPECS = cast(SpecsRequest, None)   # a request the node refuses before it reads it

UTIL = HEADER + '''
@triton.jit
def twice(x):
    return x * {factor}
'''

USER = HEADER + '''from ops.util import twice


@triton.jit
def user_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=mask)), mask=mask)
'''


def history_repo(tmp_path):
    """Four commits that change kernels (one through a helper in another module) and one that
    changes none."""
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": scale_kernel(), "ops/util.py": UTIL.format(factor="2.0"),
                                "ops/user.py": USER, "README": "a\n"}, message="add kernels")
    c = [git(repo, "rev-parse", "HEAD").stdout.strip()]
    c.append(commit(repo, "structural", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")}))
    c.append(commit(repo, "docs", {"README": "b\n"}))
    c.append(commit(repo, "helper", {"ops/util.py": UTIL.format(factor="3.0")}))
    c.append(commit(repo, "block", {"ops/k.py": scale_kernel("x * 2.0 + 1.0", block=256)}))
    return repo, c


def notes_of(repo, commits):
    out = {}
    for sha in commits:
        shown = git(repo, "notes", "--ref", "ptxdiff", "show", sha, check=False)
        out[sha] = shown.stdout if shown.returncode == 0 else None
    return out


def forget(repo, cache):
    """No notes and an empty cache: the next run compiles everything again."""
    git(repo, "update-ref", "-d", "refs/notes/ptxdiff", check=False)
    shutil.rmtree(cache, ignore_errors=True)


@pytest.fixture(scope="module")
def node_toolchains(tmp_path_factory) -> Path:
    """The Ray nodes' own toolchain folder (PTXDIFF_TOOLCHAINS as Ray starts), not this process's."""
    return tmp_path_factory.mktemp("node-toolchains")


@pytest.fixture(scope="module")
def ray_instance(tmp_path_factory, node_toolchains):
    ray = pytest.importorskip("ray")
    folder = tempfile.mkdtemp(prefix="ptxdiff-test-ray-", dir="/tmp")   # Ray's sockets need a short path
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_AUTH_MODE", "disabled")   # a throwaway instance: no token written under ~/.ray
        env.setenv("HOME", str(tmp_path_factory.mktemp("ray-home")))
        env.setenv("PTXDIFF_TOOLCHAINS", str(node_toolchains))
        env.setenv("PIP_NO_INDEX", "1")   # a node never downloads a triton in a test
        ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 << 20, _temp_dir=folder,
                 logging_level=logging.ERROR, log_to_driver=False)
        yield ray
        ray_executor.release()      # the actors' workers and private repositories
        ray.shutdown()
    ray_executor.remove_stale(3.0)   # what an actor could not remove
    shutil.rmtree(folder, ignore_errors=True)


def no_local_pool(monkeypatch):
    """This process compiles nothing itself: every job runs in a Ray worker process."""
    def refuse(*args, **kwargs):
        raise AssertionError("a local pool was started")
    monkeypatch.setattr(Pool, "__init__", refuse)


def again_under_ray(args, repo, cache, monkeypatch, capsys) -> str:
    """`args` once more from a cold start, every compile in a Ray worker: its stdout (exit 0)."""
    forget(repo, cache)
    with monkeypatch.context() as m:
        no_local_pool(m)
        rc, out, err = run_main([*args, "--executor", "ray"], capsys)
    assert rc == 0, err
    return out


@pytest.mark.integration
def test_notes_from_ray_are_byte_identical_to_notes_from_the_local_pool(ray_instance, tmp_path, capsys, cache,
                                                                         monkeypatch):
    repo, commits = history_repo(tmp_path)
    rc, out, err = run_main(["notes", "-C", str(repo), "--target", "sm_90", "-q"], capsys)
    assert rc == 0, err
    local = notes_of(repo, commits)
    assert [sha for sha, note in local.items() if note] == [commits[0], commits[1], commits[3], commits[4]]
    assert "ops/user.py::user_kernel" in local[commits[3]] and "compiled" in local[commits[3]]

    out = again_under_ray(["notes", "-C", str(repo), "--target", "sm_90", "-q"], repo, cache, monkeypatch, capsys)
    assert "wrote 4 note(s)" in out
    assert notes_of(repo, commits) == local


@pytest.mark.integration
def test_log_from_ray_is_the_same_json_as_from_the_local_pool(ray_instance, tmp_path, capsys, cache, monkeypatch):
    repo, commits = history_repo(tmp_path)
    args = ["log", "scale_kernel", "-C", str(repo), "--target", "sm_90", "--format", "json", "-q"]
    rc, local, err = run_main(args, capsys)
    assert rc == 0, err
    assert [e["commit"] for e in json.loads(local)] == [commits[0], commits[1], commits[4]]

    assert again_under_ray(args, repo, cache, monkeypatch, capsys) == local


@pytest.mark.integration
def test_a_side_in_a_toolchain_compiles_on_the_nodes_with_their_own_toolchain(ray_instance, node_toolchains,
                                                                                tmp_path, capsys, cache, monkeypatch):
    """A history whose pin moves from triton 3.1.0 (a toolchain) to the installed one: the same
    JSON from Ray as from the local pool, every compile in a Ray worker, the toolchain side in the
    nodes' own toolchain folder (here both folders hold the installed triton under 3.1.0's name)."""
    import triton

    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(tmp_path / "toolchains"))
    fake_toolchain(tmp_path / "toolchains", "3.1.0")
    fake_toolchain(node_toolchains, "3.1.0")
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "requirements.txt": "triton==3.1.0\n"})
    commit(repo, "upgrade", {"ops/k.py": scale_kernel("x * 3.0"), "requirements.txt": f"triton=={triton.__version__}\n"})
    args = ["log", "scale_kernel", "-C", str(repo), "--target", "sm_90", "--format", "json", "-q"]
    rc, local, err = run_main(args, capsys)
    assert rc == 0, err
    rows = [row for entry in json.loads(local) for row in entry["rows"]]
    assert [r["verdict"] for r in rows] == ["added", "structural"] and rows[0]["toolchain"].endswith(" 3.1.0")
    assert rows[1]["toolchain"] == f"triton 3.1.0 -> {triton.__version__}"
    assert all(r["new"]["regs"] > 0 for r in rows)

    assert again_under_ray(args, repo, cache, monkeypatch, capsys) == local


def test_a_node_that_cannot_install_a_sides_toolchain_says_why_in_one_line(tmp_path, monkeypatch):
    from ptxdiff import binaries
    from ptxdiff.compile import toolchains
    from ptxdiff.errors import SetupError

    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(tmp_path / "toolchains"))
    asked = []

    def offline(version, progress=None):   # what install() says where the index has no such triton
        asked.append(version)
        raise SetupError(f"installing triton {version} failed: No matching distribution found for triton=={version}")

    monkeypatch.setattr(toolchains, "install", offline)
    settings = NodeSettings((), 300.0, None, False, None, tuple(sorted(binaries.versions().items())))
    reply = execute([], Side("c", "0" * 40, toolchain="0.0.1"), SPECS, "k sm_90 specs", settings)
    why = reply.error
    assert reply.outcome is Outcome.SETUP and asked == ["0.0.1"]
    assert str(why).startswith("Ray node ") and str(why).endswith(
        ": installing triton 0.0.1 failed: No matching distribution found for triton==0.0.1")


@pytest.mark.integration
def test_a_node_whose_toolchain_holds_another_triton_refuses(tmp_path, monkeypatch):
    """The driver keys a side's results by its own toolchain of the side's version: a node's
    folder of that name holding another triton must not compile it."""
    from ptxdiff import binaries
    from ptxdiff.compile import toolchains

    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(tmp_path / "toolchains"))
    prefix = fake_toolchain(tmp_path / "toolchains", "3.1.0")
    site = Path(toolchains.Toolchain("3.1.0", prefix).site)
    (site / "triton-3.2.0.dist-info").mkdir()       # what the folder's triton says it is
    settings = NodeSettings((), 300.0, None, False, None, tuple(sorted(binaries.versions().items())))
    reply = execute([], Side("c", "0" * 40, toolchain="3.1.0"), SPECS, "k sm_90 specs", settings)
    why = reply.error
    assert reply.outcome is Outcome.SETUP and f"the toolchain in {prefix} holds triton 3.2.0, not 3.1.0" in str(why)


@pytest.mark.integration
def test_a_revision_ships_its_commit_trees_and_python_files_each_object_once(tmp_path):
    repo, commits = history_repo(tmp_path)
    r = Repo(repo)
    first = revision_objects(r, Side("c0", commits[0]), set())
    blobs = {oid for oid, (kind, _) in first.items() if kind == 3}
    py = {git(repo, "rev-parse", f"{commits[0]}:{p}").stdout.strip()
          for p in ("ops/__init__.py", "ops/k.py", "ops/util.py", "ops/user.py")}
    assert blobs == py                                    # not the README: a worker reads Python files only
    assert commits[0] in first                            # the commit itself, so the revision keeps its id
    second = revision_objects(r, Side("c1", commits[1]), set(first))
    changed = git(repo, "rev-parse", f"{commits[1]}:ops/k.py").stdout.strip()
    assert {oid for oid, (kind, _) in second.items() if kind == 3} == {changed}
    assert revision_objects(r, Side("c1", commits[1]), set(first) | set(second)) == {}


@pytest.mark.integration
def test_the_work_tree_is_not_shipped(tmp_path):
    repo, _ = history_repo(tmp_path)
    from ptxdiff.errors import UsageError

    with pytest.raises(UsageError, match="compiles commits"):
        revision_objects(Repo(repo), Side("work tree", None), set())


def test_a_node_with_another_toolchain_refuses_before_it_compiles(tmp_path):
    settings = NodeSettings((), 300.0, None, False, None, (("ptxdiff", "0.0"), ("python", "2.7"), ("triton", "1.0")))
    reply = execute([], Side("c", "0" * 40), SPECS, "k sm_90 specs", settings)
    why = reply.error
    assert reply.outcome is Outcome.SETUP and "this run needs ptxdiff 0.0, python 2.7, triton 1.0" in str(why)


@pytest.mark.integration
def test_a_bad_executor_is_one_line(tmp_path, capsys):
    repo, _ = history_repo(tmp_path)
    rc, out, err = run_main(["notes", "-C", str(repo), "--executor", "spark"], capsys)
    assert rc == 2 and err.strip().splitlines() == [
        "ptxdiff: --executor 'spark': expected local, ray or ray://HOST:PORT"]


def test_without_ray_the_executor_says_how_to_install_it(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    from ptxdiff.errors import SetupError

    with pytest.raises(SetupError, match=r"pip install 'ptxdiff\[ray\]'"):
        ray_executor.require_ray()


GUESSED = HEADER + '''
@triton.jit
def guessed_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
'''


@pytest.mark.integration
def test_a_compile_that_runs_past_its_bound_is_a_timed_out_row_under_ray(ray_instance, tmp_path, capsys, cache,
                                                                         monkeypatch):
    """The Ray executor bounds a compile as the local pool does: a compile past its task's bound
    (made tiny here) is a timed-out row, the same JSON as from the local pool."""
    from ptxdiff.compile import tasks

    repo = make_repo(tmp_path, {"ops/g.py": GUESSED})
    made = tasks.Task.__init__

    def tight(self, *args, **kw):   # no compile answers in a millisecond
        made(self, *args, **kw)
        if self.op == "compile":
            self.timeout = 0.001

    monkeypatch.setattr(tasks.Task, "__init__", tight)
    args = ["log", "guessed_kernel", "-C", str(repo), "--target", "sm_90", "--format", "json", "-q"]
    rc, local, err = run_main(args, capsys)
    assert rc == 0, err
    (row,) = json.loads(local)[0]["rows"]
    assert row["error"] == "new: timed out after 0.001s (the bound of this request)"
    assert again_under_ray(args, repo, cache, monkeypatch, capsys) == local
