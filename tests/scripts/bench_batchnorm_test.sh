#!/usr/bin/env bash
# scripts/bench_batchnorm.sh end to end on two small shapes, one round: nnperf and PyTorch
# alternating, every JSON written, the table with a row per shape and pass and a line per pass;
# bad settings exit 2 before anything runs. Exit 77 (skipped, with the reason) without a python
# that has torch: the peers' venv (bench/peers/setup-venv.sh) is not part of the test set-up.
#   bench_batchnorm_test.sh NNPERF SOURCE_DIR
set -uo pipefail
nnperf=$1 src=$2
build=$(dirname "$nnperf")
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for bad in "DEVICE=tpu" "BATCH=0" "ROUNDS=x"; do
  env "$bad" PEERS_PYTHON=/bin/false OUT="$tmp/bad" bash "$src/scripts/bench_batchnorm.sh" "$build" \
    > "$tmp/bad.log" 2>&1
  [[ $? -eq 2 ]] || { cat "$tmp/bad.log"; fail "$bad not refused with 2"; }
  [[ ! -e $tmp/bad ]] || fail "$bad: wrote $tmp/bad"
done
py=${PEERS_PYTHON:-$src/bench/peers/.venv/bin/python}
if [[ ! -x $py ]] || ! "$py" -c 'import torch' 2> /dev/null; then
  echo "skipped: no python with torch at $py (bench/peers/setup-venv.sh installs it)"
  exit 77
fi
PEERS_PYTHON=$py ROUNDS=1 WARMUP=1 MEASURE=2 PROBLEMS="mb2c3h5 mb1c4h9w7" OUT="$tmp/out" \
  bash "$src/scripts/bench_batchnorm.sh" "$build" > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "rc $?"; }
[[ $(ls "$tmp/out"/ours_*.json "$tmp/out"/torch_*.json | wc -l) -eq 8 ]] || fail "not 8 JSON files"
rows=$(grep -cE '^\| mb(2c3h5|1c4h9w7) \| (forward|backward) \| [0-9.]+ \| .* \| [0-9.]+ \|$' "$tmp/out/table.md")
[[ $rows -eq 4 ]] || { cat "$tmp/out/table.md"; fail "$rows table rows, not 4"; }
grep -q '^bn forward own: at most PyTorch.s time on [0-2] of 2 shapes' "$tmp/out/table.md" &&
  grep -q '^bn backward own: ' "$tmp/out/table.md" || { cat "$tmp/out/table.md"; fail "no line per pass"; }
echo "bench_batchnorm ok"
