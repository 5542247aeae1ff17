#!/usr/bin/env bash
# The measured targets of the CNN laboratory (issue 3), in one run, on one thread unless told
# otherwise: every distinct conv layer of VGG16 and ResNet-50 at 224x224 (bench/conv_layers.txt)
# with nnperf (`nnperf bench conv2d`: every supported algorithm), PyTorch
# (bench/peers/conv_torch.py: F.conv2d in NCHW and channels_last) and oneDNN
# (bench/onednn/onednn_conv_peer: direct / winograd / auto, formats `any`), alternating per layer
# (ours, torch, oneDNN; next layer ...); then whole-model latency of resnet50, vgg16 and
# mobilenet_v2 at 224, batch 1 (`nnperf profile --algorithm find`, with and without --fold-bn,
# and bench/peers/cnn_torch.py), alternating per model, ROUNDS times. Writes everything under
# results/bench_conv_<time>/ and prints the Markdown tables of scripts/conv_table.py.
#   scripts/bench_conv.sh [BUILD]        (default build; nnperf is BUILD/nnperf)
# Environment:
#   BATCHES   batch sizes of the layer benchmarks (default "1 8")
#   LAYERS    regex: only the layers where it is found in the model, layer name, model.layer or
#             descriptor (e.g. 'vgg16' or '^features\.(2|12)$'); default all
#   WARMUP / MEASURE       per layer and implementation (default 2 / 5)
#   MODELS    whole-model comparison (default "resnet50 vgg16 mobilenet_v2"; "" skips it)
#   MODEL_WARMUP / MODEL_MEASURE   whole-model passes (default 3 / 10); ROUNDS (default 2)
#   THREADS   (default 1); OUT (output folder); PEERS_PYTHON (default: bench/peers/setup-venv.sh's)
#   PASS      forward (default), backward-data or backward-weights: the pass the layer benchmarks
#             time (nnperf bench conv2d --pass, conv_torch.py --pass); a backward pass runs no
#             oneDNN peer (it times forward inference) and no whole models
#   PEAK      1-thread FMA GFLOP/s for "% peak" (default: the largest figure measured in the run)
#   ONEDNN_PEER  the oneDNN peer binary (default BUILD/bench/onednn/onednn_conv_peer; skipped
#             with a note when missing); LAYER_FILE (default bench/conv_layers.txt)
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
NNPERF="$BDIR/nnperf"
ONEDNN=${ONEDNN_PEER:-$BDIR/bench/onednn/onednn_conv_peer}
OUT=${OUT:-"$ROOT/results/bench_conv_$(date +%Y%m%d_%H%M%S)"}
BATCHES=${BATCHES:-"1 8"}
LAYERS=${LAYERS:-}
WARMUP=${WARMUP:-2}
MEASURE=${MEASURE:-5}
MODELS=${MODELS-"resnet50 vgg16 mobilenet_v2"}
MODEL_WARMUP=${MODEL_WARMUP:-3}
MODEL_MEASURE=${MODEL_MEASURE:-10}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-1}
LAYER_FILE=${LAYER_FILE:-$ROOT/bench/conv_layers.txt}
PASS=${PASS:-forward}

die() { echo "bench_conv: $*" >&2; exit 1; }
case $PASS in
  forward) ;;
  backward-data | backward-weights)
    ONEDNN=
    MODELS=
    ;;
  *) echo "bench_conv: PASS: '$PASS' is not forward, backward-data or backward-weights" >&2; exit 2 ;;
esac
[[ -x $NNPERF ]] || die "no nnperf at $NNPERF (build it, or pass the build folder)"
[[ -r $LAYER_FILE ]] || die "no layer list at $LAYER_FILE"
mkdir -p "$OUT" || die "cannot create $OUT"
echo "bench_conv: writing to $OUT"

if [[ -n ${PEERS_PYTHON:-} ]]; then
  PY=$PEERS_PYTHON
else
  PY=$(bash "$ROOT/bench/peers/setup-venv.sh" | tail -n 1) || die "bench/peers/setup-venv.sh failed"
fi
if [[ -n $MODELS ]] && ! "$PY" -c 'import torchvision' 2>/dev/null; then  # cnn_torch.py's models
  echo "bench_conv: installing torchvision into $PY's environment" >&2
  "$PY" -m pip install --disable-pip-version-check --quiet torchvision >&2 || die "pip install torchvision failed"
fi
if [[ $PASS != forward ]]; then
  echo "bench_conv: $PASS: no oneDNN peer (it times forward inference) and no whole models" >&2
elif [[ ! -x $ONEDNN ]]; then
  echo "bench_conv: no oneDNN peer at $ONEDNN (apt-get install libdnnl-dev and rebuild); skipping it" \
    | tee "$OUT/onednn_missing.txt" >&2
  ONEDNN=
fi

# Failures of one step are logged and do not stop the run (the table shows the gap).
run_step() {  # run_step LOG cmd...
  local log=$1
  shift
  if ! "$@" > "$log" 2>&1; then
    echo "bench_conv: FAILED ($(basename "$log")): $*" | tee -a "$OUT/errors.txt" >&2
    tail -n 3 "$log" >&2
  fi
}

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nnperf: $NNPERF"
  echo "onednn peer: ${ONEDNN:-none}"
  echo "python: $PY"
  echo "pass: $PASS  threads: $THREADS  batches: $BATCHES  layers: ${LAYERS:-all}  warmup/measure: $WARMUP/$MEASURE"
  echo "models: ${MODELS:-none}  model warmup/measure: $MODEL_WARMUP/$MODEL_MEASURE  rounds: $ROUNDS"
  git -C "$ROOT" rev-parse --short HEAD 2>/dev/null | sed 's/^/commit: /'
  git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo "tree: modified"
} > "$OUT/run.txt"
cp "$LAYER_FILE" "$OUT/conv_layers.txt"

"$NNPERF" peaks --threads 1 --sgemm-n 0 --out "$OUT/peaks.json" > "$OUT/peaks.txt" 2>&1 ||
  echo "bench_conv: nnperf peaks failed (the table uses the bench JSONs' peak)" >&2
[[ -n $ONEDNN ]] && run_step "$OUT/onednn_check.txt" "$ONEDNN" --check

# ---- Per layer: ours, torch, oneDNN, alternating layer by layer --------------------------------
: > "$OUT/layers.tsv"
for B in $BATCHES; do
  mkdir -p "$OUT/layers/mb$B"
  while read -r model name count desc; do
    [[ -z $model || $model == \#* ]] && continue
    if [[ -n $LAYERS ]]; then
      hit=0
      for field in "$model" "$name" "$model.$name" "$desc"; do
        [[ $field =~ $LAYERS ]] && hit=1
      done
      ((hit)) || continue
    fi
    [[ $desc =~ ^(.*)mb[0-9]+(.*)$ ]] && desc="${BASH_REMATCH[1]}mb$B${BASH_REMATCH[2]}"
    [[ $desc == *mb$B* ]] || desc="mb$B$desc"
    base="$OUT/layers/mb$B/${model}_${name}"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$B" "$model" "$name" "$count" "$desc" "layers/mb$B/${model}_${name}" \
      >> "$OUT/layers.tsv"
    echo "bench_conv: mb$B $model $name $desc" >&2
    run_step "$base.ours.txt" "$NNPERF" bench conv2d --problem "$desc" --pass "$PASS" --threads "$THREADS" \
      --warmup "$WARMUP" --measure "$MEASURE" --json "$base.ours.json"
    run_step "$base.torch.txt" "$PY" "$ROOT/bench/peers/conv_torch.py" --problem "$desc" --pass "$PASS" \
      --threads "$THREADS" --warmup "$WARMUP" --measure "$MEASURE" --json "$base.torch.json"
    if [[ -n $ONEDNN ]]; then
      run_step "$base.onednn.txt" "$ONEDNN" --problem "$desc" --threads "$THREADS" \
        --warmup "$WARMUP" --measure "$MEASURE" --json "$base.onednn.json"
    fi
  done < "$LAYER_FILE"
done

# ---- Whole models: ours (find, find + fold-bn), torch, alternating model by model ---------------
if [[ -n $MODELS ]]; then
  for r in $(seq 1 "$ROUNDS"); do
    d="$OUT/models/r$r"
    mkdir -p "$d"
    for m in $MODELS; do
      echo "bench_conv: round $r $m" >&2
      run_step "$d/ours_$m.txt" "$NNPERF" profile --model "$m" --algorithm find --stage sanity --sizes 224 \
        --threads "$THREADS" --warmup "$MODEL_WARMUP" --measure "$MODEL_MEASURE" --no-layers \
        --output-dir "$d/ours_$m" --progress quiet
      run_step "$d/ours_foldbn_$m.txt" "$NNPERF" profile --model "$m" --algorithm find --stage sanity \
        --sizes 224 --fold-bn --threads "$THREADS" --warmup "$MODEL_WARMUP" --measure "$MODEL_MEASURE" \
        --no-layers --output-dir "$d/ours_foldbn_$m" --progress quiet
      run_step "$d/torch_$m.txt" "$PY" "$ROOT/bench/peers/cnn_torch.py" --models "$m" --size 224 --batch 1 \
        --threads "$THREADS" --warmup "$MODEL_WARMUP" --measure "$MODEL_MEASURE" --json "$d/torch_$m.json"
    done
  done
fi

"$NNPERF" peaks --threads 1 --sgemm-n 0 --out "$OUT/peaks_end.json" > "$OUT/peaks_end.txt" 2>&1 || true
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/run.txt"
python3 "$ROOT/scripts/conv_table.py" "$OUT" ${PEAK:+--peak "$PEAK"} | tee "$OUT/table.md"
echo "bench_conv: done ($OUT)"
