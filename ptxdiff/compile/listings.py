"""The SASS listings an HTML page shows, disassembled when the page is rendered and kept after.

Each listing is stored under the hash of its packed cubin (and of the nvdisasm and ptxdiff that
made it) in `<cache>/sass/`, a store of its own beside the compile results (store.py; bounded
to SASS_STORE_MAX_MB, `ptxdiff cache clear` empties it too), so a page rendered again
disassembles nothing. What is missing is disassembled in one sealed worker, as the compiles
are (disassemble.py says why); where the user turned the sandbox off, in this process. A page
whose listings cannot be had (no nvdisasm, no sandbox) still renders: its rows say `no SASS`,
and `Found.error` says why.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from ptxdiff import binaries
from ptxdiff.compile.disassemble import Listing, disassemble
from ptxdiff.errors import SandboxError, ToolError
from ptxdiff.sandbox import probe
from ptxdiff.store import Store

FORMAT = 1
SASS_STORE_MAX_MB = 64
CALL_S_PER_CUBIN = 10.0    # the sealed worker's bound: generous, nvdisasm takes ~0.5 s a cubin


@dataclass(frozen=True)
class Found:
    """Listings by packed cubin; `error`: why some cubins have none (the first reason)."""

    texts: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    disassembled: int = 0       # cubins disassembled now (the rest came from the store)


def store(cache_root: Path) -> Store:
    """Where listings live: `<cache>/sass/`, one gzip'd JSON string per cubin."""
    return Store(cache_root / "sass", ".sass.gz", lambda value: isinstance(value, str), FORMAT)


def _maker() -> str:
    """What a listing depends on besides its cubin: nvdisasm (path, size, mtime) and ptxdiff's
    own source (the normaliser)."""
    path = binaries.tool_path("nvdisasm")
    st = os.stat(path)
    fp = binaries.fingerprint()
    return json.dumps([path, st.st_size, int(st.st_mtime), fp["ptxdiff"], fp["source"]])


def _key(maker: str, packed: str) -> str:
    return hashlib.sha256(f"{maker}\0{packed}".encode()).hexdigest()


def _run(todo: list[str], jobs: int, unsandboxed: bool) -> list[Listing]:
    """`disassemble` sealed, or here where the user turned the sandbox off; SandboxError where
    the sandbox cannot be had or the worker failed."""
    if unsandboxed:
        return disassemble(todo, jobs)
    why = probe.unavailable()
    if why:
        raise SandboxError(f"cannot sandbox nvdisasm: {why}")
    from ptxdiff.compile.pool import sandboxed_call
    _, result = sandboxed_call(disassemble, (todo, jobs), timeout=60 + CALL_S_PER_CUBIN * len(todo) / max(1, jobs))
    if not isinstance(result, list):
        raise SandboxError(f"the sealed nvdisasm worker failed: {result}")
    return result


def listings(packed: Collection[str], cache_root: Path | None, jobs: int, unsandboxed: bool = False,
             progress: Callable[[str], None] | None = None) -> Found:
    """The normalised SASS of each packed cubin in `packed`: from the store under `cache_root`
    (None: none is read or kept), the rest disassembled now and stored."""
    wanted = list(dict.fromkeys(packed))
    if not wanted:
        return Found()
    try:
        maker = _maker()
    except (ToolError, OSError) as e:
        return Found(error=f"nvdisasm not found: {e}")
    kept = store(cache_root) if cache_root is not None else None
    texts: dict[str, str] = {}
    for p in wanted:
        hit = kept.get(_key(maker, p)) if kept is not None else None
        if isinstance(hit, str):
            texts[p] = hit
    todo = [p for p in wanted if p not in texts]
    if not todo:
        return Found(texts)
    if progress is not None:   # ~0.5 s of CPU per cubin: a first page of many rows takes a while
        progress(f"disassembling {len(todo)} cubin{'s' if len(todo) > 1 else ''} for the page's SASS (stored after)")
    try:
        made = _run(todo, jobs, unsandboxed)
    except (SandboxError, EOFError, OSError) as e:
        return Found(texts, str(e) or type(e).__name__)
    errors = [m.error for m in made if m.text is None]
    for p, m in zip(todo, made):
        if m.text is not None:
            texts[p] = m.text
            if kept is not None:
                kept.put(_key(maker, p), m.text)
    if kept is not None:
        kept.prune(SASS_STORE_MAX_MB * 2**20)
    return Found(texts, errors[0] if errors else None, len(todo))
