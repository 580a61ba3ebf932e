"""Discovery's kernels read in forked children (fanout.py): the same records, in the same order,
at any number of processes; an error raised as in the process; no fork beside another thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ptxdiff.discovery.fanout import fork_map


def doubled(x: int) -> tuple[int, int]:
    return 2 * x, os.getpid()


def in_fresh_process(code: str) -> str:
    """What `code` prints run in a fresh interpreter: one with no thread beside the main one (the
    test process may have some another test started, which turns forking off)."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": str(root)}, check=True)
    return done.stdout


@pytest.mark.integration
def test_the_items_are_mapped_in_children_and_come_back_in_order():
    out = json.loads(in_fresh_process("""
        import json, os
        from ptxdiff.discovery.fanout import fork_map
        print(json.dumps([os.getpid(), fork_map(lambda x: (2 * x, os.getpid()), list(range(50)), jobs=4)]))
    """))
    parent, mapped = out
    assert [v for v, _ in mapped] == [2 * x for x in range(50)]
    assert len({pid for _, pid in mapped} - {parent}) == 4   # four children, the parent none
    # too few items for two children, or one job: in the process
    assert {pid for _, pid in fork_map(doubled, list(range(10)), jobs=4)} == {os.getpid()}
    assert {pid for _, pid in fork_map(doubled, list(range(50)), jobs=1)} == {os.getpid()}


def test_an_error_of_a_child_s_share_is_raised_as_the_process_would_raise_it():
    def odd(x: int) -> int:
        if x == 37:
            raise ValueError(f"item {x}")
        return x
    with pytest.raises(ValueError, match="item 37"):
        fork_map(odd, list(range(50)), jobs=4)


def test_no_fork_while_another_thread_runs():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=True)
    other.start()
    try:
        assert {pid for _, pid in fork_map(doubled, list(range(50)), jobs=4)} == {os.getpid()}
    finally:
        stop.set()
        other.join()


@pytest.mark.integration
def test_discovery_is_the_same_at_any_number_of_processes():
    """The corpus's new sides as one tree (every kernel of it): the stored discovery's JSON, byte
    for byte, whether one process or four read the kernels (forked, in a fresh interpreter)."""
    out = in_fresh_process("""
        import json, os
        from pathlib import Path
        from ptxdiff.discovery import fanout
        from ptxdiff.discovery.kernels import discover
        from ptxdiff.discovery.memo import to_json
        from ptxdiff.source.modules import FileSet
        files = {f"{pair.name}/{f.name}": f.read_bytes() for pair in sorted(Path("corpus/pairs").iterdir())
                 if pair.is_dir() for f in sorted(pair.glob("new*.py"))}
        serial = discover(FileSet(files), jobs=1)
        forks = []
        fork = os.fork
        os.fork = lambda: forks.append(1) or fork()
        parallel = discover(FileSet(files), jobs=4)
        print(json.dumps([len(serial.kernels), len(forks), to_json(serial) == to_json(parallel),
                          json.dumps(to_json(serial), sort_keys=True) == json.dumps(to_json(parallel), sort_keys=True)]))
    """)
    kernels, forks, equal, same_text = json.loads(out)
    assert kernels >= 32 and forks == 4 and equal and same_text
