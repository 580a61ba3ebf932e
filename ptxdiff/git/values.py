"""What ptxdiff's git facade hands the stages above it, without pygit2: the sides of a
comparison, commits, what a push sends, and the one spelling of names for people
(`printable`). `git/repo.py` makes them; anything may read them."""

from __future__ import annotations

from dataclasses import dataclass

from ptxdiff.errors import GitError

WORKTREE = "WORKTREE"
INDEX = "INDEX"  # Side.commit of the index (the staging area): `git diff` compares it with the work tree


@dataclass(frozen=True)
class Side:
    """One side of a comparison: a commit (full hex id), the index (`commit == INDEX`), the work
    tree (`commit is None`) or nothing (`commit == ""`)."""

    label: str
    commit: str | None
    # (path, blob id) pairs laid over the commit's tree: the diff driver sees blobs, not
    # commits, and puts the blob it was given into the nearest commit that holds that file.
    # An empty blob id removes the path (the old name of a renamed file).
    overlay: tuple[tuple[str, str], ...] = ()
    toolchain: str | None = None   # the triton release it compiles with (compile/toolchains.py); None: the installed
    # that release stands in for an older triton (a revision before 3.0): kernels are read as triton
    # 2.x read them (module globals as constants, tl.dot's trans_a/trans_b: instantiate/namespace.py)
    triton2: bool = False

    @property
    def compiled_as(self) -> tuple[str | None, bool]:
        """What a compile of this side depends on besides the source: its triton, and whether it reads
        kernels as triton 2.x did."""
        return self.toolchain, self.triton2

    @property
    def tag(self) -> str:
        """Names this exact content (commit plus overlay), e.g. for source file names."""
        return self.short + "".join(f"+{blob[:7]}" if blob else f"-{path}" for path, blob in self.overlay)

    @property
    def short(self) -> str:
        if self.commit == "":
            return "nothing"
        return self.commit[:10] if self.commit else "work tree"


@dataclass(frozen=True)
class Pushed:
    """What a push sends: the commits the remote lacks (oldest first) and the commits the remote
    has that they build on directly (the newest ones only; "" when the history starts here)."""

    commits: tuple[CommitInfo, ...]
    bases: tuple[str, ...]


@dataclass(frozen=True)
class SubmoduleChange:
    path: str
    old: str | None      # the commit recorded on each side; None where there is no submodule
    new: str | None


@dataclass(frozen=True)
class CommitInfo:
    id: str
    short: str
    author: str
    time: int
    subject: str
    message: str
    parents: tuple[str, ...]


class MissingObject(GitError):
    """An object a partial clone lacks and could not fetch: the message says which and how to get it."""


def printable(path: str) -> str:
    """A path (or kernel id) for people and commit messages: valid UTF-8, with each byte that is
    not UTF-8 written as `\\xNN` (the spelling an approval trailer uses for such a name)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def is_zero(oid: str) -> bool:
    return bool(oid) and set(oid) == {"0"}


def trailers(message: str, key: str) -> list[str]:
    """Values of `Key: value` trailer lines in the last paragraph of a commit message."""
    paragraphs = [p for p in message.strip().split("\n\n") if p.strip()]
    if len(paragraphs) < 2:
        return []
    values = []
    for line in paragraphs[-1].splitlines():
        k, sep, v = line.partition(":")
        if sep and k.strip().lower() == key.lower():
            values += [x.strip() for x in v.split(",") if x.strip()]
    return values
