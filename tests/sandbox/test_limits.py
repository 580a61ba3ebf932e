"""The bounds: the repository's timeout never raises the wall clock past the user's maximum,
and the rlimits hold in the process that set them."""

from __future__ import annotations

import mmap
import resource

import pytest

from helpers import git
from ptxdiff import user_settings
from ptxdiff.sandbox import limits


def test_the_repository_timeout_is_capped_by_the_default_maximum(monkeypatch):
    monkeypatch.delenv("PTXDIFF_MAX_TIMEOUT", raising=False)
    assert limits.bound(300) == limits.Bound(300, None)
    capped = limits.bound(1_000_000)
    assert capped.seconds == user_settings.DEFAULT_MAX_TIMEOUT and "PTXDIFF_MAX_TIMEOUT" in (capped.capped or "")


@pytest.mark.integration
def test_the_user_sets_the_maximum_in_the_environment_or_the_global_git_config(tmp_path, monkeypatch):
    git(tmp_path, "config", "--global", "ptxdiff.maxTimeout", "20")
    assert limits.bound(300) == limits.Bound(20, "ptxdiff.maxTimeout")
    monkeypatch.setenv("PTXDIFF_MAX_TIMEOUT", "5")
    assert limits.bound(300) == limits.Bound(5, "PTXDIFF_MAX_TIMEOUT")
    assert limits.bound(2) == limits.Bound(2, None)


@pytest.mark.integration
def test_a_repository_config_cannot_set_the_maximum(tmp_path, monkeypatch):
    monkeypatch.delenv("PTXDIFF_MAX_TIMEOUT", raising=False)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "ptxdiff.maxTimeout", "1000000")
    monkeypatch.chdir(repo)
    assert limits.user_max()[0] == user_settings.DEFAULT_MAX_TIMEOUT


def test_the_cpu_budget_leaves_room_for_one_more_request_before_a_fresh_worker():
    lim = limits.Limits.for_bound(300)
    assert lim.recycle_after(300) + 300 < lim.cpu_seconds
    assert limits.Limits.for_bound(300, imports=True).address_space == 0   # CUDA may start: no limit


def test_rlimits_refuse_a_10_gib_mapping_and_cannot_be_raised_again(in_child):
    def attempt():
        applied = limits.apply(limits.Limits())
        out = [applied["as"] == limits.Limits().address_space, applied["core"] == 0]
        try:
            mmap.mmap(-1, 10 << 30).close()
            out.append("mapped")
        except OSError:
            out.append("refused")
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            out.append("raised")
        except (ValueError, OSError):
            out.append("kept")
        return out

    mmap.mmap(-1, 10 << 30).close()   # outside the limits the same mapping is fine (nothing is touched)
    assert in_child(attempt) == [True, True, "refused", "kept"]
