"""nnperf's file format and random streams, for the peers that must share them with
`nnperf train`:

- write_weights / read_weights: an nnperf weights file (docs/checkpoint.md) from a torchvision
  model, and the params./buffers. tensors of any nnperf checkpoint;
- Rng, shuffled_order, draw_sample: the data order of an epoch and the crop + flip draw of a
  sample exactly as src/nnperf/core/rng.cc (xoshiro256** seeded by splitmix64, rejection for
  integers below n), src/nnperf/data/dataset.cc (Fisher-Yates from the end) and
  src/nnperf/data/transform.cc compute them. `nnperf train` seeds its training loader with
  --seed + 1 and numbers epochs from 0 (data/loader, runs/cnn_train).

  python3 nnperf_format.py --self-test tests/data/streams/golden.json

checks the port against values written by nnperf's own code (the C++ test
tests/data/transform_test.cc checks the same file), so the two cannot drift apart silently.
Pure Python (no numpy at import) so the self-test runs with the system interpreter.
"""

import json
import struct
import sys
import zlib

_M64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_POSITION_MIX = 0xD1B54A32D192ED03


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & _M64


class Rng:
    """nnperf::Rng: xoshiro256**, its state seeded by four splitmix64 outputs."""

    def __init__(self, seed):
        x = seed & _M64
        self.s = []
        for _ in range(4):
            x = (x + _GOLDEN) & _M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
            self.s.append(z ^ (z >> 31))

    def next_u64(self):
        s0, s1, s2, s3 = self.s
        result = (_rotl((s1 * 5) & _M64, 7) * 9) & _M64
        t = (s1 << 17) & _M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 45)
        self.s = [s0, s1, s2, s3]
        return result

    def below(self, n):
        limit = _M64 - (_M64 % n)  # UINT64_MAX - UINT64_MAX % n
        while True:
            x = self.next_u64()
            if x < limit:
                return x % n


def shuffled_order(n, seed, epoch):
    """The sample order of one epoch (data/dataset.cc shuffled_order with shuffling on)."""
    order = list(range(n))
    rng = Rng(seed ^ ((epoch * _GOLDEN) & _M64))
    for i in range(n, 1, -1):
        j = rng.below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def draw_sample(seed, epoch, position, pad=4, flip=True):
    """(dy, dx, flip) of the sample at `position` of the epoch (data/transform.cc draw_sample):
    the crop starts at (dy, dx) of the image padded by `pad`, the crop is then mirrored."""
    rng = Rng(seed ^ (((epoch + 1) * _GOLDEN) & _M64) ^ ((position * _POSITION_MIX) & _M64))
    dy = rng.below(2 * pad + 1)
    dx = rng.below(2 * pad + 1)
    return dy, dx, bool(flip and rng.below(2) == 1)


def write_weights(path, model_name, model):
    """model's parameters and BatchNorm statistics as an nnperf weights file (docs/checkpoint.md):
    the same names as torchvision's state_dict behind params./buffers., Linear weights transposed
    (nnperf stores in x out)."""
    import torch

    tensors = []
    for name, p in model.named_parameters():
        v = p.detach()
        if isinstance(model.get_submodule(name.rsplit(".", 1)[0]), torch.nn.Linear) and \
                name.endswith(".weight"):
            v = v.t()
        tensors.append(("params." + name, v.contiguous().float().numpy()))
    for name, b in model.named_buffers():
        if name.endswith(("running_mean", "running_var")):
            tensors.append(("buffers." + name, b.detach().contiguous().float().numpy()))
    meta = json.dumps({"model": model_name, "kind": "weights", "source": "torchvision"}).encode()
    table, data, offset = b"", b"", 0
    for name, v in tensors:
        raw = v.astype("<f4").tobytes()
        nb = name.encode()
        table += struct.pack("<I", len(nb)) + nb + struct.pack("<II", 1, v.ndim)
        table += struct.pack(f"<{v.ndim}q", *v.shape) + struct.pack("<QQ", offset, len(raw))
        data += raw
        offset += len(raw)
    body = struct.pack("<Q", len(meta)) + meta + struct.pack("<I", len(tensors)) + table + data
    total = 8 + 4 + 8 + len(body) + 4
    head = b"NNPFCKPT" + struct.pack("<IQ", 1, total) + body
    with open(path, "wb") as f:
        f.write(head + struct.pack("<I", zlib.crc32(head) & 0xFFFFFFFF))


def read_weights(path):
    """{name: numpy array} of an nnperf checkpoint's params./buffers. tensors (no checks beyond
    the CRC: nnperf wrote it)."""
    import numpy as np

    b = open(path, "rb").read()
    if b[:8] != b"NNPFCKPT" or zlib.crc32(b[:-4]) & 0xFFFFFFFF != struct.unpack("<I", b[-4:])[0]:
        sys.exit(f"error: {path}: not an intact nnperf checkpoint")
    j = struct.unpack_from("<Q", b, 20)[0]
    o = 28 + j
    n = struct.unpack_from("<I", b, o)[0]
    o += 4
    entries = []
    for _ in range(n):
        ln = struct.unpack_from("<I", b, o)[0]
        name = b[o + 4:o + 4 + ln].decode()
        o += 4 + ln
        _, rank = struct.unpack_from("<II", b, o)
        dims = struct.unpack_from(f"<{rank}q", b, o + 8)
        o += 8 + 8 * rank
        off, nbytes = struct.unpack_from("<QQ", b, o)
        o += 16
        entries.append((name, dims, off, nbytes))
    out = {}
    for name, dims, off, nbytes in entries:
        out[name] = np.frombuffer(b, dtype="<f4", count=nbytes // 4, offset=o + off).reshape(dims)
    return out


def self_test(golden_path):
    """Every value of the golden file (written by nnperf's code) recomputed here; returns the
    list of mismatches."""
    g = json.load(open(golden_path))
    bad = []
    for case in g["rng"]:
        r = Rng(int(case["seed"]))
        got = [str(r.next_u64()) for _ in case["next_u64"]]
        if got != case["next_u64"]:
            bad.append(f"Rng({case['seed']}).next_u64: {got} != {case['next_u64']}")
        r = Rng(int(case["seed"]))
        got = [r.below(n) for n in case["below_n"]]
        if got != case["below"]:
            bad.append(f"Rng({case['seed']}).below: {got} != {case['below']}")
    for case in g["orders"]:
        got = shuffled_order(case["n"], case["seed"], case["epoch"])
        if got != case["order"]:
            bad.append(f"shuffled_order({case['n']}, {case['seed']}, {case['epoch']}): {got}")
    for case in g["draws"]:
        got = list(draw_sample(case["seed"], case["epoch"], case["position"], case["pad"]))
        want = [case["dy"], case["dx"], case["flip"]]
        if got != want:
            bad.append(f"draw_sample({case['seed']}, {case['epoch']}, {case['position']}, "
                       f"pad {case['pad']}): {got} != {want}")
    return bad, len(g["rng"]) + len(g["orders"]) + len(g["draws"])


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "--self-test":
        sys.exit("usage: nnperf_format.py --self-test GOLDEN.json")
    mismatches, cases = self_test(sys.argv[2])
    for m in mismatches:
        print("mismatch:", m)
    if mismatches:
        sys.exit(f"error: {sys.argv[2]}: {len(mismatches)} of {cases} cases differ from nnperf")
    print(f"nnperf_format: all {cases} cases of {sys.argv[2]} agree with nnperf")
