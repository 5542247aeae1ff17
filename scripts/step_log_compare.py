#!/usr/bin/env python3
"""Compares two training runs step by step from their step logs (`nnperf train --step-log` and
`bench/peers/train_torch.py --step-log`: CSV `step,loss,lr`, one row per training step), as
written by a matched-stream pair (the same initial weights, batches and crop/flip draws), where
the runs differ only in arithmetic.

Prints a Markdown table of windows of --window steps (each side's mean and max loss, the largest
relative difference of the two losses in the window), then one summary line: the steps both logs
hold, the largest learning-rate difference (the schedules must agree: a difference means the
recipes do), the first step from which the losses differ by more than --tol relative to the
larger for --run steps in a row ("parted at step N"), and each side's worst spike (the largest
ratio of a step's loss to the lowest loss of the steps before it).

    step_log_compare.py OURS.csv PEER.csv [--names nnperf,torch] [--window 100] [--tol 0.1]

Exit status 2 with a one-line error on a missing, empty or malformed log.
"""

import argparse
import csv
import sys


def die(msg):
    print(f"step_log_compare: {msg}", file=sys.stderr)
    sys.exit(2)


def read_log(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        die(f"{path}: {e.strerror}")
    if not rows or [c.strip() for c in rows[0]] != ["step", "loss", "lr"]:
        die(f"{path}: expected a header line 'step,loss,lr'")
    log = {}
    for n, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        try:
            step, loss, lr = int(row[0]), float(row[1]), float(row[2])
        except (ValueError, IndexError):
            die(f"{path} line {n}: expected step,loss,lr numbers")
        if step in log:
            die(f"{path} line {n}: step {step} logged twice "
                "(a log appended to by two runs?)")
        log[step] = (loss, lr)
    if not log:
        die(f"{path}: no steps")
    return log


def rel_diff(a, b):
    big = max(abs(a), abs(b))
    return 0.0 if big == 0.0 else abs(a - b) / big


def worst_spike(losses):
    """The largest ratio of a loss to the lowest loss before it, with the step it happened at."""
    best, at, low = 1.0, None, None
    for step, loss in losses:
        if low is not None and low > 0 and loss / low > best:
            best, at = loss / low, step
        low = loss if low is None else min(low, loss)
    return best, at


def compare(ours, peer, window, tol, run):
    steps = sorted(set(ours) & set(peer))
    if not steps:
        die("the two logs share no step")
    lr_diff = max(abs(ours[s][1] - peer[s][1]) for s in steps)
    parted, streak, start = None, 0, None
    for s in steps:
        if rel_diff(ours[s][0], peer[s][0]) > tol:
            start = s if streak == 0 else start
            streak += 1
            if streak == run and parted is None:
                parted = start
        else:
            streak = 0
    windows = []
    for lo in range(0, len(steps), window):
        w = steps[lo:lo + window]
        a = [ours[s][0] for s in w]
        b = [peer[s][0] for s in w]
        windows.append({
            "first": w[0], "last": w[-1],
            "ours_mean": sum(a) / len(a), "peer_mean": sum(b) / len(b),
            "ours_max": max(a), "peer_max": max(b),
            "max_rel": max(rel_diff(x, y) for x, y in zip(a, b)),
        })
    spikes = (worst_spike([(s, ours[s][0]) for s in steps]),
              worst_spike([(s, peer[s][0]) for s in steps]))
    return steps, lr_diff, parted, windows, spikes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ours")
    ap.add_argument("peer")
    ap.add_argument("--names", default="nnperf,torch", help="the two runs' names, comma-separated")
    ap.add_argument("--window", type=int, default=100, help="steps per table row")
    ap.add_argument("--tol", type=float, default=0.1,
                    help="relative loss difference counted as parted")
    ap.add_argument("--run", type=int, default=5,
                    help="consecutive steps above --tol before the runs count as parted")
    a = ap.parse_args()
    names = a.names.split(",")
    if len(names) != 2 or not all(names):
        die(f"--names '{a.names}': expected two names, comma-separated")
    if a.window < 1 or a.run < 1 or not a.tol > 0:
        die("--window and --run must be at least 1, --tol above 0")
    ours, peer = read_log(a.ours), read_log(a.peer)
    steps, lr_diff, parted, windows, spikes = compare(ours, peer, a.window, a.tol, a.run)
    n0, n1 = names
    print(f"| steps | {n0} mean loss | {n1} mean loss | {n0} max | {n1} max | max rel. diff |")
    print("|---|---:|---:|---:|---:|---:|")
    for w in windows:
        print(f"| {w['first']}-{w['last']} | {w['ours_mean']:.4f} | {w['peer_mean']:.4f} | "
              f"{w['ours_max']:.4f} | {w['peer_max']:.4f} | {w['max_rel']:.3f} |")
    only = len(set(ours) ^ set(peer))
    part = (f"parted at step {parted} (loss differs by more than {a.tol:g} of the larger for "
            f"{a.run} steps in a row)" if parted is not None
            else f"never parted by more than {a.tol:g} for {a.run} steps in a row")
    spike = "; ".join(f"{n} worst spike x{r:.2f}" + (f" at step {s}" if s is not None else "")
                      for n, (r, s) in zip(names, spikes))
    print(f"\nstep logs {n0} vs {n1}: {len(steps)} steps in both"
          + (f" ({only} in one only)" if only else "")
          + f", lr max diff {lr_diff:.3g}, {part}; {spike}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
