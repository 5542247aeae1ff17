#!/usr/bin/env bash
# ThreadSanitizer over nnperf's multi-threaded code (`make tsan`): a clang build with
# -fsanitize=thread (NNPERF_TSAN, CUDA off) in $BUILD (default build-tsan), then the unit suites
# whose kernels and layers split work between OpenMP threads (test_kernels, test_nn, test_train;
# their thread tests run 1, 2 and 3 threads) and a two-thread ResNet-18 training run, each under
# ThreadSanitizer with LLVM's Archer tool, which tells it OpenMP's barriers and task
# synchronisation (libomp's own runtime is not instrumented: tests/sanitizers/tsan.supp). OpenBLAS
# runs on one thread (its pool is not instrumented either). Fails on the first suite or run with a
# report, naming its log under $OUT (default $BUILD/tsan-logs).
#   scripts/tsan.sh [GTEST_FILTER]   (default: every test)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build-tsan}
OUT=${OUT:-$BUILD/tsan-logs}
FILTER=${1:-*}
archer=$(ls /usr/lib/llvm-*/lib/libarcher.so 2> /dev/null | sort -V | tail -1 || true)
command -v clang++ > /dev/null || { echo "tsan.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 2; }
[ -n "$archer" ] || { echo "tsan.sh: no libarcher.so under /usr/lib/llvm-*/lib (Debian's libomp-dev has it)" >&2; exit 2; }
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNNPERF_CUDA=OFF -DNNPERF_TSAN=ON -DNNPERF_WERROR=ON "${launcher[@]}" > /dev/null
cmake --build "$BUILD" -j"$(nproc)" --target test_kernels test_nn test_train nnperf
mkdir -p "$OUT"
export OMP_TOOL_LIBRARIES=$archer OPENBLAS_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0 suppressions=$ROOT/tests/sanitizers/tsan.supp"
failed=0
# check NAME CMD...: runs CMD with its output in $OUT/NAME.log; a ThreadSanitizer report or a
# non-zero exit fails the script (after the other runs).
check() {
  local name=$1 log="$OUT/$1.log" rc=0
  shift
  "$@" > "$log" 2>&1 || rc=$?
  local reports
  reports=$(grep -ac "WARNING: ThreadSanitizer" "$log" || true)
  if [ "$rc" -ne 0 ] || [ "$reports" -ne 0 ]; then
    echo "tsan: $name: exit $rc, $reports ThreadSanitizer report(s): $log"
    failed=1
  else
    echo "tsan: $name: no report"
  fi
}
# The detector itself first: a race seeded on purpose must be reported under the same settings.
clang++ -fsanitize=thread -fopenmp=libomp -g -O1 tests/sanitizers/tsan_canary.cc -o "$BUILD/tsan_canary"
canary=$("$BUILD/tsan_canary" 2>&1 | grep -ac "WARNING: ThreadSanitizer: data race" || true)
if [ "$canary" -eq 0 ]; then
  echo "tsan: the seeded race of tests/sanitizers/tsan_canary.cc went unreported: the runs below would prove nothing" >&2
  exit 1
fi
echo "tsan: canary: the seeded race is reported"
for t in test_nn test_train test_kernels; do
  check "$t" "$BUILD/tests/$t" --gtest_filter="$FILTER"
done
check train_resnet18_2threads "$BUILD/nnperf" train --model resnet18 --synthetic --iters 2 \
  --warmup-iters 1 --batch-size 8 --input-size 32 --threads 2 --log-dir "$OUT/train"
exit "$failed"
