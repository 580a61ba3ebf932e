"""The pull request does not choose the CI gate's compiler (issue 41): `ptxdiff ci` compiles both
sides with the triton the base side pins, as the pre-push gate does; a pull request that pins
another triton gets one report-only line and no download, unless the job asks (`--branch-triton`:
each side under its own pin too, for the report). The control: `ptxdiff diff`, which is no gate,
compiles each side with its own pin, so it asks for the pull request's triton."""

from __future__ import annotations

import json

import pytest

from helpers import commit, fake_toolchain, make_repo, run_main, scale_kernel
from ptxdiff import binaries
from ptxdiff.compile import toolchains
from ptxdiff.errors import SetupError

pytestmark = pytest.mark.integration

OTHER = "3.5.1"


@pytest.fixture
def pinned(tmp_path, monkeypatch):
    """A base that pins the installed triton, a pull request that pins another and changes the
    kernel; toolchains under an empty folder, and every download recorded and refused."""
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    here = binaries.triton_version()
    assert here and here != OTHER
    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(tmp_path / "toolchains"))
    downloads: list[str] = []

    def refused(version, progress=None):
        downloads.append(version)
        raise SetupError(f"installing triton {version} refused by the test")

    monkeypatch.setattr(toolchains, "_install", refused)
    repo = make_repo(tmp_path, {"ops/__init__.py": "", "ops/k.py": scale_kernel(), "requirements.txt": f"triton=={here}\n"})
    base = commit(repo, "base")
    head = commit(repo, "pr", {"ops/k.py": scale_kernel("x * 3.0"), "requirements.txt": f"triton=={OTHER}\n"})
    return repo, base, head, downloads, here


def ci(repo, base, head, tmp_path, capsys, *extra) -> tuple[int, dict, str]:
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--target", "sm_90", "--base", base, "--head", head,
                           "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json"), *extra],
                          capsys)
    return rc, json.loads((tmp_path / "r.json").read_text()) if rc in (0, 1) else {}, err


def test_ci_compiles_both_sides_with_the_base_s_pin_and_downloads_nothing(pinned, tmp_path, capsys):
    repo, base, head, downloads, here = pinned
    rc, report, err = ci(repo, base, head, tmp_path, capsys)
    assert rc == 1, err                                                  # structural blocks
    assert downloads == [] and report["toolchain"]["triton"] == report["toolchain"]["triton_old"] == here
    (line,) = [m for m in report["messages"] if "the branch pins" in m]
    assert line.startswith(f"the branch pins triton=={OTHER} (requirements.txt); the gate compiles both sides with "
                           "the base's triton: the branch's pin is report-only, not downloaded"), line
    assert "report-only" in (tmp_path / "c.md").read_text()
    # the control: ptxdiff diff (no gate) takes each side's pin, so it asks for the pull request's triton
    rc, _, err = run_main(["-C", str(repo), "diff", "-q", "--target", "sm_90", base, head], capsys)
    assert rc == 2 and downloads == [OTHER] and "refused by the test" in err, err


def test_branch_triton_compiles_the_pull_request_s_pin_for_the_report_only(pinned, tmp_path, capsys):
    repo, base, head, downloads, here = pinned
    rc, _, err = ci(repo, base, head, tmp_path, capsys, "--branch-triton")
    assert rc == 2 and downloads == [OTHER], err                         # the job asked: it is installed
    fake_toolchain(tmp_path / "toolchains", OTHER)                       # installed (offline: a link)
    rc, report, err = ci(repo, base, head, tmp_path, capsys, "--branch-triton")
    assert rc == 1 and report["toolchain"]["triton"] == here, err       # the gate: the base's triton
    (line,) = [m for m in report["messages"] if m.startswith("report only, not the gate: ")]
    assert f"new side with triton {OTHER}" in line and line.endswith("1 structural"), line
