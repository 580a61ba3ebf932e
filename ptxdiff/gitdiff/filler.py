"""The diff driver's background filler: `python -I -m ptxdiff driver-fill <state dir>`.

A `git diff` queues its comparisons (two revisions, the files git shows) under
`<git dir>/ptxdiff/driver/queue` and waits at most `driver_budget` seconds for their results.
This process, one per repository (an exclusive lock), takes the newest request first, runs
`Engine.compare(old, new)` on it, formats each kernel's lines, places them under the file that
defines the kernel (else the first shown file its effective source reads), and writes the result
where the waiting driver - or the next `git diff` - finds it. It keeps going while requests are
queued (64 at most), then exits. Its output goes to `filler.log` beside the queue.

It is detached from the `git diff` that started it, so nothing else ends it: its whole life is
bounded by an alarm set when it starts (LIFE_REQUESTS requests at the user's per-request
maximum: an hour by default, the age past which a queued request is dropped anyway). At the
alarm the kernel ends it, whatever it is doing; its compile workers die with it and what was
left queued is taken by the next `git diff`'s filler.
"""

from __future__ import annotations

import marshal
import math
import os
import sys
import time

from ptxdiff.fastio import read, replace_file

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (the diff driver starts here)
if TYPE_CHECKING:
    from typing import Any

    from ptxdiff.compare.results import Row
    from ptxdiff.git.values import Side
    from ptxdiff.gitdiff.revisions import Facts, Section

MAX_LOG = 1 << 20
MAX_AGE = 3600.0  # a request nobody has waited for in an hour is dropped
LIFE_REQUESTS = 6   # the filler's life: this many requests at the user's per-request maximum


# -- the queue and the results, as the driver's first call uses them (cheap imports only) ---------

KEEP_RESULTS = 256          # results kept, the newest


def load_result(state: str, key: str, any_kind: bool = False) -> dict[str, Any] | None:
    path = os.path.join(state, "results", key)
    try:
        with open(path, "rb") as f:
            result: dict[str, Any] = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not any_kind and not result.get("keep"):
        return None
    for dep, stamp in result.get("deps", ()):
        try:
            st = os.stat(dep)
            now = f"{st.st_size}:{st.st_mtime_ns}"
        except OSError:
            now = "missing"
        if now != stamp:  # ptxdiff or the toolchain changed since: compute again
            return None
    return result


MAX_QUEUE = 64              # comparisons waiting for the filler, all git commands together


def enqueue(state: str, facts: Facts, sections: list[Section]) -> list[Section]:
    """Queue the comparisons for the filler (the first MAX_QUEUE; older requests make room) and
    make sure one filler runs (one per repository). Returns those queued."""
    queue = os.path.join(state, "queue")
    os.makedirs(os.path.join(state, "results"), exist_ok=True)
    os.makedirs(queue, exist_ok=True)
    batch = time.time_ns()
    sections = sections[:MAX_QUEUE]
    for n, s in enumerate(sections):
        try:  # a result kept from a failed try must not answer this request
            os.unlink(os.path.join(state, "results", s.key))  # type: ignore[arg-type]  # queued: keyed
        except OSError:
            pass
        job = {"key": s.key, "workdir": facts.top, "old": s.old, "new": s.new,
               "pieces": [(os.fsdecode(a), os.fsdecode(b)) for a, b in s.paths]}
        replace_file(os.path.join(queue, f"{batch:020d}-{n:05d}-{s.key}"), marshal.dumps(job))
    older = sorted(n for n in os.listdir(queue) if not n.startswith(f"{batch:020d}-"))
    for name in older[:max(0, len(older) + len(sections) - MAX_QUEUE)]:
        try:
            os.unlink(os.path.join(queue, name))
        except OSError:
            pass
    start_filler(state)
    return sections


def start_filler(state: str) -> None:
    import fcntl

    lock = os.path.join(state, "lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # a filler runs; it takes the new jobs before it stops
    finally:
        os.close(fd)
    log = os.path.join(state, "filler.log")
    env = dict(os.environ, PTXDIFF_FILLER="1")
    for var in ("PTXDIFF_SPOOL", "PTXDIFF_RERUN", "GIT_PAGER_IN_USE", "PTXDIFF_FORCE"):
        env.pop(var, None)
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    for name in os.listdir("/proc/self/fd"):  # git's stdout (the pager waits on it), --output files
        if name.isdigit() and int(name) > 2:
            actions.append((os.POSIX_SPAWN_CLOSE, int(name)))
    try:
        os.posix_spawn(sys.executable, [sys.executable, "-I", "-m", "ptxdiff", "driver-fill", state], env,
                       file_actions=actions, setsid=True)
    except OSError:
        # a descriptor that was closed meanwhile (the listing itself): try once without closing
        os.posix_spawn(sys.executable, [sys.executable, "-I", "-m", "ptxdiff", "driver-fill", state], env,
                       file_actions=actions[:3], setsid=True)


def still_compiling(state: str, key: str, gitdir: str, mine: frozenset[str] = frozenset()) -> str:
    """What the filler is doing for this comparison, from its status file (`mine`: the keys of
    this git command's other comparisons)."""
    status = read(os.path.join(state, "status")).decode("utf-8", "replace").split("\n")
    log = os.path.join(state, "filler.log")
    top = os.path.dirname(gitdir)
    if top and log.startswith(top + os.sep):
        log = log[len(top) + 1:]
    if len(status) > 1 and status[0] == key:
        names = [n for n in status[2:] if n][:8]
        if status[1].endswith(" compiles"):
            count = status[1][:-len(" compiles")].replace("/", " of ")
            what = f"still compiling {', '.join(names)} (compile {count} under way)"
        else:
            what = "still reading the changed kernels and their specs"
    elif status and status[0] in mine:
        what = "queued after this command's comparisons above"
    elif status and status[0]:
        what = "waiting for the compiles of an earlier git command"
    else:
        what = "compiles queued"
    return f"{what}: past driver_budget; a background job fills the cache (log: {log}); run git diff again"


# -- the background process -----------------------------------------------------------------------



def life_bound() -> int:
    """Seconds the filler may live, all requests together: LIFE_REQUESTS at the user's maximum
    per request (PTXDIFF_MAX_TIMEOUT, git config ptxdiff.maxTimeout, else 600 s). A repository's
    own `timeout` lowers a request's bound, never this one."""
    from ptxdiff.sandbox.limits import user_max

    return max(1, math.ceil(LIFE_REQUESTS * user_max()[0]))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: ptxdiff driver-fill STATE_DIR", file=sys.stderr)
        return 2
    state = argv[0]
    import fcntl
    import signal

    life = life_bound()
    signal.signal(signal.SIGALRM, signal.SIG_DFL)   # the alarm ends the process, nothing can catch it
    signal.alarm(life)
    _trim_log(os.path.join(state, "filler.log"))
    fd = os.open(os.path.join(state, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return 0  # another filler runs; it takes the queue
        if not said:
            _log(state, f"filler {os.getpid()} ends within {life} s ({LIFE_REQUESTS} requests at the maximum per request)")
            said = True
        while (job := _next(state)) is not None:
            _run(state, job)
        fcntl.flock(fd, fcntl.LOCK_UN)
        if _next(state, peek=True) is None:  # nothing came in while we were letting go
            return 0


def _trim_log(path: str) -> None:
    try:
        if os.path.getsize(path) > MAX_LOG:
            with open(path, "rb") as f:
                f.seek(-MAX_LOG // 2, os.SEEK_END)
                tail = f.read()
            with open(path, "wb") as f:
                f.write(tail)
    except OSError:
        pass


def _next(state: str, peek: bool = False) -> tuple[str, dict[str, Any]] | None:
    """The newest request's first comparison: the `git diff` waiting now goes first."""
    queue = os.path.join(state, "queue")
    try:
        names = [n for n in os.listdir(queue) if n.count("-") == 2 and not n.endswith(".tmp")]
    except OSError:
        return None
    names.sort(key=lambda n: (-int(n.split("-")[0]), n.split("-")[1]))
    for name in names:
        path = os.path.join(queue, name)
        if time.time() - int(name.split("-")[0]) / 1e9 > MAX_AGE:
            _unlink(path)
            continue
        if peek:
            return name, {}
        try:
            with open(path, "rb") as f:
                job = marshal.load(f)
        except (OSError, EOFError, ValueError, TypeError):
            _unlink(path)
            continue
        _unlink(path)
        return name, job
    return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _log(state: str, text: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {text}", flush=True)


def _run(state: str, item: tuple[str, dict[str, Any]]) -> None:
    name, job = item
    key = job.get("key", "")
    if load_result(state, key) is not None:
        return  # done meanwhile (the same comparison asked twice)
    start = time.monotonic()
    _log(state, f"start {key[:12]} {job.get('old')} -> {job.get('new')} ({len(job.get('pieces', ()))} files)")
    _status(state, key, "starting", [])
    try:
        result = compare(state, job)
    except Exception as e:
        from ptxdiff.errors import GitError, PtxdiffError, SandboxError, SettingError, SetupError

        # a sandbox or toolchain that cannot be set up, or a bad setting, is this machine's state,
        # not the comparison's: not kept
        keep = isinstance(e, PtxdiffError) and not isinstance(e, GitError | SandboxError | SettingError | SetupError)
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        if not isinstance(e, PtxdiffError):
            import traceback

            reason = f"internal error: {type(e).__name__}: {reason}"
            traceback.print_exc()
        result = {"keep": keep, "deps": _deps(), "lines": [], "notes": [reason]}
    _save(state, key, result)
    _status(state, "", "", [])
    _log(state, f"done {key[:12]} in {time.monotonic() - start:.1f}s"
                f"{'' if result['keep'] else ' (not kept: a later run may differ)'}")


def _status(state: str, key: str, progress: str, names: list[str]) -> None:
    try:
        replace_file(os.path.join(state, "status"), ("\n".join([key, progress, *names]) + "\n").encode())
    except OSError:
        pass


def clear_results(state: str) -> tuple[int, list[tuple[str, str]]]:
    """Forget every stored kernel-line result (`ptxdiff cache clear`): (removed, [(path, why)])."""
    folder = os.path.join(state, "results")
    removed, failed = 0, []
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return 0, []
    except OSError as e:
        return 0, [(folder, e.strerror or str(e))]
    for entry in entries:
        try:
            os.unlink(entry.path)
            removed += 1
        except OSError as err:
            failed.append((entry.path, err.strerror or str(err)))
    return removed, failed


def _save(state: str, key: str, result: dict[str, Any]) -> None:
    folder = os.path.join(state, "results")
    os.makedirs(folder, exist_ok=True)
    replace_file(os.path.join(folder, key), marshal.dumps(result))
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.stat().st_mtime)
        for e in entries[:-KEEP_RESULTS]:
            _unlink(e.path)
    except OSError:
        pass


def side(spec: str) -> Side:
    """A job's side spec ("C:<id>", "INDEX", "WORKTREE", "NOTHING") as a git.Side."""
    from ptxdiff.git.values import INDEX, Side

    if spec.startswith("C:"):
        return Side(spec[2:12], spec[2:])
    return {"INDEX": Side("index", INDEX), "WORKTREE": Side("work tree", None),
            "NOTHING": Side("nothing", "")}[spec]


def compare(state: str, job: dict[str, Any]) -> dict[str, Any]:
    """Engine.compare on the job's two sides; the kernel lines per shown file, in order."""
    import dataclasses

    from ptxdiff.compare.engine import Engine
    from ptxdiff.compare.notes import NoteKind
    from ptxdiff.compile import toolchains
    from ptxdiff.git.repo import Repo
    from ptxdiff.permissions import Permissions
    from ptxdiff.report.driver_lines import block
    from ptxdiff.user_settings import load

    repo = Repo(job["workdir"])
    names: list[str] = []

    def progress(line: str) -> None:
        label = line.split("] ", 1)[-1]
        name = label.split(" ", 1)[0]
        if name and name not in names:
            names.append(name)
        _status(state, job["key"], line.split(" ", 1)[0].strip("[]") + " compiles", names)
        print(line, flush=True)

    # GPU timing is the user's own choice (ptxdiff.time, PTXDIFF_TIME=1), as on the command line,
    # and so is the sandbox; the other run-code settings stay off inside git diff. The triton each
    # side targets is chosen as `ptxdiff diff` chooses it (PTXDIFF_TRITON, git config ptxdiff.triton,
    # the side's pins) where that toolchain is installed: git diff downloads nothing
    user = load()
    tritons = toolchains.Policy(toolchains.asked(None, repo.config_get(toolchains.GIT_KEY)), install=False)
    engine = Engine(repo, progress=progress, permissions=Permissions(time=user.time, unsandboxed=user.unsandboxed),
                    tritons=tritons)
    old, new = side(job["old"]), side(job["new"])
    pieces = [tuple(p) for p in job["pieces"]]
    present = repo.snapshot(old).paths | repo.snapshot(new).paths
    paths = sorted({p for pair in pieces for p in pair if p in present})
    lines: list[list[tuple[bytes, bytes]]] = [[] for _ in pieces]
    if not paths:  # no file the engine reads (a symlink, a submodule): nothing to compare
        return {"keep": True, "deps": _deps(), "lines": lines, "notes": []}

    def exact(specs: list[str]) -> list[str]:  # pathspecs are globs to the engine; these are file names
        return [glob_escape(p) for p in specs if p in present]
    report = engine.compare(old, new, exact(paths))
    where = place(report.rows, pieces)
    by_kernel: dict[str, list[Row]] = {}
    for r in report.rows:
        by_kernel.setdefault(r.kernel, []).append(r)
    for kernel, rows in by_kernel.items():  # a kernel's lines together: what changed in its launch said once
        one = dataclasses.replace(report, rows=rows)
        lines[where[kernel]].append((block(one, False).encode("utf-8", "replace"),
                                     block(one, True).encode("utf-8", "replace")))
    notes = [m.text for m in report.messages if m.kind is not NoteKind.NO_KERNELS]
    keep = not any(r.transient for r in report.rows)
    return {"keep": keep, "deps": _deps(), "lines": lines, "notes": notes}


def place(rows: list[Row], pieces: list[tuple[str, str]]) -> dict[str, int]:
    """Kernel id -> index of the shown file its lines go under: the file that defines it, else
    the first shown file its effective source reads (`row.paths`)."""
    where: dict[str, int] = {}
    for r in rows:
        own = {r.kernel.partition("::")[0], (r.old_kernel or r.kernel).partition("::")[0]}
        for i, pair in enumerate(pieces):
            if own & set(pair):
                where.setdefault(r.kernel, i)
                break
    rest = {r.kernel for r in rows} - set(where)
    for i, pair in enumerate(pieces):
        if not rest:
            break
        found = rest if len(pieces) == 1 else {r.kernel for r in rows if r.kernel in rest and set(pair) & set(r.paths)}
        for kid in found:
            where[kid] = i
        rest -= found
    first = next((i for i, pair in enumerate(pieces) if any(pair)), 0)
    for kid in rest:
        where[kid] = first
    return where


def glob_escape(path: str) -> str:
    """A file name as an fnmatch pattern that matches only it."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def _deps() -> list[tuple[str, str]]:
    """Files whose change makes a stored result stale: ptxdiff itself, triton, the tools."""
    import importlib.util

    from ptxdiff import binaries
    from ptxdiff.compile import toolchains

    paths = binaries.source_files()
    paths.append(str(toolchains.root()))   # a toolchain added or removed: the triton chosen may differ
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        site = os.path.dirname(next(iter(spec.submodule_search_locations)))
        paths += sorted(os.path.join(site, n) for n in os.listdir(site)
                        if n.startswith("triton-") and n.endswith(".dist-info"))
    for tool in ("ptxas", "cuobjdump"):
        try:
            paths.append(binaries.tool_path(tool))
        except Exception:
            pass
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append((p, f"{st.st_size}:{st.st_mtime_ns}"))
        except OSError:
            out.append((p, "missing"))
    return out
