"""`ptxdiff cache path|prune|clear`: the compile cache, and with `clear` git diff's stored lines."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ptxdiff.cli.options import unpacked
from ptxdiff.compare.cache import Cache, cache_dir
from ptxdiff.errors import EXIT_INTERNAL, EXIT_OK
from ptxdiff.git.repo import Repo
from ptxdiff.gitdiff.driver import state_dir
from ptxdiff.gitdiff.filler import clear_results


@dataclass(frozen=True)
class Options:
    """`ptxdiff cache`'s command line."""

    action: str                  # path, prune or clear
    max_mb: float | None = None  # prune down to this size (default: the cache's own limit)
    repo: str = "."

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args)


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    repo = Repo(opts.repo)
    cache = Cache(cache_dir(repo.git_dir))
    if opts.action == "path":
        print(cache.root)
        return EXIT_OK
    if opts.action == "prune":
        return prune(cache, opts.max_mb)
    return clear(cache, repo)


def prune(cache: Cache, max_mb: float | None) -> int:
    """Down to `max_mb` (default: the cache's own limit); exit 3 when some entries would not go."""
    limit = int(max_mb * 2**20) if max_mb is not None else cache.max_bytes
    removed, left = cache.prune(limit)
    print(f"removed {removed} entries; {left / 2**20:.1f} MiB left in {cache.root}")
    if left > limit:
        print(f"ptxdiff: could not prune {cache.root} below {limit / 2**20:.1f} MiB "
              "(entries that cannot be deleted)", file=sys.stderr)
        return EXIT_INTERNAL
    return EXIT_OK


def clear(cache: Cache, repo: Repo) -> int:
    """Every compile result, and the kernel lines the diff driver stored (they came from them)."""
    result = cache.clear()
    lines_removed, lines_failed = clear_results(state_dir(repo.git_dir))  # git diff's stored kernel lines
    if result.failed or lines_failed:
        path, why = (list(result.failed) + lines_failed)[0]
        print(f"ptxdiff: removed {result.removed} entries from {cache.root}, but "
              f"{len(result.failed) + len(lines_failed)} could not be removed ({path}: {why})", file=sys.stderr)
        return EXIT_INTERNAL
    print(f"removed {result.removed} entries from {cache.root}"
          + (f" and {lines_removed} stored git diff results" if lines_removed else ""))
    return EXIT_OK
