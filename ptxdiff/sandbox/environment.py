"""The environment a compile worker gets: an allow-list, never the user's whole environment.

A token in the environment (CI secrets, cloud keys) must not be in reach of repository content.
The forkserver that workers fork from is started with this environment already (launcher.py),
so the secret is not even in its memory; each worker checks that it started so. Allowed: what
the toolchain and triton read (PATH, locale, library paths, CUDA paths, TRITON_* knobs, the
tool overrides ptxdiff documents, the index git names) and nothing named like a credential.
HOME, TMPDIR and the cwd are the worker's private folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ALLOWED = frozenset({
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "LC_MESSAGES", "TZ",
    "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
    "PTXDIFF_CUOBJDUMP", "PTXDIFF_PTXAS", "PTXDIFF_PTXAS_BLACKWELL", "PTXDIFF_NVDISASM", "GIT_INDEX_FILE",
})
PREFIXES = ("TRITON_",)
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "AUTH")
PRIVATE = ("HOME", "TMPDIR", "TEMP", "TMP")


def allowed(name: str) -> bool:
    if any(word in name.upper() for word in SECRET_WORDS):
        return False
    return name in ALLOWED or name.startswith(PREFIXES)


def scrubbed(env: Mapping[str, str], home: str) -> dict[str, str]:
    """The allowed part of `env`, with HOME and the temp folder variables pointing at `home`."""
    out = {k: v for k, v in env.items() if allowed(k)}
    out.update(dict.fromkeys(PRIVATE, home))
    return out


def foreign_names(environ_block: bytes) -> list[str]:
    """Names in a process's initial environment (/proc/self/environ) the allow-list does not
    allow: a worker whose forkserver was started with them refuses to go on."""
    names = (item.partition(b"=")[0].decode("utf-8", "replace") for item in environ_block.split(b"\0") if item)
    return sorted({n for n in names if not allowed(n) and n not in PRIVATE})


def settle(home: str) -> None:
    """In the worker: the scrubbed environment, and the private folder as HOME, TMPDIR and cwd."""
    clean = scrubbed(os.environ, home)
    os.environ.clear()
    os.environ.update(clean)
    os.chdir(home)
    import tempfile
    tempfile.tempdir = home
