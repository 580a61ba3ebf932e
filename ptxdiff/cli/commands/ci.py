"""`ptxdiff ci`: everything the GitHub Action (action.yml) and the GitLab snippet do but talk
to the forge, so it runs and is tested without one.

It learns what to compare from the command line (`--base`/`--head`) or the CI's environment
(GitHub: the pull_request event at GITHUB_EVENT_PATH; GitLab: CI_MERGE_REQUEST_DIFF_BASE_SHA and
CI_COMMIT_SHA), compares the merge base of base and head with the head through `ptxdiff diff`'s
own path, and writes the sticky comment's Markdown, the JSON report (the artifact), the step's
outputs and its summary. The exit status is the gate's: 1 when a row blocks (a `Ptx-Approved:`
trailer in one of the pull request's commits approves, as at `git push`), else 0.

`--sticky-from COMMENTS.json` only says which existing comment to update (see
report/comment.sticky_action); the action does the one API call it names.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from ptxdiff.cli import htmlout
from ptxdiff.cli.commands.diff import compare
from ptxdiff.cli.common import emit, progress
from ptxdiff.cli.options import Compiling, Shown, unpacked
from ptxdiff.compare.notes import NoteKind, as_notes
from ptxdiff.compare.results import Report
from ptxdiff.errors import EXIT_BLOCKED, EXIT_OK, GitError, UsageError
from ptxdiff.fastio import replace_file
from ptxdiff.gate.outcome import TRAILER
from ptxdiff.git.repo import Repo, Snapshot
from ptxdiff.git.values import is_zero, trailers
from ptxdiff.gitdiff.prepush import approval_notes, approved
from ptxdiff.report.comment import Links, comment, comments_from_json, kernel_verdicts, sticky_action, verdict_counts
from ptxdiff.report.render import as_json


@dataclasses.dataclass(frozen=True)
class Options:
    """`ptxdiff ci`'s command line."""

    compiling: Compiling
    shown: Shown
    base: str | None = None            # --base REV (default: the pull request's, or GitLab's)
    head: str | None = None            # --head REV (default: the pull request's, CI_COMMIT_SHA, or HEAD)
    comment_file: str = "ptxdiff-comment.md"
    json_file: str = "ptxdiff-report.json"
    html_file: str | None = None       # default: beside the JSON; "": none
    no_fail: bool = False
    sticky_from: str | None = None     # COMMENTS.json: only say which comment to write
    author: str | None = None          # with --sticky-from: only this author's comments are ours
    branch_triton: bool = False        # --branch-triton: each side under its own pin too, for the report

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args, compiling=Compiling.of(args), shown=Shown.of(args))


@dataclasses.dataclass(frozen=True)
class Change:
    """What CI compares, and where the forge shows the repository's files."""

    base: str | None
    head: str | None
    number: str | None = None       # the pull / merge request
    root: str | None = None         # https://github.com/owner/repo: kernels are linked there
    blob: str = "blob"              # the path from root to a file at a commit (GitLab: -/blob)
    source: str = "--base/--head"


def github_change(event: Mapping[str, Any], env: Mapping[str, str]) -> Change:
    """A GitHub event: a pull request (its base and head), or a push (before and after)."""
    server = (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    repo = env.get("GITHUB_REPOSITORY") or (event.get("repository") or {}).get("full_name")
    root = f"{server}/{repo}" if repo else None
    pr = event.get("pull_request")
    if isinstance(pr, Mapping):
        number = event.get("number") or pr.get("number")
        return Change((pr.get("base") or {}).get("sha"), (pr.get("head") or {}).get("sha"),
                      str(number) if number else None, root, source="the pull_request event")
    before, after = event.get("before"), event.get("after")
    if isinstance(before, str) and isinstance(after, str) and not is_zero(before):
        return Change(before, after, None, root, source="the push event")
    return Change(None, None, None, root, source="GITHUB_EVENT_PATH (neither a pull_request nor a push event)")


def gitlab_change(env: Mapping[str, str]) -> Change:
    """A GitLab merge request pipeline: its diff base (the merge base already) and the commit."""
    server, project = env.get("CI_SERVER_URL"), env.get("CI_PROJECT_PATH")
    return Change(env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA") or None, env.get("CI_COMMIT_SHA") or None,
                  env.get("CI_MERGE_REQUEST_IID") or None,
                  f"{server.rstrip('/')}/{project}" if server and project else None, "-/blob",
                  source="the GitLab merge request")


def read_event(path: str) -> Mapping[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            event = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read the event at GITHUB_EVENT_PATH={path}: {e}") from None
    if not isinstance(event, Mapping):
        raise UsageError(f"GITHUB_EVENT_PATH={path}: not a JSON object")
    return event


def change_from(given_base: str | None, given_head: str | None, env: Mapping[str, str]) -> Change:
    """The flags first, then GitHub's event, then GitLab's variables; the head defaults to HEAD."""
    if env.get("GITHUB_EVENT_PATH"):
        found = github_change(read_event(env["GITHUB_EVENT_PATH"]), env)
    elif env.get("GITLAB_CI") or env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA"):
        found = gitlab_change(env)
    else:
        found = Change(None, None)
    base = given_base or found.base
    if not base:
        raise UsageError(f"nothing to compare: no base in {found.source}; pass --base REV (and --head REV, "
                         "default HEAD), or run on a pull_request event")
    source = found.source if not (given_base or given_head) else "--base/--head"
    return dataclasses.replace(found, base=base, head=given_head or found.head or "HEAD", source=source)


def history_there(repo: Repo, change: Change) -> None:
    """Base and head resolve and meet; else one line that names the usual cause in CI."""
    try:
        repo.sides([f"{change.base}...{change.head}"])
    except GitError as e:
        raise GitError(f"{e} ({change.source}); a CI clone needs the history down to the merge base: "
                       "actions/checkout with fetch-depth: 0, GitLab GIT_DEPTH: 0") from None


def with_approvals(repo: Repo, report: Report) -> tuple[Report, list[str]]:
    """Rows approved by a `Ptx-Approved:` trailer in a commit of the change block no more, as at
    the pre-push gate; an approval the branch gives itself is said, never silent: the report's
    messages and the returned lines (the comment pins them under its summary) say each one."""
    if not report.base or not report.base.commit or not report.head.commit or not report.blocking:
        return report, []
    commits = list(repo.walk(report.head.commit, hide=[report.base.commit]))
    given = {value for c in commits for value in trailers(c.message, TRAILER)}
    rows = [dataclasses.replace(r, blocking=False) if r.blocking and approved(r.kernel, given) else r
            for r in report.rows]
    passed = [r for r, new in zip(report.rows, rows) if r.blocking != new.blocking]
    if not passed:
        return report, []
    said = approval_notes(passed, commits)
    return dataclasses.replace(report, rows=rows, messages=report.messages + as_notes(NoteKind.APPROVAL, said)), said


def with_branch_triton(opts: Options, report: Report, revs: list[str], paths: list[str] | None) -> Report:
    """`--branch-triton`: the comparison again with each side's own pin (the pull request's triton
    installed where missing, because the job asked), said in one line; the gate is `report`'s."""
    _, own = compare(dataclasses.replace(opts.compiling, command="diff"), opts.shown, revs, paths)
    tools = [m.text for m in own.messages if m.kind is NoteKind.TOOLCHAIN]
    counts = ", ".join(f"{n} {v}" for v, n in verdict_counts(own).items()) or "no changed kernel"
    line = (f"report only, not the gate: with each side's own triton ({'; '.join(tools) or 'the installed one'}): "
            f"{counts}")
    return dataclasses.replace(report, messages=report.messages + as_notes(NoteKind.TOOLCHAIN, [line]))


DEF = r"^[ \t]*(?:async[ \t]+)?def[ \t]+{}[ \t]*\("


def def_line(source: bytes, name: str) -> int | None:
    """The line of `def name(` in a file (the kernel's own line, decorators above it)."""
    m = re.search(DEF.format(re.escape(name)).encode(), source, re.M)
    return source.count(b"\n", 0, m.start()) + 1 if m else None


def links(repo: Repo, report: Report, change: Change) -> Links | None:
    """Each kernel at the head's commit (a removed one at the base's), with its `def` line."""
    if change.root is None:
        return None
    at: dict[str, tuple[str, str, int | None]] = {}
    snapshots: dict[str, Snapshot] = {}
    for r in report.rows:
        side = report.base if r.new is None and r.old is not None and report.base else report.head
        path, _, name = (r.old_kernel if side is report.base and r.old_kernel else r.kernel).rpartition("::")
        if r.kernel in at or not side.commit or not path:
            continue
        if side.commit not in snapshots:
            snapshots[side.commit] = repo.snapshot(side)
        snap = snapshots[side.commit]
        if path in snap:
            at[r.kernel] = (side.commit, path, def_line(snap.read(path), name))
    return Links(change.root, at, change.blob)


def github_lines(values: Mapping[str, str]) -> str:
    """`name=value` lines for GITHUB_OUTPUT (a value with a newline in git's heredoc form)."""
    out = []
    for k, v in values.items():
        if "\n" in v:
            mark = "ptxdiff_EOF"
            while mark in v:
                mark += "_"
            out.append(f"{k}<<{mark}\n{v}\n{mark}\n")
        else:
            out.append(f"{k}={v}\n")
    return "".join(out)


def _write(path: str, text: str, append: bool = False) -> None:
    try:
        if append:
            with open(path, "a", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        else:
            replace_file(path, text.encode("utf-8", "surrogateescape"))
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None


def outputs(report: Report, change: Change, comment_file: str, json_file: str) -> dict[str, str]:
    return {"blocking": "true" if report.blocking else "false", "comment-file": comment_file,
            "json-file": json_file, "kernels": str(len(kernel_verdicts(report))), "rows": str(len(report.rows)),
            "blocking-rows": str(len(report.blocking)), "verdicts": json.dumps(verdict_counts(report)),
            "base": report.base.commit or "" if report.base else "", "head": report.head.commit or "",
            "number": change.number or ""}


def sticky(comments_json: str, comment_file: str, author: str | None) -> int:
    """`--sticky-from COMMENTS.json`: print `update ID`, `unchanged ID` or `create`."""
    try:
        with open(comments_json, encoding="utf-8") as f:
            comments = comments_from_json(f.read())
        with open(comment_file, encoding="utf-8", errors="surrogateescape") as f:
            body = f.read()
    except (OSError, ValueError) as e:
        raise UsageError(f"--sticky-from: {e}") from None
    print(sticky_action(comments, body, author))
    return EXIT_OK


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    if opts.sticky_from:
        return sticky(opts.sticky_from, opts.comment_file, opts.author)
    env = os.environ
    change = change_from(opts.base, opts.head, env)
    history_there(Repo(opts.compiling.repo), change)
    repo, report = compare(opts.compiling, opts.shown, [f"{change.base}...{change.head}"], paths)
    if opts.branch_triton:
        report = with_branch_triton(opts, report, [f"{change.base}...{change.head}"], paths)
    report, approvals = with_approvals(repo, report)
    comment_file, json_file = os.path.abspath(opts.comment_file), os.path.abspath(opts.json_file)
    html_file = htmlout.html_file(opts.html_file, json_file)
    where = htmlout.artifact_line(html_file, env) if html_file else ""
    body = comment(report, links(repo, report, change), artifact=os.path.basename(json_file),
                   limit=htmlout.comment_room(where), approvals=approvals) + where
    _write(comment_file, body)
    _write(json_file, as_json(report))
    if html_file:
        _write(html_file, htmlout.report_page(report, opts.compiling, progress(opts.shown)))
    if env.get("GITHUB_OUTPUT"):
        _write(env["GITHUB_OUTPUT"], github_lines({**outputs(report, change, comment_file, json_file),
                                                   "html-file": html_file}), append=True)
    if env.get("GITHUB_STEP_SUMMARY"):
        _write(env["GITHUB_STEP_SUMMARY"], body, append=True)
    emit(report, opts.shown, opts.compiling)
    return EXIT_BLOCKED if report.blocking and not opts.no_fail else EXIT_OK
