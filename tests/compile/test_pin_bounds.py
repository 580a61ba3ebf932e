"""A triton pin is the repository's text: bounded before it is read as a version (issue 41).
`triton>=` and 5,000 digits, in requirements.txt or pyproject.toml, or a pin over two lines, is
one line and exit 2 in `ptxdiff diff` and `ptxdiff ci`, blocks the pre-push gate, and under
`git diff` is one line after git's own patch (exit 0); the same files with a plain pin compile."""

from __future__ import annotations

import os

import pytest

from helpers import commit, git, kernel_lines, pushed_repo, run_main, scale_kernel
from ptxdiff.compile import toolchains, triton_pin
from ptxdiff.errors import ConfigError, UsageError

DIGITS = "1" * 5000
HOSTILE = {
    "requirements": {"requirements.txt": f"torch\ntriton>={DIGITS}\n"},
    "pyproject": {"pyproject.toml": f'[project]\nname = "x"\ndependencies = ["triton>={DIGITS}"]\n'},
    "two lines": {"pyproject.toml": '[project]\nname = "x"\ndependencies = ["triton>=3.0\\n,<4"]\n'},
    "included": {"requirements.txt": "-r more/requirements-gpu.txt\n",
                 "more/requirements-gpu.txt": f"triton=={DIGITS}.0\n"},
}
PLAIN = {"requirements.txt": "torch\ntriton>=3.0\n"}


@pytest.mark.parametrize("files", HOSTILE.values(), ids=list(HOSTILE))
def test_a_pin_past_the_bound_is_one_line(files):
    with pytest.raises(ConfigError) as e:
        triton_pin.read_pin(lambda p: files[p].encode(), files)
    said = str(e.value)
    assert "\n" not in said and len(said) < 300 and "over the 120-character bound for a pin" in said
    assert triton_pin.read_pin(lambda p: PLAIN[p].encode(), PLAIN) == triton_pin.Pin(">=3.0", "requirements.txt")


def test_a_long_version_on_the_command_line_is_one_line():
    with pytest.raises(UsageError) as e:
        toolchains.parse_option(DIGITS)
    assert len(str(e.value)) < 300 and "5000 characters" in str(e.value)
    assert not triton_pin.RELEASE.match(DIGITS) and not triton_pin.satisfies(DIGITS, ">=3.0")   # never int() of it


@pytest.mark.integration
@pytest.mark.parametrize("name", ["requirements", "pyproject", "plain"])
def test_diff_ci_git_diff_and_the_gate_say_one_line(tmp_path, capsys, monkeypatch, name):
    for var in ("GITHUB_EVENT_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        monkeypatch.delenv(var, raising=False)
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/__init__.py": "", "ops/k.py": scale_kernel()})
    base = commit(repo, "pin", HOSTILE.get(name, PLAIN))
    change = commit(repo, "change", {"ops/k.py": scale_kernel("x * 3.0")})
    hostile = name != "plain"
    rc, _, err = run_main(["-C", str(repo), "diff", "-q", base, change, "--target", "sm_90"], capsys)
    assert rc == (2 if hostile else 0), err
    if hostile:
        assert err.count("\n") == 1 and "over the 120-character bound for a pin" in err and len(err) < 300, err
    rc, _, err = run_main(["-C", str(repo), "ci", "-q", "--target", "sm_90", "--base", base, "--head", change,
                           "--comment-file", str(tmp_path / "c.md"), "--json-file", str(tmp_path / "r.json")], capsys)
    assert rc == (2 if hostile else 1), err          # structural blocks; a bad pin cannot be compared
    assert not hostile or ("over the 120-character bound" in err and len(err) < 300), err
    diff = git(repo, "diff", base, change, env={**os.environ, "PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "300"},
               check=False)
    assert diff.returncode == 0 and "+    tl.store(out_ptr + offs, x * 3.0" in diff.stdout, diff.stderr
    if hostile:
        assert "over the 120-character" in diff.stdout and DIGITS not in diff.stdout + diff.stderr, diff.stdout[-2000:]
    else:
        assert any("structural" in line for line in kernel_lines(diff.stdout)), diff.stdout
    push = git(repo, "push", "-q", "origin", "main", check=False)
    assert push.returncode != 0 and DIGITS not in push.stderr, push.stderr   # blocked: a bad pin, or structural
    assert not hostile or "over the 120-character bound" in push.stderr, push.stderr
