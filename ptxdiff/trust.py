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
repository's config.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ptxdiff.config import Config

SEMANTIC = ("off", "auto", "always")


@dataclass(frozen=True)
class Permissions:
    imports: bool = False
    semantic: str = "off"
    time: bool = False


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def _falsy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("0", "false", "no", "off")


SANDBOX_ENV = "PTXDIFF_SANDBOX"


def sandbox_opt_out() -> str | None:
    """The user's own setting that turns the compile sandbox off, as they would write it, or None
    (sandboxed): PTXDIFF_SANDBOX=off (what --no-sandbox sets for its run), then `ptxdiff.sandbox`
    in the user's git config (`git -c`, global, XDG, system; never the repository's)."""
    from ptxdiff.git.repo import user_config_get

    if _falsy(os.environ.get(SANDBOX_ENV)):
        return f"{SANDBOX_ENV}={os.environ[SANDBOX_ENV]}"
    value = user_config_get("ptxdiff.sandbox")
    if _falsy(value):
        return f"git config ptxdiff.sandbox {value}"
    return None


def from_user(imports: bool = False, outputs: bool = False, time: bool = False) -> Permissions:
    """Command-line flags, then the user's own git config and environment."""
    from ptxdiff.git.repo import user_config_get

    semantic = "always" if outputs else (user_config_get("ptxdiff.semantic") or "off").strip().lower()
    if semantic not in SEMANTIC:
        semantic = "off"
    return Permissions(
        imports=imports or _truthy(user_config_get("ptxdiff.import")),
        semantic=semantic,
        time=time or _truthy(user_config_get("ptxdiff.time")) or os.environ.get("PTXDIFF_TIME") == "1",
    )


def suggestions(cfg: Config, granted: Permissions) -> list[str]:
    """One line for each run-code setting the repository's config asks for and the user has not
    granted: the repository may suggest, not decide."""
    lines = []
    asks_outputs = cfg.semantic != "off" or "outputs-differ" in cfg.block
    if asks_outputs and granted.semantic == "off":
        lines.append(f"{cfg.source} asks for output checks (they run the repository's code); to allow them: "
                     f"--outputs, or git config --global ptxdiff.semantic {cfg.semantic if cfg.semantic != 'off' else 'auto'}")
    if cfg.time and not granted.time:
        lines.append(f"{cfg.source} asks for GPU timing (it runs the repository's code); to allow it: --time, "
                     "or git config --global ptxdiff.time true")
    return lines
