"""A stored discovery brought up to date from a neighbouring tree (memo.update) finds what a
discovery of the whole tree finds, also where the change is in another file than the kernels it
makes or unmakes: the repository's own decorator (Triton-distributed's `triton_dist/jit.py`,
changed in 1242224934: a run's rows depended on which commit the cache had seen first), a caller
that stops calling a helper, a new launch of one."""

from __future__ import annotations

import pytest

from ptxdiff.discovery.kernels import discover
from ptxdiff.discovery.memo import update
from ptxdiff.source.modules import FileSet

HEAD = "import triton\nimport triton.language as tl\n"
OPS = HEAD + "import pkg.jit\n\n\n@pkg.jit.jit\ndef scale(x_ptr):\n    tl.store(x_ptr, tl.load(x_ptr) * 2.0)\n"
HELPER = HEAD + "\n\n@triton.jit\ndef twice(x):\n    return x * 2.0\n"
CALLER = HEAD + "from pkg.b import twice\n\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, CALL)\n"


def files(**texts: str) -> FileSet:
    return FileSet({"pkg/__init__.py": b"", **{f"pkg/{name}.py": text.encode() for name, text in texts.items()}})


def kernels_of(found) -> dict[str, tuple[str, str]]:
    return {k: (v.fingerprint, v.unresolved or "") for k, v in found.kernels.items()}


@pytest.mark.parametrize(("before", "after", "changed"), [
    # the repository's decorator becomes triton's jit: ops.py, unchanged, now holds a kernel ...
    (files(jit="def jit(fn):\n    return fn\n", ops=OPS), files(jit="import triton\njit = triton.jit\n", ops=OPS),
     {"pkg/jit.py"}),
    # ... and the other way round
    (files(jit="import triton\njit = triton.jit\n", ops=OPS), files(jit="def jit(fn):\n    return fn\n", ops=OPS),
     {"pkg/jit.py"}),
    # a caller stops calling a helper: the helper, unchanged, is a kernel of its own now
    (files(a=CALLER.replace("CALL", "twice(tl.load(x_ptr))"), b=HELPER),
     files(a=CALLER.replace("CALL", "tl.load(x_ptr)"), b=HELPER), {"pkg/a.py"}),
    # a new file launches a helper: it is a kernel
    (files(a=CALLER.replace("CALL", "twice(tl.load(x_ptr))"), b=HELPER),
     files(a=CALLER.replace("CALL", "twice(tl.load(x_ptr))"), b=HELPER,
           c="from pkg.b import twice\n\n\ndef run(x):\n    twice[(1,)](x)\n"), {"pkg/c.py"}),
], ids=["decorator-made-jit", "decorator-made-plain", "caller-stops-calling", "new-launch"])
def test_an_update_from_a_neighbour_finds_what_a_whole_discovery_finds(before, after, changed):
    whole = discover(after)
    assert kernels_of(update(discover(before), after, (), changed, before)) == kernels_of(whole)
    assert kernels_of(discover(before)) != kernels_of(whole)   # the change does change the kernels
