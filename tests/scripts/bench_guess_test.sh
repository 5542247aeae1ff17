#!/usr/bin/env bash
# scripts/bench_guess.sh end to end on ResNet-18 at batch 2, 32x32 (11 distinct convolution
# problems, two of them cropped): a JSON per problem and pass (and per cropped problem), a table
# row per problem and pass naming guess's row and the fastest, a summary line per pass; bad
# settings exit 2 before anything is written; guess_table.py refuses a CSV that is not a
# profile's layers CSV with a one-line error.
#   bench_guess_test.sh NNPERF SOURCE_DIR
set -uo pipefail
nnperf=$1 src=$2
build=$(dirname "$nnperf")
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for bad in "BATCH=0" "THREADS=x" "PASSES=sideways" "MODEL=../x" "WARMUP=-1"; do
  env "$bad" OUT="$tmp/bad" bash "$src/scripts/bench_guess.sh" "$build" > "$tmp/bad.log" 2>&1
  [[ $? -eq 2 ]] || { cat "$tmp/bad.log"; fail "$bad not refused with 2"; }
  [[ ! -e $tmp/bad ]] || fail "$bad: wrote $tmp/bad"
  grep -q '^bench_guess: ' "$tmp/bad.log" || fail "$bad: no one-line reason"
done
MODEL=resnet18 BATCH=2 SIZE=32 WARMUP=0 MEASURE=1 OUT="$tmp/out" \
  bash "$src/scripts/bench_guess.sh" "$build" > "$tmp/log" 2>&1 || { cat "$tmp/log"; fail "rc $?"; }
n=$(ls "$tmp/out"/bench/*_{forward,backward-data,backward-weights}.json | wc -l)
[[ $n -eq 33 ]] || fail "$n JSON files, not 33 (11 problems x 3 passes)"
c=$(ls "$tmp/out"/bench/*.cropped.json | wc -l)
[[ $c -eq 6 ]] || fail "$c cropped JSON files, not 6 (2 problems x 3 passes)"
table=$tmp/out/guess.md
rows=$(grep -cE '^\| mb2ic[0-9]+ih[0-9]+oc[0-9]+[a-z0-9]*( \(runs mb2[a-z0-9]+\))? \| (forward|backward-data|backward-weights) \| [0-9]+ \| [a-z_]+ \| [0-9.]+ \| [0-9.]+ \| [a-z_]+ \| [0-9.]+ \| [0-9.]+ \|$' "$table")
[[ $rows -eq 33 ]] || { cat "$table"; fail "$rows problem rows, not 33"; }
[[ $(grep -c '(runs mb2ic512ih1oc512kh1)' "$table") -eq 3 ]] || fail "layer4's 3x3 on 1x1 maps not shown cropped"
for p in forward backward-data backward-weights; do
  grep -qE "^guess $p: fastest on [0-9]+ of 11 problems, within 10% on [0-9]+; [0-9.]+ ms over the layers against [0-9.]+ ms \([0-9.]+x\)$" "$table" ||
    { cat "$table"; fail "no summary line for $p"; }
done
# The summed guess time is at least the summed fastest time, pass by pass: one totals row per
# pass, each over the 11 problems.
totals=$(awk -F'|' '/^\| (forward|backward-data|backward-weights) \| [0-9]+ \|/ {
    n++; if ($3 + 0 != 11 || $6 + 0 < $7 + 0) bad++ } END { print n + 0, bad + 0 }' "$table")
[[ $totals == "3 0" ]] ||
  { cat "$table"; fail "totals rows (found, bad) = ($totals), not 3 rows of 11 problems with guess >= fastest"; }
printf 'a,b\n1,2\n' > "$tmp/x.csv"
python3 "$src/scripts/guess_table.py" table "$tmp/x.csv" "$tmp/out/bench" > "$tmp/err.out" 2> "$tmp/err.log"
[[ $? -eq 1 && $(wc -l < "$tmp/err.log") -eq 1 ]] && grep -q "x.csv: no problem column" "$tmp/err.log" ||
  { cat "$tmp/err.log"; fail "a foreign CSV was not refused in one line"; }
echo "bench_guess ok"
