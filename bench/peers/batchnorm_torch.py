"""PyTorch peer of `nnperf bench batchnorm`: BatchNorm2d's training pass in FP32 NCHW, as a
training step runs it, on the problems nnperf takes, in nnperf's JSON record format.

  batchnorm_torch.py --problem mb32c64h56w56 [--problem ...] --pass forward|backward \
      [--device cpu|cuda] [--threads 1] [--warmup 3] [--measure 11] [--peak-bw GBPS] [--json F]

forward: F.batch_norm(x, running_mean, running_var, weight, bias, training=True, momentum 0.1,
eps 1e-5) with x, weight and bias requiring gradients (batch statistics, the running statistics
updated, what autograd saves for the backward kept), as BatchNorm2d.forward in training; on a
CUDA device with cuDNN enabled PyTorch sends this to cuDNN's BatchNormalizationForwardTraining.
backward: torch.autograd.grad(y, (x, weight, bias), dy, retain_graph=True) on one forward's graph:
dx, d_weight and d_bias, what a training step's backward does at that layer (plus autograd's own
dispatch, a few microseconds). Each rep timed alone (perf_counter on the CPU; on the GPU a CUDA
event pair per rep, all read after one synchronisation at the end), median over --measure reps
after --warmup untimed ones. Inputs drawn as nnperf draws them (x uniform in [-3, 5), dy in
[-1, 1), weight in [0.5, 1.5), bias in [-1, 1); torch's generator, so not the same numbers);
errors against PyTorch's own float64 pass on the same inputs, as nnperf reports them: per output,
the largest absolute difference over the largest absolute reference value, the largest over the
outputs. Bytes at nnperf's two-pass minimum: forward 12, backward 20 per element.

Records: {"algorithm": "torch", "peer": "torch", "device", "problem", "pass", "status": "ok",
"time_ms_median", "time_ms_min", "time_ms_max", "reps", "bytes", "gb_per_s",
["percent_of_peak_bw"], "max_abs_err", "max_rel_err"}; the context names torch's version, threads
and, on the GPU, the device and whether cuDNN was enabled. `--self-test` checks the descriptor
grammar against nnperf's without torch.
"""

import argparse
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_torch  # noqa: E402  (thread set-up and run context shared with the other peers)

EPS, MOMENTUM = 1e-5, 0.1
BYTES_PER_ELEMENT = {"forward": 12.0, "backward": 20.0}


def parse_problem(text):
    """nnperf's BatchNorm descriptor mbNcNhN[wN] -> (mb, c, h, w); ValueError otherwise."""
    m = re.fullmatch(r"mb(\d+)c(\d+)h(\d+)(?:w(\d+))?", text)
    if not m or any(int(v) <= 0 for v in m.groups() if v is not None):
        raise ValueError(f"--problem '{text}': expected mbNcNhN with an optional wN (NCHW), "
                         "e.g. mb32c64h56w56")
    mb, c, h, w = (int(v) if v is not None else None for v in m.groups())
    return mb, c, h, h if w is None else w


def self_test():
    good = {"mb32c64h56w56": (32, 64, 56, 56), "mb1c64h112": (1, 64, 112, 112),
            "mb2c3h5w7": (2, 3, 5, 7)}
    bad = ["mb32c64", "mb0c64h56", "c64h56", "mb32c64h56w", "mb32c64h56w56x", "mb-1c2h3", ""]
    failed = [t for t, want in good.items() if parse_problem(t) != want]
    for t in bad:
        try:
            parse_problem(t)
            failed.append(t)
        except ValueError:
            pass
    if failed:
        print(f"batchnorm_torch self-test: wrong on {failed}")
        return 1
    print(f"batchnorm_torch self-test: {len(good)} descriptors read and {len(bad)} refused "
          "as nnperf reads them")
    return 0


class Inputs:
    """One problem's tensors on the device and PyTorch's float64 reference outputs."""

    def __init__(self, torch, shape, backward, device, seed):
        g = torch.Generator().manual_seed(seed)
        mb, c, h, w = shape

        def uniform(size, lo, hi):
            return torch.rand(size, generator=g) * (hi - lo) + lo

        x, dy = uniform((mb, c, h, w), -3.0, 5.0), uniform((mb, c, h, w), -1.0, 1.0)
        weight, bias = uniform((c,), 0.5, 1.5), uniform((c,), -1.0, 1.0)
        self.want = self._reference(torch, x, dy, weight, bias, backward)
        dev = torch.device(device)
        self.x = x.to(dev).requires_grad_()
        self.weight = weight.to(dev).requires_grad_()
        self.bias = bias.to(dev).requires_grad_()
        self.dy = dy.to(dev)
        self.running_mean = torch.zeros(c, device=dev)
        self.running_var = torch.ones(c, device=dev)

    @staticmethod
    def _reference(torch, x, dy, weight, bias, backward):
        xd, wd, bd = (t.double().requires_grad_() for t in (x, weight, bias))
        y = torch.nn.functional.batch_norm(xd, None, None, wd, bd, training=True, eps=EPS)
        if not backward:
            return [y.detach()]
        return list(torch.autograd.grad(y, (xd, wd, bd), dy.double()))

    def forward(self, torch):
        return torch.nn.functional.batch_norm(self.x, self.running_mean, self.running_var,
                                              self.weight, self.bias, training=True,
                                              momentum=MOMENTUM, eps=EPS)


def time_reps(torch, run, warmup, measure, cuda):
    """ms of each of `measure` runs after `warmup` untimed ones; the outputs of the last."""
    out = None
    for _ in range(warmup):
        out = run()
    if not cuda:
        ms = []
        for _ in range(measure):
            t0 = time.perf_counter()
            out = run()
            ms.append((time.perf_counter() - t0) * 1e3)
        return ms, out
    torch.cuda.synchronize()
    events = []
    for _ in range(measure):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = run()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events], out


def errors(got, want):
    abs_err = rel_err = 0.0
    for g, w in zip(got, want):
        err = (g.detach().double().cpu() - w).abs().max().item()
        scale = w.abs().max().item()
        abs_err, rel_err = max(abs_err, err), max(rel_err, err / scale if scale > 0 else err)
    return abs_err, rel_err


def bench_problem(torch, a, problem, cuda):
    shape = parse_problem(problem)
    backward = a.pass_ == "backward"
    inp = Inputs(torch, shape, backward, a.device, a.seed)
    if backward:
        y = inp.forward(torch)
        params = (inp.x, inp.weight, inp.bias)
        run = lambda: torch.autograd.grad(y, params, inp.dy, retain_graph=True)  # noqa: E731
    else:
        run = lambda: [inp.forward(torch)]  # noqa: E731
    ms, out = time_reps(torch, run, a.warmup, a.measure, cuda)
    abs_err, rel_err = errors(out, inp.want)
    elements = shape[0] * shape[1] * shape[2] * shape[3]
    nbytes = elements * BYTES_PER_ELEMENT[a.pass_]
    median = statistics.median(ms)
    r = {"algorithm": "torch", "peer": "torch", "device": a.device, "problem": problem,
         "pass": a.pass_, "status": "ok", "time_ms_median": median, "time_ms_min": min(ms),
         "time_ms_max": max(ms), "reps": len(ms), "bytes": nbytes,
         "gb_per_s": nbytes / (median * 1e-3) * 1e-9, "max_abs_err": abs_err,
         "max_rel_err": rel_err}
    if a.peak_bw:
        r["percent_of_peak_bw"] = 100.0 * r["gb_per_s"] / a.peak_bw
    return r


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--problem", action="append", required=True, help="mbNcNhN[wN], repeatable")
    ap.add_argument("--pass", dest="pass_", choices=("forward", "backward"), default="forward")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--measure", type=int, default=11)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--peak-bw", type=float, default=0.0, metavar="GBPS",
                    help="memory bandwidth for the %% of peak column (0: none)")
    ap.add_argument("--json", default=None, metavar="FILE")
    a = ap.parse_args(argv)
    if a.threads < 1 or a.measure < 1 or a.warmup < 0 or a.peak_bw < 0:
        ap.error("--threads and --measure must be >= 1, --warmup and --peak-bw >= 0")
    for p in a.problem:
        try:
            parse_problem(p)
        except ValueError as e:
            ap.error(str(e))
    return a


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--self-test"]:
        return self_test()
    a = parse_args(argv)
    torch = conv_torch.import_torch(a.threads, a.device, "batchnorm_torch")
    if torch is None:
        return 2
    cuda = a.device == "cuda"
    records = [bench_problem(torch, a, p, cuda) for p in a.problem]
    ctx = conv_torch.run_context(torch, a.threads, a.warmup, a.measure)
    ctx.update({"device": a.device, "pass": a.pass_,
                "bytes_rule": "two-pass minimum: forward 12, backward 20 bytes per element",
                "timer": "cuda-events (one synchronisation per problem)" if cuda
                else "perf_counter per rep",
                "cuda_device": torch.cuda.get_device_name() if cuda else None,
                "cudnn_enabled": bool(cuda and torch.backends.cudnn.enabled),
                "cudnn": torch.backends.cudnn.version() if cuda else None})
    if a.peak_bw:
        ctx["peak_gbps"] = a.peak_bw
    doc = {"context": ctx, "records": records}
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=2)
        os.replace(tmp, a.json)
    for r in records:
        print(f"torch {torch.__version__} batchnorm {r['problem']} {a.pass_} on {a.device}: "
              f"{r['time_ms_median']:.4f} ms median ({r['gb_per_s']:.1f} GB/s), "
              f"max_rel_err {r['max_rel_err']:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
