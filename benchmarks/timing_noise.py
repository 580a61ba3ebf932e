"""How noisy is ptxdiff's GPU timing, and does it separate a real 5% slowdown from noise?

Runs on a GPU machine (written for an H200); needs torch + triton, not pygit2/tabulate.

    PYTHONUNBUFFERED=1 python benchmarks/timing_noise.py [--smoke] [--out DIR] [--budget-s S]
    python benchmarks/timing_noise.py --summarise results/timing_noise.json   # re-render the .md

Kernels: corpus pairs gelu, leaky_relu, silu (elementwise, n elements; inputs are make_inputs()
of up to 2**20 elements tiled on the GPU to n) and softmax (rows = 1 + n % 5, n columns,
make_inputs as is). Each callable is the pair's host wrapper ``launch(*inputs)`` -- output
allocation (a zero fill) included -- on inputs prepared once on the GPU.

Per (kernel, n):
  (a) A/A trials: ptxdiff.dynamic.timing.measure(old, old) -- three separate graphs of the same callable;
      any verdict other than within-noise is a false call.
  (b) the A/A band half-width of every measurement at that (kernel, n).
  (c) 5%-slower trials: new = the same launch on 1.05 n elements (5% more work; at bandwidth-bound
      sizes that is ~5% more time; the measured ratio is reported); should be called slower.
  (d) the study's method: one CUDA-event pair around (copy input to GPU, launch, copy back), on
      the same pairs: A/A ratios (two calls of old) and old-vs-new ratios, for contrast.
  plus one measure of the real corpus pair old -> new (information only), and one control A/A trial
  with the graphs captured once per measurement (recapture=False) to show why the protocol re-captures.
Writes timing_noise.json and timing_noise.md into --out (default $OUT, else benchmarks/results).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptxdiff.dynamic import stats  # noqa: E402  (stdlib only)

PAIRS = ROOT / "corpus" / "pairs"
ELEMENTWISE = ("gelu", "leaky_relu", "silu")
ROWWISE = ("softmax",)
FULL_SIZES = {"elementwise": [10_000, 100_000, 1_000_000, 10_000_000, 30_000_000, 100_000_000, 300_000_000],
              "rowwise": [1_000, 4_096, 32_768]}
SMOKE_SIZES = {"elementwise": [10_000, 10_000_000, 100_000_000], "rowwise": [4_096]}
SLOW_FACTOR = 1.05


def load(name: str, side: str):
    path = PAIRS / name / f"{side}.py"
    spec = importlib.util.spec_from_file_location(f"corpus_{name}_{side}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_gpu_inputs(torch, mod, kind: str, n: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    if kind == "elementwise":
        base = mod.make_inputs(min(n, 1 << 20), torch.float32, gen)[0].cuda()
        reps = math.ceil(n / base.numel())
        return (base.repeat(reps)[:n].contiguous(),)
    return tuple(t.cuda() if torch.is_tensor(t) else t for t in mod.make_inputs(n, torch.float32, gen))


def study_call_us(torch, mod, cpu_inputs) -> float:
    """The study's method: one event pair around H2D copy, launch and D2H copy."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    gpu = [t.cuda() if torch.is_tensor(t) else t for t in cpu_inputs]
    out = mod.launch(*gpu)
    out.cpu()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0


def launcher(mod, inputs):
    """A zero-argument callable launching `mod` on `inputs`, bound now (not when the loop moves on)."""
    return lambda: mod.launch(*inputs)


def trial_row(kind_of_trial: str, kernel: str, n: int, seed: int, res) -> dict:
    d = res.as_dict()
    extra = d.pop("extra")
    d.update(trial=kind_of_trial, kernel=kernel, n=n, seed=seed,
             launches_per_graph=extra.get("launches_per_graph"), reps=extra.get("reps"),
             old2_median_us=extra.get("old2_median_us"), samples_us=extra.get("samples_us"))
    return d


def run(args) -> dict:
    import torch
    import triton

    from ptxdiff.dynamic import timing

    timing.require_gpu()
    t0 = time.time()
    sizes = SMOKE_SIZES if args.smoke else FULL_SIZES
    n_aa, n_slow, n_study = (1, 2, 2) if args.smoke else (args.aa_trials, args.slow_trials, args.study_pairs)
    rounds = args.rounds or (10 if args.smoke else 30)
    env = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
           "cuda": torch.version.cuda, "python": platform.python_version(), "rounds": rounds,
           "n_boot": args.n_boot, "aa_trials_per_config": n_aa, "slow_trials_per_config": n_slow,
           "study_pairs_per_config": n_study, "slow_factor": SLOW_FACTOR, "slow_min_n": args.slow_min_n, "smoke": args.smoke,
           "l2": timing.L2_STATE}
    print(json.dumps(env), flush=True)
    trials: list[dict] = []
    study: list[dict] = []
    skipped: list[str] = []
    configs = [(k, "rowwise", n) for n in sizes["rowwise"] for k in ROWWISE] + \
              [(k, "elementwise", n) for n in sizes["elementwise"] for k in ELEMENTWISE]
    seed = 0
    for kernel, kind, n in configs:
        if time.time() - t0 > args.budget_s:
            skipped.append(f"{kernel} n={n}: time budget")
            continue
        old, new = load(kernel, "old"), load(kernel, "new")
        x = make_gpu_inputs(torch, old, kind, n, seed=1)
        old_fn = launcher(old, x)
        new_fn = launcher(new, x)
        slow_fn = None
        if kind == "elementwise":
            big = make_gpu_inputs(torch, old, kind, int(round(n * SLOW_FACTOR)), seed=1)
            slow_fn = launcher(old, big)
        tc = time.time()
        for _ in range(n_aa):
            seed += 1
            res = timing.measure(old_fn, old_fn, rounds=rounds, seed=seed, n_boot=args.n_boot)
            trials.append(trial_row("aa", kernel, n, seed, res))
            print(f"{kernel:10s} n={n:>11,d} A/A   {res.summary()}", flush=True)
        if slow_fn is not None:
            for _ in range(n_slow if n >= args.slow_min_n else 1):
                seed += 1
                res = timing.measure(old_fn, slow_fn, rounds=rounds, seed=seed, n_boot=args.n_boot)
                trials.append(trial_row("slow5", kernel, n, seed, res))
                print(f"{kernel:10s} n={n:>11,d} +5%   {res.summary()}", flush=True)
        if args.aa_once:
            seed += 1
            res = timing.measure(old_fn, old_fn, rounds=rounds, seed=seed, n_boot=args.n_boot, recapture=False)
            trials.append(trial_row("aa_once", kernel, n, seed, res))
            print(f"{kernel:10s} n={n:>11,d} A/A captured once  {res.summary()}", flush=True)
        seed += 1
        res = timing.measure(old_fn, new_fn, rounds=rounds, seed=seed, n_boot=args.n_boot)
        trials.append(trial_row("pair", kernel, n, seed, res))
        print(f"{kernel:10s} n={n:>11,d} pair  {res.summary()}", flush=True)
        # (d) the study's method, same kernels and inputs
        cpu_x = [t.cpu() if torch.is_tensor(t) else t for t in x]
        study_call_us(torch, old, cpu_x)  # warm: compiled already; first-copy effects out
        study_call_us(torch, new, cpu_x)
        aa, on = [], []
        for _ in range(n_study if n < 100_000_000 else min(n_study, 2)):
            a = study_call_us(torch, old, cpu_x)
            b = study_call_us(torch, old, cpu_x)
            c = study_call_us(torch, new, cpu_x)
            aa.append(b / a)
            on.append(c / b)
        study.append({"kernel": kernel, "n": n, "aa_ratios": aa, "old_new_ratios": on,
                      "graph_old_median_us": trials[-1]["old_median_us"]})
        print(f"{kernel:10s} n={n:>11,d} study A/A ratios min {min(aa):.3f} max {max(aa):.3f}; "
              f"old->new {min(on):.3f}..{max(on):.3f}  ({time.time() - tc:.1f}s)", flush=True)
        del x, cpu_x, old_fn, new_fn, slow_fn
        if kind == "elementwise":
            del big
        torch.cuda.empty_cache()
    return {"env": env, "trials": trials, "study": study, "skipped": skipped,
            "wall_s": round(time.time() - t0, 1)}


# ---------------------------------------------------------------- summary

def bucket(us: float) -> str:
    if us < 5:
        return "<5us"
    if us < 30:
        return "5-30us"
    return ">=30us"


def summarise(data: dict) -> dict:
    trials, study = data["trials"], data["study"]
    aa = [t for t in trials if t["trial"] == "aa"]
    wrong = [t for t in aa if t["verdict"] != "within-noise"]
    per_config = {}
    for t in trials:
        c = per_config.setdefault((t["kernel"], t["n"]), {"us": [], "bands": [], "aa": [], "slow": [], "pair": [],
                                                          "aa_once": []})
        c[{"aa": "aa", "slow5": "slow", "pair": "pair", "aa_once": "aa_once"}[t["trial"]]].append(t)
        if t["trial"] != "aa_once":  # the protocol's own bands only
            c["us"].append(t["old_median_us"])
            c["bands"].append(t["band"])
    rows = []
    for (kernel, n), c in sorted(per_config.items(), key=lambda kv: (stats.median(kv[1]["us"]), kv[0])):
        us = stats.median(c["us"])
        st = next((s for s in study if s["kernel"] == kernel and s["n"] == n), None)
        row = {"kernel": kernel, "n": n, "us": us, "bucket": bucket(us),
               "band_median": stats.median(c["bands"]), "band_max": max(c["bands"]),
               "aa_trials": len(c["aa"]), "aa_wrong": sum(t["verdict"] != "within-noise" for t in c["aa"]),
               "aa_ratio_min": min((t["ratio"] for t in c["aa"]), default=None),
               "aa_ratio_max": max((t["ratio"] for t in c["aa"]), default=None),
               "slow_trials": len(c["slow"]), "slow_called": sum(t["verdict"] == "slower" for t in c["slow"]),
               "slow_ratio": stats.median([t["ratio"] for t in c["slow"]]) if c["slow"] else None,
               "once": [{k: t[k] for k in ("ratio", "ci_lo", "ci_hi", "band", "verdict")} for t in c["aa_once"]],
               "pair_ratio": c["pair"][0]["ratio"] if c["pair"] else None,
               "pair_ci": [c["pair"][0]["ci_lo"], c["pair"][0]["ci_hi"]] if c["pair"] else None,
               "pair_verdict": c["pair"][0]["verdict"] if c["pair"] else None,
               "study_aa_min": min(st["aa_ratios"]) if st else None,
               "study_aa_max": max(st["aa_ratios"]) if st else None,
               "study_on_min": min(st["old_new_ratios"]) if st else None,
               "study_on_max": max(st["old_new_ratios"]) if st else None}
        if row["bucket"] == ">=30us":
            row["band_target"] = 0.01
        elif 2.0 <= us < 5.0:
            row["band_target"] = 0.03
        else:
            row["band_target"] = None
        row["band_ok"] = None if row["band_target"] is None else row["band_median"] <= row["band_target"]
        rows.append(row)
    slow_big = [t for t in trials if t["trial"] == "slow5" and t["old_median_us"] >= 30]
    targeted = [r for r in rows if r["band_target"] is not None]
    all_study_aa = [x for s in study for x in s["aa_ratios"]]
    aa_ratios = [t["ratio"] for t in aa]
    return {
        "a_aa_comparisons": len(aa), "a_aa_wrong": len(wrong),
        "a_aa_wrong_share": len(wrong) / len(aa) if aa else None,
        "a_kernels": sorted({t["kernel"] for t in aa}), "a_target_met": bool(aa) and len(wrong) / len(aa) <= 0.02
        and len(aa) >= 50,
        "a_wrong_detail": [{k: t[k] for k in ("kernel", "n", "ratio", "ci_lo", "ci_hi", "band", "verdict")}
                           for t in wrong],
        "b_target_met": bool(targeted) and all(r["band_ok"] for r in targeted),
        "b_configs_checked": len(targeted), "b_configs_failed": [f"{r['kernel']} n={r['n']}" for r in targeted
                                                                  if not r["band_ok"]],
        "c_trials_ge30us": len(slow_big), "c_called_slower": sum(t["verdict"] == "slower" for t in slow_big),
        "c_share": (sum(t["verdict"] == "slower" for t in slow_big) / len(slow_big)) if slow_big else None,
        "c_target_met": bool(slow_big) and sum(t["verdict"] == "slower" for t in slow_big) / len(slow_big) >= 0.9,
        "d_study_aa_min": min(all_study_aa) if all_study_aa else None,
        "d_study_aa_max": max(all_study_aa) if all_study_aa else None,
        "d_graph_aa_min": min(aa_ratios) if aa_ratios else None,
        "d_graph_aa_max": max(aa_ratios) if aa_ratios else None,
        "once_trials": sum(len(r["once"]) for r in rows),
        "once_wrong": sum(o["verdict"] != "within-noise" for r in rows for o in r["once"]),
        "once_ratio_min": min((o["ratio"] for r in rows for o in r["once"]), default=None),
        "once_ratio_max": max((o["ratio"] for r in rows for o in r["once"]), default=None),
        "rows": rows,
    }


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def markdown(data: dict, s: dict) -> str:
    env = data["env"]
    out = ["# GPU timing noise: ptxdiff.dynamic.timing vs the study's method",
           "",
           f"{env['gpu']}, torch {env['torch']}, triton {env['triton']}, CUDA {env['cuda']}; "
           f"{env['rounds']} rounds per measurement, {env['n_boot']} bootstrap resamples, L2 {env['l2']}; "
           f"wall {data['wall_s']} s{' (SMOKE run)' if env['smoke'] else ''}.",
           "Protocol: ptxdiff/timing.py (CUDA graphs in one shared memory pool, re-captured every round; "
           "old/new/old2 interleaved in seeded random order, "
           "paired-by-round median ratio, 95% percentile bootstrap CI, band = A/A CI half-width about 1, "
           "verdict only when the whole CI is outside 1 +- band).",
           "",
           "## Verdict on the targets",
           "",
           f"- (a) A/A false calls: {s['a_aa_wrong']} of {s['a_aa_comparisons']} "
           f"({_f(s['a_aa_wrong_share'] and 100 * s['a_aa_wrong_share'], '.1f')}%) over kernels "
           f"{', '.join(s['a_kernels'])}; target <= 2% with >= 50 comparisons: "
           f"**{'met' if s['a_target_met'] else 'NOT met'}**",
           f"- (b) A/A band (median per kernel/size) <= 1% at >= 30 us and <= 3% at 2-5 us: "
           f"{s['b_configs_checked'] - len(s['b_configs_failed'])}/{s['b_configs_checked']} configs; "
           f"**{'met' if s['b_target_met'] else 'NOT met'}**"
           + (f" (failed: {', '.join(s['b_configs_failed'])})" if s["b_configs_failed"] else ""),
           f"- (c) +5% variant called slower at >= 30 us: {s['c_called_slower']} of {s['c_trials_ge30us']} "
           f"({_f(s['c_share'] and 100 * s['c_share'], '.1f')}%); target >= 90%: "
           f"**{'met' if s['c_target_met'] else 'NOT met'}**",
           f"- (d) A/A ratio range, study's method (single event-timed call incl. H2D/D2H copies): "
           f"{_f(s['d_study_aa_min'], '.3f')} .. {_f(s['d_study_aa_max'], '.3f')}; "
           f"ptxdiff.dynamic.timing A/A point ratios: {_f(s['d_graph_aa_min'], '.4f')} .. {_f(s['d_graph_aa_max'], '.4f')}",
           f"- control, graphs captured once per measurement instead of every round (not the protocol): "
           f"A/A false calls {s['once_wrong']} of {s['once_trials']}, A/A point ratios "
           f"{_f(s['once_ratio_min'], '.4f')} .. {_f(s['once_ratio_max'], '.4f')}",
           "",
           "## Per kernel and size (sorted by time per call)",
           "",
           "| kernel | n | us/call | band median | band max | A/A wrong | A/A ratio range | +5%: slower | +5% ratio "
           "| real pair new/old [CI] verdict | study A/A range | study old->new range "
           "| control A/A, captured once: ratio (band) verdict |",
           "|---|---:|---:|---:|---:|---:|---|---:|---:|---|---|---|---|"]
    for r in s["rows"]:
        pair = "-" if r["pair_ratio"] is None else \
            f"{r['pair_ratio']:.4f} [{r['pair_ci'][0]:.4f}, {r['pair_ci'][1]:.4f}] {r['pair_verdict']}"
        ok = "" if r["band_ok"] is None else (" ok" if r["band_ok"] else " OVER")
        out.append(
            f"| {r['kernel']} | {r['n']:,} | {r['us']:.2f} | {100 * r['band_median']:.2f}%{ok} | "
            f"{100 * r['band_max']:.2f}% | {r['aa_wrong']}/{r['aa_trials']} | "
            f"{_f(r['aa_ratio_min'], '.4f')}..{_f(r['aa_ratio_max'], '.4f')} | "
            f"{r['slow_called']}/{r['slow_trials']} | {_f(r['slow_ratio'], '.4f')} | {pair} | "
            f"{_f(r['study_aa_min'], '.3f')}..{_f(r['study_aa_max'], '.3f')} | "
            f"{_f(r['study_on_min'], '.3f')}..{_f(r['study_on_max'], '.3f')} | "
            + ("; ".join(f"{o['ratio']:.4f} (band {100 * o['band']:.2f}%) {o['verdict']}" for o in r["once"]) or "-")
            + " |")
    if s["a_wrong_detail"]:
        out += ["", "## A/A false calls", ""] + [f"- {w}" for w in s["a_wrong_detail"]]
    if data.get("skipped"):
        out += ["", "Skipped: " + "; ".join(data["skipped"])]
    out += ["", "Notes: `us/call` is the graph-timed median of old (includes the wrapper's output zero-fill). "
            "+5% = the same wrapper on 1.05 n elements, so its true ratio is ~1.05 only where the kernel is "
            "bandwidth-bound; below ~30 us it is launch-bound and not expected to be called. "
            "`band max` includes the +5% and pair measurements' own A/A bands."]
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=os.environ.get("OUT") or str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--rounds", type=int, default=0)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--aa-trials", type=int, default=3)
    ap.add_argument("--slow-trials", type=int, default=4)
    ap.add_argument("--study-pairs", type=int, default=3)
    ap.add_argument("--slow-min-n", type=int, default=10_000_000, help="full --slow-trials from this n; 1 below")
    ap.add_argument("--no-aa-once", dest="aa_once", action="store_false",
                    help="skip the control A/A trial with graphs captured once")
    ap.add_argument("--budget-s", type=float, default=330.0)
    ap.add_argument("--summarise", metavar="JSON", help="re-render the markdown from a results JSON")
    args = ap.parse_args(argv)
    if args.summarise:
        data = json.loads(Path(args.summarise).read_text())
        data["summary"] = summarise(data)
        md = markdown(data, data["summary"])
        Path(args.summarise).with_suffix(".md").write_text(md)
        print(md)
        return 0
    data = run(args)
    data["summary"] = summarise(data)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "timing_noise.json").write_text(json.dumps(data, indent=1))
    md = markdown(data, data["summary"])
    (out / "timing_noise.md").write_text(md)
    print(md, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
