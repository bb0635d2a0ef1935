#!/usr/bin/env python3
"""SDDMM peer on the CPU: torch.sparse.sampled_addmm (Debian's python3-torch).

    perf/torch_sddmm_cpu.py DUMP_DIR [--matrices m1,m2,m3] [--k 32,128]
                            [--reps 20] [--warmup 3] [--threads 2]

DUMP_DIR holds the matrices exactly as bench_sddmm timed them
(`bench_sddmm --dump-matrices DUMP_DIR`: <m>.row_map.bin, .entries.bin,
.values.bin, .json), so both sides run on the same CSR instance (same
generator, same scale, same values). run_suite.py's cpu profile passes the
same directory to both.

What is timed, fp32, `--threads` torch threads, median of `--reps` after
`--warmup` calls, wall time of the whole call:
  sampled_addmm         R = torch.sparse.sampled_addmm(S, A, B^T, beta=0, alpha=1):
                        R_ij = <A_i, B_j> at S's pattern. Like kfactor's
                        sddmm_unscaled; a lower bound for torch's scaled one.
  sampled_addmm*values  the same, then R.values().mul_(S.values()):
                        R_ij = s_ij <A_i, B_j>, what bench_sddmm's `kfactor`
                        and `reference` variants compute (plan(exec, A, B, out),
                        scaled). This is the like-for-like comparison.
sampled_addmm with beta = 0 does not scale by S (it computes
beta * S + alpha * (A @ B) sampled at S's pattern), hence the second pass.
B is N x K row-major as in kfactor; B.t() is passed as mat2, which torch's
CPU path transposes back to N x K without a copy. Each call allocates the
result and copies S's structure into it (torch's API; included in the time).

Before timing, the results are checked against a float64 numpy computation:
a small random CSR densely, then a sample of entries of every benchmarked
matrix. GFLOP/s = 2 nnz K / t, as bench_sddmm; the bytes floor uses
bench_sddmm's formula (index + value + output per nonzero, 8-byte row
offsets, A and B once) at the copy bandwidth bench_sddmm measured in the same
run (DUMP_DIR/<m>.json). One `key=value` line per measurement (run_suite.py
turns them into `peer` records).
"""
import argparse
import json
import os
import statistics
import sys
import time
import warnings

import numpy as np
import torch


def csr_tensor(row_map, entries, values, m, n):
    # int32 indices when they fit (torch's CPU kernel is templated on the index type).
    # check_invariants: torch validates the CSR once here (sorted offsets, columns in range).
    idx = torch.int32 if row_map[-1] < 2**31 else torch.int64
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")
        return torch.sparse_csr_tensor(torch.from_numpy(row_map).to(idx), torch.from_numpy(entries).to(idx),
                                       torch.from_numpy(values), size=(m, n), dtype=torch.float32,
                                       check_invariants=True)


def sddmm(S, A, Bt, scaled):
    R = torch.sparse.sampled_addmm(S, A, Bt, beta=0.0, alpha=1.0)
    if scaled:
        R.values().mul_(S.values())
    return R


def expected(row_map, entries, values, A, B, sample, scaled):
    """float64 values at the nonzeros `sample` (indices into entries)."""
    rows = np.repeat(np.arange(len(row_map) - 1), np.diff(row_map))[sample]
    cols = entries[sample]
    A64, B64 = A.numpy().astype(np.float64), B.numpy().astype(np.float64)
    dots = np.einsum("ij,ij->i", A64[rows], B64[cols])
    return dots * values[sample].astype(np.float64) if scaled else dots


def max_rel_diff(got, want):
    return float(np.max(np.abs(got - want) / (1.0 + np.abs(want)))) if want.size else 0.0


def self_check():
    """A small random matrix (empty rows included) against dense numpy."""
    rng = np.random.default_rng(7)
    m, n, k = 37, 23, 5
    dense_mask = rng.random((m, n)) < 0.2
    dense_mask[3] = False
    vals = rng.uniform(-1, 1, (m, n)).astype(np.float32) * dense_mask
    rows, cols = np.nonzero(dense_mask)
    row_map = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=m))]).astype(np.int64)
    entries = cols.astype(np.int32)
    values = vals[rows, cols].astype(np.float32)
    A = torch.from_numpy(rng.uniform(-1, 1, (m, k)).astype(np.float32))
    B = torch.from_numpy(rng.uniform(-1, 1, (n, k)).astype(np.float32))
    S = csr_tensor(row_map, entries, values, m, n)
    worst = 0.0
    full = A.numpy().astype(np.float64) @ B.numpy().astype(np.float64).T
    for scaled in (False, True):
        R = sddmm(S, A, B.t(), scaled)
        assert torch.equal(R.crow_indices().long(), S.crow_indices().long())
        assert torch.equal(R.col_indices().long(), S.col_indices().long())
        want = full[rows, cols] * (values.astype(np.float64) if scaled else 1.0)
        d = max_rel_diff(R.values().numpy().astype(np.float64), want)
        if d > 1e-5:
            sys.exit(f"torch_sddmm_cpu: self-check failed (scaled={scaled}): max rel diff {d:.2e}")
        worst = max(worst, d)
    print(f"sddmm_self_check tool=torch.sparse.sampled_addmm against=numpy_float64_dense m={m} n={n} "
          f"nnz={len(values)} K={k} max_rel_diff={worst:.1e} ok=1", flush=True)


def median_seconds(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dump_dir")
    ap.add_argument("--matrices", default="m1,m2,m3")
    ap.add_argument("--k", default="32,128")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    self_check()
    ks = [int(x) for x in a.k.split(",")]
    found = 0
    for name in a.matrices.split(","):
        base = os.path.join(a.dump_dir, name)
        if not os.path.exists(base + ".json"):
            print(f"torch_sddmm_cpu: {base}.json missing (run bench_sddmm --dump-matrices {a.dump_dir})",
                  file=sys.stderr)
            continue
        found += 1
        info = json.load(open(base + ".json"))
        m, n, nnz = info["M"], info["N"], info["nnz"]
        row_map = np.fromfile(base + ".row_map.bin", dtype=np.uint64).astype(np.int64)
        entries = np.fromfile(base + ".entries.bin", dtype=np.int32)
        values = np.fromfile(base + ".values.bin", dtype=np.float32)
        assert len(row_map) == m + 1 and len(entries) == nnz == len(values) == int(row_map[-1])
        S = csr_tensor(row_map, entries, values, m, n)
        bw = info["copy_bandwidth_GBs"] * 1e9
        sample = np.random.default_rng(11).choice(nnz, min(nnz, 20000), replace=False)
        for K in ks:
            g = torch.Generator().manual_seed(1000 + K)
            A = torch.rand(m, K, generator=g) * 2 - 1
            B = torch.rand(n, K, generator=g) * 2 - 1
            Bt = B.t()  # K x N view of the N x K row-major factor
            floor_s = (nnz * (4 + 2 * 4) + (m + 1) * 8 + (m + n) * K * 4) / bw
            for variant, scaled in (("sampled_addmm", False), ("sampled_addmm*values", True)):
                got = sddmm(S, A, Bt, scaled).values().numpy()[sample].astype(np.float64)
                diff = max_rel_diff(got, expected(row_map, entries, values, A, B, sample, scaled))
                if diff > 1e-4:
                    sys.exit(f"torch_sddmm_cpu: {name} K={K} {variant}: max rel diff {diff:.2e} against numpy")
                t = median_seconds(lambda: sddmm(S, A, Bt, scaled), a.reps, a.warmup)
                print(f"sddmm tool=torch.sparse.sampled_addmm matrix={name} variant={variant} "
                      f"scaled={int(scaled)} m={m} n={n} nnz={nnz} K={K} precision=float "
                      f"threads={torch.get_num_threads()} reps={a.reps} ms={t * 1e3:.4f} "
                      f"gflops={2 * nnz * K / t * 1e-9:.3f} bytes_floor_ms={floor_s * 1e3:.4f} "
                      f"fraction_of_bytes_floor={floor_s / t:.4f} copy_bandwidth_GBs={bw * 1e-9:.1f} "
                      f"max_rel_diff_vs_numpy={diff:.1e} torch={torch.__version__}", flush=True)
    if not found:
        sys.exit("torch_sddmm_cpu: no matrices found")


if __name__ == "__main__":
    main()
