"""The files a repository's triton pin is read from (triton_pin.py reads them). Apart from the reader
so that the diff driver can stamp them in the work tree without importing a TOML parser."""

from __future__ import annotations

import re

LOCKS = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
REQUIREMENTS = re.compile(r"^(?:[^/]*/)?requirements[^/]*\.(?:txt|in)$")


def pin_file(path: str) -> bool:
    """A file `pins.read_pin` may read: a lock file, a requirements file, pyproject.toml,
    setup.cfg or setup.py; a changed pin in the work tree is then a new comparison for the driver."""
    return path in LOCKS or path in ("pyproject.toml", "setup.cfg", "setup.py") or bool(REQUIREMENTS.match(path))
