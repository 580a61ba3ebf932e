"""Command line: one `main(argv) -> int`, one error handler, documented exit codes.

Exit codes: 0 fine; 1 `--check` or the hook found a blocking verdict; 2 bad usage or config;
3 internal error. The diff driver always exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from ptxdiff.errors import (
    EXIT_BLOCKED,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    PtxdiffError,
    UsageError,
)


def _split_paths(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def _targets(text: str | None) -> list[int] | None:
    if not text:
        return None
    from ptxdiff.targets import parse_target
    return [parse_target(t) for t in text.split(",") if t.strip()]


def _progress(args) -> object:
    if getattr(args, "quiet", False):
        return None
    if not (sys.stderr.isatty() or os.environ.get("PTXDIFF_PROGRESS")):
        return None
    from ptxdiff.report.console import say
    return lambda line: say(line + "\n", sys.stderr)


def _repo_paths(repo, paths: list[str] | None) -> list[str] | None:
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


def _engine(args):
    from ptxdiff.compare.engine import Engine
    from ptxdiff.git.repo import Repo
    from ptxdiff.trust import from_user

    repo = Repo(args.repo)
    permissions = from_user(imports=args.imports, outputs=getattr(args, "outputs", False),
                            time=getattr(args, "time", False))
    return repo, Engine(repo, jobs=args.jobs, targets=_targets(args.target), progress=_progress(args),
                        use_cache=not args.no_cache, permissions=permissions)


def _config(args):
    if not getattr(args, "config", None):
        return None
    from ptxdiff.config import load_file
    return load_file(args.config)


def _emit(report, args) -> int:
    """Print the report; the exit code is decided before and never by whether anyone read it."""
    from ptxdiff.report import render as reportmod
    from ptxdiff.report.console import say

    code = EXIT_BLOCKED if getattr(args, "check", False) and report.blocking else EXIT_OK
    text = reportmod.render(report, args.format)
    if getattr(args, "ptx", False):
        text += reportmod.ptx_diffs(report)
    say(text, sys.stdout)
    return code


def cmd_diff(args, paths) -> int:
    repo, engine = _engine(args)
    old, new = repo.sides(args.revs)
    pathspecs = _repo_paths(repo, paths)
    report = engine.compare(old, new, pathspecs, show_all=args.all, config=_config(args))
    return _emit(_with_submodules(repo, report, pathspecs), args)


def _with_submodules(repo, report, pathspecs):
    """Say, in one line each, which submodules changed: ptxdiff does not look into them."""
    import dataclasses

    from ptxdiff.compare.engine import path_matches
    from ptxdiff.gate.prepush import submodule_note

    notes = [submodule_note(c) for c in repo.submodule_changes(report.base, report.head)
             if path_matches(c.path, pathspecs)]
    return dataclasses.replace(report, messages=report.messages + notes) if notes else report


def cmd_show(args, paths) -> int:
    repo, engine = _engine(args)
    side = repo.side(args.rev) if args.rev else repo.side("HEAD")
    report = engine.compare(None, side, _repo_paths(repo, paths), show_all=True, config=_config(args))
    return _emit(report, args)


def cmd_cache(args, paths) -> int:
    from ptxdiff.compare.store import Cache, cache_dir
    from ptxdiff.git.repo import Repo

    repo = Repo(args.repo)
    cache = Cache(cache_dir(repo.git_dir))
    if args.action == "path":
        print(cache.root)
        return EXIT_OK
    if args.action == "prune":
        limit = int(args.max_mb * 2**20) if args.max_mb is not None else cache.max_bytes
        removed, left = cache.prune(limit)
        print(f"removed {removed} entries; {left / 2**20:.1f} MiB left in {cache.root}")
        if left > limit:
            print(f"ptxdiff: could not prune {cache.root} below {limit / 2**20:.1f} MiB "
                  "(entries that cannot be deleted)", file=sys.stderr)
            return EXIT_INTERNAL
        return EXIT_OK
    result = cache.clear()
    from ptxdiff.gitdiff.driver import state_dir
    from ptxdiff.gitdiff.filler import clear_results
    lines_removed, lines_failed = clear_results(state_dir(repo.git_dir))  # git diff's stored kernel lines
    if result.failed or lines_failed:
        path, why = (list(result.failed) + lines_failed)[0]
        print(f"ptxdiff: removed {result.removed} entries from {cache.root}, but "
              f"{len(result.failed) + len(lines_failed)} could not be removed ({path}: {why})", file=sys.stderr)
        return EXIT_INTERNAL
    print(f"removed {result.removed} entries from {cache.root}"
          + (f" and {lines_removed} stored git diff results" if lines_removed else ""))
    return EXIT_OK


def cmd_pre_push(args, paths) -> int:
    from ptxdiff.compare.engine import Engine
    from ptxdiff.gate import prepush as hook

    def factory(repo):
        from ptxdiff.trust import from_user
        return Engine(repo, jobs=args.jobs, progress=_progress(args), permissions=from_user())
    stdin = sys.stdin
    text = "" if stdin is None or stdin.isatty() else \
        getattr(stdin, "buffer", stdin).read()
    if isinstance(text, bytes):   # ref names are bytes to git; keep them as file names are kept
        text = text.decode("utf-8", "surrogateescape")
    return hook.run(args.remote, args.url, text, factory)


def cmd_install(args, paths) -> int:
    from ptxdiff.git import install
    from ptxdiff.git.repo import Repo

    repo = None if args.global_ else Repo(args.repo)
    return install.install(repo, args.global_, args.attributes, args.dry_run)


def cmd_uninstall(args, paths) -> int:
    from ptxdiff.git import install
    from ptxdiff.git.repo import Repo

    repo = None if args.global_ else Repo(args.repo)
    return install.uninstall(repo, args.global_)


def cmd_log(args, paths) -> int:
    import json as jsonmod

    from tabulate import tabulate

    from ptxdiff.compare.history import history
    from ptxdiff.report.render import cell

    if args.plot:
        from ptxdiff.report.plot import require_matplotlib
        require_matplotlib()  # before any compile: say it now, not after minutes of work
    repo, engine = _engine(args)
    events = history(repo, engine, args.kernel, args.range or "HEAD", config=_config(args))
    if args.format == "json":
        print(jsonmod.dumps([{"commit": e.commit.id, "date": e.commit.time, "author": e.commit.author,
                              "subject": e.commit.subject, "kernel": e.kernel,
                              "rows": [r.as_json() for r in e.rows]} for e in events], indent=2))
    else:
        import datetime
        rows = []
        for e in events:
            for r in e.rows:
                rows.append([e.commit.short[:7], datetime.datetime.fromtimestamp(e.commit.time).strftime("%Y-%m-%d"),
                             e.commit.author, e.commit.subject[:40], r.target, r.spec, r.verdict,
                             cell(r, "ptx_instrs"), cell(r, "ptx_regs"), cell(r, "regs"), cell(r, "spills")])
        print(tabulate(rows, headers=["commit", "date", "author", "subject", "target", "spec", "verdict",
                                      "ptx instrs", "ptx regs", "regs", "spills"], disable_numparse=True))
        for e in events:
            for r in e.rows:
                if r.error:
                    print(f"{e.commit.short[:7]} {r.target}: {r.error}")
    if args.plot:
        from ptxdiff.report.plot import plot_history
        plot_history(events, args.plot)
    return EXIT_OK


def cmd_notes(args, paths) -> int:
    from ptxdiff.git.repo import Side
    from ptxdiff.report import render as reportmod

    repo, engine = _engine(args)
    commits = list(repo.walk(*repo.range(args.range or "HEAD")))
    written = 0
    for c in commits:
        old = Side(c.parents[0][:10], c.parents[0]) if c.parents else Side("nothing", "")
        report = engine.compare(old, Side(c.short, c.id))
        if report.rows:
            repo.write_note(c.id, reportmod.table(report), "refs/notes/ptxdiff")
            written += 1
    print(f"wrote {written} note(s) under refs/notes/ptxdiff ({len(commits)} commits looked at); "
          "see them with: git log --notes=ptxdiff")
    return EXIT_OK


def cmd_doctor(args, paths) -> int:
    from ptxdiff.cli import doctor
    from ptxdiff.git.repo import Repo

    return doctor.run(Repo(args.repo), sys.stdout)


def cmd_corpus(args, paths) -> int:
    from ptxdiff.corpus import pairs as corpus

    targets = _targets(args.target) or [90]
    pairs, report = corpus.run(targets, jobs=args.jobs, names=args.pairs or None, progress=_progress(args),
                               outputs=args.outputs)
    if args.format == "json":
        from ptxdiff.report import render as reportmod
        sys.stdout.write(reportmod.as_json(report))
        return EXIT_OK
    ev = corpus.collect(pairs, report)
    sys.stdout.write(corpus.evidence(ev, "github" if args.format == "markdown" else "simple"))
    if args.readme:
        from pathlib import Path
        corpus.update_readme(Path(args.readme), ev)
    return EXIT_OK


def cmd_demo(args, paths) -> int:
    from ptxdiff.corpus import demo
    return demo.run(keep=True, pause=not args.no_pause)


def cmd_record(args, command) -> int:
    from ptxdiff.record import command as record
    return record.main(args, command)


def _common(p: argparse.ArgumentParser, compile_opts: bool = True) -> None:
    p.add_argument("-C", dest="repo", default=".", help="run as if started in this directory")
    if compile_opts:
        p.add_argument("--target", help="comma-separated targets, e.g. sm_90,sm_80 (default: config, else sm_90)")
        p.add_argument("--format", choices=("table", "json", "markdown"), default="table")
        p.add_argument("--jobs", "-j", type=int, default=None, help="parallel compile workers (default: cores)")
        p.add_argument("--no-cache", action="store_true", help="compile everything again")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
        p.add_argument("--config", metavar="FILE", help="your own config file (ptxdiff.toml or pyproject.toml "
                                                          "spelling), used instead of the repository's")
        p.add_argument("--import", dest="imports", action="store_true",
                       help="import the revisions' modules to build kernels (runs their code; default: "
                            "build from source, run nothing)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ptxdiff", description="What did this change do to the compiled Triton kernel?")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("diff", help="compare the kernels of two revisions (like git diff)")
    p.add_argument("revs", nargs="*", help="none: HEAD vs work tree; one: REV vs work tree; two, or A..B")
    _common(p)
    p.add_argument("--check", action="store_true", help="exit 1 when a verdict is in the block policy")
    p.add_argument("--all", action="store_true", help="list unchanged kernels too")
    p.add_argument("--ptx", action="store_true", help="add the unified diff of the normalised PTX")
    p.add_argument("--outputs", action="store_true",
                   help="run old and new on the same inputs (config: wrapper, inputs); CPU interpreter without a GPU")
    p.add_argument("--time", action="store_true", help="on a GPU: time new against old with a measured noise band")
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("show", help="metrics of every kernel at one revision")
    p.add_argument("rev", nargs="?", help="default HEAD")
    _common(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("cache", help="the compile cache: path, prune, clear")
    p.add_argument("action", choices=("path", "prune", "clear"))
    p.add_argument("--max-mb", type=float, default=None, help="prune down to this size (default PTXDIFF_CACHE_MAX_MB or 512)")
    _common(p, compile_opts=False)
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("log", help="a kernel's metrics along history")
    p.add_argument("kernel", nargs="?", help="kernel id (path::name) or function name")
    p.add_argument("range", nargs="?", help="REV or A..B (default HEAD)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the metrics along history (needs matplotlib)")
    _common(p)
    p.set_defaults(func=cmd_log)

    p = sub.add_parser("notes", help="write each commit's kernel deltas under refs/notes/ptxdiff")
    p.add_argument("range", nargs="?", help="REV or A..B (default HEAD: all its history)")
    _common(p)
    p.set_defaults(func=cmd_notes)

    p = sub.add_parser("install", help="git diff driver, attributes and pre-push hook for this repo")
    p.add_argument("--global", dest="global_", action="store_true", help="for every repo of this user")
    p.add_argument("--attributes", choices=("info", "commit"), default="info",
                   help="info: .git/info/attributes (default); commit: .gitattributes")
    p.add_argument("--dry-run", action="store_true", help="print every change, make none")
    _common(p, compile_opts=False)
    p.set_defaults(func=cmd_install)

    p = sub.add_parser("uninstall", help="undo exactly what install did")
    p.add_argument("--global", dest="global_", action="store_true")
    _common(p, compile_opts=False)
    p.set_defaults(func=cmd_uninstall)

    p = sub.add_parser("doctor", help="check the set-up and say what to fix (exit 1 if anything)")
    _common(p, compile_opts=False)
    p.set_defaults(func=cmd_doctor)

    p = sub.add_parser("corpus", help="the evidence table on the embedded corpus")
    p.add_argument("pairs", nargs="*", help="only these pairs (default: all)")
    p.add_argument("--readme", metavar="README.md", help="also rewrite that file's generated evidence block")
    p.add_argument("--outputs", action="store_true", help="also run every changed pair on the same inputs")
    _common(p)
    p.set_defaults(func=cmd_corpus)

    p = sub.add_parser("demo", help="the whole product in one minute, in a throwaway repo")
    p.add_argument("--no-pause", action="store_true", help="do not wait between steps")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("record", help="record the kernel launches a command makes (ptxdiff record -- CMD ...)")
    p.add_argument("-o", "--output", metavar="FILE", help="default: .ptxdiff/launches.jsonl at the repository root")
    p.add_argument("--keep", type=int, metavar="N", help="the N most frequent specs per kernel (default 8)")
    p.add_argument("--device", choices=("auto", "gpu", "interpreter"), default="auto",
                   help="auto: the GPU if one is visible, else TRITON_INTERPRET=1")
    p.add_argument("--allow-failure", action="store_true", help="write the launches even if the command fails")
    p.add_argument("--from-tritonparse", metavar="DIR", help="read tritonparse's raw trace logs instead of running")
    _common(p, compile_opts=False)
    p.set_defaults(func=cmd_record)

    sub.add_parser("diff-driver", help="what git calls (diff.ptxdiff.command): 7, 9 or 1 arguments")

    p = sub.add_parser("pre-push", help="what the pre-push hook calls (refs on stdin)")
    p.add_argument("remote", nargs="?", default="origin")
    p.add_argument("url", nargs="?", default="")
    p.add_argument("--jobs", "-j", type=int, default=None)
    p.add_argument("--quiet", "-q", action="store_true")
    p.set_defaults(func=cmd_pre_push)
    return ap


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
    from ptxdiff.report.console import for_people, silence

    for_people()
    own, paths = _split_paths(argv)
    try:
        args = parser().parse_args(own)
    except SystemExit as e:  # argparse: --help is 0, bad usage is 2
        return EXIT_OK if e.code in (0, None) else EXIT_USAGE
    try:
        return args.func(args, paths)
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
