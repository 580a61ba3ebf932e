"""The user's settings: read in one place, with one boolean rule (git's), into a frozen record."""

from __future__ import annotations

import pytest

from helpers import run_main
from ptxdiff import user_settings
from ptxdiff.errors import SettingError

SPELLINGS = [("1", True), ("true", True), ("TRUE", True), ("yes", True), ("Yes", True), ("on", True), (" on ", True),
             ("0", False), ("false", False), ("False", False), ("no", False), ("NO", False), ("off", False),
             ("", False), ("  ", False)]


def config_of(values: dict[str, str]):
    return values.get


@pytest.mark.parametrize("value,on", SPELLINGS)
def test_every_boolean_spelling_of_git_in_the_environment(value, on):
    user = user_settings.load({"PTXDIFF_SKIP": value, "PTXDIFF_FORCE": value, "PTXDIFF_PROGRESS": value,
                          "PTXDIFF_TIME": value, "PTXDIFF_DEBUG": value}, user_settings.no_config)
    assert (user.skip, user.force, user.progress, user.time, user.debug) == (on, on, on, on, on)


@pytest.mark.parametrize("value,on", SPELLINGS)
def test_every_boolean_spelling_of_git_in_the_git_config(value, on):
    user = user_settings.load({}, config_of({"ptxdiff.time": value, "ptxdiff.import": value, "ptxdiff.sandbox": value}))
    assert (user.time, user.imports, user.unsandboxed is None) == (on, on, on)


@pytest.mark.parametrize("env,config,line", [
    ({"PTXDIFF_SKIP": "2"}, {}, "PTXDIFF_SKIP='2': expected 1 or 0 (true/false, yes/no, on/off)"),
    ({"PTXDIFF_SANDBOX": "disabled"}, {}, "PTXDIFF_SANDBOX='disabled': expected 1 or 0 (true/false, yes/no, on/off)"),
    ({}, {"ptxdiff.time": "maybe"}, "git config ptxdiff.time='maybe': expected 1 or 0 (true/false, yes/no, on/off)"),
    ({"PTXDIFF_REMOTE_CACHE": "s3://b", "PTXDIFF_REMOTE_CACHE_WRITE": "y"}, {},
     "PTXDIFF_REMOTE_CACHE_WRITE='y': expected 1 or 0 (true/false, yes/no, on/off)"),
    ({"PTXDIFF_CACHE_MAX_MB": "lots"}, {}, "PTXDIFF_CACHE_MAX_MB='lots': expected a number of MiB"),
])
def test_a_bad_value_is_one_line_that_names_it(env, config, line):
    with pytest.raises(SettingError) as e:
        user_settings.load(env, config_of(config))
    assert str(e.value) == line


def test_unset_is_the_default_and_the_record_is_frozen():
    user = user_settings.load({}, user_settings.no_config)
    assert user == user_settings.Settings() and user.progress is None and user.unsandboxed is None
    with pytest.raises(AttributeError):
        user.skip = True   # type: ignore[misc]


def test_where_each_setting_comes_from():
    env = {"PTXDIFF_SANDBOX": "on", "PTXDIFF_MAX_TIMEOUT": "x", "PTXDIFF_REMOTE_TIMEOUT": "9999",
           "PTXDIFF_DRIVER_BUDGET": "2.5", "PTXDIFF_CACHE_DIR": "/c", "PTXDIFF_TRITON": "3.6.0"}
    config = {"ptxdiff.sandbox": "false", "ptxdiff.maxTimeout": "30", "ptxdiff.remoteCache": "gs://t",
              "ptxdiff.remoteCacheWrite": "yes", "ptxdiff.semantic": "Auto"}
    user = user_settings.load(env, config_of(config))
    assert user.unsandboxed == "git config ptxdiff.sandbox false"    # the environment's `on` does not undo it
    assert (user.max_timeout, user.max_timeout_from) == (30.0, "ptxdiff.maxTimeout")   # not a number: ignored
    assert (user.remote_cache, user.remote_from, user.remote_write, user.remote_timeout) == (
        "gs://t", "git config ptxdiff.remoteCache", True, 600.0)
    assert (user.driver_budget, user.cache_dir, user.triton, user.semantic) == (2.5, "/c", "3.6.0", "auto")
    assert user_settings.load({"PTXDIFF_REMOTE_CACHE": "off"}, config_of(config)).remote_cache is None


@pytest.mark.parametrize("value,on", [(None, True), ("true", True), ("", False), ("off", False)])
def test_the_repositorys_switch_reads_by_the_same_rule(value, on):
    assert user_settings.enabled(value) is on


def test_a_bad_setting_stops_the_command_line_with_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("PTXDIFF_PROGRESS", "sometimes")
    rc, out, err = run_main(["cache", "path"], capsys)
    assert (rc, out, err) == (2, "", "ptxdiff: PTXDIFF_PROGRESS='sometimes': expected 1 or 0 (true/false, yes/no, on/off)\n")
