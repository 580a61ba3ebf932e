"""The lines a report says under its table, as records: a `Note` has a kind and the kernel it is
about, so the renderers pick and place notes by kind (the pull-request comment pins the policy
and approval notes, leaves out what differs between two runs) and never by their wording.

`text` is the line itself, as every format shows it; the JSON report's `messages` are the texts
of the report's own notes.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class NoteKind(enum.Enum):
    """What a note is about."""

    # what the comparison says (Report.messages)
    CONFIG = "config"                # a config entry that names no kernel
    POLICY = "policy"                # the change edits ptxdiff's own policy: the base's decides
    TOOLCHAIN = "toolchain"          # the triton each side compiles with
    NO_KERNELS = "no kernels"        # the pathspecs select no kernel
    TRITONS_OWN = "triton's own"     # the kernel's name is triton's own builtin under this triton
    OTHER_BACKEND = "other backend"  # a kernel for another backend (Ascend, ROCm...): not compiled
    BRANCH_ONLY = "branch only"      # the branch's own entries or recordings: the report's, not the gate's
    DYNAMIC = "dynamic"              # which revision code ran for the dynamic checks, or could not
    SUGGESTION = "suggestion"        # a setting the repository suggests and the user has not taken
    REMOTE = "remote"                # how the remote cache answered this run
    IMPORTS = "imports"              # the revisions' modules were imported to build kernels
    SUBMODULE = "submodule"          # a submodule changed: not looked into
    APPROVAL = "approval"            # a `Ptx-Approved:` trailer let a blocking kernel through
    # what the renderers add from the rows (report/render.py: notes)
    ERROR = "error"                  # a row's error
    RESULT = "result"                # a kernel's outputs or timing result that needs words
    EXPLANATION = "explanation"      # what a mark in the table means
    GUESS = "guess"                  # the values a kernel's specs guess
    SPEC = "spec"                    # what was assumed or left out making a kernel's specs
    BLOCKING = "blocking"            # how many rows block, with which verdicts
    CACHE = "cache"                  # where this run's rows came from


@dataclass(frozen=True)
class Note:
    """One line under the table: its kind, the kernel it is about (None: the whole comparison),
    and its text as shown (naming the kernel where it is about one)."""

    kind: NoteKind
    kernel: str | None
    text: str


def as_notes(kind: NoteKind, texts: Iterable[str]) -> list[Note]:
    """Notes of one kind about no one kernel, one per line."""
    return [Note(kind, None, t) for t in texts]


def texts(said: Iterable[Note]) -> list[str]:
    return [n.text for n in said]
