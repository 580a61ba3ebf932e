"""The command line, unpacked: each verb turns argparse's Namespace into frozen typed records at
its entry (as pip and pre-commit do), so the helpers it calls and everything below cli/ get typed
arguments, never a Namespace.

`Shown` is how a verb shows what it found, `Compiling` the options of a verb that compiles; a
verb's own options are a record of its own module (`commands/<verb>.py`). A record takes from
the Namespace the options that verb has and keeps its defaults for the others.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Record = TypeVar("Record", bound="DataclassInstance")


def unpacked(cls: type[Record], args: argparse.Namespace, **given: Any) -> Record:
    """A record of `cls` (a dataclass) from the options of `args` named as its fields, and `given`."""
    names = [f.name for f in dataclasses.fields(cls)]
    return cls(**{n: getattr(args, n) for n in names if hasattr(args, n) and n not in given}, **given)


@dataclass(frozen=True)
class Shown:
    """How a verb shows what it found: the global options, and the report's format and file."""

    color: str = "auto"          # --color: auto, always, never
    quiet: bool = False          # -q: no progress lines
    verbose: bool = False        # -v: progress lines wherever stderr goes
    format: str = "table"        # --format: table, json, markdown, html
    output: str | None = None    # -o FILE: instead of stdout
    wide: bool = False           # --wide: the full table whatever the terminal's width
    specs: bool = False          # --specs: a row per spec, not a line per kernel
    check: bool = False          # --check: exit 1 on a blocking verdict
    ptx: bool = False            # --ptx: the normalised PTX's diff after the report

    @classmethod
    def of(cls, args: argparse.Namespace) -> Shown:
        return unpacked(cls, args)


@dataclass(frozen=True)
class Compiling:
    """The options of a verb that compiles (`add_common_options`), and the repository (-C)."""

    command: str                 # the verb: what a message about an option names
    repo: str = "."
    target: str | None = None    # --target sm_90,sm_80
    jobs: int | None = None      # -j
    no_cache: bool = False
    config: str | None = None    # --config FILE: instead of the repository's
    imports: bool = False        # --import
    triton: str | None = None    # --triton VERSION or OLD..NEW
    no_sandbox: bool = False
    executor: str = "local"      # --executor local, ray, ray://ADDRESS
    outputs: bool = False        # --outputs
    time: bool = False           # --time

    @classmethod
    def of(cls, args: argparse.Namespace) -> Compiling:
        return unpacked(cls, args)
