"""Text for people that can never decide an exit status.

A reader that goes away early (`git push 2>&1 | head -1`, a closed terminal) ends the output,
not the command: the verdict is computed first and its exit code stands. A stream that failed is
pointed at /dev/null, so later writes and the interpreter's last flush succeed silently.
"""

from __future__ import annotations

import codecs
import os
import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (the diff driver prints here)
if TYPE_CHECKING:
    from typing import TextIO

PATH_ERRORS = "ptxdiff-path"


def _path_bytes(error: UnicodeError) -> tuple[str, int]:
    """Encode error handler: a lone surrogate from a non-UTF-8 file name is written as `\\xNN`,
    the spelling `git.printable` uses; anything else as Python's backslashreplace would."""
    if isinstance(error, UnicodeEncodeError):
        text = error.object[error.start:error.end]
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF
                       else c.encode("ascii", "backslashreplace").decode("ascii") for c in text), error.end
    raise error


codecs.register_error(PATH_ERRORS, _path_bytes)


def for_people(*streams: TextIO) -> None:
    """Make `streams` (default stdout and stderr) print any kernel id or path, never raise on one."""
    for stream in streams or (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors=PATH_ERRORS)  # type: ignore[union-attr]  # TextIOWrapper's
        except (AttributeError, ValueError, OSError):
            pass


def say(text: str, stream: TextIO | None) -> bool:
    """Write and flush; False (and the stream silenced) when nobody reads it any more, or when
    there is no stream at all (Python started with that file descriptor closed). A live progress
    line is erased first: the text starts on a clean line."""
    if Status.shown and text:
        clear_status()
    return _write(text, stream)


def _write(text: str, stream: TextIO | None) -> bool:
    if stream is None:
        return False
    try:
        stream.write(text)
        stream.flush()
        return True
    except (OSError, ValueError):   # EPIPE, a reset connection, a closed file
        silence(stream)
        return False


def silence(stream: TextIO) -> None:
    """Point the stream's file descriptor at /dev/null (Python's advice for SIGPIPE)."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def wants_colour(stream: TextIO | None, when: str = "auto") -> bool:
    """--color=always|never decide; auto: colour for a terminal, unless NO_COLOR is set (non-empty,
    no-color.org) or TERM=dumb."""
    if when in ("always", "never"):
        return when == "always"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream is not None and stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def width(stream: TextIO | None = None) -> int | None:
    """Columns to lay text out in: COLUMNS when set, else the terminal's width when `stream`
    (default stdout) is one; None (no limit) for a file or a pipe, which keep whole lines."""
    import shutil
    if os.environ.get("COLUMNS", "").strip().isdigit():
        return max(1, int(os.environ["COLUMNS"]))
    stream = sys.stdout if stream is None else stream
    try:
        if stream is None or not stream.isatty():
            return None
        return os.get_terminal_size(stream.fileno()).columns or shutil.get_terminal_size().columns
    except (AttributeError, ValueError, OSError):
        return None


class Status:
    """Progress lines on stderr. On a terminal (`live`): one line, rewritten in place and erased
    by `clear`, so nothing is left above the output; elsewhere (a log): plain lines."""

    shown: list[Status] = []   # live lines on screen now, for `clear_all`

    def __init__(self, stream: TextIO | None, live: bool) -> None:
        self.stream, self.live = stream, live

    def __call__(self, line: str) -> None:
        if not self.live:
            say(line + "\n", self.stream)
            return
        _write("\r\x1b[K" + line[:max(10, (width(self.stream) or 80) - 1)], self.stream)
        if self not in Status.shown:
            Status.shown.append(self)

    def clear(self) -> None:
        if self in Status.shown:
            Status.shown.remove(self)
            _write("\r\x1b[K", self.stream)


def clear_status() -> None:
    """Erase every live progress line (before the output, and when a command ends)."""
    for status in list(Status.shown):
        status.clear()
