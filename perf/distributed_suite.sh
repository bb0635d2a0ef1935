#!/usr/bin/env bash
# The scaling benchmarks of docs/distributed.md in one call on a machine with
# NP GPUs (one rank each) or NP host ranks: each case runs 1 rank and NP
# ranks, strong and weak, in one mpiexec; the records go to OUT/CASE.json,
# the tables to OUT/CASE.txt, and perf/scaling_summary.py prints the
# speed-ups and weak efficiencies last.
#
#   perf/distributed_suite.sh BUILD_DIR OUT [CASE ...]
#
# Cases (default: all but implicit): small (NMF 100000 x 50000, 10M nnz,
# K = 64, with MNMF on Netflix-like ratings), big (NMF 1000000 x 500000, 200M
# nnz, K = 128), dense (NMF dense 100000 x 50000, K = 256), als (Netflix-like,
# f = 100), bmf (planted Netflix-shaped C, 101M ones, sparse storage), sddmm
# (M1 at K = 128). Environment: NP (default 2), ITERS (default 3),
# OMP_NUM_THREADS per rank (default: the cores over NP).
set -uo pipefail
build=${1:?usage: perf/distributed_suite.sh BUILD_DIR OUT [CASE ...]}
out=${2:?usage: perf/distributed_suite.sh BUILD_DIR OUT [CASE ...]}
shift 2
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(small big dense als bmf sddmm)
np=${NP:-2}
mkdir -p "$out"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(($(nproc) / np))} OMP_PROC_BIND=false
# Multicast over NVLink stays off (it can take a shared host's GPUs down).
export NCCL_NVLS_ENABLE=0
mpi=(mpiexec --bind-to none -n "$np")
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
common=(--iters "${ITERS:-3}" --precision float --split 0 --weak 1 --kokkos-map-device-id-by=mpi_rank)
bench=$build/perf/bench_distributed
for c in "${cases[@]}"; do
  case $c in
  small) args=("$bench" --nmf 100000x50000x10000000 --k 64 --algs hals,alo,mu --als none --bmf none "${common[@]}") ;;
  big) args=("$bench" --nmf 1000000x500000x200000000 --k 128 --algs hals,alo,mu --als none --bmf none --mnmf none
    "${common[@]}") ;;
  dense) args=("$bench" --nmf 100000x50000x0 --dense 1 --k 256 --algs hals,alo,mu --als none --bmf none --mnmf none
    "${common[@]}") ;;
  als) args=("$bench" --nmf none --als 480189x17770x100000000 --f 100 --bmf none --mnmf none "${common[@]}") ;;
  bmf) args=("$bench" --nmf none --als none --mnmf none --bmf 480189x17770x1.2e-2 --bmf-dense off "${common[@]}") ;;
  sddmm) args=("$build/perf/bench_sddmm_mpi" --matrix m1 --k 128 --orders generated --splits balanced --reps 20
    --weak 1 --kokkos-map-device-id-by=mpi_rank) ;;
  *) echo "unknown case $c (small big dense als bmf sddmm)" >&2; exit 2 ;;
  esac
  t0=$(date +%s)
  "${mpi[@]}" "${args[@]}" >"$out/$c.json" 2>"$out/$c.txt"
  echo "$c: rc $? in $(($(date +%s) - t0)) s"
done
files=()
for c in "${cases[@]}"; do files+=("$out/$c.json"); done
python3 "$(dirname "$0")/scaling_summary.py" "${files[@]}"
