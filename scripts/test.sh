#!/usr/bin/env bash
# The whole test suite on a build folder (default: build): unit and end-to-end tests through
# ctest, with TensorBoard's own Python reader for the event-file test, then a benchmark smoke run
# (proves the benchmarks still run; real numbers come from `make bench`). Needs no network: the
# TensorBoard venv comes from scripts/install-deps.sh, which `make test` runs first.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# TensorBoard's reader: $NNPERF_PYTHON if set, else the venv that scripts/install-deps.sh made.
TB_PY=${NNPERF_PYTHON:-$ROOT/.venv-tb/bin/python}
if [ -x "$TB_PY" ] && "$TB_PY" -c "import tensorboard" >/dev/null 2>&1; then
  export NNPERF_PYTHON="$TB_PY"
elif [ "${CI:-}" = "true" ]; then
  echo "test.sh: $TB_PY cannot import tensorboard; run scripts/install-deps.sh first (make test does), which installs it into $ROOT/.venv-tb" >&2
  exit 1
else
  unset NNPERF_PYTHON
  echo "test.sh: warning: $TB_PY cannot import tensorboard (run scripts/install-deps.sh); the event-file read-back test will be skipped" >&2
fi

ctest --test-dir "$BUILD" --output-on-failure -j "$(nproc)"

# Benchmark smoke pass: every benchmark binary runs briefly on a small filter.
for b in "$BUILD"/bench/*_bench; do
  [ -x "$b" ] || continue
  # The first two benchmarks of each binary, briefly (regex characters in names escaped).
  # (sed reads the whole list: `head` would close the pipe early and, under pipefail, the
  # benchmark's SIGPIPE would fail the script.)
  filter=$("$b" --benchmark_list_tests | sed -n '1,2p' | sed 's/[][\\.^$*+?(){}|]/\\&/g' | paste -sd'|')
  "$b" --benchmark_min_time=0.01 --benchmark_filter="^($filter)\$" >/dev/null
  echo "bench smoke: $(basename "$b") ok ($(echo "$filter" | tr '|' ' '))"
done
