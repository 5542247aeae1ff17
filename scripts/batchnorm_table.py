#!/usr/bin/env python3
"""Markdown table of BatchNorm's training pass, nnperf against PyTorch: every JSON of a folder
written by `nnperf bench batchnorm` (algorithms own, channels and blocks on the CPU; own and
cudnn on the GPU) or by bench/peers/batchnorm_torch.py (algorithm torch), as
scripts/bench_batchnorm.sh and the `bn` stage of scripts/gpu_run.sh leave them.

  batchnorm_table.py DIR

Per problem and pass: each algorithm's median time over the files that timed it (each file's
median; a bench script's rounds), its bandwidth at the two-pass minimum (forward 12, backward 20
bytes per element) and largest relative error against the float64 reference, then each nnperf
algorithm's time over PyTorch's (< 1: nnperf faster). Then a line per pass and nnperf algorithm
(`bn <pass> <algorithm>: ...`): on how many shapes it is at most PyTorch's time, the median
ratio, and the summed times. Skipped rows are listed with their reason. Standard library only.
"""

import argparse
import glob
import json
import os
import statistics
import sys

PASSES = ("forward", "backward")


def load_records(folder):
    """{(problem, pass): {algorithm: [record, ...]}} and [(problem, algorithm, reason)] skipped."""
    table, skipped = {}, []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            print(f"batchnorm_table: skipping {path}: {e}", file=sys.stderr)
            continue
        ctx_pass = doc.get("context", {}).get("pass")
        for r in doc.get("records", []):
            if r.get("status") != "ok":
                skipped.append((r.get("problem"), r.get("algorithm"), r.get("reason", "")))
                continue
            key = (r["problem"], r.get("pass", ctx_pass))
            table.setdefault(key, {}).setdefault(r["algorithm"], []).append(r)
    return table, skipped


def problem_size(problem):
    digits = "".join(ch if ch.isdigit() else " " for ch in problem).split()
    n = 1
    for d in digits[:3]:
        n *= int(d)
    return n * (int(digits[3]) if len(digits) > 3 else int(digits[2]))


def summarize(records):
    ms = statistics.median(r["time_ms_median"] for r in records)
    return {"ms": ms, "gbps": records[0]["bytes"] / (ms * 1e-3) * 1e-9,
            "err": max(r["max_rel_err"] for r in records), "runs": len(records)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    a = ap.parse_args(argv)
    table, skipped = load_records(a.dir)
    if not table:
        print(f"batchnorm_table: no BatchNorm records in {a.dir}", file=sys.stderr)
        return 1
    algorithms = sorted({alg for algs in table.values() for alg in algs},
                        key=lambda n: (n == "torch", n))
    ours = [n for n in algorithms if n != "torch"]
    head = ["problem", "pass"]
    for n in algorithms:
        head += [f"{n} ms", f"{n} GB/s", f"{n} max_rel_err"]
    head += [f"{n} / torch" for n in ours if "torch" in algorithms]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 2 + "--:|" * (len(head) - 2)]
    ratios = {}  # (pass, algorithm) -> [(ratio, ours ms, torch ms)]
    keys = sorted(table, key=lambda k: (PASSES.index(k[1]) if k[1] in PASSES else 9,
                                        -problem_size(k[0]), k[0]))
    for problem, pass_ in keys:
        s = {n: summarize(rs) for n, rs in table[(problem, pass_)].items()}
        cells = [problem, pass_]
        for n in algorithms:
            cells += ([f"{s[n]['ms']:.4f}", f"{s[n]['gbps']:.1f}", f"{s[n]['err']:.1e}"]
                      if n in s else ["–"] * 3)
        for n in ours:
            if "torch" not in algorithms:
                continue
            if n in s and "torch" in s:
                r = s[n]["ms"] / s["torch"]["ms"]
                ratios.setdefault((pass_, n), []).append((r, s[n]["ms"], s["torch"]["ms"]))
                cells.append(f"{r:.2f}")
            else:
                cells.append("–")
        lines.append("| " + " | ".join(cells) + " |")
    runs = sorted({x["runs"] for v in table.values() for x in map(summarize, v.values())})
    print(f"# BatchNorm training pass, nnperf and PyTorch (median of {'/'.join(map(str, runs))} "
          "run(s) each)\n")
    print("\n".join(lines))
    for (problem, alg, reason) in dict.fromkeys(skipped):  # once per shape, not per pass or round
        print(f"\nskipped: {alg} on {problem}: {reason}")
    print()
    for (pass_, n), rs in sorted(ratios.items(), key=lambda kv: (PASSES.index(kv[0][0]), kv[0][1])):
        wins = sum(r <= 1.0 for r, _, _ in rs)
        print(f"bn {pass_} {n}: at most PyTorch's time on {wins} of {len(rs)} shapes; median "
              f"{n} / torch {statistics.median(r for r, _, _ in rs):.2f}; sums {n} "
              f"{sum(o for _, o, _ in rs):.3f} ms, torch {sum(t for _, _, t in rs):.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
