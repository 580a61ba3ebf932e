"""Starting multiprocessing's helpers clean: the forkserver, the resource tracker and the workers.

multiprocessing starts its forkserver and resource tracker as `python -B -c ...`: without -I
the current directory is the first entry of their import path, so a repository checked out with
a `multiprocessing/__init__.py` at its root, and ptxdiff started from there, ran that file. It
also hands every child the parent's sys.path (the cwd, PYTHONPATH) and environment. Inside
`clean_start` every such start gets -I, the import path `python -I` has (nothing from the cwd,
the script's folder, PYTHONPATH or the user site), and, for the compile workers' forkserver, the
scrubbed environment (environment.py): what the forkserver never had, no worker can find in
its memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ptxdiff import PACKAGE_DIR
from ptxdiff.errors import SandboxError
from ptxdiff.sandbox.syscalls import c_environ, clearenv

if TYPE_CHECKING:  # types only: the forkserver is imported where a start needs it
    from multiprocessing.forkserver import ForkServer

_PROBE = ("import importlib.util, json, sys; s = importlib.util.find_spec('ptxdiff'); "
          "print(json.dumps([sys.path, s.origin if s else None]))")
_clean: dict[str, list[str]] = {}


def clean_path(python: str | None = None) -> list[str]:
    """sys.path of `python -I` with this interpreter (or `python`), plus ptxdiff's own folder at
    the end where -I would not find this ptxdiff (run from a source tree, or a toolchain's
    interpreter); asked once per interpreter and process."""
    python = python or sys.executable
    if python not in _clean:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LD_LIBRARY_PATH", "LANG")}
        try:
            out = subprocess.run([python, "-I", "-c", _PROBE], capture_output=True, text=True, cwd="/",
                                 env=env, timeout=60, check=True).stdout
            path, origin = json.loads(out)
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            raise SandboxError(f"cannot start the compile workers clean: {python} -I failed ({e})") from None
        path = [p for p in path if p]
        if origin != os.path.join(PACKAGE_DIR, "__init__.py"):
            path.append(os.path.dirname(PACKAGE_DIR))
        _clean[python] = path
    return list(_clean[python])


def toolchain_path(python: str) -> list[str]:
    """The import path of a worker that runs a toolchain's interpreter: its own (its triton
    first), then ptxdiff's source folder, then what this interpreter's clean path adds (ptxdiff's
    own dependencies: pygit2, ...). Nothing is installed into either environment."""
    own = clean_path(python)
    return own + [p for p in clean_path() if p not in own]


def _isolated(flags: list[str]) -> list[str]:
    return flags if "-I" in flags else ["-I", *flags]


_servers: dict[str, ForkServer] = {}


def _server_of(python: str, preload: list[str]) -> ForkServer:
    """A forkserver of its own for each toolchain's interpreter (multiprocessing has one)."""
    from multiprocessing import forkserver
    if python not in _servers:
        server = forkserver.ForkServer()
        server.set_forkserver_preload(preload)
        _servers[python] = server
    return _servers[python]


@contextmanager
def clean_start(env: Mapping[str, str] | None = None, python: str | None = None,
                preload: tuple[str, ...] = ()) -> Iterator[None]:
    """Process starts inside get -I and the clean import path; with `env`, exactly that
    environment too (HOME and the temp folder pointing at the system temp folder); with `python`
    (a toolchain's interpreter), forkserver starts go to that interpreter's own forkserver
    (`preload` loaded there first), with its import path (`toolchain_path`)."""
    from multiprocessing import forkserver, spawn, util

    path = toolchain_path(python) if python else clean_path()
    saved_exe, saved_connect = spawn.get_executable(), forkserver.connect_to_new_process
    if python:
        spawn.set_executable(python)
        forkserver.connect_to_new_process = _server_of(python, list(preload)).connect_to_new_process
    if env is not None:
        from ptxdiff.sandbox.environment import scrubbed
        env = scrubbed(env, tempfile.gettempdir())
    flags = "_args_from_interpreter_flags"   # how multiprocessing spells its children's interpreter flags
    saved_flags = getattr(util, flags)
    saved_path = sys.path[:]
    saved_env, saved_c = dict(os.environ), c_environ()
    setattr(util, flags, lambda: _isolated(saved_flags()))
    sys.path[:] = path
    if env is not None:
        clearenv()
        os.environ.clear()
        os.environ.update(env)
    try:
        yield
    finally:
        spawn.set_executable(saved_exe)
        forkserver.connect_to_new_process = saved_connect
        setattr(util, flags, saved_flags)
        sys.path[:] = saved_path
        if env is not None:
            clearenv()
            os.environ.clear()
            for item in saved_c:
                name, _, value = item.partition(b"=")
                if name:
                    os.putenv(name, value)
            os.environ.update(saved_env)
