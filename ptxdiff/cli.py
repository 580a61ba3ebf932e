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
    report = engine.compare(old, new, _repo_paths(repo, paths), show_all=args.all)
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
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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
