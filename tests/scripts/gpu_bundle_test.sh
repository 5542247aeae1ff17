#!/usr/bin/env bash
# scripts/gpu_bundle.sh and the run.sh it packs (scripts/gpu_run.sh), on this machine: the bundle
# is made from BUILD, unpacked by run.sh into its own folder, and its `tests` stage runs every
# GPU test suite and the GPU command-line cases from the bundle (skipped without a device, passing
# with one); an unknown stage is refused.
#   tests/scripts/gpu_bundle_test.sh BUILD SOURCE_DIR [sanitized]
# With `sanitized` (a sanitizer build, whose binaries are several times larger and never go to
# the device) the bundle's size is not held to the device tool's limit.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) sanitized=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gpu_bundle_test: $*" >&2; exit 1; }

XZ_OPT=-0 bash "$src/scripts/gpu_bundle.sh" "$build" "$tmp/bundle" > "$tmp/bundle.log" 2>&1 ||
  fail "gpu_bundle.sh failed: $(cat "$tmp/bundle.log")"
for f in run.sh payload.tar.xz gemm_torch_cuda.py conv_layers.txt ncu_profile.sh gpu_conv_table.py train_layers_torch.py train_layers_table.py batchnorm_torch.py batchnorm_table.py step_log_compare.py share/ncu-roofline-metrics.txt; do
  [[ -s $tmp/bundle/$f ]] || fail "the bundle has no $f"
done
size=$(du -sm "$tmp/bundle" | cut -f1)
if [[ $sanitized == sanitized ]]; then
  echo "gpu_bundle_test: a sanitizer build: its ${size} MB bundle is not held to the device tool's 64 MiB"
else
  (( size < 60 )) || fail "the bundle is ${size} MB: the device tool carries 64 MiB with the repository"
fi

run() { OUT="$tmp/out" NNPERF_GPU_WORK="$tmp/work" DEADLINE=300 STEP_TIMEOUT=200 bash "$tmp/bundle/run.sh" "$@"; }
run tests > "$tmp/run.log" 2>&1 || fail "run.sh tests failed: $(tail -5 "$tmp/run.log")"
[[ -x $tmp/work/bin/nnperf && -x $tmp/work/bin/test_gpu && -x $tmp/work/bin/test_apps ]] ||
  fail "run.sh did not unpack the binaries into NNPERF_GPU_WORK"
summary=$tmp/out/summary.txt
grep -q "^test CudaBackend rc=0 " "$summary" || fail "no passing CudaBackend suite in: $(cat "$summary")"
grep -q "^test_apps GPU rc=0 " "$summary" || fail "the GPU command-line cases did not pass: $(cat "$summary")"
if grep "^test" "$summary" | grep -v " rc=0 "; then fail "a suite failed (above)"; fi
python3 - "$tmp/out/tests" <<'PY' || fail "the gtest reports"
import json, pathlib, sys
reports = sorted(pathlib.Path(sys.argv[1]).glob("*.json"))
assert len(reports) >= 10, [r.name for r in reports]
tests = sum(json.loads(r.read_text())["tests"] for r in reports)
failures = sum(json.loads(r.read_text())["failures"] for r in reports)
assert tests > 50 and failures == 0, (tests, failures)
PY
if run nonsense > "$tmp/bad.log" 2>&1; then fail "an unknown stage was accepted"; fi
grep -q "unknown stage 'nonsense'" "$tmp/bad.log" || fail "unknown stage: $(cat "$tmp/bad.log")"
echo "gpu_bundle ok"
