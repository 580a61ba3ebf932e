"""The dynamic checks: old and new run (outputs compared, timed) for the compared kernels that
ask for it, with a host wrapper from config or their recorded launches replayed; rows gain
what the runs said, and block where the config blocks on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from ptxdiff import config as configmod
from ptxdiff.compare import pins
from ptxdiff.compare.notes import Note, NoteKind
from ptxdiff.compare.pairing import Pair
from ptxdiff.compare.results import Row
from ptxdiff.git.repo import Repo, Side
from ptxdiff.trust import Permissions


@dataclass(frozen=True)
class Runner:
    """Where and how the revisions' code runs: the repository, what the user allowed, workers."""

    repo: Repo
    permissions: Permissions
    jobs: int
    progress: Callable[[str], None] | None


def ran_rows(rows: list[Row], replayed: bool) -> set[int]:
    """Which of a kernel's rows the runs were of (their results go there only): the recorded
    specs where recorded launches were replayed; else (a host wrapper) the config's specs; else
    the first row."""
    want = "recorded" if replayed else "config"
    ran = {i for i, r in enumerate(rows) if r.spec_source == want}
    return ran or ({0} if rows else set())


def checked(rows: list[Row], pairs: list[Pair], old: Side, new: Side, cfg: configmod.Config,
            outputs: bool | None, time: bool | None, messages: list[Note], run_as: Runner) -> list[Row]:
    """Run old and new (outputs, timing) for the kernels that ask for it; rows gain results."""
    from ptxdiff.compile.pool import Pool, Task
    from ptxdiff.dynamic.replay import plan_for
    from ptxdiff.dynamic.runner import RunPlan, sizes_around
    from ptxdiff.specs.launch import side_launches

    semantic = run_as.permissions.semantic
    want_time = time if time is not None else run_as.permissions.time
    by_kernel: dict[str, list[Row]] = {}
    for r in rows:
        by_kernel.setdefault(r.kernel, []).append(r)
    tasks = []
    recordings: list[dict] = []   # the new side's recorded launches, then the old side's (read once)
    for pair in pairs:
        o, n = pair.old, pair.new
        if o is None or n is None or pair.unchanged or pair.role != pins.GATE:
            continue
        kernel_rows = by_kernel.get(n.id, [])
        check = outputs if outputs is not None else (
            semantic == "always" or (semantic == "auto" and any(r.verdict == "constants-only" for r in kernel_rows)))
        if not check and not want_time:
            continue
        run = cfg.for_kernel(n.id).run
        if not run.wrapper or not run.inputs:
            if not recordings:
                recordings += [side_launches(run_as.repo.snapshot(new)), side_launches(run_as.repo.snapshot(old))]
            replay = plan_for(o.id, n.id, [p.name for p in n.params], recordings)
            if replay is not None:  # no wrapper: the recorded launches, replayed
                if check:
                    tasks.append(Task((old, new), "replay_outputs", (replay,), f"{n.name} outputs",
                                      (n.id, "outputs")))
                if want_time:
                    tasks.append(Task((old, new), "replay_time", (replay, cfg.min_effect), f"{n.name} timing",
                                      (n.id, "timing")))
                continue
            missing = {"result": "not-run", "reason": f'set [tool.ptxdiff.kernels."{n.id}"] wrapper = '
                                                      '"path.py:function" and inputs = "path.py:function", '
                                                      'or record its launches (ptxdiff record -- CMD)'}
            by_kernel[n.id] = [dataclasses.replace(r, outputs=missing if check else None,
                                                   timing=missing if want_time else None) for r in kernel_rows]
            continue
        blocks = [v for r in kernel_rows for k, v in ((r.spec_detail or {}).get("constexprs") or {}).items()
                  if "BLOCK" in k.upper() and isinstance(v, int)]
        plan = RunPlan(n.id, run.wrapper, run.inputs, run.dtypes, sizes_around(blocks, run.sizes), run.time_size)
        if check:
            tasks.append(Task((old, new), "outputs", (plan,), f"{n.name} outputs", (n.id, "outputs")))
        if want_time:
            tasks.append(Task((old, new), "time", (plan, cfg.min_effect), f"{n.name} timing", (n.id, "timing")))
    results: dict[tuple[str, str], dict] = {}
    if tasks:
        with Pool(run_as.repo.workdir, cfg.python_path, run_as.jobs, cfg.timeout, run_as.progress) as pool:
            for task, kind, payload in pool.run(tasks):
                results[cast(tuple[str, str], task.tag)] = cast(dict, payload) if kind == "ok" else {
                    "result": "not-run", "reason": str(payload)[:300]}
        replayed = any(t.op.startswith("replay_") for t in tasks)
        messages.append(Note(NoteKind.DYNAMIC, None, "replayed recorded launches of old and new to check outputs/timing "
                             "(you asked for it)" if replayed else
                             "ran the revisions' host wrappers to check outputs/timing (you asked for it)"))
    no_gpu = [k for k, v in results.items() if k[1] == "timing" and "no GPU" in v.get("reason", "")]
    if no_gpu:
        messages.append(Note(NoteKind.DYNAMIC, None,
                             "--time needs a GPU and this machine has none: timing skipped, the rest is unaffected"))
    replays = {t.tag[0] for t in tasks if t.op.startswith("replay_")}   # type: ignore[index]
    out = []
    for kid, kernel_rows in by_kernel.items():
        o_res, t_res = results.get((kid, "outputs")), results.get((kid, "timing"))
        if (kid, "timing") in no_gpu:
            t_res = None
        ran = ran_rows(kernel_rows, kid in replays)
        for i, r in enumerate(kernel_rows):
            if (o_res is not None or t_res is not None) and i in ran:
                r = dataclasses.replace(r, outputs=o_res or r.outputs, timing=t_res or r.timing)
            dyn = [x["result"] for x in (r.outputs, r.timing) if x]
            out.append(dataclasses.replace(r, blocking=r.blocking or any(d in cfg.block for d in dyn)))
    return out
