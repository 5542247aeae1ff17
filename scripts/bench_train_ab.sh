#!/usr/bin/env bash
# Two nnperf builds and the PyTorch peer on the same training step, alternating: per round and
# thread count, build A, build B, then PyTorch (bench/peers/train_torch.py), each a fixed-iteration
# run on synthetic data (`nnperf train --synthetic --iters`). Prints each run's seconds per step,
# then per thread count the medians, B over A, how many rounds B was faster, and B over PyTorch.
# For a change's before/after on this VM's noisy cores: the order within a round is fixed and the
# rounds repeat, so a slow period hits all three alike.
#   scripts/bench_train_ab.sh BUILD_A BUILD_B      (folders holding an nnperf binary)
# Environment: MODEL (resnet18), BATCH (32), SIZE (32), CLASSES (10), ITERS (10), WARMUP (3),
# ROUNDS (5), THREADS ("1 2"), TORCH (1: time PyTorch too; 0: only the two builds), OUT (default
# results/bench_train_ab_<time>).
set -euo pipefail
usage() { echo "bench_train_ab: $*" >&2; exit 2; }
[[ $# -eq 2 ]] || usage "expected two build folders (BUILD_A BUILD_B), got $#"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
A="$1/nnperf" B="$2/nnperf"
[[ -x $A ]] || usage "no nnperf binary at $A"
[[ -x $B ]] || usage "no nnperf binary at $B"
MODEL=${MODEL:-resnet18} BATCH=${BATCH:-32} SIZE=${SIZE:-32} CLASSES=${CLASSES:-10}
ITERS=${ITERS:-10} WARMUP=${WARMUP:-3} ROUNDS=${ROUNDS:-5} THREADS=${THREADS:-"1 2"}
TORCH=${TORCH:-1}
for v in BATCH SIZE CLASSES ITERS ROUNDS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || usage "$v must be a positive integer, not '${!v}'"
done
[[ $WARMUP =~ ^[0-9]+$ ]] || usage "WARMUP must be a non-negative integer, not '$WARMUP'"
[[ $MODEL =~ ^[a-z0-9_]+$ ]] || usage "MODEL must be a model name (nnperf profile --list-models), not '$MODEL'"
[[ -n $THREADS ]] || usage "THREADS is empty"
for t in $THREADS; do [[ $t =~ ^[1-9][0-9]*$ ]] || usage "THREADS: '$t' is not a positive integer"; done
[[ $TORCH == 0 || $TORCH == 1 ]] || usage "TORCH must be 0 or 1, not '$TORCH'"
OUT=${OUT:-"$ROOT/results/bench_train_ab_$(date +%Y%m%d_%H%M%S)"}
mkdir -p "$OUT/logs"
PY=""
[[ $TORCH == 1 ]] && PY=${PEERS_PYTHON:-$(bash "$ROOT/bench/peers/setup-venv.sh" | tail -n 1)}
flags=(--iters "$ITERS" --warmup-iters "$WARMUP" --batch-size "$BATCH" --input-size "$SIZE"
  --in-channels 3 --num-classes "$CLASSES")

# seconds per step of one run (MEASURED_SEC covers the ITERS measured steps)
per_step() { grep -o 'MEASURED_SEC=[0-9.]*' "$1" | tail -n 1 | cut -d= -f2 | awk -v n="$ITERS" '{ printf "%.5f", $1 / n }'; }
run() {  # label threads log command...
  local label=$1 t=$2 log=$3
  shift 3
  "$@" > "$log" 2>&1 || { cat "$log" >&2; echo "bench_train_ab: $label failed (log: $log)" >&2; exit 1; }
  local s
  s=$(per_step "$log")
  [[ -n $s ]] || { echo "bench_train_ab: $label printed no MEASURED_SEC (log: $log)" >&2; exit 1; }
  echo "$label $t $s" | tee -a "$OUT/runs.txt"
}
: > "$OUT/runs.txt"
echo "bench_train_ab: writing to $OUT ($MODEL, batch $BATCH, ${SIZE}x$SIZE, $ROUNDS rounds)"
for r in $(seq "$ROUNDS"); do
  for t in $THREADS; do
    run A "$t" "$OUT/logs/a_t${t}_r$r.log" "$A" train --model "$MODEL" --synthetic "${flags[@]}" \
      --threads "$t" --label ab_a --log-dir "$OUT/logs/a"
    run B "$t" "$OUT/logs/b_t${t}_r$r.log" "$B" train --model "$MODEL" --synthetic "${flags[@]}" \
      --threads "$t" --label ab_b --log-dir "$OUT/logs/b"
    if [[ $TORCH == 1 ]]; then
      run torch "$t" "$OUT/logs/torch_t${t}_r$r.log" "$PY" "$ROOT/bench/peers/train_torch.py" \
        --model "$MODEL" "${flags[@]}" --threads "$t"
    fi
  done
done
python3 - "$OUT/runs.txt" > "$OUT/summary.txt" << 'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    who, t, s = line.split()
    runs.setdefault((who, int(t)), []).append(float(s))
for t in sorted({t for _, t in runs}):
    a, b = runs[("A", t)], runs[("B", t)]
    ma, mb = statistics.median(a), statistics.median(b)
    faster = sum(y < x for x, y in zip(a, b))
    ratio = statistics.median(y / x for x, y in zip(a, b))
    line = (f"{t} thread(s): A {ma:.4f} s/step, B {mb:.4f} (B/A {mb / ma:.3f}; median of the "
            f"rounds' B/A {ratio:.3f}; B faster in {faster} of {len(a)} rounds)")
    if ("torch", t) in runs:
        mt = statistics.median(runs[("torch", t)])
        line += f"; PyTorch {mt:.4f} (B/PyTorch {mb / mt:.3f})"
    print(line)
EOF
cat "$OUT/summary.txt"
