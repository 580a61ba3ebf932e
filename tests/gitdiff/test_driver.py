"""The diff driver under real `git diff`, `git show --ext-diff` and `git log -p --ext-diff`:
each kernel line is what `Engine.compare(old, new)` says for the two revisions git compares
(helpers in other files and the newer side's config included), wherever HEAD is; the wait on
compiles is bounded by driver_budget; files without kernels get no line; the shim is
hooks/diff-driver filled in by `ptxdiff install`; the repository's code is never imported.

Git runs the driver as its own process, so everything here goes through real `git`.
"""

from __future__ import annotations

import fcntl
import io
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import (
    HEADER,
    KERNEL_LINE_INDENT,
    ROOT,
    commit,
    driver_notes,
    git,
    head,
    install,
    kernel_lines,
    make_repo,
    run_main,
    scale_kernel,
    write,
)
from ptxdiff.compare.engine import Engine
from ptxdiff.git.repo import INDEX, Repo, Side
from ptxdiff.report.driver_lines import block

WAIT = {"PTXDIFF_DRIVER_BUDGET": "600"}   # wait for every compile (no test depends on the clock)
FORCE = {"PTXDIFF_FORCE": "1", **WAIT}

UTIL = HEADER + """

@triton.jit
def act(x):
    return x * 2.0
"""
GELU = HEADER + """from .util import act


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 256):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, act(x) + 0.5 * x, mask=mask)
"""
FILLER = "".join(f"\n\ndef helper_{i}(a):\n    return a + {i}\n" for i in range(6))


def gitout(repo, *args, env=None) -> str:
    proc = git(repo, *args, env=env, text=False)
    assert b"external diff died" not in proc.stdout + proc.stderr
    return proc.stdout.decode("utf-8", "replace")


def expected(repo, old: Side, new: Side, paths=None) -> list[str]:
    """What `ptxdiff diff` computes for these two sides, as the driver's lines."""
    report = Engine(Repo(repo)).compare(old, new, paths)
    return [ln for r in report.rows for ln in kernel_lines(block(SimpleNamespace(rows=[r]), False))]


def commit_side(repo, rev: str) -> Side:
    return Side(rev, head(repo, rev))


def pieces(text: str) -> dict[str, str]:
    """Each file's part of the output (its patch and the lines after it), by file name."""
    out, name = {}, None
    for ln in text.splitlines(keepends=True):
        if ln.startswith("diff --git "):
            name = ln.split()[-1][2:]
            out[name] = ""
        if name:
            out[name] += ln
    return out


@pytest.fixture
def branchy(tmp_path, capsys):
    """main: ops/util.py (a jit helper) and ops/gelu.py (a kernel that calls it); branch: one
    commit changes the helper, the next the kernel; main then moves on, and stays checked out."""
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/util.py": UTIL, "ops/gelu.py": GELU + FILLER,
                                "README": "r\n"})
    install(repo, capsys)
    git(repo, "checkout", "-q", "-b", "branch")
    commit(repo, "helper", {"ops/util.py": UTIL.replace("x * 2.0", "x * x * 2.0 + x")})
    commit(repo, "kernel", {"ops/gelu.py": GELU.replace("+ 0.5 * x", "+ 0.5 * x * x") + FILLER})
    git(repo, "checkout", "-q", "main")
    commit(repo, "main moves on", {"README": "r2\n"})
    return repo


@pytest.mark.integration
def test_branch_range_shows_what_ptxdiff_diff_says_with_main_checked_out(branchy):
    repo = branchy
    fork = commit_side(repo, "main~1")
    truth = expected(repo, commit_side(repo, "main"), commit_side(repo, "branch"))
    assert truth and all(" structural" in ln for ln in truth)
    # the blob-over-HEAD guess reads the branch's helper from main: it gives other numbers
    assert truth != expected(repo, commit_side(repo, "main"),
                             Side("guess", head(repo, "main"), (("ops/gelu.py", head(repo, "branch:ops/gelu.py")),)))
    for form in (["main..branch"], ["main", "branch"]):
        text = gitout(repo, "diff", *form, env=FORCE)
        assert kernel_lines(text) == truth, form
        by_file = pieces(text)
        assert kernel_lines(by_file["ops/gelu.py"]) == truth        # under the kernel's own file
        assert kernel_lines(by_file["ops/util.py"]) == []
    text = gitout(repo, "diff", "main...branch", env=FORCE)         # from the merge base
    assert kernel_lines(text) == expected(repo, fork, commit_side(repo, "branch"))
    text = gitout(repo, "diff", "-R", "main", "branch", env=FORCE)  # reversed: branch -> main
    assert kernel_lines(text) == expected(repo, commit_side(repo, "branch"), commit_side(repo, "main"))


@pytest.mark.integration
def test_log_and_show_compare_each_commit_with_its_parent(branchy):
    repo = branchy
    fork, helper, kernel = (commit_side(repo, r) for r in ("main~1", "branch~1", "branch"))
    by_helper = expected(repo, fork, helper)     # the helper's commit changes the kernel too
    by_kernel = expected(repo, helper, kernel)
    assert by_helper and by_kernel and by_helper != by_kernel
    text = gitout(repo, "log", "-p", "--ext-diff", "main..branch", env=FORCE)
    newest, older = text.split("\ncommit ")[0], text.split("\ncommit ")[1]
    assert kernel_lines(newest) == by_kernel
    assert kernel_lines(older) == by_helper     # under util.py: the shown file the kernel reads
    assert kernel_lines(pieces(older)["ops/util.py"]) == by_helper
    assert kernel_lines(gitout(repo, "show", "--ext-diff", "branch", env=FORCE)) == by_kernel
    assert kernel_lines(gitout(repo, "show", "--ext-diff", "branch~1", env=FORCE)) == by_helper
    # plain `git show` / `git log -p` never run a driver
    assert kernel_lines(gitout(repo, "show", "branch", env=FORCE)) == []


@pytest.mark.integration
def test_work_tree_index_and_cached_are_three_comparisons(branchy):
    repo = branchy
    write(repo, {"ops/util.py": UTIL.replace("x * 2.0", "tl.exp(x) * 2.0")})
    git(repo, "add", "ops/util.py")                                                  # staged: the helper
    write(repo, {"ops/gelu.py": GELU.replace("+ 0.5 * x", "+ 0.5 * x * x * x") + FILLER})  # not staged: the kernel
    index, work, head_ = Side("index", INDEX), Side("work tree", None), commit_side(repo, "HEAD")
    forms = {("diff",): (index, work), ("diff", "--cached"): (head_, index), ("diff", "HEAD"): (head_, work)}
    seen = []
    for args, (old, new) in forms.items():
        truth = expected(repo, old, new)
        assert truth, args
        assert kernel_lines(gitout(repo, *args, env=FORCE)) == truth, args
        seen.append(truth)
    assert len({tuple(t) for t in seen}) == 3


@pytest.mark.integration
def test_new_files_that_import_each_other(tmp_path, capsys):
    repo = make_repo(tmp_path, {"README": "r\n"})
    install(repo, capsys)
    write(repo, {"ops/__init__.py": "", "ops/util.py": UTIL, "ops/gelu.py": GELU})
    git(repo, "add", "-A")
    text = gitout(repo, "diff", "--cached", env=FORCE)
    (line,) = kernel_lines(text)
    assert line.startswith("ptxdiff sm_90 ops/gelu.py::gelu_kernel ") and " added " in line
    assert line == expected(repo, commit_side(repo, "HEAD"), Side("index", INDEX))[0]


@pytest.mark.integration
def test_the_base_side_s_targets_count(tmp_path, capsys):
    """Targets are policy: a change that edits them is reviewed under the base side's."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    commit(repo, "sm_80 and a change", {"ops/k.py": scale_kernel("x * 3.0"),
                                        "pyproject.toml": '[tool.ptxdiff]\ntargets = ["sm_80"]\n'})
    (line,) = kernel_lines(gitout(repo, "diff", "HEAD~1", "HEAD", env=FORCE))
    assert line.startswith("ptxdiff sm_90 ops/k.py::scale_kernel ")
    (line,) = kernel_lines(gitout(repo, "diff", "HEAD", "HEAD~1", env=FORCE))   # base: the commit with sm_80
    assert line.startswith("ptxdiff sm_80 ops/k.py::scale_kernel ")


def wait_for_filler(repo) -> None:
    """Until the queued comparisons are done: run a filler here (it stops at once when the
    background one holds the lock), then wait on the lock; again while requests are queued."""
    state = Path(repo) / ".git" / "ptxdiff" / "driver"
    while True:
        subprocess.run([sys.executable, "-I", "-m", "ptxdiff", "driver-fill", str(state)], check=True,
                       capture_output=True)
        fd = os.open(state / "lock", os.O_RDWR)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.close(fd)
        if not os.listdir(state / "queue"):
            return


@pytest.mark.integration
@pytest.mark.parametrize("how", ["env", "config"])
def test_past_the_budget_git_diff_says_what_is_compiling_and_the_cache_fills(tmp_path, capsys, how):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER, "ops/plain.py": "x = 1\n", "README": "r\n"})
    install(repo, capsys)
    # README comes first and git prints it itself: the note goes after the first .py file
    write(repo, {"ops/k.py": scale_kernel("x * 5.0") + FILLER, "ops/plain.py": "x = 2\n", "README": "s\n"})
    env = {"PTXDIFF_FORCE": "1"}
    if how == "env":
        env["PTXDIFF_DRIVER_BUDGET"] = "0"
    else:
        write(repo, {"pyproject.toml": "[tool.ptxdiff]\ndriver_budget = 0\n"})
    plain = gitout(repo, "diff", "--no-ext-diff")
    text = gitout(repo, "diff", env=env)
    assert kernel_lines(text) == []
    notes = driver_notes(text)
    assert len(notes) == 1 and "past driver_budget" in notes[0] and "run git diff again" in " ".join(notes[0].split())
    assert all(len(ln) <= 100 for ln in notes[0].splitlines())
    assert text.replace(notes[0] + "\n", "") == plain   # git's patch is all there, the note follows it
    assert (Path(repo) / ".git" / "ptxdiff" / "driver" / "filler.log").exists()   # it was started
    wait_for_filler(repo)
    lines = kernel_lines(gitout(repo, "diff", env=env))
    assert lines == expected(repo, Side("index", INDEX), Side("work tree", None))
    assert lines and " structural" in lines[0]


@pytest.mark.integration
def test_files_without_kernels_get_no_line(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/plain.py": "x = 1\n", "setup.py": "s = 1\n"})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x + 1.0"), "ops/plain.py": "x = 2\n", "setup.py": "s = 2\n"})
    text = gitout(repo, "diff", env=FORCE)
    by_file = pieces(text)
    assert len(kernel_lines(by_file["ops/k.py"])) == 1
    assert "ptxdiff" not in by_file["ops/plain.py"] + by_file["setup.py"]
    # only .py files without kernels: nothing at all is added
    assert gitout(repo, "diff", "--", "setup.py", "ops/plain.py", env=FORCE) == \
        gitout(repo, "diff", "--no-ext-diff", "--", "setup.py", "ops/plain.py")


@pytest.mark.integration
@pytest.mark.parametrize("bad", [{"PTXDIFF_SKIP": "2"}, {"PTXDIFF_FORCE": "maybe"}])
def test_a_bad_setting_under_git_diff_is_one_line_after_git_s_whole_diff(tmp_path, capsys, bad):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x + 1.0")})
    proc = git(repo, "diff", env={**FORCE, **bad}, text=False)
    assert proc.returncode == 0 and proc.stdout == git(repo, "diff", "--no-ext-diff", text=False).stdout
    (name, value), = bad.items()
    assert proc.stderr.decode() == f"ptxdiff: {name}={value!r}: expected 1 or 0 (true/false, yes/no, on/off)\n"


@pytest.mark.integration
def test_revisions_that_cannot_be_told_are_said_not_guessed(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    commit(repo, "change", {"ops/k.py": scale_kernel("x - 1.0")})
    install(repo, capsys)
    text = gitout(repo, "diff", "HEAD~1:ops", "HEAD:ops", env=FORCE)   # two trees, not commits
    assert kernel_lines(text) == []
    (note,) = driver_notes(text)
    assert "no kernel lines" in note


@pytest.mark.integration
def test_the_repository_s_code_is_never_imported(tmp_path, capsys):
    marker = tmp_path / "imported"
    evil = f"open({str(marker)!r}, 'w').write('x')\n"
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ptxdiff/__init__.py": evil, "ptxdiff/driver.py": evil,
                                "sitecustomize.py": evil, "usercustomize.py": evil, "os.py": evil})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x * 4.0")})
    for cwd in (repo, repo / "ops"):
        text = gitout(cwd, "diff", env=FORCE)
        assert len(kernel_lines(text)) == 1
    assert not marker.exists()


@pytest.mark.integration
def test_install_writes_the_hooks_shim_and_uninstall_removes_it(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    template = (ROOT / "hooks" / "diff-driver").read_text()
    assert template.count("@PYTHON@") == 1 and template.count("@ROOT@") == 1
    install(repo, capsys)
    shim = repo / ".git" / "ptxdiff" / "diff-driver"
    assert git(repo, "config", "diff.ptxdiff.command").stdout.strip() == str(shim)
    assert os.access(shim, os.X_OK)
    text = shim.read_text()
    assert text == template.replace("@PYTHON@", sys.executable).replace("@ROOT@", str(ROOT))
    assert subprocess.run(["sh", "-n", str(shim)]).returncode == 0
    assert run_main(["uninstall", "-C", str(repo)], capsys)[0] == 0
    assert not shim.exists() and not (repo / ".git" / "ptxdiff").exists()


@pytest.mark.integration
def test_pager_and_colour(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel("x * 6.0")})
    paged = gitout(repo, "-c", "color.diff=always", "diff", env={"GIT_PAGER_IN_USE": "true", **WAIT})
    (line,) = [ln for ln in paged.splitlines() if "ptxdiff sm_90" in ln]
    assert line.startswith("\x1b[2mptxdiff sm_90 ops/k.py::scale_kernel")
    lines = paged.splitlines(keepends=True)
    first = lines.index(line + "\n")
    end = first + 1
    while end < len(lines) and lines[end].startswith(KERNEL_LINE_INDENT):
        end += 1
    assert "why:" in "".join(lines[first:end])          # the row goes on, indented: why the verdict
    assert "".join(lines[:first] + lines[end:]) == gitout(repo, "-c", "color.diff=always", "diff", "--no-ext-diff")
    plain = gitout(repo, "diff", env={"GIT_PAGER_IN_USE": "true", "NO_COLOR": "1", **WAIT})
    assert kernel_lines(plain)[0].startswith("ptxdiff sm_90 ")


@pytest.mark.integration
def test_spools_of_finished_git_commands_are_cleaned(tmp_path, capsys):
    repo = make_repo(tmp_path, {"a.py": "x = 1\n"})
    install(repo, capsys)
    write(repo, {"a.py": "x = 2\n"})
    for _ in range(3):
        gitout(repo, "diff")
    assert len(os.listdir(repo / ".git" / "ptxdiff" / "driver" / "spool")) == 1


@pytest.mark.integration
def test_odd_names_and_symlinks_get_their_own_lines_only(tmp_path, capsys):
    files = {"ops/k[1].py": scale_kernel(name="bracket_kernel"), "ops/k1.py": scale_kernel(name="one_kernel"),
             "ops/a b.py": scale_kernel(name="space_kernel")}
    repo = make_repo(tmp_path, files)
    os.symlink("k1.py", repo / "ops" / "link.py")
    commit(repo, "a link")
    install(repo, capsys)
    write(repo, {name: text.replace("x * 2.0", "x * 7.0") for name, text in files.items()})
    (repo / "ops" / "link.py").unlink()
    os.symlink("a b.py", repo / "ops" / "link.py")
    text = gitout(repo, "diff", "--", ":(literal)ops/k[1].py", "ops/a b.py", "ops/link.py", env=FORCE)
    assert sorted(ln.split(" [")[0].split(" ", 2)[2] for ln in kernel_lines(text)) == [
        "ops/a b.py::space_kernel", "ops/k[1].py::bracket_kernel"]
    assert "ptxdiff:" not in text


@pytest.mark.integration
def test_log_m_compares_a_merge_with_each_parent(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel() + FILLER})
    install(repo, capsys)
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, "side", {"ops/k.py": scale_kernel("x * 3.0") + FILLER})
    git(repo, "checkout", "-q", "main")
    commit(repo, "main", {"ops/k.py": scale_kernel() + FILLER.replace("a + 5", "a + 55")})
    git(repo, "merge", "-q", "--no-edit", "side")
    merge, first, second = (commit_side(repo, r) for r in ("HEAD", "HEAD^1", "HEAD^2"))
    text = gitout(repo, "log", "-p", "-m", "--ext-diff", "-1", env=FORCE)
    assert kernel_lines(text) == expected(repo, first, merge) + expected(repo, second, merge)
    assert expected(repo, first, merge) and not expected(repo, second, merge)


@pytest.mark.integration
def test_a_driver_installed_by_an_older_ptxdiff_still_works(tmp_path, capsys):
    """Older installs point git at `python -m ptxdiff diff-driver` (no shim): slower, same output."""
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/p q.py": "x = 1\n"})
    install(repo, capsys)
    git(repo, "config", "diff.ptxdiff.command", f"{sys.executable} -m ptxdiff diff-driver")
    write(repo, {"ops/k.py": scale_kernel("x * 9.0"), "ops/p q.py": "x = 2\n"})
    assert gitout(repo, "diff") == gitout(repo, "diff", "--no-ext-diff")
    assert kernel_lines(gitout(repo, "diff", env=FORCE)) == expected(repo, Side("index", INDEX), Side("wt", None))


def test_driver_budget_is_a_checked_config_key():
    from ptxdiff.errors import ConfigError
    from ptxdiff.repo_config import parse

    assert parse({}, "p").driver_budget == 10.0
    assert parse({"driver_budget": 2}, "p").driver_budget == 2.0
    for bad in (-1, 601, "5", True):
        with pytest.raises(ConfigError, match="driver_budget"):
            parse({"driver_budget": bad}, "p")


@pytest.mark.integration
def test_doctor_reads_the_interpreter_from_the_shim(tmp_path, capsys):
    from ptxdiff.gitdiff import install as installmod
    from ptxdiff.gitdiff.install import driver_python

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    command = git(repo, "config", "diff.ptxdiff.command").stdout.strip()
    assert driver_python(command) == sys.executable
    assert driver_python(f"f() {{ {sys.executable} -m ptxdiff diff-driver \"$@\"; }}; f") == sys.executable
    assert installmod.install(Repo(repo), python=str(tmp_path / "gone" / "python"), out=io.StringIO()) == 0
    rc, out, _ = run_main(["doctor", "-C", str(repo)], capsys)
    assert rc == 1 and f"FIX diff driver: {tmp_path / 'gone' / 'python'}" in out


@pytest.mark.integration
def test_linked_work_tree(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/plain.py": "x = 1\n"})
    install(repo, capsys)
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "other", str(linked))
    write(linked, {"ops/k.py": scale_kernel("x * 11.0"), "ops/plain.py": "x = 3\n"})
    assert gitout(linked, "diff") == gitout(linked, "diff", "--no-ext-diff")
    lines = kernel_lines(gitout(linked, "diff", env=FORCE))
    assert lines and lines == expected(linked, Side("index", INDEX), Side("work tree", None))
    assert (repo / ".git" / "ptxdiff" / "driver" / "results").is_dir()   # one filler and store per repository


@pytest.mark.integration
def test_without_a_git_command_the_driver_still_prints_git_s_diff(tmp_path, capsys):
    """Run by hand (no git process above it), the driver cannot re-run git's command: it diffs
    the two files itself and puts git's header back."""
    repo = make_repo(tmp_path, {"ops/p.py": "a = 1\n" * 5})
    install(repo, capsys)
    write(repo, {"ops/p.py": "a = 1\n" * 2 + "b = 2\n" + "a = 1\n" * 2})
    blob = head(repo, "HEAD:ops/p.py")
    old = tmp_path / "old.py"
    old.write_text("a = 1\n" * 5)
    proc = subprocess.run([sys.executable, "-m", "ptxdiff", "diff-driver", "ops/p.py", str(old), blob, "100644",
                           "ops/p.py", "0" * 40, "100644"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == gitout(repo, "diff", "--no-ext-diff")
