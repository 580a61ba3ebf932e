"""The rows of a compared pair: the verdict of two spec results, its error text, whether it blocks.

Pure: spec results (what a compile returned, one per spec and target), the pair and the config
in; rows out. The engine measures, this module only reads what was measured.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from ptxdiff import repo_config
from ptxdiff.compare import gate_inputs
from ptxdiff.compare.gate_inputs import Role
from ptxdiff.compare.pairing import Pair, pair_lone
from ptxdiff.compare.replan import Need
from ptxdiff.compare.results import Row
from ptxdiff.compare.spec_result import SpecResult
from ptxdiff.discovery.kernels import Broken, Discovery, Kernel
from ptxdiff.specs.plan import SpecSource
from ptxdiff.targets import target_name
from ptxdiff.verdict import Verdict, classify, delta, pair_label, reason, signature_change

UNFIT = ("guessed values that do not fit: the same error on both sides while other specs compile "
         "(config or `ptxdiff record` give the real ones)")
UNFIT_ONE_SIDE = ("guessed values that do not fit: this side's other specs compile "
                  "(config or `ptxdiff record` give the real ones)")
LONE_WHY = ("a spec only this side has: no equal spec (the same types, None-ness and constexprs, "
            "warps, stages) on the other side to compare it with")
NO_BRANCH = ("guessed values that do not fit: the failing side compares with none of them "
             "(a branch only the other side has)")


def _results(needs: tuple[Need | None, ...]) -> list[SpecResult]:
    return [r for need in needs if need is not None for rs in need.results.values() for r in rs]


def tritons_own(*needs: Need | None) -> str | None:
    """Where every side binds the kernel's name to a triton builtin (declared.TritonsOwn): what
    to say instead of rows. None when a side has code of its own to compile."""
    results = _results(needs)
    if results and all(r.tritons_own for r in results):
        return f"not a kernel under this triton: the module binds it to triton's `{results[0].tritons_own}`"
    return None


def written_for(*needs: Need | None) -> tuple[str, str] | None:
    """Where every side's configs are written for another backend (declared.OtherBackend): that
    backend and why, said instead of rows. None when a side has NVIDIA's to compile: a branch
    that adds `waves_per_eu` to an NVIDIA kernel's configs breaks its launch there, and its rows
    say so and block (as tritons_own, every side must agree)."""
    results = _results(needs)
    if results and all(r.other_backend for r in results):
        return results[0].other_backend or "", results[0].error or ""
    return None


def _signature_change(a: SpecResult, b: SpecResult) -> str | None:
    """What the parameters did between two compiled results (verdict.signature_change)."""
    if a.spec is None or b.spec is None:
        return None
    return signature_change(dict(a.spec.signature), dict(b.spec.signature))


# where an error is: `ops/k.py:12:5`, and in MLIR's diagnostics `ops/k.py@1a2b3c4d5e:12:5` or, in a
# `loc(...)`, `"ops/k.py@1a2b3c4d5e":12:5` (the revision names the module); an edit moves it, a
# rename or a move of the file changes its path
WHERE = re.compile(r"[\w.+/-]+\.py(?:@[0-9a-f]+)?\"?(?::\d+)+")


def same_failure(a: str | None, b: str | None) -> bool:
    """Two compile errors alike but for where they are (WHERE) and the numbers in them."""
    def bare(e: str) -> str:
        return re.sub(r"\d+", "N", WHERE.sub("<where>", e))
    return bool(a and b) and bare(a or "") == bare(b or "")


def _no_branch(kernel: Kernel | None, failed: SpecResult) -> bool:
    """Whether a spec that failed on one side gives a constexpr that side compares with literals
    a guessed value it compares with nowhere: one the other side's comparisons brought in
    (`elif act_func == "geluapprox":` added), which selects no branch of this side."""
    if failed.spec is None:
        return False
    values, guessed = failed.spec.constexprs, failed.spec.guessed_values
    for p in kernel.params if kernel is not None else ():
        if p.hint is not None and p.hint.branches and p.name in guessed and p.name in values:
            v = values[p.name]
            if not any(v == w and type(v) is type(w) for w in p.hint.values):
                return True
    return False


def blocks(verdict: Verdict, source: str | None, cfg: repo_config.Config, error: str | None = None) -> bool:
    """The block policy; the gate fails closed. A changed kernel that could not be measured on
    either side (`unmeasured`, or `added` with an error) blocks whatever its values' source
    (`block_unmeasured`). A row whose spec holds guesses blocks like any other (`block_guessed`):
    both sides got the same guesses, so a structural verdict is a change of the code."""
    if verdict == Verdict.UNMEASURED or (verdict == Verdict.ADDED and error):
        return cfg.block_unmeasured or verdict in cfg.block
    if verdict not in cfg.block:
        return False
    return source != SpecSource.GUESSED or cfg.block_guessed


def verdict_of(a: SpecResult | None, b: SpecResult | None, has_base: bool) -> tuple[Verdict, str | None]:
    """The verdict of an old and a new spec result (either may be missing, or be the same
    failure standing for both sides), and why where the code changed. Without a base every
    row is new: `-`, or `failed`."""
    failures = [x for x in (a, b) if x and x.error]
    if failures:
        return (Verdict.FAILED if not has_base else Verdict.ADDED if a is None else Verdict.REMOVED if b is None else
                Verdict.UNMEASURED if len(failures) == 2 or a is b else Verdict.FAILED), None
    if a is None:
        return (Verdict.ADDED if has_base else Verdict.NEW), None
    if b is None:
        return Verdict.REMOVED, None
    assert a.ptx is not None and b.ptx is not None and a.metrics is not None and b.metrics is not None
    verdict = classify(a.ptx, b.ptx, a.metrics, b.metrics)
    return verdict, reason(verdict, a.ptx, b.ptx, a.metrics, b.metrics, _signature_change(a, b))


def error_text(a: SpecResult | None, b: SpecResult | None, has_base: bool) -> str | None:
    """What a row says failed: each side's error, named old and new where there is a base."""
    if not any(x and x.error for x in (a, b)):
        return None
    if a is b:
        assert a is not None
        return a.error
    if not has_base:
        assert b is not None
        return b.error
    parts = [f"old: {a.error}" if a and a.error else "", f"new: {b.error}" if b and b.error else ""]
    return "; ".join(p for p in parts if p)


def _by_key(old_res: list[SpecResult] | None, new_res: list[SpecResult] | None,
            launched: bool = False) -> dict[object, list[Any]]:
    """Old and new spec results paired: by key, a side's failure before specs with every spec of
    the other side, then equal specs whose keys differ (pairing.pair_lone; `launched`: the
    pair's launch changed, its facts may differ)."""
    by_key: dict[object, list[Any]] = {}
    for side, results in ((0, old_res), (1, new_res)):
        for r in results or ():
            by_key.setdefault(r.key, [None, None])[side] = r
    # a side that failed before specs (import error) pairs with every spec of the other side
    for side in (0, 1):
        if None in by_key and by_key[None][side] is not None and len(by_key) > 1:
            failure = by_key.pop(None)[side]
            for both in by_key.values():
                both[side] = failure
    # the rest pair with an equal spec only: what has none is unpaired
    pair_lone(by_key, launched)
    return by_key


def pair_rows(pair: Pair, old_res: list[SpecResult] | None, new_res: list[SpecResult] | None,
              cc: int, cfg: repo_config.Config, has_base: bool) -> list[Row]:
    """The rows of a compared pair on one target: one per pair of spec results."""
    o, n = pair.old, pair.new
    either = n or o
    assert either is not None, "a row has a kernel on one side at least"
    kernel_id = either.id
    old_kernel = o.id if o and n and o.id != n.id else None
    changes = pair.launch_changes() if has_base else []
    rows: list[Row] = []
    unfit: dict[int, str] = {}   # rows of guessed values that do not fit -> why
    for a, b in _by_key(old_res, new_res, bool(changes)).values():
        either_r: SpecResult = b or a
        label = either_r.label
        if a is not None and b is not None and a.label != b.label:
            label = pair_label(a.label, b.label)
        detail = either_r.spec
        old_m = a.metrics if a and has_base else None
        new_m = b.metrics if b else None
        failures = [x for x in (a, b) if x and x.error]
        verdict, why = verdict_of(a, b, has_base)
        source = detail.source if detail else None
        if has_base and o is not None and n is not None and (a is None or b is None) \
                and (verdict != Verdict.FAILED or source == SpecSource.GUESSED):
            verdict = Verdict.UNPAIRED   # a spec one side has: the function is on both sides, nothing to compare it with
        error = error_text(a, b, has_base)
        log = "\n".join(x.log for x in (a, b) if x and x.log) or None
        paths = tuple(sorted(set().union(*(k.paths | {k.path} for k in (o, n) if k is not None),
                                         pair.launch_paths())))
        transient = any(x.transient for x in (a, b) if x)
        blocking = has_base and not pair.unchanged and pair.role != Role.REPORT and blocks(verdict, source, cfg, error)
        if verdict == Verdict.UNMEASURED and source == SpecSource.GUESSED and a is not b and a and b \
                and same_failure(_unlabelled(a), _unlabelled(b)):
            unfit[len(rows)] = UNFIT
        elif verdict in (Verdict.ADDED, Verdict.REMOVED, Verdict.UNPAIRED) and has_base and source == SpecSource.GUESSED \
                and failures:
            unfit[len(rows)] = UNFIT_ONE_SIDE
        elif verdict == Verdict.FAILED and has_base and source == SpecSource.GUESSED and a and b and len(failures) == 1 \
                and _no_branch(o if a.error else n, failures[0]):
            unfit[len(rows)] = NO_BRANCH
        rows.append(Row(kernel_id, label, target_name(either_r.target or cc), verdict, blocking,
                        old_m, new_m, delta(old_m, new_m), error, detail, old_kernel, log,
                        a.ptx if a else None, b.ptx if b else None, spec_source=source,
                        paths=paths, transient=transient, why=why,
                        launch="; ".join(([gate_inputs.NOT_THE_GATE] if pair.role == Role.REPORT else [])
                                         + changes) or None,
                        old_loc=a.loc if a else None, old_cubin=a.cubin if a else None,
                        new_loc=b.loc if b else None, new_cubin=b.cubin if b else None))
    if unfit and any(r.error is None for r in rows):
        rows = [dataclasses.replace(r, blocking=False, why=unfit[i]) if i in unfit else r for i, r in enumerate(rows)]
    return _lone(rows, pair, cfg, has_base)


def _unlabelled(result: SpecResult) -> str | None:
    """A result's error without its own spec's label, which a crash names (`worker crashed (signal
    SIGSEGV) during k sm_90 BLOCK=32 ...: LLVM ERROR: ...`): the two sides' labels differ where
    their constexprs do, and the failure is the same."""
    return result.error.replace(result.label, "<spec>") if result.error and result.label else result.error


def _lone(rows: list[Row], pair: Pair, cfg: repo_config.Config, has_base: bool) -> list[Row]:
    """Unpaired rows say so, and block only where the changed kernel has no compared row at all:
    the gate cannot tell what changed (`block_unmeasured`, as for `unmeasured`)."""
    if not any(r.verdict == Verdict.UNPAIRED for r in rows):
        return rows
    compared = any(r.verdict not in (Verdict.UNPAIRED, Verdict.UNMEASURED) for r in rows)
    stop = has_base and not compared and not pair.unchanged and pair.role != Role.REPORT and cfg.block_unmeasured
    return [dataclasses.replace(r, blocking=r.blocking or stop, why=r.why or LONE_WHY) if r.verdict == Verdict.UNPAIRED
            else r for r in rows]


def said_rows(pair: Pair, targets: list[int], cfg: repo_config.Config) -> list[Row]:
    """A pair of the branch's pins that contradict its launch sites (Role.PIN): a failed row
    per line and target, saying the pin."""
    return [Row(pair.kernel_id, "-", target_name(cc), Verdict.FAILED, blocks(Verdict.FAILED, None, cfg, line), None,
                None, {}, line) for cc in targets for line in pair.said]


def unparsed_rows(old_b: Broken | None, new_b: Broken | None, old_found: Discovery,
                new_found: Discovery, targets: list[int], cfg: repo_config.Config) -> list[Row]:
    """A file that does not parse on one side: its kernels are `failed` with the error."""
    rows = []
    either = new_b or old_b
    assert either is not None, "a broken row has a broken side"
    path = either.path
    names = set((new_b.names if new_b else ()) + (old_b.names if old_b else ()))
    for found in (old_found, new_found):
        names |= {k.name for k in found.kernels.values() if k.path == path}
    verdict = Verdict.UNMEASURED if old_b and new_b else Verdict.FAILED
    for name in sorted(names) or ["?"]:
        for cc in targets:
            error = (f"new: {new_b.error}" if new_b else "") + ("; " if new_b and old_b else "") + \
                    (f"old: {old_b.error}" if old_b else "")
            rows.append(Row(f"{path}::{name}", "-", target_name(cc), verdict, blocks(verdict, None, cfg, error),
                            None, None, {}, error))
    return rows
