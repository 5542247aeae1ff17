#!/usr/bin/env bash
# The CNN training targets against the PyTorch peer (bench/peers/train_torch.py), in one run:
#  1. speed: one training iteration of ResNet-18 (batch 32, 3x32x32, 10 classes) and ResNet-50
#     (batch 8, 3x224x224, 1000 classes) with the fixed-iteration driver on synthetic data, ours
#     and PyTorch alternating ROUNDS times, at 1 and 2 threads; medians of seconds per iteration;
#  1b. per layer (LAYERS=1, the default): the same two steps at one thread profiled layer by layer,
#     nnperf's `train --profile-one-step` beside bench/peers/train_layers_torch.py, set side by
#     side per phase and layer kind by scripts/train_layers_table.py (layers_<model>.md);
#  2. data path: ResNet-18 on CIFAR-10-format files (bench/make_cifar_format.py) with
#     --workers 1 and 0: the share of the training steps spent waiting for data;
#  3. accuracy (ACCURACY=1): ResNet-18 with nn-perf's recipe on Fashion-MNIST, ACC_EPOCHS epochs,
#     seeds ACC_SEEDS, ours and PyTorch, ACC_THREADS threads; means over the seeds. With
#     ACC_STREAMS=matched (the default) both start from the same initial weights (PyTorch's,
#     written with --write-init, read with --init-weights) and PyTorch replays nnperf's batches and
#     crop/flip draws (--streams nnperf); ACC_STREAMS=independent lets each draw its own.
#   scripts/bench_train_cnn.sh [BUILD]   (default build)
# Environment: ROUNDS (3), ITERS (10), WARMUP (3), LAYERS (1), ACCURACY (0), ACC_EPOCHS (5), ACC_SEEDS
# ("1 2"), ACC_THREADS (2), ACC_LIMIT_TRAIN (0 = all), ACC_STREAMS (matched), OUT (default results/bench_train_cnn_<time>).
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NNPERF="$ROOT/$BUILD/nnperf"
OUT=${OUT:-"$ROOT/results/bench_train_cnn_$(date +%Y%m%d_%H%M%S)"}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
PY=${PEERS_PYTHON:-$(bash "$ROOT/bench/peers/setup-venv.sh" | tail -n 1)}
mkdir -p "$OUT/speed"
echo "bench_train_cnn: writing to $OUT"

# 1. speed, alternating
cases=("resnet18 32 32 10" "resnet50 8 224 1000")
for threads in 1 2; do
  for c in "${cases[@]}"; do
    read -r arch batch size classes <<<"$c"
    iters=$ITERS; [ "$arch" = resnet50 ] && iters=$((ITERS / 2 > 2 ? ITERS / 2 : 2))
    for r in $(seq 1 "$ROUNDS"); do
      tag="${arch}_t${threads}_r${r}"
      "$NNPERF" train --model "$arch" --synthetic --iters "$iters" --warmup-iters "$WARMUP" \
        --batch-size "$batch" --input-size "$size" --in-channels 3 --num-classes "$classes" \
        --threads "$threads" --label "bench_$tag" --log-dir "$OUT/logs" > "$OUT/speed/nnperf_$tag.log"
      "$PY" "$ROOT/bench/peers/train_torch.py" --model "$arch" --iters "$iters" \
        --warmup-iters "$WARMUP" --batch-size "$batch" --input-size "$size" --in-channels 3 \
        --num-classes "$classes" --threads "$threads" > "$OUT/speed/torch_$tag.log"
    done
  done
done

# 1b. where one step's time goes, layer by layer, one thread
if [ "${LAYERS:-1}" = 1 ]; then
  for c in "${cases[@]}"; do
    read -r arch batch size classes <<<"$c"
    "$NNPERF" train --model "$arch" --synthetic --profile-one-step --warmup-iters "$WARMUP" \
      --batch-size "$batch" --input-size "$size" --in-channels 3 --num-classes "$classes" \
      --limit-train "$((batch * 2))" --limit-test "$batch" --threads 1 --no-tensorboard \
      --out-dir "$OUT/layers_nnperf_$arch" > "$OUT/layers_nnperf_$arch.log"
    "$PY" "$ROOT/bench/peers/train_layers_torch.py" --model "$arch" --device cpu \
      --batch-size "$batch" --input-size "$size" --num-classes "$classes" --threads 1 \
      --warmup-iters "$WARMUP" --measure 3 --csv "$OUT/layers_torch_$arch.csv" \
      --json "$OUT/layers_torch_$arch.json" > "$OUT/layers_torch_$arch.log"
    python3 "$ROOT/scripts/train_layers_table.py" "$OUT/layers_nnperf_$arch/one_step_layers.csv" \
      "$OUT/layers_torch_$arch.csv" --torch-json "$OUT/layers_torch_$arch.json" > "$OUT/layers_$arch.md"
  done
fi

# 2. data path on CIFAR-format files
python3 "$ROOT/bench/make_cifar_format.py" "$OUT/cifar_like" --per-batch 2000 --test 1000 > /dev/null
for w in 1 0; do
  "$NNPERF" train --model resnet18 --data "$OUT/cifar_like" --workers "$w" --epochs 1 \
    --threads 2 --progress lines --no-tensorboard --out-dir "$OUT/datapath_w$w" > "$OUT/datapath_w$w.log"
done

# 3. accuracy
if [ "${ACCURACY:-0}" = 1 ]; then
  limit=()
  [ "${ACC_LIMIT_TRAIN:-0}" != 0 ] && limit=(--limit-train "$ACC_LIMIT_TRAIN")
  case "${ACC_STREAMS:=matched}" in
    matched|independent) ;;
    *) echo "error: ACC_STREAMS=$ACC_STREAMS: expected matched or independent" >&2; exit 2 ;;
  esac
  for s in ${ACC_SEEDS:-1 2}; do
    init=() streams=()
    if [ "$ACC_STREAMS" = matched ]; then
      "$PY" "$ROOT/bench/peers/train_torch.py" --model resnet18 --seed "$s" "${limit[@]}" \
        --write-init "$OUT/acc_init_$s.ckpt" > /dev/null
      init=(--init-weights "$OUT/acc_init_$s.ckpt") streams=(--streams nnperf)
    fi
    "$NNPERF" train --model resnet18 --epochs "${ACC_EPOCHS:-5}" --batch-size 128 --seed "$s" \
      --threads "${ACC_THREADS:-2}" --progress lines --no-tensorboard "${limit[@]}" "${init[@]}" \
      --out-dir "$OUT/acc_nnperf_$s" > "$OUT/acc_nnperf_$s.log"
    "$PY" "$ROOT/bench/peers/train_torch.py" --model resnet18 --epochs "${ACC_EPOCHS:-5}" \
      --batch-size 128 --seed "$s" --threads "${ACC_THREADS:-2}" "${limit[@]}" "${streams[@]}" \
      --json "$OUT/acc_torch_$s.json" > "$OUT/acc_torch_$s.log"
  done
fi

python3 "$ROOT/scripts/bench_train_cnn_summary.py" "$OUT" | tee "$OUT/summary.md"
for f in "$OUT"/layers_*.md; do
  [ -e "$f" ] && grep "^train layers:" "$f" | sed "s|^|$(basename "$f" .md): |" | tee -a "$OUT/summary.md"
done
echo "bench_train_cnn: done ($OUT)"
