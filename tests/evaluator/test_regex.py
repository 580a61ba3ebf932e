"""Regular expressions in evaluated code cannot run to the compile timeout: the classic
catastrophic shapes are refused before they run, and whatever else backtracks stops at a bound
on CPU time; patterns that real packages use (version parsing) still evaluate."""

from __future__ import annotations

import textwrap

import pytest

from ptxdiff.evaluator import regex
from ptxdiff.evaluator.interp import Interp
from ptxdiff.evaluator.values import Refused
from ptxdiff.source.modules import FileSet, ModuleIndex
from ptxdiff.targets import Device


def value(src: str, name: str = "X"):
    snap = FileSet({"m.py": textwrap.dedent(src).encode()})
    return Interp(ModuleIndex(snap), Device.for_target(90)).env("m.py").resolve(name)


CATASTROPHIC = [
    r"(a+)+$", r"(a|aa)+$", r"(.*a){20}", r"((a+))+$", r"(?:a*)*b", r"(a?){25}a{25}", r"(\w+\s?)+$",
    r"(x+x+)+y", r"((ab)*|a)+c", r"(?P<g>a+)+!", r"(a{1,5}){2,}$", r"(a+?)+?$", r"(a|a)*b",
]
BACKREFERENCES = [r"(a*)\1", r"(?P<x>a)(?P=x)", r"(a)?(?(1)b|c)"]


@pytest.mark.parametrize("pattern", CATASTROPHIC + BACKREFERENCES)
def test_catastrophic_shapes_and_backreferences_are_refused_before_they_run(pattern):
    assert regex.shape_error(pattern) is not None
    src = f"import re\nX = re.match({pattern!r}, 'a' * 40 + 'b')\n"
    with pytest.raises(Refused, match="can backtrack for ever"):
        value(src)


@pytest.mark.parametrize("pattern", [
    r"(\d+)\.(\d+)\.(\d+)", r"v(?P<major>\d+)", r"(git|dev)", r"\s+", r"b+", r"(?i:abc)+", r"[(a+)+]*",
    r"(a+)?b", r"(ab){2}", r"\(a+\)+", r"a{,3}b", r"(?:ab)+", r"(?#(a+)+)x", r"^(\d+)(?:\.(\d+))?$",
])
def test_patterns_of_real_packages_pass_the_shape_check(pattern):
    assert regex.shape_error(pattern) is None


def test_a_polynomial_pattern_stops_at_the_time_bound_and_the_row_says_so():
    """`a*a*...b` on 5,000 characters has no nested group, yet would run for years."""
    pattern = "a*" * 12 + "b"
    assert regex.shape_error(pattern) is None
    with pytest.raises(Refused, match=r"ran past 0\.5 s of CPU time"):
        value(f"import re\nX = re.match({pattern!r}, 'a' * 5000)\n")


@pytest.mark.parametrize("call", ["re.search(P, T)", "re.findall(P, T)", "re.sub(P, '', T)", "re.split(P, T)",
                                  "re.compile(P).fullmatch(T)"])
def test_every_entry_point_is_bounded(call):
    src = f"import re\nP = {'a*' * 12 + 'b'!r}\nT = 'a' * 5000\nX = {call}\n"
    with pytest.raises(Refused, match="ran past"):
        value(src)


def test_the_timer_is_put_back_after_a_match():
    import signal

    before = signal.getsignal(signal.SIGVTALRM)
    assert value("import re\nX = re.match(r'(\\d+)\\.(\\d+)', '2.9.0').groups()\n") == ("2", "9")
    assert signal.getsignal(signal.SIGVTALRM) == before
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


KERNEL = '''import re

import triton
import triton.language as tl

FACTOR = tl.constexpr(2.0 if re.match({pattern!r}, {subject}) is None else 3.0)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)
'''


@pytest.mark.integration
@pytest.mark.parametrize("pattern,subject,said", [
    (r"(a+)+$", "'a' * 40 + 'b'", "can backtrack for ever (nested repetition)"),
    (r"(a|aa)+$", "'a' * 40 + 'b'", "can backtrack for ever (a repeated alternation)"),
    (r"(.*a){20}", "'a' * 40", "can backtrack for ever (nested repetition)"),
    ("a*" * 12 + "b", "'a' * 5000", "ran past 0.5 s of CPU time"),
])
def test_a_backtracking_constant_fails_the_row_with_what_it_is(tmp_path, capsys, pattern, subject, said):
    from helpers import make_repo, rows_by_kernel, run_json, write

    repo = make_repo(tmp_path, {"ops/k.py": KERNEL.format(pattern="x", subject="'y'")})
    write(repo, {"ops/k.py": KERNEL.format(pattern=pattern, subject=subject)})
    (row,) = rows_by_kernel(run_json(["diff", "-C", str(repo)], capsys))["ops/k.py::scale_kernel"]
    assert row["verdict"] == "failed" and row["blocking"] and said in row["error"], row["error"]
    assert "timed out" not in row["error"]
