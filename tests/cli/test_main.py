"""The CLI contract: revision forms, exit codes, path filters, config errors, JSON, --check, targets.

`ptxdiff.cli.main` runs in-process where possible; `python -m ptxdiff` in a subprocess where the
process boundary is the point (exit status, what gets imported).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import (
    commit,
    corpus,
    git,
    head,
    install,
    make_repo,
    ptxdiff,
    run_json,
    run_main,
    scale_kernel,
    snapshot_tree,
    write,
)

V1, V2, V3 = "x * 2.0", "x * 2.0 + 1.0", "x * x"


# ---------------------------------------------------------------------------------------------
# revisions

@pytest.mark.integration
def test_revision_forms(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(V1)})
    c1 = head(repo)
    git(repo, "branch", "old")
    c2 = commit(repo, "v2", {"ops/k.py": scale_kernel(V2)})
    git(repo, "tag", "-a", "v2", "-m", "annotated tag")
    write(repo, {"ops/k.py": scale_kernel(V3)})

    forms = {
        (c1, c2): [[c1, c2], ["old", "main"], ["old", "v2"], ["HEAD~1", "HEAD"], ["HEAD~1..HEAD"],
                   [f"{c1}..{c2}"], ["old.."], [c1[:8], "v2^{commit}"], ["old...main"]],
        (c2, None): [[], ["HEAD"], ["v2"]],
        (c1, None): [["HEAD~1"], ["old"], [c1]],
    }
    seen = {}
    for (base, head_), variants in forms.items():
        for revs in variants:
            report = run_json(["diff", "-C", str(repo), *revs], capsys)
            assert (report["base"], report["head"]) == (base, head_), revs
            (row,) = report["kernels"]
            assert row["kernel"] == "ops/k.py::scale_kernel" and row["error"] is None, revs
            seen.setdefault((base, head_), set()).add(json.dumps([row["old"], row["new"]], sort_keys=True))
    # every spelling of one comparison measured the same two versions
    assert all(len(v) == 1 for v in seen.values()), seen
    # and the three comparisons are different ones
    assert len({next(iter(v)) for v in seen.values()}) == 3


@pytest.mark.integration
@pytest.mark.parametrize("revs", [["nosuchrev"], ["HEAD", "nosuchrev"], ["nosuchrev..HEAD"], ["HEAD~5"]])
def test_unknown_revision_exits_2_with_one_line(tmp_path, capsys, revs):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    rc, out, err = run_main(["diff", "-C", str(repo), *revs], capsys)
    assert rc == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ptxdiff: unknown revision"), err


@pytest.mark.integration
def test_unknown_revision_exit_status_of_the_process(tmp_path):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    proc = ptxdiff(["diff", "nosuchrev"], repo)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("ptxdiff: unknown revision")


@pytest.mark.integration
def test_not_a_git_repository_exits_2(tmp_path, capsys):
    plain = tmp_path / "plain"
    plain.mkdir()
    if git(plain, "rev-parse", "--git-dir", check=False).returncode == 0:
        pytest.skip("tmp_path is inside a git repository")
    rc, out, err = run_main(["diff", "-C", str(plain)], capsys)
    assert rc == 2 and out == ""
    assert "not a git repository" in err and len(err.strip().splitlines()) == 1


@pytest.mark.integration
def test_sha256_repository_is_a_clear_usage_error(tmp_path, capsys):
    repo = tmp_path / "sha256"
    repo.mkdir()
    if git(repo, "init", "-q", "--object-format=sha256", check=False).returncode != 0:
        pytest.skip("this git cannot make sha256 repositories")
    write(repo, {"ops/k.py": scale_kernel()})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "x")
    rc, out, err = run_main(["diff", "-C", str(repo)], capsys)
    if rc == 0:
        return                                   # a libgit2 that reads sha256 repositories: fine too
    assert rc == 2, err                          # not 3 ("internal error")
    assert "internal error" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.integration
def test_bad_usage_exits_2(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    assert run_main(["diff", "-C", str(repo), "--format", "yaml"], capsys)[0] == 2
    assert run_main(["diff", "-C", str(repo), "--target", "sm_7"], capsys)[0] == 2
    assert run_main(["diff", "-C", str(repo), "a", "b", "c"], capsys)[0] == 2


# ---------------------------------------------------------------------------------------------
# what is compared

@pytest.mark.integration
def test_path_filter(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(name="a_kernel"), "lib/b.py": scale_kernel(name="b_kernel")})
    write(repo, {"ops/a.py": scale_kernel(V2, name="a_kernel"), "lib/b.py": scale_kernel(V2, name="b_kernel")})
    monkeypatch.chdir(repo)
    report = run_json(["diff", "--", "ops/"], capsys)
    assert [r["kernel"] for r in report["kernels"]] == ["ops/a.py::a_kernel"]
    assert report["kernels"][0]["verdict"] == "structural"
    # paths after -- are relative to the cwd, like git's
    monkeypatch.chdir(repo / "lib")
    report = run_json(["diff", "--", "."], capsys)
    assert [r["kernel"] for r in report["kernels"]] == ["lib/b.py::b_kernel"]
    # no filter: both
    report = run_json(["diff", "-C", str(repo)], capsys)
    assert sorted(r["kernel"] for r in report["kernels"]) == ["lib/b.py::b_kernel", "ops/a.py::a_kernel"]


@pytest.mark.integration
def test_rename_of_kernel_file_is_followed(tmp_path, capsys):
    filler = "".join(f"\n\ndef helper_{i}(a):\n    return a + {i}\n" for i in range(8))
    repo = make_repo(tmp_path, {"ops/old_name.py": scale_kernel(V1) + filler})
    git(repo, "mv", "ops/old_name.py", "ops/new_name.py")
    commit(repo, "rename and change", {"ops/new_name.py": scale_kernel(V2) + filler})
    report = run_json(["diff", "-C", str(repo), "HEAD~1", "HEAD"], capsys)
    (row,) = report["kernels"]
    assert row["kernel"] == "ops/new_name.py::scale_kernel"
    assert row["renamed_from"] == "ops/old_name.py::scale_kernel"
    assert row["verdict"] == "structural"
    assert row["old"] is not None and row["new"] is not None


# ---------------------------------------------------------------------------------------------
# config errors

@pytest.mark.integration
@pytest.mark.parametrize("name,text,needles", [
    ("pyproject.toml", "[tool.ptxdiff]\ntargetz = ['sm_90']\n", ["pyproject.toml", "targetz"]),
    ("pyproject.toml", "[tool.ptxdiff\ntargets = ['sm_90']\n", ["pyproject.toml", "invalid TOML"]),
    ("pyproject.toml", "[tool.ptxdiff]\ntimeout = 'soon'\n", ["pyproject.toml", "timeout"]),
    ("pyproject.toml", '[tool.ptxdiff.kernels."ops/k.py::scale_kernel"]\nsignatur = { n = "i32" }\n',
     ["pyproject.toml", "signatur"]),
    ("ptxdiff.toml", "bogus = 1\n", ["ptxdiff.toml", "bogus"]),
    ("ptxdiff.toml", "targets = ['sm_75x']\n", ["ptxdiff.toml", "targets"]),
])
def test_malformed_config_exits_2_naming_file_and_key(tmp_path, capsys, name, text, needles):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    write(repo, {"ops/k.py": scale_kernel(V2), name: text})
    rc, out, err = run_main(["diff", "-C", str(repo)], capsys)
    assert rc == 2, err
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)


# ---------------------------------------------------------------------------------------------
# output formats and --check

@pytest.mark.integration
def test_json_schema_and_check_on_a_structural_change(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/gelu.py": corpus("gelu", "old")})
    c1 = head(repo)
    c2 = commit(repo, "gelu change", {"ops/gelu.py": corpus("gelu", "new")})
    rc, out, err = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--format", "json", "-q"], capsys)
    assert rc == 0, err                      # without --check a blocking verdict is only reported
    report = json.loads(out)
    assert {"base", "head", "toolchain", "kernels"} <= set(report)
    assert report["base"] == c1 and report["head"] == c2
    assert isinstance(report["toolchain"], dict) and report["toolchain"].get("triton")
    (row,) = report["kernels"]
    assert {"kernel", "spec", "target", "verdict", "blocking", "old", "new", "delta", "error"} <= set(row)
    assert row["kernel"] == "ops/gelu.py::gelu_kernel"
    assert row["target"] == "sm_90"
    assert row["verdict"] == "structural" and row["blocking"] is True and row["error"] is None
    assert isinstance(row["spec"], str) and "BLOCK=1024" in row["spec"]
    for side in ("old", "new"):
        m = row[side]
        for key in ("ptx_regs", "ptx_regs_by_type", "ptx_instrs", "ptx_opcodes", "ptx_local_bytes",
                    "ptx_shared_bytes", "regs", "spill_store_bytes", "spill_load_bytes", "stack_bytes",
                    "shared_bytes", "sass_instrs", "occupancy", "num_warps", "num_stages"):
            assert key in m, (side, key)
        assert isinstance(m["ptx_opcodes"], dict) and m["ptx_instrs"] == sum(m["ptx_opcodes"].values())
        assert 0 < m["occupancy"] <= 1
    for key, d in row["delta"].items():
        assert d == pytest.approx(row["new"][key] - row["old"][key]), key
    assert row["delta"]["ptx_instrs"] != 0 or row["old"]["ptx_opcodes"] != row["new"]["ptx_opcodes"]

    rc, out, _ = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--check", "-q"], capsys)
    assert rc == 1
    assert "ops/gelu.py::gelu_kernel" in out and "structural" in out
    rc, out, _ = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--check", "--format", "markdown", "-q"],
                          capsys)
    assert rc == 1 and out.startswith("**ptxdiff") and "| ops/gelu.py::gelu_kernel" in out
    # a policy the compared change brings does not decide its own check; once on the base, it does
    commit(repo, "policy", {"pyproject.toml": "[tool.ptxdiff]\nblock = ['failed']\n"})
    rc, out, _ = run_main(["diff", "-C", str(repo), "HEAD~2", "HEAD", "--check", "-q"], capsys)
    assert rc == 1 and "edits ptxdiff's own policy (block in pyproject.toml" in out
    commit(repo, "gelu back", {"ops/gelu.py": corpus("gelu", "old")})
    rc, out, _ = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--check", "-q"], capsys)
    assert rc == 0 and "structural" in out


@pytest.mark.integration
def test_check_passes_constants_only_and_rows_per_target(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/leaky.py": corpus("leaky_relu", "old")})
    write(repo, {"ops/leaky.py": corpus("leaky_relu", "new")})
    rc, out, err = run_main(["diff", "-C", str(repo), "--check", "--target", "sm_80,sm_90", "--format", "json",
                             "-q"], capsys)
    assert rc == 0, err
    rows = json.loads(out)["kernels"]
    assert sorted(r["target"] for r in rows) == ["sm_80", "sm_90"]
    assert {r["kernel"] for r in rows} == {"ops/leaky.py::leaky_relu_kernel"}
    assert all(r["verdict"] == "constants-only" and r["blocking"] is False for r in rows), rows
    # the two targets really were compiled separately
    assert rows[0]["new"] is not None and rows[1]["new"] is not None
    # the default target is one: sm_90
    rc, out, _ = run_main(["diff", "-C", str(repo), "--check", "--format", "json", "-q"], capsys)
    assert rc == 0 and [r["target"] for r in json.loads(out)["kernels"]] == ["sm_90"]


# ---------------------------------------------------------------------------------------------
# side effects

@pytest.mark.integration
def test_diff_leaves_work_tree_and_index_untouched(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/s.py": scale_kernel(name="s_kernel"),
                                ".gitignore": "*.log\n"})
    write(repo, {"ops/k.py": scale_kernel(V2), "ops/u.py": scale_kernel(name="u_kernel"), "x.log": "ignored\n"})
    write(repo, {"ops/s.py": "# staged comment\n" + scale_kernel(name="s_kernel")})
    git(repo, "add", "ops/s.py")

    def state():
        index = (repo / ".git" / "index").read_bytes()
        files = snapshot_tree(repo, skip=(".git",))
        mtimes = {p.relative_to(repo).as_posix(): p.stat().st_mtime_ns for p in repo.rglob("*")
                  if ".git" not in p.relative_to(repo).parts}
        # --no-optional-locks: git status itself must not refresh (rewrite) the index
        status = git(repo, "--no-optional-locks", "status", "--porcelain=v1", "--untracked-files=all",
                     "--ignored").stdout
        return status, index, files, mtimes

    before = state()
    report = run_json(["diff", "-C", str(repo)], capsys)
    assert sorted(r["kernel"] for r in report["kernels"]) == ["ops/k.py::scale_kernel", "ops/u.py::u_kernel"]
    assert {r["kernel"]: r["verdict"] for r in report["kernels"]}["ops/u.py::u_kernel"] == "added"
    run_json(["show", "-C", str(repo)], capsys)
    after = state()
    assert after[0] == before[0]
    assert after[1] == before[1]
    assert after[2] == before[2]
    assert after[3] == before[3]        # no __pycache__, nothing written next to the sources


@pytest.mark.integration
def test_repeated_diff_imports_neither_triton_nor_torch(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    write(repo, {"ops/k.py": scale_kernel(V2)})
    rc, first, err = run_main(["diff", "-C", str(repo), "-q"], capsys)
    assert rc == 0 and "structural" in first, err
    proc = ptxdiff(["diff", "-q"], repo, python_flags=["-X", "importtime"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == first.replace("rows: 1 compiled\n", "rows: 1 from the local cache\n")   # the footer says so
    imported = [ln for ln in proc.stderr.splitlines() if "import time:" in ln]
    assert imported, "python -X importtime printed nothing"
    names = {ln.rsplit("|", 1)[-1].strip() for ln in imported}
    top = {name.split(".")[0] for name in names}   # each import's top-level package
    assert {"triton", "torch"} & top == set()
    # nor what starts a worker: the pool, the worker, the sandbox (only where a pool opens)
    assert {"ptxdiff.compile.pool", "ptxdiff.compile.worker", "ptxdiff.sandbox.enter"} & names == set()


@pytest.mark.integration
def test_a_path_with_no_kernels_says_so_and_a_missing_path_is_an_error(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(name="a_kernel"), "README.md": "hi\n"})
    monkeypatch.chdir(repo)
    code, out, err = run_main(["diff", "HEAD", "--", "README.md"], capsys)
    assert code == 0 and "no Triton kernels in README.md" in out
    code, out, err = run_main(["diff", "HEAD", "--", "nope/"], capsys)
    assert code == 2 and err.strip().startswith("ptxdiff: nope: no such path in")
    assert len(err.strip().splitlines()) == 1


@pytest.mark.integration
def test_log_describes_old_history_with_the_newest_config(tmp_path, monkeypatch, capsys):
    """A config added today must also describe the kernel's versions from before it existed."""
    needs_config = scale_kernel("x * 2.5").replace("BLOCK: tl.constexpr = 128", "BLOCK: tl.constexpr")
    repo = make_repo(tmp_path, {"ops/k.py": needs_config})
    commit(repo, "v2", {"ops/k.py": needs_config.replace("x * 2.5", "x * 3.5")})
    commit(repo, "config", {"ptxdiff.toml": '[kernels."scale_kernel"]\nconstexprs = { BLOCK = 128 }\n'})
    monkeypatch.chdir(repo)
    code, out, err = run_main(["log", "scale_kernel", "--format", "json"], capsys)
    assert code == 0, err
    events = json.loads(out)
    assert [e["subject"] for e in events] == ["initial", "v2"]
    assert [e["rows"][0]["verdict"] for e in events] == ["added", "constants-only"]


# ---------------------------------------------------------------------------------------------
# git's conventions: -C before the verb

@pytest.mark.integration
def test_dash_c_before_the_verb_as_git_spells_it(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path, {"ops/a.py": scale_kernel(name="a_kernel"), "lib/b.py": scale_kernel(name="b_kernel")})
    write(repo, {"ops/a.py": scale_kernel(V2, name="a_kernel"), "lib/b.py": scale_kernel(V2, name="b_kernel")})
    monkeypatch.chdir(tmp_path)
    before = run_json(["-C", "repo", "diff"], capsys)
    after = run_json(["diff", "-C", str(repo)], capsys)               # after the verb, as before
    assert [r["kernel"] for r in before["kernels"]] == [r["kernel"] for r in after["kernels"]] == \
        ["lib/b.py::b_kernel", "ops/a.py::a_kernel"]
    # several -C are joined, and paths after -- are relative to where -C leads, like git's
    only = run_json(["-C", "repo", "diff", "-C", "ops", "--", "."], capsys)
    assert [r["kernel"] for r in only["kernels"]] == ["ops/a.py::a_kernel"]
    import os
    assert os.getcwd() == str(tmp_path)                               # an in-process caller keeps its cwd
    # the gate's own hint for a submodule, `ptxdiff -C SUB diff OLD NEW`, runs as printed
    proc = ptxdiff(["-C", "repo", "diff", "HEAD", "--format", "json", "-q"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(json.loads(proc.stdout)["kernels"]) == 2


# ---------------------------------------------------------------------------------------------
# errors that help

@pytest.mark.integration
def test_a_config_entry_for_no_kernel_names_the_nearest_id(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/relu.py": scale_kernel(name="relu_kernel")})
    write(repo, {"ops/relu.py": scale_kernel(V2, name="relu_kernel"),
                 "pyproject.toml": '[tool.ptxdiff.kernels."ops/relu.py::relu_kernell"]\nconstexprs = { BLOCK = 64 }\n'
                                   '[tool.ptxdiff.kernels."relu_kernel"]\nnum_warps = 4\n'
                                   '[tool.ptxdiff.kernels."qqqqq"]\nnum_warps = 4\n'})
    report = run_json(["diff", "-C", str(repo)], capsys)
    assert report["messages"] == [
        'pyproject.toml [tool.ptxdiff]: kernels."ops/relu.py::relu_kernell" matches no kernel; did you mean '
        '"ops/relu.py::relu_kernel"?',
        'pyproject.toml [tool.ptxdiff]: kernels."qqqqq" matches no kernel']     # a name that matches is fine
    rc, out, _ = run_main(["diff", "-C", str(repo), "-q"], capsys)
    assert rc == 0 and 'did you mean "ops/relu.py::relu_kernel"?' in out


@pytest.mark.integration
def test_without_triton_diff_says_so_in_one_line_and_fails(tmp_path):
    """A venv with ptxdiff and its base dependencies only (pygit2, tabulate), no triton."""
    import subprocess
    import sys

    import pygit2
    import tabulate

    from helpers import ROOT

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = tmp_path / "deps"
    deps.mkdir()
    site = Path(pygit2.__file__).parents[1]
    for name in ("pygit2", "pygit2.libs", "cffi", "pycparser", "tabulate"):
        if (site / name).exists():
            (deps / name).symlink_to(site / name)
    for backend in site.glob("_cffi_backend*"):
        (deps / backend.name).symlink_to(backend)
    assert Path(tabulate.__file__).parent == site / "tabulate"
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "ptxdiff-test.pth").write_text(f"{ROOT}\n{deps}\n")
    probe = subprocess.run([str(python), "-c", "import ptxdiff, pygit2, tabulate, importlib.util as u; "
                            "print(u.find_spec('triton'))"], capture_output=True, text=True)
    assert probe.stdout.strip() == "None", probe.stderr

    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel(), "ops/j.py": scale_kernel(name="j_kernel")})
    write(repo, {"ops/k.py": scale_kernel(V2), "ops/j.py": scale_kernel(V2, name="j_kernel")})
    proc = subprocess.run([str(python), "-m", "ptxdiff", "diff"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr                        # an error exit: nothing was measured
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"ptxdiff: triton is not installed, so no kernel can be compiled; install it with: {python} -m pip install "
        "'triton>=3.6,<3.10'"]
    doctor = subprocess.run([str(python), "-m", "ptxdiff", "doctor"], cwd=repo, capture_output=True, text=True)
    assert "FIX triton missing" in doctor.stdout and f"-> {python} -m pip install 'triton>=3.6,<3.10'" in doctor.stdout


@pytest.mark.integration
def test_uninstall_says_the_compile_cache_stays(tmp_path, capsys, cache):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    install(repo, capsys)
    write(repo, {"ops/k.py": scale_kernel(V2)})
    assert run_main(["diff", "-C", str(repo), "-q"], capsys)[0] == 0       # fills the cache
    rc, out, _ = run_main(["uninstall", "-C", str(repo)], capsys)
    assert rc == 0 and out.splitlines()[0] == "ptxdiff uninstalled"
    assert out.splitlines()[1].startswith(f"kept the compile cache {cache} (")
    assert out.splitlines()[1].endswith(f"remove it with: ptxdiff cache clear (or rm -r {cache})")


@pytest.mark.integration
def test_end_of_input_at_the_demo_s_prompt_is_a_quiet_exit(monkeypatch, capsys):
    import io
    import os
    import sys

    class ClosedTerminal(io.StringIO):   # a terminal whose user pressed Ctrl-D
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", ClosedTerminal(""))
    rc, out, err = run_main(["demo"], capsys)
    assert rc == 0, err
    assert "internal error" not in err and "EOFError" not in out + err
    assert out.count("## ") == 1 and "[enter] \nStopped early. The demo repo is at " in out   # at the first prompt
    work = out.split("The demo repo is at ")[1].split(" ")[0]
    assert os.path.isdir(os.path.join(work, ".git")) and f"cd {work} && git diff HEAD~1" in out   # where to look


def test_demo_into_a_file_has_no_escapes_and_colours_when_asked(monkeypatch, capsys):
    from ptxdiff.corpus import demo

    seen = []
    monkeypatch.setattr(demo, "run", lambda **kw: seen.append(kw["colour"]) or 0)
    monkeypatch.setenv("TERM", "xterm")
    assert run_main(["demo", "--no-pause"], capsys)[0] == 0          # stdout is not a terminal here
    assert run_main(["--color=always", "demo"], capsys)[0] == 0
    monkeypatch.setenv("NO_COLOR", "1")
    assert run_main(["demo"], capsys)[0] == 0
    assert seen == [False, True, False]


@pytest.mark.integration
def test_targets_given_twice_or_out_of_order_give_one_row_each_by_number(tmp_path, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    write(repo, {"ops/k.py": scale_kernel(V2)})
    report = run_json(["diff", "-C", str(repo), "--target", "sm_100,sm_90,sm_80,sm_90"], capsys)
    assert [r["target"] for r in report["kernels"]] == ["sm_80", "sm_90", "sm_100"]
