"""`ptxdiff diff-driver`: what git runs for `*.py diff=ptxdiff` (through hooks/diff-driver).

git calls the driver once per changed file with blob ids only (7 arguments, 9 for a rename, 1
for an unmerged path), and the driver's output replaces git's for that file. So:

- The first call of a git command (say `git diff A..B -- ops/`) reads that command from the
  process tree (invocation.py), runs it again with `--no-ext-diff` and cuts git's own output into
  per-file pieces (patches.py). Each file's output is git's piece, byte for byte: quoting,
  prefixes, `--relative`, `-U0`, `--word-diff`, colour and `--output=FILE` are git's own.
- Where a person reads it (a terminal, git's pager, or PTXDIFF_FORCE=1), each piece is followed
  by one line per changed kernel: `Engine.compare(old, new)` for the two revisions that git
  compares (the index and the work tree for `git diff`, each commit and its parent for
  `git log -p --ext-diff`), checked against the blob ids git passed. The comparison runs in a
  background process (filler.py); a `git diff` waits on it at most `driver_budget` seconds.
- Everything is written to a spool under the git dir, keyed by the git process; every later
  call of the same git command prints its piece from the spool in the shell shim, without
  starting Python.

This module runs at the start of every `git diff`, so it imports nothing costly: no pygit2, no
subprocess, no dataclasses (tens of milliseconds each; see fastio.py). Which revisions git
compares is revisions.py's; the background comparisons and their queue are filler.py's.
Whatever happens, git's output comes out: the driver never breaks `git diff`.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from ptxdiff import user_settings
from ptxdiff.errors import UsageError
from ptxdiff.fastio import (
    blob_id,
    read,
    rmtree,
    spawn,
    tmp_path,
    wait,
    write,
    write_all,
)
from ptxdiff.gitdiff import filler
from ptxdiff.gitdiff import invocation as inv
from ptxdiff.gitdiff import revisions as rev
from ptxdiff.gitdiff.patches import Commit, Piece, handled, lines_of, matches, piece_bytes, split
from ptxdiff.report.narrow import WIDTH, columns, fit_text

PYTHON_FUNCNAME = r"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$"
SERVE = 10                  # exit status: the spool is ready, the shim prints this file from it


class Unsupported(Exception):
    """The invoking git command cannot be re-run or read; fall back to a per-file diff."""


# -- where things live ----------------------------------------------------------------------------

def git_dir() -> str:
    """The git dir seen from the driver's cwd (git runs drivers at the top of the work tree)."""
    if os.environ.get("GIT_DIR"):
        return os.path.abspath(os.environ["GIT_DIR"])
    if os.path.isdir(".git"):
        return os.path.abspath(".git")
    if os.path.isfile(".git"):
        line = read(".git").splitlines()[0] if read(".git") else b""
        if line.startswith(b"gitdir: "):
            return os.path.abspath(os.fsdecode(line[8:].strip()))
    pid = spawn(["git", "rev-parse", "--absolute-git-dir"], out=tmp_path("gitdir"))
    wait(pid)
    return os.fsdecode(read(tmp_path("gitdir")).strip()) or os.path.abspath(".")


def common_dir(gitdir: str) -> str:
    """The repository's shared git dir (a linked work tree has its own git dir inside it)."""
    rel = read(os.path.join(gitdir, "commondir")).strip()
    return os.path.normpath(os.path.join(gitdir, os.fsdecode(rel))) if rel else gitdir


def state_dir(gitdir: str) -> str:
    """Queue, results, lock and log of the background filler: one per repository."""
    return os.path.join(common_dir(gitdir), "ptxdiff", "driver")


def spool_root(gitdir: str) -> str:
    return os.path.join(gitdir, "ptxdiff", "driver", "spool")


def _clean_spools(root: str, mine: str) -> None:
    """Spools of git commands that are gone (quit pager, killed): nothing reads them any more."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        if entry.path == mine:
            continue
        pid, _, start = entry.name.partition("-")
        if not pid.isdigit() or inv.start_time(int(pid)) != start:
            rmtree(entry.path)


# -- entry points ---------------------------------------------------------------------------------

def main(args: list[str]) -> int:
    """The shim's entry (`python -I -S`): build this git command's spool (exit SERVE), or print
    this file's output (exit 0). Any other exit status makes the shim fall back on its own."""
    raw = [os.fsencode(a) for a in args]
    if len(raw) == 1:
        _out(b"* Unmerged path " + raw[0] + b"\n")
        return 0
    if len(raw) not in (7, 9):
        _out(b"ptxdiff: diff-driver expects 1, 7 or 9 arguments from git, got %d\n" % len(raw))
        return 0
    spool = os.environ.get("PTXDIFF_SPOOL")
    if os.environ.get("PTXDIFF_RERUN"):
        return 0  # a re-run of ours somehow reached the driver: print nothing, never recurse
    force = False
    try:
        user = user_settings.load(config=user_settings.no_config)   # the environment's; git config is git's to pass
        force = user.force
        if spool is None:
            gp = inv.find_git()
            if gp is None:
                raise Unsupported("no git process above this one")
            spool = os.path.join(spool_root(git_dir()), f"{gp.pid}-{gp.start}")
        if os.path.exists(os.path.join(spool, "ready")):
            data = serve(spool, raw)
            if data is not None:
                _emit(spool, data)
                return 0
        elif not os.path.exists(os.path.join(spool, "unsupported")):
            try:
                build(spool, user)
                return SERVE
            except Exception:
                if os.path.isdir(spool):  # the later calls of this git command go straight here
                    write(os.path.join(spool, "unsupported"), b"")
                raise
    except Unsupported:
        pass
    except UsageError as e:  # a bad setting: git's diff, and the one line that names it
        sys.stderr.write(f"ptxdiff: {e}\n")
    except Exception as e:  # keep git's diff coming out, and say why there is nothing more
        if wanted(None, force):
            sys.stderr.write(f"ptxdiff: {type(e).__name__}: {e}\n")
    _out(last_resort(raw))
    return 0


def run(args: list[str]) -> int:
    """`ptxdiff diff-driver ARGS` (cli): the same, printing from the spool itself; exits 0."""
    try:
        rc = main(args)
        if rc == SERVE:
            spool = os.environ.get("PTXDIFF_SPOOL")
            if spool is None:
                gp = inv.find_git()
                spool = os.path.join(spool_root(git_dir()), f"{gp.pid}-{gp.start}") if gp else ""
            data = serve(spool, [os.fsencode(a) for a in args])
            if data is not None:
                _emit(spool, data)
            else:
                _out(last_resort([os.fsencode(a) for a in args]))
    except Exception as e:  # the diff driver always exits 0
        _out(f"ptxdiff: {e}\n".encode())
    return 0


def _out(data: bytes) -> None:
    out = getattr(sys.stdout, "buffer", None)
    if out is None:
        sys.stdout.flush()
        write_all(1, data)
    else:
        out.write(data)
        out.flush()


def _emit(spool: str, data: bytes) -> None:
    """Print to git's stdout, or through git's own file descriptor for --output=FILE."""
    fd = read(os.path.join(spool, "fd")).strip()
    write_all(int(fd) if fd else 1, data)


def wanted(output: bytes | None, force: bool) -> bool:
    """Kernel lines only where a person reads them: a terminal or git's pager (`force`: PTXDIFF_FORCE)."""
    if force:
        return True
    if output is not None:
        return False
    return os.isatty(1) or os.environ.get("GIT_PAGER_IN_USE") == "true"


# -- serving --------------------------------------------------------------------------------------

def serve(spool: str, args: list[bytes]) -> bytes | None:
    """This call's output from a ready spool: the next piece, from the cursor on, that git's
    arguments name. None when none does (the caller falls back)."""
    try:
        with open(os.path.join(spool, "table"), "rb") as f:
            table = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    # the cursor counts the shim's entries (the .py pieces); continue after the last one served
    entries = table["entries"]
    cursor = int(read(os.path.join(spool, "cursor")) or b"0")
    start = entries[cursor - 1] + 1 if 0 < cursor <= len(entries) else 0
    for k in range(start, len(table["pieces"])):
        piece = Piece(*table["pieces"][k][:5])
        piece.old_hex, piece.new_hex, piece.old_mode, piece.new_mode = table["pieces"][k][5:]
        if matches(piece, args):
            write(os.path.join(spool, "cursor"), b"%d\n" % sum(1 for e in entries if e <= k))
            p_lines = lines_of(read(os.path.join(spool, "P")))
            suffix: bytes = table["suffix"][k]
            return piece_bytes(p_lines, piece) + suffix
    if table.get("ignoring"):
        return b""  # -w and friends: git prints nothing for a file whose changes they all ignore
    return None


def last_resort(args: list[bytes]) -> bytes:
    """git's diff of the two files when the git command cannot be re-run: `git diff --no-index`
    with the header names put back (git's default prefixes; not byte-exact in every case)."""
    if len(args) == 1:
        return b"* Unmerged path " + args[0] + b"\n"
    path, old_file, old_hex, old_mode, new_file, new_hex, new_mode = args[:7]
    new_path = args[7] if len(args) >= 9 else path
    out = tmp_path("plain")
    pid = spawn(["git", "diff", "--no-index", "--no-ext-diff", "--no-color", "--", old_file, new_file], out=out)
    wait(pid)
    lines = lines_of(read(out))
    try:
        os.unlink(out)
    except OSError:
        pass
    start = next((i for i, ln in enumerate(lines) if ln.startswith((b"--- ", b"Binary files"))), len(lines))
    old_name = b"/dev/null" if old_file == b"/dev/null" else b"a/" + path
    new_name = b"/dev/null" if new_file == b"/dev/null" else b"b/" + new_path
    head = [b"diff --git a/" + path + b" b/" + new_path]
    if old_file == b"/dev/null":
        head.append(b"new file mode " + new_mode)
    elif new_file == b"/dev/null":
        head.append(b"deleted file mode " + old_mode)
    elif old_mode != new_mode:
        head += [b"old mode " + old_mode, b"new mode " + new_mode]
    ids = [_short(h, f) for h, f in ((old_hex, old_file), (new_hex, new_file))]
    if ids[0] != ids[1]:
        same = old_mode == new_mode and b"/dev/null" not in (old_file, new_file)
        head.append(b"index " + ids[0] + b".." + ids[1] + (b" " + new_mode if same else b""))
    rest = []
    for ln in lines[start:]:
        if ln.startswith(b"--- "):
            ln = b"--- " + old_name + b"\n"
        elif ln.startswith(b"+++ "):
            ln = b"+++ " + new_name + b"\n"
        elif ln.startswith(b"Binary files"):
            ln = b"Binary files " + old_name + b" and " + new_name + b" differ\n"
        rest.append(ln)
    return b"".join(h + b"\n" for h in head) + b"".join(rest)


def _short(hexid: bytes, file: bytes) -> bytes:
    """A side's abbreviated blob id as git shows it (a work-tree side: the hash of the file)."""
    if file == b"/dev/null" or not hexid or hexid == b".":
        return b"0000000"
    if set(hexid) == {ord("0")}:
        try:
            with open(file, "rb") as f:
                return blob_id(f.read(), len(hexid))[:7].encode()
        except OSError:
            return b"0000000"
    return hexid[:7]


# -- building the spool ---------------------------------------------------------------------------

class Rerun:
    """The invoking git command, run again three ways (see patches.py), side by side."""

    def __init__(self, gp: inv.GitProcess, cmd: inv.Command, spool: str, output: bytes | None):
        token = os.urandom(8).hex().encode()
        self.tok_a, self.tok_b, self.tok_c = b"ptxA" + token + b"/", b"ptxB" + token + b"/", b"ptxC" + token
        self.log_like = cmd.name in inv.LOG_LIKE
        prefix = os.environ.get("GIT_PREFIX", "")
        cwd = os.path.join(os.getcwd(), prefix) if prefix else os.getcwd()
        env = dict(os.environ, PTXDIFF_RERUN="1")
        for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY"):
            if env.get(var):  # git hands them over relative to here; the re-run starts elsewhere
                env[var] = os.path.abspath(env[var])
        glob = [b"-C", os.fsencode(cwd)]
        if os.isatty(1) and env.get("GIT_PAGER_IN_USE") != "true" and env.get("TERM") != "dumb":
            # git colours for a terminal; our re-run writes to a file: say "pager" to get the same
            env["GIT_PAGER_IN_USE"] = "true"
            glob += [b"-c", b"color.pager=true"]
        exe = os.fsencode(gp.exe)
        t_extra = [b"--no-ext-diff", b"--full-index", b"--src-prefix=" + self.tok_a, b"--dst-prefix=" + self.tok_b]
        self.files = {name: os.path.join(spool, name) for name in ("P", "T", "T2", "err")}
        p_out = os.fsencode(self.files["P"]) if output is not None else None
        runs = {"P": inv.rerun_argv(gp.exe, cmd, [b"--no-ext-diff"], p_out), "T": inv.rerun_argv(gp.exe, cmd, t_extra)}
        if self.log_like:
            runs["T2"] = inv.rerun_argv(gp.exe, cmd, t_extra + [b"--no-graph", b"--format=tformat:" + self.tok_c +
                                                                 b" %H %P"])
        self.pids = {}
        for name, argv in runs.items():
            argv = [exe, *glob, *argv[1:]]
            out = None if (name == "P" and output is not None) else self.files[name]
            self.pids[name] = spawn(argv, out=out, err=self.files["err"], env=env)
        self.output = output

    def finish(self) -> tuple[list[bytes], list[bytes], list[bytes] | None]:
        for name, pid in self.pids.items():
            if wait(pid) not in (0, 1):  # 1: --exit-code found differences
                err = read(self.files["err"]).decode("utf-8", "replace").strip().splitlines()
                raise Unsupported(f"git re-run failed: {err[-1] if err else name}")
        return (lines_of(read(self.files["P"])), lines_of(read(self.files["T"])),
                lines_of(read(self.files["T2"])) if self.log_like else None)


def build(spool: str, user: user_settings.Settings) -> None:
    """Everything this git command's driver calls will print, written to the spool."""
    t0 = time.monotonic()
    gp = inv.find_git()
    if gp is None:
        raise Unsupported("no git process above this one")
    cmd = inv.command(gp.argv)
    if cmd.name not in inv.READ_ONLY:
        raise Unsupported(f"`git {cmd.name}` is not re-run")
    dargs, loose = inv.diff_args(cmd.args)
    os.makedirs(spool, exist_ok=True)
    _clean_spools(os.path.dirname(spool), spool)
    person = wanted(dargs.output, user.force)
    lines_wanted = person and not user.skip
    rerun = Rerun(gp, cmd, spool, dargs.output)
    facts = rev.Facts(spool, gp, cmd, dargs, loose) if lines_wanted else None
    p_lines, t_lines, t2_lines = rerun.finish()
    if len(p_lines) != len(t_lines):
        raise Unsupported("the two re-runs differ in length")
    try:
        pieces, sections = split(t_lines, rerun.tok_a, rerun.tok_b, t2_lines, rerun.tok_c)
    except ValueError as e:
        raise Unsupported(str(e)) from None
    suffix = [b""] * len(pieces)
    if facts is not None and facts.enabled():
        try:
            suffix = kernel_lines(facts, pieces, sections, p_lines, t0, user.driver_budget)
        except Exception as e:  # git's patch still comes out whole; the reason follows it
            first = next((k for k, p in enumerate(pieces) if _is_python(p)), None)
            if first is not None:
                suffix[first] = _note(f"no kernel lines: internal error: {type(e).__name__}: {e}", False)
    candidates = [k for k, p in enumerate(pieces) if _is_python(p)]
    for n, k in enumerate(candidates):
        p = pieces[k]
        data = piece_bytes(p_lines, p) + suffix[k]
        # how the shim prints it: "r" with its own read loop (no fork: a `cat` costs more than
        # the whole per-file budget on a busy machine), "c" with cat (big, or NUL bytes)
        how = b"c" if len(data) > 32768 or b"\0" in data else b"r"
        ident = b"\n".join([p.old_path, p.new_path, p.old_hex.encode(), p.new_hex.encode(), p.old_mode.encode(),
                            p.new_mode.encode(), b"9" if p.renamed else b"7", how]) + b"\n"
        write(os.path.join(spool, f"{n}.id"), ident)
        write(os.path.join(spool, str(n)), data)
    table = {"pieces": [(p.start, p.length, p.old_path, p.new_path, p.section, p.old_hex, p.new_hex, p.old_mode,
                         p.new_mode) for p in pieces],
             "suffix": suffix, "ignoring": dargs.ignoring, "entries": candidates}
    write(os.path.join(spool, "table"), marshal.dumps(table))
    write(os.path.join(spool, "count"), b"%d\n" % len(candidates))
    write(os.path.join(spool, "cursor"), b"0\n")
    if dargs.output is not None:
        fd = _output_fd(dargs.output)
        if fd is None:
            raise Unsupported("cannot find git's --output file among the open files")
        write(os.path.join(spool, "fd"), b"%d\n" % fd)
    write(os.path.join(spool, "ready"), b"")


def _is_python(p: Piece) -> bool:
    """The pieces git hands to this driver (`*.py diff=ptxdiff` and the launch files); other
    files git prints itself (a piece the shim does not find is still served, by Python, from the
    whole table)."""
    return handled(p.old_path) or handled(p.new_path)


def _output_fd(output: bytes) -> int | None:
    """git writes --output=FILE through a descriptor its children inherit; writing through the
    same one keeps git's file offset right (git flushes before running a driver)."""
    prefix = os.environ.get("GIT_PREFIX", "")
    want = os.path.realpath(os.path.join(os.getcwd(), prefix, os.fsdecode(output)))
    for name in os.listdir("/proc/self/fd"):
        try:
            if int(name) > 2 and os.path.realpath(os.readlink(f"/proc/self/fd/{name}")) == want:
                return int(name)
        except (OSError, ValueError):
            continue
    return None


# -- kernel lines ---------------------------------------------------------------------------------

def kernel_lines(facts: rev.Facts, pieces: list[Piece], commits: list[Commit], p_lines: list[bytes], t0: float,
                 budget_set: float | None = None) -> list[bytes]:
    """Per piece, the kernel lines (and notes) to print after git's part of it; `budget_set`:
    PTXDIFF_DRIVER_BUDGET."""
    suffix = [b""] * len(pieces)
    if not pieces:
        return suffix
    sections = rev.sections(facts, pieces, commits)
    prefix = facts.relative_prefix()
    rev.verify(facts, sections, pieces, prefix)
    colour = not os.environ.get("NO_COLOR") and any(b"\x1b[" in piece_bytes(p_lines, pieces[k])
                                                    for s in sections for k in s.pieces[:1])
    jobs = [s for s in sections if s.problem is None]
    state = state_dir(facts.gitdir)
    for s in jobs:
        s.key = rev.job_key(facts, s)
    results = {s.key: filler.load_result(state, _key(s)) for s in jobs}
    missing = [s for s in jobs if results[s.key] is None]
    if missing:
        budget = driver_budget(facts, missing[0], budget_set)
        queued = filler.enqueue(state, facts, missing)
        for s in missing[len(queued):]:
            s.problem = f"not computed: more than {filler.MAX_QUEUE} comparisons in one git command"
        deadline = t0 + budget
        waiting_line = False
        for s in queued:
            while results[s.key] is None and time.monotonic() < deadline:
                if not waiting_line and time.monotonic() - t0 > 1.0 and os.isatty(2) and \
                        os.environ.get("GIT_PAGER_IN_USE") != "true":
                    sys.stderr.write(f"ptxdiff: compiling (waiting up to {budget:g}s, driver_budget)...")
                    sys.stderr.flush()
                    waiting_line = True
                time.sleep(0.02)
                results[s.key] = filler.load_result(state, _key(s), any_kind=True)
        if waiting_line:  # erased before git's output goes on: nothing is left above the diff
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
    notes_done = False
    for s in sections:
        first = next((k for k in s.pieces if _is_python(pieces[k])), None)
        if first is None:
            continue  # git prints these files itself: nothing can follow them
        if s.problem is not None:
            if not notes_done:
                suffix[first] += _note(f"no kernel lines: {s.problem}", colour)
                notes_done = True
            continue
        result = results.get(s.key)
        if result is None:
            mine = frozenset(_key(x) for x in jobs)
            suffix[first] += _note(filler.still_compiling(state, _key(s), facts.gitdir, mine), colour)
            continue
        width = columns()
        for i, k in enumerate(s.pieces):
            for plain, coloured in result["lines"][i] if i < len(result["lines"]) else ():
                stored = coloured if colour else plain
                # laid out within WIDTH by the filler; a narrower terminal (git sets COLUMNS) breaks them again
                suffix[k] += stored if width >= WIDTH else \
                    fit_text(stored.decode("utf-8", "replace"), width).encode("utf-8", "replace")
        for note in result["notes"]:
            suffix[first] += _note(note, colour)
    return suffix


def _key(s: rev.Section) -> str:
    """A comparison's key: set for every section without a problem before anything reads it."""
    assert s.key is not None
    return s.key


def _note(text: str, colour: bool) -> bytes:
    """A note under git's output, within WIDTH or COLUMNS (a long one goes on, indented)."""
    dim, reset = ("\x1b[2m", "\x1b[m") if colour else ("", "")
    return (fit_text(f"{dim}ptxdiff:{reset} {text}", columns()) + "\n").encode("utf-8", "replace")


def driver_budget(facts: rev.Facts, s: rev.Section, budget_set: float | None) -> float:
    """PTXDIFF_DRIVER_BUDGET (`budget_set`), else the newer side's `driver_budget`, else 10 s."""
    if budget_set is not None:
        return max(0.0, budget_set)
    from ptxdiff.repo_config import Config, load

    try:
        def side_file(path: str) -> bytes:
            return rev.read_file(facts, s.new, path)
        return load(side_file, lambda path: bool(side_file(path))).driver_budget
    except Exception:  # a broken config is the filler's to report
        return Config.driver_budget
