"""PyTorch peer of `nnperf profile --no-layers`: whole-model inference latency of torchvision
models (weights=None, eval(), torch.inference_mode()), float32 on the CPU, in NCHW and in
channels_last (model and input converted), the layouts alternating pass by pass; median, mean,
min and max of --measure passes after --warmup, per model and layout.

  cnn_torch.py --models resnet50,vgg16,mobilenet_v2 --size 224 --batch 1 --threads 1 \
      --warmup 3 --measure 10 --json F

Writes {"peer": "torch", "version", "context", "records": [{model, layout, algorithm
("torch_nchw" / "torch_channels_last"), batch_size, input_size, time_ms_median, time_ms_mean,
time_ms_min, time_ms_max, reps, params}]}. Thread handling as conv_torch.py.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conv_torch  # noqa: E402  (thread set-up, run context and summary shared with the conv peer)

LAYOUTS = ("nchw", "channels_last")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--models", default="resnet50,vgg16,mobilenet_v2", help="comma list of torchvision models")
    ap.add_argument("--layouts", default="nchw,channels_last", help="comma list of nchw, channels_last")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--measure", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None, metavar="FILE")
    a = ap.parse_args(argv)
    if a.threads < 1 or a.warmup < 0 or a.measure < 1 or a.size < 1 or a.batch < 1:
        ap.error("--threads, --measure, --size and --batch must be >= 1, --warmup >= 0")
    layouts = [v for v in a.layouts.split(",") if v]
    if not layouts or any(v not in LAYOUTS for v in layouts):
        ap.error(f"--layouts: expected a comma list of {', '.join(LAYOUTS)}")
    models = [m for m in a.models.split(",") if m]

    conv_torch.set_thread_env(a.threads)
    import torch
    import torchvision

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(a.threads)
    except RuntimeError:
        pass
    for m in models:
        if not callable(getattr(torchvision.models, m, None)):
            ap.error(f"unknown torchvision model '{m}'")

    ctx = conv_torch.run_context(torch, a.threads, a.warmup, a.measure)
    ctx["torchvision"] = torchvision.__version__
    records = []
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__} ({ctx['cpu_capability']}), "
          f"{a.threads} thread(s), batch {a.batch}, {a.size}x{a.size}")
    print(f"{'model':14} {'layout':15} {'median_ms':>10} {'mean_ms':>9} {'min_ms':>9} {'max_ms':>9}")
    for name in models:
        torch.manual_seed(a.seed)
        net = getattr(torchvision.models, name)(weights=None).eval()
        params = sum(p.numel() for p in net.parameters())
        x = torch.randn(a.batch, 3, a.size, a.size, generator=torch.Generator().manual_seed(a.seed))
        nets, inputs = {}, {}
        for lay in layouts:
            if lay == "nchw":
                nets[lay], inputs[lay] = net, x.contiguous()
            else:
                # A copy, so the NCHW model keeps its own weights' layout.
                cl = getattr(torchvision.models, name)(weights=None).eval()
                cl.load_state_dict(net.state_dict())
                nets[lay] = cl.to(memory_format=torch.channels_last)
                inputs[lay] = x.contiguous(memory_format=torch.channels_last)
        times = {lay: [] for lay in layouts}
        outs = {}
        with torch.inference_mode():
            for r in range(a.warmup + a.measure):
                for lay in layouts:
                    t0 = time.perf_counter()
                    y = nets[lay](inputs[lay])
                    t = (time.perf_counter() - t0) * 1e3
                    if r >= a.warmup:
                        times[lay].append(t)
                    if r == 0:
                        outs[lay] = y
        # The layouts must agree (same weights, same input).
        ref = outs[layouts[0]]
        scale = float(ref.abs().max()) or 1.0
        for lay in layouts[1:]:
            diff = float((outs[lay] - ref).abs().max())
            if diff > 1e-3 * scale:
                print(f"cnn_torch: {name} {lay} differs from {layouts[0]} by {diff:.3g} (scale {scale:.3g})",
                      file=sys.stderr)
                return 1
        for lay in layouts:
            s = conv_torch.summary(times[lay])
            s["time_ms_mean"] = statistics.fmean(times[lay])
            rec = {"model": name, "layout": lay, "algorithm": f"torch_{lay}", "batch_size": a.batch,
                   "input_size": a.size, **s, "params": params, "peer": "torch", "version": torch.__version__}
            records.append(rec)
            print(f"{name:14} {lay:15} {s['time_ms_median']:10.2f} {s['time_ms_mean']:9.2f} "
                  f"{s['time_ms_min']:9.2f} {s['time_ms_max']:9.2f}", flush=True)
    conv_torch.write_records(a.json, torch, ctx, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
