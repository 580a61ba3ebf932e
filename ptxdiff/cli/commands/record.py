"""`ptxdiff record [-- COMMAND ...]`: the kernel launches a command makes (see record/command.py)."""

from __future__ import annotations

import argparse

from ptxdiff.cli.options import unpacked
from ptxdiff.record import command as record


def run(args: argparse.Namespace, paths: list[str] | None) -> int:
    return record.main(unpacked(record.Asked, args), paths)
