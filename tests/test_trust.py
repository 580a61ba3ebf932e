"""Who may turn the compile sandbox off: the user (command line, environment, their own git
config), never the repository."""

from __future__ import annotations

from helpers import git, make_repo
from ptxdiff import settings, trust


def test_the_sandbox_is_on_unless_the_user_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    assert settings.load().unsandboxed is None
    monkeypatch.setenv("PTXDIFF_SANDBOX", "on")
    assert settings.load().unsandboxed is None
    monkeypatch.setenv("PTXDIFF_SANDBOX", "off")
    assert settings.load().unsandboxed == "PTXDIFF_SANDBOX=off"


def test_the_global_git_config_turns_it_off_the_repository_config_does_not(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    repo = make_repo(tmp_path)
    git(repo, "config", "ptxdiff.sandbox", "off")
    monkeypatch.chdir(repo)
    assert settings.load().unsandboxed is None
    git(repo, "config", "--global", "ptxdiff.sandbox", "false")
    assert settings.load().unsandboxed == "git config ptxdiff.sandbox false"


def test_no_sandbox_on_the_command_line_is_handed_to_the_workers_in_the_permissions():
    """--no-sandbox does not travel through the environment: it is a field of what the engine gets."""
    user = settings.load({}, settings.no_config)
    assert trust.from_user(user).unsandboxed is None
    assert trust.from_user(user, no_sandbox=True).unsandboxed == "--no-sandbox"
    off = settings.load({"PTXDIFF_SANDBOX": "0"}, settings.no_config)
    assert trust.from_user(off).unsandboxed == "PTXDIFF_SANDBOX=0"
