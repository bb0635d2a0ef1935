#!/usr/bin/env python3
"""Implicit-feedback ALS: kfactor against a plain torch implementation on real ratings.

The peer (--peer, default ../shared/peers/torch_implicit_als.py) is the
implicit-feedback ALS of the `implicit` library written in torch: conjugate-
gradient half-steps batched over all rows. Its own main only makes synthetic
data on CUDA, so this script loads the peer's half_step() and loss() and
feeds them a ratings file on --device (cpu or cuda). For each rank f it runs

  kfactor als --implicit --solver S --cg-steps N --alpha A --lambda L
              --lambda-weighting plain --precision P --json    (S in --solvers)
  X = half_step(X, Y, users' CSR), Y = half_step(Y, X, items' CSR), --iters times

and prints the time per iteration and the final loss of each side, and the
speed-up of kfactor's cg over the peer (torch ms / kfactor ms; cholesky, the
exact solve, is kfactor's reference for the loss).

The objective is the same on both sides (include/kfactor/als/als.hpp and the
peer's loss()): L = sum over ALL (u, i) of c (p - x_u . y_i)^2 + lambda
(|X|^2 + |Y|^2), p = 1 and c = 1 + alpha r on the observed pairs (the
rating r itself, as kfactor's linear confidence; the peer's own main has
r = 1), p = 0 and c = 1 elsewhere; both evaluate it as the observed pairs'
correction plus trace(X^T X Y^T Y) plus the regularizer. kfactor runs with
--lambda-weighting plain (its default, nnz, is lambda n_u |x_u|^2 as ALS-WR)
and accumulates its loss in double; the peer's loss() is evaluated here on
float64 copies of its factors, so both numbers are the same sum in the same
precision. Both sides compute in --precision (the peer's tensors float32 or
float64). kfactor counts a rating of 0 as unobserved (p = 0), the peer would
give it p = 1: such entries are dropped before either side sees them (none
in MovieLens, whose ratings are 0.5 to 5); negative ratings are refused, as
kfactor refuses them. The starts differ: kfactor's own (Y uniform in
[0, 1/sqrt f) from --seed, X computed first), the peer's (X and Y uniform in
[0, 0.01) from a torch Generator seeded with --seed); kfactor takes no start
from a file, so the losses are values of one objective after N iterations
from two starts. --check-loss has kfactor write its factors and evaluates
the peer's loss() on them, against kfactor's reported loss.

Input: a ratings file, `user,item,rating[,timestamp]` CSV with or without a
header (MovieLens ratings.csv), whitespace triplets `user item [rating]`, or
a Matrix Market coordinate file. Ids are mapped to 0..n-1 in ascending order
of the original id (as kfactor's ratings reader maps them), users and items
without a nonzero rating dropped; duplicate (user, item) pairs are summed.
The result is written once as Matrix Market for kfactor, so both sides
factor the same matrix (kfactor's read is outside its timings anyway).

Times. kfactor: the command runs --iters and then --iters + --timing-iters
iterations (the same seed: the same first iterations), and an iteration's
time is the difference of the two reports' loop times over --timing-iters
(default --iters; on a GPU, where an iteration on a small set takes under
a millisecond, take 1000: with 100 the difference of two processes' loop
times moved between 0.16 and 0.96 ms per iteration from call to call on
MovieLens latest-small, with 1000 by 0.01 ms). So what only the
first iterations pay cancels: CUDA loads each kernel at its first launch
(about 70 ms of a fresh process on a GPU). Each loop time is the least of
--repeats runs, after an untimed run that warms the driver and the file
cache (a cold first process pays more than ten iterations take). The read,
preprocessing, autotune and loss evaluations are outside the loop time. torch: the wall time of each
iteration's two half-steps, synchronized on cuda (loss outside), as the
median over the iterations after the first (a warm-up: allocations, kernel
loading) when there are at least 3; all the values are printed too.

Equal loss: the peer goes on past --iters (up to --peer-max-iters) until
its loss reaches kfactor cg's after --iters; the line under each table row
gives its iterations to get there and their time (at its median
iteration), over kfactor's time for its --iters iterations. On CPU torch uses
OMP_NUM_THREADS threads, as kfactor's OpenMP backend does.

On a machine shared with other work, set OMP_WAIT_POLICY=passive: spinning
OpenMP threads that lose their core make kfactor's times meaningless.

Examples:
  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive perf/bench_implicit_torch.py --kfactor build/kfactor
  perf/bench_implicit_torch.py --kfactor build-cuda/kfactor --device cuda --f 64,128 --iters 10 --timing-iters 1000
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.io
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ratings import read_ratings  # noqa: E402

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"


def load_peer(path):
    spec = importlib.util.spec_from_file_location("torch_implicit_als", path)
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    return peer


def torch_csr(R, alpha, dtype, device):
    """(rows, cols, conf, C) of R as the peer's half_step and loss take them:
    the entries in row order, C a sparse CSR tensor holding c = 1 + alpha r."""
    rows = np.repeat(np.arange(R.shape[0]), np.diff(R.indptr))

    def t(a, dt=torch.int64):
        return torch.as_tensor(a, device=device).to(dt)

    conf = t(1.0 + alpha * R.data, dtype)
    cols = t(R.indices)
    return t(rows), cols, conf, torch.sparse_csr_tensor(t(R.indptr), cols, conf, R.shape)


def peer_loss(peer, X, Y, side, reg):
    """The peer's loss() in float64, as kfactor accumulates its own."""
    rows, cols, conf, _ = side
    return peer.loss(X.double(), Y.double(), rows, cols, conf.double(), reg)


def per_iteration(ms):
    """Median after the first (warm-up) iteration when there are >= 3."""
    return statistics.median(ms[1:] if len(ms) >= 3 else ms)


def run_peer(peer, users, items, f, args, dtype, target=None):
    m, n = users[3].shape
    on_cuda = torch.device(args.device).type == "cuda"
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    g = torch.Generator(device=args.device).manual_seed(args.seed)
    X = torch.rand(m, f, device=args.device, generator=g, dtype=dtype) * 0.01
    Y = torch.rand(n, f, device=args.device, generator=g, dtype=dtype) * 0.01
    ms, losses = [], []
    while len(ms) < args.iters or (target is not None and losses[-1] > target and len(ms) < args.peer_max_iters):
        sync()
        t0 = time.perf_counter()
        X = peer.half_step(X, Y, *users, args.lam, args.cg_steps)
        Y = peer.half_step(Y, X, *items, args.lam, args.cg_steps)
        sync()
        ms.append(1e3 * (time.perf_counter() - t0))
        losses.append(peer_loss(peer, X, Y, users, args.lam))
    n = args.iters
    out = {"ms_per_iter": per_iteration(ms[:n]), "ms": ms[:n], "loss": losses[n - 1], "loss_history": losses[:n]}
    if target is not None:
        # Iterations until the peer's loss first reaches the target (None
        # when --peer-max-iters did not suffice), timed at the median
        # iteration's time, as ms_per_iter leaves the warm-up out.
        reached = next((i for i, v in enumerate(losses) if v <= target), None)
        out["iters_to_target"] = None if reached is None else reached + 1
        out["ms_to_target"] = None if reached is None else (reached + 1) * per_iteration(ms)
    return out


def read_factor(path):
    """A factor written by `kfactor als --output` (a set line, a header, then
    `id,f0,...`; ids are the rows of our Matrix Market file) in row order."""
    F = np.loadtxt(path, delimiter=",", comments="#", skiprows=2, ndmin=2)
    F = F[np.argsort(F[:, 0])]
    assert (F[:, 0] == np.arange(len(F))).all(), f"{path}: rows missing"
    return torch.as_tensor(F[:, 1:])


def run_kfactor(args, path, f, solver, out_prefix):
    """kfactor at --iters and at --iters + --timing-iters iterations (the same
    seed, so the first --iters iterations are the same): the time per
    iteration is the difference of the two loop times over --timing-iters, which cancels what
    only the first iterations pay (CUDA loads each kernel at its first
    launch: about 70 ms of a fresh process on a GPU). Each loop time is the
    least of --repeats runs, after one untimed run (the first process of a
    call also warms the driver and the file cache)."""
    def run(iters, prefix):
        cmd = [args.kfactor, "als", "--implicit", "--input", path, "--rank", str(f), "--solver", solver,
               "--cg-steps", str(args.cg_steps), "--iters", str(iters), "--alpha", str(args.alpha),
               "--lambda", str(args.lam), "--lambda-weighting", "plain", "--precision", args.precision,
               "--seed", str(args.seed), "--json", "--quiet"]
        if prefix:
            cmd += ["--output", prefix]
        return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)

    run(1, None)
    extra = args.timing_iters or args.iters
    short, long = run(args.iters, out_prefix), run(args.iters + extra, None)
    short_s, long_s = short["timings"]["iterations"], long["timings"]["iterations"]
    for _ in range(args.repeats - 1):
        short_s = min(short_s, run(args.iters, None)["timings"]["iterations"])
        long_s = min(long_s, run(args.iters + extra, None)["timings"]["iterations"])
    ms = 1e3 * (long_s - short_s) / extra
    return short, {"ms_per_iter": ms, "first_iters_ms_per_iter": 1e3 * short["timings"]["per_iteration"],
                   "loss": short["loss"], "loss_history": short["history"]["loss"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ratings", nargs="?", default=str(SHARED / "data" / "movielens-latest-small" / "ratings.csv"))
    ap.add_argument("--kfactor", default="build/kfactor")
    ap.add_argument("--peer", default=str(SHARED / "peers" / "torch_implicit_als.py"))
    ap.add_argument("--device", default="cpu",
                    help="cpu or cuda: where the peer runs (kfactor runs on its build's backend)")
    ap.add_argument("--f", default="64,128", help="ranks, comma-separated")
    ap.add_argument("--solvers", default="cg,cholesky", help="kfactor solvers, comma-separated (cg, cholesky)")
    ap.add_argument("--cg-steps", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--timing-iters", type=int, default=0,
                    help="iterations whose time is measured, past --iters (default: --iters)")
    ap.add_argument("--repeats", type=int, default=3, help="kfactor runs per loop time (the least is taken)")
    ap.add_argument("--peer-max-iters", type=int, default=200,
                    help="the most iterations the peer runs to reach kfactor cg's loss")
    ap.add_argument("--alpha", type=float, default=40.0)
    ap.add_argument("--lambda", dest="lam", type=float, default=0.1)
    ap.add_argument("--precision", default="float", choices=["float", "double"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-loss", action="store_true",
                    help="also evaluate the peer's loss() on kfactor's written factors against kfactor's loss")
    ap.add_argument("--json", action="store_true", help="one JSON object per f instead of a table")
    args = ap.parse_args()
    solvers = args.solvers.split(",")
    dtype = torch.float32 if args.precision == "float" else torch.float64
    torch.backends.cuda.matmul.allow_tf32 = False  # as the peer: full fp32 GEMMs, like kfactor's
    threads = None
    if torch.device(args.device).type == "cpu" and "OMP_NUM_THREADS" in os.environ:
        threads = int(os.environ["OMP_NUM_THREADS"])
        torch.set_num_threads(threads)
    # torch warns once that CSR tensors are beta and unchecked; ours are canonical by construction.
    warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant checks)")
    peer = load_peer(args.peer)

    R = read_ratings(args.ratings)
    users = torch_csr(R, args.alpha, dtype, args.device)
    items = torch_csr(R.T.tocsr(), args.alpha, dtype, args.device)
    if not args.json:
        print(f"{os.path.basename(args.ratings)}: {R.shape[0]} users, {R.shape[1]} items, {R.nnz} ratings; "
              f"iters={args.iters} cg_steps={args.cg_steps} alpha={args.alpha} lambda={args.lam} "
              f"precision={args.precision} torch device={args.device} threads={torch.get_num_threads()}")
        print(f"{'f':>5} | {'kfactor cg ms/it (loss)':>28} | {'kfactor cholesky ms/it (loss)':>29} | "
              f"{'torch cg ms/it (loss)':>28} | speed-up cg")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "R.mtx")
        scipy.io.mmwrite(path, R, precision=17)
        for f in (int(x) for x in args.f.split(",")):
            row = {"f": f, "users": R.shape[0], "items": R.shape[1], "nnz": R.nnz, "iterations": args.iters,
                   "cg_steps": args.cg_steps, "alpha": args.alpha, "lambda": args.lam, "precision": args.precision,
                   "device": args.device, "threads": threads}
            for solver in solvers:
                prefix = os.path.join(tmp, f"kf_{f}_{solver}") if args.check_loss else None
                rep, res = run_kfactor(args, path, f, solver, prefix)
                row["kfactor_backend"] = rep["backend"]
                if prefix:
                    check = peer_loss(peer, read_factor(prefix + "_X.csv").to(args.device),
                                      read_factor(prefix + "_Y.csv").to(args.device), users, args.lam)
                    res["peer_loss_of_kfactor_factors"] = check
                    res["loss_relative_difference"] = abs(check - res["loss"]) / abs(res["loss"])
                row[f"kfactor_{solver}"] = res
            target = row["kfactor_cg"]["loss"] if "kfactor_cg" in row else None
            row["torch_cg"] = run_peer(peer, users, items, f, args, dtype, target)
            if "kfactor_cg" in row:
                kf = row["kfactor_cg"]
                row["speedup_cg"] = row["torch_cg"]["ms_per_iter"] / kf["ms_per_iter"]
                # At equal loss: the peer's time to kfactor cg's loss after
                # --iters over kfactor's time for those iterations.
                if row["torch_cg"]["ms_to_target"] is not None:
                    row["speedup_cg_equal_loss"] = row["torch_cg"]["ms_to_target"] / (args.iters * kf["ms_per_iter"])
            if args.json:
                print(json.dumps(row), flush=True)
                continue

            def cell(r):
                return f"{r['ms_per_iter']:10.2f} ({r['loss']:.6e})" if r else "-"

            speedup = f"{row['speedup_cg']:.2f}" if "speedup_cg" in row else "-"
            print(f"{f:>5} | {cell(row.get('kfactor_cg')):>28} | {cell(row.get('kfactor_cholesky')):>29} | "
                  f"{cell(row['torch_cg']):>28} | {speedup:>11}")
            if target is not None:
                t = row["torch_cg"]
                if t["iters_to_target"] is None:
                    print(f"      torch did not reach kfactor cg's loss in {args.peer_max_iters} iterations")
                else:
                    print(f"      torch reached kfactor cg's loss after {t['iters_to_target']} iterations, "
                          f"{t['ms_to_target']:.1f} ms: {row['speedup_cg_equal_loss']:.2f}x kfactor's "
                          f"{args.iters} iterations")
            print(f"      torch ms per iteration: {' '.join(f'{t:.2f}' for t in row['torch_cg']['ms'])}")
            for name in [f"kfactor_{s}" for s in solvers] + ["torch_cg"]:
                print(f"      {name} loss per iteration: "
                      f"{' '.join(f'{v:.6e}' for v in row[name]['loss_history'])}")
                if "peer_loss_of_kfactor_factors" in row[name]:
                    print(f"      {name} loss {row[name]['loss']:.9e}, peer loss() of its factors "
                          f"{row[name]['peer_loss_of_kfactor_factors']:.9e} (relative difference "
                          f"{row[name]['loss_relative_difference']:.1e})")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
