#!/usr/bin/env python3
"""Writes a CIFAR-10 binary folder (cifar-10-batches-bin/: data_batch_1..5.bin, test_batch.bin;
records of 1 label byte + 3,072 pixel bytes) of random images with random labels, for timing the
data path of `nnperf train` where the real archive is not available. Accuracy on it is
meaningless; its record layout and sizes are CIFAR-10's.

  make_cifar_format.py OUT_DIR [--per-batch 10000] [--test 10000] [--seed 1]
"""
import argparse
import os
import random


def write_batch(path, n, rng):
    with open(path, "wb") as f:
        for _ in range(n):
            f.write(bytes([rng.randrange(10)]))
            f.write(rng.randbytes(3072))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--per-batch", type=int, default=10000)
    ap.add_argument("--test", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.per_batch < 1 or a.test < 1:
        ap.error("--per-batch and --test must be >= 1")
    rng = random.Random(a.seed)
    d = os.path.join(a.out_dir, "cifar-10-batches-bin")
    os.makedirs(d, exist_ok=True)
    for b in range(1, 6):
        write_batch(os.path.join(d, f"data_batch_{b}.bin"), a.per_batch, rng)
    write_batch(os.path.join(d, "test_batch.bin"), a.test, rng)
    print(d)


if __name__ == "__main__":
    main()
