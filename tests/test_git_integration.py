"""ptxdiff inside git: the diff driver under real `git diff`, install/uninstall, the pre-push gate
with real pushes to a bare remote, `ptxdiff log` and `ptxdiff notes`.

Git calls ptxdiff as a separate process (the installed driver command / hook stub run
`sys.executable -m ptxdiff`), so these tests run real `git` in subprocesses.
"""

from __future__ import annotations

import json
import os
import random
import re

import pytest

from helpers import (
    HEADER,
    cache_entries,
    commit,
    corpus,
    git,
    head,
    install,
    kernel_lines,
    make_repo,
    ptxdiff,
    pushed_repo,
    remote_has,
    run_main,
    scale_kernel,
    snapshot_tree,
    without_kernel_lines,
    write,
)
from ptxdiff.compare.engine import Engine
from ptxdiff.git.repo import Repo
from ptxdiff.gitdiff.install import git_version

pytestmark = pytest.mark.integration

V2 = "x * 2.0 + 1.0"
GELU = "ops/gelu.py::gelu_kernel"
LEAKY = "ops/leaky.py::leaky_relu_kernel"
# functions after the kernel so hunks get function-name context and renames stay similar
FILLER = "".join(f"\n\ndef helper_{i}(a):\n    return a + {i}\n" for i in range(8))
CONFIG_HOOKS = git_version() >= (2, 54)    # install then uses hook.ptxdiff.* config, not a hook file
GIT_STATE_SKIP = (".git/objects", ".git/logs", ".git/refs", ".git/index", ".git/COMMIT_EDITMSG", ".git/ORIG_HEAD",
                  ".git/packed-refs", ".git/FETCH_HEAD")



def gitdiff(repo, *args, env=None):
    """`git diff ARGS` (stdout a pipe) -> (exit code, stdout bytes, stderr)."""
    proc = git(repo, *args, check=False, env=env, text=False)
    return proc.returncode, proc.stdout, proc.stderr.decode(errors="replace")


# ---------------------------------------------------------------------------------------------
# the diff driver under real `git diff`

def test_git_diff_shows_kernel_line_only_for_people(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER, "ops/plain.py": "x = 1\n" * 12})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel(V2) + FILLER.replace("a + 5", "a + 55"),
                 "ops/plain.py": "x = 1\n" * 6 + "y = 2\n" + "x = 1\n" * 5})
    rc, plain, _ = gitdiff(repo, "diff", "--no-ext-diff")
    assert rc == 0 and b"diff --git a/ops/k.py b/ops/k.py" in plain

    # forced: git's diff for the path, then one line per changed kernel x spec x target
    rc, forced, err = gitdiff(repo, "diff", env={"PTXDIFF_FORCE": "1"})
    assert rc == 0, err
    text = forced.decode()
    assert "diff --git a/ops/k.py b/ops/k.py" in text and "\n@@ -" in text
    assert "-    tl.store(out_ptr + offs, x * 2.0, mask=mask)" in text
    assert "+    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)" in text
    lines = kernel_lines(text)
    assert len(lines) == 1, text
    # zero config: the pointer and scalar types are guesses, and the line says so
    assert re.match(r"ptxdiff sm_90 ops/k\.py::scale_kernel \[BLOCK=128 w4 s3\] \(guessed\) structural\b",
                    lines[0]), lines
    assert without_kernel_lines(forced) == plain               # the rest is git's own diff, byte for byte
    # the kernel line comes right after its file's diff
    assert text.index(lines[0]) > text.index("+    tl.store") and text.index(lines[0]) < text.index("ops/plain.py")

    # a pipe, no force: byte-identical to git's own output (patch-safe)
    rc, piped, _ = gitdiff(repo, "diff")
    assert rc == 0 and piped == plain
    # git's pager in use: a person reads it
    rc, paged, _ = gitdiff(repo, "diff", env={"GIT_PAGER_IN_USE": "true"})
    assert rc == 0 and kernel_lines(paged.decode()) == lines
    # the off switches, even with PTXDIFF_FORCE
    rc, off, _ = gitdiff(repo, "-c", "ptxdiff.enabled=false", "diff", env={"PTXDIFF_FORCE": "1"})
    assert rc == 0 and off == plain
    rc, off, _ = gitdiff(repo, "diff", env={"PTXDIFF_FORCE": "1", "PTXDIFF_SKIP": "1"})
    assert rc == 0 and off == plain
    git(repo, "config", "ptxdiff.enabled", "false")
    rc, off, _ = gitdiff(repo, "diff", env={"GIT_PAGER_IN_USE": "true"})
    assert rc == 0 and off == plain


def test_git_diff_of_a_helper_module_shows_the_kernel_that_calls_it(tmp_path, capsys):
    helper = HEADER + "\n@triton.jit\ndef h(x):\n    return x * 2.0\n"
    kernel = HEADER + """from .helpers import h


@triton.jit
def uses_helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, h(tl.load(x_ptr + offs, mask=mask)), mask=mask)
"""
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/helpers.py": helper, "ops/k.py": kernel})
    install(repo, capsys)
    write(repo, {"ops/helpers.py": helper.replace("x * 2.0", "x * 2.0 + 1.0")})
    rc, forced, err = gitdiff(repo, "diff", env={"PTXDIFF_FORCE": "1"})
    assert rc == 0, err
    text = forced.decode()
    assert "diff --git a/ops/helpers.py b/ops/helpers.py" in text
    (line,) = kernel_lines(text)
    assert line.startswith("ptxdiff sm_90 ops/k.py::uses_helper_kernel ") and " structural" in line


def test_git_diff_survives_a_driver_that_cannot_run(tmp_path, capsys):
    from ptxdiff.gitdiff import install as installmod

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/b c.py": "x = 1\n"})
    rc = installmod.install(Repo(repo), python=str(tmp_path / "no-such-python"))
    assert rc == 0
    write(repo, {"ops/k.py": scale_kernel(V2), "ops/b c.py": "x = 2\n"})
    rc, out, err = gitdiff(repo, "diff")
    assert rc == 0, err
    assert b"external diff died" not in out + err.encode()
    # a pipe gets git's own patch, byte for byte, even without Python (the shim re-runs git)
    assert out == gitdiff(repo, "diff", "--no-ext-diff")[1]
    # a person is told why there are no kernel lines, once
    rc, forced, err = gitdiff(repo, "diff", env={"PTXDIFF_FORCE": "1"})
    assert rc == 0, err
    assert forced.count(b"cannot run ptxdiff") == 1
    assert b"+    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)" in forced


@pytest.mark.parametrize("config", [[], ["-c", "color.diff=always"], ["-c", "diff.noprefix=true"],
                                    ["-c", "core.abbrev=12"]])
def test_piped_git_diff_is_byte_identical_and_applies(tmp_path, capsys, config):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER, "ops/gone.py": scale_kernel(name="gone_kernel"),
                                "ops/mode.py": "x = 1\n", "ops/plain.py": "a = 1\n" * 10})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel(V2) + FILLER.replace("a + 3", "a - 3"),
                 "ops/plain.py": "a = 1\n" * 5 + "b = 2\n" + "a = 1\n" * 4})
    (repo / "ops" / "gone.py").unlink()
    (repo / "ops" / "mode.py").chmod(0o755)
    rc, ours, err = gitdiff(repo, *config, "diff")
    assert rc == 0, err
    rc, theirs, _ = gitdiff(repo, *config, "diff", "--no-ext-diff")
    assert ours == theirs
    assert b"ops/k.py" in ours and b"ops/gone.py" in ours and b"ops/mode.py" in ours
    if config:
        return
    # the patch applies to a clean checkout and reproduces the change
    (tmp_path / "x.patch").write_bytes(ours)
    expected = snapshot_tree(repo, skip=(".git",))
    git(repo, "reset", "-q", "--hard")
    git(repo, "apply", "--check", str(tmp_path / "x.patch"))
    git(repo, "apply", str(tmp_path / "x.patch"))
    assert snapshot_tree(repo, skip=(".git",)) == expected


def test_git_diff_survives_odd_files(tmp_path, capsys):
    """New, deleted, renamed, mode-only, binary-named-.py and syntax-error files: git diff exits 0
    and prints its plain diff each time (kernel lines aside, byte for byte)."""
    base = {"ops/gone.py": scale_kernel(name="gone_kernel"), "ops/moved.py": scale_kernel(name="moved_kernel") + FILLER,
            "ops/mode.py": scale_kernel(name="mode_kernel"), "ops/bin.py": b"\x00\x01 triton jit \x00\x02",
            "ops/syn.py": scale_kernel(name="syn_kernel")}
    repo = make_repo(tmp_path, base)
    install(repo, capsys)
    git(repo, "mv", "ops/moved.py", "ops/moved2.py")
    git(repo, "rm", "-q", "ops/gone.py")
    (repo / "ops" / "mode.py").chmod(0o755)
    write(repo, {"ops/new.py": scale_kernel(name="new_kernel") + FILLER.replace("helper", "other"),
                 "ops/bin.py": b"\x00\x03 triton jit \x00\xff\xfe",
                 "ops/syn.py": scale_kernel(name="syn_kernel") + "\ndef broken(:\n    pass\n"})
    git(repo, "add", "-A")
    commit(repo, "odd files")

    checks = [("diff", "-M", "HEAD~1", "HEAD"), ("diff", "-M", "--cached", "HEAD~1"), ("diff", "HEAD~1")]
    for args in checks:
        rc, plain, _ = gitdiff(repo, *args, "--no-ext-diff")
        assert rc == 0
        rc, piped, err = gitdiff(repo, *args)
        assert rc == 0, (args, err)
        assert piped == plain, args
        rc, forced, err = gitdiff(repo, *args, env={"PTXDIFF_FORCE": "1"})
        assert rc == 0, (args, err)
        assert without_kernel_lines(forced) == plain, args
        assert b"external diff died" not in forced + err.encode()
        lines = kernel_lines(forced.decode(errors="replace"))
        by_kernel = {ln.split()[2]: ln for ln in lines}
        assert " added " in by_kernel["ops/new.py::new_kernel"], lines
        assert " failed " in by_kernel["ops/syn.py::syn_kernel"] and "SyntaxError" in by_kernel["ops/syn.py::syn_kernel"]
        assert "ops/mode.py::mode_kernel" not in by_kernel       # mode-only: nothing compiled changed
        assert not any("gone_kernel" in k for k in by_kernel) or " removed " in by_kernel.get(
            "ops/gone.py::gone_kernel", " removed ")
        for k, ln in by_kernel.items():
            if k.startswith("ops/bin.py"):
                assert " failed " in ln
        if args[-1] == "HEAD":                                   # committed rename: the kernel is unchanged
            assert not any("moved_kernel" in k for k in by_kernel), lines
    for path in ("ops/new.py", "ops/gone.py", "ops/moved2.py", "ops/mode.py", "ops/bin.py", "ops/syn.py"):
        assert path.encode() in plain


def test_git_diff_staged_pure_rename_reports_nothing(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER})
    install(repo, capsys)
    git(repo, "mv", "ops/k.py", "ops/k2.py")
    rc, forced, err = gitdiff(repo, "diff", "--cached", "-M", env={"PTXDIFF_FORCE": "1"})
    assert rc == 0, err
    assert b"rename to ops/k2.py" in forced
    assert kernel_lines(forced.decode()) == []


def test_git_diff_staged_rename_with_an_edit_compares_against_the_old_name(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER})
    install(repo, capsys)
    git(repo, "mv", "ops/k.py", "ops/k2.py")
    (repo / "ops/k2.py").write_text(scale_kernel("x * 3.5") + FILLER)
    git(repo, "add", "-A")
    rc, forced, err = gitdiff(repo, "diff", "--cached", "-M", env={"PTXDIFF_FORCE": "1"})
    assert rc == 0, err
    lines = kernel_lines(forced.decode())
    assert lines and all("ops/k2.py::scale_kernel" in ln for ln in lines)
    assert not any(" added" in ln for ln in lines), lines


@pytest.mark.parametrize("option", ["-U0", "-W", "--word-diff", "--stat"])
def test_piped_git_diff_with_context_option_is_identical(tmp_path, capsys, option):
    """git passes no diff options to an external driver; the driver re-runs git's own command."""
    repo = make_repo(tmp_path, {"ops/plain.py": "a = 1\n" * 10})
    install(repo, capsys)
    write(repo, {"ops/plain.py": "a = 1\n" * 5 + "b = 2\n" + "a = 1\n" * 4})
    assert gitdiff(repo, "diff", option)[1] == gitdiff(repo, "diff", option, "--no-ext-diff")[1]


def test_driver_never_fails_on_malformed_arguments(tmp_path, capsys, monkeypatch):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/plain.py": "x = 1\n"})
    install(repo, capsys)
    monkeypatch.chdir(repo)
    zero, blob = "0" * 40, head(repo, "HEAD:ops/k.py")
    missing = str(tmp_path / "does-not-exist.py")
    # named cases, each in its own process as git would run it
    cases = [[], ["ops/k.py"], ["ops/k.py", "ops/k.py"],
             ["ops/k.py", missing, blob, "100644", missing, zero, "100644"],
             ["ops/k.py", "ops/k.py", blob, "100644", "ops/k.py", zero, "100644", "extra"],
             ["ops/k.py", "/dev/null", ".", ".", "/dev/null", ".", ".", "ops/x.py", "garbage header"],
             ["ops/k.py", "ops/k.py", "not-hex", "bad-mode", "ops/plain.py", "zz", "777", "", ""]]
    for args in cases:
        proc = ptxdiff(["diff-driver", *args], repo, env={"PTXDIFF_FORCE": "1"})
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stdout + proc.stderr, args
    proc = ptxdiff(["diff-driver"], repo)
    assert proc.returncode == 0 and "expects 1, 7 or 9 arguments" in proc.stdout

    # a fuzz loop in-process, fixed seed
    monkeypatch.setenv("PTXDIFF_FORCE", "1")
    pool = ["ops/k.py", "ops/plain.py", "/dev/null", ".", zero, blob, blob[:7], "100644", "100755", "120000",
            missing, "", " ", "-", "--", "--help", "a b", "\x1b[31m", "ünï", "../../etc/passwd", str(tmp_path),
            "similarity index 90%\nrename from a\nrename to b", "0" * 64, "-1"]
    rng = random.Random(20240601)
    for _ in range(60):
        args = [rng.choice(pool) for _ in range(rng.choice([0, 1, 2, 6, 7, 7, 8, 9, 9, 10]))]
        rc, out, err = run_main(["diff-driver", *args], capsys)
        assert rc == 0, args
        assert "Traceback" not in out + err, args


# ---------------------------------------------------------------------------------------------
# install / uninstall

def git_state(repo, hooks_dir) -> dict:
    return {"config": (repo / ".git" / "config").read_bytes(),
            "info": snapshot_tree(repo / ".git" / "info"),
            "hooks": snapshot_tree(hooks_dir),
            "hooks_exists": hooks_dir.exists(),
            "ptxdiff_dir": (repo / ".git" / "ptxdiff").exists(),
            "gitattributes": (repo / ".gitattributes").read_bytes() if (repo / ".gitattributes").exists() else None,
            "all": snapshot_tree(repo, skip=GIT_STATE_SKIP)}


FOREIGN_HOOK = "#!/bin/sh\necho \"FOREIGN HOOK RAN $1\" >&2\ncat >/dev/null\nexit ${FOREIGN_RC:-0}\n"


@pytest.mark.parametrize("variant", ["plain", "foreign-hook", "relative-hooks-path", "gitattributes"])
def test_uninstall_restores_everything_byte_for_byte(tmp_path, capsys, variant):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    hooks = repo / ".git" / "hooks"
    extra = []
    if variant == "foreign-hook":
        (hooks / "pre-push").write_text(FOREIGN_HOOK)
        (hooks / "pre-push").chmod(0o750)
    elif variant == "relative-hooks-path":
        git(repo, "config", "core.hooksPath", "githooks")
        hooks = repo / "githooks"
    elif variant == "gitattributes":
        (repo / ".gitattributes").write_bytes(b"*.bin binary")       # no final newline
        extra = ["--attributes", "commit"]
    # something of the user's in the same sections install writes to
    git(repo, "config", "diff.tool", "vimdiff")
    before = git_state(repo, hooks)

    install(repo, capsys, *extra)
    installed = git_state(repo, hooks)
    assert installed["config"] != before["config"]
    assert b"ptxdiff" in installed["config"]
    if variant == "gitattributes":
        assert b"*.py diff=ptxdiff" in installed["gitattributes"]
    else:
        assert b"*.py diff=ptxdiff" in (repo / ".git" / "info" / "attributes").read_bytes()
    if CONFIG_HOOKS:                       # git >= 2.54: a config-defined hook, no hook file
        assert b"hook.ptxdiff" in installed["config"] or b'[hook "ptxdiff"]' in installed["config"]
    else:
        hook = hooks / "pre-push"
        assert hook.exists() and os.access(hook, os.X_OK)
        assert "ptxdiff" in hook.read_text()
        if variant == "foreign-hook":
            legacy = hooks / "pre-push.ptxdiff-legacy"
            assert legacy.read_text() == FOREIGN_HOOK

    rc, _, err = run_main(["uninstall", "-C", str(repo)], capsys)
    assert rc == 0, err
    after = git_state(repo, hooks)
    for key in before:
        assert after[key] == before[key], key
    # a second uninstall says it is not installed (usage error), changes nothing
    rc, _, err = run_main(["uninstall", "-C", str(repo)], capsys)
    assert rc == 2 and "not installed" in err
    assert git_state(repo, hooks) == before


def test_install_twice_then_uninstall_restores(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    before = git_state(repo, repo / ".git" / "hooks")
    install(repo, capsys)
    once = git_state(repo, repo / ".git" / "hooks")
    install(repo, capsys)
    assert git_state(repo, repo / ".git" / "hooks")["all"] == once["all"]
    assert run_main(["uninstall", "-C", str(repo)], capsys)[0] == 0
    assert git_state(repo, repo / ".git" / "hooks") == before


def test_install_refuses_hooks_path_dev_null(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    git(repo, "config", "core.hooksPath", "/dev/null")
    before = snapshot_tree(repo, skip=GIT_STATE_SKIP)
    rc, out, err = run_main(["install", "-C", str(repo)], capsys)
    assert rc == 2
    assert "core.hooksPath" in err and "/dev/null" in err
    assert len(err.strip().splitlines()) == 1
    assert snapshot_tree(repo, skip=GIT_STATE_SKIP) == before


def test_install_dry_run_changes_nothing(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    (repo / ".git" / "hooks" / "pre-push").write_text(FOREIGN_HOOK)
    before = snapshot_tree(repo)
    rc, out, err = run_main(["install", "-C", str(repo), "--dry-run"], capsys)
    assert rc == 0, err
    assert "would" in out and "diff.ptxdiff.command" in out and "pre-push" in out
    assert snapshot_tree(repo) == before


# ---------------------------------------------------------------------------------------------
# the pre-push gate, with real pushes

def push(repo, *args, env=None):
    return git(repo, "push", *args, check=False, env=env)


def test_push_of_structural_change_needs_approval(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/gelu.py": corpus("gelu", "old"), "README": "r\n"})
    unapproved = commit(repo, "gelu: drop the 0.5", {"ops/gelu.py": corpus("gelu", "new")})

    p = push(repo, "origin", "main")
    assert p.returncode != 0
    assert GELU in p.stderr and "Ptx-Approved" in p.stderr and "structural" in p.stderr
    assert remote_has(bare, "main") != unapproved

    # bypasses
    p = push(repo, "origin", "main:refs/heads/skipped", env={"PTXDIFF_SKIP": "1"})
    assert p.returncode == 0, p.stderr
    assert "SKIPPED" in p.stderr
    p = push(repo, "--no-verify", "origin", "main:refs/heads/no-verify")
    assert p.returncode == 0, p.stderr
    assert remote_has(bare, "no-verify") == unapproved

    # approvals: the full id, the bare function name, "*"; another kernel's name does not count
    for i, (value, ok) in enumerate([("ops/other.py::other_kernel", False), (GELU, True), ("gelu_kernel", True),
                                     ("*", True)]):
        git(repo, "checkout", "-q", "-B", f"try{i}", unapproved)
        git(repo, "commit", "-q", "--amend", "--no-edit", "--trailer", f"Ptx-Approved: {value}")
        p = push(repo, "origin", f"try{i}")
        assert (p.returncode == 0) == ok, (value, p.stderr)
        assert (remote_has(bare, f"try{i}") is not None) == ok
    # and the approved history can go to main
    git(repo, "checkout", "-q", "main")
    git(repo, "reset", "-q", "--hard", "try1")
    p = push(repo, "origin", "main")
    assert p.returncode == 0, p.stderr
    assert remote_has(bare, "main") == head(repo)


def test_push_checks_every_ref_new_branches_and_deletes(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/leaky.py": corpus("leaky_relu", "old"),
                                                 "ops/gelu.py": corpus("gelu", "old")})
    git(repo, "checkout", "-q", "-b", "a")
    commit(repo, "leaky slope", {"ops/leaky.py": corpus("leaky_relu", "new")})       # constants-only
    git(repo, "checkout", "-q", "-b", "b", "main")
    commit(repo, "gelu change", {"ops/gelu.py": corpus("gelu", "new")})              # structural

    p = push(repo, "origin", "a", "b")                    # only the second ref blocks
    assert p.returncode != 0
    assert GELU in p.stderr and "refs/heads/b" in p.stderr
    assert LEAKY not in p.stderr
    assert remote_has(bare, "a") is None and remote_has(bare, "b") is None

    git(repo, "checkout", "-q", "a")
    write(repo, {"ops/gelu.py": corpus("gelu", "new")})   # the work tree is not what is pushed
    p = push(repo, "origin", "a")                          # a new branch with a constants-only change
    assert p.returncode == 0, p.stderr
    assert remote_has(bare, "a") == head(repo, "a")

    p = push(repo, "--no-verify", "origin", "b")
    assert p.returncode == 0
    p = push(repo, "origin", "--delete", "b")              # deleting a branch pushes nothing to check
    assert p.returncode == 0, p.stderr
    assert remote_has(bare, "b") is None


def test_foreign_pre_push_hook_runs_first_and_can_fail_the_push(tmp_path, capsys):
    repo, bare = pushed_repo(tmp_path, capsys, {"ops/k.py": scale_kernel()}, hook=FOREIGN_HOOK)
    commit(repo, "structural", {"ops/k.py": scale_kernel(V2)})
    p = push(repo, "origin", "main")
    assert p.returncode != 0
    assert "FOREIGN HOOK RAN origin" in p.stderr and "ops/k.py::scale_kernel" in p.stderr
    if not CONFIG_HOOKS:
        assert p.stderr.index("FOREIGN HOOK RAN") < p.stderr.index("ops/k.py::scale_kernel")
    p = push(repo, "origin", "main", env={"FOREIGN_RC": "1"})
    assert p.returncode != 0 and "FOREIGN HOOK RAN" in p.stderr
    if not CONFIG_HOOKS:
        assert "ops/k.py::scale_kernel" not in p.stderr      # the foreign verdict stops it before ptxdiff
    p = push(repo, "origin", "main", env={"FOREIGN_RC": "1", "PTXDIFF_SKIP": "1"})
    assert p.returncode != 0                                  # skipping ptxdiff does not skip the user's hook
    p = push(repo, "origin", "main", env={"PTXDIFF_SKIP": "1"})
    assert p.returncode == 0 and "FOREIGN HOOK RAN" in p.stderr and "SKIPPED" in p.stderr


# ---------------------------------------------------------------------------------------------
# history

def test_log_lists_the_commits_that_changed_the_kernel(tmp_path, capsys, cache):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER, "README": "a\n"}, message="c1 add kernel")
    c = {"c1": head(repo)}
    c["c2"] = commit(repo, "c2 readme only", {"README": "b\n"})
    c["c3"] = commit(repo, "c3 kernel structural", {"ops/k.py": scale_kernel(V2) + FILLER})
    c["c4"] = commit(repo, "c4 comment only", {"ops/k.py": "# a comment\n" + scale_kernel(V2) + FILLER})
    git(repo, "mv", "ops/k.py", "ops/k2.py")
    c["c5"] = commit(repo, "c5 rename the file")
    c["c6"] = commit(repo, "c6 kernel again", {"ops/k2.py": "# a comment\n" + scale_kernel("x * x + 1.0") + FILLER})

    from ptxdiff.compare.history import history
    engine = Engine(Repo(repo), jobs=2)
    events = history(Repo(repo), engine, "scale_kernel").events
    assert [e.commit.id for e in events] == [c["c1"], c["c3"], c["c6"]]
    assert [e.kernel for e in events] == ["ops/k.py::scale_kernel", "ops/k.py::scale_kernel",
                                          "ops/k2.py::scale_kernel"]
    assert [[r.verdict for r in e.rows] for e in events] == [["added"], ["structural"], ["structural"]]
    assert events[2].rows[0].old_kernel == "ops/k.py::scale_kernel"       # followed through the rename
    assert engine.measurer.compiles == 3                                     # each distinct version once
    assert len(cache_entries(cache)) == 3

    # the CLI, by full id and range; all from the cache now
    rc, out, err = run_main(["log", "ops/k2.py::scale_kernel", "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    assert [e["commit"] for e in json.loads(out)] == [c["c1"], c["c3"], c["c6"]]
    rc, out, err = run_main(["log", "scale_kernel", "-C", str(repo), "-q"], capsys)
    assert rc == 0, err
    shown = {sha for sha in c.values() if sha[:7] in out}
    assert shown == {c["c1"], c["c3"], c["c6"]}
    rc, out, err = run_main(["log", "scale_kernel", "HEAD~3..HEAD", "-C", str(repo), "--format", "json", "-q"], capsys)
    assert rc == 0, err
    # the range starts from the kernel at HEAD~3 (c3): c4's comment is no change, c6 is
    assert [e["commit"] for e in json.loads(out)] == [c["c6"]]
    assert len(cache_entries(cache)) == 3
    rc, _, err = run_main(["log", "no_such_kernel", "-C", str(repo)], capsys)
    assert rc == 2 and "no_such_kernel" in err


def test_notes_are_written_and_shown_by_git_log(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()}, message="add kernel")
    readme = commit(repo, "readme", {"README": "x\n"})
    changed = commit(repo, "kernel change", {"ops/k.py": scale_kernel(V2)})
    rc, out, err = run_main(["notes", "-C", str(repo), "-q"], capsys)
    assert rc == 0, err
    assert "refs/notes/ptxdiff" in out
    assert git(repo, "rev-parse", "--verify", "refs/notes/ptxdiff").returncode == 0
    noted = {ln.split()[1] for ln in git(repo, "notes", "--ref=ptxdiff", "list").stdout.splitlines()}
    assert changed in noted and readme not in noted
    log = git(repo, "log", "--notes=ptxdiff", "-1", changed).stdout
    assert "Notes (ptxdiff):" in log
    line = next(ln for ln in log.splitlines() if "ops/k.py::scale_kernel" in ln)
    assert "structural" in line
    assert "ops/k.py::scale_kernel" not in git(repo, "log", "--notes=ptxdiff", "-1", readme).stdout
