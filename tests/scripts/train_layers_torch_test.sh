#!/usr/bin/env bash
# bench/peers/train_layers_torch.py against real PyTorch, on the CPU: for ResNet-18, ResNet-50
# and VGG-16 (batch 2, 32x32), one training step profiled by nnperf (`train --profile-one-step`)
# and by the peer must give the same layer rows: the same names, phases and kinds (the residual
# additions and flatten included, and the first convolution's backward, whose row the peer ends at
# its weight's gradient), every time positive, none on one side only; then
# scripts/train_layers_table.py renders them.
# Exit 77 (skipped, with the reason) without a python that has torch and torchvision: the peers'
# venv (bench/peers/setup-venv.sh, several GB from PyPI) is not part of the test set-up.
#   train_layers_torch_test.sh NNPERF SOURCE_DIR
set -uo pipefail
nnperf=$1 src=$2
py=${PEERS_PYTHON:-$src/bench/peers/.venv/bin/python}
if [[ ! -x $py ]] || ! "$py" -c 'import torch, torchvision' 2> /dev/null; then
  echo "skipped: no python with torch and torchvision at $py (bench/peers/setup-venv.sh installs them)"
  exit 77
fi
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
for model in resnet18 resnet50 vgg16; do
  "$nnperf" train --model "$model" --synthetic --input-size 32 --batch-size 2 --num-classes 10 \
    --limit-train 4 --limit-test 2 --profile-one-step --warmup-iters 1 --threads 1 \
    --out-dir "$tmp/ours_$model" > "$tmp/ours_$model.log" 2>&1 ||
    { tail -n 5 "$tmp/ours_$model.log"; fail "nnperf $model"; }
  "$py" -W ignore "$src/bench/peers/train_layers_torch.py" --model "$model" --batch-size 2 \
    --input-size 32 --num-classes 10 --device cpu --warmup-iters 1 --measure 2 \
    --csv "$tmp/torch_$model.csv" --json "$tmp/torch_$model.json" > "$tmp/torch_$model.log" 2>&1 ||
    { tail -n 5 "$tmp/torch_$model.log"; fail "train_layers_torch.py $model"; }
  "$py" - "$tmp/ours_$model/one_step_layers.csv" "$tmp/torch_$model.csv" "$src/scripts" "$model" <<'EOF' || exit 1
import csv, sys
sys.path.insert(0, sys.argv[3])
from train_layers_table import KINDS
def rows(path):
    out = {}
    for r in csv.DictReader(open(path)):
        if r["kind"] != "step":
            out[(r["name"], r["phase"])] = (KINDS.get(r["kind"], r["kind"]), float(r["ms"]))
    return out
ours, torch = rows(sys.argv[1]), rows(sys.argv[2])
only_ours, only_torch = sorted(set(ours) - set(torch)), sorted(set(torch) - set(ours))
kinds = [k for k in set(ours) & set(torch) if ours[k][0] != torch[k][0]]
bad = [("torch",) + k for k, v in torch.items() if not v[1] > 0]
bad += [("nnperf",) + k for k, v in ours.items() if not v[1] > 0]
first = "features.0" if sys.argv[4].startswith("vgg") else "conv1"
if not ours or only_ours or only_torch or kinds or bad or (first, "backward") not in torch:
    sys.exit(f"FAIL: {sys.argv[4]}: {len(ours)} nnperf rows, only nnperf {only_ours[:5]}, "
             f"only torch {only_torch[:5]}, other kinds {kinds[:5]}, times not positive {bad[:5]}")
print(f"{sys.argv[4]}: {len(torch)} rows named as nnperf's")
EOF
  "$py" "$src/scripts/train_layers_table.py" "$tmp/ours_$model/one_step_layers.csv" \
    "$tmp/torch_$model.csv" --torch-json "$tmp/torch_$model.json" > "$tmp/table_$model.md" ||
    fail "table $model"
  grep -q "^train layers: forward conv .*PyTorch's unhooked step" "$tmp/table_$model.md" ||
    fail "table $model: no summary line"
done
echo "train_layers_torch ok"
