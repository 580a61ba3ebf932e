"""What an operation of the interpreted code would build, computed from its operands before it runs.

`check_size` (values.py) looks at a value once it exists; by then `'a'.ljust(10**10)`,
`(0).to_bytes(10**10)`, `f"{x:>10000000000}"` or `str([[0] * 100000] * 100000)` has already
asked for gigabytes. Every operation that can build much more than its operands hold (padding
widths, format widths and precisions, `%`, `str.format`, `join`, `replace`, `to_bytes`, growing
a container in place, `sum` of sequences, `round` and `pow` of ints, `math.comb`/`perm`/`prod`/
`lcm`, `itertools` results) is measured here first and refused with the bound it would pass.
Pure functions of plain values; each raises `Refused`, never builds the value.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ptxdiff.evaluator.values import MAX_INT_BITS, MAX_LEN, Constexpr, Refused, TritonConfig

MAX_CELLS = 10 * MAX_LEN   # elements of one itertools result, those of the tuples it holds counted
MAX_DIGITS = 5_000         # characters of a number read from text: past what MAX_INT_BITS can hold
_SIZED = (str, bytes, list, tuple, dict, set, frozenset, range)


def _too_wide(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > MAX_LEN


def check_width(value: object, what: str) -> None:
    """A padding width, a byte count: refused past MAX_LEN."""
    if _too_wide(value):
        raise Refused(f"{what} of {value} (more than {MAX_LEN})")


def text_size(value: object, limit: int = MAX_LEN) -> int:
    """About how many characters str() or repr() of a value makes (escapes aside), counted without
    making them; the count stops once it passes `limit`, so a value that holds itself many times
    over (`[[0] * 100000] * 100000`) costs at most `limit` steps."""
    if isinstance(value, str):
        return len(value)   # str() of a str is itself
    total = 0
    todo = [value]
    while todo and total <= limit:
        v = todo.pop()
        if isinstance(v, (str, bytes)):
            total += len(v) + 3
        elif isinstance(v, bool) or v is None:
            total += 5
        elif isinstance(v, int):
            total += v.bit_length() * 31 // 100 + 2
        elif isinstance(v, dict):
            total += 2 + 4 * len(v)
            if total <= limit:
                todo += [*v.keys(), *v.values()]
        elif isinstance(v, (list, tuple, set, frozenset)):
            total += 2 + 2 * len(v)
            if total <= limit:
                todo += list(v)
        elif isinstance(v, Constexpr):
            total += 12
            todo.append(v.value)
        elif isinstance(v, TritonConfig):
            total += 64
            todo += [value for _, value in v.kwargs]
        else:   # a float, a range, a dtype, a version: a few dozen characters
            total += 48
    return total


def check_text(value: object, what: str = "a value") -> None:
    """Refuse turning a value into text (str, repr, a format field) past MAX_LEN characters."""
    size = text_size(value)
    if size > MAX_LEN:
        raise Refused(f"{what} as text: more than {MAX_LEN} characters")


_NUMBER = re.compile(r"\d+")


def check_spec(spec: str) -> int:
    """A format spec's width and precision (`>10000000000`, `.5000000f`): refused past MAX_LEN.
    Returns the widest number in it (what the field may pad to)."""
    widest = 0
    for run in _NUMBER.findall(spec):
        if len(run) > 6 or int(run) > MAX_LEN:
            raise Refused(f"a format width or precision of {run if len(run) <= 20 else run[:20] + '...'} "
                          f"(more than {MAX_LEN})")
        widest = max(widest, int(run))
    return widest


# one conversion of printf-style formatting: %[(key)][flags][width][.precision][length]type
_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d*))?[hlL]?(.?)", re.DOTALL)


def check_printf(fmt: str | bytes, args: object) -> None:
    """`fmt % args`: every width and precision within MAX_LEN (a `*` taken from the arguments is
    not evaluated), and the arguments as text within MAX_LEN altogether."""
    text = fmt.decode("latin-1") if isinstance(fmt, bytes) else fmt
    padding = 0
    for m in _PRINTF.finditer(text):
        if "*" in (m.group(1), m.group(2)):
            raise Refused("a `*` width or precision in % formatting is not evaluated")
        padding += check_spec(f"{m.group(1) or ''}.{m.group(2) or ''}")
    if len(text) + padding + text_size(args) > MAX_LEN:
        raise Refused(f"% formatting of more than {MAX_LEN} characters")


class _Fields(string.Formatter):
    """str.format, field by field: an argument by position or name and `[key]` into it, never an
    attribute (`{0.__globals__}` would walk into the evaluator's own objects); each field checked
    for size before it is formatted, and the whole result within MAX_LEN."""

    def __init__(self, check: Callable[[object], None]):
        super().__init__()
        self.check = check
        self.total = 0

    def _count(self, size: int) -> None:
        self.total += size
        if self.total > MAX_LEN:
            raise Refused(f"str.format of more than {MAX_LEN} characters")

    def get_value(self, key: int | str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if isinstance(key, int) and key >= len(args):
            raise IndexError(f"Replacement index {key} out of range for positional args tuple")
        return super().get_value(key, args, kwargs)

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
        if "." in field_name:
            raise Refused(f"an attribute in a format field ({{{field_name}}}) is not evaluated")
        return super().get_field(field_name, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        self.check(value)
        if conversion:
            check_text(value, "a format field")
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        width = check_spec(format_spec)
        self.check(value)
        self._count(max(text_size(value), width))
        return format(value, format_spec)


def format_string(fmt: str, args: Sequence[object], kwargs: Mapping[str, object],
                  check: Callable[[object], None]) -> str:
    """`fmt.format(*args, **kwargs)`, each field's value passed to `check` first (plain values
    only). Errors are Python's (IndexError, KeyError, ValueError)."""
    fields = _Fields(check)
    fields._count(len(fmt))
    return fields.vformat(fmt, args, kwargs)


def _length(value: object) -> int:
    if isinstance(value, range):
        return range_length(value)
    return len(value) if isinstance(value, _SIZED) else 1


def _grows(obj: object, more: int, name: str) -> None:
    if _length(obj) + more > MAX_LEN:
        raise Refused(f"{type(obj).__name__}.{name} to more than {MAX_LEN} elements")


def check_method(obj: object, name: str, args: list[object], kwargs: dict[str, object]) -> None:
    """Before a listed method of a plain value runs: what it would build or grow to."""
    first = args[0] if args else None
    if isinstance(obj, str):
        if name in ("ljust", "rjust", "center", "zfill"):
            check_width(kwargs.get("width", first), f"str.{name} to a width")
        elif name == "join" and isinstance(first, _SIZED):
            if _length(first) > MAX_LEN:
                raise Refused(f"str.join of more than {MAX_LEN} elements")
            parts = list(first)
            size = sum(len(p) for p in parts if isinstance(p, str)) + len(obj) * max(0, len(parts) - 1)
            if size > MAX_LEN:
                raise Refused(f"str.join of more than {MAX_LEN} characters")
        elif name == "replace" and len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
            found = len(obj) + 1 if not args[0] else obj.count(args[0])
            count = args[2] if len(args) > 2 and isinstance(args[2], int) else kwargs.get("count", -1)
            if isinstance(count, int) and count >= 0:
                found = min(found, count)
            if len(obj) + found * (len(args[1]) - len(args[0])) > MAX_LEN:
                raise Refused(f"str.replace to more than {MAX_LEN} characters")
    elif isinstance(obj, int) and name == "to_bytes":
        check_width(kwargs.get("length", first), "int.to_bytes to a length")
    elif isinstance(obj, (list, set)) and name in ("extend", "update"):
        _grows(obj, sum(_length(a) for a in args), name)
    elif isinstance(obj, (list, set)) and name in ("append", "insert", "add"):
        _grows(obj, 1, name)
    elif isinstance(obj, dict) and name in ("update", "setdefault"):
        _grows(obj, sum(_length(a) for a in args) + len(kwargs) if name == "update" else 1, name)
    elif isinstance(obj, (set, frozenset)) and name == "union":
        _grows(obj, sum(_length(a) for a in args), name)


def check_builtin(name: str, args: list[object], kwargs: dict[str, object]) -> None:
    """Before an allowed builtin runs on plain values: what it would build."""
    first = args[0] if args else None
    if name in ("str", "repr") and args:
        check_text(first, f"{name}() of a value")
    elif name == "format" and args:
        check_spec(args[1] if len(args) > 1 and isinstance(args[1], str) else "")
        check_text(first, "format() of a value")
    elif name in ("int", "float") and isinstance(first, (str, bytes)) and len(first) > MAX_DIGITS:
        raise Refused(f"{name}() of a text of {len(first)} characters (more than {MAX_DIGITS})")
    elif name == "round" and len(args) > 1 and isinstance(args[1], int) and abs(args[1]) > MAX_INT_BITS:
        raise Refused(f"round() to {args[1]} digits (more than {MAX_INT_BITS})")
    elif name == "sum":
        start = args[1] if len(args) > 1 else kwargs.get("start", 0)
        if isinstance(start, (list, tuple)) and isinstance(first, (list, tuple)) and \
                len(start) + sum(_length(x) for x in first) > MAX_LEN:
            raise Refused(f"sum() of sequences into more than {MAX_LEN} elements")


def range_length(r: range) -> int:
    """len(range), also where it does not fit a C integer (Python's len raises there)."""
    try:
        return len(r)
    except OverflowError:
        return MAX_LEN + 1


def _bits(value: object) -> int:
    return value.bit_length() if isinstance(value, int) else 0   # a float cannot grow past 64 bits


def check_math(name: str, args: list[Any]) -> None:
    """math.comb, perm, prod and lcm make integers as large as their arguments say: estimated
    first (by lgamma or bit lengths), refused past MAX_INT_BITS."""
    bound = f"math.{name} of more than {MAX_INT_BITS} bits"
    if name in ("comb", "perm") and args and all(isinstance(a, int) for a in args):
        n = args[0]
        k = args[1] if len(args) > 1 else n
        if not 0 <= k <= n:
            return   # 0, or Python's own error for a negative argument
        picked = min(k, n - k) if name == "comb" else k
        if picked * max(1, n.bit_length()) <= MAX_INT_BITS:
            return
        if n.bit_length() > 52:
            raise Refused(bound)
        bits = (math.lgamma(n + 1) - math.lgamma(n - k + 1) - (math.lgamma(k + 1) if name == "comb" else 0)) / math.log(2)
        if bits > MAX_INT_BITS:
            raise Refused(bound)
    elif name in ("prod", "lcm"):
        values = list(args[0]) if name == "prod" and args and isinstance(args[0], _SIZED) else args
        if sum(_bits(v) for v in values) > 2 * MAX_INT_BITS:
            raise Refused(bound)


def check_pow(args: list[object]) -> None:
    """pow(a, b, m) with an integer modulus is bounded by its operands; with `m=None` it is a**b,
    which the caller checks as such."""
    if len(args) == 3 and args[2] is not None and not all(isinstance(a, int) for a in args):
        raise Refused("pow() with a modulus of values other than integers")


def _log_count(dotted: str, n: int, r: int) -> float:
    """log of how many tuples permutations(n, r) or combinations(n, r) makes (0 <= r <= n)."""
    count = math.lgamma(n + 1) - math.lgamma(n - r + 1)
    return count - math.lgamma(r + 1) if dotted == "itertools.combinations" else count


def check_itertools(dotted: str, seqs: Sequence[object], kwargs: dict[str, object]) -> None:
    """The number of tuples an itertools call makes and their length, before it makes them: at most
    MAX_LEN tuples, and MAX_CELLS elements in all."""
    lists = [s for s in seqs if isinstance(s, list)]
    if dotted == "itertools.product":
        repeat = kwargs.get("repeat", 1)
        if not isinstance(repeat, int) or repeat < 0:
            return   # Python's own error
        count = math.prod(len(s) for s in lists)
        if count > 1 and math.log(count) * repeat > math.log(MAX_LEN):
            raise Refused(f"{dotted} of more than {MAX_LEN} elements")
        count, width = count ** repeat, len(lists) * repeat
    elif dotted in ("itertools.permutations", "itertools.combinations") and lists:
        n = len(lists[0])
        r = seqs[1] if len(seqs) > 1 else kwargs.get("r", n)
        width = r if isinstance(r, int) and r >= 0 else n
        if width > n:
            return   # no tuple at all
        count = MAX_LEN + 1 if _log_count(dotted, n, width) > math.log(MAX_LEN + 1) else \
            (math.comb if dotted == "itertools.combinations" else math.perm)(n, width)
    elif dotted == "itertools.accumulate":
        if any(not isinstance(x, (int, float)) for s in lists for x in s):
            raise Refused(f"{dotted} of values other than numbers")
        return
    else:
        return
    if min(count, MAX_LEN + 1) * max(1, width) > MAX_CELLS:
        raise Refused(f"{dotted} of more than {MAX_CELLS} elements (its tuples' elements counted)")
