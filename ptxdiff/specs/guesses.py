"""A value a spec compiles that no fact gave: a `Guess`, and its kind.

A spec holds its guesses as records from where they are made (resolve.py) to where they are
searched (compile/retype.py, refit.py), paired (compare/pairing.py) and reported. They cross
JSON as the spec's `guessed` object, whose keys tell the kinds apart by their shape (`name` a
constexpr, `name:` a type, `name (read by heuristic H)` a heuristic's input): `Guess.key`
writes that shape and `from_json` reads it, nothing else.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


class GuessKind(enum.Enum):
    """What a guess stands for."""

    VALUE = "value"            # a constexpr's value (an optional pointer compiled as None too)
    TYPE = "type"              # a runtime param's type: a pointer's element type, an integer's width
    HEURISTIC = "heuristic"    # a runtime argument a `@triton.heuristics` function read, stood in for


@dataclass(frozen=True)
class Guess:
    """One guessed value: of `name` (a param), `value` as the spec compiles it; a HEURISTIC guess
    also names the heuristic that read it (`by`)."""

    kind: GuessKind
    name: str
    value: object
    by: str | None = None

    @property
    def shown(self) -> str:
        """The guess's name as the notes show it (`n (read by heuristic BLOCK)`)."""
        return f"{self.name} (read by heuristic {self.by})" if self.kind is GuessKind.HEURISTIC else self.name

    @property
    def key(self) -> str:
        """Its key in the spec's JSON."""
        return f"{self.name}:" if self.kind is GuessKind.TYPE else self.shown


def value(name: str, v: object) -> Guess:
    return Guess(GuessKind.VALUE, name, v)


def type_of(name: str, t: object) -> Guess:
    return Guess(GuessKind.TYPE, name, t)


def read_by(name: str, heuristic: str, v: object) -> Guess:
    return Guess(GuessKind.HEURISTIC, name, v, heuristic)


def of_kind(guesses: Iterable[Guess], kind: GuessKind) -> dict[str, object]:
    """{name: value} of the guesses of one kind, in order."""
    return {g.name: g.value for g in guesses if g.kind is kind}


READ_BY = re.compile(r"(?s)(.*) \(read by heuristic (.*)\)")


def from_json(guessed: object) -> tuple[Guess, ...]:
    """The guesses of a spec's `guessed` JSON object (nothing where it is not an object)."""
    if not isinstance(guessed, Mapping):
        return ()
    out = []
    for key, v in guessed.items():
        if not isinstance(key, str):
            continue
        heuristic = READ_BY.fullmatch(key)
        if key.endswith(":"):
            out.append(type_of(key[:-1], v))
        elif heuristic:
            out.append(read_by(heuristic[1], heuristic[2], v))
        else:
            out.append(value(key, v))
    return tuple(out)
