#!/usr/bin/env python3
"""The MLP peer in PyTorch (CPU): the recipe nnperf trains (the activation-timing study's net by
default, the MLP implementation benchmark's net with --hidden 128,128,128), on the real
Fashion-MNIST IDX files, timed the way nnperf times its training: only the training steps
(batching from pre-loaded tensors, forward, loss, backward, optimizer step), never evaluation. Also a per-iteration mode (--iters-bench) matching
`nnperf mlp-bench`.

Run `mlp_torch.py --help` for the flags; the last stdout line is
`MEASURED_SEC=%.6f IMGS_PER_SEC=%.2f`.
"""

import os
import sys

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

    def step(xb, yb):
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss, logits

    def tally(loss, logits, yb):
        with torch.no_grad():
            return loss.item(), (logits.argmax(1) == yb).sum().item()

    model.train()
    return pc.train_epochs(args, t["x_train"], t["y_train"], step, tally,
                           lambda: evaluate(torch, model, t["x_val"], t["y_val"]),
                           to_index=torch.from_numpy)


def iters_bench(torch, args, t):
    F = torch.nn.functional
    sizes = pc.recipe_of(args)["sizes"]

    gpu = getattr(args, "device", "cpu") == "cuda"
    x_tr, y_tr = t["x_train"], t["y_train"]
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = False  # FP32 math, as nnperf's cublas row
        x_tr, y_tr = x_tr.cuda(), y_tr.cuda()

    def setup():
        torch.manual_seed(args.seed)
        model = build_model(torch, sizes, args.activation, args.init)
        if gpu:
            model = model.cuda()
        opt = make_optimizer(torch, args, model)

        def train_step(xb, yb):
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if gpu:
                loss.item()
                torch.cuda.synchronize()

        def forward(xb):
            out = model(xb)
            if gpu:
                torch.cuda.synchronize()
            return out

        return train_step, forward

    # forward as inference: no autograd graph is recorded
    return pc.iters_bench(args, x_tr, y_tr, setup, forward_context=torch.no_grad)


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
    if args.device == "cuda" and not args.iters_bench:
        sys.exit("error: --device cuda: only with --iters-bench")
    if args.iters_bench:
        if args.device == "cuda":
            out["cuda_device"] = torch.cuda.get_device_name(0)
        pc.report_iters_bench(args, out, ctx, iters_bench(torch, args, t))
        return 0

    torch.manual_seed(args.seed)
    model = build_model(torch, out["recipe"]["sizes"], args.activation, args.init)
    opt = make_optimizer(torch, args, model)
    records = train(torch, args, t, model, opt)
    test_loss, test_acc = evaluate(torch, model, t["x_test"], t["y_test"])
    pc.report_training(args, out, ctx, records, test_loss, test_acc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
