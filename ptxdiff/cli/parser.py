"""The command line's grammar: the verbs, their arguments and options, and their help.

Only the grammar: what each verb does is in commands/<verb>.py, found through the registry in
commands/__init__.py by the verb's name (`args.command`).
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_common_options(p: argparse.ArgumentParser, compile_opts: bool = True) -> None:
    """-C for every verb that reads a repository; with `compile_opts`, the options of the verbs that compile."""
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


def _diff(sub: Subparsers) -> None:
    p = sub.add_parser("diff", help="compare the kernels of two revisions (like git diff)")
    p.add_argument("revs", nargs="*", help="none: HEAD vs work tree; one: REV vs work tree; two, or A..B")
    add_common_options(p)
    p.add_argument("--check", action="store_true", help="exit 1 when a verdict is in the block policy")
    p.add_argument("--all", action="store_true", help="list unchanged kernels too")
    p.add_argument("--ptx", action="store_true", help="add the unified diff of the normalised PTX")
    p.add_argument("--outputs", action="store_true",
                   help="run old and new on the same inputs (config: wrapper, inputs); CPU interpreter without a GPU")
    p.add_argument("--time", action="store_true", help="on a GPU: time new against old with a measured noise band")


def _show(sub: Subparsers) -> None:
    p = sub.add_parser("show", help="metrics of every kernel at one revision")
    p.add_argument("rev", nargs="?", help="default HEAD")
    add_common_options(p)


def _cache(sub: Subparsers) -> None:
    p = sub.add_parser("cache", help="the compile cache: path, prune, clear")
    p.add_argument("action", choices=("path", "prune", "clear"))
    p.add_argument("--max-mb", type=float, default=None, help="prune down to this size (default PTXDIFF_CACHE_MAX_MB or 512)")
    add_common_options(p, compile_opts=False)


def _log(sub: Subparsers) -> None:
    p = sub.add_parser("log", help="a kernel's metrics along history")
    p.add_argument("kernel", nargs="?", help="kernel id (path::name) or function name")
    p.add_argument("range", nargs="?", help="REV or A..B (default HEAD)")
    p.add_argument("--plot", metavar="FILE.png", help="draw the metrics along history (needs matplotlib)")
    add_common_options(p)


def _notes(sub: Subparsers) -> None:
    p = sub.add_parser("notes", help="write each commit's kernel deltas under refs/notes/ptxdiff")
    p.add_argument("range", nargs="?", help="REV or A..B (default HEAD: all its history)")
    add_common_options(p)


def _install(sub: Subparsers) -> None:
    p = sub.add_parser("install", help="git diff driver, attributes and pre-push hook for this repo")
    p.add_argument("--global", dest="global_", action="store_true", help="for every repo of this user")
    p.add_argument("--attributes", choices=("info", "commit"), default="info",
                   help="info: .git/info/attributes (default); commit: .gitattributes")
    p.add_argument("--dry-run", action="store_true", help="print every change, make none")
    add_common_options(p, compile_opts=False)


def _uninstall(sub: Subparsers) -> None:
    p = sub.add_parser("uninstall", help="undo exactly what install did")
    p.add_argument("--global", dest="global_", action="store_true")
    add_common_options(p, compile_opts=False)


def _doctor(sub: Subparsers) -> None:
    p = sub.add_parser("doctor", help="check the set-up and say what to fix (exit 1 if anything)")
    add_common_options(p, compile_opts=False)


def _corpus(sub: Subparsers) -> None:
    p = sub.add_parser("corpus", help="the evidence table on the embedded corpus")
    p.add_argument("pairs", nargs="*", help="only these pairs (default: all)")
    p.add_argument("--readme", metavar="README.md", help="also rewrite that file's generated evidence block")
    p.add_argument("--outputs", action="store_true", help="also run every changed pair on the same inputs")
    add_common_options(p)


def _demo(sub: Subparsers) -> None:
    p = sub.add_parser("demo", help="the whole product in one minute, in a throwaway repo")
    p.add_argument("--no-pause", action="store_true", help="do not wait between steps")


def _record(sub: Subparsers) -> None:
    p = sub.add_parser("record", help="record the kernel launches a command makes (ptxdiff record -- CMD ...)")
    p.add_argument("-o", "--output", metavar="FILE", help="default: .ptxdiff/launches.jsonl at the repository root")
    p.add_argument("--keep", type=int, metavar="N", help="the N most frequent specs per kernel (default 8)")
    p.add_argument("--device", choices=("auto", "gpu", "interpreter"), default="auto",
                   help="auto: the GPU if one is visible, else TRITON_INTERPRET=1")
    p.add_argument("--allow-failure", action="store_true", help="write the launches even if the command fails")
    p.add_argument("--from-tritonparse", metavar="DIR", help="read tritonparse's raw trace logs instead of running")
    add_common_options(p, compile_opts=False)


def _diff_driver(sub: Subparsers) -> None:
    # listed for --help only: main() hands `diff-driver` to the driver before any parsing
    sub.add_parser("diff-driver", help="what git calls (diff.ptxdiff.command): 7, 9 or 1 arguments")


def _pre_push(sub: Subparsers) -> None:
    p = sub.add_parser("pre-push", help="what the pre-push hook calls (refs on stdin)")
    p.add_argument("remote", nargs="?", default="origin")
    p.add_argument("url", nargs="?", default="")
    p.add_argument("--jobs", "-j", type=int, default=None)
    p.add_argument("--quiet", "-q", action="store_true")


# in the order --help lists them
VERBS = (_diff, _show, _cache, _log, _notes, _install, _uninstall, _doctor, _corpus, _demo, _record, _diff_driver,
         _pre_push)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ptxdiff", description="What did this change do to the compiled Triton kernel?")
    sub = ap.add_subparsers(dest="command", required=True)
    for add in VERBS:
        add(sub)
    return ap
