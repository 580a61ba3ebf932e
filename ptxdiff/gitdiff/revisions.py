"""Which two revisions each piece of git's output compares, and whether git agrees.

For `git diff` and its plumbing cousins the command's options and revision arguments say it
(the index and the work tree, --cached, REV, A B, A..B, A...B, --merge-base, -R); for log/show
each commit's marker in the re-run says the commit and the parent. A side is trusted only where
it holds, at each piece's path, the blob id git passed: a side that cannot be told is said, never
guessed. Also the key that names a comparison's inputs (both sides' content, the files shown).

Asks git through fastio (the driver's first call runs this); sides are spec strings: "C:<id>",
"INDEX", "WORKTREE", "NOTHING".
"""

from __future__ import annotations

import os
import sys

from ptxdiff import user_settings
from ptxdiff.fastio import blob_id, read, read_inside, sha256, spawn, tmp_path, wait, write
from ptxdiff.gitdiff import invocation as inv
from ptxdiff.gitdiff.patches import MISSING, UNKNOWN, Commit, Piece, handled


class Facts:
    """What the kernel lines need to know from git, asked in parallel with the re-runs."""

    def __init__(self, spool: str, gp: inv.GitProcess, cmd: inv.Command, dargs: inv.DiffArgs, loose: list[bytes]):
        self.spool, self.gp, self.cmd, self.dargs = spool, gp, cmd, dargs
        self.gitdir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(spool))))
        self.top = os.getcwd()
        self.files = {n: os.path.join(spool, n) for n in ("config", "revs", "revs.in", "files", "tree")}
        keys = r"^(ptxdiff\.enabled|ptxdiff\.triton|diff\.relative)$"
        self.pids = {"config": spawn(["git", "config", "-z", "--get-regexp", keys], out=self.files["config"])}
        self.revs: list[bytes] = []
        self.tokens: list[tuple[bytes, list[tuple[str, bytes]]]] = []
        self._config: dict[bytes, bytes] | None = None
        # the index's entries and the work tree's files (tracked or not, not ignored), in one run
        self.lazy = {"files": ["git", "ls-files", "-s", "-z", "--cached", "--others", "--exclude-standard"]}
        if cmd.name not in inv.LOG_LIKE and not dargs.no_index:
            if len(loose) < 2 and not any(b".." in a for a in loose):
                # the index or the work tree is likely a side: list them now, while git re-runs
                self.pids["files"] = spawn(self.lazy.pop("files"), out=self.files["files"])
            if not loose and not dargs.cached and not dargs.merge_base:
                return  # the index and the work tree: no revision to resolve
            names = [b"HEAD"]
            for tok in loose:
                terms = inv.rev_terms(tok)
                if terms is not None:
                    self.tokens.append((tok, terms))
                    names += [rev for _, rev in terms]
            self.revs = list(dict.fromkeys(names))
            write(self.files["revs.in"], b"".join(r + b"^{commit}\n" for r in self.revs))
            self.pids["revs"] = spawn(["git", "cat-file", "--batch-check"], inp=self.files["revs.in"],
                                       out=self.files["revs"])

    def _listing(self) -> None:
        """Split `git ls-files -s --others`: index entries ("mode id stage<TAB>path"), then the
        untracked files (bare paths)."""
        self._index: dict[bytes, str] = {}
        self._staged: list[bytes] = []
        self._files: set[bytes] = set()
        for entry in self._done("files").split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            word = meta.split(b" ")
            if tab and len(word) == 3 and len(word[1]) in (40, 64) and word[0].isdigit():
                self._staged.append(entry)
                self._files.add(path)
                if word[2] == b"0":
                    self._index[path] = word[1].decode()
            elif entry:
                self._files.add(entry)

    def index(self) -> dict[bytes, str]:
        """path -> blob id of the index's stage-0 entries."""
        if not hasattr(self, "_index"):
            self._listing()
        return self._index

    def index_entries(self) -> list[bytes]:
        self.index()
        return self._staged

    def work_files(self) -> set[bytes]:
        self.index()
        return self._files

    def _done(self, name: str) -> bytes:
        pid = self.pids.pop(name, None)
        if pid is None and name in self.lazy:
            pid = spawn(self.lazy.pop(name), out=self.files[name])
        if pid is not None:
            wait(pid)
        return read(self.files[name])

    def config(self) -> dict[bytes, bytes]:
        if self._config is None:
            self._config = {}
            for item in self._done("config").split(b"\0"):
                key, given, value = item.partition(b"\n")
                if key:   # a key without `= value` is true, as git reads it
                    self._config[key.lower()] = value if given else b"true"
        return self._config

    def enabled(self) -> bool:
        value = self.config().get(b"ptxdiff.enabled")
        return user_settings.enabled(None if value is None else value.decode("utf-8", "replace"))

    def resolved(self) -> dict[bytes, str]:
        out = {}
        for rev, line in zip(self.revs, self._done("revs").splitlines()):
            word = line.split()
            if len(word) >= 2 and word[1] == b"commit":
                out[rev] = word[0].decode()
        return out

    def relative_prefix(self) -> bytes:
        """What git strips from the names it shows (--relative, diff.relative)."""
        rel = self.dargs.relative
        relative = self.config().get(b"diff.relative")
        if rel is None and relative is not None and user_settings.boolean(relative.decode("utf-8", "replace"),
                                                                     "git config diff.relative"):
            rel = b""
        if rel is None:
            return b""
        if rel == b"":
            return os.fsencode(os.environ.get("GIT_PREFIX", ""))
        rel = rel.strip(b"/")
        return rel + b"/" if rel else b""


def diff_sides(facts: Facts) -> tuple[str, str] | str:
    """(old, new) of a `git diff`-like command as side specs ("C:<id>", "INDEX", "WORKTREE",
    "NOTHING"), or the reason they cannot be told."""
    d, name = facts.dargs, facts.cmd.name
    if d.no_index:
        return "--no-index compares files, not revisions"
    resolved = facts.resolved()
    head = resolved.get(b"HEAD")
    pos: list[str] = []
    neg: list[str] = []
    sym: list[str] = []
    for tok, terms in facts.tokens:
        if all(rev in resolved for _, rev in terms):
            for kind, rev in terms:
                (pos if kind == "pos" else neg if kind == "neg" else sym).append("C:" + resolved[rev])
        elif any(rev in resolved for _, rev in terms):
            return f"cannot read {tok.decode('utf-8', 'replace')!r} as a revision"
    work = "INDEX" if d.cached or name == "diff-index" and d.cached else "WORKTREE"
    if name == "diff-files":
        old, new = "INDEX", "WORKTREE"
    elif sym:
        if len(sym) != 1 or len(pos) != 1 or neg:
            return "more than one symmetric range"
        base = merge_base(sym[0][2:], pos[0][2:])
        if base is None:
            return "the two revisions have no common ancestor"
        old, new = "C:" + base, pos[0]
    elif d.merge_base:
        if len(pos) == 1 and not neg and head:
            base, new = merge_base(pos[0][2:], head), work
        elif len(pos) == 2 and not neg:
            base, new = merge_base(pos[0][2:], pos[1][2:]), pos[1]
        else:
            return "--merge-base with these revisions"
        if not base:
            return "the revisions have no common ancestor"
        old = "C:" + base
    elif not pos and not neg:
        if name == "diff-tree":
            return "diff-tree without revisions"
        old, new = (("C:" + head if head else "NOTHING"), "INDEX") if d.cached else ("INDEX", "WORKTREE")
    elif len(pos) == 1 and not neg:
        if name == "diff-tree":
            return "parent"  # one commit against its first parent, like show
        old, new = pos[0], work
    elif len(pos) == 1 and len(neg) == 1:
        old, new = neg[0], pos[0]
    elif len(pos) == 2 and not neg:
        old, new = pos[0], pos[1]
    else:
        return "more than two revisions (a combined diff)"
    return (new, old) if d.reverse else (old, new)


def merge_base(a: str, b: str) -> str | None:
    out = tmp_path("mb")
    wait(spawn(["git", "merge-base", a, b], out=out))
    base = read(out).strip().decode()
    try:
        os.unlink(out)
    except OSError:
        pass
    return base or None


class Section:
    """One comparison whose kernel lines go under some pieces: its sides and its pieces."""

    def __init__(self, old: str, new: str, pieces: list[int]):
        self.old, self.new, self.pieces = old, new, pieces
        self.problem: str | None = None
        self.key: str | None = None
        self.paths: list[tuple[bytes, bytes]] = []


def sections(facts: Facts, pieces: list[Piece], commits: list[Commit]) -> list[Section]:
    if facts.cmd.name in inv.LOG_LIKE:
        out = []
        by_section: dict[int, list[int]] = {}
        for k, p in enumerate(pieces):
            by_section.setdefault(p.section, []).append(k)
        for n, c in enumerate(commits):
            if n not in by_section:
                continue
            parent = c.parents[c.parent_index] if c.parent_index < len(c.parents) else None
            if c.parents and parent is None:
                s = Section("", "", by_section[n])
                s.problem = "a merge compared with something other than its parents"
            else:
                s = Section("C:" + parent if parent else "NOTHING", "C:" + c.commit, by_section[n])
            out.append(s)
        return out
    sides = diff_sides(facts)
    if sides == "parent":
        head = [v for k, v in facts.resolved().items() if k != b"HEAD"]
        parent = _first_parent(head[0]) if head else None
        sides = ("C:" + parent if parent else "NOTHING", "C:" + head[0]) if head else "no revision"
    if isinstance(sides, str):
        s = Section("", "", list(range(len(pieces))))
        s.problem = f"cannot tell which revisions `git {facts.cmd.name}` compares ({sides})"
        return [s]
    return [Section(sides[0], sides[1], list(range(len(pieces))))]


def _first_parent(commit: str) -> str | None:
    out = tmp_path("parent")
    write(out + ".in", commit.encode() + b"^1^{commit}\n")
    wait(spawn(["git", "cat-file", "--batch-check"], inp=out + ".in", out=out))
    word = read(out).split()
    for f in (out, out + ".in"):
        try:
            os.unlink(f)
        except OSError:
            pass
    return word[0].decode() if len(word) >= 2 and word[1] == b"commit" else None


def verify(facts: Facts, sections: list[Section], pieces: list[Piece], prefix: bytes) -> None:
    """A side is trusted only where it holds, at each piece's path, the blob git passed."""
    queries: list[bytes] = []
    checks: list[tuple[Section, str, bytes]] = []  # (section, expected hex, path) per query
    for s in sections:
        if s.problem is not None:
            continue
        for k in s.pieces:
            p = pieces[k]
            old_path, new_path = prefix + p.old_path, prefix + p.new_path
            if not (_regular(p.old_mode) or _regular(p.new_mode)) or not handled(old_path) and not handled(new_path):
                s.paths.append((b"", b""))  # a symlink, a submodule, another file: nothing the engine reads
                continue
            s.paths.append((old_path, new_path))
            for spec, path, want in ((s.old, old_path, p.old_hex), (s.new, new_path, p.new_hex)):
                if want == UNKNOWN or want != MISSING and not _regular(p.old_mode if spec == s.old else p.new_mode):
                    continue
                if spec == "NOTHING":
                    if want != MISSING:
                        s.problem = "a side git passed is not in the revision"
                    continue
                if want == MISSING:
                    continue  # the path may exist there: git shows it as new (e.g. --no-renames)
                if b"\n" in path:
                    s.problem = "a file name with a newline"
                    continue
                if spec == "WORKTREE":
                    try:
                        data: bytes | None = read_inside(facts.top, os.fsdecode(path))
                    except OSError:   # a symlink, FIFO or device now, or over the bound
                        data = None
                    if data is None or blob_id(data, len(want)) != want:
                        s.problem = "the work tree differs from what git shows (filters?)"
                    continue
                if spec == "INDEX":
                    if facts.index().get(path) != want:
                        s.problem = f"{os.fsdecode(path)} in the index is not the blob git passed"
                    continue
                queries.append(spec[2:].encode() + b":" + path + b"\n")
                checks.append((s, want, path))
    if not queries:
        return
    write(facts.files["tree"] + ".in", b"".join(queries))
    wait(spawn(["git", "cat-file", "--batch-check"], inp=facts.files["tree"] + ".in", out=facts.files["tree"]))
    answers = read(facts.files["tree"]).splitlines()
    for (s, want, path), line in zip(checks, answers + [b""] * (len(checks) - len(answers))):
        if line.split()[:1] != [want.encode()]:
            s.problem = f"{os.fsdecode(path)} in the revision is not the blob git passed"


def _regular(mode: str) -> bool:
    return mode in ("100644", "100755", UNKNOWN)


def job_key(facts: Facts, s: Section) -> str:
    """Names the comparison's inputs: both sides' content, the files, the knobs."""
    parts = [b"ptxdiff-driver-1", sys.version.encode()]
    for spec in (s.old, s.new):
        parts.append(spec.encode())
        if spec == "INDEX":
            parts.append(_index_stamp(facts))
        elif spec == "WORKTREE":
            parts.append(_worktree_stamp(facts))
    for old, new in s.paths:
        parts += [old, new]
    parts += [f"{k}={v}".encode() for k, v in sorted(os.environ.items())
              if k.startswith("TRITON_") or k in ("PTXDIFF_TIME", "PTXDIFF_CUOBJDUMP", "PTXDIFF_PTXAS", "PTXDIFF_TRITON")]
    parts.append(b"ptxdiff.triton=" + facts.config().get(b"ptxdiff.triton", b""))   # which triton compiles
    return sha256(b"\0".join(parts))[:40]


def _index_stamp(facts: Facts) -> bytes:
    return sha256(b"\0".join(facts.index_entries())).encode()


def _worktree_stamp(facts: Facts) -> bytes:
    """Size, time and inode of every .py, config, recording and triton pin file of the work tree
    (what the engine reads), tracked or not: cheap, and any edit changes it."""
    from ptxdiff.compile.triton_pin_files import pin_file

    stamp = []
    for path in sorted(facts.work_files()):
        if handled(path) or pin_file(os.fsdecode(path)):
            try:
                st = os.lstat(os.path.join(os.fsencode(facts.top), path))
                stamp.append(b"%s %d %d %d %d" % (path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode))
            except OSError:
                stamp.append(path + b" -")
    return sha256(b"\n".join(stamp)).encode()



def read_file(facts: Facts, spec: str, path: str) -> bytes:
    """A file's bytes on one side (b"" when it is not there)."""
    if spec == "WORKTREE":   # by the rules of repository files: no symlink, FIFO or device, bounded
        try:
            return read_inside(facts.top, path)
        except OSError:
            return b""
    if spec == "NOTHING":
        return b""
    out = facts.files["tree"] + ".file"
    ref = ":0:" if spec == "INDEX" else spec[2:] + ":"
    write(out + ".in", f"{ref}{path}\n".encode())
    wait(spawn(["git", "cat-file", "--batch"], inp=out + ".in", out=out))
    head, _, body = read(out).partition(b"\n")
    word = head.split()
    return body[:int(word[2])] if word[1:2] == [b"blob"] and len(word) > 2 else b""
