"""A compile failure's text is the same in every run: ptxas's own word where it stopped without
an error line (`ptxas fatal : Memory allocation failure`, the worker's memory limit), and the
worker's temporary folder and file names as fixed words (issue 40: the one row that read
differently at --jobs 4 and 16 differed only in those names)."""

from __future__ import annotations

import tempfile

from ptxdiff.compile.printed import without_temporary_names
from ptxdiff.compile.worker import ptxas_error

FATAL = ("ptxas fatal   : Memory allocation failure\n"
         "ptxas fatal   : Ptx assembly aborted due to errors\n")


def test_ptxas_that_stopped_without_an_error_line_is_said_by_its_fatal_line():
    assert ptxas_error("triton.runtime.errors.PTXASError: PTXAS error\n`ptxas` stderr:\n" + FATAL) \
        == "ptxas: Memory allocation failure"
    assert ptxas_error("ptxas fatal   : Ptx assembly aborted due to errors\n") is None


def test_an_error_line_still_comes_before_the_fatal_one():
    text = "ptxas /tmp/k.ptx, line 9; error   : Feature 'f' not supported on .target 'sm_90a'\n" + FATAL
    assert ptxas_error(text) == "ptxas: Feature 'f' not supported on .target 'sm_90a'"


def test_the_temporary_folder_and_names_read_the_same_in_every_run():
    folder = tempfile.gettempdir()
    one = f"Repro command: ptxas -v {folder}/tmpixwk0c7t.ptx -o {folder}/tmpixwk0c7t.ptx.o"
    two = f"Repro command: ptxas -v {folder}/tmpw327bipr.ptx -o {folder}/tmpw327bipr.ptx.o"
    assert without_temporary_names(one) == without_temporary_names(two) \
        == "Repro command: ptxas -v $TMPDIR/tmpXXXXXXXX.ptx -o $TMPDIR/tmpXXXXXXXX.ptx.o"
    assert without_temporary_names("ops/k.py:12: NameError") == "ops/k.py:12: NameError"
