#!/usr/bin/env python3
"""Markdown tables of a scripts/bench_conv.sh run (the README's per-layer table).

  scripts/conv_table.py OUT_DIR [--peak GFLOPS]

Per batch size, per layer of OUT_DIR/layers.tsv: the descriptor, how many layers of the model
have that shape, GFLOP (direct-convolution count, 2 per multiply-add), nnperf's fastest algorithm
with its median ms, GFLOP/s and % of the 1-thread FMA peak x threads, PyTorch's faster variant
(NCHW or channels_last) and oneDNN's fastest algorithm (median ms), the time ratios ours/torch and
ours/oneDNN (< 1: ours faster), and on 3x3 stride-1 layers gemm ms / winograd ms. Then, per
model, the conv time summed over its layers (count x median); then whole-model latency (median
over rounds of each run's median; min over all runs in brackets). Standard library only.

The peak is the largest 1-thread FMA figure measured in the run (peaks.json, peaks_end.json and
every `nnperf bench` JSON context): interference only ever lowers a measured peak.
"""

import argparse
import csv
import glob
import json
import os
import re
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def parse(desc):
    p = {"g": 1, "mb": 1, "sh": 1, "ph": 0, "dh": 1}
    body = desc.split(":")[-1].split("_")[-1]
    p.update({k: int(v) for k, v in re.findall(r"([a-z]+)(\d+)", body)})
    p.setdefault("ih", p.get("iw"))
    p.setdefault("kh", p.get("kw"))
    for w, h in (("iw", "ih"), ("kw", "kh"), ("sw", "sh"), ("pw", "ph"), ("dw", "dh")):
        p.setdefault(w, p[h])
    return p


def gflop(p):
    oh = (p["ih"] + 2 * p["ph"] - p["dh"] * (p["kh"] - 1) - 1) // p["sh"] + 1
    ow = (p["iw"] + 2 * p["pw"] - p["dw"] * (p["kw"] - 1) - 1) // p["sw"] + 1
    return 2.0 * p["mb"] * p["oc"] * oh * ow * (p["ic"] // p["g"]) * p["kh"] * p["kw"] * 1e-9


def ok_records(j):
    if not j:
        return []
    return [r for r in j.get("records", []) if r.get("status", "ok") == "ok" and "time_ms_median" in r]


def best(records):
    return min(records, key=lambda r: r["time_ms_median"]) if records else None


def peak_1thread(out, ours_jsons):
    """Largest measured 1-thread FMA GFLOP/s in the run, and where it came from."""
    cands = []
    for name in ("peaks.json", "peaks_end.json"):
        j = load(os.path.join(out, name))
        for env in (j or {}).values():
            v = (env.get("measured") or {}).get("fma_gflops_per_s_1thread") if isinstance(env, dict) else None
            if v:
                cands.append((v, name))
    for j in ours_jsons:
        ctx = (j or {}).get("context", {})
        if ctx.get("peak_gflops_per_s") and ctx.get("threads"):
            cands.append((ctx["peak_gflops_per_s"] / ctx["threads"], "nnperf bench context"))
    return max(cands) if cands else (None, None)


def fmt(v, spec=".2f", none="–"):
    return none if v is None else format(v, spec)


def short_onednn(r):
    if not r:
        return "–"
    name = r["algorithm"].replace("onednn_", "")
    return f"{r['time_ms_median']:.2f} ({name}, {r.get('impl', '?')})"


def layer_tables(out, rows, threads, peak1, lines, conv_pass="forward"):
    summary = []
    what = "" if conv_pass == "forward" else f" ({conv_pass})"
    for batch in sorted({r["batch"] for r in rows}, key=int):
        brows = [r for r in rows if r["batch"] == batch]
        lines.append(f"### Conv layers{what}, batch {batch}, {threads} thread(s)\n")
        lines.append("| model | layer | × | descriptor | GFLOP | ours best | ms | GFLOP/s | % peak "
                     "| torch best ms | oneDNN best ms | ours/torch | ours/oneDNN | gemm/winograd |")
        lines.append("|---|---|--:|---|--:|---|--:|--:|--:|---|---|--:|--:|--:|")
        totals = {}
        for r in brows:
            p = parse(r["problem"])
            gf = gflop(p)
            ours_recs = ok_records(r["ours"])
            o = best(ours_recs)
            t = best(ok_records(r["torch"]))
            d = best(ok_records(r["onednn"]))
            by_algo = {x["algorithm"]: x["time_ms_median"] for x in ours_recs}
            wino = "–"
            if (p["kh"], p["kw"], p["sh"], p["sw"], p["dh"], p["dw"], p["g"]) == (3, 3, 1, 1, 1, 1, 1):
                if "gemm" in by_algo and "winograd" in by_algo:
                    wino = f"{by_algo['gemm'] / by_algo['winograd']:.2f}"
            gfs = gf / (o["time_ms_median"] * 1e-3) if o else None
            pct = 100 * gfs / (peak1 * threads) if (gfs and peak1) else None
            tname = t["algorithm"].replace("torch_", "") if t else ""
            lines.append(
                f"| {r['model']} | {r['layer']} | {r['count']} | `{r['problem']}` | {gf:.3f} "
                f"| {o['algorithm'] if o else '–'} | {fmt(o and o['time_ms_median'])} | {fmt(gfs, '.1f')} "
                f"| {fmt(pct, '.0f')}{'%' if pct is not None else ''} "
                f"| {fmt(t and t['time_ms_median'])}{f' ({tname})' if t else ''} | {short_onednn(d)} "
                f"| {fmt(o and t and o['time_ms_median'] / t['time_ms_median'])} "
                f"| {fmt(o and d and o['time_ms_median'] / d['time_ms_median'])} | {wino} |")
            tot = totals.setdefault(r["model"], {"ours": 0.0, "torch": 0.0, "onednn": 0.0, "n": 0, "missing": set()})
            tot["n"] += r["count"]
            for key, rec in (("ours", o), ("torch", t), ("onednn", d)):
                if rec:
                    tot[key] += r["count"] * rec["time_ms_median"]
                else:
                    tot["missing"].add(key)
            summary.append((batch, r, p, o, t, d, wino))
        lines.append("")
        lines.append(f"Conv time per model at batch {batch} (sum over the layers measured of count × median ms):\n")
        lines.append("| model | conv layers measured | ours ms | torch ms | oneDNN ms | ours/torch | ours/oneDNN |")
        lines.append("|---|--:|--:|--:|--:|--:|--:|")
        for model, tot in totals.items():
            def cell(key):
                return "–" if key in tot["missing"] else f"{tot[key]:.1f}"

            def ratio(key):
                return "–" if tot["missing"] & {"ours", key} else f"{tot['ours'] / tot[key]:.2f}"

            lines.append(f"| {model} | {tot['n']} | {cell('ours')} | {cell('torch')} | {cell('onednn')} "
                         f"| {ratio('torch')} | {ratio('onednn')} |")
        lines.append("")
    return summary


def targets(summary, lines, conv_pass="forward"):
    """The issue's per-layer targets, counted over the layers measured (a backward pass: against
    PyTorch only, the one peer that times it)."""
    vs_torch = [(o["time_ms_median"] <= t["time_ms_median"]) for _, _, _, o, t, _, _ in summary if o and t]
    vs_onednn = [(o["time_ms_median"] <= 1.3 * d["time_ms_median"]) for _, _, _, o, _, d, _ in summary if o and d]
    wino = [float(w) >= 1.5 for _, _, p, _, _, _, w in summary if w != "–" and min(p["ic"], p["oc"]) >= 64]
    lines.append("Targets over the layers above (distinct shapes × batch sizes):\n")
    lines.append(f"- ours best ≤ torch best: {sum(vs_torch)} of {len(vs_torch)}")
    if conv_pass == "forward":
        lines.append(f"- ours best ≤ 1.3 × oneDNN best: {sum(vs_onednn)} of {len(vs_onednn)}")
        lines.append(f"- winograd ≥ 1.5 × faster than gemm (3x3 s1, ≥ 64 channels): {sum(wino)} of {len(wino)}")
    lines.append("")


def overall_csv(path):
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
        return float(rows[-1]["median"]), float(rows[-1]["min"])
    except (OSError, KeyError, ValueError, IndexError):
        return None


def model_table(out, lines):
    rounds = sorted(glob.glob(os.path.join(out, "models", "r*")))
    if not rounds:
        return
    data = {}  # model -> variant -> list of (median, min)
    threads = None
    for d in rounds:
        for path in glob.glob(os.path.join(d, "ours_*", "*_find_overall.csv")):
            variant = "ours_foldbn" if os.path.basename(os.path.dirname(path)).startswith("ours_foldbn_") else "ours"
            model = os.path.basename(path)[: -len("_find_overall.csv")]
            v = overall_csv(path)
            if v:
                data.setdefault(model, {}).setdefault(variant, []).append(v)
        for path in glob.glob(os.path.join(d, "torch_*.json")):
            j = load(path)
            if not j:
                continue
            threads = j.get("context", {}).get("threads", threads)
            for r in j.get("records", []):
                data.setdefault(r["model"], {}).setdefault(r["algorithm"], []).append(
                    (r["time_ms_median"], r["time_ms_min"]))
    if not data:
        return

    def agg(vals):
        return (statistics.median(v[0] for v in vals), min(v[1] for v in vals)) if vals else None

    lines.append(f"### Whole-model latency, batch 1, 224x224, {threads or '?'} thread(s), "
                 f"{len(rounds)} round(s) alternating\n")
    lines.append("ms: median over rounds of each run's median [min over all runs].\n")
    lines.append("| model | ours find | ours find + fold-bn | torch NCHW | torch channels_last | ours best / torch best |")
    lines.append("|---|--:|--:|--:|--:|--:|")
    for model in sorted(data):
        v = {k: agg(x) for k, x in data[model].items()}

        def cell(k):
            return f"{v[k][0]:.1f} [{v[k][1]:.1f}]" if v.get(k) else "–"

        ours = [v[k][0] for k in ("ours", "ours_foldbn") if v.get(k)]
        torch_ = [v[k][0] for k in ("torch_nchw", "torch_channels_last") if v.get(k)]
        ratio = f"{min(ours) / min(torch_):.2f}" if ours and torch_ else "–"
        lines.append(f"| {model} | {cell('ours')} | {cell('ours_foldbn')} | {cell('torch_nchw')} "
                     f"| {cell('torch_channels_last')} | {ratio} |")
    lines.append("")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="a scripts/bench_conv.sh output folder")
    ap.add_argument("--peak", type=float, default=None, help="1-thread FMA GFLOP/s (default: measured in the run)")
    a = ap.parse_args(argv)
    out = a.out
    rows = []
    tsv = os.path.join(out, "layers.tsv")
    if os.path.exists(tsv):
        with open(tsv) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) != 6:
                    continue
                batch, model, layer, count, problem, base = parts
                base = os.path.join(out, base)
                rows.append({"batch": batch, "model": model, "layer": layer, "count": int(count),
                             "problem": problem, "ours": load(base + ".ours.json"),
                             "torch": load(base + ".torch.json"), "onednn": load(base + ".onednn.json")})
    peak1, src = (a.peak, "--peak") if a.peak else peak_1thread(out, [r["ours"] for r in rows])
    threads = next((r["ours"]["context"]["threads"] for r in rows if r["ours"]), 1)
    lines = []
    versions = []
    for key in ("torch", "onednn"):
        j = next((r[key] for r in rows if r[key]), None)
        if j:
            versions.append(f"{key} {j.get('version', '?').split(' ')[0]}")
    if rows:
        ours_ctx = next((r["ours"]["context"] for r in rows if r["ours"]), {})
        lines.append(f"nnperf {ours_ctx.get('commit', '?')}; {', '.join(versions)}; "
                     f"peak {fmt(peak1, '.1f')} GFLOP/s per thread ({src}); "
                     f"ratios are time ratios (< 1: ours faster); GFLOP = direct-convolution count, so "
                     f"Winograd/FFT GFLOP/s can exceed the FMA peak.\n")
        conv_pass = ours_ctx.get("pass", "forward")
        summary = layer_tables(out, rows, threads, peak1, lines, conv_pass)
        targets(summary, lines, conv_pass)
    model_table(out, lines)
    if not lines:
        print(f"conv_table: nothing to report in {out}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
