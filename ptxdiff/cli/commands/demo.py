"""`ptxdiff demo`: the whole product in one minute, in a throwaway repository (see corpus/demo.py)."""

from __future__ import annotations

import argparse
import sys

from ptxdiff.corpus import demo
from ptxdiff.report.console import wants_colour


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    return demo.run(pause=not args.no_pause, colour=wants_colour(sys.stdout, args.color))
