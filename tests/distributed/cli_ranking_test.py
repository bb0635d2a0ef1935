#!/usr/bin/env python3
"""`kfactor als --implicit --distributed` with a held-out set under mpiexec -n 2,
against the single-rank CLI.

usage: cli_ranking_test.py KFACTOR MPIEXEC WORKDIR

- held out by --split leave-last-k-out:2 (the file's timestamp column; with
  replicated and blocked factors), --split leave-k-out:1 (replicated) and
  --test-input (blocked): the report holds the loss and the five ranking
  metrics at every iteration, each within 1e-9 (relative) of the
  single-rank run's, and the same info eval_k and split (a fraction split
  is tests/als/test_als_implicit_mpi.cpp's);
- bad input is an agreed error, printed once: the time split on a file
  without timestamps (exit 3, naming the file) and a negative count
  (exit 3).
"""
import os
import random
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cli_harness  # noqa: E402
from cli_harness import check, failures, report, run  # noqa: E402

KF, MPIEXEC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
cli_harness.start(KF, MPIEXEC, WORK, timeout=120)

RANKING = ["loss", "precision_at_k", "recall_at_k", "map_at_k", "ndcg_at_k", "auc"]

# 70 users in 5 taste groups over 40 items (a user mostly picks items of its
# group, so the rankings have hits to count); ids not contiguous; every line
# with a distinct timestamp; lines in random order. A disjoint test file
# holds further items of the users' groups.
rng = random.Random(11)
train, test = [], []
for u in range(70):
    for i in range(40):
        p = 0.35 if u % 5 == i % 5 else 0.04
        r = rng.random()
        if r < p:
            train.append((1000 + 7 * u, 3 * i + 1, rng.randint(1, 4), rng.randrange(10**9)))
        elif r < p + 0.05 and u % 5 == i % 5:
            test.append((1000 + 7 * u, 3 * i + 1, 1))
rng.shuffle(train)
known_items = {t[1] for t in train}
known_users = {t[0] for t in train}
with open(os.path.join(WORK, "timed.csv"), "w") as f:
    f.write("userId,movieId,rating,timestamp\n")
    f.writelines(f"{u},{i},{c},{t}\n" for u, i, c, t in train)
with open(os.path.join(WORK, "untimed.csv"), "w") as f:
    f.write("userId,movieId,rating\n")
    f.writelines(f"{u},{i},{c}\n" for u, i, c, _ in train)
with open(os.path.join(WORK, "heldout.csv"), "w") as f:
    f.write("userId,movieId,rating\n")
    f.writelines(f"{u},{i},{c}\n" for u, i, c in test if u in known_users and i in known_items)
with open(os.path.join(WORK, "negative.csv"), "w") as f:
    f.write("userId,movieId,rating,timestamp\n")
    f.writelines(f"{u},{i},{-c if k == len(train) - 1 else c},{t}\n" for k, (u, i, c, t) in enumerate(train))

ALS = ["als", "--implicit", "--input", "timed.csv", "--rank", "4", "--iters", "3", "--alpha", "10", "--eval-k", "7",
       "--layout", "csr", "--precision", "double", "--json"]


def compare(held, layouts):
    single = report(run(ALS + held))
    if not single:
        return
    hist = single.get("history", {})
    check(all(len(hist.get(k, [])) == 3 for k in RANKING), f"{held}: single rank lacks the ranking history")
    check(0 < single.get("recall_at_k", 0) < 1, f"{held}: vacuous recall {single.get('recall_at_k')}")
    for layout in layouts:
        what = f"{' '.join(held)} {layout}"
        dist = report(run(ALS + held + ["--distributed", "--factor-layout", layout], np=2))
        if not dist:
            continue
        check(dist.get("info", {}).get("factor_layout") == layout, f"{what}: layout not reported")
        for key in ("eval_k", "split"):
            check(dist["info"].get(key) == single["info"].get(key),
                  f"{what}: info {key} {dist['info'].get(key)} vs {single['info'].get(key)}")
        for k in RANKING:
            a, b = dist.get("history", {}).get(k, []), hist.get(k, [])
            check(len(a) == len(b) == 3, f"{what}: {k} history has {len(a)} entries, not {len(b)}")
            for x, y in zip(a, b):
                check(abs(x - y) <= 1e-9 * max(1.0, abs(y)), f"{what}: {k} {x} vs single rank {y}")


compare(["--split", "leave-last-k-out:2"], ["replicated", "blocked"])
compare(["--split", "leave-k-out:1", "--split-seed", "3"], ["replicated"])
compare(["--test-input", "heldout.csv"], ["blocked"])

# Agreed errors, printed once by rank 0.
p = run(["als", "--implicit", "--input", "untimed.csv", "--split", "leave-last-k-out:2", "--distributed"], np=2,
        expect=3)
check(p.stderr.count("untimed.csv") == 1 and "timestamp" in p.stderr,
      "time split without timestamps: not one message naming the file:\n" + p.stderr[-500:])
p = run(["als", "--implicit", "--input", "negative.csv", "--distributed"], np=2, expect=3)
check(p.stderr.count("error:") == 1 and "negative.csv:" in p.stderr and "negative value" in p.stderr,
      "negative count: not one message naming the file's line:\n" + p.stderr[-500:])

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("all distributed ranking checks passed")
