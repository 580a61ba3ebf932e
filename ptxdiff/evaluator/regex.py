"""`re` as host code reaches it on the way to a kernel's constants (a package parsing its own
version string: `re.match(r"(\\d+)\\.(\\d+)", torch.__version__)`).

Only text in, text or a match record out; patterns and subjects are bounded, so a repository
cannot spend the worker's time here. Python's `re` backtracks: a repeated group that itself
repeats or alternates (`(a+)+$`, `(a|aa)+$`, `(.*a){20}`) takes exponential time, a run of
repetitions over the same text (`a*a*a*a*b`) polynomial time of high degree. So a pattern of the
first shapes, or with a backreference, is refused before it runs (shape_error), and every match
runs under a bound on CPU time (MAX_SECONDS, a virtual-time timer: `re` checks for signals while
it backtracks); past it the row fails with a message that says so. Match and pattern objects are
records (`Props`) whose methods are partial applications of the calls below.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ptxdiff.evaluator.values import External, Partial, Props, Raised, Refused

T = TypeVar("T")

MAX_PATTERN = 500
MAX_SUBJECT = 10_000
FUNCTIONS = ("search", "match", "fullmatch", "sub", "subn", "findall", "split", "compile", "escape")
MATCH_METHODS = ("group", "groups", "groupdict", "start", "end", "span")
MAX_SECONDS = 0.5   # CPU time of one match: a real pattern on 10,000 characters takes under a millisecond
_BRACES = re.compile(r"\{(\d*)(,?)(\d*)\}")


def _pattern(value: object) -> str:
    if not isinstance(value, str):
        raise Refused("a regular expression that is not text")
    if len(value) > MAX_PATTERN:
        raise Refused(f"a regular expression over {MAX_PATTERN} characters")
    shape = shape_error(value)
    if shape:
        raise Refused(f"a regular expression that can backtrack for ever ({shape}): {value[:60]!r}")
    return value


def shape_error(pattern: str) -> str | None:
    """What makes a pattern backtrack exponentially, or None: a group that repeats (`+`, `*`,
    `{2,}`) holding a repetition or an alternation at any depth (`(a+)+`, `(a|aa)+`, `((a?)b)*`,
    `(.*a){20}`), or a backreference. It errs on the side of refusing (`(\\.\\d+)*` is refused)."""
    frames = [[False, False]]   # per open group: holds a repetition, holds an alternation
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            if pattern[i + 1:i + 2] in tuple("123456789"):
                return "a backreference"
            i += 2
        elif ch == "[":
            i = _class_end(pattern, i)
        elif ch == "(":
            if pattern.startswith(("(?P=", "(?("), i):
                return "a backreference"
            if pattern.startswith("(?#", i):
                close = pattern.find(")", i)
                i = n if close < 0 else close + 1
                continue
            frames.append([False, False])
            i = _group_body(pattern, i)
        elif ch == ")":
            inner = frames.pop() if len(frames) > 1 else [False, False]
            size, many = _quantifier(pattern, i + 1)
            if many and (inner[0] or inner[1]):
                return "nested repetition" if inner[0] else "a repeated alternation"
            frames[-1][0] |= inner[0] or size > 0
            frames[-1][1] |= inner[1]
            i += 1 + size
        else:
            size, _ = _quantifier(pattern, i)
            if ch == "|":
                frames[-1][1] = True
            elif size:
                frames[-1][0] = True
                i += size - 1
            i += 1
    return None


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that opens at `i` (`[]a]`, `[^\\]]` included)."""
    j = i + 1
    j += pattern[j:j + 1] == "^"
    j += pattern[j:j + 1] == "]"
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _group_body(pattern: str, i: int) -> int:
    """The index where the body of the group opening at `i` starts: past `(?:`, `(?P<name>`,
    `(?<=`, `(?i:` and the like, whose `?` is no repetition."""
    j = i + 1
    if pattern[j:j + 1] != "?":
        return j
    j += 1
    if pattern.startswith("P<", j) or pattern.startswith("<", j) and pattern[j + 1:j + 2] not in ("=", "!"):
        close = pattern.find(">", j)
        return len(pattern) if close < 0 else close + 1
    if pattern[j:j + 1] in (":", "=", "!", ">"):
        return j + 1
    if pattern[j:j + 1] == "<":
        return j + 2
    while j < len(pattern) and pattern[j] in "aiLmsux-":
        j += 1
    return j + (pattern[j:j + 1] == ":")


def _quantifier(pattern: str, i: int) -> tuple[int, bool]:
    """(length, repeats more than once) of the quantifier at `i` (with a lazy `?` or possessive
    `+` after it), or (0, False) when there is none there (a `{` that is no quantifier)."""
    ch = pattern[i:i + 1]
    if ch in ("*", "+", "?"):
        size, many = 1, ch != "?"
    else:
        m = _BRACES.match(pattern, i)
        if not m or not (m.group(1) or m.group(3)):
            return 0, False
        low, comma, high = m.groups()
        size = m.end() - i
        many = bool(comma and (not high or int(high) >= 2) or not comma and int(low) >= 2)
    return size + (pattern[i + size:i + size + 1] in ("?", "+")), many


class _PastBound(Refused):
    """A match that ran past MAX_SECONDS of CPU time (raised by the timer's handler)."""


def _bounded(run: Callable[[], T]) -> T:
    """run() under a bound of MAX_SECONDS of CPU time: a virtual-time timer whose handler
    raises, which `re` lets through while it backtracks. Off the main thread, where no signal
    handler can be set, the shape check alone holds."""
    if threading.current_thread() is not threading.main_thread():
        return run()
    armed = [True]

    def stop(signum: int, frame: object) -> None:
        if armed[0]:
            armed[0] = False
            raise _PastBound(f"a regular expression that ran past {MAX_SECONDS} s of CPU time (it backtracks)")

    before = signal.signal(signal.SIGVTALRM, stop)
    try:
        signal.setitimer(signal.ITIMER_VIRTUAL, MAX_SECONDS)
        return run()
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, before if before is not None else signal.SIG_DFL)


def _subject(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_SUBJECT:
        raise Refused(f"matching something that is not text of at most {MAX_SUBJECT} characters")
    return value


def _flags(kwargs: dict[str, object], extra: list[object]) -> int:
    flags = kwargs.pop("flags", extra[0] if extra else 0)
    if not isinstance(flags, int) or kwargs:
        raise Refused("re arguments other than a pattern, text and flags")
    return flags


def _match_record(m: re.Match[str] | None) -> Props | None:
    if m is None:
        return None
    parts = ((m.group(0), *m.groups()), m.span(), m.groupdict(), tuple(m.span(i) for i in range(len(m.groups()) + 1)))
    values: dict[str, object] = {name: Partial(External(f"re.Match.{name}"), parts) for name in MATCH_METHODS}
    values.update(string=m.string, pos=m.pos, endpos=m.endpos, lastindex=m.lastindex)
    return Props("re.Match", values)


def match_method(name: str, args: list[Any]) -> Any:
    """`m.group(1)`, `m.groups()`, `m.span()`: args are the record's parts, then the caller's."""
    groups, _span, named, spans, *rest = args
    try:
        if name == "group":
            picks = [named[i] if isinstance(i, str) else groups[i] for i in (rest or [0])]
            return picks[0] if len(picks) == 1 else tuple(picks)
        if name == "groups":
            default = rest[0] if rest else None
            return tuple(default if g is None else g for g in groups[1:])
        if name == "groupdict":
            return dict(named)
        index = rest[0] if rest else 0
        start, end = spans[index]
        return {"start": start, "end": end, "span": (start, end)}[name]
    except (IndexError, KeyError, TypeError) as e:
        raise Raised("IndexError", f"no such group: {e}") from None


def call(name: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """`re.<name>(*args, **kwargs)` on bounded text."""
    kwargs = dict(kwargs)
    if name == "escape":
        return re.escape(_subject(args[0]))
    if name == "compile":
        pattern = _pattern(args[0])
        flags = _flags(kwargs, args[1:])
        record = {fn: Partial(External(f"re.{fn}"), (pattern,), {"flags": flags})
                  for fn in ("search", "match", "fullmatch", "sub", "subn", "findall", "split")}
        return Props("re.Pattern", {**record, "pattern": pattern, "flags": flags})
    pattern = _pattern(args[0])
    try:
        if name in ("sub", "subn"):
            repl, text = args[1], _subject(args[2])
            if not isinstance(repl, str):
                raise Refused("re.sub with a replacement that is not text")
            count = kwargs.pop("count", args[3] if len(args) > 3 else 0)
            flags = _flags(kwargs, list(args[4:]))
            out = _bounded(lambda: re.subn(pattern, repl, text, count=count, flags=flags))
            if len(out[0]) > MAX_SUBJECT:
                raise Refused(f"re.sub building text over {MAX_SUBJECT} characters")
            return out if name == "subn" else out[0]
        text = _subject(args[1])
        if name == "split":
            maxsplit = kwargs.pop("maxsplit", args[2] if len(args) > 2 else 0)
            split_flags = _flags(kwargs, list(args[3:]))
            return _bounded(lambda: re.split(pattern, text, maxsplit=maxsplit, flags=split_flags))
        flags = _flags(kwargs, list(args[2:]))
        if name == "findall":
            return _bounded(lambda: re.findall(pattern, text, flags))
        return _match_record(_bounded(lambda: getattr(re, name)(pattern, text, flags)))
    except re.error as e:
        raise Raised("re.error", str(e)) from None
