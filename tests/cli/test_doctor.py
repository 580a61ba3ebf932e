"""`ptxdiff doctor` and the pre-commit (PRE_COMMIT_FROM_REF/TO_REF) entry of the gate."""

from __future__ import annotations

import sys

import pytest

from helpers import ROOT, commit, corpus, git, make_repo, ptxdiff

GELU = "ops/gelu.py::gelu_kernel"


@pytest.mark.integration
def test_doctor_names_what_to_fix_then_passes_after_install(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"ops/gelu.py": corpus("gelu", "old")})
    before = ptxdiff(["doctor"], repo)
    assert before.returncode == 1
    assert "FIX diff driver: not configured" in before.stdout and "-> ptxdiff install" in before.stdout
    assert before.stdout.startswith("ok  ptxdiff 0.") and f"{sys.executable})" in before.stdout.splitlines()[0]
    assert "FIX *.py files have no diff attribute (git diff shows no kernel lines)" in before.stdout
    assert "None" not in before.stdout
    assert ptxdiff(["install"], repo).returncode == 0
    after = ptxdiff(["doctor"], repo)
    assert after.returncode == 0, after.stdout
    assert "all good" in after.stdout and "ok  *.py files use the ptxdiff diff driver" in after.stdout


@pytest.mark.integration
def test_doctor_reports_a_malformed_config(tmp_path, monkeypatch):
    repo = make_repo(tmp_path, {"ptxdiff.toml": "tragets = ['sm_90']\n"})
    proc = ptxdiff(["doctor"], repo)
    assert proc.returncode == 1
    assert "tragets" in proc.stdout


@pytest.mark.integration
def test_pre_commit_range_from_environment(tmp_path, monkeypatch):
    """pre-commit passes the pushed range in the environment, with nothing on stdin."""
    repo = make_repo(tmp_path, {"ops/gelu.py": corpus("gelu", "old")})
    base = git(repo, "rev-parse", "HEAD").stdout.strip()
    changed = commit(repo, "gelu: drop the 0.5", {"ops/gelu.py": corpus("gelu", "new")})
    env = {"PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": changed,
           "PRE_COMMIT_REMOTE_BRANCH": "refs/heads/main"}
    blocked = ptxdiff(["pre-push", "origin", "url"], repo, env=env, input="")
    assert blocked.returncode == 1, blocked.stderr
    assert GELU in blocked.stderr
    approved = commit(repo, "approve", extra=["--trailer", f"Ptx-Approved: {GELU}"])
    passed = ptxdiff(["pre-push", "origin", "url"], repo, env={**env, "PRE_COMMIT_TO_REF": approved}, input="")
    assert passed.returncode == 0, passed.stderr


def test_pre_commit_hooks_manifest_runs_the_gate_on_push():
    text = (ROOT / ".pre-commit-hooks.yaml").read_text()
    assert "entry: ptxdiff pre-push" in text and "stages: [pre-push]" in text
    assert "pass_filenames: false" in text


@pytest.mark.integration
def test_doctor_tries_the_sandbox_for_real_and_says_what_holds(monkeypatch):
    from ptxdiff.cli.commands.doctor import sandbox_check

    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    ok, what, _ = sandbox_check()
    assert ok and "Landlock ABI" in what and "seccomp" in what and "were refused" in what
    monkeypatch.setenv("PTXDIFF_SANDBOX", "off")
    ok, what, _ = sandbox_check()
    assert ok and "off by your setting PTXDIFF_SANDBOX=off" in what


@pytest.mark.integration
def test_doctor_says_which_remote_cache_is_set_and_whether_it_answers(tmp_path, monkeypatch):
    import socket

    from ptxdiff.cli.commands.doctor import remote_check

    root = tmp_path / "cache"
    ok, what, _ = remote_check(root)
    assert ok and what.startswith("remote cache: none (to share compiles: git config --global ptxdiff.remoteCache URL")
    shared = tmp_path / "shared"
    shared.mkdir()
    git(tmp_path, "config", "--global", "ptxdiff.remoteCache", shared.as_uri())
    ok, what, _ = remote_check(root)
    assert ok and what.startswith(f"remote cache: {shared.as_uri()} (read-only, from git config ptxdiff.remoteCache): "
                                  "reachable in ")
    with socket.create_server(("127.0.0.1", 0)) as hung:   # accepts, never answers
        url = f"http://127.0.0.1:{hung.getsockname()[1]}/ptxdiff"
        monkeypatch.setenv("PTXDIFF_REMOTE_CACHE", url)
        monkeypatch.setenv("PTXDIFF_REMOTE_TIMEOUT", "0.5")
        ok, what, fix = remote_check(root)
    assert not ok and what == f"remote cache: {url} (read-only, from PTXDIFF_REMOTE_CACHE): no answer within 0.5 s " \
                              "(PTXDIFF_REMOTE_TIMEOUT)"
    assert fix.endswith("or: unset PTXDIFF_REMOTE_CACHE")


@pytest.mark.integration
def test_doctor_outside_a_repository_checks_the_machine_and_says_so(tmp_path):
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    proc = ptxdiff(["doctor"], outside, env={"GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok  triton 3." in proc.stdout and "ok  sandbox: " in proc.stdout      # the machine: checked
    assert "ok  not in a git repository: its checks (diff driver, pre-push hook, config, cache) were skipped" in proc.stdout
    assert "diff driver:" not in proc.stdout and "all good" in proc.stdout


@pytest.mark.integration
def test_doctor_in_ci_needs_no_driver_or_hook_but_the_history(tmp_path):
    src = make_repo(tmp_path, {"ops/gelu.py": corpus("gelu", "old")}, name="src")
    commit(src, "more", {"README": "x\n"})
    for how in ({"env": {"CI": "true"}, "args": []}, {"env": {}, "args": ["--ci"]}):
        proc = ptxdiff(["doctor", *how["args"]], src, env=how["env"])
        assert proc.returncode == 0, proc.stdout
        assert "FIX" not in proc.stdout and "ok  CI: the diff driver and the pre-push hook are not needed here" in proc.stdout
        assert "ok  history: a full clone" in proc.stdout
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{src}", str(shallow))
    proc = ptxdiff(["doctor"], shallow, env={"CI": "true"})
    assert proc.returncode == 1
    assert "FIX history: a shallow clone" in proc.stdout and "fetch-depth: 0" in proc.stdout
    assert proc.stdout.count("FIX") == 1
