#!/usr/bin/env python3
"""Writes the seed corpora of idx_fuzz, conv_problem_fuzz, ncu_fuzz, cifar_fuzz, image_fuzz and
checkpoint_fuzz into tests/fuzz/corpus/.

The seeds are committed; run this again only to change them (the output is deterministic: gzip
members carry mtime 0). Small real-looking IDX files, raw and gzip, valid and broken, and
convolution descriptors, valid and broken; Nsight Compute CSV files (the test fixtures of
tests/data/ncu/ plus small edge cases). Usage: python3 tests/fuzz/make_seeds.py
"""
import gzip
import io
import pathlib
import random
import struct
import subprocess
import tempfile
import zlib

HERE = pathlib.Path(__file__).resolve().parent
ELEM = {0x08: 1, 0x09: 1, 0x0B: 2, 0x0C: 4, 0x0D: 4, 0x0E: 8}


def header(type_code, dims):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims)


def idx(type_code, dims, rng):
    n = ELEM[type_code]
    for d in dims:
        n *= d
    if type_code == 0x0D:
        payload = b"".join(struct.pack(">f", rng.uniform(-1, 1)) for _ in range(n // 4))
    elif type_code == 0x0E:
        payload = b"".join(struct.pack(">d", rng.uniform(-1, 1)) for _ in range(n // 8))
    else:
        payload = bytes(rng.randrange(256) for _ in range(n))
    return header(type_code, dims) + payload


def gz(data, name=None):
    out = io.BytesIO()
    with gzip.GzipFile(filename=name or "", mode="wb", fileobj=out, mtime=0) as f:
        f.write(data)
    return out.getvalue()


def write(folder, name, data):
    path = HERE / "corpus" / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def idx_seeds():
    rng = random.Random(2024)
    # MNIST-shaped: labels 0..9 and a few small images with a dark background and a bright blob.
    labels = header(0x08, [40]) + bytes(rng.randrange(10) for _ in range(40))
    pixels = bytearray()
    for _ in range(4 * 12 * 12):
        pixels.append(0 if rng.random() < 0.6 else rng.randrange(256))
    images = header(0x08, [4, 12, 12]) + bytes(pixels)
    seeds = {
        "labels-idx1-ubyte": labels,
        "images-idx3-ubyte": images,
        "byte-2x3": idx(0x09, [2, 3], rng),
        "short-3x4": idx(0x0B, [3, 4], rng),
        "int-2x1x3x2": idx(0x0C, [2, 1, 3, 2], rng),
        "float-5": idx(0x0D, [5], rng),
        "double-2x2": idx(0x0E, [2, 2], rng),
        "one-element": idx(0x08, [1], rng),
        # Broken on purpose: each refusal path starts from a nearby valid input.
        "truncated-payload": images[:100],
        "too-long": labels + b"\x07\x07\x07",
        "half-header": images[:9],
        "zero-dim": header(0x08, [3, 0, 2]),
        "five-dims": header(0x08, [1, 1, 1, 1, 1]) + b"x",
        "huge-claim-2pow31": header(0x08, [0x80000000]) + bytes(64),
        "overflow-claim": header(0x0E, [0xFFFFFFFF] * 4),
        "unknown-type": header(0x0A, [4]) + b"abcd",
        "not-idx": b"PK\x03\x04" + bytes(12),
    }
    for name, data in seeds.items():
        write("idx", name, data)
    # gzip: the same content compressed, a file name in the gzip header, two members, a cut stream,
    # trailing garbage and a lying header in a tiny compressed file.
    write("idx", "labels-idx1-ubyte.gz", gz(labels))
    write("idx", "images-idx3-ubyte.gz", gz(images, "train-images-idx3-ubyte"))
    write("idx", "float-5.gz", gz(seeds["float-5"]))
    write("idx", "two-members.gz", gz(images[:50]) + gz(images[50:]))
    write("idx", "cut.gz", gz(images)[:-10])
    write("idx", "trailing-garbage.gz", gz(labels) + b"junk")
    write("idx", "huge-claim-2pow31.gz", gz(seeds["huge-claim-2pow31"]))
    write("idx", "bomb-like.gz", gz(header(0x08, [3000000]) + bytes(1000000)))


def conv_seeds():
    valid = [
        "mb1ic64ih56oc64kh3ph1",
        "g32mb1ic32ih112oc32kh3ph1",
        "mb8ic3ih224oc64kh7sh2ph3",
        "mb1ic4ih11iw13oc6kh3kw5sh2sw1ph1pw2dh2dw1",
        "conv1:mb1ic3ih224oc64kh7sh2ph3",
        "res2a_branch1_mb1ic64ih56oc256kh1",
        "  mb1ic3ih224oc64oh112ow112kh7sh2ph3 ",
        "g1mb1ic64ih56iw56oc64kh3kw3sh1sw1ph1pw1dh1dw1",
        "mb1ic4096ih1024oc4096kh1",
        "mb1ic1ih16777216iw1oc1kh1",
    ]
    invalid = [
        "",
        "mb1ic64ih56oc64kh3px1",
        "mb1icih56oc64kh3",
        "mb1ic64ic32ih56oc64kh3",
        "mb1ic3ih224oc64oh111kh7sh2ph3",
        "g3mb1ic64ih56oc63kh3",
        "mb1ic3ih5oc8kh7",
        "mb1ic99999999999ih8oc8kh3",
        "mb1ic3ih8oc8kh3ph18446744073709551617",
        "mb16777216ic16777216ih16777216oc1kh1",
        "mb1ic3\nih8oc8kh3\x1b[31m",
        "mb0ic3ih8oc8kh3",
    ]
    for i, text in enumerate(valid):
        write("conv_problem", f"valid-{i:02d}", text)
    for i, text in enumerate(invalid):
        write("conv_problem", f"invalid-{i:02d}", text)


def ncu_seeds():
    # Every fixture of tests/analysis/ncu_test.cc (both layouts, both number conventions, n/a,
    # utilisation-only, each broken case), then small inputs aimed at single rules.
    fixtures = HERE.parent / "data" / "ncu"
    for path in sorted(fixtures.glob("*.csv")):
        write("ncu", path.name, path.read_bytes())
    hdr = '"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'

    def row(id_, metric, unit, value, name="k"):
        return f'"{id_}","{name}","{metric}","{unit}","{value}"\n'

    base = (row(0, "dram__bytes.sum", "Kbyte", "1") + row(0, "gpu__time_duration.sum", "usecond", "1")
            + row(0, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", "10")
            + row(0, "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", "0")
            + row(0, "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", "0"))
    seeds = {
        "min-details.csv": hdr + base,
        "min-raw.csv": '"ID","Kernel Name","dram__bytes.sum","gpu__time_duration.sum"\n'
                       '"","","Mbyte","msecond"\n"0","k","1.5","0.25"\n"1","k","2,000.5","1"\n',
        "crlf-bom.csv": "\ufeff" + (hdr + base).replace("\n", "\r\n"),
        "cycles.csv": hdr + row(0, "dram__bytes.sum", "byte", "0")
        + row(0, "sm__cycles_elapsed.avg", "cycle", "1,000")
        + row(0, "sm__cycles_elapsed.avg.per_second", "cycle/nsecond", "1.5"),
        "exponent.csv": hdr + row(0, "dram__bytes.sum", "Gbyte", "1.5e+03")
        + row(0, "gpu__time_duration.sum", "s", "2E-6"),
        "section-names.csv": hdr + row(0, "Compute (SM) Throughput", "%", "40")
        + row(0, "DRAM Throughput", "%", "10,5") + row(0, "Duration", "usecond", "9,25"),
        "prof-after-header.csv": hdr + base + "==PROF== Report written\n\n",
        "no-kernels.csv": "==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n",
        "second-header.csv": hdr + base + hdr + base,
        "huge-exponent.csv": hdr + row(0, "dram__bytes.sum", "Pbyte", "9e999999999999")
        + row(0, "gpu__time_duration.sum", "ns", "1e-999999"),
        "bad-utf8-name.csv": (hdr + base.replace('"k"', '"k\udcff\udce2\udc82"'))
        .encode("utf-8", "surrogateescape"),
    }
    for name, data in seeds.items():
        write("ncu", name, data)


def cifar_seeds():
    """CIFAR-10 records (1 label byte + 3072 pixels) and CIFAR-100 ones (coarse, fine + 3072)."""
    rng = random.Random(2025)

    def pixels():
        return bytes(rng.randrange(256) for _ in range(3072))

    ten = bytes([3]) + pixels() + bytes([9]) + pixels()
    hundred = bytes([19, 99]) + pixels() + bytes([0, 42]) + pixels()
    seeds = {
        "cifar10-two-records.bin": ten,
        "cifar100-two-records.bin": hundred,
        "cifar10-one-record.bin": ten[:3073],
        # Broken on purpose: a cut record, labels out of range, nothing.
        "cut-record.bin": ten[:5000],
        "cifar10-label-10.bin": bytes([10]) + ten[1:3073],
        "cifar100-fine-100.bin": bytes([5, 100]) + hundred[2:3074],
        "cifar100-coarse-20.bin": bytes([20, 5]) + hundred[2:3074],
        "empty.bin": b"",
    }
    for name, data in seeds.items():
        write("cifar", name, data)


def png_chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png(width, height, depth, color, rows, interlace=0, extra=()):
    """rows: the raw scanlines (without filter bytes); each gets filter type 0 (None)."""
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, interlace)
    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
    for kind, data in extra:
        out += png_chunk(kind, data)
    return out + png_chunk(b"IDAT", zlib.compress(raw, 9)) + png_chunk(b"IEND", b"")


def image_seeds():
    """PNGs of every colour type and depth decode_image converts, and broken ones; the JPEG seeds
    come from make_jpeg_seeds.cc (compiled and run here when a C++ compiler and libjpeg exist)."""
    w, h = 8, 6
    rgb = [bytes((x * 30 + c * 80 + y * 10) % 256 for x in range(w) for c in range(3)) for y in range(h)]
    grey = [bytes((x * 30 + y * 10) % 256 for x in range(w)) for y in range(h)]
    rgba = [bytes(v for x in range(w) for v in (x * 30 % 256, y * 40 % 256, 99, x * 32 % 256)) for y in range(h)]
    rgb16 = [b"".join(struct.pack(">HHH", x * 8000, y * 9000, 65535 - x * 100) for x in range(w)) for y in range(h)]
    grey_alpha = [bytes(v for x in range(w) for v in (x * 30 % 256, 255 - x)) for y in range(h)]
    bits1 = [bytes([0b10110010]) for _ in range(h)]  # 8 pixels of 1 bit per row
    palette = [bytes(((x + y) % 4) for x in range(w)) for y in range(h)]
    plte = (b"PLTE", bytes([255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9]))
    trns = (b"tRNS", bytes([0, 128]))
    seeds = {
        "rgb8-8x6.png": png(w, h, 8, 2, rgb),
        "grey8-8x6.png": png(w, h, 8, 0, grey),
        "rgba8-8x6.png": png(w, h, 8, 6, rgba),
        "rgb16-8x6.png": png(w, h, 16, 2, rgb16),
        "grey-alpha8-8x6.png": png(w, h, 8, 4, grey_alpha),
        "grey1-8x6.png": png(w, h, 1, 0, bits1),
        "palette-trns-8x6.png": png(w, h, 8, 3, palette, extra=(plte, trns)),
        "interlaced-1x1.png": png(1, 1, 8, 2, [b"\x10\x20\x30"], interlace=1),
    }
    good = seeds["rgb8-8x6.png"]
    seeds.update({
        # Broken on purpose.
        "broken-cut-in-idat.png": good[:len(good) - 20],
        "broken-ihdr-crc.png": good[:29] + b"\x00\x00\x00\x00" + good[33:],
        "broken-huge-claim.png": png(60000, 60000, 8, 2, [b""]),
        "broken-zero-width.png": png(0, 6, 8, 2, rgb),
        "broken-signature-only.png": good[:8],
        "broken-palette-missing.png": png(w, h, 8, 3, palette),
    })
    for name, data in seeds.items():
        write("image", name, data)
    src = HERE / "make_jpeg_seeds.cc"
    out = HERE / "corpus" / "image"
    with tempfile.TemporaryDirectory() as tmp:
        exe = pathlib.Path(tmp) / "make_jpeg_seeds"
        try:
            subprocess.run(["c++", "-std=c++20", "-O1", "-o", str(exe), str(src), "-ljpeg"], check=True)
            subprocess.run([str(exe), str(out)], check=True)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"make_seeds: JPEG seeds not written ({e}); needs c++ and libjpeg62-turbo-dev")


def checkpoint(meta, tensors, version=1):
    """An nnperf checkpoint (docs/checkpoint.md): tensors are (name, dims, values)."""
    meta_bytes = meta.encode()
    table = struct.pack("<I", len(tensors))
    data = b""
    for name, dims, values in tensors:
        raw = struct.pack("<%df" % len(values), *values)
        table += struct.pack("<I", len(name)) + name.encode() + struct.pack("<II", 1, len(dims))
        table += b"".join(struct.pack("<q", d) for d in dims) + struct.pack("<QQ", len(data), len(raw))
        data += raw
    total = 8 + 4 + 8 + 8 + len(meta_bytes) + len(table) + len(data) + 4
    body = b"NNPFCKPT" + struct.pack("<IQQ", version, total, len(meta_bytes)) + meta_bytes + table + data
    return body + struct.pack("<I", zlib.crc32(body))


def checkpoint_seeds():
    rng = random.Random(9)
    meta = '{"model":"mlp","epoch":2,"optimizer":{"name":"adam","lr":0.001,"steps":8}}'
    w = [rng.uniform(-1, 1) for _ in range(12)]
    small = checkpoint(meta, [("params.fc1.weight", [4, 3], w), ("params.fc1.bias", [3], w[:3]),
                              ("optim.exp_avg.0", [4, 3], w), ("optim.exp_avg_sq.0", [4, 3], w)])
    seeds = {
        "small.ckpt": small,
        "empty.ckpt": checkpoint("{}", []),
        "scalar-and-zero.ckpt": checkpoint('{"a":[1,2,{"b":null}]}', [("s", [], [1.5]), ("z", [0, 5], [])]),
        "cut.ckpt": small[:len(small) // 2],
        "bad-crc.ckpt": small[:-1] + bytes([small[-1] ^ 1]),
        "version-2.ckpt": checkpoint("{}", [], version=2),
        "meta-array.ckpt": checkpoint("[1]", []),
        "meta-not-json.ckpt": checkpoint("{", []),
        "duplicate.ckpt": checkpoint("{}", [("a", [1], [1.0]), ("a", [1], [2.0])]),
        "rank-9.ckpt": checkpoint("{}", [("a", [1] * 9, [1.0])]),
    }
    for name, data in seeds.items():
        write("checkpoint", name, data)


if __name__ == "__main__":
    idx_seeds()
    conv_seeds()
    ncu_seeds()
    cifar_seeds()
    image_seeds()
    checkpoint_seeds()
