"""The user's settings: every `PTXDIFF_*` environment variable and every `ptxdiff.*` key of the
user's git config, read here and only here, into one frozen `Settings` record.

One boolean rule, git's own (`git config --type=bool`): `true`, `yes`, `on`, `1` are true;
`false`, `no`, `off`, `0` and the empty string are false; case and surrounding blanks do not
matter. Anything else is a one-line usage error (exit 2) that names the variable or key, never a
silent default. Numbers keep their old leniency (a value that is not one is ignored, except
PTXDIFF_CACHE_MAX_MB, which is an error).

What is read elsewhere, on purpose, because it is not the user's choice of how ptxdiff behaves:
variables of the platform (HOME, PATH, TMPDIR, XDG_*, COLUMNS, TERM, NO_COLOR), what git sets
for the commands it runs (GIT_DIR, GIT_PREFIX, GIT_PAGER_IN_USE, GIT_CONFIG_*), what a CI
provider sets (CI, GITHUB_*, ...), what ptxdiff hands its own child processes (PTXDIFF_SPOOL,
PTXDIFF_RERUN, PTXDIFF_FILLER, PTXDIFF_RECORD_*), triton's TRITON_* and the tool paths the compile
workers read in their own process (PTXDIFF_PTXAS, PTXDIFF_CUOBJDUMP, ...), and `ptxdiff.enabled`,
the repository's own switch (read at every level, with `boolean` below).

The diff driver reads its settings here too, so this module imports nothing costly (no
dataclasses, no typing, no pygit2: the record is a plain frozen class); the user's git config is
read through `git.repo.user_config_reader`, imported only when asked for.
"""

from __future__ import annotations

import os

from ptxdiff.errors import SettingError

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (the diff driver reads settings)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

TRUE, FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0", "")
SEMANTIC = ("off", "auto", "always")
DEFAULT_MAX_TIMEOUT = 600.0        # seconds a compile may take at most, whatever a repository says
DEFAULT_REMOTE_TIMEOUT = 3.0

PROGRESS, DEBUG, SKIP, FORCE, TIME = "PTXDIFF_PROGRESS", "PTXDIFF_DEBUG", "PTXDIFF_SKIP", "PTXDIFF_FORCE", "PTXDIFF_TIME"
SANDBOX, CACHE_DIR, CACHE_MAX_MB = "PTXDIFF_SANDBOX", "PTXDIFF_CACHE_DIR", "PTXDIFF_CACHE_MAX_MB"
MAX_TIMEOUT, TRITON, TOOLCHAINS = "PTXDIFF_MAX_TIMEOUT", "PTXDIFF_TRITON", "PTXDIFF_TOOLCHAINS"
DRIVER_BUDGET, CORPUS = "PTXDIFF_DRIVER_BUDGET", "PTXDIFF_CORPUS"
REMOTE, REMOTE_WRITE, REMOTE_TIMEOUT = "PTXDIFF_REMOTE_CACHE", "PTXDIFF_REMOTE_CACHE_WRITE", "PTXDIFF_REMOTE_TIMEOUT"
# the shared cache's trust (compare/remote.py): the signing secret only protected-branch jobs hold (the
# environment only, never git config; SECRET in its name keeps it out of every sandboxed worker), and
# the namespace an untrusted writer's entries go to (a pull request's number)
REMOTE_SECRET, REMOTE_NAMESPACE = "PTXDIFF_REMOTE_CACHE_SECRET", "PTXDIFF_REMOTE_CACHE_NAMESPACE"
GIT_TIME, GIT_IMPORT, GIT_SEMANTIC, GIT_SANDBOX = "ptxdiff.time", "ptxdiff.import", "ptxdiff.semantic", "ptxdiff.sandbox"
GIT_MAX_TIMEOUT, GIT_TRITON, GIT_ENABLED = "ptxdiff.maxTimeout", "ptxdiff.triton", "ptxdiff.enabled"
GIT_REMOTE, GIT_REMOTE_WRITE, GIT_REMOTE_TIMEOUT = "ptxdiff.remoteCache", "ptxdiff.remoteCacheWrite", "ptxdiff.remoteTimeout"


def boolean(value: str, name: str) -> bool:
    """`value` by git's rule; `name` (the variable, or `git config KEY`) is what the error names."""
    word = value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise SettingError(f"{name}={value!r}: expected 1 or 0 (true/false, yes/no, on/off)")


def maybe(value: str | None, name: str) -> bool | None:
    """A boolean that may be unset (None)."""
    return None if value is None else boolean(value, name)


def enabled(value: str | None) -> bool:
    """`ptxdiff.enabled`, the repository's own switch, read at every level of its git config (not a
    setting of the user's): on unless set false."""
    return True if value is None else boolean(value, f"git config {GIT_ENABLED}")


def _number(value: str | None) -> float | None:
    try:
        return float(value) if value else None
    except ValueError:
        return None


class Settings:
    """What the user set, typed; read once by `load` and never changed (a frozen record)."""

    __slots__ = ("progress", "debug", "skip", "force", "time", "imports", "semantic", "unsandboxed",
                 "cache_dir", "cache_max_mb", "max_timeout", "max_timeout_from", "triton", "toolchains",
                 "driver_budget", "corpus", "remote_cache", "remote_from", "remote_write", "remote_timeout",
                 "remote_secret", "remote_namespace")

    def __init__(self, *, progress: bool | None = None, debug: bool = False, skip: bool = False,
                 force: bool = False, time: bool = False, imports: bool = False, semantic: str = "off",
                 unsandboxed: str | None = None, cache_dir: str | None = None, cache_max_mb: float | None = None,
                 max_timeout: float = DEFAULT_MAX_TIMEOUT, max_timeout_from: str | None = None,
                 triton: str | None = None, toolchains: str | None = None, driver_budget: float | None = None,
                 corpus: str | None = None, remote_cache: str | None = None, remote_from: str = "",
                 remote_write: bool = False, remote_timeout: float = DEFAULT_REMOTE_TIMEOUT,
                 remote_secret: str | None = None, remote_namespace: str | None = None) -> None:
        values = (progress, debug, skip, force, time, imports, semantic, unsandboxed, cache_dir, cache_max_mb,
                  max_timeout, max_timeout_from, triton, toolchains, driver_budget, corpus, remote_cache,
                  remote_from, remote_write, remote_timeout, remote_secret, remote_namespace)
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    # the annotations mypy reads (a slot is set once, by __init__)
    progress: bool | None      # PTXDIFF_PROGRESS: progress lines asked for (True), refused (False), or as fits
    debug: bool                # PTXDIFF_DEBUG: a traceback after an internal error
    skip: bool                 # PTXDIFF_SKIP: the pre-push check and the kernel lines under `git diff` skipped
    force: bool                # PTXDIFF_FORCE: kernel lines under `git diff` where no person reads them
    time: bool                 # PTXDIFF_TIME or ptxdiff.time: GPU timing allowed
    imports: bool              # ptxdiff.import: modules imported instead of built from source
    semantic: str              # ptxdiff.semantic: off, auto or always
    unsandboxed: str | None    # the setting that turned the compile sandbox off, as written; None: on
    cache_dir: str | None      # PTXDIFF_CACHE_DIR
    cache_max_mb: float | None     # PTXDIFF_CACHE_MAX_MB
    max_timeout: float         # PTXDIFF_MAX_TIMEOUT or ptxdiff.maxTimeout: seconds per compile at most
    max_timeout_from: str | None   # which of the two set it; None: the default
    triton: str | None         # PTXDIFF_TRITON (ptxdiff.triton is the repository's config, read by the cli)
    toolchains: str | None     # PTXDIFF_TOOLCHAINS: where toolchains live
    driver_budget: float | None    # PTXDIFF_DRIVER_BUDGET: seconds `git diff` waits
    corpus: str | None         # PTXDIFF_CORPUS: the corpus folder
    remote_cache: str | None   # PTXDIFF_REMOTE_CACHE or ptxdiff.remoteCache; None: no shared tier
    remote_from: str           # where the remote cache was set, as the user would look for it
    remote_write: bool         # PTXDIFF_REMOTE_CACHE_WRITE or ptxdiff.remoteCacheWrite
    remote_timeout: float      # PTXDIFF_REMOTE_TIMEOUT or ptxdiff.remoteTimeout, within 0.1..600 s
    remote_secret: str | None  # PTXDIFF_REMOTE_CACHE_SECRET: this job is a trusted writer and reader
    remote_namespace: str | None   # PTXDIFF_REMOTE_CACHE_NAMESPACE: where an untrusted writer's entries go

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Settings is frozen: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        shown = {n: "'***'" if n == "remote_secret" and self.remote_secret else repr(getattr(self, n))
                 for n in self.__slots__}   # a secret never printed
        return "Settings(" + ", ".join(f"{n}={v}" for n, v in shown.items()) + ")"

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, n) for n in self.__slots__)


def no_config(key: str) -> str | None:
    """A git config with nothing set (the diff driver reads no git config of the user's here)."""
    return None


def load(env: Mapping[str, str] | None = None, config: Callable[[str], str | None] | None = None) -> Settings:
    """The user's settings from `env` (the process's environment) and `config` (a key's value in
    the user's own git config: `git -c`, global, XDG, system; never the repository's)."""
    env = os.environ if env is None else env
    if config is None:
        from ptxdiff.git.repo import user_config_reader
        config = user_config_reader()

    def git_bool(key: str) -> bool | None:
        return maybe(config(key), f"git config {key}")

    semantic = (config(GIT_SEMANTIC) or "off").strip().lower()
    max_timeout, max_timeout_from = _max_timeout(env, config)
    remote_cache, remote_from, remote_write, remote_timeout = _remote(env, config)
    max_mb = env.get(CACHE_MAX_MB)
    try:
        cache_max_mb = float(max_mb) if max_mb else None
    except ValueError:
        raise SettingError(f"{CACHE_MAX_MB}={max_mb!r}: expected a number of MiB") from None
    return Settings(
        progress=maybe(env.get(PROGRESS), PROGRESS), debug=bool(maybe(env.get(DEBUG), DEBUG)),
        skip=bool(maybe(env.get(SKIP), SKIP)), force=bool(maybe(env.get(FORCE), FORCE)),
        time=bool(maybe(env.get(TIME), TIME)) or bool(git_bool(GIT_TIME)),
        imports=bool(git_bool(GIT_IMPORT)), semantic=semantic if semantic in SEMANTIC else "off",
        unsandboxed=_unsandboxed(env, config), cache_dir=env.get(CACHE_DIR) or None, cache_max_mb=cache_max_mb,
        max_timeout=max_timeout, max_timeout_from=max_timeout_from, triton=env.get(TRITON),
        toolchains=env.get(TOOLCHAINS) or None, driver_budget=_number(env.get(DRIVER_BUDGET)), corpus=env.get(CORPUS) or None,
        remote_cache=remote_cache, remote_from=remote_from, remote_write=remote_write, remote_timeout=remote_timeout,
        remote_secret=env.get(REMOTE_SECRET) or None, remote_namespace=env.get(REMOTE_NAMESPACE) or None)


def _unsandboxed(env: Mapping[str, str], config: Callable[[str], str | None]) -> str | None:
    """PTXDIFF_SANDBOX false, then ptxdiff.sandbox false, as the user wrote it; None: sandboxed."""
    if maybe(env.get(SANDBOX), SANDBOX) is False:
        return f"{SANDBOX}={env[SANDBOX]}"
    value = config(GIT_SANDBOX)
    if maybe(value, f"git config {GIT_SANDBOX}") is False:
        return f"git config {GIT_SANDBOX} {value}"
    return None


def _max_timeout(env: Mapping[str, str], config: Callable[[str], str | None]) -> tuple[float, str | None]:
    """The first positive number of PTXDIFF_MAX_TIMEOUT, then ptxdiff.maxTimeout, and which one."""
    for value, where in ((env.get(MAX_TIMEOUT), MAX_TIMEOUT), (config(GIT_MAX_TIMEOUT), GIT_MAX_TIMEOUT)):
        seconds = _number(value)
        if seconds is not None and seconds > 0:
            return seconds, where
    return DEFAULT_MAX_TIMEOUT, None


def _remote(env: Mapping[str, str], config: Callable[[str], str | None]) -> tuple[str | None, str, bool, float]:
    """The shared cache tier: the environment first (CI), then the user's git config;
    `PTXDIFF_REMOTE_CACHE=off` (or empty) turns off one set in git config."""
    if REMOTE in env:
        url, origin = env[REMOTE].strip(), REMOTE
    else:
        url, origin = (config(GIT_REMOTE) or "").strip(), f"git config {GIT_REMOTE}"
    if not url or url.lower() in ("off", "none", "false"):
        return None, "", False, DEFAULT_REMOTE_TIMEOUT
    write = maybe(env[REMOTE_WRITE], REMOTE_WRITE) if REMOTE_WRITE in env else \
        maybe(config(GIT_REMOTE_WRITE), f"git config {GIT_REMOTE_WRITE}")
    timeout = _number(env.get(REMOTE_TIMEOUT) or config(GIT_REMOTE_TIMEOUT))
    timeout = DEFAULT_REMOTE_TIMEOUT if timeout is None or timeout != timeout else min(max(timeout, 0.1), 600.0)
    return url, origin, bool(write), timeout
