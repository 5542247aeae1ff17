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
# roofline/ncu.json: a record per launch of the fixture (raw_units_row.csv: FLOPs from the
# ffma/hfma/dfma... counters, DRAM bytes, time) placed under the given ceilings (50000 GFLOP/s,
# 3000 GB/s: all three below the ridge point, so memory bound).
check_ncu_json() {  # FILE
  python3 - "$1" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ctx, recs = doc["context"], doc["records"]
assert ctx["tool"] == "ncu" and ctx["launches"] == 3, ctx
assert ctx["peak_gflops"] == 50000 and ctx["peak_gbps"] == 3000, ctx
# id: (kernel name, FLOPs, DRAM bytes, seconds)
want = {"0": ("ampere_sgemm_128x64_nn", 2 * 2**30, 1.07e9, 2.34e-3),
        "1": ("volta_h884gemm_64x64_ldg8_nn", 2 * 4096 + 512 + 1024, 0.54e9, 0.90e-3),
        "2": ("void dgemm_kernel<double, 64>(int, int, const double *, double *)",
              2 * 33554432 + 2000 + 1000, 0.268e9, 12.5e-3)}
assert sorted(r["id"] for r in recs) == sorted(want), [r["id"] for r in recs]
close = lambda a, b: abs(a - b) <= 1e-9 * abs(b)
for r in recs:
    name, flops, dram, t = want[r["id"]]
    assert r["name"] == name, r
    assert close(r["flops"], flops) and close(r["dram_bytes"], dram) and close(r["time_s"], t), r
    ai = flops / dram
    assert close(r["ai_dram"], ai) and close(r["gflops"], flops / t / 1e9), r
    roof = min(50000, ai * 3000)
    assert close(r["attainable_gflops"], roof), r
    assert close(r["pct_of_attainable"], 100 * flops / t / 1e9 / roof), r
    assert r["bound"] == "memory", r
assert "tensor_pipe_not_counted" in next(r for r in recs if r["id"] == "1")["flags"]
print(f"{sys.argv[1]}: 3 launches on the counter roofline")
PY
}
bash "$src/scripts/ncu_profile.sh" "$nnperf" "$tmp/out" resnet18 2 32 "$tmp/peaks.json" gpu \
  > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "rc $?"; }
args=$(tr '\n' ' ' < "$tmp/args")
[[ $args == *"--metrics $(tr -d '\n' < "$src/share/ncu-roofline-metrics.txt") --csv"* ]] ||
  fail "metrics not passed: $args"
[[ $args == *"profile --device cuda --model resnet18 --sizes 32 --batch-size 2 --warmup 0 --measure 1 --no-layers --algorithm guess"* ]] ||
  fail "profiled command: $args"
grep -q '"ID"' "$tmp/out/kernels.csv" || fail "kernels.csv has no ncu CSV"
[[ -s $tmp/out/roofline/ncu.json ]] || { cat "$tmp/log"; fail "no roofline/ncu.json"; }
check_ncu_json "$tmp/out/roofline/ncu.json" || fail "roofline/ncu.json is not the fixture's roofline"
# One training step: the profiler window is the recorded step's (--profile-from-start off).
bash "$src/scripts/ncu_profile.sh" --train-step "$nnperf" "$tmp/t" resnet18 8 32 "$tmp/peaks.json" \
  gpu > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "--train-step rc $?"; }
args=$(tr '\n' ' ' < "$tmp/args")
[[ $args == "--profile-from-start off --metrics "*" train --device cuda --launch eager --model resnet18 --synthetic --input-size 32 --batch-size 8 --limit-train 32 --limit-test 8 --profile-one-step"* ]] ||
  fail "--train-step command: $args"
[[ -s $tmp/t/roofline/ncu.json ]] || fail "--train-step: no roofline/ncu.json"
check_ncu_json "$tmp/t/roofline/ncu.json" || fail "--train-step: roofline/ncu.json is not the fixture's roofline"
bash "$src/scripts/ncu_profile.sh" "$nnperf" "$tmp/o2" resnet18 0 32 "$tmp/peaks.json" gpu \
  > /dev/null 2>&1
[[ $? -eq 2 ]] || fail "BATCH 0 not refused with 2"
echo "ncu_profile ok"
