"""Where the sandbox cannot be set up, a compiling command stops with one line that says why and
how the user opts out; it never compiles unsandboxed on its own."""

from __future__ import annotations

import pytest

from helpers import make_repo, run_main, scale_kernel, write
from ptxdiff.errors import EXIT_USAGE
from ptxdiff.sandbox import probe


def test_this_machine_can_sandbox():
    assert probe.unavailable() is None


def test_the_refusal_is_one_line_with_every_opt_out():
    text = str(probe.refusal("Landlock is not available"))
    assert "\n" not in text and "Landlock is not available" in text
    for way in ("--no-sandbox", "git config --global ptxdiff.sandbox off", "PTXDIFF_SANDBOX=off"):
        assert way in text


@pytest.mark.integration
def test_diff_refuses_without_a_sandbox_and_runs_when_the_user_opts_out(tmp_path, monkeypatch, capsys):
    repo = make_repo(tmp_path, {"ops/k.py": scale_kernel()})
    write(repo, {"ops/k.py": scale_kernel("x * 3.0")})
    monkeypatch.setattr(probe, "unavailable", lambda: "Landlock is not available (test)")
    rc, out, err = run_main(["diff", "-C", str(repo), "--no-cache", "-q"], capsys)
    assert rc == EXIT_USAGE and out == ""
    assert len(err.strip().splitlines()) == 1 and "--no-sandbox" in err and "Landlock is not available" in err
    monkeypatch.setenv("PTXDIFF_SANDBOX", "on")   # recorded, so what --no-sandbox sets is undone after the test
    rc, out, err = run_main(["diff", "-C", str(repo), "--no-cache", "-q"], capsys)
    assert rc == EXIT_USAGE
    rc, out, err = run_main(["diff", "-C", str(repo), "--no-cache", "-q", "--no-sandbox"], capsys)
    assert rc == 0 and "scale_kernel" in out


def test_a_weaker_sandbox_is_said_once_per_run(capsys):
    line = "sandbox without user namespaces (test: said once)"
    probe.say_once(line)
    probe.say_once(line)
    assert capsys.readouterr().err == f"ptxdiff: {line}\n"
