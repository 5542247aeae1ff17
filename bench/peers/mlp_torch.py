#!/usr/bin/env python3
"""The MLP peer in PyTorch (CPU): the recipe nnperf trains (seed-000 net by default, seed-001 net
with --hidden 128,128,128), on the real Fashion-MNIST IDX files, timed the way nnperf times its
training: only the training steps (batching from pre-loaded tensors, forward, loss, backward,
optimizer step), never evaluation. Also a per-iteration mode (--iters-bench) matching
`nnperf mlp-bench`.

Run `mlp_torch.py --help` for the flags; the last stdout line is
`MEASURED_SEC=%.6f IMGS_PER_SEC=%.2f`.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_common as pc  # noqa: E402  (no numpy/torch import at load time)


def build_model(torch, sizes, activation, init):
    nn = torch.nn
    acts = {
        "relu": nn.ReLU,
        "gelu": nn.GELU,  # approximate='none' (exact erf)
        "sigmoid": nn.Sigmoid,
        "tanh": nn.Tanh,
        "elu": nn.ELU,  # alpha 1
        "leakyrelu": nn.LeakyReLU,  # slope 0.01
        "silu": nn.SiLU,
        "mish": nn.Mish,
    }
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(fan_in, fan_out)  # default init: U(+-1/sqrt(fan_in)) for W and b
        if init == "he":
            nn.init.kaiming_normal_(lin.weight, nonlinearity="relu")
            nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(acts[activation]())
    return nn.Sequential(*layers)


def make_optimizer(torch, args, model):
    impl = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}
    kw = impl[args.torch_optim_impl]
    if args.optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=args.lr, **kw)
    return torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, **kw)


def evaluate(torch, model, x, y):
    F = torch.nn.functional
    loss_sum, correct = 0.0, 0
    model.eval()
    with torch.no_grad():
        for i in range(0, x.shape[0], pc.EVAL_BATCH_SIZE):
            xb, yb = x[i : i + pc.EVAL_BATCH_SIZE], y[i : i + pc.EVAL_BATCH_SIZE]
            logits = model(xb)
            loss_sum += F.cross_entropy(logits, yb, reduction="sum").item()
            correct += (logits.argmax(1) == yb).sum().item()
    model.train()
    return loss_sum / x.shape[0], correct / x.shape[0]


def train(torch, args, t, model, opt):
    F = torch.nn.functional
    x_tr, y_tr = t["x_train"], t["y_train"]
    n, bs = x_tr.shape[0], args.batch_size
    records = []
    model.train()
    for epoch, order in enumerate(pc.epoch_orders(n, args.epochs, args.seed), start=1):
        order_t = torch.from_numpy(order)
        measured, cpu, loss_sum, correct = 0.0, 0.0, 0.0, 0
        for i in range(0, n, bs):
            t0, c0 = time.perf_counter(), time.process_time()
            idx = order_t[i : i + bs]
            xb, yb = x_tr[idx], y_tr[idx]
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            c1, t1 = time.process_time(), time.perf_counter()
            measured += t1 - t0
            cpu += c1 - c0
            with torch.no_grad():  # bookkeeping outside the timed step
                loss_sum += loss.item() * idx.shape[0]
                correct += (logits.argmax(1) == yb).sum().item()
        val_loss, val_acc = evaluate(torch, model, t["x_val"], t["y_val"])
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
        pc.print_epoch(r)
        records.append(r)
    return records


def iters_bench(torch, args, t):
    F = torch.nn.functional
    x_tr, y_tr = t["x_train"], t["y_train"]
    sizes = pc.recipe_of(args)["sizes"]
    records = []
    for bs in args.bench_batches:
        k = max(1, min(8, x_tr.shape[0] // bs))  # a few distinct real batches, cycled
        batches = [(x_tr[j * bs : (j + 1) * bs], y_tr[j * bs : (j + 1) * bs]) for j in range(k)]
        torch.manual_seed(args.seed)
        model = build_model(torch, sizes, args.activation, args.init)
        opt = make_optimizer(torch, args, model)
        train_s, fwd_s, train_c, fwd_c = [], [], [], []
        for it in range(args.bench_warmup + args.bench_iters):
            xb, yb = batches[it % k]
            t0, c0 = time.perf_counter(), time.process_time()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            c1, t1 = time.process_time(), time.perf_counter()
            if it >= args.bench_warmup:
                train_s.append(t1 - t0)
                train_c.append(c1 - c0)
        with torch.no_grad():  # forward as inference: no autograd graph is recorded
            for it in range(args.bench_warmup + args.bench_iters):
                xb = batches[it % k][0]
                t0, c0 = time.perf_counter(), time.process_time()
                model(xb)
                c1, t1 = time.process_time(), time.perf_counter()
                if it >= args.bench_warmup:
                    fwd_s.append(t1 - t0)
                    fwd_c.append(c1 - c0)
        r = {"batch_size": bs, "warmup_iters": args.bench_warmup,
             "measured_iters": args.bench_iters}
        r.update(pc.timing_stats("train_iter", train_s))
        r.update(pc.timing_stats("forward", fwd_s))
        r["train_iter_cpu_median_ms"] = pc.median(train_c) * 1e3
        r["forward_cpu_median_ms"] = pc.median(fwd_c) * 1e3
        r["train_imgs_per_sec"] = bs / (r["train_iter_median_ms"] * 1e-3)
        r["forward_imgs_per_sec"] = bs / (r["forward_median_ms"] * 1e-3)
        pc.print_bench_record(r)
        records.append(r)
    return records


def main(argv=None):
    args = pc.parse_args("torch", "Fashion-MNIST MLP in PyTorch on the CPU (nnperf peer).", argv)
    pc.set_thread_env(args.threads)  # before torch's OpenMP/MKL pools start
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(args.threads)
    if torch.get_num_threads() != args.threads:
        print(f"warning: torch runs {torch.get_num_threads()} threads, asked for {args.threads}",
              file=sys.stderr)

    ctx = pc.context(args.threads)
    cap = torch.backends.cpu.get_cpu_capability()
    print(f"torch {torch.__version__}, CPU capability {cap}, threads {torch.get_num_threads()} "
          f"(interop {torch.get_num_interop_threads()})", flush=True)

    data = pc.load_fashion_mnist(args.data_dir, args.val_split, args.seed)
    t = {k: torch.from_numpy(v) for k, v in data.items()}
    out = {
        "peer": "torch",
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "cpu_capability": cap,
        "mkl": torch.backends.mkl.is_available(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "parallel_info": torch.__config__.parallel_info(),
        "recipe": pc.recipe_of(args),
        "context": ctx,
    }
    if args.iters_bench:
        out["mode"] = "iters-bench"
        out["records"] = iters_bench(torch, args, t)
        pc.finish_context(ctx)
        pc.write_json(args.json, out)
        return 0

    torch.manual_seed(args.seed)
    model = build_model(torch, out["recipe"]["sizes"], args.activation, args.init)
    opt = make_optimizer(torch, args, model)
    records = train(torch, args, t, model, opt)
    test_loss, test_acc = evaluate(torch, model, t["x_test"], t["y_test"])
    sec, ips = pc.summarise_epochs(records, args.warmup_epochs)
    cpu_sec = sum(r["cpu_sec"] for r in records[args.warmup_epochs:])
    pc.finish_context(ctx)
    out.update(mode="train", records=records, test_loss=test_loss, test_acc=test_acc,
               measured_sec=sec, imgs_per_sec=ips, cpu_sec=cpu_sec,
               measured_epochs=args.epochs - args.warmup_epochs)
    pc.write_json(args.json, out)
    print(f"test_loss {test_loss:.4f}  test_acc {test_acc:.4f}")
    print(f"MEASURED_SEC={sec:.6f} IMGS_PER_SEC={ips:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
