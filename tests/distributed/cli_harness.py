"""What the CLI tests under mpiexec share: a fresh work folder, a runner that
starts `kfactor` on one process or under mpiexec and checks its exit code,
the --json report, output files compared but their set stamps, and the list
of failures the script reports at the end."""
import json
import os
import shutil
import subprocess

KF = MPIEXEC = WORK = None
TIMEOUT = 120
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMP_PROC_BIND="false")
failures = []


def start(kf, mpiexec, work, timeout=120):
    """Sets the program, mpiexec, the (emptied) work folder and the per-run time limit."""
    global KF, MPIEXEC, WORK, TIMEOUT
    KF, MPIEXEC, WORK, TIMEOUT = kf, mpiexec, work, timeout
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(args, np=0, expect=0):
    """`kfactor ARGS` in the work folder, under `mpiexec -n NP` when np > 0."""
    cmd = ([MPIEXEC, "-n", str(np), "--oversubscribe", KF] if np else [KF]) + args
    p = subprocess.run(cmd, cwd=WORK, env=ENV, capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != expect:
        print(" ".join(cmd), "->", p.returncode, "\n", p.stdout[-2000:], p.stderr[-3000:], flush=True)
    check(p.returncode == expect, f"exit {p.returncode} (want {expect}): {' '.join(args)} np={np}")
    return p


def run_ranks(args, np, expect):
    """`kfactor ARGS` under `mpiexec -n NP`, each rank's own exit code
    recorded by a shell wrapper: checks that the job and every rank exited
    with `expect` (all NP ranks when 0; Open MPI 4 may end the others once
    one exited nonzero, so then at least one). Returns the process."""
    codes = os.path.join(WORK, "rank_codes")
    if os.path.exists(codes):
        os.remove(codes)
    # $OMPI_COMM_WORLD_RANK is Open MPI's; PMIX_RANK / PMI_RANK cover others.
    wrapper = ('f=$1; shift; r=${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-${PMI_RANK:-0}}}; '
               '"$@"; c=$?; echo "$r $c" >>"$f"; exit $c')
    p = subprocess.run([MPIEXEC, "-n", str(np), "--oversubscribe", "sh", "-c", wrapper, "sh", codes, KF] + args,
                       cwd=WORK, env=ENV, capture_output=True, text=True, timeout=TIMEOUT)
    ranks = {}
    if os.path.exists(codes):
        with open(codes) as f:
            for line in f:
                r, c = line.split()
                ranks[int(r)] = int(c)
    what = f"{' '.join(args)} np={np}"
    if p.returncode != expect or any(c != expect for c in ranks.values()):
        print(" ".join(args), "->", p.returncode, ranks, "\n", p.stdout[-2000:], p.stderr[-3000:], flush=True)
    check(p.returncode == expect, f"exit {p.returncode} (want {expect}): {what}")
    check(len(ranks) == np if expect == 0 else 1 <= len(ranks) <= np, f"ranks that recorded an exit: {ranks}: {what}")
    check(all(c == expect for c in ranks.values()), f"rank exit codes {ranks} (want {expect} on each): {what}")
    return p


def report(p):
    try:
        return json.loads(p.stdout)
    except json.JSONDecodeError:
        check(False, "stdout is not one JSON object:\n" + p.stdout[:500])
        return {}


def factor_lines(path):
    """The lines of an output file but its output-set stamp (`# kfactor-set ...`
    first in a CSV file, `% kfactor-set ...` among a Matrix Market file's
    comments: a fresh set id per run)."""
    with open(os.path.join(WORK, path), "rb") as f:
        lines = f.read().split(b"\n")
    return [x for x in lines if not (x.startswith(b"# kfactor-set ") or x.startswith(b"% kfactor-set "))]
