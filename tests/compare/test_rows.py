"""The rows of a compared pair, and the pairing of kernels and pathspecs: pure functions on
in-memory spec results, table-driven."""

from __future__ import annotations

import dataclasses

import pytest

from helpers import metrics
from ptxdiff import repo_config
from ptxdiff.compare import gate_inputs
from ptxdiff.compare.pairing import Pair, pair_kernels, path_matches, select
from ptxdiff.compare.rows import (
    NO_BRANCH,
    UNFIT,
    UNFIT_ONE_SIDE,
    blocks,
    error_text,
    pair_rows,
    said_rows,
    same_failure,
    unparsed_rows,
    verdict_of,
)
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.discovery.hints import Hint
from ptxdiff.discovery.kernels import Broken, Discovery, Kernel
from ptxdiff.discovery.params import Param
from ptxdiff.metrics.counts import Metrics
from ptxdiff.specs import guesses
from ptxdiff.specs.detail import SpecDetail

PTX = "ld.global.f32 %f1, [%rd1];\nadd.f32 %f2, %f1, %f1;\nst.global.f32 [%rd2], %f2;"
METRICS = metrics(ptx_opcodes={"ld": 1, "add": 1, "st": 1}, ptx_instrs=3, ptx_regs=4)


def kernel(kid: str = "k.py::k", fingerprint: str = "f") -> Kernel:
    path, name = kid.split("::")
    return Kernel(id=kid, path=path, name=name, module=path[:-3], lineno=1, fingerprint=fingerprint,
                  params=(Param("x_ptr", False, "*fp32"), Param("BLOCK", True, None)), paths=frozenset({path}))


def ok(key: str = "s", ptx: str = PTX, measured: Metrics = METRICS, source: str = "config") -> SpecResult:
    return SpecResult(key, key, spec=SpecDetail(source=source), metrics=measured, ptx=ptx)


def bad(key: str | None = "s", error: str = "compile failed: at 1:2: no", source: str = "config") -> SpecResult:
    return SpecResult(key, key or "-", spec=SpecDetail(source=source), error=error)


A, B, FAIL_A, FAIL_B = ok(), ok(ptx=PTX.replace("add", "mul"),
                               measured=metrics(ptx_opcodes={"ld": 1, "mul": 1, "st": 1}, ptx_instrs=3, ptx_regs=4)), \
    bad(), bad()


@pytest.mark.parametrize("a, b, has_base, verdict", [
    (A, A, True, "identical"),
    (A, B, True, "structural"),
    (None, A, True, "added"),
    (None, A, False, "-"),
    (A, None, True, "removed"),
    (FAIL_A, A, True, "failed"),
    (A, FAIL_B, True, "failed"),
    (FAIL_A, FAIL_B, True, "unmeasured"),
    (FAIL_A, FAIL_A, True, "unmeasured"),      # one failure standing for both sides (before specs)
    (None, FAIL_B, True, "added"),
    (FAIL_A, None, True, "removed"),
    (None, FAIL_B, False, "failed"),
])
def test_the_verdict_of_two_spec_results(a: SpecResult | None, b: SpecResult | None, has_base: bool, verdict: str) -> None:
    assert verdict_of(a, b, has_base)[0] == verdict


def test_a_structural_verdict_says_why_and_a_failure_does_not() -> None:
    assert verdict_of(A, B, True)[1] and verdict_of(FAIL_A, FAIL_B, True)[1] is None


@pytest.mark.parametrize("a, b, has_base, text", [
    (A, B, True, None),
    (bad(error="x"), A, True, "old: x"),
    (A, bad(error="y"), True, "new: y"),
    (bad(error="x"), bad(error="y"), True, "old: x; new: y"),
    (FAIL_A, FAIL_A, True, FAIL_A.error),
    (None, bad(error="y"), False, "y"),
])
def test_the_error_text_names_the_sides_only_where_there_is_a_base(a: SpecResult | None, b: SpecResult | None, has_base: bool,
                                                                      text: str | None) -> None:
    assert error_text(a, b, has_base) == text


@pytest.mark.parametrize("verdict, source, error, changes, blocking", [
    ("structural", "config", None, {}, True),
    ("reordered", "config", None, {}, False),
    ("structural", "guessed", None, {}, True),
    ("structural", "guessed", None, {"block_guessed": False}, False),
    ("unmeasured", "guessed", "e", {"block": ()}, True),            # the gate fails closed
    ("unmeasured", "config", "e", {"block": (), "block_unmeasured": False}, False),
    ("added", None, "e", {"block": ()}, True),                       # added, and not measured
    ("added", None, None, {}, False),
    ("failed", None, "e", {}, True),
])
def test_the_block_policy(verdict: str, source: str | None, error: str | None, changes: dict, blocking: bool) -> None:
    assert blocks(verdict, source, dataclasses.replace(repo_config.Config(), **changes), error) is blocking


@pytest.mark.parametrize("a, b, same", [
    ("k.py:12:5: bad", "k.py:14:5: bad", True),
    ("k.py:12:5: bad", "k.py:12:5: worse", False),
    ("ops/old/k.py:12:5: bad", "ops/new/k.py:40:1: bad", True),          # the kernel moved to another file
    # MLIR's diagnostics name the revision in the location
    ("PassManager::run failed (ops/k.py@8bbe1a54a8:45:1: error: Failures)",
     "PassManager::run failed (ops/k2.py@c81eb798a5:59:5: error: Failures)", True),
    ("PassManager::run failed (ops/k.py@8bbe1a54a8:45:1: error: Failures)",
     "PassManager::run failed (ops/k.py@c81eb798a5:45:1: error: Other)", False),
    # and its `loc(...)` quotes the file: `loc("ops/k.py@rev":533:11)`
    ('CompileTimeAssertionFailure (loc("ops/k.py@3ce1babb46":533:11): error: operation scheduled before its operands)',
     'CompileTimeAssertionFailure (loc("ops/k.py@26439b3607":533:11): error: operation scheduled before its operands)',
     True),
    (None, "x", False),
    ("", "", False),
])
def test_two_failures_are_the_same_but_for_where_they_are(a: str | None, b: str | None, same: bool) -> None:
    assert same_failure(a, b) is same


def pair(old: Kernel | None = None, new: Kernel | None = None, **kw: object) -> Pair:
    return Pair(old, new, None, None, None, None, **kw)  # type: ignore[arg-type]


def test_pair_rows_pair_specs_by_key_and_block_on_a_change() -> None:
    k_old, k_new = kernel(fingerprint="a"), kernel(fingerprint="b")
    rows = pair_rows(pair(k_old, k_new), [ok("s1"), ok("s2")], [ok("s1"), dataclasses.replace(B, key="s2", label="s2")], 90,
                     repo_config.Config(), True)
    assert [(r.spec, r.verdict, r.blocking, r.target) for r in rows] == [
        ("s1", "identical", False, "sm_90"), ("s2", "structural", True, "sm_90")]
    assert rows[1].old == METRICS and rows[1].why and rows[1].paths == ("k.py",)


def test_each_side_of_a_row_carries_its_kept_cubin_for_the_html_report() -> None:
    (row,) = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), [dataclasses.replace(A, cubin="old")],
                       [B], 90, repo_config.Config(), True)
    assert (row.old_cubin, row.new_cubin, row.old_sass, row.new_sass) == ("old", None, None, None)
    assert "old_cubin" not in row.as_json()


def test_pair_rows_without_a_base_show_no_old_side_and_never_block() -> None:
    (row,) = pair_rows(pair(None, kernel()), None, [FAIL_B], 90, repo_config.Config(), False)
    assert (row.verdict, row.blocking, row.old, row.error) == ("failed", False, None, FAIL_B.error)


def test_a_side_that_failed_before_specs_stands_against_every_spec_of_the_other() -> None:
    rows = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), [bad(None, "import failed")],
                     [ok("s1"), ok("s2")], 90, repo_config.Config(), True)
    assert [(r.spec, r.verdict, r.error) for r in rows] == [("- -> s1", "failed", "old: import failed"),
                                                            ("- -> s2", "failed", "old: import failed")]


def test_rows_of_the_report_only_never_block_and_say_so() -> None:
    (row,) = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b"), role=gate_inputs.Role.REPORT), [A], [B], 90,
                       repo_config.Config(), True)
    assert (row.verdict, row.blocking, row.launch) == ("structural", False, gate_inputs.NOT_THE_GATE)


@pytest.mark.parametrize("old, new, why", [
    ([bad("g", "compile failed: k.py:3: too big", "guessed"), ok("o")],
     [bad("g", "compile failed: k.py:4: too big", "guessed"), ok("o")], UNFIT),
    ([ok("o")], [bad("g", "compile failed: no", "guessed"), ok("o")], UNFIT_ONE_SIDE),
    # a crash names its spec, whose label differs where the sides' constexprs do (GPTQ-triton's
    # `scales_ptr:*bf16`, an LLVM error in one guessed combination on both sides)
    ([dataclasses.replace(bad("g", "worker crashed (signal SIGSEGV) during k sm_90 B=32 s:*bf16: LLVM ERROR: mma",
                              "guessed"), label="B=32 s:*bf16"), ok("o")],
     [dataclasses.replace(bad("g", "worker crashed (signal SIGSEGV) during k sm_90 F=1 B=32 s:*bf16: LLVM ERROR: mma",
                              "guessed"), label="F=1 B=32 s:*bf16"), ok("o")], UNFIT),
])
def test_guessed_values_that_do_not_fit_are_said_and_do_not_block(old: list[SpecResult], new: list[SpecResult], why: str) -> None:
    rows = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), old, new, 90, repo_config.Config(), True)
    (unfit,) = [r for r in rows if r.error]
    assert (unfit.why, unfit.blocking) == (why, False)


def moded(fingerprint: str, *modes: str) -> Kernel:
    """A kernel whose MODE a side compares with `modes` (and guesses one matching none, "")."""
    hint = Hint((*modes, ""), "compared", True)
    return dataclasses.replace(kernel(fingerprint=fingerprint), params=(Param("x_ptr", False, "*fp32"),
                                                                        Param("MODE", True, None, hint)))


def guessed_mode(result: SpecResult, mode: str) -> SpecResult:
    return dataclasses.replace(result, spec=SpecDetail(constexprs={"MODE": mode}, source="guessed",
                                                       guessed=(guesses.value("MODE", mode),)))


@pytest.mark.parametrize("old_modes, fits", [
    (("a",), True),          # `MODE="new"`: no branch of the old side compares with it
    (("a", "new"), False),   # the old side has that branch: its failure is a failure
])
def test_a_value_that_selects_no_branch_on_one_side_does_not_fit_it(old_modes: tuple, fits: bool) -> None:
    """A string mode that only the new side compares (`elif MODE == "new":` added): the old side
    fails with it, reaching none of its branches; its other specs compile."""
    error = "compile failed: k.py:7:12: NameError: out is not defined"
    old = [guessed_mode(bad("new", error), "new"), guessed_mode(ok("a"), "a")]
    new = [guessed_mode(ok("new"), "new"), guessed_mode(ok("a"), "a")]
    rows = pair_rows(pair(moded("a", *old_modes), moded("b", "a", "new")), old, new, 90, repo_config.Config(), True)
    (row,) = [r for r in rows if r.verdict == "failed"]
    assert (row.why == NO_BRANCH, row.blocking) == (fits, not fits)


def test_a_pin_that_contradicts_the_launch_sites_is_a_failed_row_per_target() -> None:
    rows = said_rows(pair(kernel(), kernel(), said=("pins BLOCK",)), [80, 90], repo_config.Config())
    assert [(r.target, r.verdict, r.blocking, r.error) for r in rows] == [
        ("sm_80", "failed", True, "pins BLOCK"), ("sm_90", "failed", True, "pins BLOCK")]


@pytest.mark.parametrize("old_b, new_b, verdict, error", [
    (None, Broken("k.py", "syntax"), "failed", "new: syntax"),
    (Broken("k.py", "a"), Broken("k.py", "b"), "unmeasured", "new: b; old: a"),
])
def test_a_file_that_does_not_parse_fails_its_kernels(old_b: Broken | None, new_b: Broken | None, verdict: str,
                                                      error: str) -> None:
    found = Discovery({"k.py::k": kernel()}, {})
    rows = unparsed_rows(old_b, new_b, found, Discovery({}, {}), [90], repo_config.Config())
    assert [(r.kernel, r.verdict, r.error, r.blocking) for r in rows] == [("k.py::k", verdict, error, True)]


@pytest.mark.parametrize("path, specs, matches", [
    ("ops/k.py", None, True),
    ("ops/k.py", ["ops"], True),
    ("ops/k.py", ["ops/"], True),
    ("ops/k.py", ["op"], False),
    ("ops/k.py", ["*.py"], True),
    ("ops/k.py", ["."], True),
    ("ops/k.py", ["other.py"], False),
])
def test_path_matches(path: str, specs: list[str] | None, matches: bool) -> None:
    assert path_matches(path, specs) is matches


def test_select_filters_both_sides_by_the_newer_names() -> None:
    found = Discovery({"old.py::k": kernel("old.py::k"), "x.py::j": kernel("x.py::j")}, {})
    assert list(select(found, repo_config.Config(), ["new.py"], {"old.py": "new.py"}).kernels) == ["old.py::k"]


def test_pair_kernels_pairs_by_id_and_through_renames() -> None:
    old = Discovery({"a.py::k": kernel("a.py::k"), "gone.py::g": kernel("gone.py::g"),
                     "b.py::m": kernel("b.py::m")}, {})
    new = Discovery({"c.py::k": kernel("c.py::k"), "n.py::n": kernel("n.py::n")}, {"b.py": Broken("b.py", "e")})
    pairs, broken = pair_kernels(old, new, {"c.py": "a.py"})
    assert [(o and o.id, n and n.id) for o, n in pairs] == [("a.py::k", "c.py::k"), (None, "n.py::n"),
                                                           ("gone.py::g", None)]   # b.py's kernel: broken now
    assert broken == [(None, Broken("b.py", "e"))]


def specced(result: SpecResult, signature: dict, constexprs: dict, guessed: dict | None = None,
            warps: int = 4, source: str = "guessed") -> SpecResult:
    spec = {"signature": signature, "constexprs": constexprs, "num_warps": warps, "num_stages": 3,
            "source": source, "guessed": guessed if guessed is not None else dict(constexprs)}
    return dataclasses.replace(result, spec=SpecDetail.from_json(spec))


def test_an_optional_pointer_none_on_one_side_never_stands_against_the_other_none() -> None:
    """Issue 38: old `A=None, B` a pointer against new `B=None, A` a pointer is two specs, unpaired
    (no delta, no block while another spec compares), never `regs 22->30`."""
    a_none = specced(ok("a"), {"A": "constexpr", "B": "*fp32"}, {"A": None})
    b_none = specced(dataclasses.replace(B, key="b", label="b"), {"A": "*fp32", "B": "constexpr"}, {"B": None})
    both = specced(ok("ab"), {"A": "*fp32", "B": "*fp32"}, {})
    rows = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), [a_none, both], [b_none, both], 90,
                     repo_config.Config(), True)
    assert sorted((r.spec, r.verdict, r.blocking, any(r.delta.values())) for r in rows) == [
        ("a", "unpaired", False, False), ("ab", "identical", False, False), ("b", "unpaired", False, False)]


def test_autotune_configs_pair_by_equal_config_never_by_position() -> None:
    """Issue 41: a reordered Config list with Configs retuned: each Config against itself, the
    retuned ones (BLOCK 64 -> 256, 512) never by position: unpaired; a Config whose warps alone
    moved pairs."""
    def config(key: str, block: int, warps: int = 4, result: SpecResult = A) -> SpecResult:
        return specced(dataclasses.replace(result, key=key, label=key), {"x_ptr": "*fp32", "BLOCK": "constexpr"},
                       {"BLOCK": block}, {}, warps, source="config")
    old = [config("o32", 32), config("o64", 64), config("o128", 128, 4)]
    new = [config("n128", 128, 8, B), config("n256", 256), config("n512", 512), config("o32", 32)]
    rows = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), old, new, 90, repo_config.Config(), True)
    assert sorted((r.spec, r.verdict) for r in rows) == sorted([
        ("o128 -> n128", "structural"), ("o32", "identical"), ("o64", "unpaired"), ("n256", "unpaired"),
        ("n512", "unpaired")])
    assert not any(r.delta for r in rows if r.verdict == "unpaired")


def test_a_changed_kernel_whose_specs_all_go_unpaired_blocks_as_unmeasured() -> None:
    """No spec compares (two Configs retuned, nothing to pair them by): the gate cannot tell what
    changed, so it fails closed; `added`/`removed` are kept for a function added or removed."""
    old = [specced(ok(f"o{b}"), {"BLOCK": "constexpr"}, {"BLOCK": b}, {}, source="config") for b in (64, 32)]
    new = [specced(ok(f"n{b}"), {"BLOCK": "constexpr"}, {"BLOCK": b}, {}, source="config") for b in (128, 256)]
    rows = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), old, new, 90, repo_config.Config(), True)
    assert [(r.verdict, r.blocking) for r in rows] == [("unpaired", True)] * 4
    assert {r.verdict for r in pair_rows(pair(None, kernel()), None, new, 90, repo_config.Config(), True)} == {"added"}
    # one spec left on each side (a constexpr default moved: SLOPE=0.01 -> 0.1): compared
    (moved,) = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), old[:1], new[:1], 90,
                         repo_config.Config(), True)
    assert moved.verdict == "identical" and moved.spec == "o64 -> n128"


def test_guessed_values_failing_on_both_sides_are_unpaired_never_added() -> None:
    """A guessed spec each side has under another key, failing on both: unpaired, not blocking,
    never `added`/`removed` (the function is on both sides)."""
    old = [specced(bad("g1", "compile failed: too big"), {}, {"N": 64}), specced(ok("s"), {}, {"N": 1})]
    new = [specced(bad("g2", "compile failed: too big"), {}, {"N": 128}), specced(ok("s"), {}, {"N": 1})]
    rows = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), old, new, 90, repo_config.Config(), True)
    assert sorted((r.verdict, r.blocking) for r in rows) == [("identical", False), ("unpaired", False),
                                                              ("unpaired", False)]


def test_a_param_the_kernel_now_declares_a_constexpr_still_pairs_its_specs() -> None:
    """`beta: fp32` made `beta: tl.constexpr` (Liger-Kernel 2d8b2283): the kernel's change, compared
    spec by spec (the reason names it), never all unpaired."""
    old = [specced(ok("o"), {"x": "*fp32", "beta": "fp32"}, {}, source="guessed")]
    new = [specced(dataclasses.replace(B, key="n", label="n"), {"x": "*fp32", "beta": "constexpr"}, {"beta": 0.0})]
    (row,) = pair_rows(pair(kernel(fingerprint="a"), kernel(fingerprint="b")), old, new, 90, repo_config.Config(), True)
    assert (row.verdict, row.spec) == ("structural", "o -> n") and row.why and row.why.startswith("beta: runtime fp32")
