"""Command line: one `main(argv) -> int`, one error handler, documented exit codes.

Exit codes: 0 fine; 1 `--check` or the hook found a blocking verdict; 2 bad usage or config;
3 internal error. The diff driver always exits 0.

`diff-driver` runs at every `git diff`, so it is handed on before anything else is imported
(not even argparse); every other verb's module is imported only when it runs (commands/).
"""

from __future__ import annotations

import os
import sys
import traceback

from ptxdiff.errors import (
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    PtxdiffError,
)


def _split_paths(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["diff-driver"]:
        from ptxdiff.gitdiff import driver
        try:
            return driver.run(argv[1:])
        except BaseException as e:  # the diff driver always exits 0
            print(f"ptxdiff: {e}")
            return EXIT_OK
    if argv[:1] == ["driver-fill"]:  # hidden: the diff driver's background filler
        from ptxdiff.gitdiff import filler
        return filler.main(argv[1:])
    from ptxdiff.cli.commands import load
    from ptxdiff.cli.parser import build_parser
    from ptxdiff.report.console import for_people, silence

    for_people()
    own, paths = _split_paths(argv)
    try:
        args = build_parser().parse_args(own)
    except SystemExit as e:  # argparse: --help is 0, bad usage is 2
        return EXIT_OK if e.code in (0, None) else EXIT_USAGE
    try:
        return load(args.command)(args, paths)
    except PtxdiffError as e:
        print(f"ptxdiff: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("ptxdiff: interrupted", file=sys.stderr)
        return EXIT_INTERNAL
    except BrokenPipeError:
        # nobody reads any more: a report may stop early, a gate may not pass for it
        silence(sys.stdout)
        silence(sys.stderr)
        return EXIT_INTERNAL if args.command == "pre-push" or getattr(args, "check", False) else EXIT_OK
    except Exception as e:
        print(f"ptxdiff: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("PTXDIFF_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL
