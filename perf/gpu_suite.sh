#!/usr/bin/env bash
# One call on a GPU machine: build kfactor against a CUDA-enabled Kokkos
# (and, optionally, Kokkos Kernels) install, run the whole test suite on the
# GPU, then the benchmark suite, and print a short summary table last.
#
#   perf/gpu_suite.sh KOKKOS_PREFIX [DEPS_PREFIX] [-- run_suite.py options]
#
# KOKKOS_PREFIX: install prefix of Kokkos (+ Kokkos Kernels) built with CUDA.
# DEPS_PREFIX:   optional prefix with header-only dependencies the machine
#                lacks (nlohmann_json, CLI11 CMake packages under share/cmake,
#                headers under include) and GoogleTest sources under
#                src/googletest.
# Environment: BUILD_DIR (default build-cuda), JOBS, CTEST_ARGS (e.g. "-E slow"),
#              OUT (a folder for logs and results; default BUILD_DIR),
#              TEST_JOBS (tests at once, default 6), TEST_OMP_THREADS (host
#              threads per test program, default 2),
#              TESTS=0 to skip the test suite (benchmarks only, e.g. on a
#              machine that already passed it with this build).
set -uo pipefail
cd "$(dirname "$0")/.."
kokkos=${1:?usage: perf/gpu_suite.sh KOKKOS_PREFIX [DEPS_PREFIX] [-- suite options]}
shift
deps=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then deps=$1; shift; fi
[ "${1:-}" = "--" ] && shift
build=${BUILD_DIR:-build-cuda}
out=${OUT:-$build}
mkdir -p "$out"
jobs=${JOBS:-$(nproc)}
gtest=()
[ -n "$deps" ] && [ -d "$deps/src/googletest" ] && gtest=(-DKFACTOR_GTEST_SOURCE_DIR="$deps/src/googletest")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_PROC_BIND=false

t0=$(date +%s)
generator=()
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && generator=(-G Ninja)  # compiles dependents early
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$kokkos;$deps" \
  -DCMAKE_CUDA_ARCHITECTURES=90 "${gtest[@]}" >"$out/configure.log" 2>&1 \
  || { tail -40 "$out/configure.log"; echo "CONFIGURE FAILED"; exit 1; }
grep "kfactor:" "$out/configure.log"
keep_going=(-- -k 0)  # report every compile error in one call
[ -f "$build/Makefile" ] && keep_going=(-- -k)
cmake --build "$build" -j "$jobs" "${keep_going[@]}" >"$out/build.log" 2>&1 \
  || { grep -E "error|Error" "$out/build.log" | head -40; echo "BUILD FAILED"; exit 1; }
t1=$(date +%s)
test_rc=0
if [ "${TESTS:-1}" != 0 ]; then
  # Several test programs run at once; give each a few host threads so their
  # OpenMP teams do not oversubscribe the cores (spinning teams crawl).
  (cd "$build" && OMP_NUM_THREADS=${TEST_OMP_THREADS:-2} ctest --output-on-failure -j "${TEST_JOBS:-6}" --timeout 300 \
    ${CTEST_ARGS:-}) >"$out/ctest.log" 2>&1
  test_rc=$?
fi
t2=$(date +%s)
grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" | head -30
python3 perf/run_suite.py --build "$build" --profile gpu --out "$out/perf-gpu.json" "$@" >"$out/suite.log" 2>&1
suite_rc=$?
t3=$(date +%s)
python3 perf/plot.py "$out/perf-gpu.json" "$out" >/dev/null 2>&1 || true
echo "== build $((t1 - t0)) s, tests $((t2 - t1)) s (rc $test_rc), benchmarks $((t3 - t2)) s (rc $suite_rc)"
sed -n '/^wrote /,$p' "$out/suite.log"
exit $((test_rc || suite_rc))
