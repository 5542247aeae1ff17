#!/usr/bin/env bash
# Runs the PyTorch and NumPy peers one after the other with the same recipe and thread count and
# collects their JSONs, logs and a run.json (command, load, environment) into one folder, for
# nnperf's bench scripts to compare against. Recipe flags after `--` go to both peers unchanged:
#   run_peers.sh -t 1 -o results/peers/mlp001 -- --hidden 128,128,128 --epochs 5
#   run_peers.sh -t 1 -- --hidden 128,128,128 --iters-bench --bench-batches 32,64,128,1024
# The NumPy run alone has OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its environment
# (they pick a slower kernel in a current numpy); numpy.json records the kernel actually used.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
  cat <<EOF
usage: $(basename "$0") [-t THREADS] [-o OUT_DIR] [-p PYTHON] [--only torch|numpy] [--check]
                    [-- RECIPE_FLAGS...]
  -t, --threads N   threads for both peers (default 1)
  -o, --out DIR     output folder (default $repo/results/peers/<YYYYmmdd_HHMMSS>)
  -p, --python PY   python with numpy+torch (default \$PEERS_PYTHON, else the venv of setup-venv.sh)
  --only PEER       run one peer only
  --check           first run check_numpy_vs_torch.py and stop if NumPy and PyTorch disagree
Recipe flags: see mlp_torch.py --help (--hidden, --activation, --optimizer, --lr, --batch-size,
--epochs, --val-split, --seed, --iters-bench, --bench-batches, ...). --threads/--json are set here.
EOF
}

threads=1
out=""
python=${PEERS_PYTHON:-}
only=""
check=0
while (($#)); do
  case $1 in
    -t | --threads) threads=${2:?--threads needs a value}; shift 2 ;;
    -o | --out) out=${2:?--out needs a folder}; shift 2 ;;
    -p | --python) python=${2:?--python needs a path}; shift 2 ;;
    --only) only=${2:?--only needs torch or numpy}; shift 2 ;;
    --check) check=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) echo "run_peers.sh: unknown option '$1' (recipe flags go after --)" >&2; usage >&2; exit 2 ;;
  esac
done
recipe=("$@")

if ! [[ $threads =~ ^[1-9][0-9]*$ ]]; then
  echo "run_peers.sh: --threads expects a positive integer, got '$threads'" >&2
  exit 2
fi
case $only in
  "" | torch | numpy) ;;
  *) echo "run_peers.sh: --only expects torch or numpy, got '$only'" >&2; exit 2 ;;
esac
for f in "${recipe[@]}"; do
  case $f in
    --threads | --threads=* | --json | --json=*)
      echo "run_peers.sh: give the thread count with -t and no --json: they are set here" >&2
      exit 2 ;;
  esac
done

if [[ -z $python ]]; then
  if [[ -x $here/.venv/bin/python ]]; then
    python=$here/.venv/bin/python
  else
    python=$("$here/setup-venv.sh" | tail -n1)
  fi
fi
[[ -z $out ]] && out=$repo/results/peers/$(date +%Y%m%d_%H%M%S)
mkdir -p "$out"
out=$(cd "$out" && pwd)

if ((check)); then
  echo "== check: NumPy peer against PyTorch (float64)"
  "$python" "$here/check_numpy_vs_torch.py" | tee "$out/check.log"
fi

uptime_before=$(uptime)
echo "== $uptime_before"
status=0
peers=(torch numpy)
[[ -n $only ]] && peers=("$only")
for peer in "${peers[@]}"; do
  cmd=("$python" "$here/mlp_$peer.py" "${recipe[@]}" --threads "$threads" --json "$out/$peer.json")
  if [[ $peer == numpy ]]; then
    cmd=(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "${cmd[@]}")
  fi
  echo "== $peer: ${cmd[*]}"
  if ! "${cmd[@]}" 2>&1 | tee "$out/$peer.log"; then
    echo "run_peers.sh: the $peer peer failed (log: $out/$peer.log)" >&2
    status=1
  fi
done
uptime_after=$(uptime)
echo "== $uptime_after"

# run.json: what was run, where, and the load around it.
"$python" - "$out" "$threads" "$uptime_before" "$uptime_after" "${peers[@]}" -- "${recipe[@]}" \
  <<'EOF'
import json, os, socket, sys, datetime
out, threads, up0, up1 = sys.argv[1:5]
rest = sys.argv[5:]
sep = rest.index("--")
peers, recipe = rest[:sep], rest[sep + 1:]
info = {
    "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
    "hostname": socket.gethostname(),
    "threads": int(threads),
    "recipe_flags": recipe,
    "peers": {p: f"{p}.json" for p in peers if os.path.exists(os.path.join(out, f"{p}.json"))},
    "uptime_before": up0.strip(),
    "uptime_after": up1.strip(),
    "env": {v: os.environ.get(v) for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")},
    "numpy_env_unset": ["OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"],
}
summary = []
for p in info["peers"]:
    with open(os.path.join(out, f"{p}.json")) as f:
        r = json.load(f)
    if r.get("mode") == "train":
        summary.append(f"{p:6s} {r['version']:16s} test_acc {r['test_acc']:.4f}  "
                       f"MEASURED_SEC={r['measured_sec']:.6f} IMGS_PER_SEC={r['imgs_per_sec']:.2f} "
                       f"(cpu_sec {r['cpu_sec']:.3f})")
    else:
        for b in r["records"]:
            summary.append(f"{p:6s} {r['version']:16s} batch {b['batch_size']:5d}  train_iter "
                           f"{b['train_iter_median_ms']:.4f} ms  "
                           f"forward {b['forward_median_ms']:.4f} ms  "
                           f"(cpu medians {b['train_iter_cpu_median_ms']:.4f} / "
                           f"{b['forward_cpu_median_ms']:.4f} ms)")
    if p == "numpy":
        info["numpy_blas_kernel"] = r.get("blas_kernel")
with open(os.path.join(out, "run.json"), "w") as f:
    json.dump(info, f, indent=2)
    f.write("\n")
print("== summary (" + out + ")")
print("\n".join(summary))
EOF
exit $status
