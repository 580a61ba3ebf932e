"""Which git command is running the diff driver, read from the process tree.

git runs an external diff driver once per file and passes it blob ids only. The git process
that does so is an ancestor of the driver (its parent, or its grandparent when git went through
`sh -c`), and its argv says what the user asked for: `git diff --cached`, `git log -p --ext-diff
A..B -- ops/`, an alias already expanded (git runs an alias as a child git process with the
expanded argv). From it the driver re-runs the same command with `--no-ext-diff` to get git's own
patch, and works out which two revisions each file compares.

Pure functions over bytes, plus a thin reader of /proc. Only cheap imports: this runs in the
first driver call of every `git diff`, where Python's start-up is most of the cost (so plain
classes: importing dataclasses alone costs more than the whole 10 ms per-file budget).
"""

from __future__ import annotations

import os

# git's global options (git.c) that take a separate value; their effect reaches child processes
# through the environment (GIT_DIR, GIT_CONFIG_PARAMETERS, ...), so a re-run drops them.
_GLOBAL_WITH_VALUE = {b"-C", b"-c", b"--git-dir", b"--work-tree", b"--namespace", b"--super-prefix",
                      b"--config-env", b"--shallow-file", b"--attr-source"}

# Commands that only read, so running them again is harmless; the others never use external
# diff drivers or must not be repeated.
READ_ONLY = frozenset({"diff", "diff-files", "diff-index", "diff-tree", "log", "show", "whatchanged"})
LOG_LIKE = frozenset({"log", "show", "whatchanged"})

# Options of `git diff` (diff.c and revision.c) whose value may come as the next argument.
_WITH_VALUE = frozenset(x.encode() for x in (
    "-O", "-S", "-G", "-I", "-l", "-n", "--output", "--find-object", "--src-prefix", "--dst-prefix",
    "--line-prefix", "--word-diff-regex", "--color-moved-ws", "--anchored", "--inter-hunk-context",
    "--output-indicator-new", "--output-indicator-old", "--output-indicator-context",
    "--ignore-matching-lines", "--skip-to", "--rotate-to", "--ws-error-highlight", "--diff-algorithm",
    "--diff-filter", "--stat-width", "--stat-name-width", "--stat-graph-width", "--stat-count",
    "--default", "--max-count", "--skip", "--since", "--after", "--until", "--before", "--author",
    "--committer", "--grep", "--diff-merges", "--exclude", "-L", "--date", "--encoding"))

# Options after which git prints nothing for a file whose changes they all ignore, although the
# file is still in the diff (and the driver is still called for it).
IGNORING = (b"-w", b"-b", b"--ignore-all-space", b"--ignore-space-change", b"--ignore-space-at-eol",
            b"--ignore-cr-at-eol", b"--ignore-blank-lines", b"-I", b"--ignore-matching-lines")


class _Record:
    """A small read-only record (what a frozen dataclass would be, without its import cost)."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: object) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


class GitProcess(_Record):
    """pid; start (clock ticks since boot: with the pid, names the process for good); exe (the
    very git binary that runs us); argv."""

    __slots__ = ("pid", "start", "exe", "argv")
    pid: int
    start: str
    exe: str
    argv: tuple[bytes, ...]


class Command(_Record):
    """name ("diff", "log", ...; "" when none was found) and args (what follows it)."""

    __slots__ = ("name", "args")
    name: str
    args: tuple[bytes, ...]


class DiffArgs(_Record):
    """What `git diff` (and diff-index/-files/-tree) was asked to compare: revs (as typed: A,
    A..B, A...B, ^A, A^!), cached, merge_base, reverse, no_index, output (--output=FILE),
    relative (--relative[=DIR]: b"" for the cwd, None when not given), ignoring (an option that
    can make git print nothing for a changed file)."""

    __slots__ = ("revs", "cached", "merge_base", "reverse", "no_index", "output", "relative", "ignoring")
    revs: tuple[bytes, ...]
    cached: bool
    merge_base: bool
    reverse: bool
    no_index: bool
    output: bytes | None
    relative: bytes | None
    ignoring: bool


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(comm, ppid, start time) of a process, from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read()
    except OSError:
        return None
    left, right = line.find(b"("), line.rfind(b")")
    if left < 0 or right < 0:
        return None
    fields = line[right + 2:].split()
    if len(fields) < 20:
        return None
    return line[left + 1:right].decode("utf-8", "replace"), int(fields[1]), fields[19].decode()


def start_time(pid: int) -> str | None:
    st = _stat(pid)
    return st[2] if st else None


def find_git(pid: int | None = None, depth: int = 4) -> GitProcess | None:
    """The nearest git ancestor of this process (git may run the driver through `sh -c`)."""
    pid = os.getppid() if pid is None else pid
    for _ in range(depth):
        st = _stat(pid)
        if st is None:
            return None
        comm, ppid, start = st
        if comm == "git" or comm.startswith("git-"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = tuple(f.read().split(b"\0")[:-1])
                exe = os.readlink(f"/proc/{pid}/exe")
            except OSError:
                return None
            if exe.endswith(" (deleted)"):
                return None
            return GitProcess(pid, start, exe, argv)
        pid = ppid
    return None


def command(argv: tuple[bytes, ...] | list[bytes]) -> Command:
    """Skip git's global options; what is left is the command and its arguments."""
    base = os.path.basename(argv[0]) if argv else b""
    if base.startswith(b"git-"):  # a dashed builtin (git-diff)
        return Command(base[4:].decode("utf-8", "replace"), tuple(argv[1:]))
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in _GLOBAL_WITH_VALUE:
            i += 2
        elif a.startswith(b"-"):
            i += 1
        else:
            return Command(a.decode("utf-8", "replace"), tuple(argv[i + 1:]))
    return Command("", ())


def rerun_argv(exe: str, cmd: Command, extra: list[bytes], output: bytes | None = None) -> list[bytes]:
    """The same command, no pager, with `extra` options placed last before `--` (so they win
    over the user's), and --output replaced by `output` (or dropped)."""
    args: list[bytes] = []
    rest: list[bytes] = []
    i = 0
    while i < len(cmd.args):
        a = cmd.args[i]
        if a == b"--":
            rest = list(cmd.args[i:])
            break
        if a == b"--output":
            i += 2
            continue
        if not a.startswith(b"--output="):
            args.append(a)
            if a in _WITH_VALUE and i + 1 < len(cmd.args):  # its value is not an option, nor "--"
                args.append(cmd.args[i + 1])
                i += 1
        i += 1
    if output is not None:
        extra = [*extra, b"--output=" + output]
    return [os.fsencode(exe), b"--no-pager", cmd.name.encode(), *args, *extra, *rest]


def diff_args(args: tuple[bytes, ...]) -> tuple[DiffArgs, list[bytes]]:
    """Options that choose the sides, and the non-option arguments before `--` (revs, or paths
    given without `--`: telling them apart takes the repository)."""
    revs: list[bytes] = []
    cached = merge_base = reverse = no_index = ignoring = False
    output: bytes | None = None
    relative: bytes | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == b"--":
            break
        if a in (b"--cached", b"--staged"):
            cached = True
        elif a == b"--merge-base":
            merge_base = True
        elif a == b"-R":
            reverse = True
        elif a == b"--no-index":
            no_index = True
        elif a == b"--output" and i + 1 < len(args):
            output = args[i + 1]
        elif a.startswith(b"--output="):
            output = a[len(b"--output="):]
        elif a == b"--relative":
            relative = b""
        elif a.startswith(b"--relative="):
            relative = a[len(b"--relative="):]
        elif a == b"--no-relative":
            relative = None
        if a in IGNORING or any(a.startswith(o + b"=") or (o == b"-I" and a.startswith(o)) for o in IGNORING):
            ignoring = True
        if a in _WITH_VALUE:
            i += 2
            continue
        if a.startswith(b"-") and a != b"-":
            i += 1
            continue
        revs.append(a)
        i += 1
    return DiffArgs(tuple(revs), cached, merge_base, reverse, no_index, output, relative, ignoring), revs


def rev_terms(token: bytes) -> list[tuple[str, bytes]] | None:
    """A rev argument as ("pos"|"neg"|"sym", rev) terms, the way git diff reads it:
    A..B -> ^A B; A...B -> symmetric; ^A; A^! -> A ^A^. Empty ends mean HEAD."""
    if b"..." in token:
        left, _, right = token.partition(b"...")
        return [("sym", left or b"HEAD"), ("pos", right or b"HEAD")]
    if b".." in token:
        left, _, right = token.partition(b"..")
        return [("neg", left or b"HEAD"), ("pos", right or b"HEAD")]
    if token.endswith(b"^!"):
        return [("pos", token[:-2]), ("neg", token[:-2] + b"^")]
    if token.endswith(b"^@") or token.startswith(b"^-"):
        return None
    if token.startswith(b"^"):
        return [("neg", token[1:])]
    return [("pos", token)]
