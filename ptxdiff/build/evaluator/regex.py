"""`re` as host code reaches it on the way to a kernel's constants (a package parsing its own
version string: `re.match(r"(\\d+)\\.(\\d+)", torch.__version__)`).

Only text in, text or a match record out; patterns and subjects are bounded, and a pattern
whose groups repeat a repetition (`(a+)+`, the shape of catastrophic backtracking) is refused,
so a repository cannot spend the worker's time here. Match and pattern objects are records
(`Props`) whose methods are partial applications of the calls below.
"""

from __future__ import annotations

import re

from ptxdiff.build.evaluator.values import External, Partial, Props, Raised, Refused

MAX_PATTERN = 500
MAX_SUBJECT = 10_000
FUNCTIONS = ("search", "match", "fullmatch", "sub", "subn", "findall", "split", "compile", "escape")
MATCH_METHODS = ("group", "groups", "groupdict", "start", "end", "span")
# a group holding a quantifier, itself quantified: `(a+)+`, `(\w*)*`, `(x|y+){2,}`
_NESTED_REPEAT = re.compile(r"\((?:[^()]|\\.)*[*+}](?:[^()]|\\.)*\)\s*[*+{]")


def _pattern(value: object) -> str:
    if not isinstance(value, str):
        raise Refused("a regular expression that is not text")
    if len(value) > MAX_PATTERN or _NESTED_REPEAT.search(value):
        raise Refused(f"a regular expression with nested repetition or over {MAX_PATTERN} characters")
    return value


def _subject(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_SUBJECT:
        raise Refused(f"matching something that is not text of at most {MAX_SUBJECT} characters")
    return value


def _flags(kwargs: dict, extra: list) -> int:
    flags = kwargs.pop("flags", extra[0] if extra else 0)
    if not isinstance(flags, int) or kwargs:
        raise Refused("re arguments other than a pattern, text and flags")
    return flags


def _match_record(m: re.Match | None) -> Props | None:
    if m is None:
        return None
    parts = ((m.group(0), *m.groups()), m.span(), m.groupdict(), tuple(m.span(i) for i in range(len(m.groups()) + 1)))
    values: dict = {name: Partial(External(f"re.Match.{name}"), parts) for name in MATCH_METHODS}
    values.update(string=m.string, pos=m.pos, endpos=m.endpos, lastindex=m.lastindex)
    return Props("re.Match", values)


def match_method(name: str, args: list):
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


def call(name: str, args: list, kwargs: dict):
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
            out = re.subn(pattern, repl, text, count=count, flags=flags)
            if len(out[0]) > MAX_SUBJECT:
                raise Refused(f"re.sub building text over {MAX_SUBJECT} characters")
            return out if name == "subn" else out[0]
        text = _subject(args[1])
        if name == "split":
            maxsplit = kwargs.pop("maxsplit", args[2] if len(args) > 2 else 0)
            return re.split(pattern, text, maxsplit=maxsplit, flags=_flags(kwargs, list(args[3:])))
        flags = _flags(kwargs, list(args[2:]))
        if name == "findall":
            return re.findall(pattern, text, flags)
        return _match_record(getattr(re, name)(pattern, text, flags))
    except re.error as e:
        raise Raised("re.error", str(e)) from None
