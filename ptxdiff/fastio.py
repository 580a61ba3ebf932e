"""File and process helpers for the diff driver's first call of a git command.

That call runs at the start of every `git diff`, where Python's start-up is most of the cost, so
it imports nothing costly: no subprocess (git runs through fork and exec; posix_spawn would also
wait for each child's exec, serialising the git runs started together), no hashlib (OpenSSL),
no dataclasses.
"""

from __future__ import annotations

import os
import stat
import threading

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence


MAX_CHILD_OUTPUT = 1 << 30   # bytes a spawned process may write to one file


def spawn(argv: Sequence[str | bytes], out: str | None = None, inp: str | None = None, err: str | None = None,
          env: dict[str, str] | None = None) -> int:
    args = [os.fsencode(a) for a in argv]
    path = args[0] if b"/" in args[0] else _which(args[0])
    environ = os.environ if env is None else env
    pid = os.fork()
    if pid == 0:  # the child: only redirections and the output bound, then exec
        try:
            import resource  # a runaway child (a git bug printing forever) is cut, not the disk filled
            _, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
            cap = MAX_CHILD_OUTPUT if hard == resource.RLIM_INFINITY else min(MAX_CHILD_OUTPUT, hard)
            resource.setrlimit(resource.RLIMIT_FSIZE, (cap, hard))
            for fd, name, flags in ((0, inp or os.devnull, os.O_RDONLY),
                                    (1, out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, err or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND)):
                new = os.open(name, flags, 0o600)
                os.dup2(new, fd)
                os.close(new)
            os.execve(path, args, environ)
        finally:
            os._exit(127)
    return pid


_FOUND: dict[bytes, bytes] = {}


def _which(name: bytes) -> bytes:
    if name not in _FOUND:
        _FOUND[name] = name
        for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
            full = os.path.join(os.fsencode(d or "."), name)
            if os.access(full, os.X_OK):
                _FOUND[name] = full
                break
    return _FOUND[name]


def wait(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


WORKTREE_MAX_BYTES = 64 << 20   # a work-tree file ptxdiff reads: 64x the bound on a module it parses


class NotRegular(OSError):
    """A work-tree path that is no plain file inside the work tree: a symlink on the way, a FIFO,
    a device, a directory, `..` or an absolute path; or one over WORKTREE_MAX_BYTES."""


def read_inside(top: str, path: str, limit: int = WORKTREE_MAX_BYTES) -> bytes:
    """A work-tree file's bytes, read by the rules git's own files are read by: each folder on
    the way opened without following a symlink, the file itself never a symlink, FIFO or device
    (opened non-blocking, checked on the open descriptor: no race between look and open), never
    outside `top`, at most `limit` bytes. Anything else raises NotRegular (or the OSError)."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise NotRegular(f"{path}: not a path inside the work tree")
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    # folders as O_PATH: a way to name what is below, no right to list them (the sandbox has none)
    folder = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY
    fd = os.open(top, folder | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            below = os.open(part, folder | nofollow, dir_fd=fd)
            os.close(fd)
            fd = below
        below = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | nofollow, dir_fd=fd)
        os.close(fd)
        fd = below
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(f"{path}: not a regular file in the work tree")
        if info.st_size > limit:
            raise NotRegular(f"{path}: {info.st_size / 2**20:.0f} MB, over the {limit >> 20} MB bound on a work-tree "
                             "file ptxdiff reads")
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise NotRegular(f"{path}: over the {limit >> 20} MB bound on a work-tree file ptxdiff reads")
        return b"".join(chunks)
    except OSError as e:
        if isinstance(e, NotRegular):
            raise
        # ELOOP: a symlink where a file or folder was expected; ENOTDIR: a file on the way
        raise NotRegular(f"{path}: not a regular file in the work tree ({e.strerror})") from None
    finally:
        os.close(fd)


def write(path: str, data: bytes, mode: int = 0o600) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, data) if len(data) < 1 << 20 else write_all(fd, data)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


TMP_SUFFIX = ".tmp"


def replace_file(path: str, data: bytes, mode: int = 0o600) -> None:
    """The one atomic write: readers see the old file or the new one, never a part of either,
    and a failure (disk full, an interrupt) leaves no temp file behind. `mode` before the umask
    (0o666: a shared folder the team reads); the temp name is per process and thread."""
    tmp = f"{path}.{os.getpid()}-{threading.get_ident()}{TMP_SUFFIX}"
    try:
        write(tmp, data, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def rmtree(path: str) -> None:
    try:
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                rmtree(entry.path)
            else:
                os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        pass


def sha256(data: bytes) -> str:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]  # CPython's own module, no stub
    except ImportError:  # Python >= 3.12
        from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest


def blob_id(data: bytes, length: int) -> str:
    """The id git gives these bytes as a blob (SHA-1, or SHA-256 for a sha256 repository)."""
    if length == 64:
        return sha256(b"blob %d\0" % len(data) + data)
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]  # CPython's own module, no stub
    except ImportError:  # pragma: no cover
        from hashlib import sha1
    digest: str = sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return digest


def tmp_path(name: str) -> str:
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ptxdiff-{os.getuid()}-{os.getpid()}-{name}")

