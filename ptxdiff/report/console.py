"""Text for people that can never decide an exit status.

A reader that goes away early (`git push 2>&1 | head -1`, a closed terminal) ends the output,
not the command: the verdict is computed first and its exit code stands. A stream that failed is
pointed at /dev/null, so later writes and the interpreter's last flush succeed silently.
"""

from __future__ import annotations

import codecs
import os
import sys

PATH_ERRORS = "ptxdiff-path"


def _path_bytes(error: UnicodeError):
    """Encode error handler: a lone surrogate from a non-UTF-8 file name is written as `\\xNN`,
    the spelling `git.printable` uses; anything else as Python's backslashreplace would."""
    if isinstance(error, UnicodeEncodeError):
        text = error.object[error.start:error.end]
        return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF
                       else c.encode("ascii", "backslashreplace").decode("ascii") for c in text), error.end
    raise error


codecs.register_error(PATH_ERRORS, _path_bytes)


def for_people(*streams) -> None:
    """Make `streams` (default stdout and stderr) print any kernel id or path, never raise on one."""
    for stream in streams or (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors=PATH_ERRORS)
        except (AttributeError, ValueError, OSError):
            pass


def say(text: str, stream) -> bool:
    """Write and flush; False (and the stream silenced) when nobody reads it any more, or when
    there is no stream at all (Python started with that file descriptor closed)."""
    if stream is None:
        return False
    try:
        stream.write(text)
        stream.flush()
        return True
    except (OSError, ValueError):   # EPIPE, a reset connection, a closed file
        silence(stream)
        return False


def silence(stream) -> None:
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
