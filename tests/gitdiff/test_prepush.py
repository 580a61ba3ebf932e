"""The pre-push gate holds: real pushes to a bare remote through the hook `ptxdiff install` writes.

The exit status is the verdict whatever happens to the output (a reader that goes away), the
tool cannot be replaced by the pushed branch, pre-commit's way of calling checks every pushed
ref, and a branch is measured from what the remote already has that it builds on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from helpers import (
    PY,
    ROOT,
    add_origin,
    commit,
    git,
    head,
    make_repo,
    ptxdiff,
    pushed_repo,
    remote_has,
    scale_kernel,
    write_hook,
)
from ptxdiff.gitdiff.install import git_version

pytestmark = pytest.mark.integration

K = "ops/k.py::scale_kernel"
OTHER = "ops/other.py::other_kernel"
V2 = "x * 2.0 + 1.0"             # structural against scale_kernel()
CONFIG_HOOKS = git_version() >= (2, 54)
needs_hook_file = pytest.mark.skipif(CONFIG_HOOKS, reason="git >= 2.54 installs a config-defined hook, no file")



def shell(repo, command: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", command], cwd=str(repo), capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


# ---------------------------------------------------------------------------------------------
# the exit status is the verdict, whatever the output does

def test_push_blocked_through_a_closed_pipe_leaves_the_remote_unchanged(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    git(repo, "checkout", "-q", "-b", "s1")
    commit(repo, "structural", {"ops/k.py": scale_kernel(V2)})
    git(repo, "checkout", "-q", "-b", "clean", "main")
    commit(repo, "readme", {"README": "x\n"})

    for _ in range(3):     # the pipeline: the reader leaves after the first line
        p = shell(repo, "git push origin s1 2>&1 | head -1")
        assert "blocked" in p.stdout, p.stdout + p.stderr
        assert remote_has(bare, "s1") is None
    # a reader that is gone before anything is written: every write of the hook fails
    proc = subprocess.Popen(["git", "push", "origin", "s1"], cwd=repo, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    proc.stdout.close()
    assert proc.wait() != 0
    assert remote_has(bare, "s1") is None
    # the same pipe does not stop a push that passes
    p = shell(repo, "git push origin clean 2>&1 | head -1")
    assert remote_has(bare, "clean") == head(repo, "clean"), p.stdout


def test_cli_check_keeps_its_exit_status_when_nobody_reads(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "structural", {"ops/k.py": scale_kernel(V2)})
    proc = subprocess.Popen([PY, "-m", "ptxdiff", "diff", "HEAD~1", "HEAD", "--check", "-q", "--ptx"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()                          # the reader is gone before the report is written
    err = proc.stderr.read()
    assert proc.wait() == 1, err
    assert "Traceback" not in err and "Exception ignored" not in err
    # stdout closed before Python starts: no report, the same status
    p = shell(repo, f"{PY} -m ptxdiff diff HEAD~1 HEAD --check -q >&-")
    assert p.returncode == 1, p.stderr
    assert "kernel" not in p.stderr


# ---------------------------------------------------------------------------------------------
# hooks/pre-push is the file git runs

@needs_hook_file
def test_installed_hook_is_hooks_pre_push_with_the_interpreter_filled_in(tmp_path, capsys):
    from ptxdiff.gitdiff.install import hook_python, hook_source, hook_text

    template = ROOT / "hooks" / "pre-push"
    assert hook_source("pre-push") == template
    assert os.access(template, os.X_OK)
    assert template.read_text().count("@PYTHON@") == 1
    assert subprocess.run(["sh", "-n", str(template)]).returncode == 0
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    installed = (repo / ".git" / "hooks" / "pre-push").read_text()
    assert installed == template.read_text().replace("@PYTHON@", sys.executable)
    assert hook_python(installed) == sys.executable
    odd = "/opt/my envs/py 3's/bin/python"
    assert hook_python(hook_text("pre-push", odd)) == odd
    assert " -I -m ptxdiff pre-push" in installed


@needs_hook_file
def test_the_pushed_branch_cannot_replace_the_tool(tmp_path, capsys):
    """A branch that adds ptxdiff/__main__.py or pygit2.py at its root (checked out: the hook runs
    in the work tree) and sets PYTHONPATH=. still meets the installed ptxdiff."""
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    shadow = "import sys\nprint('SHADOWED', file=sys.stderr)\nsys.exit(0)\n"
    commit(repo, "shadow the tool", {"ptxdiff/__init__.py": "", "ptxdiff/__main__.py": shadow,
                                     "pygit2.py": shadow, "tabulate.py": shadow,
                                     "ops/k.py": scale_kernel(V2)})
    p = git(repo, "push", "origin", "main", check=False, env={"PYTHONPATH": "."})
    assert p.returncode != 0
    assert "SHADOWED" not in p.stderr
    assert K in p.stderr and "structural" in p.stderr
    assert remote_has(bare, "main") != head(repo)


@needs_hook_file
def test_a_hook_whose_interpreter_is_gone_blocks_and_says_how_to_pass(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()})
    commit(repo, "readme", {"README": "x\n"})
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.write_text(hook.read_text().replace(f"python={sys.executable}", f"python={tmp_path / 'gone' / 'python'}"))
    p = git(repo, "push", "origin", "main", check=False)
    assert p.returncode != 0 and "cannot run ptxdiff" in p.stderr and "--no-verify" in p.stderr
    assert remote_has(bare, "main") != head(repo)
    p = git(repo, "push", "origin", "main", check=False, env={"PTXDIFF_SKIP": "1"})
    assert p.returncode == 0 and "SKIPPED" in p.stderr
    assert remote_has(bare, "main") == head(repo)


def test_config_defined_hook_starts_python_isolated(tmp_path, monkeypatch):
    """git >= 2.54: the hook is `hook.ptxdiff.command`; it starts Python the same isolated way."""
    from ptxdiff.git.repo import Repo
    from ptxdiff.gitdiff import install as installmod

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    monkeypatch.setattr(installmod, "git_version", lambda: (2, 54, 0))
    plan = installmod.plan(Repo(repo), False, "info", "/opt/py env/bin/python")
    assert plan.config["hook.ptxdiff.command"] == "'/opt/py env/bin/python' -I -m ptxdiff pre-push"
    assert plan.config["hook.ptxdiff.event"] == "pre-push"
    assert plan.hook_file is None


# ---------------------------------------------------------------------------------------------
# what the remote has is not asked for again

def test_new_branch_that_merged_main_is_measured_from_that_main(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel(),
                                                 "ops/other.py": scale_kernel(name="other_kernel")})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, "feature: docs", {"README": "feature\n"})
    git(repo, "checkout", "-q", "main")
    commit(repo, "main: approved structural change", {"ops/k.py": scale_kernel(V2)},
           extra=["--trailer", f"Ptx-Approved: {K}"])
    p = git(repo, "push", "origin", "main", check=False)
    assert p.returncode == 0, p.stderr

    git(repo, "checkout", "-q", "feature")
    git(repo, "merge", "-q", "--no-edit", "main")
    p = git(repo, "push", "origin", "feature", check=False)      # a new branch: nothing of its own to approve
    assert p.returncode == 0, p.stderr
    assert remote_has(bare, "feature") == head(repo)

    # its own structural change is still asked for, and only that one
    commit(repo, "feature: other kernel", {"ops/other.py": scale_kernel(V2, name="other_kernel")})
    git(repo, "checkout", "-q", "-b", "feature2")
    p = git(repo, "push", "origin", "feature2", check=False)
    assert p.returncode != 0
    assert OTHER in p.stderr and K not in p.stderr

    # an update of a branch the remote has, which merges main again: main's change is not its own
    git(repo, "checkout", "-q", "main")
    commit(repo, "main: another approved change", {"ops/k.py": scale_kernel("x * 3.0")},
           extra=["--trailer", f"Ptx-Approved: {K}"])
    assert git(repo, "push", "origin", "main", check=False).returncode == 0
    git(repo, "checkout", "-q", "-B", "feature", remote_has(bare, "feature"))
    git(repo, "merge", "-q", "--no-edit", "main")
    p = git(repo, "push", "origin", "feature", check=False)
    assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------------------------------------
# pre-commit's way of calling: one range in the environment, nothing on stdin

PRE_COMMIT_EMULATION = textwrap.dedent('''\
    #!{python}
    """What pre-commit's hook-impl does for pre-push (pre_commit/commands/hook_impl.py, run.py):
    it reads git's ref lines itself and runs the hooks once, for the FIRST ref that has commits
    the remote lacks, with the range in PRE_COMMIT_* variables and nothing on stdin."""
    import os, subprocess, sys
    Z40 = "0" * 40
    remote_name, remote_url = sys.argv[1], sys.argv[2]
    def out(*a):
        return subprocess.check_output(("git",) + a).decode().strip()
    def ns():
        for line in sys.stdin.read().splitlines():
            local_branch, local_sha, remote_branch, remote_sha = line.rsplit(maxsplit=3)
            common = dict(PRE_COMMIT_LOCAL_BRANCH=local_branch, PRE_COMMIT_REMOTE_BRANCH=remote_branch,
                          PRE_COMMIT_REMOTE_NAME=remote_name, PRE_COMMIT_REMOTE_URL=remote_url)
            if local_sha == Z40:
                continue
            if remote_sha != Z40 and not subprocess.call(("git", "cat-file", "-e", remote_sha + "^{{commit}}")) \\
                    and not subprocess.call(("git", "merge-base", "--is-ancestor", remote_sha, local_sha)):
                return dict(common, PRE_COMMIT_FROM_REF=remote_sha, PRE_COMMIT_TO_REF=local_sha,
                            PRE_COMMIT_ORIGIN=remote_sha, PRE_COMMIT_SOURCE=local_sha)
            ancestors = out("rev-list", local_sha, "--topo-order", "--reverse", "--not", "--remotes=" + remote_name)
            if not ancestors:
                continue
            first = ancestors.splitlines()[0]
            if first in set(out("rev-list", "--max-parents=0", local_sha).splitlines()):
                return common                                   # all_files: no range at all
            source = out("rev-parse", first + "^")
            return dict(common, PRE_COMMIT_FROM_REF=source, PRE_COMMIT_TO_REF=local_sha,
                        PRE_COMMIT_ORIGIN=source, PRE_COMMIT_SOURCE=local_sha)
        return None
    env = ns()
    if env is None:
        sys.exit(0)
    env = dict(os.environ, PRE_COMMIT="1", PRE_COMMIT_HOOK_STAGE="pre-push", **env)
    # the hook's entry (pass_filenames: false): `ptxdiff pre-push`, stdin not the push's
    with open(os.devnull) as devnull:
        sys.exit(subprocess.call([sys.executable, "-m", "ptxdiff", "pre-push"], env=env, stdin=devnull))
''')


def pre_commit_repo(tmp_path, files):
    repo = make_repo(tmp_path, files)
    bare = add_origin(repo, tmp_path)
    write_hook(repo, PRE_COMMIT_EMULATION.format(python=sys.executable))
    return repo, bare


def test_pre_commit_push_of_a_clean_ref_and_a_structural_ref_is_blocked(tmp_path):
    repo, bare = pre_commit_repo(tmp_path, {"ops/k.py": scale_kernel()})
    git(repo, "checkout", "-q", "-b", "a-clean")
    commit(repo, "docs", {"README": "x\n"})
    git(repo, "checkout", "-q", "-b", "b-structural", "main")
    commit(repo, "structural", {"ops/k.py": scale_kernel(V2)})
    git(repo, "checkout", "-q", "main")

    p = git(repo, "push", "origin", "a-clean", "b-structural", check=False)
    assert p.returncode != 0, p.stderr
    assert K in p.stderr and "refs/heads/b-structural" in p.stderr
    assert "pre-commit names one pushed ref only" in p.stderr
    assert remote_has(bare, "a-clean") is None and remote_has(bare, "b-structural") is None
    p = git(repo, "push", "origin", "a-clean", check=False)       # alone, while b waits for approval
    assert p.returncode != 0                                     # b is a local branch the remote lacks
    git(repo, "branch", "-q", "-D", "b-structural")
    p = git(repo, "push", "origin", "a-clean", check=False)
    assert p.returncode == 0, p.stderr
    assert remote_has(bare, "a-clean") == head(repo, "a-clean")


def test_pre_commit_push_of_a_new_history_is_checked(tmp_path):
    """A history with no commit on the remote: pre-commit passes no range at all (all_files)."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    bare = add_origin(repo, tmp_path, push=False)
    write_hook(repo, PRE_COMMIT_EMULATION.format(python=sys.executable))
    commit(repo, "broken kernel", {"ops/k.py": scale_kernel("x * ")})     # does not parse: failed
    p = git(repo, "push", "origin", "main", check=False)
    assert p.returncode != 0, p.stderr
    assert K in p.stderr and "failed" in p.stderr
    assert remote_has(bare, "main") is None


def test_pre_commit_run_by_hand_checks_the_range_it_is_given(tmp_path):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    base = head(repo)
    changed = commit(repo, "structural", {"ops/k.py": scale_kernel(V2)})
    env = {"PRE_COMMIT": "1", "PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": changed}
    p = ptxdiff(["pre-push"], repo, env=env, input="")
    assert p.returncode == 1 and K in p.stderr, p.stderr
    p = ptxdiff(["pre-push"], repo, env={**env, "PRE_COMMIT_TO_REF": base}, input="")
    assert p.returncode == 0, p.stderr
