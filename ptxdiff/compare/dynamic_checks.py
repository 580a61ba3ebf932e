"""The dynamic checks: old and new run (outputs compared, timed) for the compared kernels that
ask for it, with a host wrapper from config or their recorded launches replayed; rows gain
what the runs said, and block where the config blocks on it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ptxdiff import repo_config, user_settings
from ptxdiff.compare.gate_inputs import Role
from ptxdiff.compare.notes import Note, NoteKind
from ptxdiff.compare.pairing import Pair
from ptxdiff.compare.results import Row
from ptxdiff.discovery.kernels import Kernel
from ptxdiff.dynamic.runner import runs_on_gpu
from ptxdiff.dynamic.synthesize import SHAPES, SynthPlan, plan_for, synth_spec
from ptxdiff.git.repo import Repo
from ptxdiff.git.values import Side
from ptxdiff.permissions import Permissions
from ptxdiff.record.launches import DEFAULT_PATH
from ptxdiff.specs.plan import SpecSource
from ptxdiff.verdict import Outputs, Verdict

if TYPE_CHECKING:   # types only: replay is the run worker's (torch, triton); the pool, not imported for nothing
    from ptxdiff.compile.protocol import RunAnswer
    from ptxdiff.compile.tasks import Task
    from ptxdiff.dynamic.replay import ReplayPlan


@dataclass(frozen=True)
class Runner:
    """Where and how the revisions' code runs: the repository, what the user allowed, workers."""

    repo: Repo
    permissions: Permissions
    jobs: int
    progress: Callable[[str], None] | None


def ran_rows(rows: list[Row], ran: str, synth: SynthPlan | None = None) -> set[int]:
    """Which of a kernel's rows the runs were of (their results go there only): the recorded
    specs where recorded launches were replayed (`ran` "recorded"); the config's specs for a host
    wrapper ("config"); the specs launches were synthesised for ("fuzzed"); else the first row."""
    if synth is not None:
        params = list(synth.params)
        found = {i for i, r in enumerate(rows) if synth_spec(params, r.spec_detail) in synth.specs}
    else:
        found = {i for i, r in enumerate(rows) if r.spec_source == ran}
    return found or ({0} if rows else set())


@dataclass
class _Planning:
    """What planning the runs of one comparison gathers: read once (the base's config, both
    sides' recordings), said (notes), and per kernel which rows its runs are of and whether its
    result only informs the report."""

    messages: list[Note]
    recordings: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    base_cfg: repo_config.Config | None = None
    report_only: dict[str, str] = dataclasses.field(default_factory=dict)
    ran: dict[str, set[int]] = dataclasses.field(default_factory=dict)
    missing: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None]] = dataclasses.field(default_factory=dict[str, Any])


def checked(rows: list[Row], pairs: list[Pair], old: Side, new: Side, cfg: repo_config.Config,
            outputs: bool | None, time: bool | None, messages: list[Note], run_as: Runner) -> list[Row]:
    """Run old and new (outputs, timing) for the kernels that ask for it; rows gain results."""
    semantic = run_as.permissions.semantic
    want_time = time if time is not None else run_as.permissions.time
    by_kernel: dict[str, list[Row]] = {}
    for r in rows:
        by_kernel.setdefault(r.kernel, []).append(r)
    tasks: list[Task[tuple[str, str]]] = []
    planning = _Planning(messages)
    for pair in pairs:
        o, n = pair.old, pair.new
        if o is None or n is None or pair.unchanged or pair.role != Role.GATE:
            continue
        kernel_rows = by_kernel.get(n.id, [])
        check = outputs if outputs is not None else (
            semantic == "always" or (semantic == "auto" and any(r.verdict == Verdict.CONSTANTS_ONLY for r in kernel_rows)))
        if check or want_time:
            tasks += _kernel_tasks(o, n, kernel_rows, check, want_time, (old, new), cfg, run_as, planning)
    results: dict[tuple[str, str], dict[str, Any]] = {}
    if tasks:
        from ptxdiff.compile.pool import Pool
        with _no_cache_secret(), \
                Pool(run_as.repo.workdir, cfg.python_path, run_as.jobs, cfg.timeout, run_as.progress,
                     unsandboxed=run_as.permissions.unsandboxed) as pool:
            for reply in pool.run(tasks):
                answer = cast("RunAnswer | None", reply.answer)
                results[reply.task.tag] = {
                    k: v for k, v in answer.result.items() if k != "cpu_s"} if answer is not None else {
                    "result": Outputs.NOT_RUN, "reason": str(reply.error)[:300]}
        _said_what_ran(tasks, messages)
        messages.append(Note(NoteKind.DYNAMIC, None, held(pool.sandbox, run_as.permissions.unsandboxed)))
    no_gpu = [k for k, v in results.items() if k[1] == "timing" and "no GPU" in v.get("reason", "")]
    if no_gpu:
        messages.append(Note(NoteKind.DYNAMIC, None,
                             "--time needs a GPU and this machine has none: timing skipped, the rest is unaffected"))
    out = []
    for kid, kernel_rows in by_kernel.items():
        if kid in planning.missing:
            o_miss, t_miss = planning.missing[kid]
            kernel_rows = [dataclasses.replace(r, outputs=o_miss, timing=t_miss) for r in kernel_rows]
        o_res, t_res = results.get((kid, "outputs")), results.get((kid, "timing"))
        if (kid, "timing") in no_gpu:
            t_res = None
        if kid in planning.report_only:   # the branch's own recording: said, never the gate's
            o_res, t_res = (dict(x, report_only=planning.report_only[kid]) if x else x for x in (o_res, t_res))
        ran = planning.ran.get(kid) or ran_rows(kernel_rows, SpecSource.CONFIG)
        for i, r in enumerate(kernel_rows):
            if (o_res is not None or t_res is not None) and i in ran:
                r = dataclasses.replace(r, outputs=o_res or r.outputs, timing=t_res or r.timing)
            dyn = [x["result"] for x in (r.outputs, r.timing) if x and not x.get("report_only")]
            out.append(dataclasses.replace(r, blocking=r.blocking or any(d in cfg.block for d in dyn)))
    return out


def _kernel_tasks(o: Kernel, n: Kernel, kernel_rows: list[Row], check: bool, want_time: bool,
                  sides: tuple[Side, Side], cfg: repo_config.Config, run_as: Runner, planning: _Planning) -> list[Task[Any]]:
    """The runs of one compared kernel: its host wrapper (the base's entry decides), else the
    base's recorded launches replayed, else launches synthesised from its compiled specs."""
    from ptxdiff.compile.protocol import OutputsRequest, ReplayOutputsRequest, ReplayTimeRequest, SynthOutputsRequest, TimeRequest
    from ptxdiff.compile.tasks import Task
    from ptxdiff.dynamic.runner import RunPlan, sizes_around
    from ptxdiff.specs.launch import side_config, side_launches

    old, new = sides
    if planning.base_cfg is None:
        planning.base_cfg = side_config(run_as.repo.snapshot(old), repo_config.Config())
    if not planning.recordings:
        planning.recordings += [side_launches(run_as.repo.snapshot(old)), side_launches(run_as.repo.snapshot(new))]
    params = [p.name for p in n.params]
    base_entry = planning.base_cfg.for_kernel(o.id).run
    run, said = base_run(cfg.for_kernel(n.id).run, base_entry, n.id)
    replay, replay_said, branch_only = base_plan(o.id, n.id, params, planning.recordings)
    if run is not base_entry and not branch_only and replay is not None:
        run, said = base_entry, None   # a wrapper only the branch sets: the base's recording decides
    if said:
        planning.messages.append(Note(NoteKind.POLICY, n.id, said))
        if run is not base_entry:
            planning.report_only[n.id] = said
    tasks: list[Task[Any]] = []
    if run.wrapper and run.inputs:
        blocks = [v for r in kernel_rows for k, v in (r.spec_detail.constexprs if r.spec_detail else {}).items()
                  if "BLOCK" in k.upper() and isinstance(v, int)]
        plan = RunPlan(n.id, run.wrapper, run.inputs, run.dtypes, sizes_around(blocks, run.sizes), run.time_size)
        if check:
            tasks.append(Task(sides, OutputsRequest(plan), f"{n.name} outputs", (n.id, "outputs")))
        if want_time:
            tasks.append(Task(sides, TimeRequest(plan, cfg.min_effect), f"{n.name} timing", (n.id, "timing")))
        planning.ran[n.id] = ran_rows(kernel_rows, SpecSource.CONFIG)
        return tasks
    if replay_said:
        planning.messages.append(Note(NoteKind.POLICY, n.id, replay_said))
        if branch_only:
            planning.report_only[n.id] = replay_said
    if replay is not None:  # no wrapper: the recorded launches, replayed
        if check:
            tasks.append(Task(sides, ReplayOutputsRequest(replay), f"{n.name} outputs", (n.id, "outputs")))
        if want_time:
            tasks.append(Task(sides, ReplayTimeRequest(replay, cfg.min_effect), f"{n.name} timing", (n.id, "timing")))
        planning.ran[n.id] = ran_rows(kernel_rows, SpecSource.RECORDED)
        return tasks
    missing = {"result": Outputs.NOT_RUN, "reason": f'set [tool.ptxdiff.kernels."{n.id}"] wrapper = '
                                              '"path.py:function" and inputs = "path.py:function", '
                                              'or record its launches (ptxdiff record -- CMD)'}
    synth = synthesized(o.id, n, kernel_rows) if check else None
    if isinstance(synth, SynthPlan):  # no wrapper, no recording: launches made from the spec
        tasks.append(Task(sides, SynthOutputsRequest(synth), f"{n.name} outputs (fuzzed)", (n.id, "outputs")))
        planning.ran[n.id] = ran_rows(kernel_rows, "fuzzed", synth)
    elif synth is not None:
        missing = {**missing, "reason": f"{missing['reason']} (no launch could be synthesised: {synth})"}
    planning.missing[n.id] = (missing if isinstance(synth, str) else None, missing if want_time else None)
    return tasks


def _said_what_ran(tasks: list[Task[Any]], messages: list[Note]) -> None:
    """The lines that say the revisions' code ran, and how."""
    replayed = any(t.op.startswith("replay_") for t in tasks)
    if any(t.op == "synth_outputs" for t in tasks):
        messages.append(Note(NoteKind.DYNAMIC, None, "ran old and new on synthesised launches (seeded inputs of "
                             f"{SHAPES} shapes per kernel, A/A first) to check outputs (you asked for it)"))
    if replayed or any(t.op in ("outputs", "time") for t in tasks):
        messages.append(Note(NoteKind.DYNAMIC, None, "replayed recorded launches of old and new to check "
                             "outputs/timing (you asked for it)" if replayed else
                             "ran the revisions' host wrappers to check outputs/timing (you asked for it)"))


def held(sealed: str | None, unsandboxed: str | None) -> str:
    """The line that says how the run workers were confined: sealed on the CPU (what held, as
    the worker said), not sealed where the user turned the sandbox off, or bounded on the GPU."""
    if unsandboxed:
        return f"the run workers were not sandboxed ({unsandboxed}): bounded by the timeout only"
    if sealed:
        return f"the run workers ran sealed on the CPU (triton's interpreter; writes in a private folder only): {sealed}"
    if runs_on_gpu():
        return "the run workers ran on the GPU: bounded by the timeout, not sealed (the GPU's driver needs its devices)"
    return "the run workers did not start: nothing of the revisions ran"


def base_run(branch: repo_config.RunConfig, base: repo_config.RunConfig,
             kernel_id: str) -> tuple[repo_config.RunConfig, str | None]:
    """The host wrapper, inputs and sizes a kernel's dynamic checks run with, and a line where it is
    not simply the base's: the base's entry decides (a branch cannot point `inputs` at zeros or
    shrink `sizes` for its own check); where only the branch has one it runs for the report (the
    caller marks the result report-only; the inputs themselves are the base's generator wherever
    the base has it: runner.py)."""
    if base.wrapper and base.inputs:
        return base, (f"{kernel_id}: the branch sets other wrapper/inputs/sizes; the base's decide the dynamic "
                      "checks" if branch != base else None)
    if branch.wrapper and branch.inputs:
        return branch, (f"{kernel_id}: only the branch sets a wrapper and inputs: their run is reported, it does not "
                        "decide the gate")
    return branch, None


@contextlib.contextmanager
def _no_cache_secret() -> Iterator[None]:
    """The shared cache's signing secret out of the environment the run workers start with: they
    run the revisions' code with the user's environment, never with what signs the trusted tier."""
    secret = os.environ.pop(user_settings.REMOTE_SECRET, None)
    try:
        yield
    finally:
        if secret is not None:
            os.environ[user_settings.REMOTE_SECRET] = secret


def base_plan(old_id: str, new_id: str, params: list[str],
              recordings: list[dict[str, Any]]) -> tuple[ReplayPlan | None, str | None, bool]:
    """What the dynamic checks replay for a kernel, and the line that says where it came from when
    that is not simply the base's recording: the base side's recorded launches decide (the branch
    is data: a branch that re-records its own launches, with all-zero inputs say, cannot choose its
    check's inputs); a branch's own recording, where the base has none, is replayed for the report
    only, its result never blocking. Returns (plan, line, whether the plan is the branch's)."""
    from ptxdiff.dynamic.replay import plan_for

    base, branch = recordings
    at_base = plan_for(old_id, new_id, params, [base])
    at_branch = plan_for(old_id, new_id, params, [branch])
    if at_base is not None:
        differs = at_branch is not None and _replays(at_branch) != _replays(at_base)
        return at_base, (f"{new_id}: the branch records other launches ({DEFAULT_PATH}); the base's recording "
                         "decides the dynamic checks" if differs else None), False
    if at_branch is not None:
        return at_branch, (f"{new_id}: only the branch records launches ({DEFAULT_PATH}): their replay is reported, "
                           "it does not decide the gate"), True
    return None, None, False


def _replays(plan: ReplayPlan) -> list[Any]:
    """What a plan replays, inputs included (a Launch's equality leaves its replay data out)."""
    return [(launch, [r.as_json() for r in launch.replay]) for launch in plan.launches]


def synthesized(old_id: str, kernel: Kernel, rows: list[Row]) -> SynthPlan | str:
    """Launches made from what the rows compiled (dynamic/synthesize.py), or why none."""
    passed = tuple(name for name, facts in kernel.launch if facts)
    return plan_for(old_id, kernel.id, [p.name for p in kernel.params],
                    [(r.spec_source, r.spec_detail) for r in rows], passed=passed)
