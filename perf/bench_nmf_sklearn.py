#!/usr/bin/env python3
"""kfactor nmf against scikit-learn's NMF from the same start.

For each input, the script takes scikit-learn's own start
(sklearn.decomposition._initialize_nmf with --init, default nndsvda), writes
it as Matrix Market files and runs

  kfactor nmf --init custom --w0 W0.mtx --h0 H0.mtx --algorithm ALG --iters N --json
  sklearn NMF(init='custom', solver=SOLVER, max_iter=N, tol=0).fit_transform(X, W=W0, H=H0)

with the same K, iterations, loss and penalties, and prints, per input, the
final relative error ||A - WH||_F / ||A||_F of each (kfactor's report; the
error of scikit-learn's W and H computed here the same way), their ratio
(kfactor / scikit-learn: below 1 is a better fit) and the time per iteration
of each and their ratio (kfactor / scikit-learn: below 1 is faster).
kfactor's time is its report's loop time (the start and the file I/O
excluded); scikit-learn's is the wall time of fit_transform divided by its
n_iter_ (its input checks included, which are small next to an iteration).

Inputs: the SNAP graphs (edge lists: the leading count line skipped, n = max
id + 1, duplicates merged, every value 1, as kfactor::io::read_edges), given
by path, and dense uniform matrices given as RxC (the benchmark size is
20000x10000; pass a smaller one on a small machine). Both tools see the
same matrix: it is written once as a Matrix Market file for kfactor.

On a machine shared with other work, set OMP_WAIT_POLICY=passive: spinning
OpenMP threads that lose their core make kfactor's times meaningless (28x
slower per iteration in one such run).

Example (2 cores):
  OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY=passive \\
      perf/bench_nmf_sklearn.py --kfactor build/kfactor \\
      /work/shared/data/snap/p2p-Gnutella08.txt 2000x1000 --rank 16 --iters 50
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


def read_edges(path):
    rows, cols = [], []
    with open(path) as f:
        first = True
        for line in f:
            p = line.split()
            if not p or p[0].startswith(("#", "%")):
                continue
            if first:  # the count line
                first = False
                continue
            rows.append(int(p[0]))
            cols.append(int(p[1]))
    n = max(max(rows), max(cols)) + 1
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    A.sum_duplicates()
    A.data[:] = 1.0
    return A


def relative_error(A, W, H):
    normA2 = float(A.multiply(A).sum()) if sp.issparse(A) else float(np.sum(A * A))
    cross = float(np.sum(W * (A @ H.T)))
    model2 = float(np.sum((W.T @ W) * (H @ H.T)))
    return np.sqrt(max(normA2 - 2 * cross + model2, 0.0) / normA2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="edge-list paths and RxC dense sizes")
    ap.add_argument("--kfactor", default="build/kfactor")
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--init", default="nndsvda", choices=["random", "nndsvd", "nndsvda", "nndsvdar"])
    ap.add_argument("--algorithm", default="hals", choices=["hals", "alo", "mu"])
    ap.add_argument("--beta-loss", default="frobenius", choices=["frobenius", "kl", "is"])
    ap.add_argument("--alpha-w", type=float, default=0.0)
    ap.add_argument("--alpha-h", type=float, default=0.0)
    ap.add_argument("--l1-ratio", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="one JSON object per input instead of a table")
    args = ap.parse_args()
    from sklearn.decomposition import NMF
    from sklearn.decomposition._nmf import _initialize_nmf

    solver = "mu" if args.algorithm == "mu" else "cd"
    if not args.json:
        print(f"K={args.rank} iters={args.iters} init={args.init} kfactor={args.algorithm} sklearn={solver} "
              f"loss={args.beta_loss}")
        print(f"{'input':28} {'kf err':>9} {'sk err':>9} {'err ratio':>9} {'kf ms/it':>9} {'sk ms/it':>9} "
              f"{'time ratio':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.inputs:
            if os.path.exists(name):
                A = read_edges(name)
                label = os.path.basename(name)
            else:
                r, c = (int(x) for x in name.lower().split("x"))
                A = np.random.default_rng(args.seed).random((r, c))
                label = f"dense {r}x{c}"
            has_zeros = A.nnz < A.shape[0] * A.shape[1] if sp.issparse(A) else bool((A == 0).any())
            if args.beta_loss == "is" and has_zeros:
                # Both tools refuse it (kfactor exits 3): IS is undefined where A is 0.
                row = {"input": label, "skipped": "Itakura-Saito is undefined on an input with zeros"}
                print(json.dumps(row) if args.json else f"{label:28} skipped: {row['skipped']}")
                continue
            a_path, w_path, h_path = (os.path.join(tmp, f) for f in ("A.mtx", "W0.mtx", "H0.mtx"))
            scipy.io.mmwrite(a_path, A)
            W0, H0 = _initialize_nmf(A, args.rank, init=args.init, random_state=args.seed)
            scipy.io.mmwrite(w_path, np.ascontiguousarray(W0))
            scipy.io.mmwrite(h_path, np.ascontiguousarray(H0))
            cmd = [args.kfactor, "nmf", "--input", a_path, "--rank", str(args.rank), "--iters", str(args.iters),
                   "--algorithm", args.algorithm, "--init", "custom", "--w0", w_path, "--h0", h_path,
                   "--beta-loss", args.beta_loss, "--alpha-w", str(args.alpha_w), "--alpha-h", str(args.alpha_h),
                   "--l1-ratio", str(args.l1_ratio), "--json", "--quiet"]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            rep = json.loads(out)
            kf_err = rep["relative_error"]
            kf_it = rep["seconds"] / max(rep["iterations"], 1)
            sk_loss = {"frobenius": "frobenius", "kl": "kullback-leibler", "is": "itakura-saito"}[args.beta_loss]
            model = NMF(n_components=args.rank, init="custom", solver=solver, beta_loss=sk_loss,
                        max_iter=args.iters, tol=0.0, alpha_W=args.alpha_w, alpha_H=args.alpha_h,
                        l1_ratio=args.l1_ratio)
            t0 = time.perf_counter()
            W = model.fit_transform(A, W=W0.copy(), H=H0.copy())
            sk_time = time.perf_counter() - t0
            sk_it = sk_time / max(model.n_iter_, 1)
            if args.beta_loss == "frobenius":
                sk_err = relative_error(A, W, model.components_)
            else:
                normA = np.sqrt(float(A.multiply(A).sum()) if sp.issparse(A) else float(np.sum(A * A)))
                sk_err = model.reconstruction_err_ / normA
            row = {"input": label, "rank": args.rank, "iterations": args.iters, "kfactor_error": kf_err,
                   "sklearn_error": sk_err, "error_ratio": kf_err / sk_err, "kfactor_ms_per_iter": 1e3 * kf_it,
                   "sklearn_ms_per_iter": 1e3 * sk_it, "time_ratio": kf_it / sk_it,
                   "sklearn_iterations": int(model.n_iter_)}
            if args.json:
                print(json.dumps(row))
            else:
                print(f"{label:28} {kf_err:9.6f} {sk_err:9.6f} {kf_err / sk_err:9.4f} {1e3 * kf_it:9.2f} "
                      f"{1e3 * sk_it:9.2f} {kf_it / sk_it:10.3f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
