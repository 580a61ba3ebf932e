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


# pkg/b.py is read again (it imports pkg/cfg.py, which changes) while pkg/a.py, whose kernel calls
# b's helper and reads nothing of cfg's, is kept
READ_AGAIN = HEAD + "import pkg.cfg\n\n\n@triton.jit\ndef twice(x):\n    return x * 2.0\n"
# ... and b's kernel calls a helper named like a kernel c.py launches (Triton-distributed's three
# `copy_1d_tilewise_kernel`s: memory_ops.py's is launched, ep_a2a.py's is called)
NAMESAKE = READ_AGAIN + "\n\n@triton.jit\ndef copy(x):\n    return x\n\n\n@triton.jit\ndef k2(x_ptr):\n" \
    "    tl.store(x_ptr, copy(tl.load(x_ptr)))\n"
LAUNCHES = HEAD + "\n\n@triton.jit\ndef copy(x_ptr):\n    tl.store(x_ptr, 1.0)\n\n\ndef run(x):\n" \
    "    copy[(1,)](x)\n"


@pytest.mark.parametrize(("b", "extra"), [(READ_AGAIN, {}), (NAMESAKE, {"c": LAUNCHES})], ids=["helper", "namesake"])
def test_a_file_read_again_keeps_the_helpers_the_kept_files_call(b, extra):
    """Triton-distributed fa229e0a98 -> its parent: ep_a2a.py, read again, had a kernel
    `copy_1d_tilewise_kernel` that a whole discovery calls a helper (of the kernels of a file the
    update kept, and launched only as memory_ops.py's function of that name)."""
    before = files(a=CALLER.replace("CALL", "twice(tl.load(x_ptr))"), b=b, cfg="N = 1\n", **extra)
    after = files(a=CALLER.replace("CALL", "twice(tl.load(x_ptr))"), b=b, cfg="N = 2\n", **extra)
    whole = discover(after)
    assert "pkg/b.py::twice" not in whole.kernels and "pkg/b.py::copy" not in whole.kernels
    assert kernels_of(update(discover(before), after, (), {"pkg/cfg.py"}, before)) == kernels_of(whole)
