"""The lines under each file of `git diff`: one per kernel x spec x target of a report.

The background filler formats a comparison with this once, plain and coloured, and stores both;
the diff driver only prints the stored bytes, so nothing here is on git's warm path.
"""

from __future__ import annotations

from ptxdiff.compare.results import Report, Row
from ptxdiff.report import safe
from ptxdiff.report.columns import COLUMNS, SOURCE_MARK, outputs_cell, readable
from ptxdiff.report.kernels import KernelLine, kernel_lines, short
from ptxdiff.report.narrow import INDENT, WIDTH, fit
from ptxdiff.report.style import DIM, RESET, VERDICT_SGR
from ptxdiff.specs.plan import SpecSource

__all__ = ["INDENT", "WIDTH", "block"]

SPEC_CAP = 64   # a kernel line's spec (the spec rows, `ptxdiff diff --specs` and the JSON have it whole)

Token = tuple[str, str | None, str]   # (text, SGR code or None, separator before it on a line)


def _pack(tokens: list[Token], indent: int = 0) -> list[list[Token]]:
    """Tokens in lines within WIDTH: the first `indent` columns in, the others INDENT more."""
    lines: list[list[Token]] = [[]]
    used = indent
    for text, sgr, sep in tokens:
        if lines[-1] and used + len(sep) + len(text) > WIDTH:
            lines.append([])
            used = indent + len(INDENT)
        used += (len(sep) if lines[-1] else 0) + len(text)
        lines[-1].append((text, sgr, sep))
    return lines


def _show(line: list[Token], colour: bool) -> str:
    """A line's tokens, each run of one colour painted once (the line as text when plain)."""
    out, run, run_sgr = [], "", None
    for i, (text, sgr, sep) in enumerate(line):
        piece = (sep if i else "") + text
        if sgr != run_sgr and run:
            out.append(f"{run_sgr}{run}{RESET}" if colour and run_sgr else run)
            run = ""
            if i:  # the separator stays outside the colour
                out.append(sep)
                piece = text
        run, run_sgr = run + piece, sgr
    if run:
        out.append(f"{run_sgr}{run}{RESET}" if colour and run_sgr else run)
    return "".join(out)


def _lines(tokens: list[Token], colour: bool, indent: str = "") -> list[str]:
    """The tokens as lines within WIDTH, the first after `indent`, the others one INDENT more."""
    return [(indent if i == 0 else indent + INDENT) + _show(line, colour)
            for i, line in enumerate(_pack(tokens, len(indent)))]


def _words(text: str, sgr: str | None = None) -> list[Token]:
    return [(w, sgr, " ") for w in text.split()]


def _facts(r: Row) -> list[Token]:
    """The metrics that changed (every metric of a one-sided row), or the error; and --outputs."""
    if r.error:
        facts = _words(r.error.splitlines()[0][:200])
        facts[:1] = [(facts[0][0], None, "  ")] if facts else []
    else:
        facts = [(f"{c.short} {c.cell(r)}", None, "  ") for c in COLUMNS if c.changed(r)]
    if r.outputs:
        facts.append((f"outputs {outputs_cell(r.outputs)}", None, "  "))
    return facts


def _why(line: KernelLine) -> tuple[str, str] | None:
    """Why the kernel's verdict: its trusted row's reason, else that of the first row with the
    kernel's verdict (named by its spec)."""
    r = line.row
    if r.why and r.verdict == line.verdict:
        return "why:", readable(r.why)
    other = next((x for x in line.rows if x.verdict == line.verdict and (x.why or x.error)), None)
    if other is not None and other is not r:
        said = readable(other.why) if other.why else (other.error or "").splitlines()[0][:200]
        return f"{'why' if other.why else 'error'} [{short(other.spec, SPEC_CAP)}]:", said
    return ("why:", readable(r.why)) if r.why else None


def block(report: Report, colour: bool, specs: bool = False) -> str:
    """Per kernel of a report (with `specs`: per kernel x spec x target), its line (within WIDTH
    columns, continued on indented lines when it cannot be): target, kernel, the spec to trust
    most, the kernel's verdict, what changed in that spec and how many specs agree; what changed
    in its launch, why the verdict and which specs ran go on, indented; a timing summary adds a
    line."""
    lines = []
    rows = list(map(safe.row, report.rows))
    kernels = [KernelLine(r.kernel, r.verdict, r.blocking, r, (r,)) for r in rows] if specs else kernel_lines(rows)
    launched: set[str] = set()
    for line in kernels:
        r = line.as_row(None if specs else SPEC_CAP)
        mark = SOURCE_MARK.get(r.spec_source or "")
        source = f" ({mark})" if mark and r.spec_source != SpecSource.CONFIG else ""
        head = _words(f"ptxdiff {r.target} {r.kernel} [{r.spec}]{source}", DIM)
        agree = [(f"({line.agree})", DIM, "  ")] if len(line.rows) > 1 else []
        lines += _lines([*head, (r.verdict, VERDICT_SGR.get(r.verdict), " "), *_facts(r), *agree], colour)
        # what changed in the launch (once per kernel), why the verdict, what ran: the line goes on
        said = [("launch:", r.launch if r.kernel not in launched else None), _why(line) or ("why:", None),
                ("ran:", line.ran if len(line.rows) > 1 else None)]
        for label, text in said:
            if text:
                lines += _lines([*_words(label, DIM), *_words(text)], colour, INDENT)
        if r.launch:
            launched.add(r.kernel)
        if r.timing and r.timing.get("summary"):
            lines += _lines([*_words(f"ptxdiff {r.target} {r.kernel} time", DIM), *_words(r.timing["summary"])],
                            colour)
    # a single word wider than a line (a kernel id in deep folders) is broken after a `/` or `::`
    return "".join(piece + "\n" for line in lines for piece in fit(line, WIDTH))
