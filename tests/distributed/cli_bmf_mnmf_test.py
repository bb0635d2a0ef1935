#!/usr/bin/env python3
"""`kfactor bmf|mnmf --distributed` under mpiexec, against the single-process CLI.

usage: cli_bmf_mnmf_test.py KFACTOR MPIEXEC WORKDIR bmf|mnmf

bmf:
- a Matrix Market pattern and a ratings file (original ids), greedy and
  Metropolis: the factor files of a 2-rank run have the single-process
  lines (after the output-set stamp line, when there is one), and so does a
  3-rank run; stdout under --json is one JSON object (rank 0 alone prints)
  with the single-process history;
- a checkpoint written by 2 ranks restarts without --distributed and on 3
  ranks, both ending with the uninterrupted run's factor files, greedy and
  Metropolis (whose checkpoint holds the best factors beside the current);
- a checkpoint of another --rank is refused on every rank (exit 3, reported
  once), and so is a checkpoint over the input, before the run (exit 2, the
  input kept).
mnmf:
- euclid and kl on a ratings file with kNN graphs: the factor files of a
  2-rank run have the single-process lines, the metrics agree within 1e-12;
- a 2-rank checkpoint restarts without --distributed and on 3 ranks to the
  same factor files;
- --lambda-grid with --distributed is a usage error (exit 2), a missing input
  an input error on every rank (exit 3), named once, and so is a saved graph
  over the input (exit 2, the input kept).
"""
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cli_harness  # noqa: E402
from cli_harness import check, factor_lines, failures, report, run

KF, MPIEXEC, WORK, WHAT = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cli_harness.start(KF, MPIEXEC, WORK, timeout=120)


def same_files(a, b, names):
    for n in names:
        fa, fb = f"{a}{n}", f"{b}{n}"
        if not os.path.exists(os.path.join(WORK, fa)):
            check(False, f"{fa} was not written")
            continue
        check(factor_lines(fa) == factor_lines(fb), f"{fa} differs from {fb}")


rng = random.Random(11)
# A 70 x 55 Boolean matrix: 4 planted blocks plus noise; and the same ones as
# a ratings file with non-contiguous ids.
ones = set()
for _ in range(4):
    rows = rng.sample(range(70), 18)
    cols = rng.sample(range(55), 14)
    ones.update((i, j) for i in rows for j in cols)
for _ in range(120):
    ones.symmetric_difference_update({(rng.randrange(70), rng.randrange(55))})
ones = sorted(ones)
with open(os.path.join(WORK, "bool.mtx"), "w") as f:
    f.write("%%MatrixMarket matrix coordinate pattern general\n")
    f.write(f"70 55 {len(ones)}\n")
    for i, j in ones:
        f.write(f"{i + 1} {j + 1}\n")
with open(os.path.join(WORK, "bool.csv"), "w") as f:
    f.write("user,item,rating\n")
    for i, j in ones:
        f.write(f"{500 + 7 * i},{3 * j + 1},1\n")
# Ratings for mnmf: 80 users x 50 items, skewed activity.
with open(os.path.join(WORK, "ratings.txt"), "w") as f:
    for u in range(80):
        for i in range(50):
            if rng.random() < (0.5 if u < 10 else 0.15):
                f.write(f"{1000 + 3 * u} {7 * i} {rng.randint(1, 5)}\n")


def bmf_checks():
    common = ["bmf", "--rank", "6", "--iters", "30", "--batch", "40", "--seed", "3", "--json"]
    for tag, extra in (("greedy", []), ("metropolis", ["--temperature", "2", "--temp-step", "5"])):
        for inp, names in (("bool.mtx", ("_A.mtx", "_B.mtx")), ("bool.csv", ("_A.csv", "_B.csv"))):
            args = common + extra + ["--input", inp]
            stem = f"{tag}_{inp.split('.')[1]}"
            single = report(run(args + ["--output", f"{stem}_1"]))
            dist = report(run(args + ["--output", f"{stem}_2", "--distributed"], np=2))
            same_files(f"{stem}_2", f"{stem}_1", names)
            if single and dist:
                check(dist.get("info", {}).get("mpi_ranks") == "2", f"bmf {stem}: report lacks mpi_ranks 2")
                check(dist["history"] == single["history"], f"bmf {stem}: histories differ")
                check(dist["errors"] == single["errors"], f"bmf {stem}: errors differ")
    run(common + ["--input", "bool.mtx", "--output", "greedy_mtx_3", "--distributed"], np=3)
    same_files("greedy_mtx_3", "greedy_mtx_1", ("_A.mtx", "_B.mtx"))

    # A checkpoint written by 2 ranks at iteration 12 (of 30), restarted on one process and on 3 ranks.
    for tag, extra in (("greedy", []), ("metropolis", ["--temperature", "2", "--temp-step", "5"])):
        base = ["bmf", "--rank", "6", "--batch", "40", "--seed", "3", "--input", "bool.mtx", "--quiet"] + extra
        ck = f"b_{tag}_ck.h5"
        run(base + ["--iters", "12", "--distributed", "--checkpoint", ck, "--checkpoint-every", "6"], np=2)
        run(base + ["--iters", "30", "--restart", ck, "--output", f"b_{tag}_r1"])
        run(base + ["--iters", "30", "--restart", ck, "--output", f"b_{tag}_r3", "--distributed"], np=3)
        for out in (f"b_{tag}_r1", f"b_{tag}_r3"):
            same_files(out, f"{tag}_mtx_1", ("_A.mtx", "_B.mtx"))
    with open(os.path.join(WORK, "bool.mtx"), "rb") as f:
        before = f.read()
    p = run(["bmf", "--rank", "6", "--input", "bool.mtx", "--iters", "2", "--distributed", "--checkpoint",
             "bool.mtx"], np=2, expect=2)
    check(p.stderr.count("kfactor: error") == 1, "bmf: the checkpoint over the input is not refused once")
    with open(os.path.join(WORK, "bool.mtx"), "rb") as f:
        check(f.read() == before, "bmf: the input was changed")
    p = run(["bmf", "--rank", "5", "--batch", "40", "--seed", "3", "--input", "bool.mtx", "--iters", "30",
             "--distributed", "--restart", "b_ck.h5"], np=2, expect=3)
    check(p.stderr.count("kfactor: error") == 1, "bmf: the refusal is not reported once")


def mnmf_checks():
    common = ["mnmf", "--input", "ratings.txt", "--format", "ratings", "--rank", "4", "--iters", "8", "--neighbors",
              "5", "--seed", "2", "--json"]
    for obj in ("euclid", "kl"):
        args = common + ["--objective", obj]
        single = report(run(args + ["--output", f"m_{obj}_1"]))
        dist = report(run(args + ["--output", f"m_{obj}_2", "--distributed"], np=2))
        same_files(f"m_{obj}_2", f"m_{obj}_1", ("_W.mtx", "_H.mtx"))
        if single and dist:
            check(dist.get("info", {}).get("mpi_ranks") == "2", f"mnmf {obj}: report lacks mpi_ranks 2")
            names = [k for k in single["history"] if k != "iteration"]
            check("test_rmse" in names and "objective" in names, f"mnmf {obj}: metrics missing")
            for k in names:
                a, b = dist.get(k, float("nan")), single[k]
                check(abs(a - b) <= 1e-12 * max(1.0, abs(b)), f"mnmf {obj} metric {k}: {a} vs {b}")
    base = ["mnmf", "--input", "ratings.txt", "--format", "ratings", "--rank", "4", "--neighbors", "5", "--seed", "2",
            "--quiet", "--objective", "kl"]
    run(base + ["--iters", "3", "--distributed", "--checkpoint", "m_ck.h5"], np=2)
    run(base + ["--iters", "8", "--restart", "m_ck.h5", "--output", "m_r1"])
    run(base + ["--iters", "8", "--restart", "m_ck.h5", "--output", "m_r3", "--distributed"], np=3)
    for tag in ("m_r1", "m_r3"):
        same_files(tag, "m_kl_1", ("_W.mtx", "_H.mtx"))
    run(base + ["--iters", "2", "--distributed", "--lambda-grid", "0.1,1", "--validation-fraction", "0.1"], np=2,
        expect=2)
    p = run(["mnmf", "--input", "missing.txt", "--distributed"], np=2, expect=3)
    check(p.stderr.count("missing.txt") == 1, "mnmf: the missing file is not named exactly once")
    with open(os.path.join(WORK, "ratings.txt"), "rb") as f:
        before = f.read()
    p = run(["mnmf", "--input", "ratings.txt", "--rank", "4", "--iters", "2", "--neighbors", "5", "--distributed",
             "--save-graph-w", "ratings.txt"], np=2, expect=2)
    check(p.stderr.count("kfactor: error") == 1, "mnmf: the graph over the input is not refused once")
    with open(os.path.join(WORK, "ratings.txt"), "rb") as f:
        check(f.read() == before, "mnmf: the input was changed")


if WHAT == "bmf":
    bmf_checks()
else:
    mnmf_checks()

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all distributed CLI checks passed")
