"""Output that fits, the way a user meets it: `ptxdiff diff` on a terminal of 80 columns (a pty
whose window size is set, COLUMNS unset), into a pipe, with --wide, and the lines under a real
`git diff`. A kernel with a long name and two long specs that differ only in their last value,
changed by one constant (the case of Liger-Kernel's cross entropy)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers import HEADER, PY, git, install, isolate, kernel_lines, make_repo, write

pytestmark = [pytest.mark.integration, pytest.mark.module_env]

KERNEL = "src/liger_kernel/ops/cross_entropy.py::liger_cross_entropy_kernel"
SGR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def source(constant: str) -> str:
    return HEADER + f'''
@triton.jit
def liger_cross_entropy_kernel(x_ptr, out_ptr, n, n_cols: tl.constexpr, HAS_SOFTCAPPING: tl.constexpr,
                               RETURN_Z_LOSS: tl.constexpr, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * {constant}, mask=mask)
'''


CONFIG = f'''[kernels."{KERNEL}"]
signature = {{ x_ptr = "*fp32", out_ptr = "*fp32", n = "i32" }}
constexprs = {{ n_cols = 4096, HAS_SOFTCAPPING = false, RETURN_Z_LOSS = false }}
specs = [ {{ constexprs = {{ BLOCK_SIZE = 128 }} }}, {{ constexprs = {{ BLOCK_SIZE = 256 }} }} ]
'''


@dataclass(frozen=True)
class Fixture:
    repo: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def changed(tmp_path_factory) -> Fixture:
    """Committed: the kernel times -1.702; the work tree: times -1.72 (a constants-only change)."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("fits")
    isolate(tmp, mp)
    repo = make_repo(tmp, {"src/liger_kernel/ops/cross_entropy.py": source("-1.702"), "ptxdiff.toml": CONFIG})
    write(repo, {"src/liger_kernel/ops/cross_entropy.py": source("-1.72")})
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm"
    proc = subprocess.run([PY, "-m", "ptxdiff", "diff", "-q", "--target", "sm_90"], cwd=repo, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr          # compiled once here: the cache is warm for the rest
    yield Fixture(repo, env)
    mp.undo()


def on_terminal(args: list[str], cwd: Path, env: dict[str, str], columns: int = 80) -> str:
    """`python -m ptxdiff ARGS` with its stdout and stderr on a pty of `columns` x 24."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen([PY, "-m", "ptxdiff", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:          # EIO: the child closed the pty
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait()
    os.close(leader)
    return out.decode("utf-8", "replace").replace("\r\n", "\n")


def shown(text: str) -> list[str]:
    """The lines as the terminal shows them: colours gone, a progress line's erasures applied."""
    return [SGR.sub("", ln.rsplit("\r", 1)[-1]) for ln in text.split("\n")]


def table_rows(lines: list[str]) -> list[str]:
    start = next(i for i, ln in enumerate(lines) if ln.startswith("kernel "))
    rows = []
    for ln in lines[start + 2:]:
        if not ln.strip() or ln.startswith(KERNEL):
            break
        rows.append(ln)
    return rows


def test_a_terminal_of_80_columns_breaks_no_word_and_tells_the_specs_apart(changed):
    folded = shown(on_terminal(["diff", "--target", "sm_90"], changed.repo, changed.env))   # a line per kernel
    assert max(len(ln) for ln in folded) <= 80, folded
    assert "2 specs: 2" in " ".join(table_rows(folded)) and "liger_cross_entropy_kernel" in " ".join(folded)
    out = on_terminal(["diff", "--target", "sm_90", "--specs"], changed.repo, changed.env)
    lines = shown(out)
    assert max(len(ln) for ln in lines) <= 80, out
    rows = table_rows(lines)
    cells = " ".join(rows)
    assert "liger_cross_entropy_kernel" in cells                     # the name is whole, not `..._k` / `ernel`
    assert "BLOCK_SIZE=128" in rows[0] and "BLOCK_SIZE=256" in cells and "…" in cells   # what differs, marked cut
    assert "n_cols" not in cells                                    # what every spec of the kernel has
    assert "constants-only" in cells
    why = " ".join(ln for ln in lines if "constants-only:" in ln or ln.startswith("  "))
    assert "-1.7020" in why and "-1.7200" in why and "0f" not in why        # values, not PTX's hex floats


def test_a_pipe_and_wide_cut_nothing(changed):
    spec = "n_cols=4096 HAS_SOFTCAPPING=False RETURN_Z_LOSS=False BLOCK_SIZE=128"
    piped = subprocess.run([PY, "-m", "ptxdiff", "diff", "--target", "sm_90"], cwd=changed.repo, env=changed.env,
                           capture_output=True, text=True)
    assert piped.returncode == 0, piped.stderr
    assert "…" not in piped.stdout
    assert any(ln.startswith(KERNEL) and spec in ln for ln in piped.stdout.splitlines()), piped.stdout
    wide = shown(on_terminal(["diff", "--target", "sm_90", "--wide"], changed.repo, changed.env))
    assert "…" not in "\n".join(wide)
    assert any(ln.startswith(KERNEL) and spec in ln for ln in wide), wide


@pytest.mark.parametrize("columns", [None, 60])
def test_every_line_under_git_diff_fits_100_columns_or_a_narrower_terminal(changed, capsys, columns):
    install(changed.repo, capsys)
    env = {**changed.env, "PTXDIFF_FORCE": "1", **({"COLUMNS": str(columns)} if columns else {})}
    proc = git(changed.repo, "diff", env=env, text=False)
    text = proc.stdout.decode()
    ours = "\n".join(kernel_lines(text)).split("\n") + [ln for ln in text.splitlines() if ln.startswith("ptxdiff:")]
    assert len(kernel_lines(text)) == 1, text                       # a line per kernel
    assert "(2 specs: 2 constants-only)" in " ".join(text.split())
    assert max(len(ln) for ln in ours) <= (columns or 100), text
    assert "why: " in text and "-1.7020" in text and "0fBF" not in text


def test_show_on_a_terminal_has_no_empty_verdict_column(changed):
    lines = shown(on_terminal(["show", "--target", "sm_90"], changed.repo, changed.env))
    header = next(ln for ln in lines if ln.startswith("kernel "))
    assert "verdict" not in header.split() and max(len(ln) for ln in lines) <= 80
    assert all(not ln.rstrip().endswith(" -") for ln in table_rows(lines)), lines
