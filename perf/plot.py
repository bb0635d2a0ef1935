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
        name = r.get("kernel") or r.get("bench")
        if name and "backend" in r:
            by_kernel[name].append(r)
    for kernel, recs in by_kernel.items():
        metric = "gflops" if any(r.get("gflops") for r in recs) else ("gbps" if any(r.get("gbps") for r in recs) else "ms")
        series = defaultdict(dict)
        cases = []
        for r in recs:
            info = r.get("info", {})
            parts = [str(r.get("case") or "")] + [str(info[k]) for k in ("matrix", "dataset", "input", "algorithm",
                                                                         "variant", "tile", "objective", "lambda")
                                                  if k in info]
            if r.get("rank"):
                parts.append(f"K{r['rank']}")
            case = " ".join(p for p in parts if p)
            if case not in cases:
                cases.append(case)
            value = 1e3 * r.get("seconds", 0) if metric == "ms" else (r.get(metric) or 0)
            series[f"{r['backend']} {r.get('precision', '')}"][case] = value
        # Horizontal bars: one row per case, one bar per backend/precision.
        fig, ax = plt.subplots(figsize=(10, max(3, 0.22 * len(cases) * max(1, len(series)) + 1)))
        height = 0.8 / max(1, len(series))
        for i, (name, vals) in enumerate(sorted(series.items())):
            ys = [c + i * height for c in range(len(cases))]
            ax.barh(ys, [vals.get(c, 0) for c in cases], height, label=name)
        ax.set_yticks([c + 0.4 - height / 2 for c in range(len(cases))])
        ax.set_yticklabels(cases, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel({"gflops": "GFLOP/s", "gbps": "GB/s", "ms": "ms (lower is better)"}[metric])
        ax.set_title(f"kfactor {kernel}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        out = os.path.join(outdir, f"perf-{kernel}.png")
        fig.savefig(out, dpi=110)
        print("wrote", out)


if __name__ == "__main__":
    main()
