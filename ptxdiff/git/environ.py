"""Settings git passes in the environment (`git -c key=value`, GIT_CONFIG_COUNT/KEY_n/VALUE_n),
which libgit2 does not read: the user's own, and the first place a user setting is looked for."""

from __future__ import annotations

import os
import shlex


def config_given(key: str) -> tuple[bool, str | None]:
    """(True, value) where the environment sets `key` (a bare `-c key` is "true"), else (False, None)."""
    params = os.environ.get("GIT_CONFIG_PARAMETERS")
    if params:
        for item in shlex.split(params):
            k, sep, v = item.partition("=")
            if k.lower() == key.lower():
                return True, v if sep else "true"
    count = os.environ.get("GIT_CONFIG_COUNT")
    if count and count.isdigit():
        for i in range(int(count)):
            if os.environ.get(f"GIT_CONFIG_KEY_{i}", "").lower() == key.lower():
                return True, os.environ.get(f"GIT_CONFIG_VALUE_{i}")
    return False, None
