#!/usr/bin/env python3
"""Predicted time per iteration of kfactor's distributed solvers on P GPUs.

t(P) = t1 / P + communication(P): compute splits evenly over the ranks (the
partitions balance nonzeros) and communication follows the per-rank volumes
of include/kfactor/distributed/{nmf,als}.hpp with ring collectives:

  all-gather of N bytes in all:  (P - 1) alpha + (P - 1) / P * N * beta
  all-reduce of N bytes:         2 (P - 1) alpha + 2 (P - 1) / P * N * beta
                                 (log2(P) alpha for payloads under 64 KiB)

alpha and beta are per link: within a node of `node` GPUs NVLink, across
nodes InfiniBand; a collective spanning nodes runs at the slower link. The
1-GPU time t1 and the problem shape come from a measurement
(perf/bench_distributed records); alpha and beta default to the NCCL
calibration of bench_distributed on two H100s (NVLink) and to a 200 Gb/s
InfiniBand NIC per GPU.

NMF, per epoch (T bytes per value, K the rank):
  1D (rows of A and W, columns of A and H per rank):
      gathers (V + D) K T, 2 K x K Gram all-reduces, 1 scalar all-reduce (the error)
  2D grid pr x pc (MPI-FAUN): W gathered within grid rows, H within grid
  columns, the products reduce-scattered:
      2 [(V / pr)(pc - 1)/pc + (D / pc)(pr - 1)/pr] K T words per rank
ALS, per iteration: all-gathers of X (m f T) and Y (n f T) (replicated).

  python3 perf/scaling_model.py nmf --rows 1000000 --cols 500000 --k 128 --t1 0.12
  python3 perf/scaling_model.py als --rows 480189 --cols 17770 --k 100 --t1 0.135
"""
import argparse
import math

NVLINK = {"alpha": 20e-6, "beta": 1 / 300e9}  # NCCL on 2 H100s: 18.9 us/step, 346 GB/s all-gather
IB = {"alpha": 5e-6, "beta": 1 / 25e9}  # 200 Gb/s per GPU


def link(P, node):
    return NVLINK if P <= node else {"alpha": max(NVLINK["alpha"], IB["alpha"]), "beta": IB["beta"]}


def allgather(P, nbytes, l):
    return 0.0 if P == 1 else (P - 1) * l["alpha"] + (P - 1) / P * nbytes * l["beta"]


def allreduce(P, nbytes, l):
    if P == 1:
        return 0.0
    if nbytes < 65536:
        return math.ceil(math.log2(P)) * l["alpha"] + nbytes * l["beta"]
    return 2 * (P - 1) * l["alpha"] + 2 * (P - 1) / P * nbytes * l["beta"]


def nmf_1d(a, P, l):
    T, K = a.bytes, a.k
    t = allgather(P, a.rows * K * T, l) + allgather(P, a.cols * K * T, l)
    return t + 2 * allreduce(P, K * K * T, l) + allreduce(P, 8, l)


def best_grid(P, a):
    best = None
    for pr in range(1, P + 1):
        if P % pr:
            continue
        pc = P // pr
        words = 2 * ((a.rows / pr) * (pc - 1) / pc + (a.cols / pc) * (pr - 1) / pr) * a.k
        if best is None or words < best[0]:
            best = (words, pr, pc)
    return best


def nmf_2d(a, P, l):
    words, pr, pc = best_grid(P, a)
    # four collectives on sub-communicators of pr or pc ranks
    t = 2 * (pc - 1) * l["alpha"] + 2 * (pr - 1) * l["alpha"] + words * a.bytes * l["beta"]
    t += 2 * allreduce(P, a.k * a.k * a.bytes, l) + allreduce(P, 8, l)
    return t, f"{pr}x{pc}"


def als(a, P, l):
    return allgather(P, a.rows * a.k * a.bytes, l) + allgather(P, a.cols * a.k * a.bytes, l)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("solver", choices=["nmf", "als"])
    p.add_argument("--rows", type=float, required=True)
    p.add_argument("--cols", type=float, required=True)
    p.add_argument("--k", type=int, required=True, help="factor rank (K or f)")
    p.add_argument("--t1", type=float, required=True, help="measured seconds per iteration on one GPU")
    p.add_argument("--bytes", type=int, default=4, help="bytes per value (4: float)")
    p.add_argument("--node", type=int, default=8, help="GPUs per node (NVLink within)")
    p.add_argument("--gpus", default="1,2,8,64,512")
    a = p.parse_args()
    print(f"{'P':>5} {'compute ms':>11} {'comm ms':>9} {'total ms':>9} {'speedup':>8}  layout")
    for P in [int(x) for x in a.gpus.split(",")]:
        l = link(P, a.node)
        compute = a.t1 / P
        if a.solver == "nmf":
            c1 = nmf_1d(a, P, l)
            c2, grid = nmf_2d(a, P, l)
            comm, layout = (c1, "1D") if c1 <= c2 else (c2, "2D " + grid)
        else:
            comm, layout = als(a, P, l), "replicated"
        total = compute + comm
        print(f"{P:>5} {1e3 * compute:>11.3f} {1e3 * comm:>9.3f} {1e3 * total:>9.3f} {a.t1 / total:>8.2f}  {layout}")


if __name__ == "__main__":
    main()
