"""Who may turn the compile sandbox off: the user (command line, environment, their own git
config), never the repository."""

from __future__ import annotations

import pytest

from helpers import git, make_repo
from ptxdiff import permissions, user_settings


def test_the_sandbox_is_on_unless_the_user_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    assert user_settings.load().unsandboxed is None
    monkeypatch.setenv("PTXDIFF_SANDBOX", "on")
    assert user_settings.load().unsandboxed is None
    monkeypatch.setenv("PTXDIFF_SANDBOX", "off")
    assert user_settings.load().unsandboxed == "PTXDIFF_SANDBOX=off"


@pytest.mark.integration
def test_the_global_git_config_turns_it_off_the_repository_config_does_not(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_SANDBOX", raising=False)
    repo = make_repo(tmp_path)
    git(repo, "config", "ptxdiff.sandbox", "off")
    monkeypatch.chdir(repo)
    assert user_settings.load().unsandboxed is None
    git(repo, "config", "--global", "ptxdiff.sandbox", "false")
    assert user_settings.load().unsandboxed == "git config ptxdiff.sandbox false"


def test_no_sandbox_on_the_command_line_is_handed_to_the_workers_in_the_permissions():
    """--no-sandbox does not travel through the environment: it is a field of what the engine gets."""
    user = user_settings.load({}, user_settings.no_config)
    assert permissions.from_user(user).unsandboxed is None
    assert permissions.from_user(user, no_sandbox=True).unsandboxed == "--no-sandbox"
    off = user_settings.load({"PTXDIFF_SANDBOX": "0"}, user_settings.no_config)
    assert permissions.from_user(off).unsandboxed == "PTXDIFF_SANDBOX=0"
