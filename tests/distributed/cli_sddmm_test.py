#!/usr/bin/env python3
"""`kfactor sddmm --distributed --gather 1|0` on NP ranks.

usage: cli_sddmm_test.py KFACTOR MPIEXEC WORKDIR NP

- A generated power-law S, and a file S with fewer nonempty columns than
  ranks (so that, for NP > 1, a rank gets no nonzeros): with --gather 0
  --output p.mtx every rank writes p.rankR.mtx, a Matrix Market coordinate
  file of S's shape whose entries all lie in that rank's column block (the
  report's rank_columns) and number that rank's rank_nnz; the parts' entries
  together are exactly the gathered output's (--gather 1, same options):
  the same positions, none twice, and the same value text (shortest
  round-trip form, so bit for bit). The parts carry one output-set stamp
  with members P.rank0 .. P.rank{NP-1}. `{rank}` in the path names the
  parts instead.
- --check in both modes: max_diff_vs_reference is the same number (the
  worst over the ranks' blocks is the worst over S) and small, with a kernel
  that rounds otherwise than the reference; the report's info.gather says
  which mode ran, info.output_parts how many files.
- An output folder that does not exist, for every rank or (with `{rank}`)
  for the last rank only: every rank exits 4, the message (naming the
  path) printed once; no rank publishes its part, the parts of an earlier
  run stay byte for byte, and no temporary is left.
- --gather without --distributed, and --gather 2, are usage errors (exit 2).
"""
import os
import random
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import cli_harness  # noqa: E402
from cli_harness import check, failures, report, run, run_ranks

KF, MPIEXEC, WORK, NP = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
cli_harness.start(KF, MPIEXEC, WORK, timeout=60)


def path(name):
    return os.path.join(WORK, name)


def read_mm(name):
    """(banner, (rows, cols, nnz), [(row, col, value text)]) of a Matrix Market coordinate file."""
    with open(path(name)) as f:
        lines = f.read().split("\n")
    banner = lines[0]
    body = [x for x in lines[1:] if x and not x.startswith("%")]
    shape = tuple(int(x) for x in body[0].split())
    entries = []
    for x in body[1:]:
        i, j, v = x.split()
        entries.append((int(i), int(j), v))
    return banner, shape, entries


def part_name(base, ext, r):
    return f"{base}.rank{r}{ext}"


def stamp(name):
    with open(path(name)) as f:
        for line in f:
            if not line.startswith("%"):
                break
            if line.startswith("% kfactor-set "):
                return line.split()[2:]
    return None


rng = random.Random(2024 + NP)
# 40 x 7 with max(1, NP - 1) nonempty columns, chosen at random.
nonempty = sorted(rng.sample(range(7), max(1, NP - 1)))
entries = sorted({(rng.randrange(40), rng.choice(nonempty)) for _ in range(60)})
with open(path("few.mtx"), "w") as f:
    f.write("%%MatrixMarket matrix coordinate real general\n")
    f.write(f"40 7 {len(entries)}\n")
    for i, j in entries:
        f.write(f"{i + 1} {j + 1} {rng.uniform(-2, 2):.5f}\n")

common = ["sddmm", "--distributed", "--reps", "1", "--check", "--json"]
# nzsplit at K = 40 differs from the reference kernel by rounding, so that
# the two modes' --check have a nonzero worst error to agree on.
cases = [
    ("gen", ["--generate", "powerlaw", "--rows", "300", "--cols", "200", "--nnz", "3000", "-k", "40", "--kernel",
             "nzsplit", "--seed", str(rng.randrange(1000))]),
    ("few", ["--input", "few.mtx", "-k", "12", "--seed", str(rng.randrange(1000))]),
]
for tag, extra in cases:
    args = common + extra
    g = report(run_ranks(args + ["--gather", "1", "--output", f"{tag}_all.mtx"], NP, 0))
    d = report(run_ranks(args + ["--gather", "0", "--output", f"{tag}_part.mtx"], NP, 0))
    if not g or not d:
        continue
    check(g["info"].get("gather") == "1" and d["info"].get("gather") == "0", f"{tag}: info.gather {g['info']} {d['info']}")
    check(d["info"].get("output_parts") == str(NP), f"{tag}: info.output_parts {d['info'].get('output_parts')}")
    check("output_parts" not in g["info"], f"{tag}: a gathered run reports output_parts")
    gd, dd = g["max_diff_vs_reference"], d["max_diff_vs_reference"]
    check(0 <= gd <= 1e-5 and gd == dd, f"{tag}: --check gathered {gd}, distributed {dd}")
    banner, shape, whole = read_mm(f"{tag}_all.mtx")
    check(shape[2] == len(whole) == d["nnz"], f"{tag}: the gathered file holds {len(whole)} of {d['nnz']} entries")
    columns = [int(x) for x in d["info"]["rank_columns"].split(",")]
    counts = [int(x) for x in d["info"]["rank_nnz"].split(",")]
    if tag == "few" and NP > 1:
        check(0 in counts, f"few: no rank without nonzeros: rank_nnz {counts}")
    union, first = [], 0
    set_ids = set()
    for r in range(NP):
        name = part_name(f"{tag}_part", ".mtx", r)
        if not os.path.exists(path(name)):
            check(False, f"{name} was not written")
            continue
        b, s, part = read_mm(name)
        check(b == banner, f"{name}: banner {b}")
        check(s == (shape[0], shape[1], len(part)) and len(part) == counts[r], f"{name}: size line {s}, {counts[r]} nnz")
        check(all(first < j <= first + columns[r] for _, j, _ in part), f"{name}: an entry outside the rank's columns")
        first += columns[r]
        st = stamp(name)
        check(st is not None and st[1] == f"P.rank{r}" and st[2] == ",".join(f"P.rank{p}" for p in range(NP)),
              f"{name}: stamp {st}")
        if st:
            set_ids.add(st[0])
        union += part
    check(len(set_ids) == 1, f"{tag}: the parts carry the set ids {set_ids}")
    check(len(union) == len(set(union)), f"{tag}: an entry in two parts")
    check(sorted(union) == sorted(whole), f"{tag}: the parts' entries differ from the gathered output's")
    check(not os.path.exists(path(f"{tag}_part.mtx")), f"{tag}: the unsplit path was written")

# `{rank}` in the path: one folder per rank (as node-local disks would be).
for r in range(NP):
    os.makedirs(path(f"node{r}"))
args = common + ["--input", "few.mtx", "-k", "12", "--gather", "0"]
run_ranks(args + ["--output", "node{rank}/p.mtx"], NP, 0)
before = {}
for r in range(NP):
    name = f"node{r}/p.mtx"
    check(os.path.exists(path(name)), f"{name} was not written")
    if os.path.exists(path(name)):
        with open(path(name), "rb") as f:
            before[name] = f.read()

# The last rank's folder is gone: every rank fails, none publishes.
shutil.rmtree(path(f"node{NP - 1}"))
p = run_ranks(args + ["--seed", "5", "--output", "node{rank}/p.mtx"], NP, 4)
check(p.stderr.count("kfactor: error:") == 1 and f"node{NP - 1}/p.mtx" in p.stderr,
      f"one message naming the missing part: {p.stderr[-1000:]}")
check(p.stdout == "", "a failed run printed a report")
for name, data in before.items():
    if name.startswith(f"node{NP - 1}/"):
        continue
    with open(path(name), "rb") as f:
        check(f.read() == data, f"{name} changed by a failed run")
for r in range(NP - 1):
    check(sorted(os.listdir(path(f"node{r}"))) == ["p.mtx"], f"node{r}: left {os.listdir(path(f'node{r}'))}")

# No rank's folder exists.
p = run_ranks(args + ["--output", "missing/p.mtx"], NP, 4)
check(p.stderr.count("kfactor: error:") == 1 and "missing/p.rank0.mtx" in p.stderr,
      f"one message naming rank 0's part: {p.stderr[-1000:]}")

# Usage errors.
p = run(["sddmm", "--reps", "1", "-k", "4", "--rows", "30", "--cols", "20", "--nnz", "60", "--gather", "1"], expect=2)
check("--gather needs --distributed" in p.stderr, f"--gather without --distributed: {p.stderr[-500:]}")
p = run(common + ["--input", "few.mtx", "--gather", "2"], np=NP, expect=2)
check("--gather" in p.stderr and "[0, 1]" in p.stderr, f"--gather 2: {p.stderr[-500:]}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print(f"all sddmm --gather checks passed on {NP} ranks")
