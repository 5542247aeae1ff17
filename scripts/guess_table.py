#!/usr/bin/env python3
"""How good is `guess` on a model's training step: the table of a scripts/bench_guess.sh run.

  guess_table.py problems LAYERS_CSV     the distinct convolution problems of a profile's layers
                                         CSV, in order, one per line
  guess_table.py run-as BENCH_JSON       the cropped problem a `bench conv2d` JSON names
                                         (context.layers_run_as), or nothing
  guess_table.py table LAYERS_CSV DIR    the Markdown table (stdout)

LAYERS_CSV is `nnperf profile --pass train --algorithm guess`'s layers CSV: per convolution
layer its problem and the rows guess picked for the forward (algorithm_used), backward-data and
backward-weights passes. DIR holds `nnperf bench conv2d --json` files named
<problem>_<pass>.json, and <problem>_<pass>.cropped.json for a problem whose layers run cropped
(then that one is read). Per problem and pass: the row guess picked, its median time and modelled
cost, the fastest row and how much slower guess's ran. Then per pass, summed over the model's
layers (a problem counts once per layer that has it): guess's time against the fastest rows',
and how many problem-passes guess picked the fastest row or one within 10% of it. Standard
library only.
"""

import argparse
import csv
import json
import os
import sys

PASSES = ("forward", "backward-data", "backward-weights")
PICK_COLUMN = {"forward": "algorithm_used", "backward-data": "backward_data_algorithm",
               "backward-weights": "backward_weights_algorithm"}
NEAR = 1.10  # "within 10% of the fastest"


def conv_layers(path):
    """[(layer, problem, {pass: picked row})] of the CSV's convolution layers."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if rows and "problem" not in rows[0]:
        raise ValueError(f"{path}: no problem column (not a profile layers CSV)")
    out = []
    for r in rows:
        if r.get("is_conv") != "yes" or not r.get("problem"):
            continue
        out.append((r["layer"], r["problem"], {p: r.get(c, "") for p, c in PICK_COLUMN.items()}))
    return out


def distinct(layers):
    seen = []
    for _, problem, _ in layers:
        if problem not in seen:
            seen.append(problem)
    return seen


def load_bench(folder, problem, pass_):
    """(ok records {algorithm: record}, the problem they ran) of the problem's JSON for the pass
    (the cropped problem's when there is one), or None."""
    base = os.path.join(folder, f"{problem}_{pass_}")
    for path in (base + ".cropped.json", base + ".json"):
        if os.path.exists(path):
            with open(path) as f:
                doc = json.load(f)
            records = doc.get("records", [])
            ok = {r["algorithm"]: r for r in records if r.get("status") == "ok"}
            ran = records[0].get("problem", problem) if records else problem
            return ok, ran
    return None


def fmt_ms(x):
    return f"{x:.3f}"


def table(layers_csv, folder):
    layers = conv_layers(layers_csv)
    if not layers:
        raise ValueError(f"{layers_csv}: no convolution layers")
    count, picks = {}, {}
    for layer, problem, pick in layers:
        count[problem] = count.get(problem, 0) + 1
        for p in PASSES:
            prev = picks.setdefault((problem, p), pick[p])
            if prev != pick[p]:
                raise ValueError(f"{layers_csv}: {problem} {p}: guess picked {prev} and {pick[p]}")
    lines = ["# guess against the fastest row, per convolution problem and pass", "",
             "| problem | pass | layers | guess | guess ms | guess modelled ms | fastest | "
             "fastest ms | guess / fastest |", "|---|---|--:|---|--:|--:|---|--:|--:|"]
    totals = {p: [0.0, 0.0, 0, 0, 0] for p in PASSES}  # guess ms, fastest ms, n, fastest, near
    missing = []
    for problem in distinct(layers):
        for p in PASSES:
            loaded = load_bench(folder, problem, p)
            if loaded is None:
                continue
            ok, ran = loaded
            if not ok:
                missing.append(f"{problem} {p}: no row ran")
                continue
            fastest = min(ok, key=lambda a: ok[a]["time_ms_median"])
            fast_ms = ok[fastest]["time_ms_median"]
            pick = picks[(problem, p)]
            shown = problem + (f" (runs {ran})" if ran != problem else "")
            if pick not in ok:
                missing.append(f"{shown} {p}: guess's {pick or '(none)'} was not timed")
                continue
            g = ok[pick]
            ratio = g["time_ms_median"] / fast_ms
            lines.append(f"| {shown} | {p} | {count[problem]} | {pick} | {fmt_ms(g['time_ms_median'])} | "
                         f"{fmt_ms(g['modelled_ms'])} | {fastest} | {fmt_ms(fast_ms)} | {ratio:.2f} |")
            t = totals[p]
            t[0] += count[problem] * g["time_ms_median"]
            t[1] += count[problem] * fast_ms
            t[2] += 1
            t[3] += pick == fastest
            t[4] += ratio <= NEAR
    lines += ["", "| pass | problems | guess fastest | within 10% | guess's rows, summed over layers ms | "
              "fastest rows ms | guess / fastest |", "|---|--:|--:|--:|--:|--:|--:|"]
    summary = []
    for p in PASSES:
        g, f, n, best, near = totals[p]
        if n == 0:
            continue
        lines.append(f"| {p} | {n} | {best} | {near} | {g:.2f} | {f:.2f} | {g / f:.3f} |")
        summary.append(f"guess {p}: fastest on {best} of {n} problems, within 10% on {near}; "
                       f"{g:.2f} ms over the layers against {f:.2f} ms ({g / f:.3f}x)")
    if not summary:
        raise ValueError(f"{folder}: no bench JSON for the CSV's problems")
    if missing:
        lines += ["", "Not compared:", ""] + [f"- {m}" for m in missing]
    lines += [""] + summary
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("problems").add_argument("layers_csv")
    sub.add_parser("run-as").add_argument("bench_json")
    t = sub.add_parser("table")
    t.add_argument("layers_csv")
    t.add_argument("folder")
    a = ap.parse_args()
    try:
        if a.cmd == "problems":
            print("\n".join(distinct(conv_layers(a.layers_csv))))
        elif a.cmd == "run-as":
            with open(a.bench_json) as f:
                print(json.load(f).get("context", {}).get("layers_run_as", ""))
        else:
            sys.stdout.write(table(a.layers_csv, a.folder))
    except (OSError, ValueError, KeyError) as e:
        print(f"guess_table: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
