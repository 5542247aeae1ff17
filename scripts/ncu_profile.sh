#!/usr/bin/env bash
# Nsight Compute over one GPU forward pass of a CNN, or one training step, then its counter
# roofline:
#
#   scripts/ncu_profile.sh [--train-step] NNPERF OUT [MODEL] [BATCH] [SIZE] [PEAKS_JSON ENV]
#
# runs `NNPERF profile --device cuda --model MODEL --sizes SIZE --batch-size BATCH --warmup 0
# --measure 1 --no-layers --algorithm guess --power-source none` under `ncu` with the metrics of
# share/ncu-roofline-metrics.txt (so every kernel launch ncu sees is the one measured pass:
# `guess` runs nothing at plan time, unlike `find`), or with --train-step `NNPERF train --device
# cuda --launch eager --profile-one-step` on synthetic data under `ncu --profile-from-start off`
# (ncu sees the one recorded step, kernel by kernel as the GPU sessions ran it: forward, loss,
# backward and the optimizer, between nnperf's cudaProfilerStart and cudaProfilerStop), writes
# OUT/kernels.csv, and feeds it to `NNPERF roofline --ncu` with the ceilings of PEAKS_JSON's ENV
# (as `peaks --device cuda` writes them; default: measured first into OUT/peaks.json). Needs ncu
# on PATH and a GPU whose counters ncu may read (as root, or with
# NVreg_RestrictProfilingToAdminUsers=0).
set -euo pipefail

train_step=0
if [[ ${1:-} == --train-step ]]; then
  train_step=1
  shift
fi
if [[ $# -lt 2 ]]; then
  sed -n '2,18p' "$0" >&2
  exit 2
fi
nnperf=$1 out=$2 model=${3:-resnet50} batch=${4:-1} size=${5:-224} peaks=${6:-} env=${7:-gpu}
here=$(cd "$(dirname "$0")/.." && pwd)
metrics_file="$here/share/ncu-roofline-metrics.txt"
command -v ncu > /dev/null || { echo "ncu_profile: ncu is not on PATH" >&2; exit 2; }
[[ -x $nnperf ]] || { echo "ncu_profile: $nnperf: not an executable" >&2; exit 2; }
[[ $batch =~ ^[1-9][0-9]*$ && $size =~ ^[1-9][0-9]*$ ]] ||
  { echo "ncu_profile: BATCH and SIZE must be positive integers, got '$batch' '$size'" >&2; exit 2; }
mkdir -p "$out"
if [[ -z $peaks ]]; then
  peaks="$out/peaks.json"
  "$nnperf" peaks --device cuda --quick --out "$peaks" --env "$env" > "$out/peaks.log"
fi

metrics=(--metrics "$(tr -d '\n' < "$metrics_file")" --csv --target-processes all)
if (( train_step )); then
  ncu --profile-from-start off "${metrics[@]}" \
    "$nnperf" train --device cuda --launch eager --model "$model" --synthetic --input-size "$size" \
    --batch-size "$batch" --limit-train $((4 * batch)) --limit-test "$batch" --profile-one-step \
    --warmup-iters 2 --algorithm guess --progress quiet --no-tensorboard \
    --out-dir "$out/train" --overwrite > "$out/kernels.csv" 2> "$out/ncu.log"
else
  ncu "${metrics[@]}" \
    "$nnperf" profile --device cuda --model "$model" --sizes "$size" --batch-size "$batch" \
    --warmup 0 --measure 1 --no-layers --algorithm guess --power-source none --progress quiet \
    --output-dir "$out/profile" > "$out/kernels.csv" 2> "$out/ncu.log"
fi

"$nnperf" roofline --ncu "$out/kernels.csv" --peaks "$peaks" --env "$env" \
  --out-dir "$out/roofline" --overwrite
echo "ncu_profile: kernels in $out/kernels.csv, roofline in $out/roofline"
