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

    python benchmarks/oracle.py [--cases] [--corpus [--each]] [--aa [--sides old,new]] [--pairs a,b] [--json FILE]
Default: all three. Exit status 0 when every expectation held (cases pass, no A/A differs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "dynamic"))
sys.path.insert(0, str(ROOT))

from oracle_kernels import CASES, files, kernel_id  # noqa: E402

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
    from ptxdiff.compile.pool import Pool, Task
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", action="store_true")
    ap.add_argument("--corpus", action="store_true")
    ap.add_argument("--aa", action="store_true")
    ap.add_argument("--pairs", help="comma-separated corpus pair names (default: all)")
    ap.add_argument("--each", action="store_true", help="--corpus: a cold diff per pair (CPU s each)")
    ap.add_argument("--sides", default="old,new", help="--aa: which sides' kernels (default: old,new)")
    ap.add_argument("--json", help="write every result here")
    args = ap.parse_args()
    every = not (args.cases or args.corpus or args.aa)
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
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
