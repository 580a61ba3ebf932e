"""What does a triton upgrade do to the corpus's kernels? The upgrade table of docs/evidence.md.

Builds the corpus repository (its changed side), runs `ptxdiff diff --triton OLD..NEW` on it
(toolchains installed on demand, or PTXDIFF_TOOLCHAINS), and prints the kernels by verdict and
the largest register and spill moves as Markdown. With --json it summarises a report already
made instead of compiling; with --repo, a real repository's revision instead of the corpus
(its report is kept with --save).
    python benchmarks/upgrade.py 3.6.0..3.9.0 [--target sm_90] [--json report.json]
    python benchmarks/upgrade.py 3.6.0..3.9.0 --repo CLONE [--rev HEAD] [--save report.json] [-- PATHS]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ORDER = ("failed", "unmeasured", "structural", "reordered", "constants-only", "identical")


def report_of(pair: str, target: str) -> tuple[dict, float]:
    """Compile the corpus's changed side with both tritons; the JSON report and the wall time."""
    from ptxdiff.corpus.pairs import build_repo, load_pairs
    from ptxdiff.targets import parse_target

    where = Path(tempfile.mkdtemp(prefix="ptxdiff-upgrade-"))
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    _, changed = build_repo(load_pairs(), where, [parse_target(target)])
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ptxdiff", "diff", "--triton", pair, changed, "--format", "json",
                           "--target", target], cwd=where, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout), time.monotonic() - start


def repo_report_of(pair: str, repo: Path, rev: str, paths: list[str]) -> tuple[dict, float]:
    """`ptxdiff diff --triton OLD..NEW REV -- PATHS` in a clone, zero config: the report and the wall time."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "ptxdiff", "diff", "--triton", pair, rev, "--format", "json",
                           *(["--", *paths] if paths else [])], cwd=repo, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout), time.monotonic() - start


def summary(report: dict) -> str:
    """Kernels by verdict (a kernel reads its strongest row's), then the largest moves."""
    rows = report["kernels"]
    strongest: dict[str, str] = {}
    for r in rows:
        v = r["verdict"]
        if r["kernel"] not in strongest or ORDER.index(v) < ORDER.index(strongest[r["kernel"]]):
            strongest[r["kernel"]] = v
    tools = report["toolchain"]
    counts = Counter(strongest.values())
    out = [f"triton {tools.get('triton_old')} -> {tools['triton']}: {len(strongest)} kernels, "
           + ", ".join(f"{counts[v]} {v}" for v in ORDER if counts[v]), ""]
    out += ["| kernel | spec | regs | spill stores (B) | ptx instrs |", "|---|---|---|---|---|"]
    measured = [r for r in rows if r["old"] and r["new"]]
    moves = sorted(measured, key=lambda r: (-abs(r["delta"].get("regs") or 0),
                                            -abs(r["delta"].get("spill_store_bytes") or 0)))
    for r in moves[:8]:
        o, n = r["old"], r["new"]
        out.append(f"| {r['kernel'].split('::')[1]} | {r['spec']} | {o['regs']} -> {n['regs']} | "
                   f"{o['spill_store_bytes']} -> {n['spill_store_bytes']} | {o['ptx_instrs']} -> {n['ptx_instrs']} |")
    spills = sorted((r for r in measured if r["delta"].get("spill_store_bytes")),
                    key=lambda r: -abs(r["delta"]["spill_store_bytes"]))
    if spills:
        out += ["", "The largest spill moves (one row per kernel):", "",
                "| kernel (file) | spec | regs | spill stores (B) |", "|---|---|---|---|"]
        seen: set[str] = set()
        for r in spills:
            if r["kernel"] not in seen and len(seen) < 6:
                seen.add(r["kernel"])
                path, name = r["kernel"].split("::")
                out.append(f"| {name} ({path.rsplit('/', 1)[-1]}) | {r['spec']} | {r['old']['regs']} -> "
                           f"{r['new']['regs']} | {r['old']['spill_store_bytes']} -> {r['new']['spill_store_bytes']} |")
    out.append("")
    out += [f"- {r['verdict']}: {r['kernel']} [{r['spec']}]: {(r['error'] or '')[:200]}"
            for r in rows if r["verdict"] in ("failed", "unmeasured")]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pair", help="OLD..NEW, e.g. 3.6.0..3.9.0")
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--json", metavar="FILE", help="summarise this report instead of compiling")
    ap.add_argument("--repo", type=Path, help="a clone of a real repository instead of the corpus")
    ap.add_argument("--rev", default="HEAD", help="the revision of --repo compiled (default HEAD)")
    ap.add_argument("--save", type=Path, help="write the JSON report here too")
    ap.add_argument("paths", nargs="*", help="after --: the files of --repo, as `ptxdiff diff` takes them")
    args = ap.parse_args()
    if args.json:
        print(summary(json.loads(Path(args.json).read_text())))
        return
    if args.repo:
        report, seconds = repo_report_of(args.pair, args.repo, args.rev, args.paths)
    else:
        report, seconds = report_of(args.pair, args.target)
    if args.save:
        args.save.write_text(json.dumps(report, indent=1) + "\n")
    print(summary(report))
    print(f"\n({seconds:.0f} s wall, toolchains installed before)")


if __name__ == "__main__":
    main()
