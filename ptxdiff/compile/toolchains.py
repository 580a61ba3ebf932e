"""Tritons other than the installed one: which one each side compiles with, and where it lives.

A toolchain is an isolated virtual environment per triton version under the user's cache
(`~/.cache/ptxdiff/toolchains/triton-3.5.1/`, or PTXDIFF_TOOLCHAINS), shared by every
repository. One that is not there is installed on demand: the package `triton`, a released
version only, by that environment's own pip run the ordinary way (so pip's own cache, index and
proxy settings hold); it never touches the environment ptxdiff runs in. The compile workers of a
side run that environment's interpreter with ptxdiff's own source put on their import path
(pool.py, sandbox/launcher.py), sealed like any other.

Which triton: `--triton` on the command line, else PTXDIFF_TRITON, else the user's git config
`ptxdiff.triton`, else the repository's pin (triton_pin.py; the base side's for the gate), else the
release current at the revision's date (its commit's committer time; the base's for the gate),
so a revision compiles with the same triton on any machine and an old one with the triton of its
day. `installed` names the installed one anywhere a version goes.
"""

from __future__ import annotations

import calendar
import contextlib
import datetime
import fcntl
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ptxdiff import user_settings
from ptxdiff.binaries import triton_version
from ptxdiff.compile import jit_syntax, triton_pin
from ptxdiff.errors import PtxdiffError, SetupError, UsageError
from ptxdiff.git.values import INDEX

if TYPE_CHECKING:   # types only: the git layer is pygit2's
    from ptxdiff.git.repo import Snapshot
    from ptxdiff.git.values import Side

ROOT_ENV, TRITON_ENV, GIT_KEY = user_settings.TOOLCHAINS, user_settings.TRITON, user_settings.GIT_TRITON
INSTALLED = "installed"
PREFIX = "triton-"


@dataclass(frozen=True)
class Release:
    """A triton release ptxdiff compiles with, and the day it came out (its first upload to PyPI,
    UTC): an unpinned revision compiles with the release current on its commit's day."""

    version: str
    day: datetime.date

    @property
    def out(self) -> int:
        """The start of its day in UTC seconds: a commit made from then on was made in its time."""
        return calendar.timegm(self.day.timetuple())


# releases with a wheel for some CPython on Linux x86-64, oldest first: what a range pin is resolved
# against (its newest, as pip would install) and what a revision's date picks from
RELEASES = tuple(Release(v, datetime.date.fromisoformat(d)) for v, d in (
    ("3.0.0", "2024-07-19"), ("3.1.0", "2024-10-14"), ("3.2.0", "2025-01-22"), ("3.3.0", "2025-04-09"),
    ("3.3.1", "2025-05-29"), ("3.4.0", "2025-07-30"), ("3.5.0", "2025-10-13"), ("3.5.1", "2025-11-11"),
    ("3.6.0", "2026-01-20"), ("3.7.0", "2026-05-07"), ("3.7.1", "2026-06-17"), ("3.8.0", "2026-08-28"),
    ("3.9.0", "2026-10-27")))
KNOWN = tuple(r.version for r in RELEASES)


def root() -> Path:
    """Where toolchains live: PTXDIFF_TOOLCHAINS, else the user's cache folder."""
    given = user_settings.load().toolchains
    if given:
        return Path(given)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "ptxdiff" / "toolchains"


@dataclass(frozen=True)
class Toolchain:
    """One installed toolchain: a virtual environment holding one triton."""

    version: str
    prefix: Path

    @property
    def python(self) -> str:
        return str(self.prefix / "bin" / "python")

    @property
    def site(self) -> str:
        """Its site-packages, where its triton is."""
        rel = os.path.relpath(sysconfig.get_path("purelib", vars={"base": "/", "platbase": "/"}), "/")
        return str(self.prefix / rel)


def _complete(prefix: Path, version: str) -> bool:
    return (prefix / "bin" / "python").exists() and \
        (Path(Toolchain(version, prefix).site) / f"triton-{version}.dist-info").is_dir()


def listed() -> list[Toolchain]:
    """The toolchains installed under root(), oldest triton first."""
    try:
        entries = list(root().iterdir())
    except OSError:
        return []
    found = [Toolchain(e.name[len(PREFIX):], e) for e in entries
             if e.name.startswith(PREFIX) and triton_pin.RELEASE.match(e.name[len(PREFIX):])]
    return sorted((t for t in found if _complete(t.prefix, t.version)), key=lambda t: triton_pin.version_tuple(t.version))


def find(version: str) -> Toolchain | None:
    prefix = root() / f"{PREFIX}{version}"
    return Toolchain(version, prefix) if _complete(prefix, version) else None


def release(text: str, said_by: str) -> str:
    """A version as the user wrote it: a release (`3.5.1`; `3.5` is `3.5.0`) or `installed`."""
    value = text.strip()
    if value == INSTALLED:
        return value
    if not triton_pin.RELEASE.match(value) or value.count(".") > 2:
        shown = repr(text) if len(text) <= 40 else f"{text[:24]!r}... ({len(text)} characters)"
        raise UsageError(f"{said_by} {shown}: expected a triton release like 3.5.1 (no pre-releases or URLs), "
                         f"or '{INSTALLED}'")
    return value + ".0" * (2 - value.count("."))


def install(version: str, progress: Callable[[str], None] | None = None) -> Toolchain:
    """The toolchain of `version`, installed now if it is not there: one line on stderr says so.
    A failure (offline, no such version, no wheel for this Python) is one line saying what to do."""
    version = release(version, "triton")
    found = find(version)
    if found is not None:
        return found
    with _one_at_a_time(version):
        return find(version) or _install(version, progress)


@contextlib.contextmanager
def _one_at_a_time(version: str) -> Iterator[None]:
    """Hold a lock while `version` installs: another ptxdiff (a second run, a Ray node's other
    actors) waits and then finds it instead of downloading it again. Without a writable folder
    there is no lock, and the install says why in one line."""
    path = root() / f".{PREFIX}{version}.lock"
    with contextlib.ExitStack() as held:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fcntl.flock(held.enter_context(open(path, "a")), fcntl.LOCK_EX)
        except OSError:
            pass
        try:
            yield
        finally:
            path.unlink(missing_ok=True)   # a waiter on the old file finds the install; one racing it installs alike


def _install(version: str, progress: Callable[[str], None] | None) -> Toolchain:
    base = root()
    target = base / f"{PREFIX}{version}"
    line = f"ptxdiff: installing triton {version} into {target} (once; every repository shares it)"
    (progress or (lambda text: print(text, file=sys.stderr, flush=True)))(line)
    try:
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{PREFIX}{version}-", dir=base))
    except OSError as e:
        raise SetupError(f"cannot create {base} ({e.strerror}): set {ROOT_ENV} to a writable folder") from None
    try:
        _run([sys.executable, "-I", "-m", "venv", str(work)], f"creating a virtual environment for triton {version}")
        _run([str(work / "bin" / "python"), "-I", "-m", "pip", "install", "--disable-pip-version-check", "--quiet",
              "--only-binary", ":all:", f"triton=={version}"], f"installing triton {version}", version)
        try:
            work.rename(target)
        except OSError:   # another ptxdiff installed it meanwhile
            if find(version) is None:
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    done = find(version)
    if done is None:
        raise SetupError(f"triton {version} was installed into {target} but is not complete there: "
                         f"ptxdiff toolchain remove {version}, then try again")
    return done


def _run(command: list[str], what: str, version: str | None = None) -> None:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=1800,
                              cwd=tempfile.gettempdir())   # never the repository: -I keeps its folders off the path
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SetupError(f"{what} failed ({e})") from None
    if proc.returncode == 0:
        return
    said = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip().startswith("ERROR")]
    why = said[0][len("ERROR:"):].strip() if said else f"exit code {proc.returncode}"
    fix = (f"install it when the package index is reachable (ptxdiff toolchain add {version}), choose another "
           f"with --triton or {TRITON_ENV}, or '{INSTALLED}' for the installed one") if version else \
        "check the Python installation"
    raise SetupError(f"{what} failed: {why}; {fix}")


def remove(version: str) -> bool:
    """Delete a toolchain; False when there was none."""
    found = find(release(version, "triton"))
    target = root() / f"{PREFIX}{release(version, 'triton')}"
    if found is None and not target.exists():
        return False
    shutil.rmtree(target)
    return True


@dataclass(frozen=True)
class Asked:
    """What the user asked for, per side: a release, `installed`, or None (follow the pins)."""

    old: str | None = None
    new: str | None = None
    said_by: str = ""


def parse_option(text: str, said_by: str = "--triton") -> Asked:
    """`--triton VERSION` (both sides) or `--triton OLD..NEW` (one revision, two tritons)."""
    if ".." in text.replace("...", "\0"):
        old, _, new = text.partition("..")
        if not old or not new or new.startswith("."):
            raise UsageError(f"{said_by} {text!r}: expected VERSION or OLD..NEW, e.g. 3.6.0..3.9.0")
        return Asked(release(old, said_by), release(new, said_by), said_by)
    version = release(text, said_by)
    return Asked(version, version, said_by)


def asked(option: str | None, git_config: str | None) -> Asked:
    """The user's choice: the command line, else PTXDIFF_TRITON, else git config ptxdiff.triton."""
    for value, said_by in ((option, "--triton"), (user_settings.load().triton, TRITON_ENV), (git_config, GIT_KEY)):
        if value and value.strip():
            return parse_option(value, said_by)
    return Asked()


# a release standing in for a triton before 3.0 reads kernels as that triton did (2.x took
# `sqrt2 = math.sqrt(2)` as a constant and `tl.dot(a, b, trans_b=True)`; 3.x refuses both): said on
# the report's line
TRITON2_READ = "read as triton 2.x read kernels (module globals as constants, tl.dot's trans_a/trans_b)"


@dataclass(frozen=True)
class Chosen:
    """The triton of one side: None is the installed one; `why` says where the choice came from."""

    version: str | None
    why: str
    triton2: bool = False   # stands in for a triton before 3.0: kernels read as 2.x read them (Side.triton2)

    @property
    def name(self) -> str:
        return self.version or triton_version() or "missing"


@dataclass(frozen=True)
class Dated:
    """When a side's revision was made: its short commit id and committer time (UTC seconds);
    no time for a side with no commit (the work tree, the index), which is today's."""

    name: str = ""
    time: int | None = None


TODAY = Dated()


def current(dated: Dated) -> tuple[str, str]:
    """The release current at a side's date (the newest out on or before its day; before the first,
    the first; today's: the newest), and the words that say so."""
    if dated.time is None:
        return KNOWN[-1], "the release current today"
    when = dated.time
    try:
        day = datetime.datetime.fromtimestamp(when, datetime.timezone.utc).date().isoformat()
    except (OverflowError, OSError, ValueError):   # a forged date past what a calendar holds
        day = f"{when} seconds"
    out = [r for r in RELEASES if r.out <= when]
    if not out:
        return KNOWN[0], f"{dated.name}'s date, {day}, is before triton {KNOWN[0]}, the oldest release ptxdiff compiles with"
    return out[-1].version, f"the release current at {dated.name}'s date, {day}"


def choose(wanted: str | None, said_by: str, pin: triton_pin.Pin | None, dated: Dated) -> Chosen:
    """One side's triton, from what the user asked (`wanted`), else the repository's pin, else the
    release current at the side's date (`dated`; also within a range pin that it meets)."""
    here = triton_version()
    if wanted is not None:
        version = None if wanted in (INSTALLED, here) else wanted
        return Chosen(version, said_by)
    era, when = current(dated)
    # a revision from before every release ptxdiff compiles with: the oldest stands in, reading globals as 2.x did
    triton2 = dated.time is not None and dated.time < RELEASES[0].out
    since = f"; {TRITON2_READ}" if triton2 else ""
    if pin is None or not triton_pin.clauses_of(pin.spec):   # no triton here: the line that says to install it
        return Chosen(None if era == here or here is None else era, f"no triton pin: {when}{since}", triton2)
    if pin.exact is None and triton_pin.satisfies(era, pin.spec):
        return Chosen(None if era == here else era, f"{pin.source}: triton{pin.spec}, {when}{since}", triton2)
    if pin.exact is not None and here is not None and triton_pin.satisfies(here, pin.spec):
        return Chosen(None, f"installed, meets {pin.source}'s triton{pin.spec}")
    exact = release(pin.exact, pin.source) if pin.exact else None   # `==3.3` is 3.3.0, as pip reads it
    version = exact if exact in KNOWN else triton_pin.best(pin.spec, KNOWN)   # never what this machine happens to
    if version is not None:                                             # have: the same triton everywhere
        return Chosen(None if version == here else version, f"{pin.source}: triton{pin.spec}")
    # outside what ptxdiff compiles with (`triton==2.0.0.dev...`, `>=4`): never an install that cannot
    # work, never a refused command; the nearest release, said on the report's line
    version = triton_pin.nearest(pin.spec, KNOWN) or KNOWN[-1]   # every clause names a version (clauses_of)
    below = triton_pin.below_all(pin.spec, KNOWN)   # a pin of a triton before them all (`triton==2.3.0`)
    return Chosen(version, f"{pin.source}: triton{pin.spec} is outside the releases ptxdiff compiles with "
                           f"({KNOWN[0]} to {KNOWN[-1]}): the nearest" + (f"; {TRITON2_READ}" if below else ""),
                  below)


@dataclass(frozen=True)
class Policy:
    """How an engine chooses each side's triton: what the user asked, else the pins and dates; `gate`:
    both sides take the base side's pin and date (the branch is data: it cannot choose its compiler)."""

    asked: Asked = Asked()
    gate: bool = False
    install: bool = True   # False (the diff driver): a toolchain not installed is not downloaded; the
                           # installed triton compiles, and the report says how to add the one asked for


def for_sides(policy: Policy, old_pin: triton_pin.Pin | None, new_pin: triton_pin.Pin | None,
              old: Dated | None, new: Dated) -> tuple[Chosen | None, Chosen]:
    """The triton of each side (None for a comparison with one side: `old` None). Sides that pin
    alike compile with one triton, of the new side's date (a change is judged against its own day);
    the gate's of the base's pin and date, never the branch's (it can forge its commit dates)."""
    gated = policy.gate and old is not None
    new_pin = old_pin if gated else new_pin
    new = old if gated and old is not None else TODAY if policy.gate else new
    alike = (old_pin.spec if old_pin else "") == (new_pin.spec if new_pin else "")
    chosen = choose(policy.asked.new, policy.asked.said_by, new_pin, new)
    if old is None:
        return None, chosen
    return choose(policy.asked.old, policy.asked.said_by, old_pin, new if alike else old), chosen


def note(old: Chosen | None, new: Chosen) -> str | None:
    """The report's line on which triton compiled each side, where it is not simply the installed one."""
    if (old is None or old.version is None) and new.version is None and (old is None or old.why == new.why):
        return None
    if old is None or (old.version == new.version and old.why == new.why):
        return f"compiled with triton {new.name} ({new.why})"
    return f"old side compiled with triton {old.name} ({old.why}); new side with triton {new.name} ({new.why})"


def apply(policy: Policy, old: Side | None, new: Side, old_snap: Snapshot | None, new_snap: Snapshot,
          roots: tuple[str, ...] = (), reads: Iterable[frozenset[str]] = ()) -> tuple[Side | None, Side, str | None]:
    """The sides with the triton each compiles with (each toolchain installed now where it is
    missing, unless the policy says not to), and the report's line on it; pins are read from each
    side's own files, `roots` are where their imports are found (the config's python_path), and
    `reads` are the files each kernel of either side reads (Kernel.paths): what the changed
    files' kernels read is read for what it uses as well as the changed files."""
    import dataclasses
    new_pin = triton_pin.read_pin(new_snap.read, new_snap.paths)
    old_pin = triton_pin.read_pin(old_snap.read, old_snap.paths) if old_snap is not None else None
    if old_snap is not None:   # the files the diff is about use what only some releases have; the
        # gate reads the base's text alone (the branch is data: it cannot choose its compiler)
        changed = list(_changed_sources(old_snap, new_snap, reads, base_only=policy.gate))
        written = triton_pin.written_for(((path, text) for _, path, text in changed),
                                         jit_syntax.uses(((snap, path) for snap, path, _ in changed), roots))
        old_pin, new_pin = triton_pin.capped(old_pin, written), triton_pin.capped(new_pin, written)
    old_date = _dated(old, old_snap) if old is not None and old_snap is not None else None
    o, n = for_sides(policy, old_pin, new_pin, old_date, _dated(new, new_snap))
    ignored = branch_pin(policy, old_pin, new_pin) if old is not None else None
    absent = [] if policy.install else [c for c in dict.fromkeys((o, n))
                                        if c is not None and c.version and find(c.version) is None]
    lines = [f"{c.why} asks for triton {c.version}, not installed: compiled with triton {triton_version()}; "
             f"`ptxdiff toolchain add {c.version}` to compile with it" for c in absent]
    o = Chosen(None, "installed") if o in absent else o
    n = Chosen(None, "installed") if n in absent else n
    for version in dict.fromkeys(c.version for c in (o, n) if c is not None and c.version):
        install(version)
    old = dataclasses.replace(old, toolchain=o.version, triton2=o.triton2) if old is not None and o is not None \
        else old
    return old, dataclasses.replace(new, toolchain=n.version, triton2=n.triton2), \
        "; ".join(filter(None, [note(o, n), ignored, *lines])) or None


def _dated(side: Side, snap: Snapshot) -> Dated:
    """A side's date: its commit's committer time, read through the git facade; today's for a side
    with no commit (the work tree, the index, nothing)."""
    if not side.commit or side.commit == INDEX:
        return TODAY
    return Dated(side.short, snap.repo.commit_info(side.commit).time)


def branch_pin(policy: Policy, old_pin: triton_pin.Pin | None, new_pin: triton_pin.Pin | None) -> str | None:
    """The line for a gate whose branch pins another triton than its base: the branch is data, so
    its pin is report-only and nothing is downloaded for it."""
    if not policy.gate or policy.asked.new is not None or new_pin is None or \
            (old_pin is not None and old_pin.spec == new_pin.spec):
        return None
    return (f"the branch pins triton{new_pin.spec} ({new_pin.source}); the gate compiles both sides with the base's "
            f"triton: the branch's pin is report-only, not downloaded (ptxdiff ci --branch-triton, or ptxdiff diff, "
            f"compiles the branch with it for the report)")


def _changed_sources(old: Snapshot, new: Snapshot, reads: Iterable[frozenset[str]] = (),
                     base_only: bool = False) -> Iterator[tuple[Snapshot, str, bytes]]:
    """(side, path, text) of each Python file that differs between the sides, and of each file a
    kernel that reads one of those reads (a helper module it calls into), each side's text (the
    old side's alone with `base_only`; one side's where both are the same)."""
    def same(path: str) -> bool:
        return path in old and path in new and old.content_id(path) == new.content_id(path)

    changed = {p for p in old.paths | new.paths if p.endswith(".py") and not same(p)}
    read = {p for paths in reads if paths & changed for p in paths if p.endswith(".py")}
    for path in sorted(changed | read):
        sides = [s for s in ((old,) if base_only else (old, new)) if path in s]
        for snap in sides[:1] if path not in changed else sides:
            try:
                yield snap, path, snap.read(path)
            except (OSError, KeyError, PtxdiffError):   # a symlink, a file too large to read
                continue
