"""Which two revisions a `git diff`-like command compares, and whether a side holds the blob git
passed, on in-memory facts (what git would have answered, written to the spool files)."""

from __future__ import annotations

import pytest

from ptxdiff.fastio import blob_id
from ptxdiff.gitdiff import invocation as inv
from ptxdiff.gitdiff import revisions
from ptxdiff.gitdiff.patches import MISSING, UNKNOWN, Commit, Piece

A, B, H, M = "a" * 40, "b" * 40, "1" * 40, "e" * 40


def facts(tmp_path, name: str, args: list[str], answers: dict[str, bytes] | None = None,
          resolved: dict[bytes, str] | None = None) -> revisions.Facts:
    """Facts as `Facts.__init__` leaves them, without running git: the spool files hold what git
    answered (`answers`: "config", "files", "revs")."""
    f = revisions.Facts.__new__(revisions.Facts)
    f.cmd = inv.Command(name, tuple(a.encode() for a in args))
    f.dargs, loose = inv.diff_args(f.cmd.args)
    f.top, f.pids, f.lazy, f._config = str(tmp_path), {}, {}, None
    f.files = {n: str(tmp_path / n) for n in ("config", "revs", "revs.in", "files", "tree")}
    for n, data in (answers or {}).items():
        (tmp_path / n).write_bytes(data)
    known = {b"HEAD": H, b"A": A, b"B": B, **(resolved or {})}
    f.tokens = [(tok, terms) for tok in loose if (terms := inv.rev_terms(tok)) is not None]
    f.revs = list(dict.fromkeys([b"HEAD", *(rev for _, terms in f.tokens for _, rev in terms)]))
    (tmp_path / "revs").write_bytes(b"".join(
        f"{known[r]} commit 10\n".encode() if r in known else r + b" missing\n" for r in f.revs))
    return f


@pytest.fixture(autouse=True)
def no_merge_base(monkeypatch):
    monkeypatch.setattr(revisions, "merge_base", lambda a, b: M if {a, b} <= {A, B, H} else None)


@pytest.mark.parametrize("name, args, sides", [
    ("diff", [], ("INDEX", "WORKTREE")),
    ("diff", ["--cached"], ("C:" + H, "INDEX")),
    ("diff", ["A"], ("C:" + A, "WORKTREE")),
    ("diff", ["--cached", "A"], ("C:" + A, "INDEX")),
    ("diff", ["A", "B"], ("C:" + A, "C:" + B)),
    ("diff", ["A..B"], ("C:" + A, "C:" + B)),
    ("diff", ["..B"], ("C:" + H, "C:" + B)),
    ("diff", ["B^!"], ("C:" + A, "C:" + B)),
    ("diff", ["A...B"], ("C:" + M, "C:" + B)),
    ("diff", ["--merge-base", "A"], ("C:" + M, "WORKTREE")),
    ("diff", ["--merge-base", "A", "B"], ("C:" + M, "C:" + B)),
    ("diff", ["-R", "A", "B"], ("C:" + B, "C:" + A)),
    ("diff-files", [], ("INDEX", "WORKTREE")),
    ("diff-index", ["--cached", "A"], ("C:" + A, "INDEX")),
    ("diff-tree", ["A", "B"], ("C:" + A, "C:" + B)),
    ("diff-tree", ["B"], "parent"),
    ("diff-tree", [], "diff-tree without revisions"),
    ("diff", ["--no-index"], "--no-index compares files, not revisions"),
    ("diff", ["A", "B", "HEAD"], "more than two revisions (a combined diff)"),
    ("diff", ["A...B", "A...B"], "more than one symmetric range"),
    ("diff", ["--merge-base", "A", "B", "HEAD"], "--merge-base with these revisions"),
    ("diff", ["A...X"], "cannot read 'A...X' as a revision"),
    ("diff", ["A...C"], "the two revisions have no common ancestor"),
])
def test_diff_sides(tmp_path, name, args, sides):
    resolved = {b"B^": A, b"C": "c" * 40}
    assert revisions.diff_sides(facts(tmp_path, name, args, resolved=resolved)) == sides


def test_diff_sides_without_a_head_compares_nothing_with_the_index(tmp_path):
    f = facts(tmp_path, "diff", ["--cached"])
    (tmp_path / "revs").write_bytes(b"HEAD missing\n")
    assert revisions.diff_sides(f) == ("NOTHING", "INDEX")


def test_a_path_given_without_dashes_is_not_a_revision(tmp_path):
    # `git diff ops/k.py`: not a revision, so the index and the work tree
    assert revisions.diff_sides(facts(tmp_path, "diff", ["ops/k.py"])) == ("INDEX", "WORKTREE")


def test_sections_of_log_output_follow_each_commits_parent(tmp_path):
    f = facts(tmp_path, "log", ["-p"])
    pieces = [Piece(0, 1, b"a.py", b"a.py", 0), Piece(1, 1, b"b.py", b"b.py", 0), Piece(2, 1, b"c.py", b"c.py", 2),
              Piece(3, 1, b"d.py", b"d.py", 3)]
    commits = [Commit(B, (A,), 0), Commit(A, (), 0), Commit(H, (A,), 0), Commit(M, (A, B), 2)]
    got = [(s.old, s.new, s.pieces, s.problem) for s in revisions.sections(f, pieces, commits)]
    assert got == [("C:" + A, "C:" + B, [0, 1], None), ("C:" + A, "C:" + H, [2], None),
                   ("", "", [3], "a merge compared with something other than its parents")]


def test_sections_say_why_the_sides_cannot_be_told(tmp_path):
    (s,) = revisions.sections(facts(tmp_path, "diff", ["A", "B", "HEAD"]), [Piece(0, 1, b"a.py", b"a.py")], [])
    assert s.problem == "cannot tell which revisions `git diff` compares (more than two revisions (a combined diff))"
    assert s.pieces == [0]


def piece(path: bytes, old_hex: str, new_hex: str, mode: str = "100644") -> Piece:
    p = Piece(0, 1, path, path)
    p.old_hex, p.new_hex, p.old_mode, p.new_mode = old_hex, new_hex, mode, mode
    return p


def verify(tmp_path, old: str, new: str, p: Piece, index: bytes = b"") -> revisions.Section:
    f = facts(tmp_path, "diff", [], {"files": index})
    s = revisions.Section(old, new, [0])
    revisions.verify(f, [s], [p], b"")
    return s


def test_verify_trusts_a_work_tree_and_index_that_hold_the_blobs(tmp_path):
    (tmp_path / "k.py").write_bytes(b"new\n")
    old_id, new_id = blob_id(b"old\n", 40), blob_id(b"new\n", 40)
    index = f"100644 {old_id} 0\tk.py\0".encode() + b"untracked.py\0"
    s = verify(tmp_path, "INDEX", "WORKTREE", piece(b"k.py", old_id, new_id), index)
    assert s.problem is None and s.paths == [(b"k.py", b"k.py")]


@pytest.mark.parametrize("old, new, old_hex, new_hex, problem", [
    ("INDEX", "WORKTREE", "1" * 40, blob_id(b"new\n", 40), "k.py in the index is not the blob git passed"),
    ("INDEX", "WORKTREE", UNKNOWN, "2" * 40, "the work tree differs from what git shows (filters?)"),
    ("NOTHING", "WORKTREE", "1" * 40, blob_id(b"new\n", 40), "a side git passed is not in the revision"),
    ("NOTHING", "WORKTREE", MISSING, blob_id(b"new\n", 40), None),
])
def test_verify_says_which_side_does_not_hold_the_blob(tmp_path, old, new, old_hex, new_hex, problem):
    (tmp_path / "k.py").write_bytes(b"new\n")
    assert verify(tmp_path, old, new, piece(b"k.py", old_hex, new_hex)).problem == problem


def test_verify_leaves_out_what_the_engine_does_not_read(tmp_path):
    s = verify(tmp_path, "INDEX", "WORKTREE", piece(b"link.py", "1" * 40, "2" * 40, mode="120000"))
    assert s.problem is None and s.paths == [(b"", b"")]
    s = verify(tmp_path, "INDEX", "WORKTREE", piece(b"notes.txt", "1" * 40, "2" * 40))
    assert s.problem is None and s.paths == [(b"", b"")]


def test_the_listing_splits_index_entries_from_untracked_files(tmp_path):
    staged = [f"100644 {A} 0\tk.py".encode(), f"100644 {B} 2\tc.py".encode()]
    f = facts(tmp_path, "diff", [], {"files": b"\0".join([*staged, b"new file.py", b""])})
    assert f.index() == {b"k.py": A}
    assert f.index_entries() == staged
    assert f.work_files() == {b"k.py", b"c.py", b"new file.py"}


@pytest.mark.parametrize("config, args, prefix, enabled", [
    (b"", [], b"", True),
    (b"ptxdiff.enabled\nfalse\0", [], b"", False),
    (b"ptxdiff.enabled\0", [], b"", True),                   # a bare key is true, as git reads it
    (b"diff.relative\ntrue\0", [], b"sub/", True),           # the cwd (GIT_PREFIX)
    (b"diff.relative\ntrue\0", ["--relative=ops/"], b"ops/", True),
    (b"", ["--relative=/"], b"", True),
    (b"diff.relative\nno\0", [], b"", True),
])
def test_config_and_relative_prefix(tmp_path, monkeypatch, config, args, prefix, enabled):
    monkeypatch.setenv("GIT_PREFIX", "sub/")
    f = facts(tmp_path, "diff", args, {"config": config})
    assert (f.relative_prefix(), f.enabled()) == (prefix, enabled)


def test_job_key_changes_with_the_work_tree_and_the_knobs(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_bytes(b"x\n")
    f = facts(tmp_path, "diff", [], {"files": b"k.py\0"})
    s = revisions.Section("INDEX", "WORKTREE", [0])
    s.paths = [(b"k.py", b"k.py")]
    first = revisions.job_key(f, s)
    assert revisions.job_key(f, s) == first and len(first) == 40
    monkeypatch.setenv("TRITON_DEBUG", "1")
    knob = revisions.job_key(f, s)
    assert knob != first
    (tmp_path / "k.py").write_bytes(b"longer\n")
    assert revisions.job_key(f, s) != knob


@pytest.mark.parametrize("change", ["env", "git config", "pin file"])
def test_job_key_names_the_triton_that_compiles(tmp_path, monkeypatch, change):
    """The driver's stored kernel lines are those of the triton chosen as `ptxdiff diff` chooses it:
    PTXDIFF_TRITON, git config ptxdiff.triton, or a pin in the work tree changes the comparison."""
    (tmp_path / "k.py").write_bytes(b"x\n")
    (tmp_path / "requirements.txt").write_bytes(b"triton==3.6.0\n")
    listing = {"files": b"k.py\0requirements.txt\0", "config": b""}
    s = revisions.Section("INDEX", "WORKTREE", [0])
    s.paths = [(b"k.py", b"k.py")]
    first = revisions.job_key(facts(tmp_path, "diff", [], listing), s)
    if change == "env":
        monkeypatch.setenv("PTXDIFF_TRITON", "3.6.0")
    elif change == "git config":
        listing["config"] = b"ptxdiff.triton\n3.6.0\0"
    else:
        (tmp_path / "requirements.txt").write_bytes(b"triton==3.5.1\n")
    assert revisions.job_key(facts(tmp_path, "diff", [], listing), s) != first


@pytest.mark.parametrize("spec, path, want", [
    ("WORKTREE", "ops/k.py", b"kernel\n"),
    ("WORKTREE", "ops/link.py", b""),             # a symlink is never followed: as if not there
    ("WORKTREE", "ops/gone.py", b""),
    ("WORKTREE", "../outside.py", b""),           # never outside the work tree
    ("NOTHING", "ops/k.py", b""),                 # the side before the first commit holds no file
])
def test_read_file_of_the_work_tree_and_of_nothing(tmp_path, spec, path, want):
    top = tmp_path / "top"
    (top / "ops").mkdir(parents=True)
    (top / "ops" / "k.py").write_bytes(b"kernel\n")
    (tmp_path / "outside.py").write_bytes(b"secret\n")
    (top / "ops" / "link.py").symlink_to(tmp_path / "outside.py")
    f = facts(tmp_path, "diff", [])
    f.top = str(top)
    assert revisions.read_file(f, spec, path) == want
