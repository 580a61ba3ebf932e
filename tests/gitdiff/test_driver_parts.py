"""Unit tests of the diff driver's pure parts: reading the invoking git command (invocation.py),
cutting git's patch output into per-file pieces (patchsplit.py), placing kernel lines (filler)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ptxdiff.gitdiff import invocation as inv
from ptxdiff.gitdiff.filler import place
from ptxdiff.gitdiff.patches import (
    MISSING,
    UNKNOWN,
    Piece,
    lines_of,
    matches,
    parse_header,
    piece_bytes,
    split,
    unquote,
)

TA, TB, TC = b"ptxAtok/", b"ptxBtok/", b"ptxCtok"


# -- invocation -----------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, name, args", [
    ([b"git", b"diff", b"HEAD"], "diff", (b"HEAD",)),
    ([b"git", b"-C", b"sub", b"-c", b"a.b=1", b"--no-pager", b"--git-dir=x", b"log", b"-p"], "log", (b"-p",)),
    ([b"/usr/lib/git-core/git", b"--work-tree", b"w", b"show"], "show", ()),
    ([b"/usr/lib/git-core/git-diff", b"--cached"], "diff", (b"--cached",)),
    ([b"git", b"-p"], "", ()),
])
def test_command_skips_git_global_options(argv, name, args):
    assert inv.command(argv) == inv.Command(name, args)


def test_rerun_puts_our_options_last_before_the_pathspecs():
    cmd = inv.Command("diff", (b"--stat", b"-S", b"--", b"A..B", b"--output", b"x.patch", b"--", b"a.py", b"--"))
    argv = inv.rerun_argv("/usr/bin/git", cmd, [b"--no-ext-diff"])
    # -S takes "--" as its value; --output and its value go; the first real "--" starts the paths
    assert argv == [b"/usr/bin/git", b"--no-pager", b"diff", b"--stat", b"-S", b"--", b"A..B", b"--no-ext-diff",
                    b"--", b"a.py", b"--"]
    cmd = inv.Command("log", (b"-p", b"--output=f", b"--ext-diff"))
    assert inv.rerun_argv("git", cmd, [b"--no-ext-diff"], output=b"/spool/P")[3:] == [
        b"-p", b"--ext-diff", b"--no-ext-diff", b"--output=/spool/P"]


def test_diff_args_tell_the_form():
    d, loose = inv.diff_args((b"--cached", b"-R", b"--merge-base", b"main", b"-U0", b"--output", b"o", b"-w",
                              b"--relative=sub", b"--", b"path"))
    assert (d.cached, d.reverse, d.merge_base, d.no_index, d.output, d.relative, d.ignoring) == \
        (True, True, True, False, b"o", b"sub", True)
    assert loose == [b"main"]
    d, loose = inv.diff_args((b"A..B", b"-S", b"needle", b"--relative", b"-Ifoo", b"file.py"))
    assert loose == [b"A..B", b"file.py"] and d.relative == b"" and d.ignoring
    d, _ = inv.diff_args((b"--relative", b"--no-relative", b"--no-index"))
    assert d.relative is None and d.no_index and not d.ignoring


@pytest.mark.parametrize("token, terms", [
    (b"A..B", [("neg", b"A"), ("pos", b"B")]),
    (b"..B", [("neg", b"HEAD"), ("pos", b"B")]),
    (b"A...", [("sym", b"A"), ("pos", b"HEAD")]),
    (b"^A", [("neg", b"A")]),
    (b"A^!", [("pos", b"A"), ("neg", b"A^")]),
    (b"main~2", [("pos", b"main~2")]),
    (b"A^@", None),
])
def test_rev_terms(token, terms):
    assert inv.rev_terms(token) == terms


def test_find_git_is_none_outside_git():
    assert inv.find_git() is None  # pytest's ancestors are no git process


# -- patchsplit -----------------------------------------------------------------------------------

def test_unquote_reads_git_c_style_names():
    assert unquote(b'"a\\tb\\"c\\\\d\\303\\251.py" rest') == (b'a\tb"c\\d\xc3\xa9.py', b" rest")
    with pytest.raises(ValueError):
        unquote(b'"open')


@pytest.mark.parametrize("line, names", [
    (b"diff --git ptxAtok/a b.py ptxBtok/a b.py\n", (b"a b.py", b"a b.py")),
    (b'diff --git "ptxAtok/t\\tx.py" "ptxBtok/n\\303\\251.py"\n', (b"t\tx.py", b"n\xc3\xa9.py")),
    (b'diff --git ptxBtok/old.py "ptxAtok/q\\"u.py"\n', (b"old.py", b'q"u.py')),      # -R swaps the prefixes
    (b"\x1b[1mdiff --git ptxAtok/x.py ptxBtok/y.py\x1b[m\n", (b"x.py", b"y.py")),     # colour
    (b"diff --git a/x.py b/x.py\n", None),
])
def test_parse_header(line, names):
    assert parse_header(line, TA, TB) == names


def test_lines_split_on_newline_only():
    assert lines_of(b"a\r\nb\rc\nend") == [b"a\r\n", b"b\rc\n", b"end"]


T_DIFF = b"""\
 a.py | 2 +-
 1 file changed

diff --git ptxAtok/a.py ptxBtok/a.py
index 1111111111111111111111111111111111111111..2222222222222222222222222222222222222222 100644
--- ptxAtok/a.py
+++ ptxBtok/a.py
@@ -1 +1 @@
-x
+diff --git a/fake b/fake
diff --git ptxAtok/gone.py ptxBtok/gone.py
deleted file mode 100755
index 3333333333333333333333333333333333333333..0000000000000000000000000000000000000000
--- ptxAtok/gone.py
+++ /dev/null
@@ -1 +0,0 @@
-y
diff --git ptxAtok/old.py ptxBtok/new.py
similarity index 100%
rename from old.py
rename to new.py
diff --git ptxAtok/link.py ptxBtok/link.py
deleted file mode 100644
index 4444444444444444444444444444444444444444..0000000000000000000000000000000000000000
--- ptxAtok/link.py
+++ /dev/null
@@ -1 +0,0 @@
-z
diff --git ptxAtok/link.py ptxBtok/link.py
new file mode 120000
index 0000000000000000000000000000000000000000..5555555555555555555555555555555555555555
--- /dev/null
+++ ptxBtok/link.py
@@ -0,0 +1 @@
+target
\\ No newline at end of file
"""


def test_split_finds_pieces_and_their_identity():
    lines = lines_of(T_DIFF)
    pieces, commits = split(lines, TA, TB)
    assert commits == []
    a, gone, moved, link, symlink = pieces
    assert (a.start, a.length) == (3, 7)  # content that looks like a header has no token: no header
    assert (a.old_hex, a.new_hex, a.old_mode, a.new_mode) == ("1" * 40, "2" * 40, "100644", "100644")
    assert (gone.old_hex, gone.new_hex, gone.old_mode, gone.new_mode) == ("3" * 40, MISSING, "100755", MISSING)
    assert (moved.old_path, moved.new_path, moved.old_hex, moved.old_mode, moved.renamed) == \
        (b"old.py", b"new.py", UNKNOWN, UNKNOWN, True)
    # a file that became a symlink: a deletion and a creation, and a driver call for each
    assert (link.old_mode, link.new_mode, symlink.old_mode, symlink.new_mode) == ("100644", ".", ".", "120000")
    assert piece_bytes(lines, symlink).count(b"diff --git") == 1
    assert matches(symlink, [b"link.py", b"/dev/null", b".", b".", b"/tmp/y", b"5" * 40, b"120000"])


def test_split_of_log_output_knows_each_commit_and_where_it_ends():
    t2 = lines_of(b"ptxCtok c2 c1\n\ndiff --git ptxAtok/a.py ptxBtok/a.py\nindex 1..2 100644\n--- a\n+++ b\n"
                  b"@@ -1 +1 @@\n-x\n+y\nptxCtok m p1 p2\nptxCtok m p1 p2\n\n"
                  b"diff --git ptxAtok/b.py ptxBtok/b.py\nindex 3..4 100644\n")
    # the user's format: other header lines, a graph; the same piece lines
    t = lines_of(b"* commit c2\n| subject\n|\n| diff --git ptxAtok/a.py ptxBtok/a.py\n| index 1..2 100644\n"
                 b"| --- a\n| +++ b\n| @@ -1 +1 @@\n| -x\n| +y\n|\\ \n| | merge\n"
                 b"| diff --git ptxAtok/b.py ptxBtok/b.py\n| index 3..4 100644\n")
    pieces, commits = split(t, TA, TB, t2, TC)
    assert [(p.start, p.length, p.section) for p in pieces] == [(3, 7, 0), (12, 2, 2)]
    assert [(c.commit, c.parents, c.parent_index) for c in commits] == [
        ("c2", ("c1",), 0), ("m", ("p1", "p2"), 0), ("m", ("p1", "p2"), 1)]


def test_split_refuses_runs_that_disagree():
    with pytest.raises(ValueError):
        split(lines_of(b"diff --git ptxAtok/a ptxBtok/a\n"), TA, TB, [], TC)


def test_matches_accepts_the_work_tree_s_zero_id_and_nothing_else_loose():
    piece = Piece(0, 1, b"a.py", b"a.py")
    piece.old_hex, piece.new_hex, piece.old_mode, piece.new_mode = "1" * 40, "2" * 40, "100644", "100644"
    args = [b"a.py", b"/t/a", b"1" * 40, b"100644", b"a.py", b"0" * 40, b"100644"]
    assert matches(piece, args)
    assert not matches(piece, [*args[:5], b"3" * 40, args[6]])
    assert not matches(piece, [*args[:6], b"100755"])
    assert not matches(piece, [b"b.py", *args[1:]])
    assert not matches(piece, [*args, b"b.py", b"rename"])
    new = Piece(0, 1, b"n.py", b"n.py")
    new.old_hex = new.old_mode = MISSING
    assert not matches(new, [b"n.py", b"/t/a", b"0" * 40, b"100644", b"n.py", b"2" * 40, b"100644"])


# -- placing kernel lines -------------------------------------------------------------------------

def test_place_puts_a_kernel_under_its_own_file_else_the_first_file_it_reads():
    rows = [SimpleNamespace(kernel="ops/k.py::k", old_kernel=None, paths=("ops/k.py", "ops/util.py")),
            SimpleNamespace(kernel="ops/k.py::k", old_kernel=None, paths=("ops/k.py", "ops/util.py")),
            SimpleNamespace(kernel="ops/new.py::m", old_kernel="ops/old.py::m", paths=("ops/new.py", "ops/old.py")),
            SimpleNamespace(kernel="ops/other.py::h", old_kernel=None, paths=("ops/consts.py", "ops/other.py"))]
    pieces = [("ops/util.py", "ops/util.py"), ("ops/consts.py", "ops/consts.py"), ("ops/k.py", "ops/k.py"),
              ("ops/old.py", "ops/new.py")]
    assert place(rows, pieces) == {"ops/k.py::k": 2, "ops/new.py::m": 3, "ops/other.py::h": 1}
    assert place(rows[3:], pieces[:1]) == {"ops/other.py::h": 0}
