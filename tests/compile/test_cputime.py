"""CPU seconds of a process tree from /proc: the pool's bound of a request."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ptxdiff.compile import cputime

pytestmark = [pytest.mark.integration,   # each test starts processes
              pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads /proc")]


def test_a_tree_counts_its_live_children_and_what_it_reaped():
    before = cputime.of_trees([os.getpid()])
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\n"
    subprocess.run([sys.executable, "-c", burn], check=True)   # reaped: in this process's children's time
    child = subprocess.Popen([sys.executable, "-c", burn + "input()\n"], stdin=subprocess.PIPE)
    try:
        while child.poll() is None:   # live: counted as a member of the tree once it has burned its 0.3 s
            tree = cputime.of_trees([os.getpid()])
            assert tree is not None
            with open(f"/proc/{child.pid}/stat", "rb") as f:
                if sum(int(v) for v in f.read().rsplit(b")", 1)[1].split()[11:13]) >= 0.3 * cputime.TICK:
                    break
        after = cputime.of_trees([os.getpid()])
    finally:
        child.communicate(b"\n")
    assert before is not None and after is not None
    assert after[os.getpid()] - before[os.getpid()] >= 0.55   # both children, at the ticks' resolution


def test_a_root_that_is_gone_has_used_nothing():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert cputime.of_trees([gone.pid]) == {gone.pid: 0.0}
