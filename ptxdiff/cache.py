"""Content-addressed results: effective source + kernel config + target + toolchain -> metrics.

Entries live under `<git dir>/ptxdiff/cache` (PTXDIFF_CACHE_DIR overrides), one gzip'd JSON file
each, written to a temporary name and renamed into place so two processes never see half a file.
The folder is bounded (PTXDIFF_CACHE_MAX_MB, default 512): after a write, the least recently
used entries are deleted until it fits (once per run, not per write); `ptxdiff cache prune` does the same on demand.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tempfile
from pathlib import Path

DEFAULT_MAX_MB = 512


def cache_dir(git_dir: str) -> Path:
    return Path(os.environ.get("PTXDIFF_CACHE_DIR") or os.path.join(git_dir, "ptxdiff", "cache"))


def make_key(**parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class Cache:
    def __init__(self, root: Path, max_bytes: int | None = None):
        self.root = root
        env = os.environ.get("PTXDIFF_CACHE_MAX_MB")
        self.max_bytes = max_bytes if max_bytes is not None else int(float(env or DEFAULT_MAX_MB) * 2**20)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json.gz"

    def get(self, key: str):
        path = self._path(key)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                value = json.load(f)
        except (OSError, ValueError, EOFError):
            return None
        try:
            os.utime(path)  # recency for pruning
        except OSError:
            pass
        return value

    def put(self, key: str, value) -> None:
        path = self._path(key)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as f:
                f.write(json.dumps(value).encode())
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
