#!/usr/bin/env python3
"""`kfactor nmf|als --distributed` under mpiexec, against the single-rank CLI.

usage: cli_test.py KFACTOR MPIEXEC WORKDIR nmf|als

nmf:
- dense input: the factor files of a 2-rank run equal the single-rank ones
  within 1e-9 (relative); stdout under --json is exactly one JSON object
  (rank 0 alone prints) and its history matches; so do those of a 1x2 grid
  (--grid 1x2, reported as info grid), while a grid of other than 2 ranks,
  a malformed one and --grid without --distributed exit 2;
- sparse input: a checkpoint written by 2 ranks at iteration 4 restarts on 3
  ranks and without --distributed, and both end within 1e-9 of the
  uninterrupted single-rank run; --restart with another rank K is refused
  on every rank (exit 3, reported once).
als:
- the factor CSVs of a 3-rank run are byte-identical to the single-rank
  ones, metrics within 1e-12; a 2-rank checkpoint restarts on 3 ranks to
  the same bytes;
- --factor-layout blocked on 3 ranks: factors within 1e-9 of one rank; auto
  picks blocked under a tiny --factor-memory-budget; a blocked 2-rank
  checkpoint restarts replicated on 3 ranks within 1e-9; a bad layout is a
  usage error;
- a missing input fails on every rank with exit code 3.
"""
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cli_harness  # noqa: E402
from cli_harness import check, factor_lines, failures, report, run

KF, MPIEXEC, WORK, WHAT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cli_harness.start(KF, MPIEXEC, WORK, timeout=120)


def read_mm_array(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith("%")]
    m, n = map(int, lines[0].split())
    vals = [float(x) for x in lines[1:]]
    return m, n, vals


def rel(a, b):
    if len(a) != len(b):
        return float("inf")
    return max(abs(x - y) for x, y in zip(a, b)) / max(abs(y) for y in b)


rng = random.Random(7)
# Sparse non-negative 60 x 45 with skewed rows; dense 30 x 25.
with open(os.path.join(WORK, "sparse.mtx"), "w") as f:
    ent = [(i, j, rng.random() + 0.1) for i in range(60) for j in range(45)
           if rng.random() < (0.7 if i < 8 else 0.15)]
    f.write("%%MatrixMarket matrix coordinate real general\n")
    f.write(f"60 45 {len(ent)}\n")
    for i, j, v in ent:
        f.write(f"{i + 1} {j + 1} {v:.6f}\n")
with open(os.path.join(WORK, "dense.mtx"), "w") as f:
    f.write("%%MatrixMarket matrix array real general\n30 25\n")
    for _ in range(30 * 25):
        f.write(f"{rng.random():.6f}\n")
# Ratings (user item rating), ids not contiguous.
with open(os.path.join(WORK, "ratings.txt"), "w") as f:
    for u in range(80):
        for i in range(50):
            if rng.random() < (0.5 if u < 10 else 0.12):
                f.write(f"{1000 + 3 * u} {7 * i} {rng.randint(1, 5)}\n")

def nmf_checks():
    common = ["nmf", "--input", "dense.mtx", "--rank", "4", "--algorithm", "alo", "--json", "--seed", "5"]
    single = report(run(common + ["--iters", "8", "--output", "dense_1"]))
    dist = report(run(common + ["--iters", "8", "--output", "dense_2", "--distributed"], np=2))
    for fac in ("W", "H"):
        _, _, a = read_mm_array(os.path.join(WORK, f"dense_2_{fac}.mtx"))
        _, _, b = read_mm_array(os.path.join(WORK, f"dense_1_{fac}.mtx"))
        check(rel(a, b) <= 1e-9, f"nmf dense: distributed {fac} differs from single-rank by {rel(a, b)}")
    if single and dist:
        check(dist.get("info", {}).get("mpi_ranks") == "2", "nmf: report lacks mpi_ranks 2")
        check("communication" in dist.get("timings", {}), "nmf: report lacks the communication time")
        e1, e2 = single["relative_error"], dist["relative_error"]
        check(abs(e1 - e2) <= 1e-9 * e1, f"nmf dense: relative error {e2} vs {e1}")
        h1, h2 = single["history"]["relative_error"], dist["history"]["relative_error"]
        check(len(h1) == len(h2) == 8 and all(abs(a - b) <= 1e-9 * a for a, b in zip(h1, h2)),
              "nmf dense: histories differ")
    # Sparse: checkpoint at iteration 4 on 2 ranks; restart on 3 ranks and on one process.
    common = ["nmf", "--input", "sparse.mtx", "--rank", "4", "--algorithm", "hals", "--seed", "5"]
    run(common + ["--iters", "8", "--output", "sparse_1", "--quiet"])
    run(common + ["--iters", "4", "--distributed", "--checkpoint", "ck.h5", "--checkpoint-every", "2", "--quiet"],
        np=2)
    r3 = report(run(common + ["--iters", "8", "--distributed", "--restart", "ck.h5", "--output", "sparse_r3",
                              "--json"], np=3))
    check(r3.get("info", {}).get("restart") == "ck.h5" and len(r3.get("history", {}).get("iteration", [])) == 8,
          "nmf: the restarted report lacks the restart or the first 4 iterations")
    run(common + ["--iters", "8", "--restart", "ck.h5", "--output", "sparse_r1", "--quiet"])
    for tag in ("r3", "r1"):
        for fac in ("W", "H"):
            _, _, a = read_mm_array(os.path.join(WORK, f"sparse_{tag}_{fac}.mtx"))
            _, _, b = read_mm_array(os.path.join(WORK, f"sparse_1_{fac}.mtx"))
            check(rel(a, b) <= 1e-9, f"nmf sparse: restart {tag} {fac} differs by {rel(a, b)}")
    # --grid: a 1x2 grid on 2 ranks equals one rank and says so; a grid of other than P ranks, a malformed grid
    # and --grid without --distributed are usage errors (exit 2).
    common = ["nmf", "--input", "dense.mtx", "--rank", "4", "--algorithm", "hals", "--json", "--seed", "5",
              "--iters", "6"]
    single = report(run(common + ["--output", "dense_g1"]))
    grid = report(run(common + ["--output", "dense_g2", "--distributed", "--grid", "1x2"], np=2))
    check(grid.get("info", {}).get("grid") == "1x2", "nmf: the report lacks grid 1x2")
    for fac in ("W", "H"):
        _, _, a = read_mm_array(os.path.join(WORK, f"dense_g2_{fac}.mtx"))
        _, _, b = read_mm_array(os.path.join(WORK, f"dense_g1_{fac}.mtx"))
        check(rel(a, b) <= 1e-9, f"nmf dense: grid 1x2 {fac} differs from single-rank by {rel(a, b)}")
    auto = report(run(common + ["--distributed"], np=2))
    check(auto.get("info", {}).get("grid") in ("1d", "2x1", "1x2"), "nmf: --grid auto reports no layout of 2 ranks")
    run(common + ["--distributed", "--grid", "2x2"], np=2, expect=2)
    run(common + ["--distributed", "--grid", "2by1"], np=2, expect=2)
    run(common + ["--grid", "1x1"], expect=2)

    # A checkpoint of another rank K is refused on every rank (exit 3), agreed:
    # rank 0 reports it once.
    p = run(["nmf", "--input", "sparse.mtx", "--rank", "3", "--algorithm", "hals", "--seed", "5", "--iters", "8",
             "--distributed", "--restart", "ck.h5"], np=2, expect=3)
    check(p.stderr.count("kfactor: error: rank 0: ") == 1 and p.stderr.count("kfactor: error") == 1,
          "nmf: the refusal is not reported once, naming rank 0")


def same_factor(a, b):
    return factor_lines(a) == factor_lines(b)


def read_factor(path):
    """The values of a factor CSV (`id,f0,...` lines after a header), flattened."""
    return [float(x) for line in factor_lines(path)[1:] if line for x in line.decode().strip().split(",")[1:]]


def als_checks():
    als = ["als", "--input", "ratings.txt", "--format", "ratings", "--rank", "5", "--lambda", "0.05", "--xb", "2",
           "--yb", "16", "--precision", "double", "--json"]
    single = report(run(als + ["--iters", "6", "--output", "als_1"]))
    dist = report(run(als + ["--iters", "6", "--output", "als_3", "--distributed"], np=3))
    for fac in ("X", "Y"):
        check(same_factor(f"als_3_{fac}.csv", f"als_1_{fac}.csv"), f"als: distributed {fac} not byte-identical")
    if single and dist:
        names = [k for k in single["history"] if k != "iteration"]
        check("train_rmse" in names and "test_rmse" in names, "als: metrics missing")
        for k in names:
            a, b = dist.get(k, float("nan")), single[k]
            check(abs(a - b) <= 1e-12 * max(1.0, abs(b)), f"als metric {k}: {a} vs {b}")
    run(als + ["--iters", "3", "--distributed", "--checkpoint", "als_ck.h5"], np=2)
    run(als + ["--iters", "6", "--distributed", "--restart", "als_ck.h5", "--output", "als_r3"], np=3)
    for fac in ("X", "Y"):
        check(same_factor(f"als_r3_{fac}.csv", f"als_1_{fac}.csv"), f"als: restarted {fac} not byte-identical")

    # Blocked factors (no rank holds a whole factor): within reduction-order
    # rounding of one rank; its checkpoint restarts replicated on 3 ranks.
    blk = report(run(als + ["--iters", "6", "--output", "als_b3", "--distributed", "--factor-layout", "blocked"],
                     np=3))
    check(blk.get("info", {}).get("factor_layout") == "blocked", "als: --factor-layout blocked not reported")
    for fac in ("X", "Y"):
        check(rel(read_factor(f"als_b3_{fac}.csv"), read_factor(f"als_1_{fac}.csv")) <= 1e-9,
              f"als: blocked {fac} differs from one rank")
    small = report(run(als + ["--iters", "1", "--distributed", "--factor-memory-budget", "0.001"], np=2))
    check(small.get("info", {}).get("factor_layout") == "blocked", "als: auto did not pick blocked under the budget")
    run(als + ["--iters", "3", "--distributed", "--factor-layout", "blocked", "--checkpoint", "als_bck.h5"], np=2)
    run(als + ["--iters", "6", "--distributed", "--factor-layout", "replicated", "--restart", "als_bck.h5",
               "--output", "als_br3"], np=3)
    for fac in ("X", "Y"):
        check(rel(read_factor(f"als_br3_{fac}.csv"), read_factor(f"als_1_{fac}.csv")) <= 1e-9,
              f"als: blocked checkpoint restarted replicated: {fac} differs")
    run(als + ["--iters", "1", "--distributed", "--factor-layout", "2d"], np=2, expect=2)

    # Input errors are agreed: every rank fails with the input-error code and
    # the agreed message is printed once (by rank 0), naming the file.
    p = run(["als", "--input", "missing.txt", "--distributed"], np=2, expect=3)
    check(p.stderr.count("missing.txt") == 1, "the missing file is not named exactly once")


if WHAT == "nmf":
    nmf_checks()
else:
    als_checks()

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all distributed CLI checks passed")
