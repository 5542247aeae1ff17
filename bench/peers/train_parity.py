"""Step-for-step parity of `nnperf train --model <ResNet>` with PyTorch: the same initial
weights, the same data, the same recipe, compared epoch by epoch.

The torchvision model is built and initialised once (torch's seed); its weights are written in
nnperf's checkpoint format (docs/checkpoint.md) and nnperf starts from them
(`--init-weights`). Each epoch is a single full-batch step (--batch-size = --limit-train,
no augmentation), so the data order cannot differ: both sides take the same SGD Nesterov step
with weight decay, the same warm-up + cosine learning rate and BatchNorm in training mode, then
evaluate the first --limit-test test images with the running statistics. Printed per epoch:
both sides' train loss (of the step, before its update), test loss and test accuracy, and the
relative differences; the JSON keeps them all.

  train_parity.py --nnperf build/nnperf --model resnet18 --limit-train 256 --epochs 12 --json F

Float32 sums in another order differ in the last bits; an implementation that matches shows
relative loss differences near 1e-6 on the first step, growing slowly with the steps; a
different rule (initialisation, momentum, weight decay, BatchNorm statistics) shows up as a
difference of percent on the first few steps.
"""

import argparse
import copy
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common  # noqa: E402
import train_torch  # noqa: E402  (data, model, schedule of the torch peer)
from nnperf_format import read_weights, write_weights  # noqa: E402


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--nnperf", required=True, help="the nnperf binary")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--data", default=peer_common.DEFAULT_DATA_DIR)
    ap.add_argument("--limit-train", type=int, default=256, help="the batch: one step per epoch")
    ap.add_argument("--limit-test", type=int, default=500)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=5e-4)
    ap.add_argument("--warmup", type=int, default=4, help="optimizer steps of linear warm-up")
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--algorithm", default="guess", help="nnperf's convolution algorithm")
    ap.add_argument("--json", default=None, metavar="FILE")
    a = ap.parse_args(argv)
    if a.limit_train < 2 or a.limit_test < 1 or a.epochs < 1 or a.threads < 1:
        ap.error("--limit-train >= 2, --limit-test, --epochs and --threads >= 1")
    return a


def weight_differences(ours, model, initial):
    """Per tensor: max |ours - torch| / max |torch - initial| after the last step (the
    difference relative to the change the training made), worst first."""
    import torch

    diffs = []
    for name, p in list(model.named_parameters()) + list(model.named_buffers()):
        key = ("params." if isinstance(p, torch.nn.Parameter) else "buffers.") + name
        if key not in ours:
            continue
        v = p.detach().double().numpy()
        o, v0 = ((x.T if x.shape != v.shape else x) for x in (ours[key], initial[key]))
        scale = float(abs(v - v0).max()) or 1.0
        diffs.append((key, float(abs(o - v).max()) / scale))
    return sorted(diffs, key=lambda d: -d[1])


def run_torch(a, torch, model, data, mean, std, dtype):
    model.to(dtype)
    x_tr, y_tr = (torch.from_numpy(v) for v in data["train"])
    x_te, y_te = (torch.from_numpy(v) for v in data["test"])
    x_tr, x_te = x_tr.to(dtype), x_te.to(dtype)
    mean_t = torch.tensor(mean, dtype=dtype)[None, :, None, None]
    std_t = torch.tensor(std, dtype=dtype)[None, :, None, None]
    x_tr, x_te = (x_tr - mean_t) / std_t, (x_te - mean_t) / std_t
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, nesterov=True,
                          weight_decay=a.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=a.label_smoothing)
    out = []
    for step in range(a.epochs):
        model.train()
        for g in opt.param_groups:
            g["lr"] = train_torch.lr_at(step, a.lr, a.warmup, a.epochs)
        opt.zero_grad(set_to_none=True)
        logits = model(x_tr)
        loss = loss_fn(logits, y_tr)
        loss.backward()
        opt.step()
        model.eval()
        with torch.no_grad():
            t = model(x_te)
            t_loss = float(torch.nn.functional.cross_entropy(t, y_te))
            t_acc = float((t.argmax(1) == y_te).float().mean())
        out.append({"train_loss": float(loss.detach()),
                    "train_acc": float((logits.argmax(1) == y_tr).float().mean()),
                    "test_loss": t_loss, "test_acc": t_acc})
    return out


def run_nnperf(a, weights, folder):
    cmd = [a.nnperf, "train", "--model", a.model, "--data", a.data,
           "--limit-train", str(a.limit_train), "--limit-test", str(a.limit_test),
           "--batch-size", str(a.limit_train), "--epochs", str(a.epochs), "--lr", str(a.lr),
           "--momentum", str(a.momentum), "--weight-decay", str(a.weight_decay),
           "--warmup", str(a.warmup), "--label-smoothing", str(a.label_smoothing),
           "--seed", str(a.seed), "--threads", str(a.threads), "--no-augment",
           "--algorithm", a.algorithm, "--init-weights", weights, "--out-dir", folder, "--progress", "quiet",
           "--no-tensorboard"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(folder, "training_metrics.csv"), newline="") as f:
        records = [{k: float(r[k]) for k in ("train_loss", "train_acc", "test_loss", "test_acc")}
                   for r in csv.DictReader(f)]
    final = [n for n in os.listdir(folder) if n.endswith("_final_weights.ckpt")]
    if len(final) != 1:
        sys.exit(f"error: {folder}: expected one *_final_weights.ckpt, found {final}")
    return records, read_weights(os.path.join(folder, final[0]))


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def main(argv=None):
    a = parse_args(argv)
    peer_common.set_thread_env(a.threads)
    import torch

    torch.set_num_threads(a.threads)
    ctx = peer_common.context(a.threads)
    data_args = argparse.Namespace(data=a.data, limit_train=a.limit_train,
                                   limit_test=a.limit_test)
    data, classes, mean, std, name = train_torch.load_data(data_args)
    torch.manual_seed(a.seed)
    model = train_torch.make_model(torch, a.model, data["train"][0].shape[1], classes)
    exact = copy.deepcopy(model)
    with tempfile.TemporaryDirectory(prefix="nnperf_parity_") as tmp:
        weights = os.path.join(tmp, "init.ckpt")
        write_weights(weights, a.model, model)
        initial = read_weights(weights)
        ours, our_weights = run_nnperf(a, weights, os.path.join(tmp, "run"))
    runs = {"nnperf": ours,
            "torch": run_torch(a, torch, model, data, mean, std, torch.float32),
            "torch_float64": run_torch(a, torch, exact, data, mean, std, torch.float64)}
    torch_weights = {k: v.detach().float().numpy() for k, v in
                     list(model.named_parameters()) + list(model.named_buffers())}
    diffs = {"nnperf": weight_differences(our_weights, exact, initial),
             "torch": weight_differences(torch_as_ours(torch_weights, our_weights), exact,
                                         initial)}
    rows = report(a, name, runs, diffs)
    peer_common.finish_context(ctx)
    peer_common.write_json(a.json, {"peer": "torch", "version": torch.__version__,
                                    "context": ctx, "recipe": vars(a), "steps": rows,
                                    "final_weight_differences": {k: dict(v)
                                                                 for k, v in diffs.items()}})


def torch_as_ours(torch_weights, ours):
    """torch's float32 weights under nnperf's names and layouts, to measure them as ours."""
    out = {}
    for key, v in ours.items():
        name = key.split(".", 1)[1]
        if name in torch_weights:
            w = torch_weights[name]
            out[key] = w.T if w.shape != v.shape else w
    return out


def report(a, name, runs, diffs):
    """Prints per step the train and test loss of both float32 runs with their relative
    differences from the float64 run; returns the rows."""
    print(f"{a.model} on {name}: {a.limit_train} images per full-batch step, {a.epochs} steps, "
          f"lr {a.lr} (warm-up {a.warmup}), momentum {a.momentum} nesterov, wd {a.weight_decay}")
    print("relative difference from torch in float64 (the exact run): nnperf | torch float32")
    print(f"{'step':>4} {'train loss f64':>14} {'nnperf':>9} {'torch':>9} | "
          f"{'test loss f64':>13} {'nnperf':>9} {'torch':>9} | test acc nnperf torch f64")
    rows = []
    for i, (o, t, e) in enumerate(zip(runs["nnperf"], runs["torch"], runs["torch_float64"]), 1):
        r = {"step": i, "nnperf": o, "torch": t, "torch_float64": e,
             "nnperf_train_loss_rel": rel(o["train_loss"], e["train_loss"]),
             "torch_train_loss_rel": rel(t["train_loss"], e["train_loss"]),
             "nnperf_test_loss_rel": rel(o["test_loss"], e["test_loss"]),
             "torch_test_loss_rel": rel(t["test_loss"], e["test_loss"])}
        rows.append(r)
        print(f"{i:>4} {e['train_loss']:>14.6f} {r['nnperf_train_loss_rel']:>9.2e} "
              f"{r['torch_train_loss_rel']:>9.2e} | {e['test_loss']:>13.6f} "
              f"{r['nnperf_test_loss_rel']:>9.2e} {r['torch_test_loss_rel']:>9.2e} | "
              f"{o['test_acc']:>15.4f} {t['test_acc']:.4f} {e['test_acc']:.4f}")
    for who in ("nnperf", "torch"):
        d = diffs[who]
        print(f"{who} after step {a.epochs}: max |{who} - f64| / max |f64 - initial| per "
              "tensor, worst 4 and median:")
        for tensor, v in d[:4] + [d[len(d) // 2]]:
            print(f"  {v:9.2e}  {tensor}")
    return rows


if __name__ == "__main__":
    main()
