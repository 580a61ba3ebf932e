"""What the verbs share: the engine from the common options, targets, progress lines, pathspecs
relative to the cwd, a --config file, and printing a report; each takes the typed records a verb
made of its command line (options.py), never the Namespace.

Every import of a costly module stays inside the function that needs it: a verb that does not
compile (cache, install, ...) never loads the engine.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from ptxdiff.cli.options import Compiling, Shown
from ptxdiff.errors import EXIT_BLOCKED, EXIT_OK, UsageError

if TYPE_CHECKING:  # types only: importing them costs pygit2 and the compile pipeline
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compare.results import Report
    from ptxdiff.compile.toolchains import Policy
    from ptxdiff.git.repo import Repo
    from ptxdiff.repo_config import Config
    from ptxdiff.report.layout import Layout

def target_list(text: str | None) -> list[int] | None:
    """`--target sm_90,sm_80` as compute capabilities, each once, in order of number; None when
    not given."""
    if not text:
        return None
    from ptxdiff.targets import parse_target
    return sorted({parse_target(t) for t in text.split(",") if t.strip()})


LOG_FROM = 32   # into a log, a count of at least this many gets a progress line per tenth of it
_COUNT = re.compile(r"\b(\d+)/(\d+)\b")


def progress(shown: Shown) -> Callable[[str], None] | None:
    """Progress lines on stderr where a person watches: a terminal (one line, rewritten and erased
    when done), or wherever PTXDIFF_PROGRESS=1 or -v asks for them; never with -q or
    PTXDIFF_PROGRESS=0. Elsewhere (a CI log) a long run is not silent: `tenths`."""
    from ptxdiff.report.console import Status
    from ptxdiff.user_settings import load

    if shown.quiet or sys.stderr is None:
        return None
    asked = load().progress
    terminal = sys.stderr.isatty()
    if asked is False:
        return None
    if not (asked or terminal or shown.verbose):
        return tenths(Status(sys.stderr, live=False))
    return Status(sys.stderr, live=terminal and os.environ.get("TERM") != "dumb")


def tenths(say: Callable[[str], None]) -> Callable[[str], None]:
    """Progress for a log: of the lines that count (`[37/519] kernel sm_90 ...`, `log: 12/300
    commits ...`), those of a count of at least LOG_FROM that start it or reach the next tenth of
    it; nothing else. A count decides what is printed, so a short run prints nothing."""
    last = [0, -1]   # the count and the tenth last printed

    def sparse(line: str) -> None:
        found = _COUNT.search(line)
        if found is None or int(found[2]) < LOG_FROM:
            return
        total, tenth = int(found[2]), int(found[1]) * 10 // int(found[2])
        if [total, tenth] != last and (total != last[0] or tenth > last[1]):
            last[:] = [total, tenth]
            say(line)
    return sparse


def layout(shown: Shown, stream: TextIO | None = None) -> Layout:
    """How a report is laid out for `stream` (stdout): the terminal's width (COLUMNS; no limit
    for a file or a pipe), colour by --color and NO_COLOR, the full table with --wide."""
    from ptxdiff.report.console import wants_colour, width
    from ptxdiff.report.layout import Layout

    stream = sys.stdout if stream is None else stream
    return Layout(width=width(stream), colour=wants_colour(stream, shown.color), wide=shown.wide, specs=shown.specs)


def repo_paths(repo: Repo, paths: list[str] | None) -> list[str] | None:
    """Paths after `--` are relative to the cwd, like git's; make them repo-relative."""
    if not paths:
        return paths
    root = os.path.realpath(repo.workdir)
    out = []
    for p in paths:
        full = os.path.realpath(os.path.join(os.getcwd(), p))
        rel = os.path.relpath(full, root)
        if rel.startswith(".."):
            raise UsageError(f"{p}: outside repository {root}")
        out.append("" if rel == "." else rel.replace(os.sep, "/"))
    return out


def open_engine(opts: Compiling, shown: Shown) -> tuple[Repo, Engine]:
    """The repository of -C and an engine set up from the common options."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compile.executor import parse
    from ptxdiff.git.repo import Repo
    from ptxdiff.permissions import from_user
    from ptxdiff.user_settings import load

    repo = Repo(opts.repo)
    permissions = from_user(load(), imports=opts.imports, outputs=opts.outputs, time=opts.time,
                            no_sandbox=opts.no_sandbox)
    return repo, Engine(repo, jobs=opts.jobs, targets=target_list(opts.target), progress=progress(shown),
                        use_cache=not opts.no_cache, permissions=permissions,
                        executor=parse(opts.executor), tritons=tritons(opts, repo))


def tritons(opts: Compiling, repo: Repo, gate: bool = False) -> Policy:
    """How the engine chooses each side's triton (compile/toolchains.py): --triton, else
    PTXDIFF_TRITON, else git config ptxdiff.triton, else the repository's pins."""
    from ptxdiff.compile import toolchains
    asked = toolchains.asked(opts.triton, repo.config_get(toolchains.GIT_KEY))
    if asked.old != asked.new and opts.command not in ("diff", "ci"):
        raise UsageError(f"{asked.said_by} OLD..NEW compares two tritons in `ptxdiff diff` and `ci` only; "
                         f"ptxdiff {opts.command} takes one version")
    # `ci` is a gate too: the base side's pin chooses the triton of both sides (a pull request's own
    # pin is report-only and never downloaded, unless the job asks: ci --branch-triton)
    return toolchains.Policy(asked, gate or opts.command == "ci")


def user_config(path: str | None) -> Config | None:
    """The --config file, read instead of the repository's; None when not given."""
    if not path:
        return None
    from ptxdiff.repo_config import load_file
    return load_file(path)


def emit(report: Report, shown: Shown, compiling: Compiling) -> int:
    """Print the report; the exit code is decided before and never by whether anyone read it."""
    from ptxdiff.report import render as reportmod
    from ptxdiff.report.console import clear_status, say

    code = EXIT_BLOCKED if shown.check and report.blocking else EXIT_OK
    if shown.format == "html":   # the page has every row's PTX: --ptx adds nothing to it
        from ptxdiff.cli import htmlout
        text = htmlout.report_page(report, compiling, progress(shown))
    else:
        text = reportmod.render(report, shown.format, layout(shown))
        if shown.ptx:
            text += reportmod.ptx_diffs(report)
    clear_status()
    if shown.output:
        from ptxdiff.cli.htmlout import deliver
        deliver(text, shown.output, shown.quiet)
    else:
        say(text, sys.stdout)
    return code
