"""The one module that reads git (git/repo.py), on real repositories made in tmp_path: revisions
as sides by `git diff`'s rule, snapshots of a commit, the index and the work tree that touch
nothing, renames, history walks, what a push adds, and config read as git reads it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers import commit, git, head, make_repo, write
from ptxdiff.errors import GitError
from ptxdiff.git.repo import Repo, commit_tree, config_file_set, content_hash
from ptxdiff.git.values import INDEX, Side


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three commits: a.py added, a.py changed and b.txt added, a.py renamed to c.py."""
    repo = make_repo(tmp_path, {"a.py": "x = 1\n" * 20}, message="one")
    two = commit(repo, "two", {"a.py": "x = 1\n" * 20 + "y = 2\n", "b.txt": "b\n"})
    git(repo, "mv", "a.py", "c.py")
    three = commit(repo, "three")
    return repo, [head(repo, "HEAD~2"), two, three]


@pytest.mark.integration
def test_revisions_become_sides_by_git_diffs_rule(history):
    repo, (one, two, three) = history
    r = Repo(repo)
    assert r.sides([]) == (Side("HEAD", three), Side("work tree", None))
    assert r.sides(["HEAD~1"]) == (Side("HEAD~1", two), Side("work tree", None))
    assert r.sides([one, "main"]) == (Side(one, one), Side("main", three))
    assert r.sides(["HEAD~2..HEAD"]) == (Side("HEAD~2", one), Side("HEAD", three))
    assert r.sides(["..HEAD~1"]) == (Side("HEAD", three), Side("HEAD~1", two))
    assert r.sides(["HEAD~2...HEAD"])[0] == Side("merge-base(HEAD~2,HEAD)", one)
    with pytest.raises(GitError, match="at most two revisions"):
        r.sides(["HEAD", "HEAD~1", "HEAD~2"])


@pytest.mark.integration
def test_an_unknown_revision_and_a_folder_outside_git_are_one_line_errors(history, tmp_path):
    repo, _ = history
    with pytest.raises(GitError, match="unknown revision 'nosuch'"):
        Repo(repo).resolve("nosuch")
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(GitError, match="not a git repository"):
        Repo(outside)


@pytest.mark.integration
def test_a_range_is_its_tip_and_what_it_hides(history):
    repo, (one, two, three) = history
    r = Repo(repo)
    assert r.range("HEAD~2..HEAD") == (three, [one]) and r.range("HEAD~1") == (two, [])
    assert [c.subject for c in r.walk(*r.range("HEAD~2..HEAD"))] == ["two", "three"]   # oldest first
    assert [c.id for c in r.walk(three)] == [one, two, three]
    assert r.commit_info(two).parents == (one,) and r.commit_info(one).parents == ()


@pytest.mark.integration
def test_a_commit_snapshot_reads_the_objects_and_content_ids_are_blob_ids(history):
    repo, (one, two, _) = history
    snap = Repo(repo).snapshot(Side("x", two))
    assert snap.paths == {"a.py", "b.txt"}
    assert snap.read("b.txt") == b"b\n" and snap.content_id("b.txt") == head(repo, f"{two}:b.txt")
    assert Repo(repo).snapshot(Side("nothing", "")).paths == frozenset()


@pytest.mark.integration
def test_the_work_tree_snapshot_has_untracked_files_but_not_ignored_ones_or_symlinks(history):
    repo, _ = history
    write(repo, {".gitignore": "ignored.py\n", "new.py": "n = 1\n", "ignored.py": "i = 1\n", "c.py": "edited\n"})
    os.symlink("c.py", repo / "link.py")
    snap = Repo(repo).snapshot(Side("work tree", None))
    assert snap.paths == {".gitignore", "b.txt", "c.py", "new.py"}
    assert snap.read("c.py") == b"edited\n"                     # the file on disk, not HEAD's
    assert snap.content_id("c.py") == content_hash(b"edited\n")
    assert git(repo, "status", "--porcelain").stdout.count("\n") == 4   # nothing staged or written by reading


@pytest.mark.integration
def test_an_overlay_lays_blobs_over_a_commit_and_an_empty_one_removes_a_path(history):
    repo, (_, two, _) = history
    blob = git(repo, "hash-object", "-w", "--stdin", input="z = 3\n").stdout.strip()
    snap = Repo(repo).snapshot(Side("x", two, overlay=(("z.py", blob), ("b.txt", ""))))
    assert snap.paths == {"a.py", "z.py"} and snap.read("z.py") == b"z = 3\n"


@pytest.mark.integration
def test_the_index_side_is_what_is_staged(history):
    repo, (_, _, three) = history
    write(repo, {"staged.py": "s = 1\n", "unstaged.py": "u = 1\n"})
    git(repo, "add", "staged.py")
    r = Repo(repo)
    assert set(r.index_files()) == {"b.txt", "c.py", "staged.py"}
    assert r.snapshot(Side("index", INDEX)).read("staged.py") == b"s = 1\n"
    assert r.tree_id(Side("HEAD", three)) == head(repo, "HEAD^{tree}")
    assert r.tree_id(Side("index", INDEX)) is None and r.tree_id(Side("work tree", None)) is None


@pytest.mark.integration
def test_renames_between_commits_and_what_each_commit_changed(history):
    repo, (one, two, three) = history
    r = Repo(repo)
    assert r.renames(Side("a", two), Side("b", three)) == {"c.py": "a.py"}
    assert r.renames(Side("a", one), Side("b", two)) == {}
    assert r.renames(Side("nothing", ""), Side("b", three)) == {}
    assert r.changed_paths(three) == {"a.py", "c.py"} and r.changed_paths(two) == {"a.py", "b.txt"}
    assert r.touches(two, "a.py") and not r.touches(three, "b.txt") and r.touches(one, "a.py")


@pytest.mark.integration
def test_pushed_is_what_the_remote_lacks_and_the_base_it_builds_on(history):
    repo, (one, two, three) = history
    r = Repo(repo)
    pushed = r.pushed(three, [one])
    assert [c.id for c in pushed.commits] == [two, three] and pushed.bases == (one,)
    everything = r.pushed(three, [])
    assert len(everything.commits) == 3 and everything.bases == ("",)   # down to a root
    assert r.pushed(three, [three]).commits == ()


@pytest.mark.integration
def test_config_is_read_at_every_level_and_git_c_settings_count(history, monkeypatch):
    repo, _ = history
    git(repo, "config", "ptxdiff.probe", "local")
    r = Repo(repo)
    assert r.config_get("ptxdiff.probe") == "local" and r.config_get("ptxdiff.absent") is None
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'ptxdiff.probe'='given'")   # what `git -c` passes
    assert r.config_get("ptxdiff.probe") == "given"


def test_a_config_file_is_set_and_its_keys_removed_returning_what_was_there(tmp_path):
    path = tmp_path / "config"
    path.write_text("[ptxdiff]\n\tkeep = 1\n")
    assert config_file_set(str(path), {"ptxdiff.keep": None, "ptxdiff.new": "2"}) == {"ptxdiff.keep": "1",
                                                                                      "ptxdiff.new": None}
    assert "keep" not in path.read_text() and "new = 2" in path.read_text()


@pytest.mark.integration
def test_commit_tree_commits_exactly_the_files_given_without_a_work_tree(tmp_path):
    path = str(tmp_path / "corpus")
    first = commit_tree(path, {"k.py": b"old\n"}, "old", None)
    second = commit_tree(path, {"k.py": b"new\n", "d/x.py": b"x\n"}, "new", first)
    r = Repo(path)
    assert r.commit_info(second).parents == (first,) and r.resolve("main") == second
    assert r.snapshot(Side("new", second)).paths == {"k.py", "d/x.py"}
    assert not (tmp_path / "corpus" / "k.py").exists()
