"""Where the repository's own install puts its packages: setuptools' `package_dir`, read from the
snapshot's pyproject.toml, setup.cfg and setup.py (parsed, never run).

A repository may install a folder under another package name (`package_dir = {"triton.ops":
"ops"}`), so that a relative import climbing out of that folder (`from .. import language as
tl`) lands in a real parent package; or name a folder as the root its packages are found in
(`{"": "python"}`). Module resolution (modules.py) names and finds modules the way that install
does, so discovery, the fingerprint and the builder all see the same modules.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from dataclasses import dataclass
from typing import Any, Protocol

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# the files that declare an install, in the order setuptools lets them override each other
# (pyproject.toml's table, then setup.cfg, then setup.py's literal): the first to name a key wins
DECLARING = ("pyproject.toml", "setup.cfg", "setup.py")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")
_MAX_BYTES = 1 << 20


class _Readable(Protocol):
    def __contains__(self, path: str) -> bool: ...

    def read(self, path: str) -> bytes: ...


@dataclass(frozen=True)
class Installs:
    """What `package_dir` declares: import roots (its "" key) and packages installed from a folder
    (name, folder; "" is the repository root), longest folder first, and the file that said so."""

    roots: tuple[str, ...] = ()
    packages: tuple[tuple[str, str], ...] = ()
    source: str = ""


def _folder(value: object) -> str | None:
    """A folder as package_dir gives it, relative to the repository root; None when it leaves it."""
    if not isinstance(value, str):
        return None
    parts = [p for p in value.replace("\\", "/").split("/") if p not in ("", ".")]
    if value.startswith("/") or ".." in parts:
        return None
    return "/".join(parts)


def _from_pyproject(data: bytes) -> dict[str, Any]:
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    tools = table.get("tool", {})
    setuptools = tools.get("setuptools", {}) if isinstance(tools, dict) else {}
    found = setuptools.get("package-dir", {}) if isinstance(setuptools, dict) else {}
    found = dict(found) if isinstance(found, dict) else {}
    # packages found under one folder, or Poetry's `from`, are found there as under src/
    where = setuptools.get("packages", {}).get("find", {}).get("where") \
        if isinstance(setuptools, dict) and isinstance(setuptools.get("packages"), dict) else None
    poetry = tools.get("poetry", {}).get("packages") if isinstance(tools.get("poetry"), dict) else None
    froms = {p.get("from") for p in poetry if isinstance(p, dict)} if isinstance(poetry, list) else set()
    if isinstance(where, list) and len(where) == 1:
        found.setdefault("", where[0])
    elif len(froms) == 1 and None not in froms:
        found.setdefault("", froms.pop())
    return found


def _from_setup_cfg(data: bytes) -> dict[str, Any]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(data.decode("utf-8"))
        text = parser.get("options", "package_dir", fallback="")
        where = parser.get("options.packages.find", "where", fallback="").split()
    except (UnicodeDecodeError, configparser.Error):
        return {}
    entries = [line.partition("=") for line in text.splitlines() if "=" in line]
    found = {key.strip(): value.strip() for key, _, value in entries}
    if len(where) == 1:
        found.setdefault("", where[0])
    return found


def _from_setup_py(data: bytes) -> dict[str, Any]:
    """The literal `package_dir=` of a `setup(...)` call, or of the module-level name it passes."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError):
        return {}
    assigned = {t.id: s.value for s in tree.body if isinstance(s, ast.Assign) for t in s.targets
                if isinstance(t, ast.Name)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not (isinstance(node.func, ast.Name) and node.func.id == "setup" or
                                                  isinstance(node.func, ast.Attribute) and node.func.attr == "setup"):
            continue
        for kw in node.keywords:
            if kw.arg == "package_dir":
                value = assigned.get(kw.value.id, kw.value) if isinstance(kw.value, ast.Name) else kw.value
                try:
                    found = ast.literal_eval(value)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    return {}
                return found if isinstance(found, dict) else {}
    return {}


_READERS = {"pyproject.toml": _from_pyproject, "setup.cfg": _from_setup_cfg, "setup.py": _from_setup_py}


def declared(snapshot: _Readable) -> Installs:
    """The snapshot's `package_dir`, merged over the three files (the first to name a key wins);
    entries that are no dotted name, name `triton` itself or whose folder leaves the repository
    are ignored."""
    merged: dict[str, str] = {}
    sources: list[str] = []
    for name in DECLARING:
        if name not in snapshot:
            continue
        data = snapshot.read(name)
        entries = _READERS[name](data) if len(data) <= _MAX_BYTES else {}
        for key, value in entries.items():
            folder = _folder(value)
            # `triton` itself is the toolchain's (a fork that installs it compiles with the real one)
            if isinstance(key, str) and key not in merged and folder is not None and key != "triton" and \
                    (key == "" or _DOTTED.match(key)):
                merged[key] = folder
                sources.append(name)
    roots = (merged.pop(""),) if "" in merged else ()
    packages = tuple(sorted(merged.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    return Installs(roots, packages, ", ".join(dict.fromkeys(sources)))
