"""Which old spec a new spec is compared with, where their keys differ.

Specs of the same values have the same key and pair by it. What is left pairs where a value
changed for a reason the row says (a constexpr default, an autotune Config, a launch site's
value): in order, but only specs whose guessed values agree, so a guess never stands against a
different guess of the same parameter (an old `TRANSPOSE_B=True` against a new `False` would
read as a change of the code where there is none, and hide the one there is).
"""

from __future__ import annotations


def _guessed(result: dict | None) -> dict[str, str]:
    """A spec result's guessed constexpr values, as text (types, `name:`, are not constexprs)."""
    spec = (result or {}).get("spec") or {}
    values = spec.get("constexprs") or {}
    return {k: repr(values[k]) for k in spec.get("guessed") or {} if not k.endswith(":") and k in values}


def agree(old: dict | None, new: dict | None) -> bool:
    """Whether two spec results take the same value for every parameter both guess."""
    a, b = _guessed(old), _guessed(new)
    return all(a[k] == b[k] for k in a.keys() & b.keys())


def pair_lone(by_key: dict[object, list]) -> None:
    """Pair, in `by_key` (key -> [old result, new result]), specs that only one side has: each
    new one with the first old one left whose guessed values agree with it; then what is still
    alone with an agreeing spec already paired (a side with a flag fewer compiles the
    projections of the other side's specs: one of its specs stands for several)."""
    lone_old = [k for k, (a, b) in by_key.items() if b is None]
    lone_new = [k for k, (a, b) in by_key.items() if a is None]
    olds = [by_key[k][0] for k in lone_old]
    news = [by_key[k][1] for k in lone_new]
    for kn in lone_new:
        ko = next((k for k in lone_old if agree(by_key[k][0], by_key[kn][1])), None)
        if ko is not None:
            lone_old.remove(ko)
            by_key[kn][0] = by_key.pop(ko)[0]
    for kn in [k for k in lone_new if by_key[k][0] is None]:
        by_key[kn][0] = next((a for a in olds if agree(a, by_key[kn][1])), None)
    for ko in lone_old:
        by_key[ko][1] = next((b for b in news if agree(by_key[ko][0], b)), None)
