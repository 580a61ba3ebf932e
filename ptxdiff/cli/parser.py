"""The command line's grammar: the verbs, their arguments and options, and their help.

Only the grammar: what each verb does is in commands/<verb>.py, found through the registry in
commands/__init__.py by the verb's name (`args.command`).
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Sequence
from typing import Any, NoReturn, TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"


class Parser(argparse.ArgumentParser):
    """argparse, with a bad command line told in one line, and a close spelling suggested for an
    unknown verb or option (`ptxdiff dif`, `diff --taget`)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}{self._suggestion(message)}\n")

    def _suggestion(self, message: str) -> str:
        choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if choice:
            word, known = choice.group(1), re.findall(r"'([^']*)'", choice.group(2))
        else:
            unknown = re.search(r"unrecognized arguments: (\S+)", message)
            if not unknown or not unknown.group(1).startswith("-"):
                return ""
            word, known = unknown.group(1).split("=", 1)[0], self._options()
        close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
        return f" (did you mean `{close[0]}`?)" if close else ""

    def _options(self) -> list[str]:
        """Every option string of this parser and of its verbs."""
        out: list[str] = []
        for action in self._actions:
            out += action.option_strings
            if isinstance(action, argparse._SubParsersAction):
                for verb in action.choices.values():
                    out += [o for a in verb._actions for o in a.option_strings]
        return sorted(set(out))


def add_global_options(p: argparse.ArgumentParser, top: bool = False) -> None:
    """The options git-style tools take before the verb (`ptxdiff -C DIR diff`); every verb takes
    them after it too. A verb's copy has no default, so it never undoes one given before it."""
    keep: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    p.add_argument("-C", dest="chdir_global" if top else "chdir", action="append", metavar="DIR",
                   default=[] if top else argparse.SUPPRESS,
                   help="run as if started in DIR (like git -C; several -C are joined, each relative to the last)")
    p.add_argument("--color", "--colour", dest="color", nargs="?", const="always", choices=("auto", "always", "never"),
                   metavar="WHEN", default="auto" if top else argparse.SUPPRESS,
                   help="colour verdicts: auto (a terminal, unless NO_COLOR is set; the default), always, never")
    p.add_argument("--no-color", "--no-colour", dest="color", action="store_const", const="never", **keep,
                   help="the same as --color=never")
    p.add_argument("-q", "--quiet", action="store_true", **keep, help="no progress lines on stderr")
    p.add_argument("-v", "--verbose", action="store_true", **keep,
                   help="progress lines on stderr even when it is not a terminal; a traceback with an internal error")


def add_common_options(p: argparse.ArgumentParser, compile_opts: bool = True, html: bool = False) -> None:
    """With `compile_opts`, the options of the verbs that compile; with `html`, --format html and -o."""
    if compile_opts:
        p.add_argument("--target", help="comma-separated targets, e.g. sm_90,sm_80 (default: config, else sm_90)")
        formats = ("table", "json", "markdown", "html") if html else ("table", "json", "markdown")
        p.add_argument("--format", choices=formats, default="table",
                       help="html: one self-contained page (PTX side by side; log: charts)" if html else None)
        if html:
            p.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout")
        p.add_argument("--jobs", "-j", type=int, default=None, help="parallel compile workers (default: cores)")
        p.add_argument("--no-cache", action="store_true", help="compile everything again")
        p.add_argument("--config", metavar="FILE", help="your own config file (ptxdiff.toml or pyproject.toml "
                                                          "spelling), used instead of the repository's")
        p.add_argument("--import", dest="imports", action="store_true",
                       help="import the revisions' modules to build kernels (runs their code; default: "
                            "build from source, run nothing)")
        p.add_argument("--triton", metavar="VERSION|OLD..NEW",
                       help="compile with this triton release (installed on demand into the user's cache; "
                            "'installed': the one beside ptxdiff); OLD..NEW compiles one revision with both "
                            "and reports the difference (default: PTXDIFF_TRITON, git config ptxdiff.triton, "
                            "the repository's pin, else the installed one)")
        p.add_argument("--no-sandbox", action="store_true",
                       help="compile outside the OS sandbox (a repository's code could then run with your rights; "
                            "see Security)")


def _executor(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", default="local", metavar="local|ray|ray://ADDRESS",
                   help="where the compile jobs run: this machine's cores (the default), Ray (a local instance, or "
                        "the cluster RAY_ADDRESS names) or the Ray cluster at ray://HOST:PORT (pip install 'ptxdiff[ray]')")


def _wide(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wide", action="store_true",
                   help="the full table whatever the terminal's width (a narrow one gets a compact table)")
    p.add_argument("--specs", action="store_true",
                   help="a row per spec (default: a line per kernel: its strongest verdict, the deltas of the spec "
                        "to trust most, how many specs agree; the JSON always has every spec)")


def _verb(sub: Subparsers, name: str, summary: str, examples: str) -> argparse.ArgumentParser:
    """A verb with its one-line summary (in `ptxdiff --help` and its own help) and examples."""
    p = sub.add_parser(name, help=summary, description=summary[:1].upper() + summary[1:] + ".",
                       epilog="examples:\n" + examples, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_global_options(p)
    return p


def _diff(sub: Subparsers) -> None:
    p = _verb(sub, "diff", "compare the kernels of two revisions (like git diff)",
              "  ptxdiff diff                        HEAD vs the work tree\n"
              "  ptxdiff diff HEAD~1 HEAD -- ops/    two commits, kernels that read a file under ops/\n"
              "  ptxdiff diff main --check           exit 1 on a blocking verdict (CI)\n"
              "  ptxdiff diff HEAD~1 --format markdown --target sm_80,sm_90\n"
              "  ptxdiff diff --triton 3.6.0..3.9.0  the work tree under two tritons (what the upgrade does)\n"
              "  ptxdiff diff main --format html -o report.html   PTX side by side, in one file")
    p.add_argument("revs", nargs="*", help="none: HEAD vs work tree; one: REV vs work tree; two, or A..B")
    add_common_options(p, html=True)
    _wide(p)
    p.add_argument("--check", action="store_true", help="exit 1 when a verdict is in the block policy")
    p.add_argument("--all", action="store_true", help="list unchanged kernels too")
    p.add_argument("--ptx", action="store_true", help="add the unified diff of the normalised PTX")
    p.add_argument("--outputs", action="store_true",
                   help="run old and new on the same inputs (config: wrapper, inputs); CPU interpreter without a GPU")
    p.add_argument("--time", action="store_true", help="on a GPU: time new against old with a measured noise band")
    p.add_argument("--repro", metavar="DIR", help="with --outputs: write each outputs-differ of synthesised launches "
                   "as a standalone script (triton and torch alone, CPU or GPU) into DIR")


def _ci(sub: Subparsers) -> None:
    p = _verb(sub, "ci", "the report as a pull-request comment, the JSON and the gate's exit status (CI)",
              "  ptxdiff ci                          on GitHub Actions: the pull_request event says base and head\n"
              "  ptxdiff ci --base main --head HEAD  anywhere (GitLab: CI_MERGE_REQUEST_DIFF_BASE_SHA is read)\n"
              "  ptxdiff ci --sticky-from comments.json   update ID, unchanged ID or create: which comment to write\n"
              "compares the merge base of base and head with head; exit 1 when a row blocks (--no-fail: 0)")
    p.add_argument("--base", metavar="REV", help="default: the pull request's base (GITHUB_EVENT_PATH), or "
                                                 "CI_MERGE_REQUEST_DIFF_BASE_SHA")
    p.add_argument("--head", metavar="REV", help="default: the pull request's head, CI_COMMIT_SHA, or HEAD")
    p.add_argument("--comment-file", metavar="FILE", default="ptxdiff-comment.md",
                   help="where the comment's Markdown goes (default ptxdiff-comment.md)")
    p.add_argument("--json-file", metavar="FILE", default="ptxdiff-report.json",
                   help="where the JSON report goes, for the artifact (default ptxdiff-report.json)")
    p.add_argument("--html-file", metavar="FILE",
                   help="where the HTML report goes, for the artifact (default: beside the JSON, its name with "
                        ".html; '': none)")
    p.add_argument("--no-fail", action="store_true", help="exit 0 even when a row blocks")
    p.add_argument("--sticky-from", metavar="COMMENTS.json",
                   help="only print which existing comment gets --comment-file's body: update ID, unchanged ID "
                        "or create (the comments as the forge's API lists them)")
    p.add_argument("--author", metavar="LOGIN", help="with --sticky-from: only this author's comments are ours "
                                                     "(e.g. github-actions[bot])")
    p.add_argument("--branch-triton", action="store_true",
                   help="also compile each side with its own pinned triton, installing the pull request's if "
                        "needed, for the report only (the gate always compiles both sides with the base's)")
    add_common_options(p)


def _show(sub: Subparsers) -> None:
    p = _verb(sub, "show", "metrics of every kernel at one revision",
              "  ptxdiff show                        every kernel at HEAD\n"
              "  ptxdiff show v1.2 -- ops/gelu.py    the kernels of one file at a tag")
    p.add_argument("rev", nargs="?", help="default HEAD")
    add_common_options(p, html=True)
    _wide(p)


def _cache(sub: Subparsers) -> None:
    p = _verb(sub, "cache", "the compile cache: path, prune, clear",
              "  ptxdiff cache path                  where it is\n"
              "  ptxdiff cache prune --max-mb 100    drop least recently used entries down to 100 MiB\n"
              "  ptxdiff cache clear                 drop everything (and git diff's stored lines)")
    p.add_argument("action", choices=("path", "prune", "clear"))
    p.add_argument("--max-mb", type=float, default=None, help="prune down to this size (default PTXDIFF_CACHE_MAX_MB or 512)")
    add_common_options(p, compile_opts=False)


def _log(sub: Subparsers) -> None:
    p = _verb(sub, "log", "a kernel's metrics along history",
              "  ptxdiff log gelu_kernel             every commit that changed it, up to HEAD\n"
              "  ptxdiff log ops/gelu.py::gelu_kernel v1.0..main\n"
              "  ptxdiff log gelu_kernel --format html -o gelu.html   charts per commit, each row's PTX")
    p.add_argument("kernel", nargs="?", help="kernel id (path::name) or function name")
    p.add_argument("range", nargs="?", help="REV or A..B (default HEAD)")
    add_common_options(p, html=True)
    _wide(p)
    _executor(p)


def _notes(sub: Subparsers) -> None:
    p = _verb(sub, "notes", "write each commit's kernel deltas under refs/notes/ptxdiff",
              "  ptxdiff notes main~20..main && git log --notes=ptxdiff")
    p.add_argument("range", nargs="?", help="REV or A..B (default HEAD: all its history)")
    add_common_options(p)
    _executor(p)


def _install(sub: Subparsers) -> None:
    p = _verb(sub, "install", "git diff driver, attributes and pre-push hook for this repo",
              "  ptxdiff install                     this repository\n"
              "  ptxdiff install --global            every repository of this user\n"
              "  ptxdiff install --dry-run           print every change, make none")
    p.add_argument("--global", dest="global_", action="store_true", help="for every repo of this user")
    p.add_argument("--attributes", choices=("info", "commit"), default="info",
                   help="info: .git/info/attributes (default); commit: .gitattributes")
    p.add_argument("--dry-run", action="store_true", help="print every change, make none")
    add_common_options(p, compile_opts=False)


def _uninstall(sub: Subparsers) -> None:
    p = _verb(sub, "uninstall", "undo exactly what install did",
              "  ptxdiff uninstall                   this repository (the compile cache stays: ptxdiff cache clear)\n"
              "  ptxdiff uninstall --global          what install --global did")
    p.add_argument("--global", dest="global_", action="store_true",
                   help="undo what `ptxdiff install --global` did (your global git config and hooks)")
    add_common_options(p, compile_opts=False)


def _doctor(sub: Subparsers) -> None:
    p = _verb(sub, "doctor", "check the set-up and say what to fix (exit 1 if anything)",
              "  ptxdiff doctor\n"
              "  ptxdiff -C ~/src/kernels doctor\n"
              "  ptxdiff doctor --ci                 what a CI job needs (the default where CI=true)")
    add_common_options(p, compile_opts=False)
    p.add_argument("--ci", action="store_true",
                   help="check what `ptxdiff ci` needs (the default where CI=true): no diff driver or hook")


def _corpus(sub: Subparsers) -> None:
    p = _verb(sub, "corpus", "the evidence table on the embedded corpus",
              "  ptxdiff corpus gelu silu            two pairs\n"
              "  ptxdiff corpus --target sm_80,sm_90 --format markdown > results.md")
    p.add_argument("pairs", nargs="*", help="only these pairs (default: all)")
    p.add_argument("--readme", metavar="FILE.md", help="also rewrite that file's generated evidence block")
    p.add_argument("--outputs", action="store_true", help="also run every changed pair on the same inputs")
    add_common_options(p)


def _toolchain(sub: Subparsers) -> None:
    p = _verb(sub, "toolchain", "the tritons ptxdiff compiles with: list, add, remove",
              "  ptxdiff toolchain list              the installed triton and every toolchain\n"
              "  ptxdiff toolchain add 3.6.0         install triton 3.6.0 into the user's cache (its own venv)\n"
              "  ptxdiff toolchain remove 3.6.0      delete it")
    p.add_argument("action", choices=("list", "add", "remove"))
    p.add_argument("versions", nargs="*", metavar="VERSION", help="triton releases, e.g. 3.6.0")
    add_common_options(p, compile_opts=False)


def _demo(sub: Subparsers) -> None:
    p = _verb(sub, "demo", "the whole product in one minute, in a throwaway repo",
              "  ptxdiff demo                        on a terminal it waits for enter after each step\n"
              "  ptxdiff demo --no-pause > demo.txt")
    p.add_argument("--no-pause", action="store_true", help="do not wait between steps")


def _record(sub: Subparsers) -> None:
    p = _verb(sub, "record", "record the kernel launches a command makes (ptxdiff record -- CMD ...)",
              "  ptxdiff record -- python -m pytest tests/\n"
              "  ptxdiff record --from-tritonparse ./traces\n"
              "then commit .ptxdiff/launches.jsonl: ptxdiff diff, git diff and the gate read it")
    p.add_argument("-o", "--output", metavar="FILE", help="default: .ptxdiff/launches.jsonl at the repository root")
    p.add_argument("--keep", type=int, metavar="N", help="the N most frequent specs per kernel (default 8)")
    p.add_argument("--keep-launches", type=int, metavar="N",
                   help="replayable launches kept per spec: the most frequent and the largest (default 3; "
                        "0 keeps none)")
    p.add_argument("--device", choices=("auto", "gpu", "interpreter"), default="auto",
                   help="auto: the GPU if one is visible, else TRITON_INTERPRET=1")
    p.add_argument("--allow-failure", action="store_true", help="write the launches even if the command fails")
    p.add_argument("--from-tritonparse", metavar="DIR", help="read tritonparse's raw trace logs instead of running")
    add_common_options(p, compile_opts=False)


def _diff_driver(sub: Subparsers) -> None:
    # git runs the installed shim, which calls the driver directly; main() hands `diff-driver ARGS`
    # to it before any parsing, unless the one argument is -h/--help
    p = _verb(sub, "diff-driver", "what git calls (diff.ptxdiff.command): 7, 9 or 1 arguments",
              "  git diff                            (after ptxdiff install: git runs it per changed *.py file)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="what git passes: path old-file old-hex old-mode "
                                                         "new-file new-hex new-mode [new-path header]")


def _pre_push(sub: Subparsers) -> None:
    p = _verb(sub, "pre-push", "what the pre-push hook calls (refs on stdin)",
              "  git push                            (after ptxdiff install: the hook runs it)\n"
              "  echo 'refs/heads/f OID refs/heads/f OID' | ptxdiff pre-push origin URL")
    p.add_argument("remote", nargs="?", default="origin")
    p.add_argument("url", nargs="?", default="")
    p.add_argument("--jobs", "-j", type=int, default=None)


# in the order --help lists them
VERBS = (_diff, _show, _cache, _log, _notes, _ci, _install, _uninstall, _doctor, _toolchain, _corpus, _demo,
         _record, _diff_driver, _pre_push)


class _Version(argparse.Action):
    """`--version`: the versions the report heading shows, looked up only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        from ptxdiff.binaries import versions

        tools = versions()
        print(f"ptxdiff {tools.pop('ptxdiff')} ({', '.join(f'{k} {v}' for k, v in tools.items())})")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="ptxdiff", description="What did this change do to the compiled Triton kernel?",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  ptxdiff diff HEAD~1                 the kernels the last commit changed, compiled\n"
               "  ptxdiff -C ~/src/kernels diff main  in another repository\n"
               "  ptxdiff install                     git diff shows kernel deltas; git push checks them\n"
               "  ptxdiff VERB --help                 one verb's options and examples\n"
               "\nexit codes: 0 fine; 1 --check or the pre-push gate found a blocking verdict; 2 bad usage,\n"
               "config or set-up (a wrong rev, a bad target, malformed config, no triton: one line on\n"
               "stderr); 3 internal error. The diff driver always exits 0.")
    ap.add_argument("--version", action=_Version, nargs=0, help="print ptxdiff's version (and triton's, python's) and exit")
    add_global_options(ap, top=True)
    sub = ap.add_subparsers(dest="command", required=True, metavar="VERB")
    for add in VERBS:
        add(sub)
    return ap
