#!/usr/bin/env python3
"""Strong speed-up and weak-scaling efficiency from distributed benchmark records.

Reads the JSON lines (or perf/results files, {"records": [...]}) that
perf/bench_distributed and perf/bench_sddmm_mpi write, pairs each P-rank
record with the 1-rank record of the same case and scaling in the same file
(one call), and prints one row per case:

  strong  speed-up   t(1) / t(P) on the same problem
  weak    efficiency t(1) / t(P), the problem grown with P

  python3 perf/scaling_summary.py OUT/*.json
"""
import json
import sys


def records(path):
    with open(path) as f:
        text = f.read()
    try:
        whole = json.loads(text)
        if isinstance(whole, dict) and "records" in whole:
            return whole["records"]
    except ValueError:
        pass
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def case_of(r):
    """(solver, variant, K, scaling), the P-rank layout (NMF grid, SDDMM split) and the rank count."""
    info = r.get("info", {})
    if r.get("benchmark") == "distributed" or r.get("command") == "bench_distributed":
        solver, variant = r.get("solver", info.get("solver", "")), info.get("variant", "")
        grid = r.get("grid", "")
        p = int(r.get("ranks", info.get("mpi_ranks", 1)))
        scaling = r.get("scaling", info.get("scaling", "strong"))
        # 1-rank runs report grid 1d; P-rank runs name theirs.
        return (solver, variant, r.get("rank"), scaling), grid, p
    if r.get("command") == "bench_sddmm_mpi":
        # One rank runs the whole S whatever the split: the split names the P-rank run only.
        p = int(r.get("p", info.get("ranks", 1)))
        scaling = r.get("scaling", info.get("scaling", "strong"))
        key = ("sddmm " + info.get("matrix", ""), info.get("column_order", ""), r.get("rank"), scaling)
        return key, info.get("column_split", ""), p
    return None, "", 0


def main(paths):
    many = []
    for path in paths:
        one = {}
        for r in records(path):
            key, grid, p = case_of(r)
            if key is None or not r.get("seconds"):
                continue
            if p == 1:
                one[key] = (r["seconds"], r.get("rows"), r.get("nnz"))
            else:
                many.append((one, key, grid, p, r["seconds"], r.get("rows"), r.get("nnz")))
    if not many:
        print("no multi-rank records")
        return 1
    print("| case | scaling | P | rows, nnz at P | 1 rank ms | P ranks ms | speed-up / efficiency |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for one, key, grid, p, t, rows, nnz in many:
        if key not in one:
            continue
        t1 = one[key][0]
        solver, variant, k, scaling = key
        name = " ".join(str(x) for x in (solver, variant, grid, "K=%s" % k) if x)
        print("| %s | %s | %d | %s, %s | %.3f | %.3f | %.2f |" % (name, scaling, p, rows, nnz, 1e3 * t1, 1e3 * t, t1 / t))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    sys.exit(main(sys.argv[1:]))
