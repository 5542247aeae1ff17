#!/usr/bin/env bash
# BatchNorm's training pass, nnperf against PyTorch, in one run: every BatchNorm shape of
# ResNet-50 at 224x224 (or PROBLEMS), forward and backward, by `nnperf bench batchnorm` (each row
# checked against the float64 reference) and bench/peers/batchnorm_torch.py (F.batch_norm in
# training, autograd's backward), alternating per shape and pass (ours, torch; next ...), ROUNDS
# times; then the table of scripts/batchnorm_table.py (table.md). Writes under
# results/bench_batchnorm_<time>/.
#   scripts/bench_batchnorm.sh [BUILD]        (default build; nnperf is BUILD/nnperf)
# Environment:
#   DEVICE    cpu (default) or cuda (nnperf's own and cuDNN's rows; PyTorch on the GPU)
#   BATCH     the batch of the default shapes (default 8 on the CPU, 32 on the GPU)
#   PROBLEMS  the shapes, mbNcNhN[wN] separated by spaces (default ResNet-50's at BATCH)
#   PASSES    (default "forward backward"); ROUNDS (default 3); WARMUP / MEASURE (default 3 / 11)
#   THREADS   CPU threads of both (default 1); PEAK_BW  GB/s for the % of peak column
#   OUT (output folder); PEERS_PYTHON (default: bench/peers/setup-venv.sh's)
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
NNPERF="$BDIR/nnperf"
DEVICE=${DEVICE:-cpu}
case $DEVICE in cpu) BATCH=${BATCH:-8} ;; cuda) BATCH=${BATCH:-32} ;;
  *) echo "bench_batchnorm: DEVICE must be cpu or cuda, not '$DEVICE'" >&2; exit 2 ;; esac
[[ $BATCH =~ ^[1-9][0-9]*$ ]] || { echo "bench_batchnorm: BATCH must be a positive integer, not '$BATCH'" >&2; exit 2; }
# ResNet-50's BatchNorm shapes (channels x side): the stem, then each stage's three widths.
default_problems=""
for cs in 64x112 64x56 256x56 128x56 128x28 512x28 256x28 256x14 1024x14 512x14 512x7 2048x7; do
  default_problems+="mb${BATCH}c${cs%x*}h${cs#*x} "
done
PROBLEMS=${PROBLEMS:-$default_problems}
PASSES=${PASSES:-"forward backward"}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-3}
MEASURE=${MEASURE:-11}
THREADS=${THREADS:-1}
PEAK_BW=${PEAK_BW:-0}
OUT=${OUT:-"$ROOT/results/bench_batchnorm_$(date +%Y%m%d_%H%M%S)"}

die() { echo "bench_batchnorm: $*" >&2; exit 1; }
[[ -x $NNPERF ]] || die "no nnperf at $NNPERF (build it, or pass the build folder)"
for n in "$ROUNDS" "$MEASURE" "$THREADS"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "bench_batchnorm: ROUNDS, MEASURE and THREADS must be positive integers" >&2; exit 2; }
done
if [[ -n ${PEERS_PYTHON:-} ]]; then
  PY=$PEERS_PYTHON
else
  PY=$(bash "$ROOT/bench/peers/setup-venv.sh" | tail -n 1) || die "bench/peers/setup-venv.sh failed"
fi
mkdir -p "$OUT" || die "cannot create $OUT"
echo "bench_batchnorm: writing to $OUT"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nnperf: $NNPERF  python: $PY  device: $DEVICE  threads: $THREADS"
  echo "problems: $PROBLEMS"
  echo "passes: $PASSES  rounds: $ROUNDS  warmup/measure: $WARMUP/$MEASURE"
  git -C "$ROOT" rev-parse --short HEAD 2> /dev/null | sed 's/^/commit: /'
} > "$OUT/run.txt"

peak=()
[[ $PEAK_BW != 0 ]] && peak=(--peak-bw "$PEAK_BW")
threads=()
[[ $DEVICE == cpu ]] && threads=(--threads "$THREADS")
failed=0
run_step() {  # run_step LOG cmd...: a failure is logged, the run goes on (the table shows the gap)
  local log=$1
  shift
  if ! "$@" >> "$log" 2>&1; then
    echo "bench_batchnorm: FAILED: $*" | tee -a "$OUT/errors.txt" >&2
    failed=1
  fi
}
for round in $(seq 1 "$ROUNDS"); do
  for problem in $PROBLEMS; do
    for pass in $PASSES; do
      run_step "$OUT/nnperf.log" "$NNPERF" bench batchnorm --device "$DEVICE" --problem "$problem" \
        --pass "$pass" "${threads[@]}" --warmup "$WARMUP" --measure "$MEASURE" "${peak[@]}" \
        --json "$OUT/ours_${problem}_${pass}_r$round.json"
      run_step "$OUT/torch.log" "$PY" "$ROOT/bench/peers/batchnorm_torch.py" --device "$DEVICE" \
        --problem "$problem" --pass "$pass" --threads "$THREADS" --warmup "$WARMUP" \
        --measure "$MEASURE" "${peak[@]}" --json "$OUT/torch_${problem}_${pass}_r$round.json"
    done
  done
  echo "bench_batchnorm: round $round of $ROUNDS done"
done
python3 "$ROOT/scripts/batchnorm_table.py" "$OUT" > "$OUT/table.md" || die "scripts/batchnorm_table.py failed"
cat "$OUT/table.md"
exit "$failed"
