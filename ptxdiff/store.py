"""The one content-addressed store: values kept under a key as gzip'd JSON files.

Both the compile results (compare/cache.py) and the stored kernel discoveries
(discovery/memo.py) live in one. An entry is an envelope naming the format and the key around
the value, written all or nothing (`fastio.replace_file`); a file is trusted only when it is what
`put` wrote for that very key and the value passes the owner's check, so a truncated, foreign or
older entry is a miss: a damaged store costs work, never a wrong answer. Reads refresh the
entry's mtime, which is what `prune` keeps the newest of.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ptxdiff.fastio import TMP_SUFFIX, replace_file


@dataclass(frozen=True)
class Cleared:
    removed: int
    failed: tuple[tuple[str, str], ...]    # (path, why) for each entry that is still there


class Store:
    def __init__(self, root: Path, suffix: str, valid: Callable[[object], bool], format: int,
                 fan_out: bool = True):
        self.root = root
        self.suffix = suffix          # names the kind of entry: only such files are ever deleted
        self.valid = valid
        self.format = format          # bump when the value changes shape: older entries read as misses
        self.fan_out = fan_out        # key[:2] folders, for stores with many entries

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{self.suffix}" if self.fan_out else self.root / f"{key}{self.suffix}"

    def get(self, key: str) -> object | None:
        """The value stored for `key`, or None when there is none or it cannot be trusted."""
        path = self.path(key)
        try:
            with gzip.open(path, "rt", encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError, EOFError, RecursionError):
            return None
        if not self.accepts(key, entry):
            return None
        try:
            os.utime(path)  # recency for pruning
        except OSError:
            pass
        value: object = entry["value"]
        return value

    def accepts(self, key: str, entry: object) -> bool:
        """Is `entry` (a decoded file) what `put` writes for `key`, around a value that passes the check?"""
        return (isinstance(entry, dict) and entry.get("format") == self.format and entry.get("key") == key
                and "value" in entry and self.valid(entry["value"]))

    def encode(self, key: str, value: object) -> bytes:
        """The bytes of the entry `put` writes: the same value gives the same bytes (gzip mtime 0),
        so a copy elsewhere (compare/remote.py) is byte for byte a local entry."""
        return gzip.compress(json.dumps({"format": self.format, "key": key, "value": value}).encode(), mtime=0)

    def put(self, key: str, value: object) -> None:
        """Store `value`; a store that cannot be written only costs time, so failures are quiet."""
        self.write(key, self.encode(key, value))

    def write(self, key: str, data: bytes) -> None:
        """Store an entry's bytes as they are (checked by the caller), all or nothing; quiet on failure."""
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(str(path), data)
        except OSError:
            pass

    def _folders(self) -> list[Path]:
        if not self.fan_out:
            return [self.root] if self.root.is_dir() else []
        return [d for d in self.root.iterdir() if len(d.name) == 2 and d.is_dir()] if self.root.is_dir() else []

    def entries(self) -> list[tuple[float, int, Path]]:
        """(mtime, size, path) of every entry, oldest first."""
        out = []
        for p in self.root.glob(("*/*" if self.fan_out else "*") + self.suffix):
            try:
                st = p.stat()
            except OSError:
                continue
            out.append((st.st_mtime, st.st_size, p))
        return sorted(out)

    def prune(self, max_bytes: int | None = None, max_entries: int | None = None) -> tuple[int, int]:
        """Delete least recently used entries until the store fits; returns (removed, bytes left)."""
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        count, removed = len(entries), 0
        for _, size, path in entries:
            if (max_bytes is None or total <= max_bytes) and (max_entries is None or count <= max_entries):
                break
            try:
                path.unlink()
                total -= size
                count -= 1
                removed += 1
            except OSError:
                pass
        return removed, total

    def clear(self) -> Cleared:
        """Delete every entry (and stray temp files); says which could not be deleted and why.
        Only files of ours are touched: the root may be a folder that holds others."""
        removed, failed = 0, []
        try:
            folders = self._folders()
        except OSError as e:
            return Cleared(0, ((str(self.root), e.strerror or str(e)),))
        for folder in folders:
            try:
                names = list(folder.iterdir())
            except OSError as e:
                failed.append((str(folder), e.strerror or str(e)))
                continue
            for path in names:
                ours = path.name.endswith(self.suffix)
                if not (ours or (self.suffix in path.name and path.name.endswith(TMP_SUFFIX))):
                    continue
                try:
                    path.unlink()
                    removed += ours
                except OSError as e:
                    failed.append((str(path), e.strerror or str(e)))
            if self.fan_out:
                try:
                    folder.rmdir()
                except OSError:
                    pass  # not empty: what is left is listed above, or is not ours
        return Cleared(removed, tuple(failed))
