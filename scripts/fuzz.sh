#!/usr/bin/env bash
# Fuzzing: libFuzzer + AddressSanitizer + UndefinedBehaviorSanitizer on the parsers of untrusted
# input (IDX raw/gzip, convolution descriptors, and every other tests/fuzz/<name>_fuzz.cc).
#   scripts/fuzz.sh [SECONDS]        # or: make fuzz FUZZ_SECONDS=300   (default 60 s per target)
# Needs clang and libFuzzer (Debian: clang libclang-rt-dev, both in scripts/install-deps.sh).
# Configures build-fuzz/ (-DNNPERF_FUZZ=ON: only a small parser library and the targets, ~1 min),
# then runs each target for SECONDS (FUZZ_JOBS at a time, default one per CPU) on a temporary COPY of tests/fuzz/corpus/<name>/ (the
# repository's seeds are never modified) with -timeout=10 -rss_limit_mb=2048 -detect_leaks=1.
# Prints one line per target (runs, coverage, result); exits 1 on any crash, timeout, leak or OOM.
# A failing input is kept in build-fuzz/findings/<name>/; reproduce it with
#   build-fuzz/fuzz/<name>_fuzz build-fuzz/findings/<name>/crash-...   (add it to the corpus once fixed)
set -euo pipefail

SECS="${1:-60}"
if ! [[ "$SECS" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS must be a positive whole number of seconds, got '$SECS'" >&2
  exit 2
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
CXX_BIN="${FUZZ_CXX:-clang++}"
if ! command -v "$CXX_BIN" > /dev/null; then
  echo "fuzz.sh: $CXX_BIN not found; install the Debian packages clang and libclang-rt-dev" \
       "(bash scripts/install-deps.sh)" >&2
  exit 2
fi

launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$CXX_BIN" -DNNPERF_FUZZ=ON -DNNPERF_WERROR=ON "${launcher[@]}" > /dev/null
cmake --build "$BUILD" --target fuzz_targets -j "${JOBS:-$(nproc)}"

work="$(mktemp -d "${TMPDIR:-/tmp}/nnperf-fuzz.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# One target: its result line goes to $work/<name>.result, its exit code to $work/<name>.rc.
run_target() {
  local src="$1" target name bin corpus artifacts log rc runs cov ft kept result kind
  target="$(basename "$src" .cc)"
  name="${target%_fuzz}"
  bin="$BUILD/fuzz/$target"
  corpus="$work/corpus/$name"
  artifacts="$work/artifacts/$name"
  mkdir -p "$corpus" "$artifacts"
  if [ -d "$ROOT/tests/fuzz/corpus/$name" ]; then cp -R "$ROOT/tests/fuzz/corpus/$name/." "$corpus/"; fi
  local extra=()
  if [ -f "$ROOT/tests/fuzz/$name.dict" ]; then extra+=(-dict="$ROOT/tests/fuzz/$name.dict"); fi
  log="$work/$name.log"
  rc=0
  "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -detect_leaks=1 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "${extra[@]}" "$corpus" > "$log" 2>&1 || rc=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  ft="$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)"
  kept="$(find "$corpus" -type f | wc -l)"
  if [ "$rc" -eq 0 ]; then
    result="ok"
  else
    kind="$(grep -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)[^(]*' "$log" | head -1)"
    if grep -q "runtime error:" "$log"; then kind="${kind:-UndefinedBehaviorSanitizer: runtime error}"; fi
    if grep -q "property failed" "$log"; then kind="$(grep -m1 'property failed' "$log")"; fi
    mkdir -p "$BUILD/findings/$name"
    cp -R "$artifacts/." "$BUILD/findings/$name/" 2> /dev/null || true
    cp "$log" "$BUILD/findings/$name/$name.log"
    result="FAILED (exit $rc: ${kind:-see log}; inputs and log in $BUILD/findings/$name/)"
  fi
  printf 'fuzz %-14s %4ss  runs %-10s cov %-6s ft %-6s corpus %-5s %s\n' \
    "$name" "$SECS" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$kept" "$result" > "$work/$name.result"
  echo "$rc" > "$work/$name.rc"
}

# FUZZ_JOBS targets at a time (default: one per CPU), each on one core; results in name order.
jobs_max="${FUZZ_JOBS:-$(nproc)}"
srcs=("$ROOT"/tests/fuzz/*_fuzz.cc)
for src in "${srcs[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 1; done
  run_target "$src" &
done
wait
status=0
for src in "${srcs[@]}"; do
  name="$(basename "$src" _fuzz.cc)"
  cat "$work/$name.result"
  if [ "$(cat "$work/$name.rc")" -ne 0 ]; then
    status=1
    tail -n 40 "$work/$name.log" | sed "s/^/  $name| /" >&2
  fi
done
exit "$status"
