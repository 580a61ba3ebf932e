"""What the pre-push gate decides, as data: the refs git pushes and the verdict on each.

Its own module so that the gate (gitdiff/prepush.py) and its text (report/gate.py) share the types
without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxdiff.compare.results import Row
from ptxdiff.git.values import CommitInfo

TRAILER = "Ptx-Approved"


@dataclass(frozen=True)
class RefUpdate:
    local_ref: str
    local_oid: str
    remote_ref: str
    remote_oid: str


@dataclass(frozen=True)
class Outcome:
    """The verdict on one pushed ref: the blocking rows (none: it may go) and what to say."""

    update: RefUpdate
    blocking: list[Row]
    block_list: tuple[str, ...] = ()
    commits: tuple[CommitInfo, ...] = ()
    notes: tuple[str, ...] = ()
