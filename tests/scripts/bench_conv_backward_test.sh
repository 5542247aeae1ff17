#!/usr/bin/env bash
# scripts/bench_conv.sh with PASS=backward-weights end to end on two small layers: nnperf and the
# PyTorch peer (conv_torch.py --pass) per layer, no oneDNN peer and no whole models, the table
# headed by the pass with a row per layer; the peer's backward gradients checked against
# autograd's float64 ones first (conv_torch.py --check, both passes, odd shapes); a bad PASS exits
# 2 before anything is written. Exit 77 (skipped, with the reason) without a python that has torch.
#   bench_conv_backward_test.sh NNPERF SOURCE_DIR
set -uo pipefail
nnperf=$1 src=$2
build=$(dirname "$nnperf")
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PASS=sideways PEERS_PYTHON=/bin/false OUT="$tmp/bad" bash "$src/scripts/bench_conv.sh" "$build" \
  > "$tmp/bad.log" 2>&1
[[ $? -eq 2 ]] || { cat "$tmp/bad.log"; fail "PASS=sideways not refused with 2"; }
grep -q "PASS: 'sideways' is not forward, backward-data or backward-weights" "$tmp/bad.log" ||
  { cat "$tmp/bad.log"; fail "PASS refusal does not name the values"; }
[[ ! -e $tmp/bad ]] || fail "PASS=sideways: wrote $tmp/bad"
py=${PEERS_PYTHON:-$src/bench/peers/.venv/bin/python}
if [[ ! -x $py ]] || ! "$py" -c 'import torch' 2> /dev/null; then
  echo "skipped: no python with torch at $py (bench/peers/setup-venv.sh installs it)"
  exit 77
fi
for pass in backward-data backward-weights; do
  "$py" "$src/bench/peers/conv_torch.py" --pass "$pass" --check --warmup 0 --measure 1 \
    --problem mb2ic5ih9oc4kh3sh2ph1 --problem g2mb3ic4ih7iw6oc6kh3ph2dh2 > "$tmp/check.log" 2>&1 ||
    { cat "$tmp/check.log"; fail "conv_torch.py --check --pass $pass"; }
  [[ $(grep -c "^check .* $pass: max |error|" "$tmp/check.log") -eq 2 ]] ||
    { cat "$tmp/check.log"; fail "no check line per problem"; }
done
printf '%s\n' "# two layers" "tiny conv_a 1 mb1ic8ih20oc8kh3ph1" "tiny conv_b 2 mb1ic4ih12oc6kh5sh2ph2" \
  > "$tmp/layers.txt"
PASS=backward-weights PEERS_PYTHON=$py LAYER_FILE="$tmp/layers.txt" BATCHES=2 MODELS= WARMUP=1 \
  MEASURE=2 OUT="$tmp/out" bash "$src/scripts/bench_conv.sh" "$build" > "$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "rc $?"; }
[[ ! -e $tmp/out/errors.txt ]] || { cat "$tmp/out/errors.txt"; fail "steps failed"; }
[[ $(ls "$tmp/out"/layers/mb2/*.ours.json "$tmp/out"/layers/mb2/*.torch.json | wc -l) -eq 4 ]] ||
  fail "not 4 JSON files"
ls "$tmp/out"/layers/mb2/*.onednn.json > /dev/null 2>&1 && fail "a oneDNN peer ran for a backward pass"
[[ ! -e $tmp/out/models ]] || fail "whole models ran for a backward pass"
grep -q '^### Conv layers (backward-weights), batch 2, 1 thread(s)' "$tmp/out/table.md" ||
  { cat "$tmp/out/table.md"; fail "no table headed by the pass"; }
rows=$(grep -cE '^\| tiny \| conv_[ab] \| [12] \| `mb2[a-z0-9]+` \| [0-9.]+ \| (gemm(_batched|_tiled)?|winograd_nonfused) \| [0-9.]+ \| .*\| [0-9.]+ \((nchw|channels_last)\) \| – \| [0-9.]+ \|' "$tmp/out/table.md")
[[ $rows -eq 2 ]] || { cat "$tmp/out/table.md"; fail "$rows layer rows with ours and torch, not 2"; }
grep -q '^- ours best ≤ torch best: [0-2] of 2$' "$tmp/out/table.md" &&
  ! grep -q 'oneDNN best:' "$tmp/out/table.md" || { cat "$tmp/out/table.md"; fail "targets"; }
echo "bench_conv_backward ok"
