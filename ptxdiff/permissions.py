"""Who may make ptxdiff run a revision's code: the user, never the repository.

Reading a revision (discovery, the restricted evaluator, compiling from effective source) runs
none of its code. Three things do run it by nature: importing its modules instead of building
kernels from source, `--outputs` (its host wrappers on real inputs) and `--time`. Each happens
only when the user asks on the command line or in their own git config (global, XDG or system
level, or `git -c`), never because a committed pyproject.toml / ptxdiff.toml says so: such a
key only earns a one-line suggestion.

    git config --global ptxdiff.import true        # import modules (the pre-hermetic path)
    git config --global ptxdiff.semantic auto      # output check of every constants-only verdict
    git config --global ptxdiff.time true          # GPU timing (also PTXDIFF_TIME=1)

The compile workers' OS sandbox (ptxdiff/sandbox/) is on unless the user turns it off, the same
way: `--no-sandbox`, `PTXDIFF_SANDBOX=off`, `git config --global ptxdiff.sandbox off`; never a
repository's config. The choice travels in `Permissions.unsandboxed`, handed to where workers
start; the settings themselves are read by user_settings.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from ptxdiff.repo_config import Config
from ptxdiff.user_settings import Settings
from ptxdiff.verdict import Outputs


@dataclass(frozen=True)
class Permissions:
    imports: bool = False
    semantic: str = "off"
    time: bool = False
    unsandboxed: str | None = None   # the setting that turned the compile sandbox off, as written; None: on


NO_SANDBOX = "--no-sandbox"


def from_user(user: Settings, imports: bool = False, outputs: bool = False, time: bool = False,
              no_sandbox: bool = False) -> Permissions:
    """Command-line flags, then the user's own settings (git config and environment)."""
    return Permissions(imports=imports or user.imports, semantic="always" if outputs else user.semantic,
                       time=time or user.time, unsandboxed=NO_SANDBOX if no_sandbox else user.unsandboxed)


def suggestions(cfg: Config, granted: Permissions) -> list[str]:
    """One line for each run-code setting the repository's config asks for and the user has not
    granted: the repository may suggest, not decide."""
    lines = []
    asks_outputs = cfg.semantic != "off" or Outputs.DIFFER in cfg.block
    if asks_outputs and granted.semantic == "off":
        lines.append(f"{cfg.source} asks for output checks (they run the repository's code); to allow them: "
                     f"--outputs, or git config --global ptxdiff.semantic {cfg.semantic if cfg.semantic != 'off' else 'auto'}")
    if cfg.time and not granted.time:
        lines.append(f"{cfg.source} asks for GPU timing (it runs the repository's code); to allow it: --time, "
                     "or git config --global ptxdiff.time true")
    return lines
