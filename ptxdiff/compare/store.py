"""Content-addressed results: effective source + kernel config + target + toolchain -> metrics.

Entries live under `<git dir>/ptxdiff/cache` (PTXDIFF_CACHE_DIR overrides), one gzip'd JSON file
each, written to a temporary name and renamed into place so two processes never see half a file.
The folder is bounded (PTXDIFF_CACHE_MAX_MB, default 512): after a write, the least recently
used entries are deleted until it fits (once per run, not per write); `ptxdiff cache prune` does the same on demand.

A file is trusted only when it is what `put` wrote for that very key: an envelope naming the
format and the key, around a value of the right shape (`valid_results`). Anything else (a
truncated file, JSON of another shape, an entry copied under another name, an older format) is a
miss, so a damaged cache costs a compile, never a verdict.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ptxdiff.compare.verdict import NUMERIC

DEFAULT_MAX_MB = 512
FORMAT = 1   # bump when the stored value changes shape: older entries then read as misses


def cache_dir(git_dir: str) -> Path:
    return Path(os.environ.get("PTXDIFF_CACHE_DIR") or os.path.join(git_dir, "ptxdiff", "cache"))


def make_key(**parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _count(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def valid_results(value) -> bool:
    """The engine's entry for one kernel x target: a non-empty list with one result per spec,
    each either measured (every number the verdicts read, the opcode histogram, the normalised
    PTX) or failed with its error text."""
    if not isinstance(value, list) or not value:
        return False
    for r in value:
        if not isinstance(r, dict) or not isinstance(r.get("label"), str):
            return False
        if r.get("key") is not None and not isinstance(r["key"], str):
            return False
        if r.get("error") is not None:
            if not isinstance(r["error"], str) or not r["error"]:
                return False
            continue
        metrics = r.get("metrics")
        if not isinstance(metrics, dict) or not isinstance(r.get("ptx"), str):
            return False
        if not all(_count(metrics.get(k)) for k in NUMERIC):
            return False
        opcodes = metrics.get("ptx_opcodes")
        if not isinstance(opcodes, dict) or not all(isinstance(k, str) and _count(v) for k, v in opcodes.items()):
            return False
    return True


@dataclass(frozen=True)
class Cleared:
    removed: int
    failed: tuple[tuple[str, str], ...]    # (path, why) for each entry that is still there


class Cache:
    def __init__(self, root: Path, max_bytes: int | None = None,
                 valid: Callable[[object], bool] = valid_results):
        self.root = root
        self.valid = valid
        env = os.environ.get("PTXDIFF_CACHE_MAX_MB")
        self.max_bytes = max_bytes if max_bytes is not None else int(float(env or DEFAULT_MAX_MB) * 2**20)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json.gz"

    def get(self, key: str):
        """The value stored for `key`, or None when there is none or it cannot be trusted."""
        path = self._path(key)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError, EOFError):
            return None
        if not (isinstance(entry, dict) and entry.get("format") == FORMAT and entry.get("key") == key
                and "value" in entry and self.valid(entry["value"])):
            return None
        try:
            os.utime(path)  # recency for pruning
        except OSError:
            pass
        return entry["value"]

    def put(self, key: str, value) -> None:
        path = self._path(key)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
                f.write(json.dumps({"format": FORMAT, "key": key, "value": value}).encode())
            os.replace(tmp, path)
        except OSError:
            if tmp is not None:  # never leave a half-written temp file behind (prune cannot see it)
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
            # a cache that cannot be written only costs time

    def entries(self) -> list[tuple[float, int, Path]]:
        out = []
        for p in self.root.glob("*/*.json.gz"):
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, p))
        return sorted(out)

    def prune(self, max_bytes: int | None = None) -> tuple[int, int]:
        """Delete least recently used entries until the folder fits; returns (removed, bytes left)."""
        limit = self.max_bytes if max_bytes is None else max_bytes
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        removed = 0
        for _, size, path in entries:
            if total <= limit:
                break
            try:
                path.unlink()
                total -= size
                removed += 1
            except OSError:
                pass
        return removed, total

    def clear(self) -> Cleared:
        """Delete every entry (and stray temp files); says which could not be deleted and why.
        Only files of ours are touched: PTXDIFF_CACHE_DIR may name a folder that holds others."""
        if not self.root.exists():
            return Cleared(0, ())
        removed, failed = 0, []
        try:
            # two-letter folders hold results; discovery/ holds stored kernel discoveries per tree
            folders = [d for d in self.root.iterdir() if (len(d.name) == 2 or d.name == "discovery") and d.is_dir()]
        except OSError as e:
            return Cleared(0, ((str(self.root), e.strerror or str(e)),))
        for folder in folders:
            try:
                names = list(folder.iterdir())
            except OSError as e:
                failed.append((str(folder), e.strerror or str(e)))
                continue
            for path in names:
                if not (path.name.endswith((".json.gz", ".disc.gz")) or path.name.startswith(".tmp-")):
                    continue
                try:
                    path.unlink()
                    removed += path.name.endswith(".json.gz")
                except OSError as e:
                    failed.append((str(path), e.strerror or str(e)))
            try:
                folder.rmdir()
            except OSError:
                pass  # not empty: what is left is listed above, or is not ours
        return Cleared(removed, tuple(failed))
