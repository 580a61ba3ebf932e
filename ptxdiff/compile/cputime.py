"""CPU seconds a worker's process tree has used, read from /proc: the pool's bound of a request.

A wall-clock bound times out on a loaded machine (more jobs than cores, neighbours) what a quiet
one compiles; CPU seconds do not grow with load. The tree is the worker, its sandbox's
supervisor and working process, and what they start (ptxas): every live process whose parents
lead to the worker, each with its own time and that of the children it has reaped. None where
/proc cannot be read (not Linux): the pool then bounds by the clock.
"""

from __future__ import annotations

import os

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") and "SC_CLK_TCK" in os.sysconf_names else 100


def _stat(pid: str) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and its reaped children) of one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()   # the name may hold spaces and parentheses
    try:   # after the name: state ppid ... utime(12) stime(13) cutime(14) cstime(15), counted from state
        return int(fields[1]), sum(int(v) for v in fields[11:15]) / TICK
    except (IndexError, ValueError):
        return None


def of_trees(roots: list[int]) -> dict[int, float] | None:
    """CPU seconds of each root's process tree, from one pass over /proc; None without /proc."""
    try:
        pids = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return None
    parent: dict[int, int] = {}
    used: dict[int, float] = {}
    for name in pids:
        got = _stat(name)
        if got is not None:
            parent[int(name)] = got[0]
            used[int(name)] = got[1]
    wanted = set(roots)
    out = dict.fromkeys(roots, 0.0)
    for pid, seconds in used.items():
        at, hops = pid, 0
        while at not in wanted and at in parent and hops < 64:
            at, hops = parent[at], hops + 1
        if at in wanted:
            out[at] += seconds
    return out
