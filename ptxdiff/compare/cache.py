"""Content-addressed results: effective source + kernel config + target + toolchain -> metrics.

Entries live under `<git dir>/ptxdiff/cache` (PTXDIFF_CACHE_DIR overrides), one gzip'd JSON file
each in the one store of ptxdiff (store.py), so two processes never see half a file.
The folder is bounded (PTXDIFF_CACHE_MAX_MB, default 512): after a write, the least recently
used entries are deleted until it fits (once per run, not per write); `ptxdiff cache prune` does the same on demand.

A file is trusted only when it is what `put` wrote for that very key: an envelope naming the
format and the key, around a value of the right shape (a list of `records.SpecResult`'s JSON). Anything else (a
truncated file, JSON of another shape, an entry copied under another name, an older format) is a
miss, so a damaged cache costs a compile, never a verdict.

The key is not trusted either: each result of an entry carries the hash of what it was built
from (`source_hash`: the fingerprint of the closure the worker built, which it checked against
the kernel's, the kernel, the target and the spec), and a read serves an entry only when every
result's hash is the one of the kernel asked for (`served`). An entry stored under another
kernel's key, by a compile whose fingerprint did not name what it built or by hand, is a miss and
is compiled again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ptxdiff import user_settings
from ptxdiff.compare.spec_result import SpecResult, valid_results
from ptxdiff.discovery.memo import discoveries
from ptxdiff.store import Cleared, Store

DEFAULT_MAX_MB = 512
FORMAT = 8   # bump when the stored value changes shape or meaning: older entries then read as misses
# (3: no result depends on a clock: guessed sizes shrink by the cost rule, memory failures from a fresh worker;
# 4: a device function's harness unpacks its values, a name its module binds nowhere is the kernel's own error;
# 5: a block over triton's maximum numel is searched, a constant of triton's is its value, configs of AMD's options;
# 6: a param loaded from only in a branch the spec's constexprs do not take may be an int, an fp8 guess has others;
# 7: a device function's params named like its harness's locals (`mask`) no longer overwrite them;
# 8: a module global that is no constexpr fails in triton's own words, the kernel's own error, as do branches whose
# types the text fixes; a static_assert's relation asks a guess for the size it needs)


def cache_dir(git_dir: str) -> Path:
    """PTXDIFF_CACHE_DIR, else under the git dir."""
    return Path(user_settings.load().cache_dir or os.path.join(git_dir, "ptxdiff", "cache"))


def make_key(**parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def source_hash(fingerprint: str, kernel_id: str, target: int, key: object, spec: object) -> str:
    """The built source of one result: the closure handed to triton (its fingerprint), which
    kernel of it, the target and the spec it was compiled with (its key and values)."""
    said = json.dumps([kernel_id, target, key, spec], sort_keys=True, default=str)
    return hashlib.sha256(f"{fingerprint}\0{said}".encode()).hexdigest()


def stamped(results: list[SpecResult], fingerprint: str, kernel_id: str, target: int) -> list[dict[str, Any]]:
    """Results as an entry stores them (their JSON): each with the hash of its built source."""
    return [{**r.as_json(), "source": source_hash(fingerprint, kernel_id, target, r.key, r.spec and r.spec.as_json())}
            for r in results]


def served(value: object, fingerprint: str, kernel_id: str, target: int) -> list[SpecResult] | None:
    """An entry's results as records when every one is a valid result built from this kernel's
    source, else None: a miss."""
    if not isinstance(value, list) or not value:
        return None
    out = []
    for r in value:
        if not isinstance(r, dict) or r.get("source") != source_hash(fingerprint, kernel_id, target, r.get("key"),
                                                                     r.get("spec")):
            return None
        try:
            out.append(SpecResult.from_json(r))
        except ValueError:
            return None
    return out


class Cache(Store):
    """The compile results: one entry per kernel x target, bounded in bytes (least recently used
    go first), beside the stored discoveries (discovery/memo.py) and SASS listings
    (compile/listings.py) that `clear` forgets too."""

    def __init__(self, root: Path, max_bytes: int | None = None,
                 valid: Callable[[object], bool] = valid_results):
        super().__init__(root, ".json.gz", valid, FORMAT)
        if max_bytes is None:
            max_bytes = int((user_settings.load().cache_max_mb or DEFAULT_MAX_MB) * 2**20)
        self.max_bytes = max_bytes

    def prune(self, max_bytes: int | None = None, max_entries: int | None = None) -> tuple[int, int]:
        return super().prune(self.max_bytes if max_bytes is None else max_bytes, max_entries)

    def clear(self) -> Cleared:
        from ptxdiff.compile import listings  # only here: nothing else of the cache reads listings
        results, stored, sass = super().clear(), discoveries(self.root).clear(), listings.store(self.root).clear()
        return Cleared(results.removed, results.failed + stored.failed + sass.failed)
