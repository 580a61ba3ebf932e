"""`ptxdiff diff-driver`: what git runs for `*.py diff=ptxdiff` (through hooks/diff-driver).

git calls the driver once per changed file with blob ids only (7 arguments, 9 for a rename, 1
for an unmerged path), and the driver's output replaces git's for that file. So:

- The first call of a git command (say `git diff A..B -- ops/`) reads that command from the
  process tree (invocation.py), runs it again with `--no-ext-diff` and cuts git's own output into
  per-file pieces (patchsplit.py). Each file's output is git's piece, byte for byte: quoting,
  prefixes, `--relative`, `-U0`, `--word-diff`, colour and `--output=FILE` are git's own.
- Where a person reads it (a terminal, git's pager, or PTXDIFF_FORCE=1), each piece is followed
  by one line per changed kernel: `Engine.compare(old, new)` for the two revisions that git
  compares (the index and the work tree for `git diff`, each commit and its parent for
  `git log -p --ext-diff`), checked against the blob ids git passed. The comparison runs in a
  background process (filler.py); a `git diff` waits on it at most `driver_budget` seconds.
- Everything is written to a spool under the git dir, keyed by the git process; every later
  call of the same git command prints its piece from the spool with `cat`, in the shell shim,
  without starting Python.

This module runs at the start of every `git diff`, so it imports nothing costly: no pygit2, no
subprocess, no dataclasses (tens of milliseconds each); git is run with os.posix_spawn. Whatever
happens, git's output comes out: the driver never breaks `git diff`.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from . import invocation as inv
from .patchsplit import MISSING, UNKNOWN, Piece, lines_of, matches, piece_bytes, split

PYTHON_FUNCNAME = r"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$"
SERVE = 10                  # exit status: the spool is ready, the shim prints this file from it
DEFAULT_BUDGET = 10.0       # seconds a `git diff` waits on compiles (config key driver_budget)
TRANSIENT = ("timed out", "crashed", "worker died", "interrupted")  # errors a later run may not repeat
KEEP_RESULTS = 256


class Unsupported(Exception):
    """The invoking git command cannot be re-run or read; fall back to a per-file diff."""


# -- small process helpers: fork and exec (the subprocess module costs ~20 ms to import, and
# -- posix_spawn waits for each child's exec, which serialises the git runs we start together) --

def _spawn(argv: list, out: str | None = None, inp: str | None = None, err: str | None = None,
           env: dict | None = None) -> int:
    argv = [os.fsencode(a) for a in argv]
    path = argv[0] if b"/" in argv[0] else _which(argv[0])
    env = os.environ if env is None else env
    pid = os.fork()
    if pid == 0:  # the child: only redirections, then exec
        try:
            for fd, name, flags in ((0, inp or os.devnull, os.O_RDONLY),
                                    (1, out or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                    (2, err or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND)):
                new = os.open(name, flags, 0o600)
                os.dup2(new, fd)
                os.close(new)
            os.execve(path, argv, env)
        finally:
            os._exit(127)
    return pid


_FOUND: dict[bytes, bytes] = {}


def _which(name: bytes) -> bytes:
    if name not in _FOUND:
        _FOUND[name] = name
        for d in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
            full = os.path.join(os.fsencode(d or "."), name)
            if os.access(full, os.X_OK):
                _FOUND[name] = full
                break
    return _FOUND[name]


def _wait(pid: int) -> int:
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data) if len(data) < 1 << 20 else _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _replace(path: str, data: bytes) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    _write(tmp, data)
    os.replace(tmp, path)


def _rmtree(path: str) -> None:
    try:
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=False):
                _rmtree(entry.path)
            else:
                os.unlink(entry.path)
        os.rmdir(path)
    except OSError:
        pass


def _sha256(data: bytes) -> str:
    try:
        from _sha256 import sha256
    except ImportError:  # Python >= 3.12
        from hashlib import sha256
    return sha256(data).hexdigest()


def blob_id(data: bytes, length: int) -> str:
    """The id git gives these bytes as a blob (SHA-1, or SHA-256 for a sha256 repository)."""
    if length == 64:
        return _sha256(b"blob %d\0" % len(data) + data)
    try:
        from _sha1 import sha1
    except ImportError:  # pragma: no cover
        from hashlib import sha1
    return sha1(b"blob %d\0" % len(data) + data).hexdigest()


# -- where things live ----------------------------------------------------------------------------

def git_dir() -> str:
    """The git dir seen from the driver's cwd (git runs drivers at the top of the work tree)."""
    if os.environ.get("GIT_DIR"):
        return os.path.abspath(os.environ["GIT_DIR"])
    if os.path.isdir(".git"):
        return os.path.abspath(".git")
    if os.path.isfile(".git"):
        line = _read(".git").splitlines()[0] if _read(".git") else b""
        if line.startswith(b"gitdir: "):
            return os.path.abspath(os.fsdecode(line[8:].strip()))
    pid = _spawn(["git", "rev-parse", "--absolute-git-dir"], out=_tmp("gitdir"))
    _wait(pid)
    return os.fsdecode(_read(_tmp("gitdir")).strip()) or os.path.abspath(".")


def _tmp(name: str) -> str:
    return os.path.join(os.environ.get("TMPDIR", "/tmp"), f"ptxdiff-{os.getuid()}-{os.getpid()}-{name}")


def common_dir(gitdir: str) -> str:
    """The repository's shared git dir (a linked work tree has its own git dir inside it)."""
    rel = _read(os.path.join(gitdir, "commondir")).strip()
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
            _rmtree(entry.path)


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
    try:
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
                build(spool, raw)
                return SERVE
            except Exception:
                if os.path.isdir(spool):  # the later calls of this git command go straight here
                    _write(os.path.join(spool, "unsupported"), b"")
                raise
    except Unsupported:
        pass
    except Exception as e:  # keep git's diff coming out, and say why there is nothing more
        if wanted(None):
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
        _write_all(1, data)
    else:
        out.write(data)
        out.flush()


def _emit(spool: str, data: bytes) -> None:
    """Print to git's stdout, or through git's own file descriptor for --output=FILE."""
    fd = _read(os.path.join(spool, "fd")).strip()
    _write_all(int(fd) if fd else 1, data)


def wanted(output: bytes | None) -> bool:
    """Kernel lines only where a person reads them: a terminal or git's pager (PTXDIFF_FORCE=1)."""
    if os.environ.get("PTXDIFF_FORCE") == "1":
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
    cursor = int(_read(os.path.join(spool, "cursor")) or b"0")
    start = entries[cursor - 1] + 1 if 0 < cursor <= len(entries) else 0
    for k in range(start, len(table["pieces"])):
        piece = Piece(*table["pieces"][k][:5])
        piece.old_hex, piece.new_hex, piece.old_mode, piece.new_mode = table["pieces"][k][5:]
        if matches(piece, args):
            _write(os.path.join(spool, "cursor"), b"%d\n" % sum(1 for e in entries if e <= k))
            p_lines = lines_of(_read(os.path.join(spool, "P")))
            return piece_bytes(p_lines, piece) + table["suffix"][k]
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
    out = _tmp("plain")
    pid = _spawn(["git", "diff", "--no-index", "--no-ext-diff", "--no-color", "--", old_file, new_file], out=out)
    _wait(pid)
    lines = lines_of(_read(out))
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
    """The invoking git command, run again three ways (see patchsplit), side by side."""

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
            self.pids[name] = _spawn(argv, out=out, err=self.files["err"], env=env)
        self.output = output

    def finish(self) -> tuple[list[bytes], list[bytes], list[bytes] | None]:
        for name, pid in self.pids.items():
            if _wait(pid) not in (0, 1):  # 1: --exit-code found differences
                err = _read(self.files["err"]).decode("utf-8", "replace").strip().splitlines()
                raise Unsupported(f"git re-run failed: {err[-1] if err else name}")
        return (lines_of(_read(self.files["P"])), lines_of(_read(self.files["T"])),
                lines_of(_read(self.files["T2"])) if self.log_like else None)


def build(spool: str, args: list[bytes]) -> None:
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
    person = wanted(dargs.output)
    lines_wanted = person and os.environ.get("PTXDIFF_SKIP") != "1"
    rerun = Rerun(gp, cmd, spool, dargs.output)
    facts = Facts(spool, gp, cmd, dargs, loose) if lines_wanted else None
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
            suffix = kernel_lines(facts, pieces, sections, p_lines, t0)
        except Exception as e:  # git's patch still comes out whole; the reason follows it
            first = next((k for k, p in enumerate(pieces) if p.new_path.endswith(b".py")), 0)
            if pieces:
                suffix[first] = _note(f"no kernel lines: internal error: {type(e).__name__}: {e}", False)
    candidates = [k for k, p in enumerate(pieces) if p.old_path.endswith(b".py") or p.new_path.endswith(b".py")]
    for n, k in enumerate(candidates):
        p = pieces[k]
        data = piece_bytes(p_lines, p) + suffix[k]
        # how the shim prints it: "r" with its own read loop (no fork: a `cat` costs more than
        # the whole per-file budget on a busy machine), "c" with cat (big, or NUL bytes)
        how = b"c" if len(data) > 32768 or b"\0" in data else b"r"
        ident = b"\n".join([p.old_path, p.new_path, p.old_hex.encode(), p.new_hex.encode(), p.old_mode.encode(),
                            p.new_mode.encode(), b"9" if p.renamed else b"7", how]) + b"\n"
        _write(os.path.join(spool, f"{n}.id"), ident)
        _write(os.path.join(spool, str(n)), data)
    table = {"pieces": [(p.start, p.length, p.old_path, p.new_path, p.section, p.old_hex, p.new_hex, p.old_mode,
                         p.new_mode) for p in pieces],
             "suffix": suffix, "ignoring": dargs.ignoring, "entries": candidates}
    _write(os.path.join(spool, "table"), marshal.dumps(table))
    _write(os.path.join(spool, "count"), b"%d\n" % len(candidates))
    _write(os.path.join(spool, "cursor"), b"0\n")
    if dargs.output is not None:
        fd = _output_fd(dargs.output)
        if fd is None:
            raise Unsupported("cannot find git's --output file among the open files")
        _write(os.path.join(spool, "fd"), b"%d\n" % fd)
    _write(os.path.join(spool, "ready"), b"")


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

class Facts:
    """What the kernel lines need to know from git, asked in parallel with the re-runs."""

    def __init__(self, spool: str, gp: inv.GitProcess, cmd: inv.Command, dargs: inv.DiffArgs, loose: list[bytes]):
        self.spool, self.gp, self.cmd, self.dargs = spool, gp, cmd, dargs
        self.gitdir = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(spool))))
        self.top = os.getcwd()
        self.files = {n: os.path.join(spool, n) for n in ("config", "revs", "revs.in", "files", "tree")}
        self.pids = {"config": _spawn(["git", "config", "-z", "--get-regexp", r"^(ptxdiff\.enabled|diff\.relative)$"],
                                      out=self.files["config"])}
        self.revs: list[bytes] = []
        self.tokens: list[tuple[bytes, list]] = []
        self._config: dict[bytes, bytes] | None = None
        # the index's entries and the work tree's files (tracked or not, not ignored), in one run
        self.lazy = {"files": ["git", "ls-files", "-s", "-z", "--cached", "--others", "--exclude-standard"]}
        if cmd.name not in inv.LOG_LIKE and not dargs.no_index:
            if len(loose) < 2 and not any(b".." in a for a in loose):
                # the index or the work tree is likely a side: list them now, while git re-runs
                self.pids["files"] = _spawn(self.lazy.pop("files"), out=self.files["files"])
            if not loose and not dargs.cached and not dargs.merge_base:
                return  # the index and the work tree: no revision to resolve
            names = [b"HEAD"]
            for tok in loose:
                terms = inv.rev_terms(tok)
                if terms is not None:
                    self.tokens.append((tok, terms))
                    names += [rev for _, rev in terms]
            self.revs = list(dict.fromkeys(names))
            _write(self.files["revs.in"], b"".join(r + b"^{commit}\n" for r in self.revs))
            self.pids["revs"] = _spawn(["git", "cat-file", "--batch-check"], inp=self.files["revs.in"],
                                       out=self.files["revs"])

    def _listing(self) -> None:
        """Split `git ls-files -s --others`: index entries ("mode id stage<TAB>path"), then the
        untracked files (bare paths)."""
        self._index: dict[bytes, str] = {}
        self._staged: list[bytes] = []
        self._files: set[bytes] = set()
        for entry in self._done("files").split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            word = meta.split(b" ")
            if tab and len(word) == 3 and len(word[1]) in (40, 64) and word[0].isdigit():
                self._staged.append(entry)
                self._files.add(path)
                if word[2] == b"0":
                    self._index[path] = word[1].decode()
            elif entry:
                self._files.add(entry)

    def index(self) -> dict[bytes, str]:
        """path -> blob id of the index's stage-0 entries."""
        if not hasattr(self, "_index"):
            self._listing()
        return self._index

    def index_entries(self) -> list[bytes]:
        self.index()
        return self._staged

    def work_files(self) -> set[bytes]:
        self.index()
        return self._files

    def _done(self, name: str) -> bytes:
        pid = self.pids.pop(name, None)
        if pid is None and name in self.lazy:
            pid = _spawn(self.lazy.pop(name), out=self.files[name])
        if pid is not None:
            _wait(pid)
        return _read(self.files[name])

    def config(self) -> dict[bytes, bytes]:
        if self._config is None:
            self._config = {}
            for item in self._done("config").split(b"\0"):
                key, _, value = item.partition(b"\n")
                if key:
                    self._config[key.lower()] = value
        return self._config

    def enabled(self) -> bool:
        return _bool(self.config().get(b"ptxdiff.enabled"), True)

    def resolved(self) -> dict[bytes, str]:
        out = {}
        for rev, line in zip(self.revs, self._done("revs").splitlines()):
            word = line.split()
            if len(word) >= 2 and word[1] == b"commit":
                out[rev] = word[0].decode()
        return out

    def relative_prefix(self) -> bytes:
        """What git strips from the names it shows (--relative, diff.relative)."""
        rel = self.dargs.relative
        if rel is None and _bool(self.config().get(b"diff.relative"), False):
            rel = b""
        if rel is None:
            return b""
        if rel == b"":
            return os.fsencode(os.environ.get("GIT_PREFIX", ""))
        rel = rel.strip(b"/")
        return rel + b"/" if rel else b""


def _bool(value: bytes | None, default: bool) -> bool:
    if value is None:
        return default
    return value.strip().lower() in (b"", b"true", b"yes", b"on", b"1")


def diff_sides(facts: Facts) -> tuple[str, str] | str:
    """(old, new) of a `git diff`-like command as side specs ("C:<id>", "INDEX", "WORKTREE",
    "NOTHING"), or the reason they cannot be told."""
    d, name = facts.dargs, facts.cmd.name
    if d.no_index:
        return "--no-index compares files, not revisions"
    resolved = facts.resolved()
    head = resolved.get(b"HEAD")
    pos, neg, sym = [], [], []
    for tok, terms in facts.tokens:
        if all(rev in resolved for _, rev in terms):
            for kind, rev in terms:
                (pos if kind == "pos" else neg if kind == "neg" else sym).append("C:" + resolved[rev])
        elif any(rev in resolved for _, rev in terms):
            return f"cannot read {tok.decode('utf-8', 'replace')!r} as a revision"
    work = "INDEX" if d.cached or name == "diff-index" and d.cached else "WORKTREE"
    if name == "diff-files":
        old, new = "INDEX", "WORKTREE"
    elif sym:
        if len(sym) != 1 or len(pos) != 1 or neg:
            return "more than one symmetric range"
        base = merge_base(sym[0][2:], pos[0][2:])
        if base is None:
            return "the two revisions have no common ancestor"
        old, new = "C:" + base, pos[0]
    elif d.merge_base:
        if len(pos) == 1 and not neg and head:
            base = merge_base(pos[0][2:], head)
            old, new = ("C:" + base if base else None), work
        elif len(pos) == 2 and not neg:
            base = merge_base(pos[0][2:], pos[1][2:])
            old, new = ("C:" + base if base else None), pos[1]
        else:
            return "--merge-base with these revisions"
        if old is None:
            return "the revisions have no common ancestor"
    elif not pos and not neg:
        if name == "diff-tree":
            return "diff-tree without revisions"
        old, new = (("C:" + head if head else "NOTHING"), "INDEX") if d.cached else ("INDEX", "WORKTREE")
    elif len(pos) == 1 and not neg:
        if name == "diff-tree":
            return "parent"  # one commit against its first parent, like show
        old, new = pos[0], work
    elif len(pos) == 1 and len(neg) == 1:
        old, new = neg[0], pos[0]
    elif len(pos) == 2 and not neg:
        old, new = pos[0], pos[1]
    else:
        return "more than two revisions (a combined diff)"
    return (new, old) if d.reverse else (old, new)


def merge_base(a: str, b: str) -> str | None:
    out = _tmp("mb")
    _wait(_spawn(["git", "merge-base", a, b], out=out))
    base = _read(out).strip().decode()
    try:
        os.unlink(out)
    except OSError:
        pass
    return base or None


class Section:
    """One comparison whose kernel lines go under some pieces: its sides and its pieces."""

    def __init__(self, old: str, new: str, pieces: list[int]):
        self.old, self.new, self.pieces = old, new, pieces
        self.problem: str | None = None
        self.key: str | None = None
        self.paths: list[tuple[bytes, bytes]] = []


def kernel_lines(facts: Facts, pieces: list[Piece], commits, p_lines: list[bytes], t0: float) -> list[bytes]:
    """Per piece, the kernel lines (and notes) to print after git's part of it."""
    suffix = [b""] * len(pieces)
    if not pieces:
        return suffix
    sections = _sections(facts, pieces, commits)
    prefix = facts.relative_prefix()
    _verify(facts, sections, pieces, prefix)
    colour = not os.environ.get("NO_COLOR") and any(b"\x1b[" in piece_bytes(p_lines, pieces[k])
                                                    for s in sections for k in s.pieces[:1])
    jobs = [s for s in sections if s.problem is None]
    state = state_dir(facts.gitdir)
    for s in jobs:
        s.key = job_key(facts, s)
    results = {s.key: load_result(state, s.key) for s in jobs}
    missing = [s for s in jobs if results[s.key] is None]
    if missing:
        budget = driver_budget(facts, missing[0])
        queued = enqueue(state, facts, missing)
        for s in missing[len(queued):]:
            s.problem = f"not computed: more than {MAX_QUEUE} comparisons in one git command"
        deadline = t0 + budget
        waiting_line = False
        for s in queued:
            while results[s.key] is None and time.monotonic() < deadline:
                if not waiting_line and time.monotonic() - t0 > 1.0 and os.isatty(2) and \
                        os.environ.get("GIT_PAGER_IN_USE") != "true":
                    sys.stderr.write(f"ptxdiff: compiling (waiting up to {budget:g}s, driver_budget)...\n")
                    waiting_line = True
                time.sleep(0.02)
                results[s.key] = load_result(state, s.key, any_kind=True)
    notes_done = False
    for s in sections:
        if not s.pieces:
            continue
        first = s.pieces[0]
        if s.problem is not None:
            if not notes_done:
                suffix[first] += _note(f"no kernel lines: {s.problem}", colour)
                notes_done = True
            continue
        result = results.get(s.key)
        if result is None:
            suffix[first] += _note(still_compiling(state, s.key, facts.gitdir), colour)
            continue
        for i, k in enumerate(s.pieces):
            for plain, coloured in result["lines"][i] if i < len(result["lines"]) else ():
                suffix[k] += coloured if colour else plain
        for note in result["notes"]:
            suffix[first] += _note(note, colour)
    return suffix


def _note(text: str, colour: bool) -> bytes:
    dim, reset = ("\x1b[2m", "\x1b[m") if colour else ("", "")
    return f"{dim}ptxdiff:{reset} {text}\n".encode("utf-8", "replace")


def _sections(facts: Facts, pieces: list[Piece], commits) -> list[Section]:
    if facts.cmd.name in inv.LOG_LIKE:
        out = []
        by_section: dict[int, list[int]] = {}
        for k, p in enumerate(pieces):
            by_section.setdefault(p.section, []).append(k)
        for n, c in enumerate(commits):
            if n not in by_section:
                continue
            parent = c.parents[c.parent_index] if c.parent_index < len(c.parents) else None
            if c.parents and parent is None:
                s = Section("", "", by_section[n])
                s.problem = "a merge compared with something other than its parents"
            else:
                s = Section("C:" + parent if parent else "NOTHING", "C:" + c.commit, by_section[n])
            out.append(s)
        return out
    sides = diff_sides(facts)
    if sides == "parent":
        head = [v for k, v in facts.resolved().items() if k != b"HEAD"]
        parent = _first_parent(head[0]) if head else None
        sides = ("C:" + parent if parent else "NOTHING", "C:" + head[0]) if head else "no revision"
    if isinstance(sides, str):
        s = Section("", "", list(range(len(pieces))))
        s.problem = f"cannot tell which revisions `git {facts.cmd.name}` compares ({sides})"
        return [s]
    return [Section(sides[0], sides[1], list(range(len(pieces))))]


def _first_parent(commit: str) -> str | None:
    out = _tmp("parent")
    _write(out + ".in", commit.encode() + b"^1^{commit}\n")
    _wait(_spawn(["git", "cat-file", "--batch-check"], inp=out + ".in", out=out))
    word = _read(out).split()
    for f in (out, out + ".in"):
        try:
            os.unlink(f)
        except OSError:
            pass
    return word[0].decode() if len(word) >= 2 and word[1] == b"commit" else None


def _verify(facts: Facts, sections: list[Section], pieces: list[Piece], prefix: bytes) -> None:
    """A side is trusted only where it holds, at each piece's path, the blob git passed."""
    queries: list[bytes] = []
    checks: list[tuple[Section, str, bytes]] = []  # (section, expected hex, path) per query
    for s in sections:
        if s.problem is not None:
            continue
        for k in s.pieces:
            p = pieces[k]
            old_path, new_path = prefix + p.old_path, prefix + p.new_path
            if not (_regular(p.old_mode) or _regular(p.new_mode)):
                s.paths.append((b"", b""))  # a symlink or a submodule: link text, never a module
                continue
            s.paths.append((old_path, new_path))
            for spec, path, want in ((s.old, old_path, p.old_hex), (s.new, new_path, p.new_hex)):
                if want == UNKNOWN or want != MISSING and not _regular(p.old_mode if spec == s.old else p.new_mode):
                    continue
                if spec == "NOTHING":
                    if want != MISSING:
                        s.problem = "a side git passed is not in the revision"
                    continue
                if want == MISSING:
                    continue  # the path may exist there: git shows it as new (e.g. --no-renames)
                if b"\n" in path:
                    s.problem = "a file name with a newline"
                    continue
                if spec == "WORKTREE":
                    try:
                        with open(os.path.join(facts.top, os.fsdecode(path)), "rb") as f:
                            data = f.read()
                    except OSError:
                        data = None
                    if data is None or blob_id(data, len(want)) != want:
                        s.problem = "the work tree differs from what git shows (filters?)"
                    continue
                if spec == "INDEX":
                    if facts.index().get(path) != want:
                        s.problem = f"{os.fsdecode(path)} in the index is not the blob git passed"
                    continue
                queries.append(spec[2:].encode() + b":" + path + b"\n")
                checks.append((s, want, path))
    if not queries:
        return
    _write(facts.files["tree"] + ".in", b"".join(queries))
    _wait(_spawn(["git", "cat-file", "--batch-check"], inp=facts.files["tree"] + ".in", out=facts.files["tree"]))
    answers = _read(facts.files["tree"]).splitlines()
    for (s, want, path), line in zip(checks, answers + [b""] * (len(checks) - len(answers))):
        if line.split()[:1] != [want.encode()]:
            s.problem = f"{os.fsdecode(path)} in the revision is not the blob git passed"


def _regular(mode: str) -> bool:
    return mode in ("100644", "100755", UNKNOWN)


def job_key(facts: Facts, s: Section) -> str:
    """Names the comparison's inputs: both sides' content, the files, the knobs."""
    parts = [b"ptxdiff-driver-1", sys.version.encode()]
    for spec in (s.old, s.new):
        parts.append(spec.encode())
        if spec == "INDEX":
            parts.append(_index_stamp(facts))
        elif spec == "WORKTREE":
            parts.append(_worktree_stamp(facts))
    for old, new in s.paths:
        parts += [old, new]
    parts += [f"{k}={v}".encode() for k, v in sorted(os.environ.items())
              if k.startswith("TRITON_") or k in ("PTXDIFF_TIME", "PTXDIFF_CUOBJDUMP", "PTXDIFF_PTXAS")]
    return _sha256(b"\0".join(parts))[:40]


def _index_stamp(facts: Facts) -> bytes:
    return _sha256(b"\0".join(facts.index_entries())).encode()


def _worktree_stamp(facts: Facts) -> bytes:
    """Size, time and inode of every .py and config file of the work tree (what the engine
    reads), tracked or not: cheap, and any edit changes it."""
    stamp = []
    for path in sorted(facts.work_files()):
        if path.endswith(b".py") or path in (b"pyproject.toml", b"ptxdiff.toml"):
            try:
                st = os.lstat(os.path.join(os.fsencode(facts.top), path))
                stamp.append(b"%s %d %d %d %d" % (path, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode))
            except OSError:
                stamp.append(path + b" -")
    return _sha256(b"\n".join(stamp)).encode()


def driver_budget(facts: Facts, s: Section) -> float:
    """PTXDIFF_DRIVER_BUDGET, else the newer side's `driver_budget`, else 10 s."""
    env = os.environ.get("PTXDIFF_DRIVER_BUDGET")
    if env:
        try:
            return max(0.0, float(env))
        except ValueError:
            pass
    try:
        from .config import load
        spec = s.new
        def read(path: str) -> bytes:
            if spec == "WORKTREE":
                return _read(os.path.join(facts.top, path))
            out = facts.files["tree"] + ".cfg"
            ref = ":0:" if spec == "INDEX" else spec[2:] + ":"
            _write(out + ".in", f"{ref}{path}\n".encode())
            _wait(_spawn(["git", "cat-file", "--batch"], inp=out + ".in", out=out))
            data = _read(out)
            head, _, body = data.partition(b"\n")
            return body[:int(head.split()[2])] if head.split()[1:2] == [b"blob"] else b""
        return load(read, lambda path: bool(read(path))).driver_budget
    except Exception:  # a broken config is the filler's to report
        return DEFAULT_BUDGET


# -- the background filler's queue and results ----------------------------------------------------

def load_result(state: str, key: str, any_kind: bool = False) -> dict | None:
    path = os.path.join(state, "results", key)
    try:
        with open(path, "rb") as f:
            result = marshal.load(f)
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


MAX_QUEUE = 64  # comparisons waiting for the filler, all git commands together


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
            os.unlink(os.path.join(state, "results", s.key))
        except OSError:
            pass
        job = {"key": s.key, "workdir": facts.top, "old": s.old, "new": s.new,
               "pieces": [(os.fsdecode(a), os.fsdecode(b)) for a, b in s.paths]}
        _replace(os.path.join(queue, f"{batch:020d}-{n:05d}-{s.key}"), marshal.dumps(job))
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


def still_compiling(state: str, key: str, gitdir: str) -> str:
    """What the filler is doing for this comparison, from its status file."""
    status = _read(os.path.join(state, "status")).decode("utf-8", "replace").split("\n")
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
    elif status and status[0]:
        what = "waiting for the compiles of an earlier git command"
    else:
        what = "compiles queued"
    return f"{what}: past driver_budget; a background job fills the cache (log: {log}); run git diff again"


def block(report, colour: bool) -> str:
    """One line per kernel x spec x target of a report (the filler formats with this)."""
    from .report import cell, outputs_cell

    dim, warn, reset = ("\x1b[2m", "\x1b[33m", "\x1b[m") if colour else ("", "", "")
    lines = []
    keys = (("ptx_instrs", "ptx_instrs"), ("ptx_regs", "ptx_regs"), ("regs", "regs"), ("spills", "spills"),
            ("shared_bytes", "shared"), ("occupancy", "occ"))
    for r in report.rows:
        metrics = "  ".join(f"{label} {cell(r, key)}" for key, label in keys)
        verdict = f"{warn}{r.verdict}{reset}" if r.blocking else r.verdict
        line = f"{dim}ptxdiff {r.target} {r.kernel} [{r.spec}]{reset} {verdict}"
        if r.error:
            line += f"  {r.error.splitlines()[0][:200]}"
        else:
            line += f"  {metrics}"
        if r.outputs:
            line += f"  outputs {outputs_cell(r.outputs)}"
        lines.append(line)
        if r.timing and r.timing.get("summary"):
            lines.append(f"{dim}ptxdiff {r.target} {r.kernel} time{reset} {r.timing['summary']}")
    return "".join(line + "\n" for line in lines)
