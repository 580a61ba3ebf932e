"""`ptxdiff demo`: the whole product in one minute, in a throwaway repository (see corpus/demo.py)."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from ptxdiff.corpus import demo
from ptxdiff.report.console import wants_colour


@dataclass(frozen=True)
class Options:
    """`ptxdiff demo`'s command line."""

    pause: bool = True           # wait for enter after each step (--no-pause: not)
    color: str = "auto"

    @classmethod
    def of(cls, args: argparse.Namespace) -> Options:
        return cls(not args.no_pause, args.color)


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    opts = Options.of(args)
    return demo.run(pause=opts.pause, colour=wants_colour(sys.stdout, opts.color))
