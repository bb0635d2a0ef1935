#!/usr/bin/env python3
"""perf/plot.py RESULTS.json [OUTDIR]: one PNG per kernel from run_suite.py's JSON
(GFLOP/s or GB/s per case, one bar per backend and precision; peers as hatched bars
where they report a comparable rate)."""
import json, os, sys
from collections import defaultdict

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    path = sys.argv[1]
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(path))
    data = json.load(open(path))
    by_kernel = defaultdict(list)
    for r in data["records"]:
        if r.get("kernel") and "backend" in r:
            by_kernel[r["kernel"]].append(r)
    for kernel, recs in by_kernel.items():
        metric = "gflops" if any(r.get("gflops") for r in recs) else "gbps"
        series = defaultdict(dict)
        cases = []
        for r in recs:
            case = str(r.get("case", ""))
            if case not in cases:
                cases.append(case)
            series[f"{r['backend']} {r.get('precision', '')}"][case] = r.get(metric) or 0
        fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(cases) * max(1, len(series))), 4))
        width = 0.8 / max(1, len(series))
        for i, (name, vals) in enumerate(sorted(series.items())):
            xs = [c + i * width for c in range(len(cases))]
            ax.bar(xs, [vals.get(c, 0) for c in cases], width, label=name)
        ax.set_xticks([c + 0.4 - width / 2 for c in range(len(cases))])
        ax.set_xticklabels(cases, rotation=45, ha="right", fontsize=7)
        ax.set_ylabel("GFLOP/s" if metric == "gflops" else "GB/s")
        ax.set_title(f"kfactor {kernel}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        out = os.path.join(outdir, f"perf-{kernel}.png")
        fig.savefig(out, dpi=110)
        print("wrote", out)


if __name__ == "__main__":
    main()
