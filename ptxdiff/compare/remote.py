"""A shared tier behind the local results cache: CI compiles once, every clone reads.

Configured by the user or CI only, never by a repository (whoever writes the remote decides
what its readers' reports say): `PTXDIFF_REMOTE_CACHE=URL`, else `git config ptxdiff.remoteCache
URL` at the user's level (`git -c`, global, XDG, system; read by user_settings.py). It is read-only
unless `PTXDIFF_REMOTE_CACHE_WRITE=1` / `git config ptxdiff.remoteCacheWrite true` (CI); an
`http(s)://` remote is always read-only. A repository's `remote_cache` only earns a suggestion.

A remote entry is byte for byte a local one (store.py's envelope, `<key[:2]>/<key>.json.gz`),
so there is one format: a read fetches the bytes, checks them as `Store.get` does (gzip,
envelope format, the key inside, `records.valid_results`), writes them to the local store and uses them;
anything else is a miss. The key is the engine's, whose toolchain part (`toolchain_id`) is made
portable here: the content of ptxdiff's modules and of ptxas/cuobjdump instead of their paths
and mtimes, which differ between machines; triton's version, Python's X.Y and the metric version
as they are. An entry from another toolchain therefore has another key, and one stored under a
wrong name fails the key check.

Trust (docs/ci.md): an entry's hashes say what it was built from, never what was measured, so
whoever writes an entry decides what its readers say. A job holding the signing secret
(`PTXDIFF_REMOTE_CACHE_SECRET`, a protected branch's) writes the trusted tier, the top of the URL,
each entry with its HMAC beside it (`<key>.json.gz.sig`), and reads only entries whose HMAC checks
out; any other writer (a pull request's job) writes `untrusted/<namespace>/`, which nothing reads.
A reader without the secret reads the top and relies on the store's permissions.

Reads happen before any compile, concurrently (daemon threads: a hung request cannot hold the
process at exit), within one deadline (`PTXDIFF_REMOTE_TIMEOUT`, default 3 s); writes of what a
run compiled come after its compiles, bounded the same way. A remote that fails, is slow or is
unreachable costs at most that deadline once: the run goes on with local compiles and says so
in one line, never an error, never a hang under `git diff`.

fsspec, not obstore: one pure-Python API, no dependency of its own (and torch already pulls it
in), for every backend a team has: `file://` on a shared disk in the base install, `s3://` with
s3fs, `gs://` with gcsfs, `https://` with aiohttp, credentials found where those libraries
always look. obstore's speed is for large objects and many requests; an entry is a few KB and a
run reads tens of them, so the network's latency, not the client, decides. fsspec is imported
only when a remote is configured.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import platform
import re
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ptxdiff import PACKAGE_DIR, binaries, user_settings
from ptxdiff.fastio import read, replace_file
from ptxdiff.repo_config import Config
from ptxdiff.store import Store

THREADS = 16
MAX_PLAIN = 64 << 20        # a decompressed entry past this is no entry of ours (a gzip bomb is a miss)
READ_ONLY = ("http://", "https://")
EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "http": "http", "https": "http"}


def shown(url: str) -> str:
    """The URL as messages print it: no user:password@, no query (a signed URL's signature)."""
    return re.sub(r"^([a-z0-9+.-]+://)[^/@]*@", r"\1", url, flags=re.I).split("?", 1)[0]


UNTRUSTED = "untrusted"      # the folder untrusted writers' namespaces live in; no run reads it
SIGNATURE = ".sig"          # beside a trusted entry: its HMAC, by the secret only trusted jobs hold


@dataclass(frozen=True)
class Setting:
    url: str
    write: bool
    timeout: float
    origin: str                     # where it was set, as the user would look for it
    secret: str | None = field(default=None, repr=False)   # PTXDIFF_REMOTE_CACHE_SECRET: a trusted job
    namespace: str | None = None    # PTXDIFF_REMOTE_CACHE_NAMESPACE: where an untrusted job writes

    @property
    def mode(self) -> str:
        """`read-only`, and where it matters whose entries this job writes and reads (doctor's line)."""
        if self.trusted:
            return f"{'read-write' if self.write else 'read-only'}, trusted: reads signed entries only"
        return f"read-write into {self.folder}, which no run reads" if self.write else "read-only"

    @property
    def trusted(self) -> bool:
        """A job that holds the signing secret (a protected branch's): it writes the trusted tier,
        signed, and reads only entries whose signature checks out."""
        return bool(self.secret)

    @property
    def folder(self) -> str:
        """Where this job's writes go, under the URL: the trusted tier (the top) for a trusted job,
        `untrusted/<namespace>/` for any other (a pull request's job)."""
        if self.trusted:
            return ""
        name = re.sub(r"[^A-Za-z0-9._-]", "-", self.namespace or "")[:64].strip(".") or "unnamed"
        return f"{UNTRUSTED}/{name}/"


def signature(secret: str, key: str, data: bytes) -> str:
    """The HMAC-SHA256 of an entry's bytes and the key it is stored under."""
    return hmac.new(secret.encode(), key.encode() + b"\0" + data, hashlib.sha256).hexdigest()


def setting() -> Setting | None:
    """The user's remote cache, or None: the environment first (CI), then the user's git config
    (user_settings.py reads both)."""
    user = user_settings.load()
    url = user.remote_cache
    if url is None:
        return None
    return Setting(url, user.remote_write and not url.lower().startswith(READ_ONLY), user.remote_timeout,
                   user.remote_from, user.remote_secret, user.remote_namespace)


def suggestion(cfg: Config) -> list[str]:
    """The repository's `remote_cache` names a URL: one line on how to use it, never used as is
    (for a user without a remote of their own)."""
    if not cfg.remote_cache:
        return []
    return [f"{cfg.source} suggests a shared compile cache; to read it: "
            f"git config --global {user_settings.GIT_REMOTE} {cfg.remote_cache}"]


# -- the portable key ------------------------------------------------------------------------

MEMO = "toolchain-ids.json"     # beside the local entries: stat stamp -> content digest


def toolchain_id(root: Path) -> dict[str, str]:
    """`binaries.fingerprint()` as every machine with the same toolchain computes it: the
    stat-based parts (ptxdiff's modules; ptxas, cuobjdump by path, size and mtime) become digests
    of the content, Python's version its X.Y. Digests are remembered by stamp under `root`, so
    the ~0.15 s of hashing is paid once per toolchain, not per run."""
    fp = dict(binaries.fingerprint())
    memo_path = root / MEMO
    try:
        memo = json.loads(read(str(memo_path)) or b"{}")
    except ValueError:
        memo = {}
    memo = memo if isinstance(memo, dict) else {}
    known = len(memo)
    parts: dict[str, tuple[list[str], str | None]] = {"source": (binaries.source_files(), PACKAGE_DIR)}
    for name in binaries.TOOLS:
        if name in fp and fp[name] != "missing":
            parts[name] = ([fp[name].rsplit(":", 2)[0]], None)   # the stamp is path:size:mtime
    for part, (paths, relative_to) in parts.items():
        stamp = fp[part]
        if not isinstance(memo.get(stamp), str):
            memo[stamp] = _digest(paths, relative_to)
        fp[part] = memo[stamp]
    fp["python"] = ".".join(platform.python_version_tuple()[:2])
    fp["machine"] = platform.machine()
    if len(memo) != known:
        try:
            root.mkdir(parents=True, exist_ok=True)
            replace_file(str(memo_path), json.dumps(dict(list(memo.items())[-32:])).encode())
        except OSError:
            pass
    return fp


def _digest(paths: list[str], relative_to: str | None) -> str:
    h = hashlib.sha256()
    for path in paths:
        name = os.path.relpath(path, relative_to) if relative_to else ""
        h.update(name.encode() + b"\0")
        try:
            one = hashlib.sha256()
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    one.update(chunk)
            h.update(one.digest())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()[:32]


# -- the remote ------------------------------------------------------------------------------

DENIED = "denied"
UNSIGNED = "unsigned"   # an entry a trusted job may not read: no signature of a trusted writer


def _denied(e: BaseException) -> bool:
    """Refused rather than failed: s3fs and gcsfs raise PermissionError, the HTTP backend a
    response error with status 401 or 403."""
    return isinstance(e, PermissionError) or getattr(e, "status", None) in (401, 403)


def _why(e: BaseException) -> str:
    if isinstance(e, ImportError):
        return str(e).splitlines()[0] if str(e) else "a package is missing"
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:160]}" if text else type(e).__name__


def bounded(items: list[Any], work: Callable[..., Any], timeout: float) \
        -> tuple[dict[Any, Any], BaseException | None, bool]:
    """`work(item)` for every item on daemon threads, until all are done, one fails, or `timeout`
    seconds pass. Returns (item -> result of those done, the first failure, whether all finished
    in time). What finishes later is dropped: the caller has moved on."""
    results: dict[Any, Any] = {}
    failures: list[BaseException] = []
    todo = list(reversed(items))
    lock, done = threading.Lock(), threading.Event()
    state = {"left": len(items), "closed": False}

    def worker() -> None:
        while True:
            with lock:
                if state["closed"] or failures or not todo:
                    return
                item = todo.pop()
            try:
                out, err = work(item), None
            except Exception as e:
                out, err = None, e
            with lock:
                if state["closed"]:
                    return
                if err is None:
                    results[item] = out
                else:
                    failures.append(err)
                state["left"] -= 1
                if not state["left"] or failures:
                    done.set()

    if items:
        for _ in range(min(THREADS, len(items))):
            threading.Thread(target=worker, daemon=True, name="ptxdiff-remote").start()
        done.wait(timeout)
    with lock:
        state["closed"] = True
        return dict(results), (failures[0] if failures else None), not state["left"]


def _publish(path: str, data: bytes) -> None:
    """A shared disk: all or nothing, as the local store writes, but readable by the team (the
    user's umask decides, where the local store keeps its entries to the user)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    replace_file(path, data, mode=0o666)


class Remote:
    """One process's use of the remote: fetches, staged writes, and the one line to report."""

    def __init__(self, setting: Setting, store: Store):
        self.setting = setting
        self.store = store
        self.url = shown(setting.url)
        self.down: str | None = None          # why reads stopped: the run goes on without the remote
        self.no_writes: str | None = None     # why writes stopped
        self._fs = None
        self._root = ""
        self._open_lock = threading.Lock()
        self._staged: dict[str, object] = {}
        self._lines: list[str] = []

    def _open(self) -> tuple[Any, str]:   # fsspec is untyped
        with self._open_lock:
            if self._fs is None:
                scheme = self.setting.url.split("://", 1)[0].lower() if "://" in self.setting.url else "file"
                try:
                    from fsspec.core import url_to_fs
                except ImportError:
                    raise ImportError("fsspec is not installed: pip install fsspec") from None
                try:
                    # a fresh instance: fsspec's cache would keep a client made for another endpoint
                    self._fs, self._root = url_to_fs(self.setting.url, skip_instance_cache=True)
                except ImportError as e:
                    extra = EXTRAS.get(scheme)
                    raise ImportError(f"{scheme}:// needs a package: pip install 'ptxdiff[{extra}]'" if extra
                                      else _why(e)) from None
            return self._fs, self._root.rstrip("/")

    def path(self, key: str, folder: str = "") -> str:
        """An entry's path: in the trusted tier (the top), or under `folder` (an untrusted namespace)."""
        return f"{self._root.rstrip('/')}/{folder}{key[:2]}/{key}{self.store.suffix}"

    def _local(self) -> bool:
        return "file" in (getattr(self._fs, "protocol", ()) or ())

    # -- reading ----------------------------------------------------------------------------
    def decode(self, key: str, data: bytes) -> object | None:
        """The value in an entry's bytes, checked as `Store.get` checks a file; None for anything
        else (truncated, not gzip, too big, another key or format, a value of the wrong shape)."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            text = d.decompress(data, MAX_PLAIN)
        except zlib.error:
            return None
        if not d.eof or d.unconsumed_tail or d.unused_data:
            return None
        try:
            entry = json.loads(text)
        except (ValueError, RecursionError):   # a stored entry nested past the parser's bound: a miss
            return None
        return entry["value"] if self.store.accepts(key, entry) else None

    def _get(self, key: str) -> tuple[bytes, object] | str | None:
        """(bytes, value) for a good entry; None for none; DENIED where the store refused it."""
        fs, _ = self._open()
        try:
            data = fs.cat_file(self.path(key))
        except FileNotFoundError:
            return None
        except Exception as e:
            if _denied(e):   # S3 answers 403 for a missing key to a reader who may not list
                return DENIED
            raise
        value = self.decode(key, data) if isinstance(data, bytes) else None
        if value is not None and self.setting.secret and not self._signed(fs, key, data):
            return UNSIGNED
        return (data, value) if value is not None else None

    def _signed(self, fs: Any, key: str, data: bytes) -> bool:
        """A trusted job reads an entry only with the signature of a trusted writer beside it: a
        writer without the secret (a pull request's job, or anyone with the bucket's credentials)
        cannot make one for what it stores."""
        try:
            said = fs.cat_file(self.path(key) + SIGNATURE)
        except Exception:   # none, or refused: unsigned
            return False
        secret = self.setting.secret or ""
        return isinstance(said, bytes) and hmac.compare_digest(said.strip(), signature(secret, key, data).encode())

    def fetch(self, keys: list[str]) -> dict[str, object]:
        """The checked values the remote has for `keys`, each also written to the local store.
        A failure or the deadline stops the remote for this process, with one line; so does
        being refused every entry asked (wrong credentials, or a reader who may not list)."""
        keys = list(dict.fromkeys(keys))
        if self.down or not keys:
            return {}
        got, failure, finished = bounded(keys, self._get, self.setting.timeout)
        if failure is not None or not finished:
            self.down = _why(failure) if failure is not None else \
                f"no answer within {self.setting.timeout:g} s ({user_settings.REMOTE_TIMEOUT})"
        elif all(hit == DENIED for hit in got.values()):
            self.down = f"access denied to all {len(keys)} entries asked (a reader needs to read and to list)"
        if self.down:
            self._lines.append(f"remote cache {self.url}: {self.down}; compiled here instead")
        unsigned = sum(1 for hit in got.values() if hit == UNSIGNED)
        if unsigned:
            self._lines.append(f"remote cache {self.url}: {unsigned} of {len(keys)} entries not signed by a trusted "
                               f"writer ({user_settings.REMOTE_SECRET}): not read, compiled here instead")
        out = {}
        for key, hit in got.items():
            if isinstance(hit, tuple):
                self.store.write(key, hit[0])
                out[key] = hit[1]
        return out

    # -- writing ----------------------------------------------------------------------------
    def stage(self, key: str, value: object) -> None:
        """A result compiled here, for `push` (read-write remotes only)."""
        if self.setting.write:
            self._staged[key] = value

    def _put(self, key: str) -> None:
        fs, _ = self._open()
        data = self.store.encode(key, self._staged[key])
        path = self.path(key, self.setting.folder)
        signed = [(path + SIGNATURE, signature(self.setting.secret, key, data).encode())] if self.setting.secret else []
        for where, what in ((path, data), *signed):   # the entry, then its signature: never a signed half
            if self._local():
                _publish(where, what)
            else:
                fs.pipe_file(where, what)

    def push(self) -> None:
        """Write what was staged, bounded by the timeout; a failure stops writes, with one line."""
        keys = list(self._staged)
        if not keys or self.down or self.no_writes:
            self._staged.clear()
            return
        got, failure, finished = bounded(keys, self._put, self.setting.timeout)
        self._staged.clear()
        if failure is not None or not finished:
            self.no_writes = _why(failure) if failure is not None else \
                f"no answer within {self.setting.timeout:g} s ({user_settings.REMOTE_TIMEOUT})"
            self._lines.append(f"remote cache {self.url}: stored {len(got)} of {len(keys)} results ({self.no_writes})")

    def lines(self) -> list[str]:
        """What happened since the last call, in one line at most (for the report's messages)."""
        out, self._lines = self._lines, []
        return ["; ".join(out)] if out else []

    # -- doctor -----------------------------------------------------------------------------
    def probe(self) -> tuple[bool, str]:
        """Can the remote be reached (within the timeout)? Reads only: nothing is written."""
        start = time.monotonic()

        def look(_: int) -> bool:
            fs, root = self._open()
            try:
                fs.info(root)
                return True
            except FileNotFoundError:
                return False

        got, failure, finished = bounded([0], look, self.setting.timeout)
        took = f"{time.monotonic() - start:.2f} s"
        if failure is not None:
            return False, f"unreachable ({_why(failure)})"
        if not finished:
            return False, f"no answer within {self.setting.timeout:g} s ({user_settings.REMOTE_TIMEOUT})"
        return True, f"reachable in {took}" + ("" if got.get(0) else "; nothing there yet (a new cache, or a wrong path)")


def configured(store: Store | None) -> Remote | None:
    """The remote tier for a local store, when the user set one."""
    found = setting() if store is not None else None
    return Remote(found, store) if found is not None and store is not None else None
