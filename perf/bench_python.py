#!/usr/bin/env python3
"""The Python package against scikit-learn and against the kfactor command.

Three comparisons, each short (seconds per input):

  sklearn  kfactor.NMF(algorithm=hals) and sklearn.decomposition.NMF(solver=cd)
           from the same start (scikit-learn's own, _initialize_nmf with
           nndsvda, given to both as init='custom'), the same K and
           iterations, tol=0: the final relative error of each and their
           ratio (kfactor / scikit-learn, below 1 a better fit), the wall
           time per iteration of each fit() and their ratio.
  cli      kfactor.NMF from Python and `kfactor nmf` on the same matrix
           (written once as Matrix Market), the same start (init random,
           same seed: the same result, checked) and iterations: the loop's
           time per iteration in the library's report of each (the
           extension call NMF.fit makes, and the command's --json report),
           their ratio minus 1 (the binding's overhead), and NMF.fit's wall
           time per iteration (input checks and the start included).
  als      kfactor.ALS(implicit=True) and `kfactor als --implicit` on the
           same interaction counts (MovieLens ratings as counts), the same
           rank, lambda, alpha, seed and iterations: ms per iteration of the
           loop of each (as for cli) and their ratio.

Inputs: SNAP edge lists (paths; read as perf/bench_nmf_sklearn.py and
kfactor::io::read_edges read them) and dense uniform matrices given as RxC.
On a machine shared with other work set OMP_WAIT_POLICY=passive (spinning
OpenMP threads that lose their core make times meaningless), and read the
times as indications only.

Example (2 cores):
  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=passive PYTHONPATH=build/python \\
      perf/bench_python.py --kfactor build/kfactor /work/shared/data/snap/p2p-Gnutella08.txt 2000x1000
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_nmf_sklearn import read_edges, relative_error  # noqa: E402

import kfactor  # noqa: E402


def load(name, seed):
    if os.path.exists(name):
        return read_edges(name), os.path.basename(name)
    r, c = (int(x) for x in name.lower().split("x"))
    return np.random.default_rng(seed).random((r, c)), f"dense {r}x{c}"


def run_cli(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    rep = json.loads(out)
    return rep, rep["seconds"] / max(rep["iterations"], 1)


def bench_sklearn(A, label, args):
    from sklearn.decomposition import NMF
    from sklearn.decomposition._nmf import _initialize_nmf

    W0, H0 = _initialize_nmf(A, args.rank, init="nndsvda", random_state=args.seed)
    X = A.astype(np.float64)
    kf = kfactor.NMF(args.rank, algorithm="hals", init="custom", max_iter=args.iters, tol=0)
    t0 = time.perf_counter()
    W = kf.fit_transform(X, W=W0.copy(), H=H0.copy())
    kf_it = (time.perf_counter() - t0) / max(kf.n_iter_, 1)
    kf_err = relative_error(X, W, kf.components_)
    sk = NMF(args.rank, init="custom", solver="cd", max_iter=args.iters, tol=0.0)
    t0 = time.perf_counter()
    Ws = sk.fit_transform(X, W=W0.copy(), H=H0.copy())
    sk_it = (time.perf_counter() - t0) / max(sk.n_iter_, 1)
    sk_err = relative_error(X, Ws, sk.components_)
    return {"bench": "sklearn", "input": label, "rank": args.rank, "iterations": args.iters,
            "kfactor_error": kf_err, "sklearn_error": sk_err, "error_ratio": kf_err / sk_err,
            "kfactor_ms_per_iter": 1e3 * kf_it, "sklearn_ms_per_iter": 1e3 * sk_it, "time_ratio": kf_it / sk_it}


def bench_cli(A, label, args, tmp):
    path = os.path.join(tmp, "A.mtx")
    scipy.io.mmwrite(path, A, precision=17)
    X = scipy.io.mmread(path)
    X = X.tocsr() if sp.issparse(X) else np.ascontiguousarray(X)
    t0 = time.perf_counter()
    model = kfactor.NMF(args.rank, algorithm="hals", init="random", max_iter=args.iters, tol=0,
                        random_state=args.seed).fit(X)
    fit_it = (time.perf_counter() - t0) / max(model.n_iter_, 1)
    # The extension call fit() made, again, for the library's report.
    from kfactor._base import csr_parts

    if sp.issparse(X):
        out = kfactor._core.nmf_fit_csr(*csr_parts(X), model._options_fitted)
    else:
        out = kfactor._core.nmf_fit_dense(X, model._options_fitted)
    py_it = out["report"]["seconds"] / max(out["report"]["iterations"], 1)
    rep, cli_it = run_cli([args.kfactor, "nmf", "--input", path, "--rank", str(args.rank), "--iters",
                           str(args.iters), "--algorithm", "hals", "--init", "random", "--seed", str(args.seed),
                           "--tol", "0", "--json", "--quiet"])
    same = abs(rep["relative_error"] - model.relative_error_) <= 1e-12 * max(model.relative_error_, 1e-300)
    return {"bench": "cli", "input": label, "rank": args.rank, "iterations": args.iters,
            "python_ms_per_iter": 1e3 * py_it, "cli_ms_per_iter": 1e3 * cli_it, "overhead": py_it / cli_it - 1,
            "python_fit_wall_ms_per_iter": 1e3 * fit_it, "same_result": bool(same)}


def bench_als(args, tmp):
    import csv

    rows, cols, vals = [], [], []
    with open(args.ratings) as f:
        for rec in csv.DictReader(f):
            rows.append(int(rec["userId"]))
            cols.append(int(rec["movieId"]))
            vals.append(float(rec["rating"]))
    users, rows = np.unique(rows, return_inverse=True)
    items, cols = np.unique(cols, return_inverse=True)
    R = sp.csr_matrix((np.asarray(vals, dtype=np.float32), (rows, cols)), shape=(len(users), len(items)))
    path = os.path.join(tmp, "R.mtx")
    scipy.io.mmwrite(path, R, precision=9)
    R = scipy.io.mmread(path).tocsr().astype(np.float32)
    from kfactor._base import csr_parts

    model = kfactor.ALS(factors=args.als_factors, regularization=0.01, alpha=40.0, iterations=args.als_iters,
                        random_state=args.seed).fit(R)
    out = kfactor._core.als_fit(*csr_parts(R), model._options_fitted)
    py_it = out["report"]["seconds"] / max(out["report"]["iterations"], 1)
    _, cli_it = run_cli([args.kfactor, "als", "--implicit", "--input", path, "--rank", str(args.als_factors),
                         "--lambda", "0.01", "--alpha", "40", "--iters", str(args.als_iters), "--seed",
                         str(args.seed), "--precision", "float", "--layout", "csr", "--lambda-weighting", "plain",
                         "--solver", "cholesky", "--json", "--quiet"])
    return {"bench": "als", "input": os.path.basename(os.path.dirname(args.ratings)), "factors": args.als_factors,
            "iterations": args.als_iters, "python_ms_per_iter": 1e3 * py_it, "cli_ms_per_iter": 1e3 * cli_it,
            "ratio": py_it / cli_it}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="*", help="edge-list paths and RxC dense sizes (sklearn and cli)")
    ap.add_argument("--kfactor", default="build/kfactor")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ratings", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "../../shared/data/movielens-latest-small/ratings.csv"),
                    help="MovieLens ratings.csv for the als comparison ('' skips it)")
    ap.add_argument("--als-factors", type=int, default=32)
    ap.add_argument("--als-iters", type=int, default=10)
    args = ap.parse_args()
    print(f"# kfactor {kfactor.__version__}, {kfactor.build_info()['threads']} threads", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.inputs:
            A, label = load(name, args.seed)
            print(json.dumps(bench_sklearn(A, label, args)), flush=True)
            print(json.dumps(bench_cli(A, label, args, tmp)), flush=True)
        if args.ratings:
            print(json.dumps(bench_als(args, tmp)), flush=True)


if __name__ == "__main__":
    main()
