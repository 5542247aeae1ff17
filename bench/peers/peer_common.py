"""Shared pieces of the peer benchmarks (mlp_torch.py, mlp_numpy.py): the recipe flags, the
Fashion-MNIST IDX reader, the seeded train/validation split, the timed training and
per-iteration loops, the run context and the JSON/stdout formats, so both peers train on
identical data in identical batch order, time the same steps and report alike.

This module must not import numpy at load time: the peers set the BLAS/OpenMP thread variables
from the parsed flags before numpy (or torch) is first imported.
"""

import argparse
import contextlib
import datetime
import gzip
import json
import os
import platform
import socket
import struct
import sys
import time

ACTIVATIONS = ("relu", "gelu", "sigmoid", "tanh", "elu", "leakyrelu", "silu", "mish")
DEFAULT_DATA_DIR = "/usr/share/datasets/fashion-mnist"
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# Variables that change OpenBLAS's kernel choice; recorded so a slow run can be explained.
BLAS_ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_VERBOSE")
INPUT_SIZE = 784
NUM_CLASSES = 10
EVAL_BATCH_SIZE = 1000  # validation and test batches, as usra-survey's MLP.py used


def _positive_int_list(text, flag):
    try:
        values = [int(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{flag} expects comma-separated integers, got '{text}'")
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"{flag} expects positive integers, got '{text}'")
    return values


def make_parser(peer, description):
    """The recipe flags both peers accept (same names, same defaults)."""
    p = argparse.ArgumentParser(
        prog=f"mlp_{peer}.py",
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument(
        "--hidden",
        default="512,256,128,64",
        type=lambda s: _positive_int_list(s, "--hidden"),
        help="hidden widths; 512,256,128,64 is the activation-timing study's net, "
        "128,128,128 the MLP implementation benchmark's net",
    )
    p.add_argument("--activation", default="relu", choices=ACTIVATIONS)
    p.add_argument("--optimizer", default="adam", choices=("adam", "sgd"))
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default: adam 1e-3, sgd 1e-2)")
    p.add_argument("--momentum", type=float, default=0.9,
                   help="SGD momentum (torch.optim.SGD form)")
    p.add_argument("--init", default="torch", choices=("torch", "he"),
                   help="torch: nn.Linear's default U(-1/sqrt(in), 1/sqrt(in)) for W and b; "
                        "he: N(0, 2/in) for W, zero b")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--warmup-epochs", type=int, default=0,
                   help="epochs trained but left out of the final MEASURED_SEC/IMGS_PER_SEC")
    p.add_argument("--val-split", type=int, default=6000,
                   help="images of the 60000 training images held out for validation (seeded)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data-dir", default=DEFAULT_DATA_DIR,
                   help="folder with the four Fashion-MNIST IDX .gz files")
    p.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON here")
    p.add_argument("--iters-bench", action="store_true",
                   help="instead of training epochs, time single training iterations and forward "
                        "passes at each --bench-batches size (median after warm-up)")
    p.add_argument("--bench-batches", default="32,64,128,1024",
                   type=lambda s: _positive_int_list(s, "--bench-batches"))
    p.add_argument("--bench-warmup", type=int, default=20, help="untimed iterations per batch size")
    p.add_argument("--bench-iters", type=int, default=200, help="timed iterations per batch size")
    if peer == "torch":
        p.add_argument("--torch-optim-impl", default="default",
                       choices=("default", "foreach", "fused"),
                       help="torch.optim implementation: default (what torch picks; on the CPU the "
                            "per-tensor loop), foreach or fused")
        p.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                       help="--iters-bench on the GPU (TF32 off): each timed step ends with "
                            "loss.item() and torch.cuda.synchronize(), as nnperf's GPU step copies "
                            "its loss back and returns when the device has finished")
    return p


def parse_args(peer, description, argv=None):
    p = make_parser(peer, description)
    a = p.parse_args(argv)
    if a.lr is None:
        a.lr = 1e-3 if a.optimizer == "adam" else 1e-2
    checks = [
        (a.batch_size > 0, "--batch-size must be positive"),
        (a.epochs > 0, "--epochs must be positive"),
        (0 <= a.warmup_epochs < a.epochs, "--warmup-epochs must be in [0, --epochs)"),
        (0 < a.val_split < 60000, "--val-split must be in (0, 60000)"),
        (a.threads > 0, "--threads must be positive"),
        (a.lr > 0, "--lr must be positive"),
        (a.bench_warmup >= 0 and a.bench_iters > 0, "--bench-iters must be positive"),
        (a.batch_size <= 60000 - a.val_split,
         f"--batch-size must be at most the {60000 - a.val_split} training images"),
        (max(a.bench_batches) <= 60000 - a.val_split,
         f"--bench-batches must be at most the {60000 - a.val_split} training images"),
    ]
    for ok, msg in checks:
        if not ok:
            p.error(msg)
    return a


def set_thread_env(threads):
    """Must run before numpy/torch are imported: their thread pools read these once."""
    for var in THREAD_ENV_VARS:
        os.environ[var] = str(threads)


def recipe_of(args):
    r = {
        "sizes": [INPUT_SIZE] + list(args.hidden) + [NUM_CLASSES],
        "hidden": list(args.hidden),
        "activation": args.activation,
        "optimizer": args.optimizer,
        "lr": args.lr,
        "init": args.init,
        "batch_size": args.batch_size,
        "epochs": args.epochs,
        "warmup_epochs": args.warmup_epochs,
        "val_split": args.val_split,
        "eval_batch_size": EVAL_BATCH_SIZE,
        "seed": args.seed,
        "dtype": "float32",
        "loss": "softmax cross-entropy (mean over the batch)",
        "dataset": "fashion-mnist",
    }
    if getattr(args, "torch_optim_impl", None) is not None:
        r["torch_optim_impl"] = args.torch_optim_impl
    if args.optimizer == "adam":
        r.update(betas=[0.9, 0.999], eps=1e-8, weight_decay=0.0)
    else:
        r.update(momentum=args.momentum, dampening=0.0, nesterov=False, weight_decay=0.0)
    return r


# ---------------------------------------------------------------------------------------------
# Data


def read_idx(path):
    """Reads a (gzipped) IDX file into a numpy uint8 array of its stated shape."""
    import numpy as np

    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        sys.exit(f"error: cannot read IDX file {path}: {e}")
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        sys.exit(f"error: {path} is not an unsigned-byte IDX file (bad magic)")
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    expected = 1
    for d in dims:
        expected *= d
    if data.size != expected:
        sys.exit(f"error: {path} holds {data.size} bytes of data, its header says {expected}")
    return data.reshape(dims)


def load_fashion_mnist(data_dir, val_split, seed):
    """Returns dict of float32 images in [0,1] (N, 784) and int64 labels for train/val/test.

    The validation images are a seeded random subset of the 60000 training images
    (numpy default_rng(seed).permutation; the first val_split indices are validation).
    """
    import numpy as np

    def pair(prefix):
        x = read_idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte.gz"))
        y = read_idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte.gz"))
        if x.shape[0] != y.shape[0] or x.shape[1:] != (28, 28):
            sys.exit(f"error: {data_dir}/{prefix}: images {x.shape} and labels {y.shape} disagree")
        return (x.reshape(x.shape[0], INPUT_SIZE).astype(np.float32) / np.float32(255.0),
                y.astype(np.int64))

    x_all, y_all = pair("train")
    x_test, y_test = pair("t10k")
    perm = np.random.default_rng(seed).permutation(x_all.shape[0])
    val_idx, train_idx = perm[:val_split], perm[val_split:]
    return {
        "x_train": np.ascontiguousarray(x_all[train_idx]),
        "y_train": y_all[train_idx],
        "x_val": np.ascontiguousarray(x_all[val_idx]),
        "y_val": y_all[val_idx],
        "x_test": x_test,
        "y_test": y_test,
    }


def epoch_orders(n, epochs, seed):
    """The shuffled sample order of every epoch; shared by both peers (seed + 1 stream)."""
    import numpy as np

    rng = np.random.default_rng(seed + 1)
    return [rng.permutation(n) for _ in range(epochs)]


# ---------------------------------------------------------------------------------------------
# The timed loops


def train_epochs(args, x_tr, y_tr, step, tally, evaluate_val, to_index=lambda order: order):
    """Trains args.epochs epochs over the shared shuffled orders and returns the epoch records.

    Each step is timed (wall and process CPU) from indexing the batch out of the pre-loaded
    training set through the optimizer step; the bookkeeping and the validation pass are not.
    step(xb, yb) trains on one batch and returns (loss, logits); tally(loss, logits, yb) returns
    (the batch's mean loss as a float, its correct predictions); evaluate_val() returns
    (val_loss, val_acc); to_index turns an epoch's numpy order into what x_tr accepts as indices.
    """
    n, bs = x_tr.shape[0], args.batch_size
    records = []
    for epoch, order in enumerate(epoch_orders(n, args.epochs, args.seed), start=1):
        order = to_index(order)
        measured, cpu, loss_sum, correct = 0.0, 0.0, 0.0, 0
        for i in range(0, n, bs):
            t0, c0 = time.perf_counter(), time.process_time()
            idx = order[i : i + bs]
            xb, yb = x_tr[idx], y_tr[idx]
            loss, logits = step(xb, yb)
            c1, t1 = time.process_time(), time.perf_counter()
            measured += t1 - t0
            cpu += c1 - c0
            batch_loss, batch_correct = tally(loss, logits, yb)  # outside the timed step
            loss_sum += batch_loss * len(idx)
            correct += batch_correct
        val_loss, val_acc = evaluate_val()
        r = {
            "epoch": epoch,
            "train_loss": loss_sum / n,
            "train_acc": correct / n,
            "val_loss": val_loss,
            "val_acc": val_acc,
            "train_images": n,
            "measured_sec": measured,
            "imgs_per_sec": n / measured,
            "cpu_sec": cpu,
        }
        print_epoch(r)
        records.append(r)
    return records


def iters_bench(args, x_tr, y_tr, setup, forward_context=contextlib.nullcontext):
    """Times single training iterations and forward passes at each --bench-batches size (median
    after warm-up) and returns one record per size.

    setup() builds a fresh seeded model and optimizer and returns (train_step(xb, yb),
    forward(xb)); the forward passes run inside forward_context() (torch: no_grad), entered once
    around the whole loop, never inside the timed calls.
    """
    records = []
    for bs in args.bench_batches:
        k = max(1, min(8, x_tr.shape[0] // bs))  # a few distinct real batches, cycled
        batches = [(x_tr[j * bs : (j + 1) * bs], y_tr[j * bs : (j + 1) * bs]) for j in range(k)]
        train_step, forward = setup()
        train_s, fwd_s, train_c, fwd_c = [], [], [], []
        for it in range(args.bench_warmup + args.bench_iters):
            xb, yb = batches[it % k]
            t0, c0 = time.perf_counter(), time.process_time()
            train_step(xb, yb)
            c1, t1 = time.process_time(), time.perf_counter()
            if it >= args.bench_warmup:
                train_s.append(t1 - t0)
                train_c.append(c1 - c0)
        with forward_context():
            for it in range(args.bench_warmup + args.bench_iters):
                xb = batches[it % k][0]
                t0, c0 = time.perf_counter(), time.process_time()
                forward(xb)
                c1, t1 = time.process_time(), time.perf_counter()
                if it >= args.bench_warmup:
                    fwd_s.append(t1 - t0)
                    fwd_c.append(c1 - c0)
        r = {"batch_size": bs, "warmup_iters": args.bench_warmup,
             "measured_iters": args.bench_iters}
        r.update(timing_stats("train_iter", train_s))
        r.update(timing_stats("forward", fwd_s))
        r["train_iter_cpu_median_ms"] = median(train_c) * 1e3
        r["forward_cpu_median_ms"] = median(fwd_c) * 1e3
        r["train_imgs_per_sec"] = bs / (r["train_iter_median_ms"] * 1e-3)
        r["forward_imgs_per_sec"] = bs / (r["forward_median_ms"] * 1e-3)
        print_bench_record(r)
        records.append(r)
    return records


# ---------------------------------------------------------------------------------------------
# Context and output


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def blas_info():
    """threadpoolctl's view of the loaded BLAS/OpenMP pools (None if threadpoolctl is missing)."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl.threadpool_info()


def context(threads):
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "hostname": socket.gethostname(),
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "loadavg_start": list(os.getloadavg()),
        "python": platform.python_version(),
        "threads": threads,
        "command": [sys.executable] + sys.argv,
        "env": {v: os.environ.get(v) for v in THREAD_ENV_VARS + BLAS_ENV_VARS},
    }


def finish_context(ctx):
    ctx["loadavg_end"] = list(os.getloadavg())


def summarise_epochs(records, warmup_epochs):
    timed = records[warmup_epochs:]
    sec = sum(r["measured_sec"] for r in timed)
    imgs = sum(r["train_images"] for r in timed)
    return sec, imgs / sec if sec > 0 else 0.0


# cpu_sec / *_cpu_median_ms: process CPU time over the same timed steps (all threads). On a shared
# machine, wall time / CPU time of a 1-thread run shows how much of the wall time it really ran.


def print_epoch(r):
    print(
        f"epoch {r['epoch']:3d}  train_loss {r['train_loss']:.4f}  train_acc {r['train_acc']:.4f}  "
        f"val_loss {r['val_loss']:.4f}  val_acc {r['val_acc']:.4f}  "
        f"measured_sec {r['measured_sec']:.3f}  imgs_per_sec {r['imgs_per_sec']:.1f}  "
        f"cpu_sec {r['cpu_sec']:.3f}",
        flush=True,
    )


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def percentile(values, q):
    """Nearest-rank percentile, q in [0, 100]."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(round(q / 100.0 * (len(s) - 1)))))
    return s[k]


def timing_stats(prefix, seconds):
    ms = [t * 1e3 for t in seconds]
    return {
        f"{prefix}_median_ms": median(ms),
        f"{prefix}_mean_ms": sum(ms) / len(ms),
        f"{prefix}_min_ms": min(ms),
        f"{prefix}_p10_ms": percentile(ms, 10),
        f"{prefix}_p90_ms": percentile(ms, 90),
    }


def print_bench_record(r):
    print(
        f"BATCH={r['batch_size']} TRAIN_ITER_MEDIAN_MS={r['train_iter_median_ms']:.4f} "
        f"FORWARD_MEDIAN_MS={r['forward_median_ms']:.4f} "
        f"TRAIN_IMGS_PER_SEC={r['train_imgs_per_sec']:.2f} "
        f"(train p10 {r['train_iter_p10_ms']:.4f} p90 {r['train_iter_p90_ms']:.4f} "
        f"cpu-median {r['train_iter_cpu_median_ms']:.4f} ms; "
        f"forward p10 {r['forward_p10_ms']:.4f} p90 {r['forward_p90_ms']:.4f} "
        f"cpu-median {r['forward_cpu_median_ms']:.4f} ms)",
        flush=True,
    )


def report_iters_bench(args, out, ctx, records):
    """The --iters-bench run's JSON (out: the peer's facts, ctx: its context())."""
    out["mode"] = "iters-bench"
    out["records"] = records
    finish_context(ctx)
    write_json(args.json, out)


def report_training(args, out, ctx, records, test_loss, test_acc):
    """The training run's JSON and its last stdout lines (MEASURED_SEC=... IMGS_PER_SEC=...)."""
    sec, ips = summarise_epochs(records, args.warmup_epochs)
    cpu_sec = sum(r["cpu_sec"] for r in records[args.warmup_epochs:])
    finish_context(ctx)
    out.update(mode="train", records=records, test_loss=test_loss, test_acc=test_acc,
               measured_sec=sec, imgs_per_sec=ips, cpu_sec=cpu_sec,
               measured_epochs=args.epochs - args.warmup_epochs)
    write_json(args.json, out)
    print(f"test_loss {test_loss:.4f}  test_acc {test_acc:.4f}")
    print(f"MEASURED_SEC={sec:.6f} IMGS_PER_SEC={ips:.2f}", flush=True)


def write_json(path, obj):
    if path is None:
        return
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)
