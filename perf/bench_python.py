#!/usr/bin/env python3
"""The Python package against the kfactor command and against scikit-learn.

Every comparison runs its two sides in turn, A B A B ... (one pair first
that is not counted, then --repeats pairs), and reports the median of each
side and the median of the pair-by-pair ratio A/B (on a shared machine whose
speed drifts, neighbouring runs see the same load), and for Python against
the command also each side's fastest run.

  cli      kfactor.NMF (hals) from Python against `kfactor nmf` on the same
           matrix (written once as Matrix Market and read back by both), the
           same random start (same seed) and iterations: the library's own
           loop time per iteration on each side (the report's `seconds` of
           the extension call NMF.fit makes, with the options fit() passed
           it; the command's --json report), the median ratio minus 1 (the
           binding's overhead), and the median wall time per iteration of
           NMF.fit itself (input checks, start and result copies included).
           The command runs with OMP_NUM_THREADS set to the module's Kokkos
           thread count, and both give the same relative error (checked).
  als      kfactor.ALS(implicit=True) against `kfactor als --implicit` on the
           same interaction counts (MovieLens ratings as counts), with the
           estimator's settings spelled out for the command (float, CSR
           layout, Cholesky, plain lambda, no held-out split): the loop's
           time per iteration (the reports' timings.iterations), as for cli,
           and the same final loss (checked).
  sklearn  kfactor.NMF(algorithm=A) for each A of --algorithms and
           sklearn.decomposition.NMF with the solver that runs the same rule
           (cd for hals and alo, mu for mu), from the same start (scikit-learn's own, _initialize_nmf with
           nndsvda, given to both as init='custom'), the same K and
           iterations, tol=0: the final relative error of each and their
           ratio (kfactor / scikit-learn, below 1 a better fit), the median
           wall time per iteration of each fit() and their median ratio.

Inputs: SNAP edge lists (paths; read as perf/bench_nmf_sklearn.py and
kfactor::io::read_edges read them) and dense uniform matrices given as RxC (for
the command written as a Matrix Market array of 4-decimal values, which both
sides then factor).
Set OMP_WAIT_POLICY=passive on a machine shared with other work (spinning
OpenMP threads that lose their core make times meaningless).

Example (2 cores):
  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=passive PYTHONPATH=build/python \\
      perf/bench_python.py --kfactor build/kfactor /work/shared/data/snap/p2p-Gnutella08.txt 2000x1000
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_nmf_sklearn import read_edges, relative_error  # noqa: E402
from ratings import read_ratings  # noqa: E402

import kfactor  # noqa: E402
from kfactor._base import canonical_csr, csr_parts  # noqa: E402


def load(name, seed):
    if os.path.exists(name):
        return read_edges(name), os.path.basename(name)
    r, c = (int(x) for x in name.lower().split("x"))
    return np.random.default_rng(seed).random((r, c)), f"dense {r}x{c}"


class Pairs:
    """a() and b() in turn, one uncounted pair, then `repeats` pairs; each
    returns seconds per iteration. Medians of a, of b and of a/b, and the
    minimum of each (load only adds time: the fastest run is the closest
    to the unloaded machine)."""

    def __init__(self, a, b, repeats):
        a(), b()
        ta, tb = [], []
        for _ in range(repeats):
            ta.append(a())
            tb.append(b())
        self.a, self.b = statistics.median(ta), statistics.median(tb)
        self.ratio = statistics.median(x / y for x, y in zip(ta, tb))
        self.a_min, self.b_min = min(ta), min(tb)


def loop_seconds(report):
    """Seconds per iteration of the solver's loop in a library report
    (timings.iterations where the solver records it, else the run's seconds)."""
    seconds = report.get("timings", {}).get("iterations", report["seconds"])
    return seconds / max(report["iterations"], 1)


class Command:
    """The kfactor command with --json: runs it, keeps its last report."""

    def __init__(self, argv):
        self.argv = argv
        self.env = dict(os.environ, OMP_NUM_THREADS=str(kfactor.build_info()["threads"]))
        self.report = None

    def __call__(self):
        out = subprocess.run(self.argv + ["--json", "--quiet"], check=True, capture_output=True, text=True,
                             env=self.env).stdout
        self.report = json.loads(out)
        return loop_seconds(self.report)


def timings(p):
    """A Python-versus-command Pairs as report fields (ms per iteration;
    overhead: the median pair ratio minus 1)."""
    return {"python_ms_per_iter": 1e3 * p.a, "cli_ms_per_iter": 1e3 * p.b, "overhead": p.ratio - 1,
            "python_min_ms_per_iter": 1e3 * p.a_min, "cli_min_ms_per_iter": 1e3 * p.b_min}


def bench_sklearn(A, label, args, algorithm):
    from sklearn.decomposition import NMF
    from sklearn.decomposition._nmf import _initialize_nmf

    W0, H0 = _initialize_nmf(A, args.rank, init="nndsvda", random_state=args.seed)
    X = A.astype(np.float64)
    kf = kfactor.NMF(args.rank, algorithm=algorithm, init="custom", max_iter=args.iters, tol=0)
    solver = "mu" if algorithm == "mu" else "cd"
    sk = NMF(args.rank, init="custom", solver=solver, max_iter=args.iters, tol=0.0)

    W = {}

    def timed(model):
        def run():
            t0 = time.perf_counter()
            W[model] = model.fit_transform(X, W=W0.copy(), H=H0.copy())
            return (time.perf_counter() - t0) / max(model.n_iter_, 1)
        return run

    p = Pairs(timed(kf), timed(sk), args.repeats)
    kf_err = relative_error(X, W[kf], kf.components_)
    sk_err = relative_error(X, W[sk], sk.components_)
    return {"bench": "sklearn", "input": label, "algorithm": algorithm, "sklearn_solver": solver,
            "rank": args.rank, "iterations": args.iters,
            "repeats": args.repeats, "kfactor_error": kf_err, "sklearn_error": sk_err,
            "error_ratio": kf_err / sk_err, "kfactor_ms_per_iter": 1e3 * p.a, "sklearn_ms_per_iter": 1e3 * p.b,
            "time_ratio": p.ratio}


def write_dense_decimals(path, A, digits=4):
    """A rounded to `digits` decimals in [0, 1), written as a Matrix Market
    array without formatting each value in Python (scipy's writer and reader
    took minutes on a 20000 x 10000 matrix); returns the values the command
    reads. Each value is "0.dddd": k / 10^digits is the double nearest to that
    decimal (IEEE division rounds correctly), as strtod reads it, so both
    sides factor the same matrix."""
    scale = 10**digits
    k = np.minimum(np.rint(np.asarray(A, dtype=np.float64) * scale), scale - 1).astype(np.int64)
    body = np.empty((k.size, digits + 3), dtype=np.uint8)
    body[:, 0], body[:, 1], body[:, -1] = ord("0"), ord("."), ord("\n")
    col_major = k.T.ravel()
    for d in range(digits):
        body[:, 2 + d] = ord("0") + (col_major // 10 ** (digits - 1 - d)) % 10
    with open(path, "wb") as f:
        f.write(f"%%MatrixMarket matrix array real general\n{k.shape[0]} {k.shape[1]}\n".encode())
        f.write(body.tobytes())
    return k / float(scale)


def bench_cli(A, label, args, tmp):
    path = os.path.join(tmp, "A.mtx")
    if sp.issparse(A):
        scipy.io.mmwrite(path, A, precision=17)
        X = canonical_csr(scipy.io.mmread(path))
    else:
        X = np.ascontiguousarray(write_dense_decimals(path, A))
    model = kfactor.NMF(args.rank, algorithm="hals", init="random", max_iter=args.iters, tol=0,
                        random_state=args.seed, device=args.device)
    if args.device != "cpu" and not sp.issparse(X):
        import cupy

        X = cupy.asarray(X)  # used in place on the GPU

    def fit_wall():
        t0 = time.perf_counter()
        model.fit(X)
        return (time.perf_counter() - t0) / max(model.n_iter_, 1)

    fit_wall()
    options = model._options_fitted

    # The extension call fit() makes, for the library's report.
    def python():
        if sp.issparse(X):
            out = kfactor._core.nmf_fit_csr(*csr_parts(X), options, device=args.device)
        else:
            out = kfactor._core.nmf_fit_dense(X, options, device=args.device)
        return loop_seconds(out["report"])

    command = Command([args.kfactor, "nmf", "--input", path, "--rank", str(args.rank), "--iters", str(args.iters),
                       "--algorithm", "hals", "--init", "random", "--seed", str(args.seed), "--tol", "0"])
    p = Pairs(python, command, args.repeats)
    fit_it = statistics.median(fit_wall() for _ in range(args.repeats))
    err = command.report["relative_error"]
    same = abs(err - model.relative_error_) <= 1e-12 * max(model.relative_error_, 1e-300)
    return {"bench": "cli", "device": args.device, "input": label, "rank": args.rank, "iterations": args.iters, "repeats": args.repeats,
            **timings(p), "python_fit_wall_ms_per_iter": 1e3 * fit_it, "same_result": bool(same)}


def bench_als(args, tmp):
    R = read_ratings(args.ratings).astype(np.float32)
    path = os.path.join(tmp, "R.mtx")
    scipy.io.mmwrite(path, R, precision=9)
    R = canonical_csr(scipy.io.mmread(path), dtype=np.float32)
    model = kfactor.ALS(factors=args.als_factors, regularization=0.01, alpha=40.0, iterations=args.als_iters,
                        random_state=args.seed, device=args.device)
    model.fit(R)
    options = model._options_fitted
    loss = []

    def python():
        out = kfactor._core.als_fit(*csr_parts(R), options, device=args.device)
        loss.append(out["report"]["metrics"]["loss"])
        return loop_seconds(out["report"])

    command = Command([args.kfactor, "als", "--implicit", "--input", path, "--rank", str(args.als_factors),
                       "--lambda", "0.01", "--alpha", "40", "--iters", str(args.als_iters), "--seed", str(args.seed),
                       "--precision", "float", "--layout", "csr", "--lambda-weighting", "plain", "--solver",
                       "cholesky"])
    p = Pairs(python, command, args.repeats)
    return {"bench": "als", "device": args.device, "input": os.path.basename(os.path.dirname(args.ratings)), "factors": args.als_factors,
            "iterations": args.als_iters, "repeats": args.repeats, **timings(p),
            "same_result": loss[-1] == command.report["loss"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", help="edge-list paths and RxC dense sizes (cli and sklearn)")
    ap.add_argument("--kfactor", default="build/kfactor")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5, help="counted pairs of each comparison (median of them)")
    ap.add_argument("--no-sklearn", dest="sklearn", action="store_false", help="skip the scikit-learn comparison")
    ap.add_argument("--no-cli", dest="cli", action="store_false", help="skip the command comparison")
    ap.add_argument("--algorithms", default="hals",
                    help="kfactor algorithms of the scikit-learn comparison, comma-separated (hals, alo, mu)")
    ap.add_argument("--ratings", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "../../shared/data/movielens-latest-small/ratings.csv"),
                    help="MovieLens ratings.csv for the als comparison ('' skips it)")
    ap.add_argument("--als-factors", type=int, default=32)
    ap.add_argument("--als-iters", type=int, default=10)
    ap.add_argument("--device", default="cpu",
                    help="where kfactor.NMF and kfactor.ALS run: cpu, or cuda on a CUDA build (dense X as a cupy "
                         "array; the command then runs on the GPU too, and the scikit-learn comparison is skipped)")
    args = ap.parse_args()
    if args.device != "cpu":
        args.sklearn = False
    print(f"# kfactor {kfactor.__version__}, {kfactor.build_info()['threads']} threads", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.inputs:
            A, label = load(name, args.seed)
            if args.cli:
                print(json.dumps(bench_cli(A, label, args, tmp)), flush=True)
            if args.sklearn:
                for algorithm in args.algorithms.split(","):
                    print(json.dumps(bench_sklearn(A, label, args, algorithm)), flush=True)
        if args.ratings:
            print(json.dumps(bench_als(args, tmp)), flush=True)


if __name__ == "__main__":
    main()
