"""How long and how much a worker may take: the wall-clock bound and the rlimits.

The repository's config names a `timeout` per request; it can lower the bound, never raise it
past the user's maximum (`PTXDIFF_MAX_TIMEOUT`, else `git config --global ptxdiff.maxTimeout`,
else 600 s). The rlimits hold for the worker and everything it starts, and cannot be raised
from inside: address space (a 10 GB allocation fails at once instead of swapping the machine),
CPU seconds (a descendant that spins dies even if nothing kills it), file size, no core files,
and the number of processes (counted per user namespace, so it bounds the worker's own tree;
the kernel does not apply it to root).
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

GiB = 1 << 30


@dataclass(frozen=True)
class Bound:
    seconds: float        # the wall-clock bound of one request
    capped: str | None    # the user setting that lowered the repository's timeout, if one did


@dataclass(frozen=True)
class Limits:
    address_space: int = 4 * GiB     # a compile worker peaks near 0.3 GiB of address space; 0: no limit
    cpu_seconds: int = 1800
    file_size: int = 1 * GiB
    processes: int = 512

    @staticmethod
    def for_bound(seconds: float, imports: bool = False) -> Limits:
        """CPU seconds for a worker's whole life: three requests at the bound (the pool starts a
        fresh worker before one could run out). Imported modules may start CUDA, which reserves
        more address space than any limit: none then (0)."""
        return Limits(address_space=0 if imports else 4 * GiB, cpu_seconds=int(3 * seconds) + 30)

    def recycle_after(self, bound: float) -> float:
        """CPU seconds after which the pool replaces a worker: one more request must fit."""
        return self.cpu_seconds - bound - 15


def user_max() -> tuple[float, str]:
    """The user's maximum wall-clock seconds per request and where it came from."""
    from ptxdiff.user_settings import load

    user = load()
    return user.max_timeout, user.max_timeout_from or "the default"


def bound(config_timeout: float) -> Bound:
    """The repository's timeout, capped by the user's maximum."""
    most, where = user_max()
    if config_timeout <= most:
        return Bound(config_timeout, None)
    return Bound(most, "the default maximum (PTXDIFF_MAX_TIMEOUT raises it)" if where == "the default" else where)


def apply(limits: Limits) -> dict[str, int]:
    """Set soft and hard limits (lowering only: what is already lower stays). Returns what is set."""
    wanted = {"as": (resource.RLIMIT_AS, limits.address_space), "cpu": (resource.RLIMIT_CPU, limits.cpu_seconds),
              "fsize": (resource.RLIMIT_FSIZE, limits.file_size), "core": (resource.RLIMIT_CORE, 0),
              "nproc": (resource.RLIMIT_NPROC, limits.processes)}
    out = {}
    for name, (which, value) in wanted.items():
        if not value and name != "core":
            continue
        soft, hard = resource.getrlimit(which)
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (new, new))
        out[name] = new
    return out
