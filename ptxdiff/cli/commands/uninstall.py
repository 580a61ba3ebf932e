"""`ptxdiff uninstall`: undo exactly what install did (see gitdiff/install.py), and say what stays."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from ptxdiff.cli.options import unpacked
from ptxdiff.compare.cache import cache_dir
from ptxdiff.errors import EXIT_OK
from ptxdiff.git.repo import Repo
from ptxdiff.gitdiff import install


@dataclass(frozen=True)
class Options:
    """`ptxdiff uninstall`'s command line."""

    global_: bool = False        # --global: what `install --global` did
    repo: str = "."

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return unpacked(cls, args)


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    repo = None if opts.global_ else Repo(opts.repo)
    code = install.uninstall(repo, opts.global_)
    if code == EXIT_OK and repo is not None:
        kept = cache_note(cache_dir(repo.git_dir))
        if kept:
            print(kept)
    return code


def cache_note(root: Path) -> str | None:
    """The compile cache is not part of the install: it stays (a reinstall finds it warm), said once."""
    if not root.is_dir():
        return None
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(root) for f in files)
    shown = f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size / 2**10:.0f} KiB"
    return (f"kept the compile cache {root} ({shown}); remove it with: "
            f"ptxdiff cache clear (or rm -r {root})")
