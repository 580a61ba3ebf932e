"""`ptxdiff demo`: the whole product in a minute, in a throwaway repo built from corpus pairs.

It runs the commands a user would type (real git, a bare remote, the installed driver and
hook) and says where the repo is, so the user can look around afterwards.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from ptxdiff.corpus.pairs import corpus_dir, load_pairs
from ptxdiff.report.console import width

PAIRS = ("gelu", "leaky_relu")



def quoted(cmd: list[str]) -> str:
    """A command as a shell reads it back: a word with a space or a quote in it quoted (the
    approval's trailer), `HEAD~1` left plain. Pasted, it runs."""
    return " ".join(w if re.fullmatch(r"[\w@%+=:,./~^-]+", w) else shlex.quote(w) for w in cmd)

def _env(width: int | None) -> dict[str, str]:
    """The steps' environment: a fixed author, kernel lines under git diff although its output is
    captured, and the width of the terminal the demo prints to, if any (their output goes there)."""
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="Demo Author", GIT_AUTHOR_EMAIL="demo@example.invalid",
               GIT_COMMITTER_NAME="Demo Author", GIT_COMMITTER_EMAIL="demo@example.invalid",
               PTXDIFF_FORCE="1", GIT_PAGER="cat", PAGER="cat")
    if width is not None:
        env["COLUMNS"] = str(width)
    env.pop("PTXDIFF_SKIP", None)
    return env


def _wait() -> bool:
    """Enter goes on; end of input (Ctrl-D) stops the demo quietly."""
    try:
        input("\n[enter] ")
        return True
    except EOFError:
        print()
        return False


class Stop(Exception):
    """The person at the prompt ended input: the demo stops here, without an error, saying where
    its repository is (the exception's message)."""


def _where(work: Path, remote: Path) -> str:
    return f"The demo repo is at {work} (remote: {remote}).\nLook around, e.g.: cd {work} && git diff HEAD~1"


def run(pause: bool = False, out: TextIO | None = None, colour: bool = False) -> int:
    """The demo; `pause`: wait for enter after each step when stdin is a terminal; `colour`:
    headings and the steps' verdicts coloured (ptxdiff --color=always, git -c color.ui=always);
    `out`: stdout as it is when the demo runs (not when this module was imported)."""
    out = sys.stdout if out is None else out
    try:
        return _run(pause, out, colour)
    except Stop as stop:
        print(f"Stopped early. {stop}", file=out)
        return 0


def _run(pause: bool, out: TextIO, colour: bool) -> int:
    root = Path(tempfile.mkdtemp(prefix="ptxdiff-demo-"))
    work, remote = root / "work", root / "remote.git"
    env = _env(width(out))
    ptxdiff = [sys.executable, "-m", "ptxdiff"]
    failures = []

    def step(title: str, cmd: list[str], expect: int | None = 0) -> str:
        shown = quoted(cmd if cmd[0] != sys.executable else ["ptxdiff", *cmd[3:]])
        heading = f"\033[1m## {title}\033[m" if colour else f"## {title}"
        print(f"\n{heading}\n$ {shown}", file=out, flush=True)
        if colour:  # the steps write to a pipe: ask them for the colours a terminal gets
            cmd = [*cmd[:3], "--color=always", *cmd[3:]] if cmd[0] == sys.executable else \
                [cmd[0], "-c", "color.ui=always", *cmd[1:]]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        text = proc.stdout + proc.stderr
        print(text.rstrip(), file=out, flush=True)
        if expect is not None and (proc.returncode == 0) != (expect == 0):
            failures.append(f"{shown}: exit {proc.returncode}, expected {'0' if expect == 0 else 'non-zero'}")
        if pause and sys.stdin.isatty() and not _wait():
            raise Stop(_where(work, remote))
        return text

    pairs = {p.name: p for p in load_pairs(names=list(PAIRS))}
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True, env=env)
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True, env=env)
    (work / "kernels").mkdir()
    (work / "kernels" / "__init__.py").write_text("")
    for name, p in pairs.items():
        (work / "kernels" / f"{name}.py").write_text(p.source(corpus_dir(), "old"))
    step("A repo with two Triton kernels, pushed to a remote", ["git", "remote", "add", "origin", str(remote)])
    subprocess.run(["git", "add", "-A"], cwd=work, env=env, check=True)
    subprocess.run(["git", "commit", "-qm", "Add gelu and leaky_relu kernels"], cwd=work, env=env, check=True)
    step("Install the git integration (diff driver + pre-push gate)", [*ptxdiff, "install"])
    step("First push (new kernels are 'added': not blocked)", ["git", "push", "-q", "origin", "main"])
    for name, p in pairs.items():
        (work / "kernels" / f"{name}.py").write_text(p.source(corpus_dir(), "new"))
    step("Edit both kernels: git diff shows the PTX deltas under each file", ["git", "diff"])
    subprocess.run(["git", "commit", "-qam", "Simplify gelu; tune leaky_relu slope"], cwd=work, env=env, check=True)
    step("The same as a table: ptxdiff diff HEAD~1", [*ptxdiff, "diff", "HEAD~1", "HEAD"])
    step("git push is blocked: gelu changed structurally", ["git", "push", "origin", "main"], expect=1)
    step("A reviewer approves gelu with a commit trailer",
         ["git", "commit", "--amend", "--no-edit", "--trailer", "Ptx-Approved: kernels/gelu.py::gelu_kernel"])
    step("Now the push passes", ["git", "push", "origin", "main"])
    step("The kernel's history", [*ptxdiff, "log", "gelu_kernel"])
    print(f"\n{_where(work, remote)}", file=out)
    if failures:
        print("demo: unexpected results:\n  " + "\n  ".join(failures), file=out)
        return 3
    return 0
