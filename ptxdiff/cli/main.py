"""Command line: one `main(argv) -> int`, one error handler, documented exit codes.

Exit codes: 0 fine; 1 `--check` or the hook found a blocking verdict; 2 bad usage, config or
set-up (no triton); 3 internal error; 130 interrupted (Ctrl-C: quietly, as git). The diff driver
always exits 0. Global options (-C,
--color, -q, -v) go before the verb as in git, or after it.

`diff-driver` runs at every `git diff`, so it is handed on before anything else is imported
(not even argparse); every other verb's module is imported only when it runs (commands/).
"""

from __future__ import annotations

import os
import sys
import traceback

from ptxdiff.errors import (
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PtxdiffError,
    UsageError,
)

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (the diff driver starts here)
if TYPE_CHECKING:
    import argparse


def _split_paths(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def _driver(args: list[str]) -> int:
    from ptxdiff.gitdiff import driver
    try:
        return driver.run(args)
    except BaseException as e:  # the diff driver always exits 0
        print(f"ptxdiff: {e}")
        return EXIT_OK


def _enter(args: argparse.Namespace) -> None:
    """-C, before and after the verb, like git's: each changes directory, relative to the last."""
    for where in [*args.chdir_global, *getattr(args, "chdir", [])]:
        try:
            os.chdir(where)
        except OSError as e:
            raise UsageError(f"cannot change to {where!r}: {e.strerror or e}") from None
    args.repo = "."


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["diff-driver"] and argv[1:] not in (["-h"], ["--help"]):
        return _driver(argv[1:])
    if argv[:1] == ["driver-fill"]:  # hidden: the diff driver's background filler
        from ptxdiff.gitdiff import filler
        return filler.main(argv[1:])
    from ptxdiff.cli.parser import build_parser
    from ptxdiff.report.console import clear_status, for_people

    for_people()
    own, paths = _split_paths(argv)
    try:
        args = build_parser().parse_args(own)
    except SystemExit as e:  # argparse: --help and --version are 0, bad usage is 2
        return EXIT_OK if e.code in (0, None) else EXIT_USAGE
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    try:
        return _run(args, paths)
    finally:
        clear_status()
        if cwd is not None and os.getcwd() != cwd:  # -C: an in-process caller gets its directory back
            os.chdir(cwd)


def _run(args: argparse.Namespace, paths: list[str] | None) -> int:
    """The verb, and the one error handler: a PtxdiffError is one line and its exit code."""
    from ptxdiff.cli.commands import TAKE_PATHS, load
    from ptxdiff.report.console import clear_status, silence
    from ptxdiff.user_settings import load as user_settings

    debug = False
    try:
        debug = user_settings().debug   # every setting read once here: a bad one is exit 2 before any work
        _enter(args)
        if args.command == "diff-driver":
            return _driver(args.args)
        if paths is not None and args.command not in TAKE_PATHS:
            raise UsageError(f"{args.command} takes no paths: nothing may follow `--`")
        return load(args.command)(args, paths)
    except PtxdiffError as e:
        clear_status()
        print(f"ptxdiff: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:  # the user knows: quiet, as git is
        clear_status()
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # nobody reads any more: a report may stop early, a gate may not pass for it
        silence(sys.stdout)
        silence(sys.stderr)
        return EXIT_INTERNAL if args.command == "pre-push" or getattr(args, "check", False) else EXIT_OK
    except Exception as e:
        clear_status()
        print(f"ptxdiff: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        if debug or getattr(args, "verbose", False):
            traceback.print_exc()
        return EXIT_INTERNAL
