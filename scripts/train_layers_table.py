#!/usr/bin/env python3
"""Where one training step's time goes, nnperf against PyTorch, layer by layer: nnperf's
`train --profile-one-step` (one_step_layers.csv) beside bench/peers/train_layers_torch.py's CSV
of the same model, batch and input (torchvision's module names are nnperf's node names).

  train_layers_table.py OURS_CSV TORCH_CSV [--torch-json J] [--top 12]

Prints markdown: per phase (forward, backward) and layer kind, the layers' summed ms on each
side and the ratio, plus each phase's time outside any layer row (the marks' gaps; on PyTorch's
side also what no leaf module does, in models the peer does not patch); then the layers where
nnperf spends the most time over PyTorch's; then one summary line (`train layers: ...`) for
gpu_run.sh's summary.txt and bench_train_cnn.sh's summary.md. Both sides' figures are hooked
steps (a mark around every layer; on the CPU PyTorch's hooks run on the timed thread, so its rows
carry their cost); the JSON's unhooked step time is quoted when given. nnperf's ReLU rows with a
`fused_into` (a ReLU run inside the BatchNorm before it) form their own group, "activation (in
batchnorm)", and each phase then gets a "batchnorm + activation" row: those ReLUs' time is in
nnperf's batchnorm rows, so the two kinds compare only together.
"""

import argparse
import csv
import json
import sys

KINDS = {  # layer classes (nnperf's kinds, torch's class names) to the table's groups
    "Conv2d": "conv", "BatchNorm2d": "batchnorm", "Activation": "activation", "ReLU": "activation",
    "ReLU6": "activation", "SiLU": "activation", "Hardswish": "activation", "GELU": "activation",
    "MaxPool2d": "pool", "AvgPool2d": "pool", "AdaptiveAvgPool2d": "pool", "Linear": "linear",
    "Add": "add", "Concat": "concat", "Dropout": "dropout", "Flatten": "flatten",
}
PHASES = ("forward", "backward")
FUSED = "activation (in batchnorm)"


def read_rows(path):
    """{(name, phase): (kind group, ms)} of the layer rows, and {phase: ms} of nnperf's step rows
    (empty for PyTorch's CSV, whose phases are in its JSON)."""
    layers, phases = {}, {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            ms = float(r["ms"])
            if r["kind"] == "step":
                phases[r["phase"]] = ms
            elif r["phase"] in PHASES:
                kind = FUSED if r.get("fused_into") else KINDS.get(r["kind"], r["kind"])
                layers[(r["name"], r["phase"])] = (kind, ms)
    return layers, phases


def kind_sums(layers, phase):
    sums = {}
    for (_, p), (kind, ms) in layers.items():
        if p == phase:
            n, t = sums.get(kind, (0, 0.0))
            sums[kind] = (n + 1, t + ms)
    return sums


def ratio(a, b):
    return f"{a / b:.2f}" if b > 0 else "-"


def phase_table(ours, torch, ours_phases, torch_phases):
    lines = ["| phase | kind | nnperf layers | nnperf ms | PyTorch layers | PyTorch ms | nnperf / PyTorch |",
             "|---|---|--:|--:|--:|--:|--:|"]
    summary = []
    for phase in PHASES:
        o, t = kind_sums(ours, phase), kind_sums(torch, phase)
        for kind in sorted(set(o) | set(t), key=lambda k: -max(o.get(k, (0, 0))[1], t.get(k, (0, 0))[1])):
            (on, om), (tn, tm) = o.get(kind, (0, 0.0)), t.get(kind, (0, 0.0))
            lines.append(f"| {phase} | {kind} | {on} | {om:.3f} | {tn} | {tm:.3f} | {ratio(om, tm)} |")
            if kind in ("conv", "batchnorm"):
                summary.append(f"{phase} {kind} {om:.2f} vs {tm:.2f} ms")
        if FUSED in o:
            group = ("batchnorm", "activation", FUSED)
            om = sum(o.get(k, (0, 0.0))[1] for k in group)
            tm = sum(t.get(k, (0, 0.0))[1] for k in group)
            lines.append(f"| {phase} | batchnorm + activation | | {om:.3f} | | {tm:.3f} | {ratio(om, tm)} |")
            summary.append(f"{phase} batchnorm+activation {om:.2f} vs {tm:.2f} ms")
        o_total, t_total = sum(v[1] for v in o.values()), sum(v[1] for v in t.values())
        if phase in ours_phases and phase in torch_phases:
            o_out, t_out = ours_phases[phase] - o_total, torch_phases[phase] - t_total
            lines.append(f"| {phase} | (outside the layer rows) | | {o_out:.3f} | | {t_out:.3f} | |")
            lines.append(f"| {phase} | **phase** | | **{ours_phases[phase]:.3f}** | | "
                         f"**{torch_phases[phase]:.3f}** | **{ratio(ours_phases[phase], torch_phases[phase])}** |")
            summary.append(f"{phase} {ours_phases[phase]:.2f} vs {torch_phases[phase]:.2f} ms")
        else:
            lines.append(f"| {phase} | **layers** | | **{o_total:.3f}** | | **{t_total:.3f}** | "
                         f"**{ratio(o_total, t_total)}** |")
    return lines, summary


def top_layers(ours, torch, top):
    both = [(o[1] - torch[k][1], k, o, torch[k]) for k, o in ours.items() if k in torch]
    both.sort(key=lambda v: -v[0])
    lines = ["| layer | phase | kind | nnperf ms | PyTorch ms | difference ms |", "|---|---|---|--:|--:|--:|"]
    for diff, (name, phase), o, t in both[:top]:
        lines.append(f"| {name} | {phase} | {o[0]} | {o[1]:.3f} | {t[1]:.3f} | {diff:+.3f} |")
    return lines, len(both)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ours", help="nnperf's one_step_layers.csv")
    ap.add_argument("torch", help="train_layers_torch.py's --csv")
    ap.add_argument("--torch-json", help="train_layers_torch.py's --json (phases, unhooked step)")
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args(argv)
    ours, ours_phases = read_rows(a.ours)
    torch, _ = read_rows(a.torch)
    doc = {}
    if a.torch_json:
        with open(a.torch_json) as f:
            doc = json.load(f)
    torch_phases = doc.get("phases_ms", {})
    if not ours or not torch:
        print(f"train_layers_table: no layer rows in {a.ours if not ours else a.torch}", file=sys.stderr)
        return 1
    print("# One training step per layer kind: nnperf and PyTorch, both hooked\n")
    table, summary = phase_table(ours, torch, ours_phases, torch_phases)
    print("\n".join(table))
    lines, matched = top_layers(ours, torch, a.top)
    print(f"\n# The {min(a.top, matched)} layers where nnperf spends the most over PyTorch "
          f"({matched} layer rows in both)\n")
    print("\n".join(lines))
    step = f"; PyTorch's unhooked step {doc['step_ms']:.2f} ms" if "step_ms" in doc else ""
    print(f"\ntrain layers: {'; '.join(summary)}{step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
