#!/usr/bin/env python3
"""`kfactor nmf|als --distributed` reading its input partitioned, under mpiexec.

usage: cli_read_test.py KFACTOR MPIEXEC WORKDIR

- `kfactor convert` writes an HDF5 CSR copy of a Matrix Market file and of a
  ratings file (with its ids);
- nmf: 3 ranks reading the text (each its byte range) and 3 ranks reading
  the HDF5 copy (each its rows) write byte-identical factors, in the 1D
  layout and on every processor grid of 1 to 4 ranks (--grid PRxPC, and
  auto); one rank with --distributed equals one process without it, byte
  for byte;
- als: 3 ranks reading the ratings' HDF5 copy write factor CSVs (original
  ids) byte-identical to one process reading the text;
- a malformed text file fails on every rank with exit 3 and the message one
  process prints (FILE:LINE), printed once; a malformed HDF5 file names its
  dataset.
"""
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cli_harness  # noqa: E402
from cli_harness import check, factor_lines, failures, run

KF, MPIEXEC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
cli_harness.start(KF, MPIEXEC, WORK, timeout=240)


rng = random.Random(11)
with open(os.path.join(WORK, "sparse.mtx"), "w") as f:
    ent = [(i, j, rng.random() + 0.1) for i in range(70) for j in range(52)
           if rng.random() < (0.6 if i < 9 else 0.12)]
    f.write("%%MatrixMarket matrix coordinate real general\n% skewed rows\n")
    f.write(f"70 52 {len(ent)}\n")
    rng.shuffle(ent)
    for i, j, v in ent:
        f.write(f"{i + 1} {j + 1} {v:.6f}\n")
with open(os.path.join(WORK, "ratings.csv"), "w") as f:
    f.write("userId,movieId,rating,timestamp\n")
    rows = [(1000 + 3 * u, 7 * i, rng.randint(1, 5)) for u in range(90) for i in range(60)
            if rng.random() < (0.5 if u < 10 else 0.1)]
    rng.shuffle(rows)
    for u, i, r in rows:
        f.write(f"{u},{i},{r},{rng.randint(10 ** 9, 2 * 10 ** 9)}\n")

run(["convert", "sparse.mtx", "sparse.h5", "--quiet"])
run(["convert", "ratings.csv", "ratings.h5", "--quiet"])

nmf = ["nmf", "--rank", "4", "--algorithm", "hals", "--seed", "3", "--iters", "6", "--quiet"]
run(nmf + ["--input", "sparse.mtx", "--distributed", "--output", "text3"], np=3)
run(nmf + ["--input", "sparse.h5", "--distributed", "--output", "h5_3"], np=3)
run(nmf + ["--input", "sparse.h5", "--distributed", "--output", "h5_1"], np=1)
run(nmf + ["--input", "sparse.mtx", "--output", "single"])
run(nmf + ["--input", "sparse.mtx", "--distributed", "--grid", "1x1", "--output", "grid1x1"], np=1)
for fac in ("W", "H"):
    check(factor_lines(f"text3_{fac}.mtx") == factor_lines(f"h5_3_{fac}.mtx"), f"nmf: {fac} from text and from HDF5 differ")
    check(factor_lines(f"h5_1_{fac}.mtx") == factor_lines(f"single_{fac}.mtx"), f"nmf: {fac} of one rank differs from one process")
    check(factor_lines(f"grid1x1_{fac}.mtx") == factor_lines(f"single_{fac}.mtx"), f"nmf: {fac} of a 1x1 grid differs")
# Every grid of 2 to 4 ranks, and the automatic choice: the text read and the
# HDF5 read give the same blocks, so the same factors.
for np_ in (2, 3, 4):
    for grid in [f"{pr}x{np_ // pr}" for pr in range(1, np_ + 1) if np_ % pr == 0] + ["auto"]:
        tag = f"g{np_}_{grid}"
        outs = []
        for src in ("sparse.mtx", "sparse.h5"):
            out = f"{tag}_{src.split('.')[1]}"
            p = run(nmf + ["--json", "--input", src, "--distributed", "--grid", grid, "--output", out], np=np_)
            outs.append(out)
            if grid != "auto":
                check(f'"grid":"{grid}"' in p.stdout.replace(" ", ""), f"nmf: {tag} reports its grid: {p.stdout[-300:]}")
        for fac in ("W", "H"):
            check(factor_lines(f"{outs[0]}_{fac}.mtx") == factor_lines(f"{outs[1]}_{fac}.mtx"),
                  f"nmf: {fac} on grid {grid} of {np_} ranks differs between text and HDF5")

als = ["als", "--rank", "4", "--lambda", "0.05", "--precision", "double", "--iters", "4", "--quiet",
       "--factor-layout", "replicated", "--layout", "csr"]
run(als + ["--input", "ratings.h5", "--distributed", "--output", "als3"], np=3)
run(als + ["--input", "ratings.csv", "--output", "als1"])
for fac in ("X", "Y"):
    check(factor_lines(f"als3_{fac}.csv") == factor_lines(f"als1_{fac}.csv"), f"als: {fac} from HDF5 on 3 ranks differs")

bad = os.path.join(SRC, "tests", "io", "malformed", "mm_err_L5_duplicate_real.mtx")
one = run(["nmf", "--input", bad, "--quiet"], expect=3)
many = run(["nmf", "--input", bad, "--distributed", "--quiet"], np=3, expect=3)
want = one.stderr.strip().splitlines()[-1] if one.stderr.strip() else "?"
check(bad + ":5: " in want, f"one process names the line: {want}")
check(many.stderr.count(want) == 1, f"3 ranks print the one-process message once: {many.stderr[-1000:]}")
bad_h5 = os.path.join(SRC, "tests", "io", "malformed", "h5csr_err_indices_unsorted_in_row.h5")
p = run(["als", "--input", bad_h5, "--distributed", "--quiet"], np=2, expect=3)
check(p.stderr.count(bad_h5 + ": dataset /indices") == 1, f"the HDF5 error names /indices once: {p.stderr[-1000:]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all partitioned-read CLI checks passed")
