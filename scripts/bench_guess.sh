#!/usr/bin/env bash
# How good is `guess`? For one model's training step, every distinct convolution problem and
# every pass: each algorithm of the pass timed by `nnperf bench conv2d` (forward rows with the
# weight transform a training step pays, --training) beside its modelled cost, then the table of
# scripts/guess_table.py (guess.md): the row guess picks against the fastest, per problem and
# summed over the model's layers. The problems and the rows guess picks come from a short
# `nnperf profile --pass train --algorithm guess --stage sanity` of the model (its layers CSV);
# a problem whose dead kernel taps guess crops (conv_crop.h) is timed as the cropped problem.
# Writes under results/bench_guess_<model>_<time>/.
#   scripts/bench_guess.sh [BUILD]        (default build; nnperf is BUILD/nnperf)
# Environment:
#   MODEL (default resnet18), BATCH (default 32), SIZE (input side, default 32), THREADS (1),
#   PASSES (default "forward backward-data backward-weights"), WARMUP / MEASURE (2 / 7), OUT
set -uo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) BDIR=$BUILD ;; *) BDIR=$ROOT/$BUILD ;; esac
NNPERF="$BDIR/nnperf"
MODEL=${MODEL:-resnet18}
BATCH=${BATCH:-32}
SIZE=${SIZE:-32}
THREADS=${THREADS:-1}
PASSES=${PASSES:-"forward backward-data backward-weights"}
WARMUP=${WARMUP:-2}
MEASURE=${MEASURE:-7}

usage() { echo "bench_guess: $*" >&2; exit 2; }
for v in BATCH SIZE THREADS MEASURE; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || usage "$v must be a positive integer, not '${!v}'"
done
[[ $WARMUP =~ ^[0-9]+$ ]] || usage "WARMUP must be a non-negative integer, not '$WARMUP'"
for p in $PASSES; do
  case $p in forward | backward-data | backward-weights) ;;
    *) usage "PASSES: '$p' is not forward, backward-data or backward-weights" ;; esac
done
[[ -n $PASSES ]] || usage "PASSES is empty"
[[ $MODEL =~ ^[a-z0-9_]+$ ]] || usage "MODEL must be a model name (nnperf profile --list-models), not '$MODEL'"
OUT=${OUT:-"$ROOT/results/bench_guess_${MODEL}_$(date +%Y%m%d_%H%M%S)"}

die() { echo "bench_guess: $*" >&2; exit 1; }
[[ -x $NNPERF ]] || die "no nnperf at $NNPERF (build it, or pass the build folder)"
mkdir -p "$OUT/bench" || die "cannot create $OUT"
echo "bench_guess: writing to $OUT"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)  load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "nnperf: $NNPERF  model: $MODEL  batch: $BATCH  size: $SIZE  threads: $THREADS"
  echo "passes: $PASSES  warmup/measure: $WARMUP/$MEASURE"
  git -C "$ROOT" rev-parse --short HEAD 2> /dev/null | sed 's/^/commit: /'
} > "$OUT/run.txt"

"$NNPERF" profile --model "$MODEL" --pass train --algorithm guess --stage sanity \
  --sizes "$SIZE" --batch-size "$BATCH" --threads "$THREADS" --output-dir "$OUT/profile" \
  > "$OUT/profile.log" 2>&1 || { cat "$OUT/profile.log" >&2; die "nnperf profile failed"; }
layers=$(ls "$OUT"/profile/*_layers.csv 2> /dev/null | head -n 1)
[[ -n $layers ]] || die "nnperf profile wrote no layers CSV under $OUT/profile"
problems=$(python3 "$ROOT/scripts/guess_table.py" problems "$layers") || die "cannot read $layers"

bench() {  # problem pass file
  local extra=()
  [[ $2 == forward ]] && extra=(--training)
  "$NNPERF" bench conv2d --problem "$1" --pass "$2" "${extra[@]}" --threads "$THREADS" \
    --warmup "$WARMUP" --measure "$MEASURE" --json "$3" >> "$OUT/bench.log" 2>&1
}
n=0
for p in $problems; do
  for pass in $PASSES; do
    f="$OUT/bench/${p}_${pass}.json"
    bench "$p" "$pass" "$f" || die "nnperf bench conv2d --problem $p --pass $pass failed (bench.log)"
    run_as=$(python3 "$ROOT/scripts/guess_table.py" run-as "$f") || die "cannot read $f"
    if [[ -n $run_as ]]; then  # the layer runs the cropped problem: time that one
      bench "$run_as" "$pass" "$OUT/bench/${p}_${pass}.cropped.json" ||
        die "nnperf bench conv2d --problem $run_as --pass $pass failed (bench.log)"
    fi
    n=$((n + 1))
  done
done
echo "bench_guess: $n problem-passes timed"
python3 "$ROOT/scripts/guess_table.py" table "$layers" "$OUT/bench" > "$OUT/guess.md" ||
  die "guess_table.py failed"
cat "$OUT/guess.md"
