"""The triton of a revision's day (issue 37): where nothing pins triton, a revision compiles with
the release current at its commit's date (the committer's), so an old commit compiles with what it
was written for and a revision gets the same triton on any machine; both sides of a diff with the
new side's, the gate's with the base's (a branch can forge its dates); the diff driver never
downloads one."""

from __future__ import annotations

import calendar
import json
import os
import time
from pathlib import Path

import pytest

from helpers import SnapshotFiles, commit, git, head, make_repo, ptxdiff, run_main, scale_kernel, write
from ptxdiff import binaries
from ptxdiff.compile import toolchains, triton_pin
from ptxdiff.errors import SetupError
from ptxdiff.git.values import Side

HERE = "3.9.0"   # the installed triton, as these tests see it
# where toolchains live for the user running the tests (read before a test isolates HOME): one that
# is installed there compiles for real; the others are never downloaded
USER_TOOLCHAINS = Path(os.environ.get("PTXDIFF_TOOLCHAINS") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                                       Path.home() / ".cache") / "ptxdiff" / "toolchains")


def seconds(day: str) -> int:
    """Noon UTC of `day` (YYYY-MM-DD) in seconds."""
    return calendar.timegm(time.strptime(day, "%Y-%m-%d")) + 12 * 3600


def dated(files: dict[str, str], day: str) -> SnapshotFiles:
    """A snapshot whose commit was made on `day`."""
    return SnapshotFiles(files, seconds(day))


def at(day: str) -> toolchains.Dated:
    return toolchains.Dated("1a2b3c4d5e", seconds(day))


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The installed triton is HERE; every install is recorded and refused."""
    monkeypatch.setattr(toolchains, "triton_version", lambda: HERE)
    downloads: list[str] = []

    def refused(version: str, progress: object = None) -> toolchains.Toolchain:
        downloads.append(version)
        raise SetupError(f"installing triton {version} refused by the test")
    monkeypatch.setattr(toolchains, "install", refused)
    monkeypatch.setattr(toolchains, "_install", refused)
    return downloads


def test_the_releases_are_one_table_in_order() -> None:
    versions = [r.version for r in toolchains.RELEASES]
    assert tuple(versions) == toolchains.KNOWN
    days = [r.day for r in toolchains.RELEASES]
    assert days == sorted(days) and len(set(days)) == len(days)
    assert versions == sorted(versions, key=triton_pin.version_tuple)
    assert (toolchains.RELEASES[2].version, str(toolchains.RELEASES[2].day)) == ("3.2.0", "2025-01-22")
    assert toolchains.RELEASES[-1].version == "3.9.0" and str(toolchains.RELEASES[-1].day) == "2026-10-27"


@pytest.mark.parametrize("day, version", [
    ("2025-02-03", "3.2.0"),
    ("2025-01-22", "3.2.0"),     # the day it came out
    ("2025-01-21", "3.1.0"),
    ("2025-05-30", "3.3.1"),
    ("2026-09-10", "3.8.0"),
    ("2026-11-06", None),        # 3.9.0: the installed one compiles, nothing installed
    ("2031-01-01", None),        # after every release ptxdiff knows: the newest
])
def test_an_unpinned_revision_compiles_with_the_release_of_its_day(installed: list[str], day: str,
                                                                     version: str | None) -> None:
    chosen = toolchains.choose(None, "", None, at(day))
    assert chosen.version == version
    assert chosen.why == f"no triton pin: the release current at 1a2b3c4d5e's date, {day}"
    assert toolchains.choose(None, "", triton_pin.Pin("", "requirements.txt"), at(day)) == chosen   # a bare `triton`
    assert toolchains.note(None, chosen) == (None if version is None else f"compiled with triton {version} ({chosen.why})")


def test_older_than_the_first_release_is_the_first_said_on_the_line(installed: list[str]) -> None:
    chosen = toolchains.choose(None, "", None, at("2023-11-14"))
    assert chosen.version == "3.0.0" and chosen.triton2
    assert toolchains.note(None, chosen) == ("compiled with triton 3.0.0 (no triton pin: 1a2b3c4d5e's date, 2023-11-14, "
                                             "is before triton 3.0.0, the oldest release ptxdiff compiles with; "
                                             "read as triton 2.x read kernels (module globals as constants, "
                                             "tl.dot's trans_a/trans_b))")
    assert toolchains.choose(None, "", None, toolchains.Dated("x", -10**15)).version == "3.0.0"   # forged, far back
    assert toolchains.choose(None, "", None, toolchains.Dated("x", 10**15)).version is None       # forged, far ahead


@pytest.mark.parametrize("spec, day, older", [
    ("", "2024-03-05", True),            # unpinned, before 3.0.0 came out
    (">=2.0", "2024-03-05", True),       # a range the stand-in meets, on a day before it
    ("==2.3.0", "2025-06-01", True),     # a pin below every release ptxdiff compiles with
    ("<3", "2025-06-01", True),
    ("==2.0.0.dev20221105", "2023-01-10", True),
    (">=1.0.1dev", "2021-09-29", True),   # a range every release meets, on a day before 3.0.0 (lucidrains)
    ("", "2024-07-19", False),           # 3.0.0's own day: it is the triton of the day
    (">=2.0", "2025-06-01", False),
    ("==3.0.5", "2025-06-01", False),    # in a gap, not below: the nearest is no stand-in for 2.x
    (">=4", "2025-06-01", False),
])
def test_a_release_standing_in_for_a_triton_before_3_reads_globals_as_2_x_did(installed: list[str], spec: str,
                                                                                day: str, older: bool) -> None:
    """Triton 2.x read a kernel's module globals (`sqrt2 = math.sqrt(2)`) as constants; 3.x refuses
    them. The oldest release standing in for a triton before it compiles as that triton did."""
    pin = triton_pin.Pin(spec, "requirements.txt") if spec else None
    chosen = toolchains.choose(None, "", pin, at(day))
    assert chosen.triton2 is older and ("as triton 2.x read kernels" in chosen.why) is older


def test_without_an_installed_triton_an_unpinned_revision_downloads_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """No triton beside ptxdiff: the run stops with the one line that says how to install it."""
    monkeypatch.setattr(toolchains, "triton_version", lambda: None)
    assert toolchains.choose(None, "", None, at("2025-02-03")).version is None
    assert toolchains.choose(None, "", triton_pin.Pin(">=3.0", "r.txt"), at("2025-02-03")).version == "3.2.0"


def test_a_side_with_no_commit_is_today_s() -> None:
    assert toolchains.current(toolchains.TODAY) == ("3.9.0", "the release current today")


@pytest.mark.parametrize("spec, day, version", [
    (">=3.0", "2025-05-03", "3.3.0"),          # the release of its day meets the range
    (">=2.1", "2025-02-03", "3.2.0"),
    (">=3.0,<3.6", "2026-11-06", "3.5.1"),     # not met: the newest that meets it
    ("<3.2", "2025-06-01", "3.1.0"),
    (">=3.5", "2025-02-03", None),             # not met: the newest that meets it, 3.9.0, installed
    ("==3.6.0", "2024-08-01", "3.6.0"),        # an exact pin stands
    ("==3.9.0", "2024-08-01", None),
    ("==2.0.0", "2026-11-06", "3.0.0"),        # outside the releases: the nearest, as before
])
def test_a_range_pin_takes_the_release_of_its_day_where_it_meets_it(installed: list[str], spec: str, day: str,
                                                                   version: str | None) -> None:
    chosen = toolchains.choose(None, "", triton_pin.Pin(spec, "requirements.txt"), at(day))
    assert chosen.version == version and f"requirements.txt: triton{spec}" in chosen.why.replace("'s ", ": ")
    assert ("the release current at" in chosen.why) == (spec in (">=3.0", ">=2.1"))


def test_the_user_s_choice_wins_over_the_date(installed: list[str]) -> None:
    assert toolchains.choose("3.6.0", "--triton", None, at("2024-08-01")) == toolchains.Chosen("3.6.0", "--triton")
    assert toolchains.choose("installed", "PTXDIFF_TRITON", None, at("2024-08-01")).version is None


def test_both_sides_compile_with_the_new_side_s_day(installed: list[str]) -> None:
    old, new = toolchains.for_sides(toolchains.Policy(), None, None, at("2024-08-01"), at("2025-02-03"))
    assert old == new and new.version == "3.2.0"
    # the work tree is today's: `ptxdiff diff HEAD` of an old commit compiles with the newest
    old, new = toolchains.for_sides(toolchains.Policy(), None, None, at("2024-08-01"), toolchains.TODAY)
    assert old == new == toolchains.Chosen(None, "no triton pin: the release current today")
    # where the pins differ, each side its own, of its own day
    pinned = triton_pin.Pin("==3.6.0", "requirements.txt")
    old, new = toolchains.for_sides(toolchains.Policy(), pinned, None, at("2024-08-01"), at("2025-02-03"))
    assert old is not None and (old.version, new.version) == ("3.6.0", "3.2.0")
    old, new = toolchains.for_sides(toolchains.Policy(), None, pinned, at("2024-08-01"), at("2025-02-03"))
    assert old is not None and (old.version, new.version) == ("3.0.0", "3.6.0")
    assert toolchains.for_sides(toolchains.Policy(), None, None, None, at("2025-02-03"))[0] is None


def test_the_gate_takes_the_base_s_day_never_the_branch_s(installed: list[str]) -> None:
    """A branch whose commits say 2024 cannot pick triton 3.0.0 for the gate: the base's date says."""
    gate = toolchains.Policy(gate=True)
    old, new = toolchains.for_sides(gate, None, None, at("2026-11-06"), at("2024-08-01"))
    assert old == new == toolchains.Chosen(None, "no triton pin: the release current at 1a2b3c4d5e's date, 2026-11-06")
    old, new = toolchains.for_sides(gate, None, None, at("2025-02-03"), at("2026-11-06"))
    assert old == new and new.version == "3.2.0"
    branch_pin = triton_pin.Pin(">=3.0", "requirements.txt")            # nor with a pin of its own
    old, new = toolchains.for_sides(gate, None, branch_pin, at("2026-11-06"), at("2024-08-01"))
    assert old == new and new.version is None
    assert toolchains.for_sides(gate, None, None, None, at("2024-08-01"))[1].version is None   # no base: today


BLOCK_PTR = "p = tl.make_block_ptr(x, (M, K), (K, 1), (0, 0), (16, 16), (1, 0))\n"


def applied(policy: toolchains.Policy, old: SnapshotFiles, new: SnapshotFiles,
            new_side: Side | None = None) -> tuple[str | None, str | None, str | None]:
    o, n, note = toolchains.apply(policy, Side("a", "a" * 40), new_side or Side("b", "b" * 40),
                                  old, new)  # type: ignore[arg-type]
    assert o is not None
    return o.toolchain, n.toolchain, note


def test_apply_reads_each_side_s_date_and_the_cap_still_holds(installed: list[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchains, "find", lambda version: None)
    wanted: list[str] = []
    monkeypatch.setattr(toolchains, "install", lambda version, progress=None: wanted.append(version))
    files = {"ops/k.py": "q = 1\n"}
    o, n, note = applied(toolchains.Policy(), dated(files, "2024-08-01"), dated({"ops/k.py": "q = 2\n"}, "2025-02-03"))
    assert (o, n, wanted) == ("3.2.0", "3.2.0", ["3.2.0"])
    assert note == "compiled with triton 3.2.0 (no triton pin: the release current at bbbbbbbbbb's date, 2025-02-03)"
    # the work tree: today's, the installed one, nothing installed and nothing said
    wanted.clear()
    assert applied(toolchains.Policy(), dated(files, "2024-08-01"), dated({"ops/k.py": "q = 2\n"}, "2024-08-01"),
                   Side("work tree", None)) == (None, None, None) and wanted == []
    # block pointers, gone in 3.9: below it, the release of the day where it is below (3.2.0), else 3.8.0
    assert applied(toolchains.Policy(), dated(files, "2024-08-01"), dated({"ops/k.py": BLOCK_PTR}, "2025-02-03"))[:2] \
        == ("3.2.0", "3.2.0")
    o, n, note = applied(toolchains.Policy(), dated(files, "2026-11-06"), dated({"ops/k.py": BLOCK_PTR}, "2026-11-06"))
    assert (o, n) == ("3.8.0", "3.8.0") and note is not None and "ops/k.py uses block pointers" in note


def test_the_diff_driver_s_policy_never_installs(installed: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchains, "find", lambda version: None)
    o, n, note = applied(toolchains.Policy(install=False), dated({"ops/k.py": "q = 1\n"}, "2024-08-01"),
                         dated({"ops/k.py": "q = 2\n"}, "2025-02-03"))
    assert (o, n, installed) == (None, None, [])
    assert note == ("no triton pin: the release current at bbbbbbbbbb's date, 2025-02-03 asks for triton 3.2.0, not installed: "
                    f"compiled with triton {HERE}; `ptxdiff toolchain add 3.2.0` to compile with it")


def test_the_corpus_commits_are_after_the_newest_release(tmp_path: Path) -> None:
    """An unpinned corpus repository compiles with the installed triton, never a download: a
    release added to the table must come with a later date here."""
    from ptxdiff.git.repo import Repo, commit_tree
    first = commit_tree(str(tmp_path / "corpus"), {"k.py": b"x = 1\n"}, "corpus", None)
    assert Repo(str(tmp_path / "corpus")).commit_info(first).time >= toolchains.RELEASES[-1].out


@pytest.mark.integration
def test_the_test_repositories_commits_are_after_the_newest_release(tmp_path: Path) -> None:
    """helpers.commit's fixed dates: an unpinned test repository compiles with the installed
    triton, never a download."""
    from ptxdiff.git.repo import Repo
    repo = make_repo(tmp_path, {"k.py": "x = 1\n"})
    assert Repo(str(repo)).commit_info(commit(repo, "two")).time >= toolchains.RELEASES[-1].out


def dated_commit(repo: Path, message: str, files: dict[str, str], when: str) -> str:
    """A commit whose author and committer dates are `when` (git's `YYYY-MM-DDTHH:MM:SS +0000`)."""
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, env={"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
    return head(repo)


@pytest.mark.integration
def test_an_unpinned_repository_compiles_with_the_triton_of_its_day(tmp_path: Path) -> None:
    """Commits of 2026-09 compile with triton 3.8.0, its toolchain the one installed for the user
    (else one offline that holds the installed triton under its name): the JSON and the table say it."""
    from helpers import fake_toolchain
    real = USER_TOOLCHAINS / "triton-3.8.0"
    root = USER_TOOLCHAINS if (real / "bin" / "python").exists() else tmp_path / "toolchains"
    if root != USER_TOOLCHAINS:
        fake_toolchain(root, "3.8.0")
    before = sorted(p.name for p in root.iterdir())
    repo = make_repo(tmp_path)
    dated_commit(repo, "kernel", {"ops/k.py": scale_kernel()}, "2026-09-09T12:00:00 +0000")
    change = dated_commit(repo, "change", {"ops/k.py": scale_kernel("x * 3.0")}, "2026-09-10T12:00:00 +0000")
    env = {"PTXDIFF_TOOLCHAINS": str(root)}
    proc = ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "--target", "sm_90"], repo, env=env)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["toolchain"]["triton"] == report["toolchain"]["triton_old"] == "3.8.0"
    line = f"compiled with triton 3.8.0 (no triton pin: the release current at {change[:10]}'s date, 2026-09-10)"
    assert line in report["messages"], report["messages"]
    (row,) = report["kernels"]
    assert row["verdict"] not in ("failed", "unmeasured") and row["old"]["regs"] > 0 and row["toolchain"] is None
    table = ptxdiff(["diff", "HEAD~1", "HEAD", "--target", "sm_90"], repo, env=env)
    assert table.returncode == 0 and line in " ".join(table.stdout.split()), table.stdout
    assert "triton 3.8.0" in table.stdout.splitlines()[0]
    # the user's choice wins; the work tree is today's: the installed triton, no toolchain line
    here = binaries.triton_version()
    chosen = json.loads(ptxdiff(["diff", "HEAD~1", "HEAD", "--format", "json", "--target", "sm_90", "--triton", "installed"],
                                repo, env=env).stdout)
    assert chosen["toolchain"]["triton"] == here
    write(repo, {"ops/k.py": scale_kernel("x * 4.0")})
    tree = ptxdiff(["diff", "HEAD", "--format", "json", "--target", "sm_90"], repo, env=env)
    assert tree.returncode == 0, tree.stderr
    assert json.loads(tree.stdout)["toolchain"]["triton"] == here == toolchains.KNOWN[-1]
    assert sorted(p.name for p in root.iterdir()) == before       # nothing added


@pytest.fixture
def refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No toolchain installed, every download recorded and refused; no CI environment."""
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PTXDIFF_TOOLCHAINS", str(tmp_path / "toolchains"))
    downloads: list[str] = []

    def refuse(version: str, progress: object = None) -> toolchains.Toolchain:
        downloads.append(version)
        raise SetupError(f"installing triton {version} refused by the test")
    monkeypatch.setattr(toolchains, "_install", refuse)
    return downloads


@pytest.mark.integration
def test_ci_takes_the_base_s_day_though_the_branch_forges_2024(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               refused: list[str]) -> None:
    here = binaries.triton_version()
    assert here == toolchains.KNOWN[-1]
    repo = make_repo(tmp_path)
    base = dated_commit(repo, "base", {"ops/__init__.py": "", "ops/k.py": scale_kernel()}, "2026-11-06T12:00:00 +0000")
    branch = dated_commit(repo, "pr", {"ops/k.py": scale_kernel("x * 3.0")}, "2024-08-01T12:00:00 +0000")
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--target", "sm_90", "--base", base, "--head", branch,
                           "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc in (0, 1), err
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["toolchain"]["triton"] == report["toolchain"]["triton_old"] == here and refused == []
    assert not any("compiled with triton" in m for m in report["messages"])
    # the control: `ptxdiff diff` is no gate, the change is judged against its own (forged) day
    rc, _, err = run_main(["-C", str(repo), "diff", "-q", "--target", "sm_90", base, branch], capsys)
    assert rc == 2 and refused == ["3.0.0"] and "refused by the test" in err, err


@pytest.mark.integration
def test_git_diff_never_installs_the_triton_of_the_day(tmp_path: Path) -> None:
    """Commits of 2025-02 ask for triton 3.2.0: under `git diff` the installed one compiles and the
    note says how to add it; nothing is downloaded (the tests forbid the package index anyway)."""
    from helpers import driver_notes, kernel_lines
    root = tmp_path / "toolchains"
    root.mkdir()
    repo = make_repo(tmp_path)
    dated_commit(repo, "kernel", {"ops/k.py": scale_kernel()}, "2025-02-02T12:00:00 +0000")
    dated_commit(repo, "change", {"ops/k.py": scale_kernel("x * 3.0")}, "2025-02-03T12:00:00 +0000")
    env = {**os.environ, "PTXDIFF_TOOLCHAINS": str(root), "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "300"}
    assert ptxdiff(["install"], repo, env=env).returncode == 0
    out = git(repo, "diff", "HEAD~1", "HEAD", env=env).stdout
    notes = " ".join(" ".join(driver_notes(out)).split())
    assert kernel_lines(out) and "2025-02-03 asks for triton 3.2.0, not installed" in notes, out
    assert "`ptxdiff toolchain add 3.2.0` to compile with it" in notes and list(root.iterdir()) == []
