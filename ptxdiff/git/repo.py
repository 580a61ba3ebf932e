"""The one place that talks to git (through pygit2).

Everything above this module sees revisions as `Side`s and their files as `Snapshot`s: read-only
views of a commit's tree or of the work tree, read straight from the object database, so nothing
is checked out and the user's index and work tree are never touched.

Paths are `str`s holding git's bytes as Python holds file names (`os.fsdecode`: a byte that is
not UTF-8 becomes a lone surrogate, U+DC80..U+DCFF), which is also what pygit2 gives; so any name
git allows round-trips to the same bytes on disk. `printable` is the one spelling for people.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import pygit2
from pygit2.enums import (
    DeltaStatus,
    DiffFind,
    DiffOption,
    FileMode,
    FileStatus,
    ObjectType,
    SortMode,
)

from ptxdiff.errors import GitError
from ptxdiff.fastio import NotRegular, read_inside
from ptxdiff.git import clones, environ
from ptxdiff.git.values import (
    INDEX,
    CommitInfo,
    MissingObject,
    Pushed,
    Side,
    SubmoduleChange,
    printable,
)


class Snapshot:
    """Files of one side, read lazily. `paths` lists every file; `read` returns its bytes."""

    def __init__(self, repo: Repo, side: Side):
        self.repo = repo
        self.side = side
        self._ids: dict[str, str] = {}
        self._cache: dict[str, bytes] = {}
        if side.commit is None:
            self._ids = repo.worktree_files()
        elif side.commit == INDEX:
            self._ids = repo.index_files()
        elif side.commit:  # "" is the empty side: the old side of a file that is new
            tree = repo.tree(side.commit)
            self._walk(tree, "")
        self._overlay = dict(side.overlay)
        for path, blob in side.overlay:  # an empty blob id removes the path
            if blob:
                self._ids[path] = blob
            else:
                self._ids.pop(path, None)
        if side.commit and side.commit != INDEX and repo.promisors:
            # a partial clone: the Python files are what gets read (discovery, the compile
            # workers' imports), so the missing ones come in one fetch, not one at a time
            repo.fetch_missing(oid for path, oid in self._ids.items() if path.endswith(".py"))

    def _walk(self, tree: pygit2.Tree, prefix: str) -> None:
        for entry in tree:
            path = prefix + _entry_name(entry)
            if entry.type == ObjectType.TREE:
                self._walk(self.repo.raw[entry.id].peel(pygit2.Tree), path + "/")
            elif entry.type == ObjectType.BLOB and entry.filemode != FileMode.LINK:
                # a symlink is link text to git, never a module: it is not a file of the snapshot
                self._ids[path] = str(entry.id)

    @property
    def paths(self) -> frozenset[str]:
        return frozenset(self._ids)

    def __contains__(self, path: str) -> bool:
        return path in self._ids

    def content_id(self, path: str) -> str:
        """A content hash: the blob id for a commit, the hash of the file for the work tree."""
        oid = self._ids[path]
        if oid:
            return oid
        oid = content_hash(self.read(path))
        self._ids[path] = oid
        return oid

    def read(self, path: str) -> bytes:
        if path not in self._cache:
            if self.side.commit is None and path not in self._overlay:
                self._cache[path] = self.repo.read_worktree_file(path)
            else:
                self._cache[path] = self.repo.blob(self._ids[path], f"{printable(path)} at {self.side.short}")
        return self._cache[path]


class Repo:
    def __init__(self, path: str | os.PathLike[str] = ".", fetches: bool = True):
        # `fetches`: a partial clone's missing objects may be fetched (not in a compile worker:
        # the parent fetched what its revision needs before the worker started)
        self.fetches = fetches
        found = pygit2.discover_repository(str(path))
        if found is None:
            raise GitError(f"not a git repository (or any parent): {os.path.abspath(path)}")
        try:
            self.raw = pygit2.Repository(found)
        except pygit2.GitError as e:  # e.g. a sha256 repository, which libgit2 cannot read yet
            raise GitError(f"cannot open the repository {found}: {e}") from None

    @property
    def git_dir(self) -> str:
        return self.raw.path.rstrip("/")

    @property
    def common_dir(self) -> str:
        """Where git keeps what all work trees share (config, hooks, info/): the git dir itself,
        except in a linked work tree (`git worktree add`), whose git dir names it in `commondir`."""
        try:
            with open(os.path.join(self.git_dir, "commondir"), encoding="utf-8", errors="surrogateescape") as f:
                named = f.read().strip()
        except OSError:
            return self.git_dir
        return os.path.normpath(os.path.join(self.git_dir, named))

    @property
    def workdir(self) -> str:
        if self.raw.workdir is None:
            raise GitError(f"{self.git_dir} is a bare repository; it has no work tree")
        return self.raw.workdir.rstrip("/")

    def resolve(self, rev: str) -> str:
        """Any rev git accepts (sha, branch, tag, HEAD~2, v1^{commit}) -> full commit id."""
        try:
            return str(self.raw.revparse_single(rev).peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            if self.shallow and ("~" in rev or "^" in rev):
                raise GitError(f"{rev!r} is beyond this shallow clone's history: deepen it "
                               "(`git fetch --deepen=N`, or `git fetch --unshallow`)") from None
            raise GitError(f"unknown revision {rev!r}") from None

    @functools.cached_property
    def shallow(self) -> frozenset[str]:
        """The commits where a shallow clone's history stops (their parents are not here)."""
        return clones.shallow_commits(self.common_dir)

    @functools.cached_property
    def promisors(self) -> tuple[str, ...]:
        """The remotes a partial clone (`git clone --filter=...`) fetches its missing objects from."""
        names = [n for n in self.raw.remotes.names() if n and self.config_get(f"remote.{n}.promisor") == "true"]
        named = self.config_get("extensions.partialclone")
        return tuple(dict.fromkeys(([named] if named else []) + names))

    def fetch_missing(self, oids: Iterable[str]) -> str:
        """Fetch the objects of `oids` this partial clone lacks, in one `git fetch` from its
        promisor remote (what git itself does when it needs one). Returns why that failed ("" when
        nothing is missing now)."""
        missing = sorted({o for o in oids if o and not self.has_object(o)})
        if not missing:
            return ""
        if not self.promisors:
            return "the repository is not a partial clone (`git fsck` says more)"
        if not self.fetches:
            return "a compile worker does not fetch"
        remote = self.promisors[0]
        said = clones.fetch(self.git_dir, remote, missing)
        if all(self.has_object(o) for o in missing):
            return ""
        if said.startswith("cannot run git"):
            return said
        return f"`git fetch {remote}` did not bring it" + (f" ({said})" if said else "")

    def fetch_trees(self, commits: Iterable[str]) -> None:
        """In a partial clone made with `--filter=tree:0`, the trees of `commits` (with their
        subtrees, without blobs) in one fetch, for a walk that reads them all (`ptxdiff log`)."""
        if self.promisors:
            self.fetch_missing(str(self.raw[c].peel(pygit2.Commit).tree_id) for c in commits)

    def tree(self, commit: str) -> pygit2.Tree:
        """A commit's tree. A partial clone made with `--filter=tree:0` lacks the trees of what it
        did not check out: a missing one comes, with its subtrees, from the promisor remote (a
        fetch of the commit would not bring it: git sees it has the commit)."""
        c = self.raw[commit].peel(pygit2.Commit)
        if self.promisors and not self.has_object(str(c.tree_id)):
            why = self.fetch_missing([str(c.tree_id)])
            if not self.has_object(str(c.tree_id)):
                raise MissingObject(f"the tree of {commit[:10]} is not in this clone: {why or 'the remote did not send it'}; "
                                    f"get it with `git cat-file -e {c.tree_id}` once the remote is reachable, "
                                    "or clone without --filter")
        return c.tree

    def blob(self, oid: str, what: str) -> bytes:
        """The bytes of a blob; in a partial clone, fetched from the promisor remote when missing."""
        try:
            return self.raw[oid].peel(pygit2.Blob).data
        except KeyError:
            why = self.fetch_missing([oid])
        try:
            return self.raw[oid].peel(pygit2.Blob).data
        except KeyError:
            raise MissingObject(f"object {oid[:10]} ({what}) is not in this clone: {why or 'the remote did not send it'}; "
                                f"get it with `git cat-file -e {oid}` once the remote is reachable, "
                                "or clone without --filter") from None

    def side(self, rev: str | None) -> Side:
        if rev is None:
            return Side("work tree", None)
        return Side(rev, self.resolve(rev))

    def sides(self, revs: list[str]) -> tuple[Side, Side]:
        """`git diff`'s rule: none = HEAD vs work tree; one = REV vs work tree; two or A..B."""
        if len(revs) == 1 and ".." in revs[0]:
            three = "..." in revs[0]
            left, right = revs[0].split("..." if three else "..", 1)
            left, right = left or "HEAD", right or "HEAD"
            if three:
                base = self.raw.merge_base(self.resolve(left), self.resolve(right))
                if base is None:
                    raise GitError(f"{left} and {right} have no common ancestor")
                return Side(f"merge-base({left},{right})", str(base)), self.side(right)
            return self.side(left), self.side(right)
        if not revs:
            return self.side("HEAD"), self.side(None)
        if len(revs) == 1:
            return self.side(revs[0]), self.side(None)
        if len(revs) == 2:
            return self.side(revs[0]), self.side(revs[1])
        raise GitError("at most two revisions")

    def range(self, rev_range: str) -> tuple[str, list[str]]:
        """`A..B` -> (B, [A]): commits reachable from B but not A; a single rev -> (rev, [])."""
        if ".." in rev_range:
            left, _, right = rev_range.partition("..")
            return self.resolve(right or "HEAD"), [self.resolve(left or "HEAD")]
        return self.resolve(rev_range), []

    def attribute(self, path: str, name: str) -> bool | str | None:
        """The value of gitattribute `name` for `path` (as `git check-attr` would say): its text,
        True where set, False where unset, None where unspecified."""
        return self.raw.get_attr(path, name)

    def snapshot(self, side: Side) -> Snapshot:
        return Snapshot(self, side)

    def worktree_files(self) -> dict[str, str]:
        """Tracked files present on disk, plus untracked ones git does not ignore.

        Values are "" (content hashed on demand); the index is read, never written.
        """
        index = pygit2.Index(os.path.join(self.git_dir, "index")) if os.path.exists(
            os.path.join(self.git_dir, "index")) else None
        files: dict[str, str] = {}
        for entry in index or ():
            if self._regular_file(entry.path):
                files[entry.path] = ""
        for path, flags in self.raw.status(untracked_files="all").items():
            if flags & FileStatus.WT_NEW and self._regular_file(path):
                files[path] = ""
        return files

    def gitlinks(self, side: Side) -> dict[str, str]:
        """Submodules of a side: path -> commit. For the work tree, the commit checked out in
        each (what `git diff` compares), or the one the index records where none is."""
        out: dict[str, str] = {}
        if side.commit is None:
            path = os.path.join(self.git_dir, "index")
            for entry in pygit2.Index(path) if os.path.exists(path) else ():
                if entry.mode == FileMode.COMMIT:
                    out[entry.path] = _checked_out(os.path.join(self.workdir, entry.path)) or str(entry.id)
        elif side.commit:
            stack = [(self.tree(side.commit), "")]
            while stack:
                tree, prefix = stack.pop()
                for entry in tree:
                    if entry.type == ObjectType.TREE:
                        stack.append((self.raw[entry.id].peel(pygit2.Tree), prefix + _entry_name(entry) + "/"))
                    elif entry.filemode == FileMode.COMMIT:
                        out[prefix + _entry_name(entry)] = str(entry.id)
        return out

    def submodule_changes(self, old: Side | None, new: Side) -> list[SubmoduleChange]:
        """Submodules whose recorded commit differs between the two sides (added, moved, removed)."""
        before = self.gitlinks(old) if old is not None else {}
        after = self.gitlinks(new)
        return [SubmoduleChange(p, before.get(p), after.get(p)) for p in sorted(set(before) | set(after))
                if before.get(p) != after.get(p)]

    def _regular_file(self, path: str) -> bool:
        """A plain file inside the work tree, reached through no symlink (git never follows one)."""
        full = os.path.join(self.workdir, path)
        try:
            if not stat.S_ISREG(os.lstat(full).st_mode):
                return False
        except OSError:
            return False
        return os.path.realpath(full) == os.path.join(os.path.realpath(self.workdir), path)

    def read_worktree_file(self, path: str) -> bytes:
        """The bytes of a work-tree file; never through a symlink, never a FIFO or device, never
        outside the work tree, within a size bound (fastio.read_inside)."""
        try:
            return read_inside(self.workdir, path)
        except OSError as e:
            raise GitError(str(e) if isinstance(e, NotRegular) else f"{path}: {e.strerror or e}") from None

    def renames(self, old: Side, new: Side) -> dict[str, str]:
        """new path -> old path for files git sees as renamed between the two sides."""
        if not old.commit or new.commit == "":
            return {}
        if INDEX in (old.commit, new.commit):
            return self._index_renames(old, new)
        old_tree = self.tree(old.commit)
        if new.commit is None:
            diff = old_tree.diff_to_workdir(DiffOption.INCLUDE_UNTRACKED | DiffOption.RECURSE_UNTRACKED_DIRS)
            gone = [d.old_file for d in diff.deltas if d.status == DeltaStatus.DELETED]
            self.fetch_missing(str(f.id) for f in gone if f.path.endswith(".py"))
            # libgit2 compares every deleted file with the new ones; in a partial clone, one whose
            # blob is not here (never a Python file: fetched above) is not fetched to be compared:
            # renames are then found by content id alone
            exact = any(not self.has_object(str(f.id)) for f in gone)
            diff.find_similar(DiffFind.FIND_RENAMES | DiffFind.FIND_FOR_UNTRACKED
                              | (DiffFind.FIND_EXACT_MATCH_ONLY if exact else 0))
            return {d.new_file.path: d.old_file.path for d in diff.deltas if d.status == DeltaStatus.RENAMED}
        return self._python_renames(old_tree, self.tree(new.commit))

    def _python_renames(self, old_tree: pygit2.Tree, new_tree: pygit2.Tree) -> dict[str, str]:
        """Renames between two trees among Python files only: no other file's blob is read (in a
        partial clone, a binary would be fetched just to be compared). The new side is the old tree
        with only its Python files changed, as an index in memory."""
        plain = self.raw.diff(old_tree, new_tree)  # type: ignore[call-overload]  # stub lacks (Tree, Tree)
        changed = [d for d in plain.deltas if d.status in (DeltaStatus.ADDED, DeltaStatus.DELETED)]
        if not any(d.status == DeltaStatus.DELETED and d.old_file.path.endswith(".py") for d in changed) or not any(
                d.status == DeltaStatus.ADDED and d.new_file.path.endswith(".py") for d in changed):
            return {}
        index = pygit2.Index()
        index._repo = self.raw  # type: ignore[assignment]  # diffs read blobs through it
        index.read_tree(old_tree)
        for d in changed:
            if d.status == DeltaStatus.DELETED and d.old_file.path.endswith(".py"):
                index.remove(d.old_file.path)
            elif d.status == DeltaStatus.ADDED and d.new_file.path.endswith(".py"):
                index.add(pygit2.IndexEntry(d.new_file.path, d.new_file.id, d.new_file.mode))
        self.fetch_missing(str(f.id) for d in changed for f in (d.old_file, d.new_file) if f.path.endswith(".py"))
        diff = index.diff_to_tree(old_tree)  # old tree -> index
        diff.find_similar(DiffFind.FIND_RENAMES)
        return {d.new_file.path: d.old_file.path for d in diff.deltas if d.status == DeltaStatus.RENAMED}

    def tree_id(self, side: Side) -> str | None:
        """The tree a commit side shows (None for the work tree, the index or an overlay)."""
        if not side.commit or side.commit == INDEX or side.overlay:
            return None
        return str(self.raw[side.commit].peel(pygit2.Commit).tree_id)

    def _index(self) -> pygit2.Index:
        """The index git uses here (GIT_INDEX_FILE when set), read, never written."""
        path = os.environ.get("GIT_INDEX_FILE") or os.path.join(self.git_dir, "index")
        index = pygit2.Index(path) if os.path.exists(path) else pygit2.Index()
        # diffs against trees and the work tree need the repository (pygit2 types `_repo` as None)
        index._repo = self.raw  # type: ignore[assignment]
        return index

    def index_files(self) -> dict[str, str]:
        """Regular files staged in the index (stage 0; no symlinks, submodules or conflicts)."""
        index = self._index()
        conflicted = {e.path for c in (index.conflicts or ()) for e in c if e is not None}
        return {e.path: str(e.id) for e in index
                if e.path not in conflicted and e.mode in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE)}

    def _index_renames(self, old: Side, new: Side) -> dict[str, str]:
        """Renames between a commit and the index (either way), or the index and the work tree."""
        index = self._index()
        if old.commit == INDEX and new.commit is None:
            diff = index.diff_to_workdir(DiffOption.INCLUDE_UNTRACKED | DiffOption.RECURSE_UNTRACKED_DIRS)
            diff.find_similar(DiffFind.FIND_RENAMES | DiffFind.FIND_FOR_UNTRACKED)
            backwards = False
        else:
            commit = new.commit if old.commit == INDEX else old.commit
            if not commit or commit == INDEX:
                return {}
            diff = index.diff_to_tree(self.tree(commit))  # commit -> index
            diff.find_similar(DiffFind.FIND_RENAMES)
            backwards = old.commit == INDEX
        pairs = {d.new_file.path: d.old_file.path for d in diff.deltas if d.status == DeltaStatus.RENAMED}
        return {v: k for k, v in pairs.items()} if backwards else pairs

    def commit_info(self, commit: str) -> CommitInfo:
        c = self.raw[commit].peel(pygit2.Commit)
        message = c.message
        return CommitInfo(id=str(c.id), short=str(c.id)[:10], author=c.author.name, time=c.commit_time,
                          subject=message.splitlines()[0] if message else "", message=message,
                          parents=tuple(str(p) for p in c.parent_ids))

    def walk(self, head: str, hide: Sequence[str] = (), first_parent: bool = False) -> Iterator[CommitInfo]:
        """Commits reachable from head and not from `hide`, oldest first."""
        walker = self.raw.walk(head, SortMode.TOPOLOGICAL | SortMode.REVERSE)
        if first_parent:
            walker.simplify_first_parent()
        for h in hide:
            walker.hide(h)
        for c in walker:
            yield self.commit_info(str(c.id))

    # -- config (git config of this repo, all levels) ------------------------------------------
    def config_get(self, key: str) -> str | None:
        if os.environ.get("GIT_CONFIG_PARAMETERS") or os.environ.get("GIT_CONFIG_COUNT"):
            # `git -c key=value ...` passes settings in the environment, which libgit2 ignores:
            # ask git itself, which sees them (and every config file) the way the user meant.
            import subprocess
            try:
                proc = subprocess.run(["git", f"--git-dir={self.git_dir}", "config", "--get", key],
                                      capture_output=True, text=True)
                if proc.returncode in (0, 1):
                    return proc.stdout.rstrip("\n") if proc.returncode == 0 else None
            except OSError:
                pass
        try:
            return self.raw.config[key]
        except (KeyError, pygit2.GitError):
            return None

    def head_commit(self) -> str | None:
        try:
            return str(self.raw.head.target)
        except pygit2.GitError:
            return None

    def has_object(self, oid: str) -> bool:
        try:
            return oid in self.raw
        except (ValueError, pygit2.GitError):
            return False

    def remote_tips(self, remote: str) -> list[str]:
        """Commits we know `remote` has: its remote-tracking refs. `remote` may be a name or, for
        `git push URL`, a URL: then the tracking refs of every remote configured with that URL;
        failing both, every remote-tracking ref (git-lfs's `--not --remotes` guess)."""
        names = [remote] if self.config_get(f"remote.{remote}.url") is not None else []
        if not names:
            names = [name for name in self.raw.remotes.names() if name is not None
                     and remote in (self.config_get(f"remote.{name}.url"), self.config_get(f"remote.{name}.pushurl"))]
        prefixes = tuple(f"refs/remotes/{n}/" for n in names) or ("refs/remotes/",)
        tips = [self._commit_of(r) for r in self.raw.references if r.startswith(prefixes)]
        if not any(tips) and names:
            tips = [self._commit_of(r) for r in self.raw.references if r.startswith("refs/remotes/")]
        return [t for t in tips if t]

    def local_tips(self) -> list[tuple[str, str]]:
        """(ref, commit) for every local branch and tag that names a commit, and a detached HEAD."""
        out = [(r, c) for r in self.raw.references if r.startswith(("refs/heads/", "refs/tags/"))
               for c in [self._commit_of(r)] if c]
        if self.raw.head_is_detached:
            out.append(("HEAD", str(self.raw.head.target)))
        return out

    def _commit_of(self, ref: str) -> str | None:
        try:
            return str(self.raw.references[ref].peel(pygit2.Commit).id)
        except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            return None

    def pushed(self, tip: str, have: list[str]) -> Pushed:
        """Commits reachable from `tip` and from none of `have` (`rev-list tip --not have`), and
        the newest commits of `have`'s history that they build on: a branch that merged main is
        measured from the main it merged, so changes the remote already has are not its own."""
        commits = tuple(self.walk(tip, [h for h in have if self.has_object(h)]))
        ids = {c.id for c in commits}
        edge = {p for c in commits for p in c.parents if p not in ids}
        bases = [b for b in edge if not any(self.raw.descendant_of(o, b) for o in edge if o != b)]
        if commits and not bases:
            bases = [""]           # every commit is new, down to a root
        return Pushed(commits, tuple(sorted(bases)))


    def touches(self, commit: str, path: str) -> bool:
        """Whether `commit` changed `path` against its first parent (or added it, for a root)."""
        c = self.raw[commit].peel(pygit2.Commit)
        def blob(tree: pygit2.Tree) -> pygit2.Oid | None:
            try:
                return tree[path].id
            except KeyError:
                return None
        mine = blob(self.tree(commit))
        if not c.parents:
            return mine is not None
        return mine != blob(self.tree(str(c.parent_ids[0])))


    def changed_paths(self, commit: str) -> set[str]:
        """Paths a commit changed against its first parent (both names of a rename)."""
        c = self.raw[commit].peel(pygit2.Commit)
        if not c.parents:
            diff = self.tree(commit).diff_to_tree(swap=True)
        else:
            diff = self.raw.diff(self.tree(str(c.parent_ids[0])), self.tree(commit))  # type: ignore[call-overload]  # stub lacks (Tree, Tree)
        # a rename is a deletion and an addition here: both names count, no blob is read
        return {p for d in diff.deltas for p in (d.old_file.path, d.new_file.path)}


    def write_note(self, commit: str, text: str, ref: str) -> None:
        sig = self.raw.default_signature if "user.name" in self.raw.config else pygit2.Signature("ptxdiff", "ptxdiff@localhost")
        self.raw.create_note(text, sig, sig, commit, ref, True)


def _entry_name(entry: pygit2.Object) -> str:
    """The name of a tree entry (pygit2 types `name` optional: an object looked up by id has none)."""
    name = entry.name
    assert name is not None, f"tree entry {entry.id} has no name"
    return name


def _checked_out(path: str) -> str | None:
    """The HEAD commit of the submodule checked out at `path`, if there is one."""
    try:
        sub = pygit2.Repository(path)
        return str(sub.head.target) if os.path.realpath(sub.workdir or "") == os.path.realpath(path) else None
    except (pygit2.GitError, KeyError, ValueError):
        return None


def bound_mapped_memory(window: int = 64 << 20, mapped: int = 512 << 20) -> None:
    """Keep libgit2's pack windows small (its defaults: 1 GiB windows, 8 GiB mapped in all): under a
    worker's address-space rlimit, a large pack read with the defaults is `Out of memory`."""
    pygit2.settings.mwindow_size = window
    pygit2.settings.mwindow_mapped_limit = mapped


def content_hash(data: bytes) -> str:
    """The blob id git gives these bytes."""
    return str(pygit2.hash(data))


def global_config_get(key: str) -> str | None:
    try:
        return pygit2.Config.get_global_config()[key]
    except (KeyError, OSError, pygit2.GitError):
        return None


def config_file_set(path: str, values: Mapping[str, str | None]) -> dict[str, str | None]:
    """Set (or, for None, remove) keys in one git config file; returns the values before."""
    cfg = pygit2.Config(path)
    before: dict[str, str | None] = {}
    for key, value in values.items():
        try:
            before[key] = cfg[key]
        except KeyError:
            before[key] = None
        if value is not None:
            cfg[key] = value
        elif before[key] is not None:
            del cfg[key]
    return before


def commit_tree(path: str, files: dict[str, bytes], message: str, parent: str | None,
                branch: str = "refs/heads/main") -> str:
    """Commit exactly `files` (path -> bytes) on `branch` of the repo at `path` (created if
    missing), without a work tree checkout. For throwaway repos (corpus)."""
    if pygit2.discover_repository(path) is None or not os.path.exists(os.path.join(path, ".git")):
        pygit2.init_repository(path, initial_head="main")
    repo = pygit2.Repository(path)
    index = pygit2.Index()
    for name, data in sorted(files.items()):
        index.add(pygit2.IndexEntry(name, repo.create_blob(data), pygit2.enums.FileMode.BLOB))
    tree = index.write_tree(repo)
    # 2026-11-06, after the newest triton release: unpinned, it compiles with that one (compile/toolchains.py)
    sig = pygit2.Signature("ptxdiff", "ptxdiff@localhost", 1_794_000_000, 0)
    oid = repo.create_commit(branch, sig, sig, message, tree, [parent] if parent else [])
    return str(oid)


def user_config_reader() -> Callable[[str], str | None]:
    """A key's value in the user's own git config: `git -c`, global, XDG or system level, never the
    repository's local config (where a tool the repository ran could have written it); the files
    are read once, for all the keys asked."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    files = [os.environ.get("GIT_CONFIG_GLOBAL") or os.path.expanduser("~/.gitconfig"), os.path.join(xdg, "git", "config")]
    if not os.environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    merged = pygit2.Config()
    for level, path in zip((4, 3, 2), files):  # global, XDG, system: the most specific wins, as in git
        with contextlib.suppress(OSError, pygit2.GitError):
            if os.path.isfile(path):
                merged.add_file(path, level)

    def get(key: str) -> str | None:
        given, value = environ.config_given(key)
        if given:
            return value
        with contextlib.suppress(KeyError, pygit2.GitError):
            return merged[key]
        return None
    return get
