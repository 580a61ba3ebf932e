"""A revision's git objects as bytes, read out of one repository and written into another: what
`--executor ray` ships to the machines of a cluster. Beside repo.py (full to its 600 lines), the
other module that holds pygit2, so that Ray's module needs none of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import pygit2
from pygit2.enums import FileMode, ObjectType

from ptxdiff.errors import GitError
from ptxdiff.git.repo import Repo


def python_objects(repo: Repo, commit: str, have: set[str], blobs: Iterable[str]) -> Iterator[tuple[str, int, bytes]]:
    """(oid, type, data) of `commit`, its trees and its Python files (never a link) that are not in
    `have` (a tree in `have` stands for everything below it), then of `blobs`. A file that two
    trees hold comes once per tree, as it is read."""
    odb = repo.raw.odb

    def read(oid: str) -> tuple[str, int, bytes]:
        kind, data = odb.read(oid)
        return oid, int(kind), bytes(data)

    top = repo.raw[commit].peel(pygit2.Commit)
    if str(top.id) not in have:
        yield read(str(top.id))
    stack, sent = [top.tree], set()
    while stack:
        tree = stack.pop()
        if str(tree.id) in have or str(tree.id) in sent:
            continue
        sent.add(str(tree.id))
        yield read(str(tree.id))
        for entry in tree:
            if entry.type == ObjectType.TREE:
                stack.append(repo.raw[entry.id].peel(pygit2.Tree))
            elif entry.type == ObjectType.BLOB and entry.filemode != FileMode.LINK and \
                    (entry.name or "").endswith(".py") and str(entry.id) not in have:
                yield read(str(entry.id))
    for blob in blobs:
        yield read(blob)


def create(path: str) -> None:
    """An empty repository at `path`, for objects shipped to it."""
    pygit2.init_repository(path)


def store(path: str, objects: Mapping[str, tuple[int, bytes]]) -> None:
    """Write shipped objects (oid -> (type, data)) into the repository at `path`; bytes that do
    not hash to their id are refused."""
    odb = pygit2.Repository(path).odb
    for oid, (kind, data) in objects.items():
        if str(odb.write(kind, data)) != oid:
            raise GitError(f"a shipped object does not hash to its id {oid}")
