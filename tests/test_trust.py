"""Who may turn the compile sandbox off: the user (command line, environment, their own git
config), never the repository."""

from __future__ import annotations

from helpers import git, make_repo
from ptxdiff import trust


def test_the_sandbox_is_on_unless_the_user_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    assert trust.sandbox_opt_out() is None
    monkeypatch.setenv("PTXDIFF_SANDBOX", "on")
    assert trust.sandbox_opt_out() is None
    monkeypatch.setenv("PTXDIFF_SANDBOX", "off")
    assert trust.sandbox_opt_out() == "PTXDIFF_SANDBOX=off"


def test_the_global_git_config_turns_it_off_the_repository_config_does_not(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    repo = make_repo(tmp_path)
    git(repo, "config", "ptxdiff.sandbox", "off")
    monkeypatch.chdir(repo)
    assert trust.sandbox_opt_out() is None
    git(repo, "config", "--global", "ptxdiff.sandbox", "false")
    assert trust.sandbox_opt_out() == "git config ptxdiff.sandbox false"
