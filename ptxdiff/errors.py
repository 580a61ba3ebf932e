"""One exception family, mapped to the documented exit codes at the CLI boundary.

0 fine; 1 a blocking verdict (--check, pre-push); 2 bad usage or config; 3 internal error;
130 interrupted (Ctrl-C, as git and the shell say it).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_BLOCKED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130   # 128 + SIGINT


class PtxdiffError(Exception):
    """An error the user can act on; its message is printed as one line."""

    exit_code = EXIT_USAGE


class UsageError(PtxdiffError):
    """Bad command line: a wrong rev, an unknown target, a path with no kernels."""


class SettingError(UsageError):
    """A user's setting (a PTXDIFF_* variable, a ptxdiff.* git config key) ptxdiff cannot read."""


class ConfigError(PtxdiffError):
    """Malformed configuration: the message names the file and the key."""


class GitError(PtxdiffError):
    """Not a repository, a rev git cannot resolve, an unreadable object."""


class SandboxError(PtxdiffError):
    """The compile workers' sandbox cannot be set up here: the line says why and how to opt out."""


class ToolError(PtxdiffError):
    """A toolchain binary failed; carries its log."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


class SetupError(PtxdiffError):
    """This machine lacks what ptxdiff needs (triton): the message names the command that fixes it."""
