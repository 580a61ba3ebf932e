"""Which guessed combinations compile: every one where there are few, else a covering set in which
every pair of values appears together (the guards of a change in every combination), and an even
pick under a cap. Pure; no triton."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


COVERED = "combinations of guessed values"
PAIRWISE_CAP = 4   # a covering set compiles at most this many times max_specs specs
GUARDED_COMBINATIONS = 64   # every combination of the constexprs guarding a change, up to this many


def cover_combinations(variables: list[tuple[str, tuple[object, ...]]], limit: int, force: bool = False,
                       guards: tuple[str, ...] = ()) -> tuple[list[dict[str, object]], str | None]:
    """Every combination of the guessed values when there are few; else a covering set in which
    every pair of values of any two variables appears together (`if A: if not B:` is compiled
    whatever the other flags are), at most PAIRWISE_CAP x `limit` of them (the rest are dropped,
    and said), that starts with every combination of the `guards` (the constexprs around what
    changed: `if A: if B: if not C:`), when they have at most GUARDED_COMBINATIONS. The set
    depends on the variables' names, value counts and the guards only, so a side given
    the other side's variables too (`phantom` in `resolve`) compiles the projections of the
    other side's combinations: the two sides' specs pair up by equal values. `force`: the other
    side has too many combinations, so this side takes a covering set too."""
    if not variables:
        return [{}], None
    variables = sorted(variables, key=lambda v: v[0])
    total = 1
    for _, values in variables:
        total *= len(values)
    if total <= limit and not force:
        combos: list[dict[str, object]] = [{}]
        for name, values in variables:
            combos = [{**c, name: v} for c in combos for v in values]
        return combos, None
    fixed = {name: values[0] for name, values in variables if len(values) == 1}
    open_ = [(name, values) for name, values in variables if len(values) > 1]
    guarded = [i for i, (name, _) in enumerate(open_) if name in guards]
    product = 1
    for i in guarded:
        product *= len(open_[i][1])
    seed = _product([len(open_[i][1]) for i in guarded]) if 1 < product <= GUARDED_COMBINATIONS else []
    rows = _pairwise([len(values) for _, values in open_], {i: [c[n] for c in seed] for n, i in enumerate(guarded)})
    cap = max(PAIRWISE_CAP * limit, max(len(values) for _, values in variables), len(seed))
    kept = rows[:cap]
    combos = [{**fixed, **{name: values[row[i]] for i, (name, values) in enumerate(open_)}} for row in kept]
    cut = f", the first {cap} of a covering set of {len(rows)}" if len(kept) < len(rows) else ""
    names = ", ".join(open_[i][0] for i in guarded)
    around = (f"; every combination of {names}, which guard the change" if seed else
              f"; the {product} combinations of {names}, which guard the change, are more than "
              f"{GUARDED_COMBINATIONS}: each pair of them" if product > GUARDED_COMBINATIONS else "")
    return combos, (f"{total} {COVERED} ({', '.join(n for n, _ in variables)}): "
                    f"{len(combos)} compiled, each pair of values at least once{cut}{around}"
                    + (" (as on the other side)" if total <= limit else ""))


def _product(sizes: list[int]) -> list[list[int]]:
    """Every combination of value indices, the first variable slowest."""
    rows: list[list[int]] = [[]]
    for size in sizes:
        rows = [[*row, v] for row in rows for v in range(size)]
    return rows


def _gain(row: list[int | None], k: int, v: int, todo: set[tuple[int, int, int, int]]) -> int:
    """How many pairs not yet covered value `v` of variable `k` covers in a row being filled."""
    return sum(1 for m, w in enumerate(row) if w is not None and ((m, w, k, v) if m < k else (k, v, m, w)) in todo)


def _pairwise(sizes: list[int], seed: dict[int, list[int]] | None = None) -> list[list[int]]:
    """Rows of value indices in which every pair of values of two variables appears together
    (greedy, deterministic): first one row per entry of `seed` ({variable: its value in each
    seeded row}: every combination of the guarding variables), then each row starts from the
    first pair not yet covered; a row takes, for each variable not yet set, the value that
    covers most new pairs (the lowest on a tie)."""
    if len(sizes) == 1:
        return [[v] for v in range(sizes[0])]
    todo = {(i, a, j, b) for i in range(len(sizes)) for j in range(i + 1, len(sizes))
            for a in range(sizes[i]) for b in range(sizes[j])}
    rows: list[list[int]] = []
    seeded = len(next(iter(seed.values()))) if seed else 0
    while todo or len(rows) < seeded:
        row: list[int | None] = [None] * len(sizes)
        if len(rows) < seeded:
            for k, values in (seed or {}).items():
                row[k] = values[len(rows)]
        else:
            i, a, j, b = min(todo)
            row[i], row[j] = a, b
        for k in range(len(sizes)):
            if row[k] is None:
                row[k] = max(range(sizes[k]), key=lambda v: (_gain(row, k, v, todo), -v))
        full = [v for v in row if v is not None]
        rows.append(full)
        todo -= {(m, full[m], n, full[n]) for m in range(len(full)) for n in range(m + 1, len(full))}
    return rows


def covered_notes(notes: Iterable[str]) -> bool:
    """Whether specs with these notes are a covering set rather than every combination."""
    return any(COVERED in note for note in notes)


def pick(items: list[T], limit: int) -> list[T]:
    """`limit` items spread evenly over the list, first and last included."""
    if len(items) <= limit:
        return items
    if limit == 1:
        return items[:1]
    step = (len(items) - 1) / (limit - 1)
    return [items[round(i * step)] for i in range(limit)]
