#!/usr/bin/env python3
"""Prints the tables of scripts/bench_train_cnn.sh from its output folder (and writes
summary.json there): seconds per training iteration (medians over the alternating rounds) of
nnperf and PyTorch with their ratio, the data-path wait share, and the accuracy means."""
import glob
import json
import os
import re
import statistics
import sys


def measured(path):
    for line in open(path):
        m = re.match(r"MEASURED_SEC=([0-9.eE+-]+) IMGS_PER_SEC=([0-9.eE+-]+) BATCH=(\d+)", line)
        if m:
            return float(m.group(1)), float(m.group(2)), int(m.group(3))
    raise SystemExit(f"{path}: no MEASURED_SEC line")


def main(out):
    summary = {"speed": [], "datapath": [], "accuracy": {}}
    print("| model | threads | nnperf s/iter | PyTorch s/iter | nnperf / PyTorch | rounds |")
    print("|---|---:|---:|---:|---:|---:|")
    keys = sorted({re.sub(r"_r\d+\.log$", "", os.path.basename(p)[len("nnperf_"):])
                   for p in glob.glob(f"{out}/speed/nnperf_*.log")})
    for key in keys:
        arch, t = key.rsplit("_t", 1)
        per = {}
        for who in ("nnperf", "torch"):
            runs = [measured(p) for p in sorted(glob.glob(f"{out}/speed/{who}_{key}_r*.log"))]
            per[who] = statistics.median(b / ips for _, ips, b in runs)  # seconds per iteration
        rounds = len(glob.glob(f"{out}/speed/nnperf_{key}_r*.log"))
        ratio = per["nnperf"] / per["torch"]
        summary["speed"].append({"model": arch, "threads": int(t), "nnperf_sec_per_iter": per["nnperf"],
                                 "torch_sec_per_iter": per["torch"], "ratio": ratio, "rounds": rounds})
        print(f"| {arch} | {t} | {per['nnperf']:.4f} | {per['torch']:.4f} | {ratio:.2f} | {rounds} |")
    for p in sorted(glob.glob(f"{out}/datapath_w*/final_results.json")):
        j = json.load(open(p))
        w = j["context"]["workers"]
        summary["datapath"].append({"workers": w, "data_wait_fraction": j["data_wait_fraction"],
                                    "imgs_per_sec": j["imgs_per_sec"]})
        print(f"\ndata path, CIFAR-format files, --workers {w}: the step waited for data "
              f"{100 * j['data_wait_fraction']:.2f}% of {j['measured_sec']:.1f} s "
              f"({j['imgs_per_sec']:.0f} img/s)")
    ours = {p: json.load(open(p))["final_test_acc"] for p in sorted(glob.glob(f"{out}/acc_nnperf_*/final_results.json"))}
    peer_json = {p: json.load(open(p)) for p in sorted(glob.glob(f"{out}/acc_torch_*.json"))}
    peer = {p: j["final_test_acc"] for p, j in peer_json.items()}
    if ours and peer:
        mo, mp = statistics.mean(ours.values()), statistics.mean(peer.values())
        streams = sorted({j["recipe"].get("streams", "torch") for j in peer_json.values()})
        matched = streams == ["nnperf"]
        summary["accuracy"] = {"nnperf": list(ours.values()), "torch": list(peer.values()),
                               "nnperf_mean": mo, "torch_mean": mp, "difference_points": 100 * (mo - mp),
                               "streams": "matched" if matched else "independent"}
        print("\n" + ("matched streams: the same initial weights, batches and crops on both sides"
                      if matched else "independent streams: each side draws its own weights, "
                      "batches and crops"))
        print(f"accuracy, ResNet-18 on Fashion-MNIST: nnperf {100 * mo:.2f}% "
              f"({', '.join(f'{100 * v:.2f}' for v in ours.values())}), PyTorch {100 * mp:.2f}% "
              f"({', '.join(f'{100 * v:.2f}' for v in peer.values())}): {100 * (mo - mp):+.2f} points")
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1])
