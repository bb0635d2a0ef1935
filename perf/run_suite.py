#!/usr/bin/env python3
"""Runs kfactor's benchmark suite, peers included, in one invocation.

    perf/run_suite.py --build BUILD_DIR --profile cpu|gpu [--out results.json]
                      [--only NAME[,NAME...]] [--peers-dir DIR] [--skip-peers]

Every kfactor benchmark writes JSON records (the Report schema plus machine
metadata, see perf/common/bench.hpp); peers print `key=value` lines that are
parsed into records of their own. The runner adds each record's fraction of
the machine's measured peaks (bench_peaks: copy GB/s, GEMM GFLOP/s) and the
performance-portability metric across backends (harmonic mean of the
architectural efficiencies, Pennycook et al.), writes everything to one JSON
file (and a CSV beside it), and prints a short summary table last.
perf/plot.py turns the JSON into one PNG per kernel.
"""
import argparse, csv, json, os, re, shlex, subprocess, sys, tempfile, time
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def shared(*parts):
    return os.path.join(os.environ.get("KFACTOR_SHARED", os.path.join(ROOT, "..", "shared")), *parts)


# The CPU SDDMM run and its torch peer share the K list and the matrices:
# bench_sddmm writes each CSR it times to SDDMM_CPU_DUMP, which the peer reads.
SDDMM_CPU_KS = "32,128"
SDDMM_CPU_DUMP = "{build}/sddmm-cpu-matrices"

# name -> {profile: [argv tail]}; "kfactor" entries run BUILD/perf/<program>.
SUITE = [
    dict(name="peaks", program="bench_peaks", args={"cpu": ["--mib", "256", "--gemm", "1024"],
                                                     "gpu": ["--mib", "2048", "--gemm", "8192"]}),
    dict(name="kernels", program="bench_kernels",
         args={"cpu": ["--gemm", "2000x1000", "--spmm", "6000x3000x150000", "--ks", "16,64,256", "--reps", "5"],
               "gpu": ["--gemm", "20000x10000", "--spmm", "26214x11314x1018191,71567x10677x10000000", "--ks",
                       "16,64,256", "--reps", "10"]}),
    dict(name="sddmm", program="bench_sddmm",
         args={"cpu": ["--scale", "100", "--k", SDDMM_CPU_KS, "--precisions", "float", "--reps", "10", "--no-sweep",
                       "--facebook", "{shared}/data/snap/facebook_combined.txt", "--dump-matrices", SDDMM_CPU_DUMP],
               "gpu": ["--facebook", "{shared}/data/snap/facebook_combined.txt", "--no-sweep"]}),
    dict(name="nmf", program="bench_nmf",
         args={"cpu": ["--dense", "2000x1000", "--sparse", "6000x3000x150000", "--ks", "64,256", "--precision",
                       "double", "--iters", "3", "--tiles", "4,8,16,32", "--tile-k", "256"],
               "gpu": ["--dense", "20000x10000", "--sparse", "26214x11314x1018191", "--ks", "16,64,128,256",
                       "--precision", "float", "--iters", "3", "--tiles", "4,8,16,32,64", "--tile-k", "256"]}),
    dict(name="als", program="bench_als",
         args={"cpu": ["--users", "20000", "--items", "2000", "--distinct", "1000000", "--ranks", "32", "--iters", "2"],
               "gpu": ["--users", "480189", "--items", "17770", "--distinct", "99000000", "--ranks", "100,32",
                       "--iters", "2", "--variants", "csr,bals,reorder"]}),
    # YahooMusic-like (bench_als --preset yahoo): the f = 128 must fit in the GPU's memory.
    dict(name="als_yahoo", program="bench_als",
         args={"gpu": ["--preset", "yahoo", "--ranks", "128,100", "--iters", "2", "--variants", "csr,bals,reorder"]}),
    dict(name="bmf", program="bench_bmf",
         args={"cpu": ["--data", "{shared}/data", "--seeds", "1", "--iters", "1000", "--planted", "20000",
                       "--only", "files,movielens"],
               "gpu": ["--data", "{shared}/data", "--seeds", "5", "--planted", "1000000", "--planted-ks", "20,64,256"]}),
    dict(name="mnmf", program="bench_mnmf",
         args={"cpu": ["--m", "20000", "--n", "3000", "--nnz", "1000000", "--ranks", "32", "--serial-ranks", "32",
                       "--reps", "1", "--knn", "none"],
               "gpu": ["--preset", "netflix", "--ranks", "32,128,512", "--serial-ranks", "32,128", "--knn", "items",
                       "--reps", "2"]}),
    dict(name="mnmf_ml10m", program="bench_mnmf",
         args={"cpu": ["--preset", "ml10m", "--ranks", "32,128", "--serial-ranks", "32,128", "--knn", "items",
                       "--reps", "1"],
               "gpu": ["--preset", "ml10m", "--ranks", "32,128,512", "--serial-ranks", "32,128", "--knn", "items",
                       "--reps", "3"]}),
]

# Peers run in the same invocation; their `key=value` lines become records.
# Scripts live in --peers-dir unless the entry says dir=HERE (perf/).
PEERS = [
    dict(name="torch_sddmm_hals", script="torch_sddmm_hals.py", args={"gpu": []}),
    # torch.sparse.sampled_addmm on 2 CPU threads, on the matrices bench_sddmm
    # just timed (run `sddmm` first, or in the same --only list).
    dict(name="torch_sddmm_cpu", script="torch_sddmm_cpu.py", dir=HERE,
         args={"cpu": [SDDMM_CPU_DUMP, "--k", SDDMM_CPU_KS, "--reps", "20", "--threads", "2"]}),
    dict(name="torch_als", script="torch_als.py", args={"gpu": ["32", "100"]}),
    dict(name="sklearn_nmf", script="sklearn_nmf.py",
         args={"cpu": ["{shared}/data/snap/p2p-Gnutella08.txt", "16", "100", "0"]}),
    # cuBool (CuBin's successor), built outside the project; its runner lives in the --peers-dir given.
    dict(name="cubool_bmf", script="run_cubool.py", args={"gpu": ["--data", "{shared}/data", "--seeds", "5"]}),
]


def run(argv, env=None, timeout=None):
    t0 = time.time()
    print("+", " ".join(shlex.quote(a) for a in argv), file=sys.stderr, flush=True)
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode != 0:
        print(f"  exit {p.returncode}: {p.stderr[-2000:]}", file=sys.stderr)
    return p, time.time() - t0


def parse_kv_lines(text, peer):
    out = []
    for line in text.splitlines():
        fields = dict(re.findall(r"([A-Za-z_][\w.()]*)=([^\s]+)", line))
        if not fields:
            continue
        rec = {"peer": peer, "line": line.strip()}
        for k, v in fields.items():
            try:
                rec[k] = float(v.rstrip("s")) if re.fullmatch(r"-?[\d.eE+-]+s?", v) else v
            except ValueError:
                rec[k] = v
        out.append(rec)
    return out


def peaks_of(records):
    peaks = {}
    for r in records:
        if r.get("kernel") != "peak":
            continue
        if r.get("case") == "copy":
            peaks[(r["backend"], "gbps")] = r.get("gbps")
        elif r.get("case") == "gemm":
            peaks[(r["backend"], "gflops", r.get("precision"))] = r.get("gflops")
    return peaks


def add_efficiency(records, peaks):
    for r in records:
        if "backend" not in r or r.get("kernel") == "peak":
            continue
        effs = []
        if r.get("gflops") and peaks.get((r["backend"], "gflops", r.get("precision", "float"))):
            effs.append(r["gflops"] / peaks[(r["backend"], "gflops", r.get("precision", "float"))])
        if r.get("gbps") and peaks.get((r["backend"], "gbps")):
            effs.append(r["gbps"] / peaks[(r["backend"], "gbps")])
        if effs:
            r["efficiency"] = max(effs)  # the binding ceiling is the one closest to reached


def portability(records):
    """Harmonic mean of efficiencies per (kernel, case, precision) across backends."""
    # One group per algorithm variant, matrix and rank: the CPU and GPU profiles
    # run different sizes, and efficiency (a fraction of each machine's own
    # peaks) is what is compared.
    groups = defaultdict(dict)
    for r in records:
        name = r.get("kernel") or r.get("bench")
        if "efficiency" in r and name:
            info = r.get("info", {})
            case = " ".join(str(x) for x in (r.get("case") or "", info.get("matrix", ""), info.get("algorithm", ""),
                                             info.get("variant", ""), f"K{r['rank']}" if r.get("rank") else "") if x)
            key = (name, case, r.get("precision", ""))
            groups[key][r["backend"]] = max(groups[key].get(r["backend"], 0), r["efficiency"])
    out = []
    for (kernel, case, prec), by_backend in sorted(groups.items()):
        effs = list(by_backend.values())
        pp = len(effs) / sum(1 / e for e in effs) if all(e > 0 for e in effs) else 0.0
        out.append(dict(kernel=kernel, case=case, precision=prec, backends=sorted(by_backend), pp=pp))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--profile", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default="")
    ap.add_argument("--peers-dir", default=shared("peers"))
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--merge", nargs="*", default=[], help="earlier results files to merge (other backends)")
    ap.add_argument("--machine", default=None,
                    help="machine kind recorded in the results (perf/results names files MACHINE-BENCH.json)")
    a = ap.parse_args()
    only = set(filter(None, a.only.split(",")))
    out = a.out or os.path.join(a.build, f"perf-{a.profile}.json")
    records = []
    for b in SUITE:
        if only and b["name"] not in only:
            continue
        if a.profile not in b["args"]:
            continue
        exe = os.path.join(a.build, "perf", b["program"])
        if not os.path.exists(exe):
            print(f"skip {b['name']}: {exe} not built", file=sys.stderr)
            continue
        with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as tmp:
            path = tmp.name
        env = dict(os.environ, KFACTOR_BENCH_OUT=path)
        p, secs = run([exe] + [x.format(shared=shared(), build=a.build) for x in b["args"][a.profile]], env=env)
        with open(path) as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    rec["bench"] = b["name"]
                    records.append(rec)
        os.unlink(path)
    if not a.skip_peers:
        for peer in PEERS:
            if (only and peer["name"] not in only) or a.profile not in peer["args"]:
                continue
            script = os.path.join(peer.get("dir", a.peers_dir), peer["script"])
            if not os.path.exists(script):
                print(f"skip peer {peer['name']}: {script} missing", file=sys.stderr)
                continue
            p, secs = run([sys.executable, script] + [x.format(shared=shared(), build=a.build) for x in peer["args"][a.profile]])
            records += parse_kv_lines(p.stdout, peer["name"])
    for path in a.merge:
        with open(path) as f:
            records += json.load(f)["records"]
    peaks = peaks_of(records)
    add_efficiency(records, peaks)
    pp = portability(records)
    with open(out, "w") as f:
        json.dump({"profile": a.profile, "machine": a.machine or a.profile, "command": shlex.join(sys.argv),
                   "records": records, "portability": pp}, f, indent=1)
    with open(os.path.splitext(out)[0] + ".csv", "w", newline="") as f:
        cols = ["bench", "kernel", "case", "backend", "precision", "rows", "cols", "nnz", "rank", "seconds",
                "gflops", "gbps", "efficiency", "peer", "line"]
        w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(records)
    print(f"\nwrote {out}")
    print(f"{'kernel':<10} {'case':<28} {'backend':<8} {'prec':<6} {'ms':>10} {'GFLOP/s':>10} {'GB/s':>9} {'eff':>6}")
    for r in records:
        if "backend" in r:
            print(f"{str(r.get('kernel', r.get('command', ''))):<10} {str(r.get('case', ''))[:28]:<28} "
                  f"{r['backend']:<8} {r.get('precision', ''):<6} {1e3 * r.get('seconds', 0):>10.3f} "
                  f"{r.get('gflops') or 0:>10.1f} {r.get('gbps') or 0:>9.1f} {r.get('efficiency', 0):>6.1%}")
        else:
            print(f"peer {r['peer']}: {r['line'][:110]}")
    if pp:
        print("\nperformance portability (harmonic mean of efficiencies over backends):")
        for e in pp:
            print(f"  {e['kernel']:<10} {e['case'][:28]:<28} {e['precision']:<6} {','.join(e['backends']):<14} {e['pp']:.1%}")


if __name__ == "__main__":
    main()
