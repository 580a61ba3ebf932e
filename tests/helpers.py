"""Shared helpers for tests that build small git repositories in tmp_path (a bare remote and
`ptxdiff install` included), and for tests that read reports (metrics of a row, GitHub's HTML).

Everything here is plain functions (plus one fixture factory) so test modules can import what
they need; nothing compiles by itself. Repos are built with the real `git` binary, commits get
a fixed author and a fixed, increasing date, and git is isolated from the user's config.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ptxdiff.metrics.counts import Metrics

PY = sys.executable
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"   # checked-in PTX, cubins and traces
CORPUS = ROOT / "corpus" / "pairs"

AUTHOR_NAME = "Test Author"
AUTHOR_EMAIL = "author@example.com"
# 2026-11-06, after the newest triton release ptxdiff knows: an unpinned test repository compiles
# with the release current at its commits' date, the installed one, never a download (toolchains.RELEASES)
_EPOCH = 1_794_000_000
_tick = itertools.count()

# Variables a test run must not inherit (they change what ptxdiff or git does): every PTXDIFF_
# variable, by prefix, so a new setting is scrubbed without being listed here, and these of git's.
_SCRUB_PREFIX = "PTXDIFF_"
_SCRUB = ("GIT_PAGER_IN_USE", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS",
          "GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "NO_COLOR", "GIT_AUTHOR_DATE",
          "GIT_COMMITTER_DATE", "CI")


def isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Per-test environment: own HOME/global git config, own compile cache. Returns the cache dir."""
    for var in [*_SCRUB, *(v for v in os.environ if v.startswith(_SCRUB_PREFIX))]:
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    gitconfig = home / ".gitconfig"
    gitconfig.write_text("")
    cache = tmp_path / "cache"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", AUTHOR_NAME)
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", AUTHOR_EMAIL)
    monkeypatch.setenv("GIT_COMMITTER_NAME", AUTHOR_NAME)
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", AUTHOR_EMAIL)
    monkeypatch.setenv("TERM", "dumb")
    monkeypatch.setenv("PTXDIFF_CACHE_DIR", str(cache))
    monkeypatch.setenv("PIP_NO_INDEX", "1")   # a toolchain install fails at once, never a download (but `network`)
    return cache


def git(repo: Path | str, *args: str, check: bool = True, env: dict | None = None, input: str | bytes | None = None,
        text: bool = True) -> subprocess.CompletedProcess:
    """Run real git in `repo`; raises with git's output when `check` and it fails."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    if isinstance(input, bytes):
        text = False
    proc = subprocess.run(["git", *args], cwd=str(repo), capture_output=True, text=text, env=full_env, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def write(repo: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = Path(repo) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def commit(repo: Path, message: str, files: dict[str, str | bytes] | None = None, remove: list[str] = (),
           extra: list[str] = ()) -> str:
    """Write `files`, delete `remove`, stage everything and commit with a fixed author and date."""
    if files:
        write(repo, files)
    for rel in remove:
        git(repo, "rm", "-q", "--", rel)
    git(repo, "add", "-A")
    date = f"{_EPOCH + 60 * next(_tick)} +0000"
    git(repo, "commit", "-q", "--allow-empty", "-m", message, *extra,
        env={"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date})
    return head(repo)


def head(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "rev-parse", rev).stdout.strip()


def make_repo(tmp_path: Path, files: dict[str, str | bytes] | None = None, name: str = "repo",
              message: str = "initial") -> Path:
    """A fresh repo (branch main) in tmp_path/name, with one commit holding `files` when given."""
    repo = Path(tmp_path) / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", AUTHOR_NAME)
    git(repo, "config", "user.email", AUTHOR_EMAIL)
    git(repo, "config", "core.autocrlf", "false")
    if files is not None:
        commit(repo, message, files)
    return repo


def make_bare(tmp_path: Path, name: str = "remote.git") -> Path:
    bare = Path(tmp_path) / name
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True, capture_output=True)
    return bare


def add_origin(repo: Path, tmp_path: Path, push: bool = True) -> Path:
    """A bare remote (tmp_path/remote.git) as `origin` of `repo`, with main pushed to it when `push`."""
    bare = make_bare(tmp_path)
    git(repo, "remote", "add", "origin", str(bare))
    if push:
        git(repo, "push", "-q", "-u", "origin", "main")
    return bare


def install(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> None:
    """`ptxdiff install -C repo EXTRA` in this process (diff driver and pre-push hook); it must succeed."""
    rc, _, err = run_main(["install", "-C", str(repo), *extra], capsys)
    assert rc == 0, err


def pushed_repo(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str | bytes],
                hook: str | None = None) -> tuple[Path, Path]:
    """(repo, bare remote): a repo with `files` on main, pushed to a bare remote before ptxdiff was
    installed (so the push is not gated), then installed; `hook`, when given, is a pre-push hook
    file that was there before the install."""
    repo = make_repo(tmp_path, files)
    bare = add_origin(repo, tmp_path)
    if hook is not None:
        write_hook(repo, hook)
    install(repo, capsys)
    return repo, bare


def remote_has(bare: Path, ref: str) -> str | None:
    """The commit `ref` names in the bare remote, or None when it has no such ref."""
    return git(bare, "rev-parse", "--verify", "-q", ref, check=False).stdout.strip() or None


def write_hook(repo: Path, text: str, name: str = "pre-push") -> None:
    """An executable hook file in repo's .git/hooks."""
    path = Path(repo) / ".git" / "hooks" / name
    path.write_text(text)
    path.chmod(0o755)


def corpus(pair: str, side: str) -> str:
    return (CORPUS / pair / f"{side}.py").read_text()


def ptxdiff(args: list[str], cwd: Path, env: dict | None = None, python_flags: list[str] = (),
            input: str | None = None) -> subprocess.CompletedProcess:
    """`python -m ptxdiff ARGS` in a subprocess."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([PY, *python_flags, "-m", "ptxdiff", *args], cwd=str(cwd), capture_output=True,
                          text=True, env=full_env, input=input)


def run_main(args: list[str], capsys) -> tuple[int, str, str]:
    """`ptxdiff.cli.main(args)` in this process; returns (exit code, stdout, stderr)."""
    from ptxdiff.cli.main import main

    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(args: list[str], capsys) -> dict:
    args = list(args)
    cut = args.index("--") if "--" in args else len(args)
    rc, out, err = run_main([*args[:cut], "--format", "json", "-q", *args[cut:]], capsys)
    assert rc in (0, 1), f"exit {rc}: {err}"
    return json.loads(out)


def rows_by_kernel(report: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in report["kernels"]:
        out.setdefault(row["kernel"], []).append(row)
    return out


def snapshot_tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, bytes]]:
    """{relative path: (mode, bytes)} of every file under root (for byte-for-byte comparisons)."""
    out = {}
    root = Path(root)
    if not root.exists():
        return out
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if any(rel == s or rel.startswith(s + "/") for s in skip):
            continue
        if p.is_file() or p.is_symlink():
            out[rel] = (p.lstat().st_mode, p.read_bytes() if p.is_file() else os.readlink(p).encode())
        elif p.is_dir():
            out[rel + "/"] = (p.stat().st_mode, b"")
    return out


def cache_entries(cache: Path) -> list[Path]:
    return sorted(Path(cache).glob("*/*.json.gz"))


# Reports: a row's metrics, and the HTML GitHub shows for Markdown

def html(text: str) -> str:
    """GitHub's own renderer (cmark-gfm, from the test extra), raw HTML kept as GitHub keeps <details>:
    what a review comment or a step summary shows."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(text, options=Options.CMARK_OPT_UNSAFE)


def body_rows(table_html: str) -> list[str]:
    """What is inside each <tr> of the first table body in `table_html`, in order."""
    return re.findall(r"<tr>(.*?)</tr>", table_html.split("<tbody>")[1].split("</tbody>")[0], re.S)


# Tiny kernels: no torch import, small BLOCK, so each compile is quick.
HEADER = "import triton\nimport triton.language as tl\n\n"


def scale_kernel(body_expr: str = "x * 2.0", name: str = "scale_kernel", block: int = 128) -> str:
    return HEADER + f'''
@triton.jit
def {name}(x_ptr, out_ptr, n, BLOCK: tl.constexpr = {block}):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, {body_expr}, mask=mask)
'''


KERNEL_LINE_INDENT = " " * 8   # report/driver_lines.py: a kernel line goes on, indented, past 100 columns


def kernel_lines(text: str) -> list[str]:
    """The kernel lines under `git diff`, each with its continuation lines ("\\n"-joined)."""
    return _continued(text, "ptxdiff ")


def driver_notes(text: str) -> list[str]:
    """The `ptxdiff:` notes under `git diff`, each with its continuation lines ("\\n"-joined):
    a note goes on, indented, past 100 columns or COLUMNS."""
    return _continued(text, "ptxdiff:")


def _continued(text: str, start: str) -> list[str]:
    """The lines that begin with `start` (dimmed or not), each with the indented lines that go on from it."""
    out: list[str] = []
    open_ = False
    for ln in text.splitlines():
        if ln.startswith(start) or ln.startswith("\x1b[2m" + start):
            out.append(ln)
            open_ = True
        elif open_ and ln.startswith(KERNEL_LINE_INDENT) and ln.strip():
            out[-1] += "\n" + ln
        else:
            open_ = False
    return out


def without_kernel_lines(data: bytes) -> bytes:
    """git diff's output without the kernel lines and their continuations: git's own bytes."""
    kept, open_ = [], False
    for ln in data.splitlines(keepends=True):
        if ln.startswith(b"ptxdiff ") or (open_ and ln.startswith(KERNEL_LINE_INDENT.encode()) and ln.strip()):
            open_ = True
            continue
        open_ = False
        kept.append(ln)
    return b"".join(kept)



ZERO = Metrics(ptx_regs=0, ptx_regs_by_type={}, ptx_instrs=0, ptx_opcodes={}, ptx_local_bytes=0, ptx_shared_bytes=0,
               regs=0, spill_store_bytes=0, spill_load_bytes=0, stack_bytes=0, local_bytes=0, shared_bytes=0,
               sass_instrs=0, occupancy=1.0, num_warps=4, num_stages=3, maxnreg=0, num_ctas=1)


def metrics(**counts: Any) -> Metrics:
    """A compile's metrics for tests: the counts given, the others ZERO's (0; occupancy 1.0,
    4 warps, 3 stages, one CTA, empty histograms)."""
    return dataclasses.replace(ZERO, **counts)


def row_metrics(instrs: int, ptx_regs: int | None = None, regs: int = 31) -> Metrics:
    """A row's metrics with these counts (ptx_regs: instrs when not given), the others ZERO's."""
    return metrics(ptx_instrs=instrs, ptx_regs=instrs if ptx_regs is None else ptx_regs, regs=regs)


def fake_toolchain(root: Path, version: str) -> Path:
    """A toolchain folder as install() leaves it, holding the installed triton under another
    version's name (a link, no download): the whole path of another interpreter, its own
    forkserver and sandbox, offline."""
    import sysconfig

    import triton

    prefix = root / f"triton-{version}"
    subprocess.run([sys.executable, "-I", "-m", "venv", "--without-pip", str(prefix)], check=True)
    site = prefix / os.path.relpath(sysconfig.get_path("purelib"), sysconfig.get_config_var("base"))
    if not site.is_dir():
        site = next(prefix.glob("lib/python*/site-packages"))
    (site / "triton").symlink_to(Path(triton.__file__).parent)
    info = site / f"triton-{version}.dist-info"
    info.mkdir()
    real = next(Path(triton.__file__).parent.parent.glob("triton-*.dist-info"))
    for name in ("METADATA", "entry_points.txt"):   # triton finds its backends through its entry points
        if (real / name).exists():
            (info / name).write_bytes((real / name).read_bytes())
    return prefix


def gate_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str], base: str,
                change: str) -> tuple[int, dict[str, Any], int, str]:
    """`base` (ops/k.py) pushed to a bare remote, `change` committed on it: `diff --check`'s exit
    code and JSON report, and the real pre-push hook's exit code and stderr."""
    repo, _ = pushed_repo(tmp_path, capsys, {"ops/k.py": base})
    commit(repo, "change", {"ops/k.py": change})
    rc, out, err = run_main(["-C", str(repo), "diff", "--check", "--format", "json", "-q", "HEAD~1", "HEAD"], capsys)
    assert rc in (0, 1), err
    push = git(repo, "push", "-q", "origin", "main", check=False)
    return rc, json.loads(out), push.returncode, push.stderr


# Kernels whose change hides from one guessed value (issue 41), each with EXPR to replace: a
# product of two loads (an upcast dropped shows only under 16-bit inputs), a float scalar in an
# exp (a cast shows only under an fp64 scalar, as torch.compile launches it), and a heuristic's
# EVEN flag (a heuristic made constant shows only at a size it separated).
PRODUCT = HEADER + '''
@triton.jit
def k(X, Y, Out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n)
    y = tl.load(Y + offs, mask=offs < n)
    tl.store(Out + offs, EXPR, mask=offs < n)
'''

SCALAR = HEADER + '''
@triton.jit
def k(X, Out, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n).to(tl.float32)
    tl.store(Out + offs, tl.exp(x * EXPR), mask=offs < n)
'''

EVEN = HEADER + '''
@triton.heuristics({"EVEN": lambda a: EXPR})
@triton.jit
def k(X, Out, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(X + offs)
    else:
        x = tl.load(X + offs, mask=offs < n, other=0.0)
    tl.store(Out + offs, x * 2.0, mask=offs < n)
'''


class SnapshotFiles:
    """What toolchains.apply reads of a snapshot: paths, read, `in`, content_id, and the date of
    its commit (`repo.commit_info`, here the snapshot itself; UTC seconds, 2026-11-06 by default)."""

    def __init__(self, files: dict[str, str], time: int = 1_794_000_000):
        self.files, self.paths, self.repo, self.time = files, frozenset(files), self, time

    def __contains__(self, path: str) -> bool:
        return path in self.files

    def read(self, path: str) -> bytes:
        return self.files[path].encode()

    def content_id(self, path: str) -> str:
        return str(hash(self.files[path]))

    def commit_info(self, commit: str) -> Any:
        from ptxdiff.git.values import CommitInfo

        return CommitInfo(commit, commit[:10], "A", self.time, "s", "s", ())


# an `@aggregate` whose jit method assigns attributes (triton 3.4 alone compiles it): {jit_import} a
# line of imports, {jit} the method's decorator
RING = '''import triton
import triton.language as tl
{jit_import}

@tl.core._aggregate
class Ring:
    index: tl.tensor
    phase: tl.tensor

    def __init__(self, index, phase):
        self.index = index
        self.phase = phase

    @{jit}
    def step(self):
        nxt = self.index + 1
        self.phase = tl.where(nxt == 0, self.phase ^ 1, self.phase)
        self.index = nxt
        return self
'''
