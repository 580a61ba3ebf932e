"""Partial and shallow clones, where pygit2 cannot help: a partial clone's missing objects are
fetched the way git itself fetches them (the one place ptxdiff runs `git fetch`), and a shallow
clone's boundary is read from git's own file."""

from __future__ import annotations

import os
import subprocess


def shallow_commits(common_dir: str) -> frozenset[str]:
    """The commits where a shallow clone's history stops (their parents are not here)."""
    try:
        with open(os.path.join(common_dir, "shallow"), encoding="ascii") as f:
            return frozenset(line.strip() for line in f if line.strip())
    except OSError:
        return frozenset()


def fetch(git_dir: str, remote: str, oids: list[str]) -> str:
    """Fetch `oids` from `remote` in one `git fetch` (no negotiation: we name the objects).
    Returns what went wrong in one line: git's last line on stderr, "" where it said nothing."""
    try:
        proc = subprocess.run(
            ["git", f"--git-dir={git_dir}", "-c", "fetch.negotiationAlgorithm=noop", "fetch", remote,
             "--no-tags", "--no-write-fetch-head", "--recurse-submodules=no", "--filter=blob:none", "--stdin"],
            input="\n".join(oids) + "\n", capture_output=True, text=True, errors="replace")
    except OSError as e:
        return f"cannot run git: {e}"
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
