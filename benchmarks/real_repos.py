"""Zero-config ptxdiff on real Triton repositories with history: how much does it measure?

    python benchmarks/real_repos.py --repo ~/src/Liger-Kernel --repo ~/src/flash-linear-attention \
        --repo ~/src/FlagGems [--commits 10] [--skip 0] [--truth liger=truth.toml] [--out results.txt]

Each repository is a local clone (fetch it yourself; nothing of it is committed here). For the
newest first-parent commits that change a Triton kernel file (`@triton.jit` in a changed `.py`),
it runs `ptxdiff diff C^ C --format json` exactly as a new user would (no config, a fresh
cache), then once more warm, until `--commits` commits with changed kernels were seen (`--skip N`
passes over the newest N such commits first, to try older history). It prints
per repository: commits, changed kernels, the share measured (a kernel is measured when a row of
it has metrics: any verdict but `failed`), where specs came from, cold and warm seconds.
Kernels under non-NVIDIA backend paths (Ascend, NPU, cuTile, CuTe DSL, other vendors) are counted
apart. `--truth NAME=FILE` names a config file with the true launch values of some kernels
(read from the wrappers by hand, or recorded): the same commits are diffed with it, and every
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

NON_NVIDIA = re.compile(r"(^|/)(backends?/|_?ascend|npu|cutile|cutedsl|cute_|_kunlunxin|_mthreads|_metax|_iluvatar|"
                        r"_cambricon|_hygon|_aipu|_arm|_tsingmicro|_sunrise|_enflame|_amd|rocm|hip|xpu|intel|gluon)",
                        re.IGNORECASE)
SEVERITY = ("identical", "constants-only", "reordered", "added", "removed", "structural", "failed")


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
    if proc.returncode not in (0, 1):
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1], "kernels": []}, took
    return json.loads(proc.stdout), took


def kernel_verdicts(report: dict) -> dict[str, tuple[str, bool, bool]]:
    """kernel -> (strongest verdict, any row blocking, measured)."""
    out: dict[str, tuple[str, bool, bool]] = {}
    for row in report["kernels"]:
        v, b, m = out.get(row["kernel"], ("identical", False, False))
        verdict = max(v, row["verdict"], key=lambda x: SEVERITY.index(x) if x in SEVERITY else 0)
        out[row["kernel"]] = (verdict, b or row["blocking"], m or row["verdict"] != "failed")
    return out


def run_repo(repo: Path, commits: int, skip: int, jobs: int, truth: str | None, log) -> dict:
    stats = {"repo": repo.name, "commits": 0, "kernels": 0, "measured": 0, "other_backends": 0,
             "sources": Counter(), "cold": [], "warm": [], "failures": Counter(), "flips": [], "checked": 0}
    for rev in itertools.islice(kernel_commits(repo, skip + commits), skip, None):
        cache = tempfile.mkdtemp(prefix="ptxdiff-bench-")
        try:
            report, cold = ptxdiff(repo, rev, cache, jobs)
            if report.get("error"):
                log(f"  {rev[:10]} error: {report['error']}")
                stats["failures"][report["error"][:80]] += 1
            verdicts = kernel_verdicts(report)
            nvidia = {k: v for k, v in verdicts.items() if not NON_NVIDIA.search(k.partition("::")[0])}
            if not nvidia and not report.get("error"):
                stats["other_backends"] += len(verdicts)
                continue
            _, warm = ptxdiff(repo, rev, cache, jobs)
            stats["commits"] += 1
            stats["kernels"] += len(nvidia)
            stats["measured"] += sum(m for _, _, m in nvidia.values())
            stats["other_backends"] += len(verdicts) - len(nvidia)
            stats["sources"].update(r.get("spec_source") or "none" for r in report["kernels"]
                                    if r["kernel"] in nvidia)
            for r in report["kernels"]:
                if r["kernel"] in nvidia and r["verdict"] == "failed" and r["error"]:
                    stats["failures"][re.sub(r"\d+", "N", r["error"])[:90]] += 1
            stats["cold"].append(cold)
            stats["warm"].append(warm)
            log(f"  {rev[:10]} kernels {len(nvidia)} measured {sum(m for _, _, m in nvidia.values())} "
                f"(+{len(verdicts) - len(nvidia)} other backends) cold {cold:.1f}s warm {warm:.2f}s")
            if truth:
                true_report, _ = ptxdiff(repo, rev, cache, jobs, truth)
                true = kernel_verdicts(true_report)
                configured = _configured(truth)
                true_errors = {r["kernel"] for r in true_report["kernels"] if r["verdict"] == "failed"}
                for k, (v, b, _) in nvidia.items():
                    if k not in true or not ({k, k.partition("::")[2]} & configured) or k in true_errors:
                        continue  # not configured, or the true values do not fit this revision's kernel
                    stats["checked"] += 1
                    tv, tb, _ = true[k]
                    if (tv, tb) != (v, b):
                        stats["flips"].append(f"{rev[:10]} {k}: guessed {v}{' (blocks)' if b else ''} -> "
                                              f"true {tv}{' (blocks)' if tb else ''}")
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        if stats["commits"] >= commits:
            break
    return stats


def _configured(path: str) -> set[str]:
    import tomllib
    data = tomllib.loads(Path(path).read_text())
    table = data.get("tool", {}).get("ptxdiff", data)
    return set(table.get("kernels", {}))


def render(all_stats: list[dict]) -> str:
    lines = ["| repo | commits | changed NVIDIA kernels | measured | other backends | spec sources (rows) "
             "| cold s/commit (median) | warm s/commit (max) |", "|---|---|---|---|---|---|---|---|"]
    for s in all_stats:
        share = f"{100 * s['measured'] / s['kernels']:.0f}% ({s['measured']}/{s['kernels']})" if s["kernels"] else "-"
        sources = ", ".join(f"{k} {v}" for k, v in s["sources"].most_common())
        cold = f"{statistics.median(s['cold']):.1f}" if s["cold"] else "-"
        warm = f"{max(s['warm']):.2f}" if s["warm"] else "-"
        lines.append(f"| {s['repo']} | {s['commits']} | {s['kernels']} | {share} | {s['other_backends']} | {sources} "
                     f"| {cold} | {warm} |")
    for s in all_stats:
        if s["failures"]:
            lines.append(f"\n{s['repo']}: most frequent failures")
            lines += [f"  {n} x {msg}" for msg, n in s["failures"].most_common(6)]
        if s["checked"]:
            lines.append(f"\n{s['repo']}: guesses against true launch values: {s['checked']} kernel verdicts checked, "
                         f"{len(s['flips'])} differ")
            lines += [f"  {f}" for f in s["flips"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", required=True, help="a local clone with history (repeatable)")
    ap.add_argument("--commits", type=int, default=10)
    ap.add_argument("--skip", type=int, default=0, help="pass over the newest N kernel-changing commits")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--truth", action="append", default=[], metavar="NAME=FILE",
                    help="config with true launch values for the repository named NAME")
    ap.add_argument("--out", help="also write the table here")
    args = ap.parse_args(argv)
    truths = dict(t.split("=", 1) for t in args.truth)
    results = []
    for path in args.repo:
        repo = Path(path).resolve()
        print(f"{repo.name}:", flush=True)
        truth = truths.get(repo.name)
        results.append(run_repo(repo, args.commits, args.skip, args.jobs, str(Path(truth).resolve()) if truth else None,
                                lambda line: print(line, flush=True)))
    table = render(results)
    print(table)
    if args.out:
        Path(args.out).write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
