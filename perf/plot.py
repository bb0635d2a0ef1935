#!/usr/bin/env python3
"""perf/plot.py RESULTS.json [RESULTS.json ...] [--out DIR]

One PNG per (machine, kernel) from run_suite.py's JSON schema ({profile, machine, command,
records, portability}): GFLOP/s, GB/s or ms per case, one bar per backend and precision.
Peers that ran as kfactor-style records (cuSPARSE in bench_sddmm) appear as their own cases.
docs/benchmarks.md shows the plots of perf/results:

    python3 perf/plot.py perf/results/*.json --out docs/img
"""
import argparse, json, os
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def case_of(r):
    info = r.get("info", {})
    parts = [str(r.get("case") or r.get("matrix") or "")]
    parts += [str(info[k]) for k in ("dataset", "input", "algorithm", "variant", "tile", "objective", "lambda", "grid")
              if k in info]
    if "ranks" in r:  # distributed records: one bar per shape, scaling and rank count
        parts += [f"{r['rows']}x{r['cols']}", str(r.get("scaling", "")), f"p={r['ranks']}"]
    if r.get("rank"):
        parts.append(f"K{r['rank']}")
    return " ".join(p for p in parts if p)


def plot(machine, kernel, recs, outdir):
    metric = "gflops" if any(r.get("gflops") for r in recs) else ("gbps" if any(r.get("gbps") for r in recs) else "ms")
    series, cases = defaultdict(dict), []
    for r in recs:
        case = case_of(r)
        if case not in cases:
            cases.append(case)
        value = 1e3 * r.get("seconds", 0) if metric == "ms" else (r.get(metric) or 0)
        series[f"{r['backend']} {r.get('precision', '')}"][case] = value
    fig, ax = plt.subplots(figsize=(10, max(3, 0.22 * len(cases) * max(1, len(series)) + 1)))
    height = 0.8 / max(1, len(series))
    for i, (name, vals) in enumerate(sorted(series.items())):
        ax.barh([c + i * height for c in range(len(cases))], [vals.get(c, 0) for c in cases], height, label=name)
    ax.set_yticks([c + 0.4 - height / 2 for c in range(len(cases))])
    ax.set_yticklabels(cases, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel({"gflops": "GFLOP/s", "gbps": "GB/s", "ms": "ms (lower is better)"}[metric])
    ax.set_title(f"kfactor {kernel} on {machine}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = os.path.join(outdir, f"{machine}-{kernel}.png")
    fig.savefig(out, dpi=90)
    plt.close(fig)
    print("wrote", out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results", nargs="+")
    ap.add_argument("--out", default=None, help="output folder (default: beside each results file)")
    a = ap.parse_args()
    for path in a.results:
        data = json.load(open(path))
        machine = data.get("machine") or data.get("profile", "")
        outdir = a.out or os.path.dirname(os.path.abspath(path))
        os.makedirs(outdir, exist_ok=True)
        by_kernel = defaultdict(list)
        for r in data["records"]:
            name = r.get("kernel") or r.get("bench")
            if name and "backend" in r and name != "peak":
                by_kernel[name].append(r)
        for kernel, recs in by_kernel.items():
            plot(machine, kernel, recs, outdir)


if __name__ == "__main__":
    main()
