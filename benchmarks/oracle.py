"""The semantic oracle with no config (issue 39): `ptxdiff diff A B --outputs` on repositories
with no config, no recording and no wrapper, where launches are synthesised from the compiled spec.
Runs on a CPU (triton's interpreter) or, where there is one, on the GPU (the same command: the
run worker uses the device when torch sees one).

  --cases   the twelve kinds of change of the issue (tests/dynamic/oracle_kernels.py) in one
            repository: each change of what a kernel computes must be outputs-differ, each
            rewrite outputs-equal; PASS/FAIL per case
  --corpus  every corpus pair (corpus/pairs), old -> new with no config, cold (a fresh cache):
            the static verdict, whether the static gate blocks, the oracle's result, CPU seconds
            (ptxdiff and its workers) per changed kernel; --each: a repository per pair
  --aa      A/A: every corpus kernel (old and new side) against itself through the oracle:
            must never be outputs-differ (nor nondeterministic)
  --range CLONE N
            a real repository's history: the newest N first-parent commits that change a Triton
            kernel on an NVIDIA path, one that both sides hold (real_repos.kernel_commits, then
            census.changed_kernels: its ASTs compared), `ptxdiff diff C^ C --outputs` each with no config,
            a cache of its own and a per-commit bound (--commit-timeout): rows by static verdict,
            what the oracle said of the constants-only/reordered rows (and of the structural ones),
            the not-run reasons, CPU seconds (ptxdiff and its workers) per commit and per kernel run;
            the clone is only read (ptxdiff runs with it as cwd); --skip K passes over the newest K
            such commits first (to go on where an earlier run stopped)

    python benchmarks/oracle.py [--cases] [--corpus [--each]] [--aa [--sides old,new]] [--pairs a,b] [--json FILE]
    python benchmarks/oracle.py --range CLONE N [--skip K] [--jobs 2] [--commit-timeout 600] [--json FILE]
Default: the first three. Exit status 0 when every expectation held (cases pass, no A/A differs).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "dynamic"))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from census import changed_kernels  # noqa: E402
from oracle_kernels import CASES, files, kernel_id  # noqa: E402
from real_repos import kernel_commits  # noqa: E402

from ptxdiff.corpus.labels import label as source_label  # noqa: E402


def subreaper() -> None:
    """Become the reaper of every orphaned descendant (the forkserver ptxdiff leaves, its workers):
    their CPU time then counts in RUSAGE_CHILDREN once reaped (reap())."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)   # PR_SET_CHILD_SUBREAPER


def reap(wait_s: float = 30.0) -> None:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.1)


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_AUTHOR_DATE": "1794000000 +0000",
           "GIT_COMMITTER_DATE": "1794000000 +0000"}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout.strip()


def repo_of(where: Path, old: dict[str, str], new: dict[str, str]) -> tuple[str, str]:
    where.mkdir(parents=True)
    git(where, "init", "-q", "-b", "main")
    commits = []
    for side in (old, new):
        for rel, text in side.items():
            (where / rel).parent.mkdir(parents=True, exist_ok=True)
            (where / rel).write_text(text)
        git(where, "add", "-A")
        git(where, "commit", "-q", "--allow-empty", "-m", "side")
        commits.append(git(where, "rev-parse", "HEAD"))
    return commits[0], commits[1]


def diff(repo: Path, old: str, new: str, cache: Path) -> tuple[dict, float, float]:
    """(the JSON report, CPU seconds of ptxdiff and its workers, wall seconds), cold in `cache`."""
    env = {**os.environ, "PTXDIFF_CACHE_DIR": str(cache)}
    before, t0 = children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ptxdiff", "diff", old, new, "--outputs", "--format", "json", "-q"],
                          cwd=repo, capture_output=True, text=True, env=env)
    reap()   # what ptxdiff left to die after it (its forkserver, its workers) counts too
    cpu, wall = children_cpu() - before, time.perf_counter() - t0
    if done.returncode not in (0, 1):
        raise SystemExit(f"ptxdiff failed in {repo}: {done.stderr[-2000:]}")
    return json.loads(done.stdout), cpu, wall


def first_rows(report: dict) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for row in report["kernels"]:
        out.setdefault(row["kernel"], row)
    return out


def cases(tmp: Path) -> tuple[list[dict], bool]:
    old, new = repo_of(tmp / "cases", files(0), files(1))
    report, cpu, wall = diff(tmp / "cases", old, new, tmp / "cases-cache")
    rows = first_rows(report)
    out, ok = [], True
    print(f"{'case':20} {'static verdict':15} {'outputs':15} expected  where")
    for case, (_, _, _, changes) in CASES.items():
        row = rows[kernel_id(case)]
        got = (row["outputs"] or {}).get("result")
        want = "outputs-differ" if changes else "outputs-equal"
        ok &= got == want
        o = row["outputs"] or {}
        where = f"{o.get('buffer')}[{o.get('index')}] {o.get('old')} -> {o.get('new')}" if got == "outputs-differ" \
            else o.get("via", o.get("reason", ""))
        print(f"{case:20} {row['verdict']:15} {got!s:15} {'PASS' if got == want else 'FAIL'}      {where}")
        out.append({"case": case, "verdict": row["verdict"], "blocking": row["blocking"], "outputs": got,
                    "expected": want, "device": o.get("device")})
    n = len(rows)
    print(f"cold, one diff of {n} kernels: {cpu:.1f} CPU s ({cpu / n:.2f} per kernel), {wall:.1f} s wall")
    return out, ok


def corpus_pairs(names: list[str] | None) -> list[dict]:
    data = tomllib.loads((ROOT / "corpus" / "pairs.toml").read_text())
    return [p for p in data["pair"] if not names or p["name"] in names]


def corpus(tmp: Path, names: list[str] | None, each: bool) -> list[dict]:
    """Old -> new of every pair with no config, cold: one repository of them all (CPU seconds per
    kernel: the run's over its kernels), or with `each` one repository and cold cache per pair."""
    pairs = corpus_pairs(names)
    groups = [[p] for p in pairs] if each else [pairs]
    out = []
    print(f"{'pair':36} {'label':14} {'verdict':15} {'gate':5} {'outputs':17}" + (" CPU s" if each else ""))
    total_cpu = total_wall = 0.0
    for group in groups:
        where = tmp / ("corpus-" + (group[0]["name"] if each else "all"))
        rels = {p["name"]: f"kernels/{p['name']}.py" for p in group}
        src = {p["name"]: ROOT / "corpus" / "pairs" / p["name"] for p in group}
        old, new = repo_of(where, {**{rels[n]: (src[n] / "old.py").read_text() for n in rels},
                                   "kernels/__init__.py": ""}, {rels[n]: (src[n] / "new.py").read_text() for n in rels})
        report, cpu, wall = diff(where, old, new, Path(str(where) + "-cache"))
        total_cpu, total_wall = total_cpu + cpu, total_wall + wall
        rows = first_rows(report)
        for p in group:
            row = rows.get(f"{rels[p['name']]}::{p['kernel']}")
            verdict, gate = (row["verdict"], row["blocking"]) if row else ("unchanged", False)
            o = (row or {}).get("outputs") or {}
            got = o.get("result", "-")
            print(f"{p['name']:36} {p.get('hand_label', ''):14} {verdict:15} {'yes' if gate else 'no':5} {got:17}"
                  + (f" {cpu:5.1f}" if each else ""))
            out.append({"pair": p["name"], "label": p.get("hand_label"), "study": bool(p.get("study")),
                        "source_label": source_label((src[p["name"]] / "old.py").read_text(),
                                                     (src[p["name"]] / "new.py").read_text(), p["kernel"]),
                        "observable": p.get("observable", True), "verdict": verdict, "static_gate": gate,
                        "outputs": got, "reason": o.get("reason"), "first": {k: o.get(k) for k in (
                            "buffer", "index", "old", "new", "shape")} if got == "outputs-differ" else None,
                        **({"cpu_s": round(cpu, 2)} if each else {})})
    summary(out)
    changed = sum(1 for o in out if o["verdict"] != "unchanged")
    print(f"cold: {total_cpu:.0f} CPU s for {len(pairs)} pairs ({changed} changed kernels run): "
          f"{total_cpu / max(changed, 1):.1f} CPU s per changed kernel, {total_wall:.0f} s wall")
    return out


def summary(out: list[dict]) -> None:
    """Per source label (corpus/labels.py): how many the static gate blocks, what the oracle says."""
    by: dict[str, Counter] = {}
    for o in out:
        c = by.setdefault(o["source_label"], Counter())
        c["pairs"] += 1
        c["static gate blocks"] += bool(o["static_gate"])
        c[o["outputs"]] += 1
        c["either"] += bool(o["static_gate"]) or o["outputs"] == "outputs-differ"
    study = [o for o in out if o["study"]]
    for label, c in sorted(by.items()):
        print(f"  {label}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    print("  the study's nine: " + ", ".join(f"{o['pair']} {'gate' if o['static_gate'] else '-'}/{o['outputs']}"
                                             for o in study))


def aa(tmp: Path, names: list[str] | None, which: list[str]) -> list[dict]:
    """Every corpus kernel against itself: same revision on both sides of the run worker."""
    from ptxdiff.compare.engine import Engine
    from ptxdiff.compile.pool import Pool
    from ptxdiff.compile.tasks import Task
    from ptxdiff.dynamic.synthesize import SynthPlan, plan_for
    from ptxdiff.git.repo import Repo, Side

    pairs = corpus_pairs(names)
    old_files = {f"kernels/{p['name']}.py": (ROOT / "corpus/pairs" / p["name"] / "old.py").read_text() for p in pairs}
    new_files = {f"kernels/{p['name']}.py": (ROOT / "corpus/pairs" / p["name"] / "new.py").read_text() for p in pairs}
    old, new = repo_of(tmp / "aa", {**old_files, "kernels/__init__.py": ""}, new_files)
    os.environ["PTXDIFF_CACHE_DIR"] = str(tmp / "aa-cache")
    repo = Repo(str(tmp / "aa"))
    sides = Side("old", old), Side("new", new)
    report = Engine(repo).compare(*sides, show_all=True, outputs=False)
    tasks = []
    for p in pairs:
        kid = f"kernels/{p['name']}.py::{p['kernel']}"
        rows = [r for r in report.rows if r.kernel == kid and r.spec_detail]
        if not rows:
            continue
        params = list(rows[0].spec_detail.signature)
        plan = plan_for(kid, kid, params, [(r.spec_source, r.spec_detail) for r in rows])
        if isinstance(plan, SynthPlan):
            for side in (s for s in sides if s.label in which):
                tasks.append(Task((side, side), "synth_outputs", (plan,), f"{p['name']} {side.label}",
                                  (p["name"], side.label)))
    out = []
    t0, before = time.perf_counter(), children_cpu()
    with Pool(repo.workdir, report.config.python_path, 2, report.config.timeout) as pool:
        for task, kind, payload in pool.run(tasks):
            name, side = task.tag
            result = payload if kind == "ok" and isinstance(payload, dict) else {"result": "not-run",
                                                                                  "reason": str(payload)[:200]}
            out.append({"pair": name, "side": side, "result": result["result"],
                        "reason": result.get("reason"), "checked": result.get("checked"),
                        "cpu_s": result.get("cpu_s")})
    counts = Counter(o["result"] for o in out)
    print(f"A/A on {len(out)} corpus kernels (old and new sides): {dict(counts)}; "
          f"{time.perf_counter() - t0:.0f} s wall, {children_cpu() - before:.0f} CPU s in the run workers")
    spent = sorted(o["cpu_s"] for o in out if o["cpu_s"] is not None)
    if spent:
        print(f"oracle CPU s per kernel (8 shapes, 3 launches each, in the run worker): median "
              f"{spent[len(spent) // 2]:.2f}, max {spent[-1]:.2f} "
              f"({max(out, key=lambda o: o['cpu_s'] or 0)['pair']}), total {sum(spent):.0f}")
    for o in out:
        if o["result"] != "outputs-equal":
            print(f"  {o['pair']} ({o['side']}): {o['result']} {o['reason'] or ''}"[:200])
    return out


STATIC = ("structural", "constants-only", "reordered", "identical", "failed")
RESULTS = ("outputs-differ", "outputs-equal", "nondeterministic", "not-run")


def bounded_diff(clone: Path, rev: str, cache: Path, jobs: int, timeout: float) -> tuple[dict, float, float]:
    """`ptxdiff diff rev^ rev --outputs` in the clone as a new user runs it (no config, `-I`: nothing
    of the clone's own imported by ours), its own cache, killed (its whole group) past `timeout`:
    (the JSON report, or {"error"}, CPU seconds of it and its workers, wall seconds)."""
    env = {**os.environ, "PTXDIFF_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-I", "-m", "ptxdiff", "diff", f"{rev}^", rev, "--outputs", "--format", "json", "-q",
           "--jobs", str(jobs)]
    before, t0 = children_cpu(), time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=clone, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the forkserver and the workers die with it (PDEATHSIG)
        proc.communicate()
        out, err = "", f"timed out after {timeout:.0f} s (this benchmark's bound)"
    reap()
    cpu, wall = children_cpu() - before, time.perf_counter() - t0
    try:
        if proc.returncode in (0, 1):
            return json.loads(out), cpu, wall
    except json.JSONDecodeError:
        pass
    return {"error": (err.strip().splitlines() or [f"exit {proc.returncode}"])[-1], "kernels": []}, cpu, wall


def changes_a_kernel(clone: Path, rev: str) -> bool:
    """Whether `rev` changes a kernel on an NVIDIA path that its parent has too (one only added or
    removed gets no run of old against new)."""
    try:
        ids = changed_kernels(str(clone), rev, set())[0]
    except subprocess.CalledProcessError:
        return False   # a root commit
    for kid in ids:
        path, _, name = kid.partition("::")
        sides = [subprocess.run(["git", "-C", str(clone), "show", f"{r}:{path}"], capture_output=True, text=True)
                 for r in (f"{rev}^", rev)]
        if all(p.returncode == 0 and f"def {name}(" in p.stdout for p in sides):
            return True
    return False


def not_run_cause(reason: str) -> str:
    """A not-run row's reason, shapes left out: which side, and the error (the first)."""
    side = "old: " if "ran on old" in reason else "new: " if "new could not run" in reason else ""
    found = re.search(r"\b(\w+Error: [^;]*|out of bounds[^;]*)", reason)
    return side + (found.group(1) if found else reason)[:140]


def range_commit(rev: str, subject: str, report: dict, cpu: float, wall: float) -> dict:
    """One commit's rows by static verdict, and per static verdict what the oracle said (a row with
    no `outputs`: its kernel's run was of other specs, or the kernel is added or removed: `-`)."""
    rows = report["kernels"]
    by: dict[str, Counter] = {}
    reasons: list[str] = []
    causes: Counter = Counter()
    for row in rows:
        verdict = row["verdict"]
        o = row.get("outputs") or {}
        got = o.get("result", "-")
        by.setdefault(verdict, Counter())[got] += 1
        if got not in ("outputs-equal", "-"):
            where = f"{o.get('buffer')}[{o.get('index')}] {o.get('old')} -> {o.get('new')} at {o.get('shape')}" \
                if got == "outputs-differ" else o.get("reason", "")
            reasons.append(f"{row['kernel']} [{verdict}] {got}: {where}")
        if got == "not-run":
            causes[not_run_cause(o.get("reason", ""))] += 1
    run = {row["kernel"] for row in rows if (row.get("outputs") or {}).get("result") in RESULTS}
    return {"rev": rev, "subject": subject, "error": report.get("error"), "rows": len(rows),
            "kernels": len({row["kernel"] for row in rows}), "kernels_run": len(run),
            "static": {v: sum(c.values()) for v, c in by.items()}, "oracle": {v: dict(c) for v, c in by.items()},
            "cpu_s": round(cpu, 1), "wall_s": round(wall, 1), "cpu_per_run_kernel": round(cpu / len(run), 2) if run else None,
            "said": sorted(set(reasons)), "not_run": dict(causes)}


def real_range(tmp: Path, clone: Path, n: int, skip: int, jobs: int, timeout: float) -> list[dict]:
    """The newest `n` kernel-changing first-parent commits of a clone (after the newest `skip`),
    each diffed with --outputs."""
    out = []
    revs = (r for r in kernel_commits(clone, 10 * (skip + n)) if changes_a_kernel(clone, r))
    for rev in itertools.islice(revs, skip, skip + n):
        subject = subprocess.run(["git", "-C", str(clone), "log", "-1", "--format=%s", rev], capture_output=True,
                                 text=True, check=True).stdout.strip()
        report, cpu, wall = bounded_diff(clone, rev, tmp / f"range-cache-{rev[:10]}", jobs, timeout)
        c = range_commit(rev, subject, report, cpu, wall)
        out.append(c)
        cells = "; ".join(f"{v} {c['static'][v]} ({', '.join(f'{k} {x}' for k, x in c['oracle'][v].items())})"
                          for v in ordered(c["static"]))
        print(f"{rev[:10]} {subject[:70]}\n  {c['rows']} rows of {c['kernels']} kernels, {c['kernels_run']} run: "
              f"{cells or 'no rows'}; {cpu:.1f} CPU s ({c['cpu_per_run_kernel'] or '-'} per kernel run), {wall:.0f} s wall"
              + (f"\n  error: {c['error'][:300]}" if c["error"] else ""), flush=True)
        for line in c["said"]:
            print(f"    {line[:400]}")
    range_total(out)
    return out


def ordered(verdicts: dict) -> list[str]:
    return [v for v in STATIC if v in verdicts] + sorted(v for v in verdicts if v not in STATIC)


def range_total(out: list[dict]) -> None:
    """The range's rows by static verdict and what the oracle said of each, and the cost."""
    total: dict[str, Counter] = {}
    for c in out:
        for v, counts in c["oracle"].items():
            total.setdefault(v, Counter()).update(counts)
    cpu, wall = sum(c["cpu_s"] for c in out), sum(c["wall_s"] for c in out)
    run = sum(c["kernels_run"] for c in out)
    causes: Counter = Counter()
    for c in out:
        causes.update(c["not_run"])
    print(f"total: {len(out)} commits, {sum(c['rows'] for c in out)} rows, {run} kernels run, "
          f"{sum(bool(c['error']) for c in out)} commits with an error or timed out")
    print(f"{'static verdict':15} {'rows':>5} " + " ".join(f"{r:>16}" for r in (*RESULTS, "-")))
    for v in ordered(total):
        print(f"{v:15} {sum(total[v].values()):5} " + " ".join(f"{total[v][r]:16}" for r in (*RESULTS, "-")))
    print("not-run rows by cause (the first error of the side that could not run):")
    for cause, k in causes.most_common():
        print(f"  {k:4} {cause}")
    print(f"cost: {cpu:.0f} CPU s ({cpu / max(run, 1):.1f} per kernel run, compiles included), {wall:.0f} s wall; "
          f"per commit CPU s: median {sorted(c['cpu_s'] for c in out)[len(out) // 2] if out else 0:.1f}, "
          f"max {max((c['cpu_s'] for c in out), default=0):.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", action="store_true")
    ap.add_argument("--corpus", action="store_true")
    ap.add_argument("--aa", action="store_true")
    ap.add_argument("--pairs", help="comma-separated corpus pair names (default: all)")
    ap.add_argument("--each", action="store_true", help="--corpus: a cold diff per pair (CPU s each)")
    ap.add_argument("--sides", default="old,new", help="--aa: which sides' kernels (default: old,new)")
    ap.add_argument("--range", nargs=2, metavar=("CLONE", "N"), help="N kernel-changing commits of a clone")
    ap.add_argument("--skip", type=int, default=0, help="--range: pass over the newest K commits first")
    ap.add_argument("--jobs", type=int, default=2, help="--range: ptxdiff's --jobs (default: 2)")
    ap.add_argument("--commit-timeout", type=float, default=600.0, help="--range: seconds per commit (default: 600)")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()
    every = not (args.cases or args.corpus or args.aa or args.range)
    names = args.pairs.split(",") if args.pairs else None
    results: dict = {}
    ok = True
    subreaper()
    with tempfile.TemporaryDirectory(prefix="ptxdiff-oracle-") as tmp:
        if every or args.cases:
            results["cases"], passed = cases(Path(tmp))
            ok &= passed
        if every or args.corpus:
            results["corpus"] = corpus(Path(tmp), names, args.each)
        if every or args.aa:
            results["aa"] = aa(Path(tmp), names, args.sides.split(","))
            ok &= all(o["result"] not in ("outputs-differ", "nondeterministic") for o in results["aa"])
        if args.range:
            results["range"] = real_range(Path(tmp), Path(args.range[0]).resolve(), int(args.range[1]), args.skip, args.jobs,
                                          args.commit_timeout)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
