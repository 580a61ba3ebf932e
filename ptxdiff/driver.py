"""`ptxdiff diff-driver`: what git runs for `*.py diff=ptxdiff` (diff.ptxdiff.command).

Contract with git: 7 args (path old-file old-hex old-mode new-file new-hex new-mode), 9 for a
rename (+ new-path, header text), 1 for an unmerged path. Our output replaces git's for that path,
so we print the header and unified diff exactly as plain git would (git itself computes it:
`git diff --no-index` on the two temp files, header rewritten to the real path), then, only
when a person will read it (a terminal or git's pager, or PTXDIFF_FORCE=1), one line per changed
kernel x spec x target. Whatever happens, we exit 0: a diff driver must never break `git diff`.

Files that never mention triton are passed through after the plain diff, before anything
heavier is loaded: they cannot hold a kernel, a `@triton.jit` helper or a `tl.constexpr`.

Imports: git hands us blobs, not commits. Each blob is laid over the commit it most likely came
from (the newest commit from HEAD back that holds that blob at that path; else HEAD), and a
work-tree side (all-zero id) is the work tree itself, so a kernel's helpers in other files
resolve against that revision.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile

from .errors import PtxdiffError

PYTHON_FUNCNAME = r"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$"


def _colour(repo, to_terminal: bool) -> bool:
    """git's colorbool rule for color.diff (falling back to color.ui), NO_COLOR respected."""
    if os.environ.get("NO_COLOR"):
        return False
    value = None
    if repo is not None:
        value = repo.config_get("color.diff") or repo.config_get("color.ui")
    value = (value or "auto").strip().lower()
    if value in ("always",):
        return True
    if value in ("never", "false", "no", "off", "0"):
        return False
    return to_terminal and os.environ.get("TERM") != "dumb"


def _attributes_file() -> str:
    """An attributes file that gives the temp files git's Python hunk headers."""
    path = os.path.join(tempfile.gettempdir(), f"ptxdiff-{os.getuid()}-python.attributes")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            f.write("* diff=python\n")
        os.replace(tmp, path)
    return path


def plain_diff(args: list[str], colour: bool, prefixes: tuple[str, str] = ("a/", "b/")) -> str:
    """The unified diff git would print for this path, header included."""
    path, old_file, old_hex, old_mode, new_file, new_hex, new_mode = args[:7]
    new_path = args[7] if len(args) >= 9 else path
    cmd = ["git", "-c", f"core.attributesFile={_attributes_file()}", "diff", "--no-index", "--no-ext-diff",
           f"--color={'always' if colour else 'never'}", "--", old_file, new_file]
    proc = subprocess.run(cmd, capture_output=True)
    body = proc.stdout.decode("utf-8", "surrogateescape")
    if proc.returncode not in (0, 1):
        raise PtxdiffError(proc.stderr.decode("utf-8", "replace").strip() or "git diff --no-index failed")
    lines = body.splitlines(keepends=True)
    # drop git's header for the temp files; keep from the first ---/+++ or Binary line on
    start = next((i for i, ln in enumerate(lines) if _strip_ansi(ln).startswith(("--- ", "Binary files"))),
                 len(lines))
    bold, reset = ("\x1b[1m", "\x1b[m") if colour else ("", "")
    src, dst = prefixes
    old_name = "/dev/null" if old_file == "/dev/null" else f"{src}{path}"
    new_name = "/dev/null" if new_file == "/dev/null" else f"{dst}{new_path}"
    header = [f"diff --git {src}{path} {dst}{new_path}"]
    if len(args) >= 9:
        header += [ln for ln in args[8].splitlines() if ln and not ln.startswith("index ")]
    if old_file == "/dev/null":
        header.append(f"new file mode {new_mode}")
    elif new_file == "/dev/null":
        header.append(f"deleted file mode {old_mode}")
    elif old_mode != new_mode:
        header += [f"old mode {old_mode}", f"new mode {new_mode}"]
    abbrev = _abbrev(lines) or 7
    old_short, new_short = _short(old_hex, old_file, abbrev), _short(new_hex, new_file, abbrev)
    # compare content ids, not the raw hex: a work-tree side is all zeros even when unchanged
    if old_short != new_short or old_file == "/dev/null" or new_file == "/dev/null":
        index = f"index {old_short}..{new_short}"
        if old_mode == new_mode and "/dev/null" not in (old_file, new_file):
            index += f" {new_mode}"
        header.append(index)
    rest = []
    for ln in lines[start:]:
        plain = _strip_ansi(ln)
        if plain.startswith("--- "):
            ln = f"{bold}--- {old_name}{reset}\n"
        elif plain.startswith("+++ "):
            ln = f"{bold}+++ {new_name}{reset}\n"
        elif plain.startswith("Binary files"):
            ln = f"Binary files {old_name} and {new_name} differ\n"
        rest.append(ln)
    return "".join(f"{bold}{h}{reset}\n" for h in header) + "".join(rest)


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def _abbrev(lines: list[str]) -> int | None:
    for ln in lines[:6]:
        m = re.match(r"index ([0-9a-f]+)\.\.", _strip_ansi(ln))
        if m:
            return len(m.group(1))
    return None


def _short(hexid: str, file: str, n: int) -> str:
    if file == "/dev/null" or not hexid or hexid == ".":
        return "0" * n
    if set(hexid) == {"0"}:  # work tree: git shows the hash of the file's content
        from .git import content_hash
        with open(file, "rb") as f:
            return content_hash(f.read())[:n]
    return hexid[:n]


def _sides(repo, args: list[str]):
    from .git import Side, is_zero

    path, old_file, old_hex, _old_mode, new_file, new_hex, _new_mode = args[:7]
    new_path = args[7] if len(args) >= 9 else path

    def side(p: str, file: str, hexid: str, label: str) -> Side | None:
        if file == "/dev/null":
            return None
        if is_zero(hexid):
            return Side("work tree", None)
        commit = repo.commit_holding(p, hexid) or repo.head_commit()
        if commit is None:
            return None
        overlay = ((p, hexid),) if repo.has_object(hexid) else ()
        if label == "new" and new_path != path:  # a rename: the old name is gone on this side
            overlay += ((path, ""),)
        return Side(label, commit, overlay)

    return side(path, old_file, old_hex, "old"), side(new_path, new_file, new_hex, "new"), new_path


def _mentions_triton(file: str) -> bool:
    """Any file that defines a kernel, a helper or a tl.constexpr imports triton."""
    try:
        with open(file, "rb") as f:
            return b"triton" in f.read()
    except OSError:
        return False


def block(report, colour: bool) -> str:
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


def wanted() -> bool:
    """Print the metrics block only where a person reads it: a terminal or git's pager."""
    if os.environ.get("PTXDIFF_FORCE") == "1":
        return True
    return sys.stdout.isatty() or os.environ.get("GIT_PAGER_IN_USE") == "true"


def run(args: list[str]) -> int:
    out = sys.stdout
    repo = None
    try:
        from .git import Repo
        repo = Repo(".")
    except Exception:
        repo = None
    to_person = wanted()
    colour = _colour(repo, sys.stdout.isatty() or os.environ.get("GIT_PAGER_IN_USE") == "true")
    if len(args) == 1:
        out.write(f"* Unmerged path {args[0]}\n")
        return 0
    if len(args) not in (7, 9):
        out.write(f"ptxdiff: diff-driver expects 1, 7 or 9 arguments from git, got {len(args)}\n")
        return 0
    try:
        noprefix = repo is not None and repo.config_bool("diff.noprefix", False)
        out.write(plain_diff(args, colour, ("", "") if noprefix else ("a/", "b/")))
    except Exception as e:  # the plain diff itself failed: say so, still exit 0
        out.write(f"ptxdiff: could not print the diff of {args[0]}: {e}\n")
        return 0
    out.flush()
    if not to_person or os.environ.get("PTXDIFF_SKIP") == "1" or \
            (repo is not None and not repo.config_bool("ptxdiff.enabled", True)):
        return 0
    if not any(_mentions_triton(f) for f in (args[1], args[4])):
        return 0  # no kernel and no kernel's helper or constant can live in it
    try:
        from .engine import Engine
        from .git import Side

        old, new, new_path = _sides(repo, args)
        if new is None:
            return 0  # a deleted file: its kernels are gone, the diff says so
        progress = (lambda line: print(f"ptxdiff: {line}", file=sys.stderr, flush=True)) \
            if sys.stderr.isatty() or os.environ.get("PTXDIFF_PROGRESS") else None
        renames = {new_path: args[0]} if new_path != args[0] else None
        report = Engine(repo, progress=progress).compare(old or Side("nothing", ""), new, sorted({new_path, args[0]}),
                                                         renames=renames)
        out.write(block(report, colour))
        out.write("".join(f"ptxdiff: {m}\n" for m in report.messages))
    except Exception as e:
        reason = str(e).splitlines()[0] if str(e) else ""
        if not isinstance(e, PtxdiffError):
            reason = f"{type(e).__name__}: {reason}"
        out.write(f"ptxdiff: {args[0]}: {reason}\n")
    return 0
