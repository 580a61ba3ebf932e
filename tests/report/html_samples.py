"""Reports and histories for the HTML report's tests, made from the checked-in PTX (tests/data/ptx)
and its kernels' source: real PTX, real `.loc` lines, nothing compiled."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator

from helpers import DATA, metrics
from ptxdiff.compare.history import Event
from ptxdiff.compare.notes import Note, NoteKind
from ptxdiff.compare.results import Report, Row
from ptxdiff.git.values import CommitInfo, Side
from ptxdiff.metrics import ptx, sass
from ptxdiff.metrics.counts import Metrics
from ptxdiff.repo_config import Config

PTX = DATA / "ptx"
HOSTILE = '<script>document.body.setAttribute("data-pwned","1")</script><img src=x onerror="document.title=1">'
TOOLS = {"ptxdiff": "0.1.0", "triton": "3.9.0", "python": "3.11.7"}


@functools.cache
def side(tag: str) -> tuple[Metrics, str, ptx.SourceLines]:
    """(metrics, normalised PTX, source lines) of a fixture."""
    text = (PTX / f"{tag}.ptx").read_text()
    m = metrics(**ptx.metrics(text).as_dict(), regs=14, sass_instrs=40)
    return m, ptx.normalise(text), ptx.source_lines(text)


def listing(tag: str | None) -> str | None:
    """The normalised SASS of a fixture where one is checked in (nvdisasm -c of its cubin)."""
    found = PTX / f"{tag}.nvdisasm"
    return sass.normalise_sass(found.read_text()) if tag and found.is_file() else None


def row(kernel: str, old: str | None, new: str | None, verdict: str, **kw) -> Row:
    a = side(old) if old else None
    b = side(new) if new else None
    kw = {"old_sass": listing(old), "new_sass": listing(new), **kw}
    return Row(kernel, "BLOCK=128 w4 s3", "sm_90", verdict, verdict == "structural", a[0] if a else None,
               b[0] if b else None, {}, old_ptx=a[1] if a else None, new_ptx=b[1] if b else None,
               old_loc=a[2] if a else None, new_loc=b[2] if b else None, **kw)


def read_source(rev: str, path: str) -> str | None:
    """The fixtures' kernels by the name their PTX gives them (/tmp/ptxgen/k_add.py)."""
    found = PTX / "src" / path.rpartition("/")[2]
    return found.read_text() if found.is_file() else None


def diff_report(hostile: bool = False) -> Report:
    """A structural row (add -> mul: one opcode), a constants-only one and an identical one; with
    `hostile`, names, errors and a message that carry markup and script."""
    name = f"ops/{HOSTILE}.py::k" if hostile else "ops/add.py::add_kernel"
    rows = [row(name, "add", "mul", "structural", why="add.f32 -1, mul.f32 +1"),
            row("ops/leaky.py::leaky_kernel", "leaky", "leaky_01", "constants-only",
                why="mul.f32 %r5, %r4, 0f3C23D70A; -> mul.f32 %r5, %r4, 0f3DCCCCCD;"),
            row("ops/sub.py::sub_kernel", "sub", "sub", "identical")]
    if hostile:
        rows.append(row("ops/bad.py::bad_kernel", None, None, "failed", error=f"compile failed: {HOSTILE}",
                        launch=f"BLOCK 1 -> 2 (call site {HOSTILE})"))
    return Report(Side("HEAD~1", "a" * 40), Side("HEAD", "b" * 40), TOOLS, rows, Config(),
                  messages=[Note(NoteKind.CONFIG, None, f"note: {HOSTILE}")] if hostile else [])


def show_report(n: int) -> Report:
    """`ptxdiff show` of n rows (one side each), as a large repository's would be."""
    tags = ("add", "mul", "sub", "leaky", "fma", "noinline")
    rows = [row(f"ops/k{i}.py::kernel_{i}", None, tags[i % len(tags)], "-") for i in range(n)]
    return Report(None, Side("HEAD", "c" * 40), TOOLS, rows, Config())


def history(subject: str = "make it faster") -> list[Event]:
    """Three commits of one kernel: added, its launch changed (identical PTX), then structural."""
    def info(k: int, text: str) -> CommitInfo:
        sha = f"{k}" * 40
        return CommitInfo(sha, sha[:10], "A. Author", 1_700_000_000 + k * 86400, text, text, ())
    kernel = "ops/add.py::add_kernel"
    return [Event(info(1, "add the kernel"), kernel, [row(kernel, None, "add", "added")]),
            Event(info(2, "BLOCK 128"), kernel, [row(kernel, "add", "add", "identical", launch="BLOCK 64 -> 128")]),
            Event(info(3, subject), kernel, [row(kernel, "add", "mul", "structural", why="add.f32 -1, mul.f32 +1")])]


LONG_SPEC = ("BETA=0.0 LOSS_TYPE=0 USE_BIAS_CORRECTION_KL=False L=64 N=64 BLOCK_N=4096 w4 s3 OLD_LOGP:*fp32 "
             "COMPLETION_MASK:*fp32 VLLM_IS_RATIO:*fp32")


def many_kernels(kernels: int = 14, specs: int = 6) -> Report:
    """A real repository's range with many guessed specs: deep kernel ids, long specs, `specs`
    rows per kernel (one structural, the rest identical)."""
    rows = []
    for k in range(kernels):
        name = f"src/liger_kernel/ops/experimental/fused_linear_op_{k}.py::_fused_linear_cross_entropy_bwd_kernel_{k}"
        for s in range(specs):
            verdict = "structural" if s == 1 else "identical"
            r = row(name, "add", "mul" if s == 1 else "add", verdict, spec_source="guessed")
            rows.append(Row(**{**r.__dict__, "spec": f"{LONG_SPEC} MODE={s}"}))
    return Report(Side("HEAD~3", "a" * 40), Side("HEAD", "b" * 40), TOOLS, rows, Config())


def long_lines() -> Report:
    """`diff_report` whose structural row's first PTX and SASS lines are long and differ (a real
    kernel's parameter names and vector loads run past half of a 1400 px screen)."""
    report = diff_report()
    first = report.rows[0]
    names = ", ".join(f"%r{k}" for k in range(40))

    def longer(text: str | None, tag: str) -> str | None:
        return None if text is None else (f"\tld.global.L1::evict_last.v4.b32 {{ {names} }}, [ %rd{tag} + 0 ];"
                                          f" // _fused_linear_cross_entropy_bwd_kernel_param_{tag}\n{text}")
    def loc(lines: ptx.SourceLines | None) -> ptx.SourceLines | None:   # the new line from no source line
        return None if lines is None else ptx.SourceLines(lines.files, ((1, -1, 0), *lines.runs))
    wide = Row(**{**first.__dict__, "old_ptx": longer(first.old_ptx, "1"), "new_ptx": longer(first.new_ptx, "2"),
                  "old_sass": longer(first.old_sass, "1"), "new_sass": longer(first.new_sass, "2"),
                  "old_loc": loc(first.old_loc), "new_loc": loc(first.new_loc)})
    return Report(report.base, report.head, TOOLS, [wide, *report.rows[1:]], Config())


def residuals(nums: list[int]) -> Iterator[int]:
    """A text's numbers' residuals from their `zeros, residual` pairs, zeros after the last."""
    for k in range(0, len(nums), 2):
        yield from [0] * nums[k]
        yield nums[k + 1]
    yield from itertools.repeat(0)


def rebuilt_one(forms: list[list[str]], seen: list[dict[int, int]], base: tuple[list[int], list[list[int]]] | None,
                ops: list[int], nums: list[int]) -> tuple[list[int], list[list[int]], str]:
    """One text of the block as the script rebuilds it: its lines' forms, their numbers, its text."""
    ids: list[int] = []
    values: list[list[int]] = []
    lines: list[str] = []
    shift: dict[str, int] = {}
    left = residuals(nums)
    todo: list[tuple[int, list[int] | None]] = []
    q = 0
    while q < len(ops):
        if ops[q] >= 0:
            todo.append((ops[q], None))
        else:
            assert base is not None
            todo += [(base[0][k], base[1][k]) for k in range(-1 - ops[q], -1 - ops[q] + ops[q + 1])]
            q += 1
        q += 1
    for form, from_base in todo:
        parts, own, text = forms[form], [], forms[form][0]
        for k in range(len(parts) - 1):
            what = parts[k].encode("utf-16-le", "surrogatepass")[-4:].decode("utf-16-le", "surrogatepass")
            if from_base is not None:
                n = from_base[k] + shift.get(what, 0) + next(left)
                shift[what] = n - from_base[k]
            else:
                n = seen[form].get(k, 0) + next(left)
            seen[form][k] = n
            own.append(n)
            text += str(n) + parts[k + 1]
        ids.append(form)
        values.append(own)
        lines.append(text)
    return ids, values, "\n".join(lines)


def rebuilt(block: dict) -> list[str]:
    """What the page's script does with the block's data (report.js, `rebuilt`), step for step:
    numbers kind by the last two UTF-16 units before them, as `slice(-2)` does."""
    forms = [f.split(block["mark"]) for f in block["forms"]]
    seen: list[dict[int, int]] = [{} for _ in forms]
    kept: list[tuple[list[int], list[list[int]]]] = []
    out: list[str] = []
    for (b, ops), nums in zip(block["texts"], block["nums"]):
        ids, values, text = rebuilt_one(forms, seen, kept[b] if b >= 0 else None, ops, nums)
        kept.append((ids, values))
        out.append(text)
    return out
