"""Zero-config ptxdiff on real Triton repositories with history: how much does it measure, and
what do real commits do to the compiled code?

    python benchmarks/real_repos.py --repo ~/src/Liger-Kernel --repo ~/src/vllm ... \
        [--commits 10] [--evidence 30] [--skip 0] [--truth liger=truth.toml] [--keep DIR] [--out results.txt]

Each repository is a local clone (fetch it yourself; nothing of it is committed here). For the
newest first-parent commits that change a Triton kernel file (`@triton.jit` in a changed `.py`),
it runs `ptxdiff diff C^ C --format json` exactly as a new user would (no config, a fresh
cache), then once more warm, until `--commits` commits with changed kernels were seen (`--skip N`
passes over the newest N such commits first, to try older history). It prints per repository:
commits, changed kernels, the share measured (a kernel is measured when every row of it has
metrics on both sides: not `failed`, not `unmeasured`, no error), where specs came from, cold
and warm seconds, the failures by cause, and the commits that change only how a kernel is
launched (its source the same) with the verdicts they get.

`--evidence N` goes on to N kernel-changing commits per repository (cold only, one cache per
repository; `--evidence-for NAME=N` sets another N for one repository) and prints the study's
question asked of real history: per repository, how many commits are structural, reordered,
constants-only, identical, launch-only, and how many could not be measured; `--sample K` then
lists K of those commits (seeded) with their subjects and verdicts, for checking by hand what
each really did.

The repositories measured so far (clones, none of their code here): lightllm, pytorch/ao,
state-spaces/mamba, Dao-AILab/flash-attention, mobiusml/gemlite, InternLM/lmdeploy,
linkedin/Liger-Kernel, fla-org/flash-linear-attention, FlagOpen/FlagGems, unslothai/unsloth
(`results/real_repos.txt`), and five never used before the toolchain round: BobMcDear/attorch,
fla-org/native-sparse-attention, thu-ml/SageAttention, pytorch-labs/applied-ai,
facebookresearch/xformers (`results/real_repos_new.txt`, `REPOSITORIES` below).

Kernels under non-NVIDIA backend paths (Ascend, NPU, cuTile, CuTe DSL, other vendors) are counted
apart, and so are kernels whose file does not parse at one of the two revisions (the
repository's own syntax error: that side cannot be imported, by anyone). `--truth NAME=FILE`
names a config file with the true launch values of some kernels (read from the wrappers by
hand, or recorded): the same commits are diffed with it, and every
kernel whose verdict or blocking flips against the guessed run is listed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

# every repository measured, as `owner/name` to fetch (fetch and clone them yourself)
REPOSITORIES = ("ModelTC/lightllm", "pytorch/ao", "state-spaces/mamba", "Dao-AILab/flash-attention", "mobiusml/gemlite",
                "InternLM/lmdeploy", "linkedin/Liger-Kernel", "fla-org/flash-linear-attention", "FlagOpen/FlagGems",
                "unslothai/unsloth", "BobMcDear/attorch", "fla-org/native-sparse-attention", "thu-ml/SageAttention",
                "pytorch-labs/applied-ai", "facebookresearch/xformers")
# a vendor's folder under `backends/` (flash-linear-attention's `backends/triton_ascend/`), not a file there
# (megablocks' `backend/kernels.py`, NVIDIA kernels)
NON_NVIDIA = re.compile(r"(^|/)(backends?/[^/]+/|_?ascend|npu|cutile|cutedsl|cute_|_kunlunxin|_mthreads|_metax|_iluvatar|"
                        r"_cambricon|_hygon|_aipu|_arm|_tsingmicro|_sunrise|_enflame|_amd|rocm|hip|xpu|intel|gluon)",
                        re.IGNORECASE)
SEVERITY = ("identical", "constants-only", "reordered", "added", "removed", "structural", "failed", "unmeasured")
UNMEASURED = ("failed", "unmeasured")
# the cause of a failed row, by its error text (first match)
CAUSES = (
    ("timed out", re.compile(r"timed out")),
    ("refused by the build layer", re.compile(r"refused `|is not a name of triton's language")),
    ("defined only for other targets", re.compile(r"not defined when compiling for")),
    ("triton's own failure", re.compile(r"PassManager::run failed|error encountered during parsing|LLVM ERROR")),
    # block pointers (gone in 3.9); `pid[:, None]` on a scalar (triton 3.6 compiles it, 3.9 refuses it)
    ("refused by this triton, not by older ones", re.compile(r"have been removed|too many indices for tensor of rank")),
    ("host code at import", re.compile(r"host code|cannot read .*: .*(Refused|not evaluated|evaluator)|the evaluator")),
    ("a name triton cannot resolve", re.compile(r"NameError|is not defined|Cannot access global")),
    ("types (guessed or not)", re.compile(r"TypeError|IncompatibleType|dtype|\btypes?\b|pointer|must all be ints|operand",
                                          re.I)),
    ("not in this triton", re.compile(r"has no attribute|NotImplementedError")),
    ("source that does not parse", re.compile(r"SyntaxError|not UTF-8|IndentationError")),
    ("specs (a value nothing gives)", re.compile(r"set \[tool\.ptxdiff|heuristic")),
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def kernel_commits(repo: Path, limit: int):
    """First-parent commits, newest first, whose change touches a file with a @triton kernel
    (looked for among the commits that touch the kernel files of HEAD, so that a repository
    where kernels are a small part is searched deep enough)."""
    files = git(repo, "grep", "-l", "-e", "triton.jit", "-e", "@jit", "HEAD", "--", "*.py").split()
    files = [f.partition(":")[2] for f in files] or ["*.py"]
    for line in git(repo, "log", "--first-parent", "--format=%H", "-n", str(limit * 40), "--", *files).split():
        files = git(repo, "diff-tree", "--no-commit-id", "-r", "--name-only", f"{line}^", line).split("\n")
        for f in files:
            if not f.endswith(".py"):
                continue
            try:
                text = git(repo, "show", f"{line}:{f}")
            except subprocess.CalledProcessError:
                continue
            if "triton.jit" in text or "@jit" in text:
                yield line
                break


def ptxdiff(repo: Path, rev: str, cache: str, jobs: int, config: str | None = None) -> tuple[dict, float]:
    env = {**os.environ, "PTXDIFF_CACHE_DIR": cache}
    cmd = [sys.executable, "-I", "-m", "ptxdiff", "diff", f"{rev}^", rev, "--format", "json", "-q", "--jobs", str(jobs)]
    if config:
        cmd += ["--config", config]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    took = time.perf_counter() - start
    try:
        if proc.returncode in (0, 1):
            return json.loads(proc.stdout), took
    except json.JSONDecodeError:
        pass
    return {"error": (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1], "kernels": []}, took


def kernel_verdicts(report: dict) -> dict[str, tuple[str, bool, bool]]:
    """kernel -> (strongest verdict, any row blocking, measured: every row has metrics, or is a guessed
    combination that fails alike on both sides while others compile: a guess that does not fit)."""
    out: dict[str, tuple[str, bool, bool]] = {}
    for row in report["kernels"]:
        v, b, m = out.get(row["kernel"], ("identical", False, True))
        verdict = max(v, row["verdict"], key=lambda x: SEVERITY.index(x) if x in SEVERITY else 0)
        fits = not str(row.get("why") or "").startswith("guessed values that do not fit")  # skipped: not a change
        verdict = verdict if fits else v
        out[row["kernel"]] = (verdict, b or row["blocking"], m and (not fits or row["verdict"] not in UNMEASURED
                                                                  and not row.get("error")))
    return out


UNPARSED = re.compile(r"^(old|new): [^:]+:\d+: (SyntaxError|IndentationError)")


# a name the kernel's module binds nowhere (ptxdiff's builder says so): triton fails the same way; a
# relative import above the top-level package: Python refuses the module at that revision
OWN_ERROR = re.compile(r"the (?:kernel|module)'s own error, which (?:triton|Python) raises at this revision too")


def broken_source(report: dict) -> set[str]:
    """Kernels whose file does not parse at one of the revisions, or that read a name their module
    binds nowhere (the repository's own error: no tool measures that side), and no row fails otherwise."""
    bad: dict[str, bool] = {}
    for row in report["kernels"]:
        error = row.get("error") or ""
        if error:
            parts = [p for p in error.split("; ") if p]
            bad[row["kernel"]] = bad.get(row["kernel"], True) and all(UNPARSED.match(p) or OWN_ERROR.search(p) for p in parts)
    return {k for k, b in bad.items() if b}


def cause(error: str) -> str:
    return next((name for name, pattern in CAUSES if pattern.search(error)), "other")


def launch_only(repo: Path, rev: str, report: dict) -> list[str]:
    """Kernels whose rows say their launch changed while their effective source did not."""
    from ptxdiff.discovery.kernels import discover
    from ptxdiff.git.repo import Repo

    launched = {row["kernel"] for row in report["kernels"] if row.get("launch")}
    if not launched:
        return []
    r = Repo(str(repo))
    paths = {k.partition("::")[0] for k in launched}
    old, new = (discover(r.snapshot(r.side(x)), paths=paths).kernels for x in (f"{rev}^", rev))
    return sorted(k for k in launched if k in old and k in new and old[k].fingerprint == new[k].fingerprint)


def commit_verdict(nvidia: dict[str, tuple[str, bool, bool]], launch_kernels: list[str]) -> str:
    """One word for a commit: the strongest verdict of its NVIDIA kernels; `launch-only` when
    every kernel it changes changed only in its launch; `unmeasured` when one could not be."""
    if not all(m for _, _, m in nvidia.values()):
        return "unmeasured"
    if nvidia and set(nvidia) <= set(launch_kernels):
        return "launch-only"
    return max((v for v, _, _ in nvidia.values()), key=SEVERITY.index, default="identical")


def run_repo(repo: Path, commits: int, skip: int, jobs: int, truth: str | None, log, keep: Path | None = None,
             evidence: int = 0) -> dict:
    """The newest `commits` kernel-changing commits cold and warm (fresh cache each); with
    `evidence`, more commits up to that many, cold only, sharing one cache."""
    stats = {"repo": repo.name, "commits": 0, "kernels": 0, "measured": 0, "other_backends": 0, "broken": 0,
             "sources": Counter(), "cold": [], "warm": [], "failures": Counter(), "examples": {}, "flips": [],
             "checked": 0, "launch_only": [], "evidence": []}
    shared = tempfile.mkdtemp(prefix="ptxdiff-bench-shared-")
    seen = 0
    try:
        for rev in itertools.islice(kernel_commits(repo, skip + max(commits, evidence)), skip, None):
            if seen >= max(commits, evidence):
                break
            proof = seen < commits
            cache = tempfile.mkdtemp(prefix="ptxdiff-bench-") if proof else shared
            try:
                report, cold = ptxdiff(repo, rev, cache, jobs)
                if keep:
                    (keep / repo.name).mkdir(parents=True, exist_ok=True)
                    (keep / repo.name / f"{rev[:10]}.json").write_text(json.dumps({**report, "cold_s": cold}))
                verdicts = kernel_verdicts(report)
                broken = broken_source(report)
                nvidia = {k: v for k, v in verdicts.items() if not NON_NVIDIA.search(k.partition("::")[0])
                          and k not in broken}
                if not nvidia and not broken and not report.get("error"):
                    stats["other_backends"] += len(verdicts) - len(broken) if proof else 0
                    continue
                seen += 1
                launch_kernels = launch_only(repo, rev, report)
                verdict = commit_verdict(nvidia, launch_kernels) if nvidia and not report.get("error") else "unmeasured"
                stats["evidence"].append((rev, verdict, git(repo, "log", "-1", "--format=%s", rev).strip(), nvidia))
                if launch_kernels:
                    stats["launch_only"].append((rev, verdict, launch_kernels))
                if not proof:
                    log(f"  {rev[:10]} {verdict} ({len(nvidia)} kernels, {cold:.1f}s)")
                    continue
                if report.get("error"):
                    log(f"  {rev[:10]} error: {report['error']}")
                    stats["failures"]["ptxdiff exited with an error"] += 1
                _, warm = ptxdiff(repo, rev, cache, jobs)
                stats["commits"] += 1
                stats["kernels"] += len(nvidia)
                stats["measured"] += sum(m for _, _, m in nvidia.values())
                stats["other_backends"] += len(verdicts) - len(nvidia) - len(broken)
                stats["broken"] += len(broken)
                stats["sources"].update(r.get("spec_source") or "none" for r in report["kernels"]
                                        if r["kernel"] in nvidia)
                failed = {}
                for r in report["kernels"]:
                    if r["kernel"] in nvidia and not nvidia[r["kernel"]][2] and r.get("error"):
                        failed.setdefault(r["kernel"], r["error"])
                for k, error in failed.items():
                    stats["failures"][cause(error)] += 1
                    stats["examples"].setdefault(cause(error), f"{rev[:10]} {k}: {error[:300]}")
                stats["cold"].append(cold)
                stats["warm"].append(warm)
                log(f"  {rev[:10]} kernels {len(nvidia)} measured {sum(m for _, _, m in nvidia.values())} "
                    f"(+{len(verdicts) - len(nvidia) - len(broken)} other backends, +{len(broken)} whose source does "
                    f"not parse) cold {cold:.1f}s warm {warm:.2f}s {verdict}")
                if truth:
                    _truth(repo, rev, cache, jobs, truth, nvidia, stats)
            finally:
                if proof:
                    shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(shared, ignore_errors=True)
    return stats


def _truth(repo: Path, rev: str, cache: str, jobs: int, truth: str, nvidia: dict, stats: dict) -> None:
    """Diff once more with the true launch values; list each kernel whose verdict or blocking flips."""
    true_report, _ = ptxdiff(repo, rev, cache, jobs, truth)
    true = kernel_verdicts(true_report)
    configured = _configured(truth)
    true_errors = {r["kernel"] for r in true_report["kernels"] if r["verdict"] in UNMEASURED}
    for k, (v, b, _) in nvidia.items():
        if k not in true or not ({k, k.partition("::")[2]} & configured) or k in true_errors:
            continue  # not configured, or the true values do not fit this revision's kernel
        stats["checked"] += 1
        tv, tb, _ = true[k]
        if (tv, tb) != (v, b):
            stats["flips"].append(f"{rev[:10]} {k}: guessed {v}{' (blocks)' if b else ''} -> "
                                  f"true {tv}{' (blocks)' if tb else ''}")


def _configured(path: str) -> set[str]:
    import tomllib
    data = tomllib.loads(Path(path).read_text())
    table = data.get("tool", {}).get("ptxdiff", data)
    return set(table.get("kernels", {}))


def render(all_stats: list[dict]) -> str:
    lines = ["| repo | commits | changed NVIDIA kernels | measured | other backends | source does not parse "
             "| spec sources (rows) | cold s/commit (median) | warm s/commit (max) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in all_stats:
        share = f"{100 * s['measured'] / s['kernels']:.0f}% ({s['measured']}/{s['kernels']})" if s["kernels"] else "-"
        sources = ", ".join(f"{k} {v}" for k, v in s["sources"].most_common())
        cold = f"{statistics.median(s['cold']):.1f}" if s["cold"] else "-"
        warm = f"{max(s['warm']):.2f}" if s["warm"] else "-"
        lines.append(f"| {s['repo']} | {s['commits']} | {s['kernels']} | {share} | {s['other_backends']} "
                     f"| {s['broken']} | {sources} | {cold} | {warm} |")
    total = sum(s["kernels"] for s in all_stats)
    if total:
        measured = sum(s["measured"] for s in all_stats)
        lines.append(f"| all | {sum(s['commits'] for s in all_stats)} | {total} | "
                     f"{100 * measured / total:.0f}% ({measured}/{total}) | | | | | |")
    for s in all_stats:
        if s["failures"]:
            lines.append(f"\n{s['repo']}: kernels not measured, by cause")
            lines += [f"  {n} x {why}: e.g. {s['examples'].get(why, '')}" for why, n in s["failures"].most_common()]
        if s["launch_only"]:
            lines.append(f"\n{s['repo']}: commits that change how a kernel is launched, not its source")
            lines += [f"  {rev[:10]} {verdict}: {', '.join(k.partition('::')[2] for k in ks)}"
                      for rev, verdict, ks in s["launch_only"]]
        if s["checked"]:
            lines.append(f"\n{s['repo']}: guesses against true launch values: {s['checked']} kernel verdicts checked, "
                         f"{len(s['flips'])} differ")
            lines += [f"  {f}" for f in s["flips"]]
    return "\n".join(lines) + "\n"


EVIDENCE_COLUMNS = ("structural", "reordered", "constants-only", "identical", "launch-only", "added", "removed",
                    "unmeasured")


def render_evidence(all_stats: list[dict], sample: int) -> str:
    """The verdict of every kernel-changing commit seen, per repository; a seeded sample to check."""
    lines = ["| repo | commits | " + " | ".join(EVIDENCE_COLUMNS) + " |", "|---|---:|" + "---:|" * len(EVIDENCE_COLUMNS)]
    totals: Counter = Counter()
    for s in all_stats:
        counts = Counter(v for _, v, _, _ in s["evidence"])
        totals.update(counts)
        lines.append(f"| {s['repo']} | {len(s['evidence'])} | " + " | ".join(str(counts[c]) for c in EVIDENCE_COLUMNS) + " |")
    n = sum(totals.values())
    lines.append(f"| all | {n} | " + " | ".join(f"{totals[c]} ({100 * totals[c] / n:.0f}%)" if n else "0"
                                           for c in EVIDENCE_COLUMNS) + " |")
    if sample:
        import random
        per = max(1, sample // max(1, len(all_stats)))
        lines.append(f"\nA sample of {per} commits per repository (seed 17), to check by hand:")
        for s in all_stats:
            for rev, verdict, subject, nvidia in random.Random(17).sample(s["evidence"], min(per, len(s["evidence"]))):
                kernels = ", ".join(f"{k.partition('::')[2]} {v}" for k, (v, _, _) in sorted(nvidia.items())[:4])
                lines.append(f"  {s['repo']} {rev[:10]} {verdict}: {subject[:90]} [{kernels}]")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="repositories measured so far: " + ", ".join(REPOSITORIES))
    ap.add_argument("--repo", action="append", required=True, help="a local clone with history (repeatable)")
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--skip", type=int, default=0, help="pass over the newest N kernel-changing commits")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--truth", action="append", default=[], metavar="NAME=FILE",
                    help="config with true launch values for the repository named NAME")
    ap.add_argument("--out", help="also write the table here")
    ap.add_argument("--keep", type=Path, help="write each commit's JSON report under KEEP/<repo>/<rev>.json")
    ap.add_argument("--evidence", type=int, default=0, help="go on to N kernel-changing commits per repository")
    ap.add_argument("--evidence-for", action="append", default=[], metavar="NAME=N",
                    help="another N for the repository named NAME (more where compiles are cheap)")
    ap.add_argument("--sample", type=int, default=30, help="commits of the evidence listed to check by hand")
    args = ap.parse_args(argv)
    truths = dict(t.split("=", 1) for t in args.truth)
    evidence = {name: int(n) for name, n in (e.split("=", 1) for e in args.evidence_for)}
    results = []
    for path in args.repo:
        repo = Path(path).resolve()
        print(f"{repo.name}:", flush=True)
        truth = truths.get(repo.name)
        results.append(run_repo(repo, args.commits, args.skip, args.jobs, str(Path(truth).resolve()) if truth else None,
                                lambda line: print(line, flush=True), args.keep,
                                evidence.get(repo.name, args.evidence)))
    table = render(results) + ("\n" + render_evidence(results, args.sample) if args.evidence or evidence else "")
    print(table)
    if args.out:
        Path(args.out).write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
