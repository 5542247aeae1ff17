"""PyTorch peer of `nnperf train --model <CNN>`: nn-perf's train.py recipe (torchvision model,
SGD Nesterov with weight decay, linear warm-up then cosine per step, label smoothing, random
crop with 4-pixel padding + horizontal flip, per-channel normalisation) on the same data files,
and cloudml-project1's fixed-iteration driver (--iters), on the CPU.

  train_torch.py --model resnet18 --data /usr/share/datasets/fashion-mnist --epochs 5 \
      --batch-size 128 --seed 1 --threads 2 --json F
  train_torch.py --model resnet18 --iters 10 --warmup-iters 3 --batch-size 32 --input-size 32 \
      --num-classes 10 --threads 1 --json F

Epoch mode writes {"peer": "torch", "version", "context", "recipe", "epochs": [{epoch,
train_loss, train_acc, test_loss, test_acc, lr, seconds}], "final_test_acc", "best_test_acc",
"measured_sec", "imgs_per_sec"}; driver mode prints `MEASURED_SEC=... IMGS_PER_SEC=... BATCH=...
ARCH=... BACKEND=cpu` and writes {"peer", "version", "context", "record": {model, batch_size,
input_size, warmup_iters, iters, measured_sec, sec_per_iter, imgs_per_sec}}.
Data order and augmentation draws come from torch's generator seeded with --seed (--streams
torch), or are nnperf's own for the same --seed (--streams nnperf: nnperf_format.py replays
nnperf's generator). --write-init FILE writes the initial weights (torchvision's initialisation
under --seed) in nnperf's format and exits; `nnperf train --init-weights FILE` then starts from
them. With both, the two runs share weights, batches and crops, and differ only in arithmetic.
"""

import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nnperf_format  # noqa: E402  (nnperf's weights format and random streams)
import peer_common  # noqa: E402  (IDX reader, run context, JSON writer)

CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2023, 0.1994, 0.2010)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--data", default=peer_common.DEFAULT_DATA_DIR,
                    help="IDX folder (train-/t10k-*-ubyte[.gz]) or CIFAR-10 binary folder")
    ap.add_argument("--epochs", type=int, default=80)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=500, help="optimizer steps of linear warm-up")
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    ap.add_argument("--no-augment", action="store_true")
    ap.add_argument("--limit-train", type=int, default=0)
    ap.add_argument("--limit-test", type=int, default=0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--streams", choices=("torch", "nnperf"), default="torch",
                    help="data order and crop/flip draws: torch's generator, or nnperf's for --seed")
    ap.add_argument("--step-log", default=None, metavar="FILE",
                    help="append step,loss,lr of every training step (as nnperf train --step-log)")
    ap.add_argument("--write-init", default=None, metavar="FILE",
                    help="write the initial weights in nnperf's format and exit")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32",
                    help="arithmetic of model, data and optimizer (float64: the exact run)")
    ap.add_argument("--stop-after-steps", type=int, default=0, metavar="N",
                    help="end the run after training step N (no evaluation of the partial epoch)")
    ap.add_argument("--save-state", default=None, metavar="FILE",
                    help="with --stop-after-steps: torch.save model, optimizer, step, epoch, batch")
    ap.add_argument("--load-state", default=None, metavar="FILE",
                    help="continue from a --save-state file (mid-epoch; --dtype converts it)")
    ap.add_argument("--batchnorm-float64", action="store_true",
                    help="every BatchNorm2d computes in float64 (input cast up, result cast back; "
                         "running statistics kept float32), as nnperf's BatchNorm does")
    ap.add_argument("--no-mkldnn", action="store_true",
                    help="torch.backends.mkldnn.enabled = False (PyTorch's native convolutions)")
    ap.add_argument("--probe", default=None, metavar="FILE",
                    help="JSON lines: per step, every layer's output, BatchNorm batch statistics "
                         "and every parameter's weight, gradient and update norms")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the steps run (cuda: TF32 off, cudnn.benchmark as "
                         "--cudnn-benchmark; epoch mode: batches made on the CPU and copied, as "
                         "nnperf's loader)")
    ap.add_argument("--drop-last", action="store_true",
                    help="epoch mode: leave out each epoch's last partial batch (as nnperf's GPU "
                         "trainer did before it trained short batches)")
    ap.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", default=None, metavar="FILE")
    # driver mode
    ap.add_argument("--iters", type=int, default=0, help="fixed-iteration driver: measured steps")
    ap.add_argument("--warmup-iters", type=int, default=5)
    ap.add_argument("--input-size", type=int, default=224)
    ap.add_argument("--in-channels", type=int, default=3)
    ap.add_argument("--num-classes", type=int, default=1000)
    ap.add_argument("--cuda-graph", action="store_true",
                    help="driver with --device cuda: the warm-up steps on a side stream, then one "
                         "step (forward, loss, backward, SGD step) captured by torch.cuda.graph and "
                         "replayed for each measured step (PyTorch's whole-network capture), as "
                         "nnperf's train --launch graph")
    a = ap.parse_args(argv)
    if a.threads < 1 or a.batch_size < 1 or a.epochs < 1 or a.warmup < 0 or a.iters < 0:
        ap.error("--threads, --batch-size and --epochs must be >= 1; --warmup, --iters >= 0")
    if a.stop_after_steps < 0 or (a.save_state and a.stop_after_steps == 0):
        ap.error("--save-state needs --stop-after-steps N >= 1")
    if a.iters > 0 and (a.dtype != "float32" or a.load_state or a.probe or a.stop_after_steps):
        ap.error("--dtype, --load-state, --probe and --stop-after-steps are for epoch mode")
    if a.cuda_graph and (a.device != "cuda" or a.iters == 0 or a.warmup_iters < 1):
        ap.error("--cuda-graph: the driver on --device cuda (--iters N) with --warmup-iters >= 1 "
                 "(the optimizer's state and cuDNN's choices are made before the capture)")
    if a.device != "cpu" and (a.dtype != "float32" or a.probe or a.batchnorm_float64):
        ap.error("--device cuda: not with --dtype float64, --probe or --batchnorm-float64")
    return a


# ---------------------------------------------------------------------------------------------
# Data: float32 N x C x H x W in [0, 1] and int64 labels, as nnperf's readers produce them


def load_idx(folder):
    import numpy as np

    def find(prefix, kind):
        for name in (f"{prefix}-{kind}", f"{prefix}-{kind}.gz"):
            if os.path.exists(os.path.join(folder, name)):
                return os.path.join(folder, name)
        sys.exit(f"error: {folder}: no {prefix}-{kind}[.gz]")

    out = {}
    for split, prefix in (("train", "train"), ("test", "t10k")):
        x = peer_common.read_idx(find(prefix, "images-idx3-ubyte"))
        y = peer_common.read_idx(find(prefix, "labels-idx1-ubyte"))
        out[split] = (x[:, None, :, :].astype(np.float32) / np.float32(255.0), y.astype(np.int64))
    return out, int(max(out["train"][1].max(), out["test"][1].max())) + 1


def load_cifar10(folder):
    import numpy as np

    d = os.path.join(folder, "cifar-10-batches-bin")
    if os.path.isdir(d):
        folder = d

    def read(names):
        raw = b"".join(open(os.path.join(folder, n), "rb").read() for n in names)
        rec = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 3073)
        return (rec[:, 1:].reshape(-1, 3, 32, 32).astype(np.float32) / np.float32(255.0),
                rec[:, 0].astype(np.int64))

    train = read([f"data_batch_{i}.bin" for i in range(1, 6)])
    return {"train": train, "test": read(["test_batch.bin"])}, 10


def load_data(a):
    is_cifar = any(os.path.exists(os.path.join(a.data, n))
                   for n in ("data_batch_1.bin", "cifar-10-batches-bin"))
    data, classes = load_cifar10(a.data) if is_cifar else load_idx(a.data)
    for split, limit in (("train", a.limit_train), ("test", a.limit_test)):
        if limit > 0:
            x, y = data[split]
            data[split] = (x[:limit], y[:limit])
    if is_cifar:
        mean, std = CIFAR10_MEAN, CIFAR10_STD
    else:  # per channel over the training images, population std (as nnperf's channel_norm)
        x = data["train"][0].astype("float64")
        mean = tuple(float(v) for v in x.mean(axis=(0, 2, 3)))
        std = tuple(float(v) for v in x.std(axis=(0, 2, 3)))
    return data, classes, mean, std, ("cifar-10" if is_cifar else os.path.basename(os.path.normpath(a.data)))


# ---------------------------------------------------------------------------------------------
# Model, schedule, augmentation


def make_model(torch, name, in_channels, classes):
    import torchvision

    m = getattr(torchvision.models, name)(weights=None, num_classes=classes)
    if in_channels != 3:
        if hasattr(m, "conv1"):  # ResNets
            c = m.conv1
            m.conv1 = torch.nn.Conv2d(in_channels, c.out_channels, c.kernel_size, c.stride,
                                      c.padding, bias=c.bias is not None)
            # torchvision's ResNet initialises every conv so; a replaced one must be too
            # (nn.Conv2d's own default would give conv1 weights ~3x larger than nnperf's).
            torch.nn.init.kaiming_normal_(m.conv1.weight, mode="fan_out", nonlinearity="relu")
        else:
            sys.exit(f"error: --model {name}: only ResNets are adapted to {in_channels} channels")
    return m


def lr_at(step, base, warmup, total):
    """nnperf's WarmupCosine (train/schedule.h)."""
    if warmup > 0 and step < warmup:
        return base * (step + 1) / warmup
    p = min(max((step - warmup) / max(1, total - warmup), 0.0), 1.0)
    return base * 0.5 * (1.0 + math.cos(math.pi * p))


def torch_draws(torch, n, gen, pad=4):
    """(dy, dx, flip) tensors of n samples from torch's generator."""
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=gen)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=gen)
    return dy, dx, torch.rand(n, generator=gen) < 0.5


def nnperf_draws(torch, seed, epoch, first, n, pad=4):
    """nnperf's draws of positions first..first+n-1 of an epoch (0-based), training loader seed."""
    d = [nnperf_format.draw_sample(seed + 1, epoch - 1, first + i, pad) for i in range(n)]
    return (torch.tensor([v[0] for v in d]), torch.tensor([v[1] for v in d]),
            torch.tensor([v[2] for v in d], dtype=torch.bool))


def augment(torch, x, draws, pad=4):
    """RandomCrop(size, padding=pad) on zero-padded [0,1] pixels at (dy, dx), then
    RandomHorizontalFlip where flip is set."""
    n, c, h, w = x.shape
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad))
    dy, dx, flip = draws
    rows = (dy[:, None] + torch.arange(h)[None, :])  # n x h
    cols = (dx[:, None] + torch.arange(w)[None, :])  # n x w
    idx_n = torch.arange(n)[:, None, None, None]
    idx_c = torch.arange(c)[None, :, None, None]
    out = padded[idx_n, idx_c, rows[:, None, :, None], cols[:, None, None, :]]
    out[flip] = out[flip].flip(-1)
    return out


# ---------------------------------------------------------------------------------------------


class Probe:
    """Per-step diagnostics (--probe): forward hooks record every leaf module's output (RMS, max
    |x|) and, for BatchNorm in training mode, the batch variance over N x H x W per channel (min,
    max) and how many values each channel's statistic averages; after the step, every parameter's
    weight norm, gradient norm and update norm. One JSON object per step."""

    def __init__(self, torch, model, path):
        self.torch, self.model, self.out, self.layers = torch, model, open(path, "a", buffering=1), {}
        for name, m in model.named_modules():
            if len(list(m.children())) == 0:
                m.register_forward_hook(self._hook(name))

    def _hook(self, name):
        torch = self.torch

        def hook(module, inputs, output):
            with torch.no_grad():
                y = output.detach().double()
                r = {"rms": float(y.pow(2).mean().sqrt()), "max_abs": float(y.abs().max())}
                if isinstance(module, torch.nn.BatchNorm2d) and module.training:
                    x = inputs[0].detach().double()
                    var = x.var(dim=(0, 2, 3), unbiased=False)
                    r.update({"batch_var_min": float(var.min()), "batch_var_max": float(var.max()),
                              "values_per_channel": x.shape[0] * x.shape[2] * x.shape[3]})
                self.layers[name] = r
        return hook

    def before_step(self):
        self.weights = {n: p.detach().double().clone() for n, p in self.model.named_parameters()}

    def after_step(self, step, loss, lr):
        params = {}
        for n, p in self.model.named_parameters():
            w0 = self.weights[n]
            params[n] = {"weight": float(w0.norm()), "grad": float(p.grad.double().norm()),
                         "update": float((p.detach().double() - w0).norm())}
        self.out.write(json.dumps({"step": step, "loss": loss, "lr": lr, "layers": self.layers,
                                   "params": params}) + "\n")
        self.layers = {}


def open_step_log(path):
    new = not os.path.exists(path) or os.path.getsize(path) == 0
    f = open(path, "a", buffering=1)
    if new:
        f.write("step,loss,lr\n")
    return f


def save_state(torch, path, model, opt, pos):
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), **pos}, path)
    print(f"state after step {pos['step']} (epoch {pos['epoch']}, batch {pos['batch']}) "
          f"written to {path}", flush=True)


def load_state(torch, path, model, opt, dtype):
    st = torch.load(path, weights_only=False)
    model.load_state_dict(st["model"])
    opt.load_state_dict(st["optimizer"])  # converts the momentum buffers to the parameters' dtype
    model.to(dtype)
    return st["step"], st["epoch"], st["batch"]


def batch_at(torch, a, data, epoch, b, order):
    """Batch b (0-based) of epoch (1-based): augmented, normalised images and labels."""
    x_tr, y_tr, mean_t, std_t, gen = data
    idx = order[b * a.batch_size:(b + 1) * a.batch_size]
    x = x_tr[idx]
    if not a.no_augment:
        draws = (nnperf_draws(torch, a.seed, epoch, b * a.batch_size, len(idx))
                 if a.streams == "nnperf" else torch_draws(torch, len(idx), gen))
        x = augment(torch, x, draws)
    return (x - mean_t) / std_t, y_tr[idx]


def evaluate(torch, model, x_te, y_te, mean_t, std_t, batch_size, dev):
    model.eval()
    t_loss, t_correct = 0.0, 0
    with torch.no_grad():
        for b in range(0, x_te.shape[0], batch_size):
            x = ((x_te[b:b + batch_size] - mean_t) / std_t).to(dev)
            out = model(x)
            y = y_te[b:b + batch_size].to(dev)
            t_loss += float(torch.nn.functional.cross_entropy(out, y, reduction="sum"))
            t_correct += int((out.argmax(1) == y).sum())
    return t_loss / x_te.shape[0], t_correct / x_te.shape[0]


def run_epochs(a, torch):
    data, classes, mean, std, name = load_data(a)
    dtype = torch.float64 if a.dtype == "float64" else torch.float32
    x_tr, y_tr = (torch.from_numpy(v) for v in data["train"])
    x_te, y_te = (torch.from_numpy(v) for v in data["test"])
    x_tr, x_te = x_tr.to(dtype), x_te.to(dtype)
    mean_t = torch.tensor(mean, dtype=dtype)[None, :, None, None]
    std_t = torch.tensor(std, dtype=dtype)[None, :, None, None]
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)
    model = make_model(torch, a.model, x_tr.shape[1], classes)
    if a.write_init:
        nnperf_format.write_weights(a.write_init, a.model, model)
        print(f"initial weights of {a.model} (seed {a.seed}) written to {a.write_init}")
        return None
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
    model.to(dtype).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, nesterov=True,
                          weight_decay=a.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=a.label_smoothing)
    per_epoch = (x_tr.shape[0] // a.batch_size if a.drop_last
                 else (x_tr.shape[0] + a.batch_size - 1) // a.batch_size)
    total = a.epochs * per_epoch
    step, first_epoch, first_batch = 0, 1, 0
    if a.load_state:
        step, first_epoch, first_batch = load_state(torch, a.load_state, model, opt, dtype)
    step_log = open_step_log(a.step_log) if a.step_log else None
    probe = Probe(torch, model, a.probe) if a.probe else None
    records, best = [], 0.0
    for epoch in range(first_epoch, a.epochs + 1):
        model.train()
        if a.streams == "nnperf":  # nnperf's training loader: seed + 1, epochs from 0
            order = torch.tensor(nnperf_format.shuffled_order(x_tr.shape[0], a.seed + 1, epoch - 1))
        else:
            order = torch.randperm(x_tr.shape[0], generator=gen)
        loss_sum, correct, seen, t0 = 0.0, 0, 0, time.perf_counter()
        for b in range(first_batch if epoch == first_epoch else 0, per_epoch):
            x, y = batch_at(torch, a, (x_tr, y_tr, mean_t, std_t, gen), epoch, b, order)
            x, y = x.to(dev), y.to(dev)
            for g in opt.param_groups:
                g["lr"] = lr_at(step, a.lr, a.warmup, total)
            opt.zero_grad(set_to_none=True)
            if probe:
                probe.before_step()
            out = model(x)
            loss = loss_fn(out, y)
            loss.backward()
            opt.step()
            step += 1
            if step_log is not None:
                step_log.write(f"{step},{loss.item():.9g},{opt.param_groups[0]['lr']:.9g}\n")
            if probe:
                probe.after_step(step, loss.item(), opt.param_groups[0]["lr"])
            loss_sum += loss.item() * len(y)
            correct += int((out.argmax(1) == y).sum())
            seen += len(y)
            if step == a.stop_after_steps:
                if a.save_state:
                    save_state(torch, a.save_state, model, opt,
                               {"step": step, "epoch": epoch, "batch": b + 1})
                return None
        seconds = time.perf_counter() - t0  # loss.item() each step: the device has finished
        test_loss, test_acc = evaluate(torch, model, x_te, y_te, mean_t, std_t, a.batch_size, dev)
        r = {"epoch": epoch, "images": seen, "train_loss": loss_sum / seen, "train_acc": correct / seen,
             "test_loss": test_loss, "test_acc": test_acc,
             "lr": opt.param_groups[0]["lr"], "seconds": seconds}
        best = max(best, r["test_acc"])
        records.append(r)
        print(f"epoch {epoch}/{a.epochs}: train_loss {r['train_loss']:.4f} train_acc "
              f"{r['train_acc']:.4f} test_loss {r['test_loss']:.4f} test_acc {r['test_acc']:.4f} "
              f"lr {r['lr']:.5f} | {seconds:.2f} s", flush=True)
    sec = sum(r["seconds"] for r in records)
    ips = sum(r["images"] for r in records) / sec
    print(f"MEASURED_SEC={sec:.6f} IMGS_PER_SEC={ips:.2f} BATCH={a.batch_size} ARCH={a.model} "
          f"BACKEND={a.device}", flush=True)
    return {"dataset": name, "epochs": records, "final_test_acc": records[-1]["test_acc"],
            "best_test_acc": best, "measured_sec": sec, "imgs_per_sec": ips,
            "norm": {"mean": mean, "std": std}}


def run_driver(a, torch):
    dev = torch.device(a.device)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
    sync = torch.cuda.synchronize if a.device == "cuda" else (lambda: None)
    torch.manual_seed(a.seed)
    model = make_model(torch, a.model, a.in_channels, a.num_classes).to(dev)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator().manual_seed(a.seed)
    xs = [torch.rand(a.batch_size, a.in_channels, a.input_size, a.input_size, generator=gen)
          for _ in range(2)]
    ys = [torch.randint(0, a.num_classes, (a.batch_size,), generator=gen) for _ in range(2)]
    if a.cuda_graph:
        sec = graphed_steps(a, torch, model, opt, xs, ys)
    else:
        t0 = time.perf_counter()
        for i in range(a.warmup_iters + a.iters):
            if i == a.warmup_iters:
                sync()
                t0 = time.perf_counter()
            x, y = xs[i % 2].to(dev), ys[i % 2].to(dev)  # uploaded every step, as nnperf's driver
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            loss.item()  # one synchronisation per step, as nnperf's (its loss comes back)
        sync()
        sec = time.perf_counter() - t0
    ips = a.batch_size * a.iters / sec
    print(f"MEASURED_SEC={sec:.6f} IMGS_PER_SEC={ips:.2f} BATCH={a.batch_size} ARCH={a.model} "
          f"BACKEND={a.device}", flush=True)
    return {"record": {"model": a.model, "batch_size": a.batch_size, "input_size": a.input_size,
                       "warmup_iters": a.warmup_iters, "iters": a.iters, "measured_sec": sec,
                       "sec_per_iter": sec / a.iters, "imgs_per_sec": ips, "device": a.device,
                       "cuda_graph": a.cuda_graph}}


def graphed_steps(a, torch, model, opt, xs, ys):
    """PyTorch's whole-network capture (the CUDA graphs notes of its documentation): the warm-up
    steps on a side stream (cudnn.benchmark's choices and SGD's momentum buffers made there), one
    step captured, then each measured step a copy of its batch into the captured inputs, a
    replay and the loss read back. Returns the measured steps' seconds."""
    F = torch.nn.functional
    dev = torch.device("cuda")
    static_x = torch.empty_like(xs[0], device=dev)
    static_y = torch.empty_like(ys[0], device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(a.warmup_iters):
            static_x.copy_(xs[i % 2])
            static_y.copy_(ys[i % 2])
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(static_x), static_y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # the gradients then live in the graph's own pool
    with torch.cuda.graph(graph):
        static_loss = F.cross_entropy(model(static_x), static_y)
        static_loss.backward()
        opt.step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(a.warmup_iters, a.warmup_iters + a.iters):
        static_x.copy_(xs[i % 2])  # uploaded every step, as nnperf's driver
        static_y.copy_(ys[i % 2])
        graph.replay()
        static_loss.item()  # one synchronisation per step, as nnperf's
    torch.cuda.synchronize()
    return time.perf_counter() - t0


def batchnorm_float64(torch):
    """BatchNorm2d.forward in float64: F.batch_norm on x.double() with float64 copies of the
    parameters and running statistics (written back), the output cast to the input's dtype."""
    F = torch.nn.functional

    def forward(self, x):
        rm, rv = self.running_mean.double(), self.running_var.double()
        y = F.batch_norm(x.double(), rm, rv, self.weight.double(), self.bias.double(),
                         self.training, self.momentum, self.eps)
        with torch.no_grad():
            self.running_mean.copy_(rm)
            self.running_var.copy_(rv)
        return y.to(x.dtype)

    torch.nn.BatchNorm2d.forward = forward


def main(argv=None):
    a = parse_args(argv)
    peer_common.set_thread_env(a.threads)
    import torch

    if a.batchnorm_float64:
        batchnorm_float64(torch)
    if a.no_mkldnn:
        torch.backends.mkldnn.enabled = False

    torch.set_num_threads(a.threads)
    ctx = peer_common.context(a.threads)
    result = run_driver(a, torch) if a.iters > 0 else run_epochs(a, torch)
    if result is None:  # --write-init
        return
    peer_common.finish_context(ctx)
    recipe = {k: v for k, v in vars(a).items() if k != "json"}
    peer_common.write_json(a.json, {"peer": "torch", "version": torch.__version__,
                                    "context": ctx, "recipe": recipe, **result})


if __name__ == "__main__":
    main()
