#!/usr/bin/env bash
# `nnperf sweep run --slurm` on a real single-node Slurm cluster (Debian's slurmctld, slurmd,
# slurm-client, munge, started by scripts/slurm-local.sh and stopped by their process ids):
#  1. a 24-cell profile sweep in a folder whose path has spaces, quotes and $ runs as one job array
#     (%2), is followed with `nnperf status` until it merges, with one %A_%a log per task;
#  2. the same sweep run with --local merges to the same CSVs, byte for byte once the timing
#     columns are left out, and neither has a lost or duplicated row;
#  3. a cell cancelled mid-way (scancel) is resubmitted alone and continues where its rows stop
#     (its log says how many sizes it profiled and how many were already done).
# Exit 77 (ctest: skipped, with the reason) when Slurm cannot be started here, or when the cell
# of part 3 finishes before it can be cancelled.
#   slurm_sweep_test.sh NNPERF SLURM_LOCAL_SH
set -euo pipefail
nnperf=$1
slurm_local=$2
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || skip "starting slurmctld, slurmd and munged needs root"
for p in slurmctld slurmd sbatch scancel munged; do
  command -v "$p" >/dev/null || skip "$p is not installed (scripts/install-deps.sh installs slurmctld slurmd slurm-client munge)"
done

tmp=$(mktemp -d /tmp/nnperf-slurm-test.XXXXXX)
started=0
cleanup() {
  local rc=$?
  set +e
  if [ "$started" = 1 ]; then bash "$slurm_local" down "$tmp/state"; fi
  rm -rf "$tmp" 2>/dev/null || echo "note: $tmp was left behind" >&2
  exit "$rc"
}
trap cleanup EXIT
if ! pgrep -x slurmctld >/dev/null; then
  bash "$slurm_local" up "$tmp/state" >/dev/null 2>"$tmp/up.err" || skip "Slurm did not start: $(tail -n 1 "$tmp/up.err")"
  started=1
fi
sinfo -h -o '%T' | grep -q -E 'idle|mixed|allocated' || skip "the Slurm node is not up: $(sinfo 2>&1 | tail -n 1)"

wait_merged() {  # DIR SECONDS
  local out
  for _ in $(seq 1 "$2"); do
    out=$("$nnperf" status "$1")
    if grep -q '^merged ' <<<"$out"; then return 0; fi
    if grep -q '^failed ' <<<"$out"; then echo "$out" >&2; fail "a cell failed"; fi
    sleep 1
  done
  echo "$out" >&2
  fail "$1 did not finish in $2 s"
}

# 1. 24 cells through Slurm
sw="$tmp/slurm sweep 'q' \$HOME"
loc="$tmp/local sweep"
plan=(--profile --models resnet18,mobilenet_v2 --algorithms gemm,direct,implicit_gemm --sizes 32,40,48,56
      --sizes-per-cell 1 --stage sanity --threads 1)
"$nnperf" sweep plan "${plan[@]}" --out-dir "$sw" >/dev/null
"$nnperf" sweep plan "${plan[@]}" --out-dir "$loc" >/dev/null
submitted=$("$nnperf" sweep run "$sw" --slurm --max-parallel 2 --time 10)
echo "$submitted"
grep -q "submitted job array [0-9]* (24 cells: 0-23)" <<<"$submitted" || fail "unexpected submission: $submitted"
wait_merged "$sw" 600
[ "$(ls "$sw/slurm/"*_*.out | wc -l)" = 24 ] || fail "expected 24 %A_%a logs in $sw/slurm"
"$nnperf" status "$sw" | grep -q "^24 cells: 24 done" || fail "status does not say 24 done"

# 2. the same sweep here; merged CSVs equal apart from timing columns
"$nnperf" sweep run "$loc" --local --jobs 2 >/dev/null
python3 - "$sw/merged" "$loc/merged" <<'PY'
import csv, os, sys
timing = {"mean", "std", "min", "max", "median", "power_mean_w", "power_std_w", "power_min_w",
          "power_max_w", "energy_total_j", "energy_per_inference_j", "power_samples",
          "layers_sum_ms", "mean_ms", "std_ms", "percentage"}
a, b = sys.argv[1], sys.argv[2]
files = sorted(os.path.relpath(os.path.join(r, f), a) for r, _, fs in os.walk(a) for f in fs if f.endswith(".csv"))
assert len(files) == 12, files  # 6 model x algorithm groups x (overall, layers)
for rel in files:
    ra = list(csv.reader(open(os.path.join(a, rel))))
    rb = list(csv.reader(open(os.path.join(b, rel))))
    keep = [i for i, c in enumerate(ra[0]) if c not in timing]
    pa = [[r[i] for i in keep] for r in ra]
    pb = [[r[i] for i in keep] for r in rb]
    assert pa == pb, f"{rel}: the Slurm and local rows differ"
    if rel.endswith("_overall.csv"):
        sizes = [r[ra[0].index("input_size")] for r in ra[1:]]
        assert sorted(sizes) == ["32", "40", "48", "56"], f"{rel}: sizes {sizes}"
print(f"merged CSVs equal apart from timing: {len(files)} files")
PY

# 3. a cancelled cell, resubmitted alone
one="$tmp/one"
"$nnperf" sweep plan --profile --models resnet18 --algorithms gemm --sizes 48,56,64,72,80,88,96,104 --stage sanity --out-dir "$one" >/dev/null
job=$("$nnperf" sweep run "$one" --slurm | sed -n 's/.*submitted job array \([0-9]*\).*/\1/p')
[ -n "$job" ] || fail "no job id"
overall="$one/cells/resnet18_gemm_48-104/resnet18_gemm_overall.csv"
for _ in $(seq 1 1200); do [ -f "$overall" ] && [ "$(wc -l < "$overall")" -ge 2 ] && break; sleep 0.1; done
scancel "$job"
for _ in $(seq 1 100); do squeue -h -j "$job" 2>/dev/null | grep -q . || break; sleep 0.2; done
rows=$(($(wc -l < "$overall" 2>/dev/null || echo 0) - 1))
echo "cancelled with $rows of 8 rows"
[ "$rows" -ge 1 ] || fail "the cell wrote no row within 2 minutes of its submission"
[ "$rows" -lt 8 ] || skip "parts 1 and 2 passed, but the cell finished all 8 sizes before scancel, so the resubmission was not tested"
again=$("$nnperf" sweep run "$one" --slurm)
grep -q "(1 cell: 0)" <<<"$again" || fail "the resubmission did not submit exactly the unfinished cell: $again"
wait_merged "$one" 600
[ "$(($(wc -l < "$one/merged/resnet18_gemm/resnet18_gemm_overall.csv") - 1))" = 8 ] || fail "expected 8 merged rows"
# The resubmitted cell resumed: it profiled only the sizes the cancelled one had not written.
resumed="($((8 - rows)) sizes profiled, $rows already done)"
grep -qF "$resumed" "$one/logs/resnet18_gemm_48-104.log" ||
  fail "the cell log does not say \"$resumed\": $(grep 'sizes profiled' "$one/logs/resnet18_gemm_48-104.log")"
echo "ok"
