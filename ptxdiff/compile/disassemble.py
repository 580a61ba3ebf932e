"""A compiled spec's SASS, paid for only by a page that shows it.

The compile worker keeps each spec's cubin in its result, packed (`pack`: zlib, then base64 for
the JSON of the cache entry; none over CUBIN_MAX), and disassembles nothing: `nvdisasm -c` costs
~0.4 s of CPU per cubin, mostly its start-up, which a run that renders no HTML would pay for
nothing. `disassemble` is what the HTML report runs instead (compile/listings.py decides what
and where): `nvdisasm -c` of each cubin, normalised (metrics/sass.py), in parallel.
"""

from __future__ import annotations

import base64
import binascii
import os
import tempfile
import zlib
from dataclasses import dataclass

from ptxdiff.binaries import run_tool
from ptxdiff.errors import ToolError
from ptxdiff.metrics.sass import normalise_sass

CUBIN_MAX = 2**20          # a packed cubin longer than this is not kept: its rows say `no SASS`
UNPACKED_MAX = 64 * 2**20  # what unpacking stops at (a cubin is never near it; a bomb would be)
NVDISASM_TIMEOUT = 120.0


def pack(cubin: bytes) -> str | None:
    """The cubin as a result keeps it (zlib at level 6: a third of its size, then base64), or
    None where that is longer than CUBIN_MAX."""
    packed = base64.b64encode(zlib.compress(cubin, 6)).decode("ascii")
    return packed if len(packed) <= CUBIN_MAX else None


def unpack(packed: str) -> bytes:
    """The cubin `pack` kept; ValueError where `packed` is not one (bad base64 or zlib data, or
    more than UNPACKED_MAX bytes)."""
    try:
        inflate = zlib.decompressobj()
        data = inflate.decompress(base64.b64decode(packed, validate=True), UNPACKED_MAX)
    except (binascii.Error, zlib.error) as e:
        raise ValueError(f"not a packed cubin: {e}") from None
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError("not a packed cubin: truncated, or larger than a cubin can be")
    return data


@dataclass(frozen=True)
class Listing:
    """One cubin's normalised SASS, or why there is none."""

    text: str | None
    error: str | None = None


def _one(packed: str, folder: str, n: int) -> Listing:
    try:
        path = os.path.join(folder, f"{n}.cubin")
        with open(path, "wb") as f:
            f.write(unpack(packed))
        # nvdisasm, not cuobjdump -sass: that one writes a temporary file and runs nvdisasm on it,
        # which the sealed worker does not allow
        return Listing(normalise_sass(run_tool("nvdisasm", ["-c", path], timeout=NVDISASM_TIMEOUT)))
    except (ValueError, OSError, ToolError) as e:
        return Listing(None, str(e).splitlines()[0] if str(e) else type(e).__name__)


def disassemble(packed: list[str], jobs: int) -> list[Listing]:
    """The listing of each packed cubin, in order, `jobs` nvdisasm at a time. Run in a sealed
    worker (listings.py): the cubin came out of a worker that ran the repository's kernel code,
    and nvdisasm parses it."""
    from concurrent.futures import ThreadPoolExecutor  # here: the compile workers import this module too

    with tempfile.TemporaryDirectory(prefix="ptxdiff-sass-") as folder, \
            ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda item: _one(item[1], folder, item[0]), enumerate(packed)))
