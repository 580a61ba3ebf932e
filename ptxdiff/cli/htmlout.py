"""`--format html` at the edge: the page reads the kernel source its PTX lines point into from the
revisions compared (git objects, or the work tree), and each side's SASS from its kept cubin
(disassembled now, or stored since an earlier page: compile/listings.py), and goes to `-o FILE`
or stdout."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from ptxdiff.cli.options import Compiling
from ptxdiff.compare.history import Event
from ptxdiff.compare.results import Report, Row
from ptxdiff.errors import UsageError
from ptxdiff.fastio import replace_file
from ptxdiff.git.repo import Repo, Snapshot
from ptxdiff.git.values import Side
from ptxdiff.report import html
from ptxdiff.report.comment import COMMENT_MAX, HEADROOM
from ptxdiff.report.console import say
from ptxdiff.report.layout import md_escape
from ptxdiff.report.safe import shown

SOURCE_MAX = 2 * 2**20   # a larger file is not embedded (generated code): its lines stay unlinked


def _reader(repo: Repo, sides: dict[str, Side]) -> Callable[[str, str], str | None]:
    """read(rev, path) over the snapshots of `sides` (by the page's name for them)."""
    snapshots: dict[str, Snapshot] = {}

    def read(rev: str, path: str) -> str | None:
        side = sides.get(rev)
        if side is None:
            return None
        if rev not in snapshots:
            snapshots[rev] = repo.snapshot(side)
        snap = snapshots[rev]
        if path not in snap:
            return None
        try:
            data = snap.read(path)
        except OSError:       # a work tree file removed since the compare
            return None
        return data.decode("utf-8", "replace") if len(data) <= SOURCE_MAX else None
    return read


def _with_sass(rows: Sequence[Row], repo: Repo, compiling: Compiling,
               progress: Callable[[str], None] | None) -> list[Row]:
    """The rows with each side's SASS where its cubin was kept: the only place ptxdiff
    disassembles, so a run that renders no page never pays for it. A page without SASS still
    renders (its rows say `no SASS`); stderr says why."""
    from ptxdiff import user_settings
    from ptxdiff.compare.cache import cache_dir
    from ptxdiff.compile import listings
    from ptxdiff.compile.executor import default_jobs

    packed = [c for r in rows for c in (r.old_cubin, r.new_cubin) if c]
    if not packed:
        return list(rows)
    unsandboxed = compiling.no_sandbox or user_settings.load().unsandboxed is not None
    found = listings.listings(packed, None if compiling.no_cache else cache_dir(repo.git_dir),
                              compiling.jobs or default_jobs(), unsandboxed, progress)
    if found.error:
        say(f"ptxdiff: the HTML report lacks some SASS: {shown(found.error)}\n", sys.stderr)
    return [dataclasses.replace(r, old_sass=found.texts.get(r.old_cubin) if r.old_cubin else None,
                                new_sass=found.texts.get(r.new_cubin) if r.new_cubin else None) for r in rows]


def report_page(report: Report, compiling: Compiling, progress: Callable[[str], None] | None = None) -> str:
    """The page of `report`, with the source of the repository (-C) and each side's SASS."""
    sides = {"head": report.head, **({"base": report.base} if report.base is not None else {})}
    repo = Repo(compiling.repo)
    report = dataclasses.replace(report, rows=_with_sass(report.rows, repo, compiling, progress))
    return html.report_page(report, _reader(repo, sides))


def history_page(events: Sequence[Event], compiling: Compiling,
                 progress: Callable[[str], None] | None = None) -> str:
    sides = {e.commit.id: Side(e.commit.short, e.commit.id) for e in events}
    repo = Repo(compiling.repo)
    rows = iter(_with_sass([r for e in events for r in e.rows], repo, compiling, progress))
    events = [dataclasses.replace(e, rows=[next(rows) for _ in e.rows]) for e in events]
    return html.history_page(events, _reader(repo, sides))


def deliver(text: str, path: str | None, quiet: bool = False) -> None:
    """To `-o FILE` (written whole, then moved into place; read-write as the umask allows) when
    given, saying where on stderr (`ptxdiff: wrote report.html (1.2 MB)`; not with -q), else
    stdout."""
    if not path:
        say(text, sys.stdout)
        return
    data = text.encode("utf-8", "surrogateescape")
    try:
        replace_file(path, data, 0o666)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    if not quiet:
        size = f"{len(data) / 1e6:.1f} MB" if len(data) >= 100_000 else f"{len(data) / 1e3:.1f} kB"
        say(f"ptxdiff: wrote {os.path.abspath(path)} ({size})\n", sys.stderr)


def html_file(given: str | None, json_file: str) -> str:
    """`ptxdiff ci`'s HTML report: `--html-file`, else beside the JSON (its name with .html);
    "" for none (`--html-file ''`)."""
    if given == "":
        return ""
    return os.path.abspath(given if given is not None else os.path.splitext(json_file)[0] + ".html")


def artifact_line(path: str, env: Mapping[str, str]) -> str:
    """`ptxdiff ci`'s last line of the comment: where the HTML report is. GitHub: among the
    artifacts of this run (its page); GitLab: the job's artifact file itself; elsewhere its name."""
    name = md_escape(os.path.basename(path))
    said = f"\n_The HTML report, each row's PTX side by side: `{name}`"
    if env.get("GITHUB_RUN_ID") and env.get("GITHUB_REPOSITORY"):
        server = (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
        run = f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
        return f"{said} in the artifacts of [this run]({run})._\n"
    project = env.get("CI_PROJECT_DIR")
    if env.get("CI_JOB_URL") and project and not os.path.relpath(path, project).startswith(".."):
        return f"{said}, [open it]({env['CI_JOB_URL'].rstrip('/')}/artifacts/file/{os.path.relpath(path, project)})._\n"
    return f"{said} beside the JSON report._\n"


def comment_room(line: str) -> int:
    """What the comment may take when `line` follows it."""
    return COMMENT_MAX - HEADROOM - len(line)
