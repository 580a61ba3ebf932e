"""The command line's conventions, as git's: global options before the verb (and after it, as
before), --version, help that says what each verb does with an example, `diff-driver --help`,
PTXDIFF_PROGRESS as a boolean, targets once each in order of number, colour only when asked."""

from __future__ import annotations

import argparse
import io
import sys

import pytest

from helpers import ptxdiff, run_main
from ptxdiff import user_settings
from ptxdiff.cli.common import layout, progress, target_list
from ptxdiff.cli.options import Shown
from ptxdiff.cli.parser import build_parser
from ptxdiff.report import console


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def shown(*argv: str) -> Shown:
    return Shown.of(parse(*argv))


def test_global_options_before_the_verb_as_in_git():
    args = parse("-C", "a", "--no-color", "-q", "-v", "diff", "HEAD~1")
    assert (args.command, args.revs) == ("diff", ["HEAD~1"])
    assert args.chdir_global == ["a"] and args.color == "never" and args.quiet and args.verbose
    assert not hasattr(args, "chdir")                         # none after the verb


def test_global_options_after_the_verb_still_work_and_never_undo_those_before():
    args = parse("diff", "-C", "repo", "-q", "--color=always")
    assert args.chdir_global == [] and args.chdir == ["repo"] and args.quiet and args.color == "always"
    args = parse("--color=never", "-q", "diff", "--format", "json")   # nothing after: the ones before stand
    assert args.color == "never" and args.quiet
    assert parse("show", "--color").color == "always"               # git's bare --color
    assert parse("log").color == "auto" and parse("log").quiet is False
    assert parse("-C", "a", "cache", "path", "-C", "b").chdir_global == ["a"]


@pytest.mark.parametrize("argv", [["--version"], ["-C", "/nonexistent", "--version"]])
def test_version(argv, capsys):
    rc, out, err = run_main(argv, capsys)
    assert rc == 0 and err == ""
    assert out.startswith("ptxdiff 0.") and "triton " in out and "python " in out


def test_every_verb_says_what_it_does_with_an_example(capsys):
    verbs = build_parser()._subparsers._group_actions[0].choices   # type: ignore[union-attr]
    assert {"diff", "show", "log", "install", "uninstall", "doctor", "demo", "record", "diff-driver"} <= set(verbs)
    for verb in verbs:
        rc, out, _ = run_main([verb, "--help"], capsys)
        assert rc == 0, verb
        description = out.split("\n\n")[1]
        assert description.strip().endswith(".") and len(description.strip().splitlines()) == 1, (verb, description)
        assert "examples:\n  " in out and f"ptxdiff {verb}" in out.split("examples:")[1] or verb in ("diff-driver",
                                                                                                    "pre-push"), verb
        assert "-C DIR" in out and "--no-color" in out, verb                 # the global options, after the verb too
    rc, out, _ = run_main(["--help"], capsys)
    assert rc == 0 and "exit codes: 0 fine" in out and "ptxdiff -C ~/src/kernels diff main" in out


def test_uninstall_global_has_help(capsys):
    _, out, _ = run_main(["uninstall", "--help"], capsys)
    assert "--global  " in out and "undo what `ptxdiff install --global` did" in " ".join(out.split())


def test_diff_driver_help_prints_help_not_an_unmerged_path(capsys):
    for flag in ("--help", "-h"):
        rc, out, _ = run_main(["diff-driver", flag], capsys)
        assert rc == 0 and out.startswith("usage: ptxdiff diff-driver") and "Unmerged" not in out


def test_bad_usage_is_2_and_help_is_0(capsys):
    assert run_main([], capsys)[0] == 2
    assert run_main(["--color=sometimes", "diff"], capsys)[0] == 2
    assert run_main(["nosuchverb"], capsys)[0] == 2
    assert run_main(["-h"], capsys)[0] == 0


def test_a_directory_that_is_not_there_is_one_line(tmp_path, capsys):
    rc, out, err = run_main(["-C", str(tmp_path / "nope"), "doctor"], capsys)
    assert rc == 2 and out == "" and err.strip() == f"ptxdiff: cannot change to {str(tmp_path / 'nope')!r}: " \
                                                     "No such file or directory"


def test_targets_once_each_in_order_of_number():
    assert target_list("sm_90,sm_90") == [90]
    assert target_list("sm_100,sm_80,90,sm_90") == [80, 90, 100]
    assert target_list(None) is None


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("value,on", [("1", True), ("true", True), ("yes", True), ("0", False), ("false", False),
                                      ("off", False), ("", False)])
def test_ptxdiff_progress_is_a_boolean(monkeypatch, value, on):
    monkeypatch.setenv("PTXDIFF_PROGRESS", value)
    monkeypatch.setattr(sys, "stderr", Terminal())                 # even on a terminal, 0 means off
    assert user_settings.load().progress is on
    assert (progress(shown("diff")) is not None) is on


def test_progress_defaults_to_the_terminal_and_q_or_a_bad_value(monkeypatch):
    monkeypatch.delenv("PTXDIFF_PROGRESS", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    log = progress(shown("diff"))   # not a terminal: a line per tenth of a long count (`tenths`)
    assert log is not None and progress(shown("-v", "diff")) is not None
    for i in range(1, 101):
        log(f"[{i}/100] k sm_90 BLOCK={i}")
    log("[1/3] short")
    lines = sys.stderr.getvalue().splitlines()
    assert lines == ["[1/100] k sm_90 BLOCK=1"] + [f"[{i}/100] k sm_90 BLOCK={i}" for i in range(10, 101, 10)]
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert progress(shown("diff")) is not None and progress(shown("-q", "diff")) is None
    monkeypatch.setenv("PTXDIFF_PROGRESS", "maybe")
    from ptxdiff.errors import UsageError
    with pytest.raises(UsageError, match="PTXDIFF_PROGRESS='maybe'"):
        progress(shown("diff"))


def test_progress_on_a_terminal_is_one_line_erased_when_done(monkeypatch):
    screen = Terminal()
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", screen)
    show = progress(shown("diff"))
    assert show is not None
    show("[1/2] gelu_kernel sm_90 BLOCK=1024")
    show("[2/2] relu_kernel sm_90 BLOCK=1024")
    assert "\n" not in screen.getvalue()                          # rewritten in place, never a new line
    console.clear_status()
    assert screen.getvalue().endswith("\r\x1b[K")                  # erased: nothing stays above the output
    console.clear_status()                                         # once
    assert screen.getvalue().count("\r\x1b[K") == 3


def test_progress_into_a_log_is_plain_lines(monkeypatch):
    log = io.StringIO()
    monkeypatch.setenv("PTXDIFF_PROGRESS", "1")
    monkeypatch.setattr(sys, "stderr", log)
    show = progress(shown("diff"))
    assert show is not None
    show("[1/1] k sm_90")
    console.clear_status()
    assert log.getvalue() == "[1/1] k sm_90\n"


def test_colour_only_for_a_terminal_without_no_color_or_when_asked(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert layout(shown("diff"), Terminal()).colour is True
    assert layout(shown("diff"), io.StringIO()).colour is False           # piped
    assert layout(shown("--no-color", "diff"), Terminal()).colour is False
    assert layout(shown("diff", "--color=always"), io.StringIO()).colour is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert layout(shown("diff"), Terminal()).colour is False
    assert layout(shown("--color=always", "diff"), Terminal()).colour is True   # the command line wins


def test_width_is_the_terminal_s_or_columns_and_no_limit_for_a_pipe(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    assert layout(shown("diff"), io.StringIO()).width == 100
    monkeypatch.delenv("COLUMNS")
    assert layout(shown("diff"), io.StringIO()).width is None
    assert layout(shown("diff", "--wide"), io.StringIO()).wide is True


def test_output_erases_a_live_progress_line_first(monkeypatch):
    screen = Terminal()
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setattr(sys, "stderr", screen)
    show = progress(shown("pre-push"))
    assert show is not None
    show("[1/1] gelu_kernel sm_90")
    console.say("ptxdiff: push of main blocked\n", screen)          # the gate's text on the same terminal
    assert screen.getvalue().endswith("[1/1] gelu_kernel sm_90\r\x1b[Kptxdiff: push of main blocked\n")


@pytest.mark.integration
@pytest.mark.parametrize("args, hint", [
    (["dif"], "(did you mean `diff`?)"),
    (["diff", "--taget", "sm_90"], "(did you mean `--target`?)"),
    (["log", "k", "--formt=json"], "(did you mean `--format`?)"),
    (["diff", "--format", "jsn"], "(did you mean `json`?)"),
])
def test_a_typo_gets_one_line_that_suggests_the_spelling(tmp_path, args, hint):
    proc = ptxdiff(args, tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.rstrip().endswith(hint), proc.stderr


@pytest.mark.integration
def test_nothing_close_is_suggested_for_nothing_like_it(tmp_path):
    proc = ptxdiff(["frobnicate"], tmp_path)
    assert proc.returncode == 2 and "did you mean" not in proc.stderr and proc.stderr.count("\n") == 1
