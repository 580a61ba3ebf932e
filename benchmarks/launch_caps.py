"""How many of a repository's kernels have a size guessed beyond what their launchers can pass? (issue 37)

A launch site that computes a size within caps of its own (`BK = max(min(K, 16), 16)`) passes
BK=16 whatever K is; read as an expression offline reading cannot tell, BK was guessed at 64
(fla's fused_chunk_based: a 300 s compile). This makes every kernel's plan of values from the
revision's sources at HEAD twice, with the caps read (ptxdiff as it is) and with them ignored
(every computed size unbounded, as before discovery/caps.py), and prints the kernels whose
constexpr values differ, with both. Plans only: nothing is compiled.

    python benchmarks/launch_caps.py REPO_DIR [--show 20]
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from unittest import mock

from ptxdiff.discovery import callsites, caps
from ptxdiff.discovery.kernels import discover
from ptxdiff.repo_config import Config
from ptxdiff.source.modules import FileSet
from ptxdiff.specs.launch import inputs_of
from ptxdiff.specs.plan import make

Values = dict[str, tuple[object, ...]]


def head_files(repo: Path) -> dict[str, bytes]:
    """The `.py` files of the repository's HEAD, as committed."""
    names = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "*.py"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    return {n: (repo / n).read_bytes() for n in names if n and (repo / n).is_file()}


def plans(files: dict[str, bytes]) -> dict[str, Values]:
    """Each kernel's constexpr values, as the plan of a kernel compared with itself makes them."""
    out: dict[str, Values] = {}
    for name, kernel in discover(FileSet(files)).kernels.items():
        plan = make(kernel, kernel, kernel, inputs_of(kernel, {}, Config()))
        out[name] = {c.name: c.values for c in plan.constexprs}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("repo", type=Path)
    parser.add_argument("--show", type=int, default=20, help="kernels listed (default 20)")
    args = parser.parse_args()
    files = head_files(args.repo)
    capped = plans(files)
    with mock.patch.object(callsites, "launch_range", lambda *_: caps.UNBOUNDED):
        uncapped = plans(files)
    changed = sorted(n for n in capped if n in uncapped and capped[n] != uncapped[n])
    print(f"{args.repo.name}: {len(capped)} kernels, {len(changed)} whose values differ with the sizes their "
          f"launch sites compute read (caps, tuple assignments) and unread")
    for name in changed[:args.show]:
        was, now = uncapped[name], capped[name]
        diff = ", ".join(f"{k} {was.get(k)} -> {now.get(k)}" for k in sorted(set(was) | set(now)) if was.get(k) != now.get(k))
        print(f"  {name}: {diff}")


if __name__ == "__main__":
    main()
