#!/usr/bin/env bash
# The whole test suite on a build folder (default: build): unit and end-to-end tests through
# ctest, with TensorBoard's own Python reader for the event-file test, then a benchmark smoke run
# (proves the benchmarks still run; real numbers come from `make bench`).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

# TensorBoard from PyPI in a project-local virtual environment (test-only dependency).
if TB_PY=$(bash "$ROOT/scripts/tb-venv.sh" "$ROOT/.venv-tb" | tail -n 1) && [ -x "$TB_PY" ]; then
  export NNPERF_PYTHON="$TB_PY"
else
  if [ "${CI:-}" = "true" ]; then
    echo "test.sh: could not set up the TensorBoard virtualenv (scripts/tb-venv.sh); CI needs it" >&2
    exit 1
  fi
  echo "test.sh: warning: no TensorBoard virtualenv; the event-file read-back test will be skipped" >&2
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
