#!/usr/bin/env bash
# scripts/ncu_profile.sh with a stand-in ncu (tests/fakes/ncu) and given ceilings: the profiled
# command is one measured pass of the model on the GPU (or, --train-step, one recorded training
# step) with the shipped metric list, the CSV ncu prints lands in kernels.csv and becomes a
# counter roofline; bad arguments exit 2.
#   ncu_profile_test.sh NNPERF SOURCE_DIR
set -uo pipefail
nnperf=$1 src=$2
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export PATH="$src/tests/fakes:$PATH" NCU_FAKE_ARGS="$tmp/args" \
  NCU_FAKE_CSV="$src/tests/data/ncu/raw_units_row.csv"
cat > "$tmp/peaks.json" <<'JSON'
{"gpu": {"description": "test GPU", "peak_gbps": 3000, "peak_gflops": {"fp32": 50000}}}
JSON
bash "$src/scripts/ncu_profile.sh" "$nnperf" "$tmp/out" resnet18 2 32 "$tmp/peaks.json" gpu \
  > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "rc $?"; }
args=$(tr '\n' ' ' < "$tmp/args")
[[ $args == *"--metrics $(tr -d '\n' < "$src/share/ncu-roofline-metrics.txt") --csv"* ]] ||
  fail "metrics not passed: $args"
[[ $args == *"profile --device cuda --model resnet18 --sizes 32 --batch-size 2 --warmup 0 --measure 1 --no-layers --algorithm guess"* ]] ||
  fail "profiled command: $args"
grep -q '"ID"' "$tmp/out/kernels.csv" || fail "kernels.csv has no ncu CSV"
[[ -s $tmp/out/roofline/ncu.json ]] || { cat "$tmp/log"; fail "no roofline/ncu.json"; }
# One training step: the profiler window is the recorded step's (--profile-from-start off).
bash "$src/scripts/ncu_profile.sh" --train-step "$nnperf" "$tmp/t" resnet18 8 32 "$tmp/peaks.json" \
  gpu > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--train-step rc $?"; }
args=$(tr '\n' ' ' < "$tmp/args")
[[ $args == "--profile-from-start off --metrics "*" train --device cuda --launch eager --model resnet18 --synthetic --input-size 32 --batch-size 8 --limit-train 32 --limit-test 8 --profile-one-step"* ]] ||
  fail "--train-step command: $args"
[[ -s $tmp/t/roofline/ncu.json ]] || fail "--train-step: no roofline/ncu.json"
bash "$src/scripts/ncu_profile.sh" "$nnperf" "$tmp/o2" resnet18 0 32 "$tmp/peaks.json" gpu \
  > /dev/null 2>&1
[[ $? -eq 2 ]] || fail "BATCH 0 not refused with 2"
echo "ncu_profile ok"
