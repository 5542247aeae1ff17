#!/usr/bin/env python3
"""Markdown table of a GPU bundle's conv stage: nnperf's cuDNN `find` against PyTorch per layer.

  scripts/gpu_conv_table.py OUT_DIR [--batch B] [--launch eager|graph]

Reads what `bash .gpu/run.sh conv` (scripts/gpu_run.sh) leaves under OUT_DIR for one batch and
launch: `bench conv2d --device cuda` JSON per layer in conv_mbB/ (graph: conv_graph_mbB/) and the
PyTorch peer's conv_torch_mbB.json (conv_torch_graph_mbB.json). Per layer: the algorithm nnperf's
find ranked first and its row's median ms (the row timed alternately with the others, not find's
own figure), the fastest checked row, PyTorch's fastest variant (cudnn.benchmark, TF32 off), and
find / PyTorch (<= 1: ours at most PyTorch's time). Then the counts and sums the issue's target
reads: layers where find <= PyTorch, the median ratio, the summed times; with engine rows (`bench
conv2d --engines`), how often an engine was the fastest row and what the fastest legacy and engine
rows sum to over the layers that have both. Standard library only.
"""

import argparse
import glob
import json
import os
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"gpu_conv_table: {path}: {e}")


def torch_times(path):
    """PyTorch's fastest variant per problem (median ms)."""
    best = {}
    for r in load(path).get("records", []):
        if r.get("status") != "ok":
            continue
        p, ms = r["problem"], float(r["time_ms_median"])
        best[p] = min(ms, best.get(p, ms))
    return best


def layer_row(path):
    """One bench conv2d JSON: (layer, problem, find's choice, its ms, fastest row, its ms,
    fastest legacy ms, fastest engine ms); None where a figure is missing."""
    j = load(path)
    ok = {r["algorithm"]: r for r in j.get("records", []) if r.get("status") == "ok"}
    if not ok:
        return None
    problem = next(iter(ok.values()))["problem"]
    served = [a for a in j.get("context", {}).get("find", []) if a.get("status") == "CUDNN_STATUS_SUCCESS"]
    choice = served[0]["algorithm"] if served else None
    choice_ms = float(ok[choice]["time_ms_median"]) if choice in ok else None
    ms = {a: float(r["time_ms_median"]) for a, r in ok.items()}
    fastest = min(ms, key=ms.get)
    legacy = [v for a, v in ms.items() if not a.startswith("engine:")]
    engine = [v for a, v in ms.items() if a.startswith("engine:")]
    name = os.path.splitext(os.path.basename(path))[0]
    return (name, problem, choice, choice_ms, fastest, ms[fastest],
            min(legacy) if legacy else None, min(engine) if engine else None)


def fmt(v):
    return "-" if v is None else f"{v:.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--launch", choices=["eager", "graph"], default="graph")
    a = ap.parse_args()
    tag = "graph_" if a.launch == "graph" else ""
    layers_dir = os.path.join(a.out_dir, f"conv_{tag}mb{a.batch}")
    torch_path = os.path.join(a.out_dir, f"conv_torch_{tag}mb{a.batch}.json")
    files = sorted(glob.glob(os.path.join(layers_dir, "*.json")))
    if not files:
        sys.exit(f"gpu_conv_table: no bench conv2d JSON in {layers_dir}")
    torch = torch_times(torch_path)
    rows = [r for r in (layer_row(f) for f in files) if r is not None]
    print(f"### Conv layers at batch {a.batch}, launched {a.launch} ({len(rows)} layers)\n")
    print("| layer | problem | find's choice | ms | fastest row | ms | PyTorch ms | find / PyTorch |")
    print("|---|---|---|---:|---|---:|---:|---:|")
    ratios, ours, theirs, fastest_sum = [], 0.0, 0.0, 0.0
    for name, problem, choice, choice_ms, fastest, fastest_ms, _, _ in rows:
        t = torch.get(problem)
        ratio = choice_ms / t if choice_ms is not None and t else None
        print(f"| {name} | {problem} | {choice or '-'} | {fmt(choice_ms)} | {fastest} | "
              f"{fastest_ms:.4f} | {fmt(t)} | {'-' if ratio is None else f'{ratio:.2f}'} |")
        if ratio is not None:
            ratios.append(ratio)
            ours += choice_ms
            theirs += t
            fastest_sum += fastest_ms
    print()
    if ratios:
        met = sum(r <= 1.0 for r in ratios)
        print(f"find <= PyTorch on {met} of {len(ratios)} layers; median find / PyTorch "
              f"{statistics.median(ratios):.2f}; sums over them: find {ours:.3f} ms, PyTorch "
              f"{theirs:.3f} ms, our fastest rows {fastest_sum:.3f} ms")
    else:
        print("no layer has both find's row and PyTorch's time")
    both = [(lg, en) for *_, lg, en in rows if lg is not None and en is not None]
    if both:
        won = sum(1 for r in rows if r[4].startswith("engine:"))
        print(f"engines: the fastest row on {won} of {len(rows)} layers; over the {len(both)} "
              f"layers with both, fastest legacy rows sum to {sum(l for l, _ in both):.3f} ms, "
              f"fastest engine rows to {sum(e for _, e in both):.3f} ms")


if __name__ == "__main__":
    main()
