"""install, uninstall and doctor in a linked work tree (`git worktree add`): everything goes
where git reads it (the common git dir), and git itself proves it (config, check-attr, a push)."""

from __future__ import annotations

import os

import pytest

from helpers import (
    add_origin,
    commit,
    git,
    head,
    install,
    make_repo,
    ptxdiff,
    run_main,
    scale_kernel,
    snapshot_tree,
)
from ptxdiff.gitdiff.install import git_version

pytestmark = pytest.mark.integration

K = "ops/k.py::scale_kernel"
CONFIG_HOOKS = git_version() >= (2, 54)
# what commits and pushes change in the common git dir (not ptxdiff's business)
GIT_STATE = ("objects", "logs", "refs", "index", "packed-refs", "ORIG_HEAD", "COMMIT_EDITMSG",
             "worktrees/wt/index", "worktrees/wt/logs", "worktrees/wt/ORIG_HEAD", "worktrees/wt/COMMIT_EDITMSG",
             "worktrees/wt/HEAD")



def linked(tmp_path):
    """main repo pushed to a bare remote, plus a linked work tree on branch `feature`."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    bare = add_origin(repo, tmp_path)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(wt))
    return repo, wt, bare


def test_install_in_a_linked_work_tree_is_read_by_git_and_undone_by_uninstall(tmp_path, capsys):
    repo, wt, bare = linked(tmp_path)
    common = repo / ".git"
    before = snapshot_tree(common, skip=GIT_STATE)

    rc, out, err = run_main(["install", "-C", str(wt)], capsys)
    assert rc == 0, err
    assert "linked work tree" in out
    # git reads it, from this work tree and from the main one
    for where in (wt, repo):
        assert "ptxdiff" in git(where, "config", "diff.ptxdiff.command").stdout
        assert git(where, "check-attr", "diff", "ops/k.py").stdout.strip().endswith("diff: ptxdiff")
    assert not (common / "worktrees" / "wt" / "hooks").exists()
    assert not (common / "worktrees" / "wt" / "config").exists()
    assert not (common / "worktrees" / "wt" / "ptxdiff").exists()
    if not CONFIG_HOOKS:
        assert os.access(common / "hooks" / "pre-push", os.X_OK)

    # doctor agrees, from either work tree
    for where in (wt, repo):
        proc = ptxdiff(["doctor"], where)
        assert "FIX pre-push hook" not in proc.stdout and "ok  pre-push hook" in proc.stdout, proc.stdout

    # and a push from the linked work tree meets the gate
    commit(wt, "structural", {"ops/k.py": scale_kernel("x * 2.0 + 1.0")})
    p = git(wt, "push", "origin", "feature", check=False)
    assert p.returncode != 0 and K in p.stderr
    assert git(bare, "rev-parse", "--verify", "-q", "feature", check=False).stdout == ""

    # uninstall from the work tree restores the common dir byte for byte
    rc, _, err = run_main(["uninstall", "-C", str(wt)], capsys)
    assert rc == 0, err
    assert snapshot_tree(common, skip=GIT_STATE) == before
    p = git(wt, "push", "origin", "feature", check=False)
    assert p.returncode == 0, p.stderr
    assert git(bare, "rev-parse", "feature").stdout.strip() == head(wt)


@pytest.mark.skipif(CONFIG_HOOKS, reason="git >= 2.54 installs a config-defined hook, no file")
def test_doctor_calls_a_dead_hook_dead(tmp_path, capsys):
    repo, wt, _ = linked(tmp_path)
    install(wt, capsys)
    hook = repo / ".git" / "hooks" / "pre-push"

    # a hook in the linked work tree's own git dir: git never runs it
    stray = repo / ".git" / "worktrees" / "wt" / "hooks" / "pre-push"
    stray.parent.mkdir()
    os.replace(hook, stray)
    proc = ptxdiff(["doctor"], wt)
    assert proc.returncode == 1 and "FIX pre-push hook" in proc.stdout and "missing" in proc.stdout, proc.stdout
    os.replace(stray, hook)

    hook.chmod(0o644)                                   # git skips a hook that is not executable
    proc = ptxdiff(["doctor"], wt)
    assert proc.returncode == 1 and "not executable" in proc.stdout, proc.stdout
    hook.chmod(0o755)

    text = hook.read_text()                             # its interpreter is gone
    hook.write_text("\n".join(f"python={tmp_path}/gone/python" if ln.startswith("python=") else ln
                              for ln in text.splitlines()) + "\n")
    proc = ptxdiff(["doctor"], wt)
    assert proc.returncode == 1 and "cannot import ptxdiff" in proc.stdout, proc.stdout
    hook.write_text(text)

    git(repo, "config", "core.hooksPath", str(tmp_path / "elsewhere"))   # git looks elsewhere now
    proc = ptxdiff(["doctor"], wt)
    assert proc.returncode == 1 and "elsewhere" in proc.stdout and "missing" in proc.stdout, proc.stdout
