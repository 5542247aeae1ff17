#!/usr/bin/env bash
# The measured targets of the MLP laboratory, in one run, on one thread unless told otherwise
# (the second core of these machines comes and goes). Writes everything to results/bench_<time>/
# and prints a summary. Peers (PyTorch, NumPy) come from PyPI into bench/peers/.venv.
#   scripts/bench.sh [BUILD]        (default build)
# Environment: ROUNDS (default 2) alternations of ours and the peers for training throughput;
# EPOCHS (default 5); OUT (output folder); ONLY_TRAIN=1 skips the micro-benchmarks.
set -euo pipefail
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NNPERF="$ROOT/$BUILD/nnperf"
OUT=${OUT:-"$ROOT/results/bench_$(date +%Y%m%d_%H%M%S)"}
ROUNDS=${ROUNDS:-2}
EPOCHS=${EPOCHS:-5}
mkdir -p "$OUT"
echo "bench: writing to $OUT"
PY=${PEERS_PYTHON:-$(bash "$ROOT/bench/peers/setup-venv.sh" | tail -n 1)}

if [ -z "${ONLY_TRAIN:-}" ]; then
"$NNPERF" devices > "$OUT/devices.txt"
"$NNPERF" peaks --threads 2 --out "$OUT/peaks.json" | tee "$OUT/peaks.txt"

# GEMM: blocked vs OpenBLAS at 1024^3, 1 and 2 threads, interleaved repetitions.
"$ROOT/$BUILD/bench/gemm_bench" --benchmark_filter='gemm/(blocked|blas)/m1024n1024k1024' \
  --benchmark_repetitions=7 --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true --benchmark_out="$OUT/gemm_1024.json" \
  --benchmark_out_format=json | tee "$OUT/gemm_1024.txt"

# The MLP implementation benchmark, one thread.
"$NNPERF" mlp-bench --threads 1 --out-dir "$OUT/mlp-bench" | tee "$OUT/mlp-bench.txt"

fi

# Training throughput and accuracy: ours (every implementation once, then the best again) and
# the peers, alternating, same recipe: 784-128-128-128-10, ReLU, Adam 1e-3, batch 64, 1 thread.
RECIPE=(--hidden 128,128,128 --batch-size 64 --epochs "$EPOCHS")
for impl in naive parallel blas; do
  "$NNPERF" train "${RECIPE[@]}" --threads 1 --lr 0.001 --impl "$impl" --progress lines --no-tensorboard \
    --out-dir "$OUT/train_$impl" > "$OUT/train_$impl.log"
done
for r in $(seq 1 "$ROUNDS"); do
  "$NNPERF" train "${RECIPE[@]}" --threads 1 --lr 0.001 --impl blocked --progress lines --no-tensorboard \
    --out-dir "$OUT/train_blocked_$r" > "$OUT/train_blocked_$r.log"
  bash "$ROOT/bench/peers/run_peers.sh" -p "$PY" -t 1 -o "$OUT/peers_$r" -- "${RECIPE[@]}" --lr 0.001 \
    > "$OUT/peers_$r.log" 2>&1
done

python3 - "$OUT" <<'PYEOF'
import json, sys, os, glob, statistics
out = sys.argv[1]
def last_kv(path):
    line = [l for l in open(path) if l.startswith("MEASURED_SEC=")][-1]
    return dict(kv.split("=") for kv in line.split())
def final(path):
    return json.load(open(os.path.join(path, "final_results.json")))
print("\n== Training, 784-128-128-128-10 ReLU, Adam 1e-3, batch 64, 1 thread ==")
rows = []
for impl in ["naive", "parallel", "blas"]:
    f = final(f"{out}/train_{impl}")
    rows.append((impl, f["final_test_acc"], f["imgs_per_sec"]))
ours = [final(p) for p in sorted(glob.glob(f"{out}/train_blocked_*/"))]
rows.append(("blocked (median)", statistics.median(f["final_test_acc"] for f in ours),
             statistics.median(f["imgs_per_sec"] for f in ours)))
peer = {}
for name in ["torch", "numpy"]:
    js = [json.load(open(p)) for p in sorted(glob.glob(f"{out}/peers_*/{name}.json"))]
    if js:
        peer[name] = (statistics.median(j["test_acc"] for j in js), statistics.median(j["imgs_per_sec"] for j in js))
        rows.append((name + " (median)",) + peer[name])
for name, acc, ips in rows:
    print(f"  {name:18s} test acc {100*acc:6.2f}%   {ips:10.0f} img/s")
best = rows[3][2]
for name, (acc, ips) in peer.items():
    print(f"  blocked / {name}: {best/ips:.2f}x throughput, accuracy difference {100*(rows[3][1]-acc):+.2f} points")
PYEOF
echo "bench: done ($OUT)"
