"""What a sealed worker may touch, as paths: decided here, enforced by landlock.py.

Read: the Python installation's library folders and every folder on the (clean) import path,
ptxdiff's own package, the shared-library folders the interpreter and the toolchain load from,
the dynamic loader's cache, the CPU count and topology, and what the caller names of the repository (its object store, the
work tree's Python files). Write: the worker's private folder only (and /dev/null). Execute: the
toolchain binaries (ptxas, cuobjdump, nvdisasm) and the ELF loader they need, nothing else.
"""

from __future__ import annotations

import os
import struct
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass

from ptxdiff import PACKAGE_DIR
from ptxdiff.sandbox.landlock import Rules
from ptxdiff.sandbox.limits import Limits

DEVICES_RW = ("/dev/null",)
# the loader's cache, and what the CPU count and topology probes of libc, OpenMP and torch read
SYSTEM_R = ("/dev/zero", "/dev/urandom", "/dev/random", "/etc/ld.so.cache", "/proc/cpuinfo", "/proc/stat",
            "/sys/devices/system/cpu")


@dataclass(frozen=True)
class Policy:
    """What the pool hands a worker: its private folder, its rlimits, whether to try namespaces,
    and whether to seal it (Landlock, seccomp). A worker that imports the revisions' modules
    (`--import`, the user's choice) is bounded but not sealed: the modules may need the GPU."""

    home: str
    limits: Limits
    namespaces: bool = True
    seal: bool = True


def elf_interpreter(path: str) -> str | None:
    """The ELF loader a 64-bit little-endian executable names (PT_INTERP), or a script's `#!`
    interpreter; None for a static binary or what cannot be read."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head.startswith(b"#!"):
                line = head[2:].split(b"\n", 1)[0].strip().split()
                return os.fsdecode(line[0]) if line else None
            if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", head, 0x20)
            entsize, count = struct.unpack_from("<HH", head, 0x36)
            for i in range(min(count, 64)):
                f.seek(phoff + i * entsize)
                ph = f.read(56)
                if len(ph) < 40 or struct.unpack_from("<I", ph, 0)[0] != 3:   # PT_INTERP
                    continue
                offset, = struct.unpack_from("<Q", ph, 8)
                size, = struct.unpack_from("<Q", ph, 32)
                f.seek(offset)
                return os.fsdecode(f.read(min(size, 4096)).rstrip(b"\0"))
    except (OSError, struct.error, IndexError):
        return None
    return None


def library_folders() -> list[str]:
    """Where shared libraries come from: the folders of those this process has mapped, and the
    system's own (ptxas links libc, libm, libdl, libpthread, libgcc_s from there)."""
    found: set[str] = set()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            for line in f:
                path = line.rstrip("\n").split(None, 5)[-1] if line.count(" ") >= 5 else ""
                if path.startswith("/") and ".so" in os.path.basename(path):
                    found.add(os.path.dirname(path))
    except OSError:
        pass
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for folder in ("/lib64", "/usr/lib64", f"/lib/{multiarch}", f"/usr/lib/{multiarch}"):
        if multiarch or "64" in folder:
            found.add(folder)
    return sorted(found)


def python_folders() -> list[str]:
    """The standard library, site-packages, the folders of the import path, ptxdiff itself."""
    paths = sysconfig.get_paths()
    found = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    found |= {p for p in sys.path if p and os.path.isdir(p)}
    found.add(PACKAGE_DIR)
    return sorted(found)


def rules(home: str, tools: Iterable[str], repository: Iterable[str]) -> Rules:
    """The Landlock rules of a worker whose private folder is `home`."""
    tools = [t for t in tools if os.path.isfile(t)]
    loaders = {loader for t in tools if (loader := elf_interpreter(t))}
    loaders |= {second for loader in set(loaders) if (second := elf_interpreter(loader))}
    read = [*python_folders(), *library_folders(), *SYSTEM_R, *repository]
    return Rules(read=tuple(dict.fromkeys(read)), write=(home, *DEVICES_RW),
                 execute=tuple(dict.fromkeys([*tools, *sorted(loaders)])))
