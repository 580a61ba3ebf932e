"""Command line: one `main(argv) -> int`, one error handler, documented exit codes.

Exit codes: 0 fine; 1 `--check` or the hook found a blocking verdict; 2 bad usage or config;
3 internal error. The diff driver always exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from .errors import EXIT_BLOCKED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, PtxdiffError, UsageError


def _split_paths(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, None


def _targets(text: str | None) -> list[int] | None:
    if not text:
        return None
    from .targets import parse_target
    return [parse_target(t) for t in text.split(",") if t.strip()]


def _progress(args) -> object:
    if getattr(args, "quiet", False):
        return None
    if not (sys.stderr.isatty() or os.environ.get("PTXDIFF_PROGRESS")):
        return None
    return lambda line: print(line, file=sys.stderr, flush=True)


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
    from .engine import Engine
    from .git import Repo

    repo = Repo(args.repo)
    return repo, Engine(repo, jobs=args.jobs, targets=_targets(args.target), progress=_progress(args),
                        use_cache=not args.no_cache)


def _emit(report, args) -> int:
    from . import report as reportmod

    sys.stdout.write(reportmod.render(report, args.format))
    if getattr(args, "ptx", False):
        sys.stdout.write(reportmod.ptx_diffs(report))
    if getattr(args, "check", False) and report.blocking:
        return EXIT_BLOCKED
    return EXIT_OK


def cmd_diff(args, paths) -> int:
    repo, engine = _engine(args)
    old, new = repo.sides(args.revs)
    report = engine.compare(old, new, _repo_paths(repo, paths), show_all=args.all,
                            outputs=True if args.outputs else None, time=True if args.time else None)
    return _emit(report, args)


def cmd_show(args, paths) -> int:
    repo, engine = _engine(args)
    side = repo.side(args.rev) if args.rev else repo.side("HEAD")
    report = engine.compare(None, side, _repo_paths(repo, paths), show_all=True)
    return _emit(report, args)


def cmd_cache(args, paths) -> int:
    from .cache import Cache, cache_dir
    from .git import Repo

    repo = Repo(args.repo)
    cache = Cache(cache_dir(repo.git_dir))
    if args.action == "path":
        print(cache.root)
    elif args.action == "prune":
        limit = int(args.max_mb * 2**20) if args.max_mb is not None else None
        removed, left = cache.prune(limit)
        print(f"removed {removed} entries; {left / 2**20:.1f} MiB left in {cache.root}")
    else:
        removed, _ = cache.prune(0)
        print(f"removed {removed} entries from {cache.root}")
    return EXIT_OK


def cmd_pre_push(args, paths) -> int:
    from . import hook
    from .engine import Engine

    def factory(repo):
        return Engine(repo, jobs=args.jobs, progress=_progress(args))
    text = "" if sys.stdin is None or sys.stdin.isatty() else sys.stdin.read()
    return hook.run(args.remote, args.url, text, factory)


def cmd_install(args, paths) -> int:
    from . import install
    from .git import Repo

    repo = None if args.global_ else Repo(args.repo)
    return install.install(repo, args.global_, args.attributes, args.dry_run)


def cmd_uninstall(args, paths) -> int:
    from . import install
    from .git import Repo

    repo = None if args.global_ else Repo(args.repo)
    return install.uninstall(repo, args.global_)


def cmd_log(args, paths) -> int:
    import json as jsonmod

    from tabulate import tabulate

    from .history import history
    from .report import cell

    if args.plot:
        from .plot import require_matplotlib
        require_matplotlib()  # before any compile: say it now, not after minutes of work
    repo, engine = _engine(args)
    events = history(repo, engine, args.kernel, args.range or "HEAD")
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
        from .plot import plot_history
        plot_history(events, args.plot)
    return EXIT_OK


def cmd_notes(args, paths) -> int:
    from . import report as reportmod
    from .git import Side

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
    from . import doctor
    from .git import Repo

    return doctor.run(Repo(args.repo), sys.stdout)


def cmd_corpus(args, paths) -> int:
    from . import corpus

    targets = _targets(args.target) or [90]
    pairs, report = corpus.run(targets, jobs=args.jobs, names=args.pairs or None, progress=_progress(args),
                               outputs=args.outputs)
    if args.format == "json":
        from . import report as reportmod
        sys.stdout.write(reportmod.as_json(report))
        return EXIT_OK
    ev = corpus.collect(pairs, report)
    sys.stdout.write(corpus.evidence(ev, "github" if args.format == "markdown" else "simple"))
    if args.readme:
        from pathlib import Path
        corpus.update_readme(Path(args.readme), ev)
    return EXIT_OK


def cmd_demo(args, paths) -> int:
    from . import demo
    return demo.run(keep=True, pause=not args.no_pause)


def _common(p: argparse.ArgumentParser, compile_opts: bool = True) -> None:
    p.add_argument("-C", dest="repo", default=".", help="run as if started in this directory")
    if compile_opts:
        p.add_argument("--target", help="comma-separated targets, e.g. sm_90,sm_80 (default: config, else sm_90)")
        p.add_argument("--format", choices=("table", "json", "markdown"), default="table")
        p.add_argument("--jobs", "-j", type=int, default=None, help="parallel compile workers (default: cores)")
        p.add_argument("--no-cache", action="store_true", help="compile everything again")
        p.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")


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
        from . import driver
        try:
            return driver.run(argv[1:])
        except BaseException as e:  # the diff driver always exits 0
            print(f"ptxdiff: {e}")
            return EXIT_OK
    if argv[:1] == ["driver-fill"]:  # hidden: the diff driver's background filler
        from . import filler
        return filler.main(argv[1:])
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
        return EXIT_OK
    except Exception as e:
        print(f"ptxdiff: internal error: {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("PTXDIFF_DEBUG"):
            traceback.print_exc()
        return EXIT_INTERNAL
