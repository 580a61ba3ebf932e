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

from ptxdiff import PACKAGE_DIR
from ptxdiff.errors import SandboxError
from ptxdiff.sandbox.syscalls import c_environ, clearenv

_PROBE = ("import importlib.util, json, sys; s = importlib.util.find_spec('ptxdiff'); "
          "print(json.dumps([sys.path, s.origin if s else None]))")
_clean: list[str] | None = None


def clean_path() -> list[str]:
    """sys.path of `python -I` with this interpreter, plus ptxdiff's own folder at the end where
    -I would not find this ptxdiff (run from a source tree); asked once per process."""
    global _clean
    if _clean is None:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LD_LIBRARY_PATH", "LANG")}
        try:
            out = subprocess.run([sys.executable, "-I", "-c", _PROBE], capture_output=True, text=True, cwd="/",
                                 env=env, timeout=60, check=True).stdout
            path, origin = json.loads(out)
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            raise SandboxError(f"cannot start the compile workers clean: {sys.executable} -I failed ({e})") from None
        path = [p for p in path if p]
        if origin != os.path.join(PACKAGE_DIR, "__init__.py"):
            path.append(os.path.dirname(PACKAGE_DIR))
        _clean = path
    return list(_clean)


def _isolated(flags: list[str]) -> list[str]:
    return flags if "-I" in flags else ["-I", *flags]


@contextmanager
def clean_start(env: Mapping[str, str] | None = None) -> Iterator[None]:
    """Process starts inside get -I and the clean import path; with `env`, exactly that
    environment too (HOME and the temp folder pointing at the system temp folder)."""
    from multiprocessing import util

    path = clean_path()
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
