"""Names the repository controls reach people escaped: an escape sequence, a carriage return or
a newline in a file name cannot rewrite what a reviewer's terminal shows."""

from __future__ import annotations

import json

import pytest

from helpers import commit, git, install, make_repo, run_main, scale_kernel
from ptxdiff.report.safe import shown

EVIL = "ops/\x1b[2J\x1b[1;1Hevil\rok.py"


def test_control_characters_are_written_out_and_text_stays_text():
    assert shown("a\x1b[31mb\r\nc\x7f\x9b") == "a\\x1b[31mb\\x0d\\x0ac\\x7f\\x9b"
    assert shown("line one\n\tline two", lines=True) == "line one\n\tline two"
    assert shown("caf\udce9") == "caf\\xe9"          # a byte that is not UTF-8, as git names it
    assert shown("plain ops/k.py::k [BLOCK=64] →") == "plain ops/k.py::k [BLOCK=64] →"
    assert shown("ops/k\u202eyp.evil\u200b.py") == "ops/k\\u202eyp.evil\\u200b.py"   # bidi, zero-width: shown


@pytest.mark.integration
def test_a_file_name_with_escapes_is_escaped_in_table_markdown_and_git_diff_but_exact_in_json(tmp_path, capsys):
    repo = make_repo(tmp_path, {EVIL: scale_kernel()})
    commit(repo, "v2", {EVIL: scale_kernel("x * 3.0 + 1.0")})
    for fmt in ("table", "markdown"):
        rc, out, _ = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--format", fmt, "-q", "--no-color"], capsys)
        assert rc == 0 and "\x1b" not in out and "\r" not in out, fmt
        assert "x1b" in out and "x0dok.py" in out, fmt        # written out (markdown escapes it further)
    rc, out, _ = run_main(["diff", "-C", str(repo), "HEAD~1", "HEAD", "--format", "json", "-q"], capsys)
    assert {row["kernel"] for row in json.loads(out)["kernels"]} == {f"{EVIL}::scale_kernel"}
    install(repo, capsys)
    shown_diff = git(repo, "diff", "HEAD~1", "HEAD", env={"PTXDIFF_FORCE": "1", "PTXDIFF_DRIVER_BUDGET": "300"}).stdout
    ours = [ln for ln in shown_diff.splitlines() if ln.startswith("ptxdiff ")]
    assert ours and all("\x1b" not in ln and "\r" not in ln for ln in ours)
    assert any("\\x1b[2J" in ln for ln in ours)
