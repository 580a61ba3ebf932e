"""The demo prints each command as a shell reads it back (issue 38: the approval, pasted, failed)."""

from __future__ import annotations

import shlex

from ptxdiff.corpus.demo import quoted


def test_a_printed_command_pasted_into_a_shell_is_the_command():
    approve = ["git", "commit", "--amend", "--no-edit", "--trailer", "Ptx-Approved: kernels/gelu.py::gelu_kernel"]
    assert quoted(approve) == "git commit --amend --no-edit --trailer 'Ptx-Approved: kernels/gelu.py::gelu_kernel'"
    assert shlex.split(quoted(approve)) == approve
    assert quoted(["ptxdiff", "diff", "HEAD~1", "HEAD"]) == "ptxdiff diff HEAD~1 HEAD"      # nothing to quote
