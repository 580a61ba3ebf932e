"""The verbs, one module each, and the registry that finds them: `main` imports a verb's module
only when that verb runs (like pip's commands_dict), so `ptxdiff cache path` never loads the
compile pipeline and a broken optional dependency breaks only the verbs that use it.

Every verb is `run(args, paths) -> int`: the parsed options, which it unpacks at once into
typed records (its `Options`, and `options.Shown` / `options.Compiling`), the paths after `--`
(None when there is no `--`), and the exit status. Only the verbs of TAKE_PATHS read what follows `--`;
the others refuse it.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable

Command = Callable[[argparse.Namespace, list[str] | None], int]

COMMANDS: dict[str, str] = {
    "diff": "ptxdiff.cli.commands.diff",
    "show": "ptxdiff.cli.commands.show",
    "cache": "ptxdiff.cli.commands.cache",
    "log": "ptxdiff.cli.commands.log",
    "notes": "ptxdiff.cli.commands.notes",
    "install": "ptxdiff.cli.commands.install",
    "uninstall": "ptxdiff.cli.commands.uninstall",
    "doctor": "ptxdiff.cli.commands.doctor",
    "corpus": "ptxdiff.cli.commands.corpus",
    "demo": "ptxdiff.cli.commands.demo",
    "record": "ptxdiff.cli.commands.record",
    "pre-push": "ptxdiff.cli.commands.pre_push",
    "ci": "ptxdiff.cli.commands.ci",
    "toolchain": "ptxdiff.cli.commands.toolchain",
}

# the verbs whose `run` reads what follows `--`: pathspecs (diff, show, ci), a command (record)
TAKE_PATHS = frozenset({"diff", "show", "ci", "record"})


def load(verb: str) -> Command:
    """The verb's `run`, its module imported now."""
    run: Command = importlib.import_module(COMMANDS[verb]).run
    return run
