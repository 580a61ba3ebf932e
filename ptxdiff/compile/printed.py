"""What a compile worker and the compilers it runs print, kept off the user's terminal.

Triton's warnings, MLIR's diagnostics and crash reproducers, LLVM's `LLVM ERROR: out of memory`,
ptxas's complaints: much of it is written by C++ straight to file descriptors 1 and 2, past
Python's `sys.stderr`. So a worker points both descriptors at a file of its private folder; each
request's share of that file goes back with its result, and the pool reads what a worker that
died wrote last. The file lies beside the worker's private folder, not in it: the sandbox removes
that folder the moment its worker dies. The first line that says what went wrong becomes the error; the rest is the log.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile

LOG_CHARS = 20000        # what is kept of one request's output (its end: where the error is)

# lines that say what went wrong, most telling first
_TELLING = (
    re.compile(r"LLVM ERROR: .+"),
    re.compile(r"\b(?:Allocation failed|out of memory|MemoryError|std::bad_alloc)\b.*", re.I),
    re.compile(r"(?:^|\S+: )error: .+"),
    re.compile(r"Assertion .+ failed.*|terminate called .+|Segmentation fault.*|Aborted.*"),
    re.compile(r".*\bPassManager::run failed\b.*"),
)
# lines that never say it: stack frames, crash banners, blank lines, bug-report requests
_NOISE = re.compile(r"^\s*(?:#\d+ 0x|Stack dump:|PLEASE submit|\d+\.\s+Program arguments:|"
                    r"Failure value returned from cantFail|UNREACHABLE executed|$)")


def path_for(home: str) -> str:
    """The file a worker whose private folder is `home` prints to."""
    return home.rstrip(os.sep) + ".printed"


_CAPTURED: list[int] = []   # this process's capture descriptor, once capture() ran


def capture(home: str) -> int:
    """Point this process's fd 1 and 2 at `path_for(home)` (appending); returns a descriptor that
    reads it back."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path_for(home), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    _CAPTURED[:] = [fd]
    return fd


def mark() -> int:
    """Where this process's capture ends now (0 where nothing is captured): `printed_after` reads
    what one compile printed from there (MLIR's diagnostics go to fd 2, past Python)."""
    if not _CAPTURED:
        return 0
    sys.stdout.flush()   # what Python printed before is not the compile's
    sys.stderr.flush()
    return os.fstat(_CAPTURED[0]).st_size


def printed_after(start: int) -> str:
    """What this process printed since `mark()` gave `start`; "" where nothing is captured."""
    return since(_CAPTURED[0], start)[0] if _CAPTURED else ""


def since(fd: int, start: int) -> tuple[str, int]:
    """What was printed from offset `start` on (its last LOG_CHARS), and the offset it ends at."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    end = os.fstat(fd).st_size
    first = max(start, end - LOG_CHARS)
    return os.pread(fd, end - first, first).decode("utf-8", "replace"), end


def read_tail(home: str, start: int) -> str:
    """What a worker (maybe dead) wrote to its file from offset `start` on; "" when there is none."""
    try:
        with open(path_for(home), "rb") as f:
            end = f.seek(0, os.SEEK_END)
            f.seek(max(start, end - LOG_CHARS))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def size(home: str) -> int:
    try:
        return os.path.getsize(path_for(home))
    except OSError:
        return 0


def telling_line(text: str, crashed: bool = False) -> str | None:
    """The first line of `text` that says what went wrong (an error, not a warning), trimmed; for
    a process that crashed, failing that, its first line that is not a crash banner."""
    lines = [line.strip() for line in text.splitlines() if not _NOISE.match(line)]
    for pattern in _TELLING:
        for line in lines:
            found = pattern.search(line)
            if found:
                return found.group(0).strip()[:300]
    return lines[0][:300] if crashed and lines else None


def attach(payload: object, text: str) -> object:
    """A compile result with what its compile printed: the telling line joins a failure's error
    (when the error does not say it already), everything goes first into its log."""
    if not text.strip() or not isinstance(payload, dict) or not ("error" in payload or "metrics" in payload):
        return payload
    out = dict(payload)
    if isinstance(out.get("error"), str):
        line = telling_line(text)
        if line and line not in out["error"]:
            out["error"] = f"{out['error']} ({line})"
    out["log"] = (text + str(out.get("log") or ""))[-LOG_CHARS:]
    return out


def without_temporary_names(text: str) -> str:
    """`text` with the worker's temporary folder and the random names of the files in it as
    fixed words (`$TMPDIR/tmpXXXXXXXX.ptx`): a failure reads the same in every run, at any --jobs."""
    folder = tempfile.gettempdir().rstrip("/")
    text = text.replace(folder + "/", "$TMPDIR/")
    return re.sub(r"\$TMPDIR/tmp[a-z0-9_]{8}", "$TMPDIR/tmpXXXXXXXX", text)
