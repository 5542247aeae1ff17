"""PyTorch peer of `nnperf bench conv2d`: times torch.nn.functional.conv2d (float32, CPU, bias on,
inference_mode) on benchdnn-style problems, in NCHW and in channels_last, alternating the two
variants rep by rep, median of --measure after --warmup, and writes the same JSON record format
as nnperf ({"context", "records": [{algorithm, problem, time_ms_median, time_ms_min, time_ms_max,
gflops_per_s, ...}]}) with algorithm "torch_nchw" / "torch_channels_last" and "peer": "torch".

  conv_torch.py --problem mb1ic64ih56oc64kh3ph1 [--problem ...] --threads 1 --json F
  conv_torch.py --layers bench/conv_layers.txt --batch 8 --filter 'vgg16' --json F
  conv_torch.py --list-layers          # derive bench/conv_layers.txt from torchvision's models

Descriptor grammar (as nnperf's src/nnperf/kernels/conv/conv.h): terms g mb ic ih iw oc kh kw sh
sw ph pw dh dw, absent width terms equal the height terms, defaults g1 mb1 s1 p0 d1, dilation
1-based (d1 = dense); an optional leading name ending in '_' or ':' is ignored.

--pass backward-data / backward-weights time that pass instead of the forward convolution, as
`nnperf bench conv2d --pass` does: torch.ops.aten.convolution_backward (the op autograd calls for
a Conv2d) with only dX, or only dW and the bias gradient (as nnperf computes db with dW), asked
for; dY and the other inputs uniform in [-1, 1], made once outside the timed region.

Threads: --threads N sets OMP_NUM_THREADS/MKL_NUM_THREADS/OPENBLAS_NUM_THREADS before torch is
imported and calls torch.set_num_threads(N) / set_num_interop_threads(N).
"""

import argparse
import datetime
import json
import os
import platform
import re
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import cpu_model  # noqa: E402  (no numpy/torch import at load time)

THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
VARIANTS = ("nchw", "channels_last")
PASSES = ("forward", "backward-data", "backward-weights")
_TERMS = ("g", "mb", "ic", "ih", "iw", "oc", "kh", "kw", "sh", "sw", "ph", "pw", "dh", "dw")


# ---------------------------------------------------------------------------------------------
# Problem descriptors
# ---------------------------------------------------------------------------------------------
def parse_problem(text):
    """benchdnn descriptor -> dict of the 14 terms (nnperf's defaults and width rules)."""
    body = text.strip()
    cut = max(body.rfind("_"), body.rfind(":"))
    if cut >= 0:
        body = body[cut + 1:]
    pairs = re.findall(r"([a-z]+)(\d+)", body)
    if not pairs or "".join(f"{k}{v}" for k, v in pairs) != body:
        raise ValueError(f"bad conv descriptor '{text}'")
    given = {}
    for k, v in pairs:
        if k not in _TERMS:
            raise ValueError(f"conv descriptor '{text}': unknown term '{k}'")
        given[k] = int(v)
    for k in ("ic", "ih", "oc", "kh"):
        if k not in given and not (k == "ih" and "iw" in given) and not (k == "kh" and "kw" in given):
            raise ValueError(f"conv descriptor '{text}': missing '{k}'")
    p = {"g": 1, "mb": 1, "sh": 1, "ph": 0, "dh": 1}
    p.update(given)
    p.setdefault("ih", p.get("iw"))
    p.setdefault("kh", p.get("kw"))
    for w, h in (("iw", "ih"), ("kw", "kh"), ("sw", "sh"), ("pw", "ph"), ("dw", "dh")):
        p.setdefault(w, p[h])
    if p["ic"] % p["g"] or p["oc"] % p["g"]:
        raise ValueError(f"conv descriptor '{text}': channels not divisible by groups")
    return p


def out_hw(p):
    oh = (p["ih"] + 2 * p["ph"] - p["dh"] * (p["kh"] - 1) - 1) // p["sh"] + 1
    ow = (p["iw"] + 2 * p["pw"] - p["dw"] * (p["kw"] - 1) - 1) // p["sw"] + 1
    return oh, ow


def problem_str(p):
    """Canonical string, identical to nnperf's ConvProblem::str()."""
    s = f"g{p['g']}" if p["g"] != 1 else ""
    s += f"mb{p['mb']}ic{p['ic']}ih{p['ih']}"
    if p["iw"] != p["ih"]:
        s += f"iw{p['iw']}"
    s += f"oc{p['oc']}kh{p['kh']}"
    if p["kw"] != p["kh"]:
        s += f"kw{p['kw']}"
    for h, w, default in (("sh", "sw", 1), ("ph", "pw", 0), ("dh", "dw", 1)):
        if p[h] != default:
            s += f"{h}{p[h]}"
        if p[w] != p[h]:
            s += f"{w}{p[w]}"
    return s


def flops(p):
    oh, ow = out_hw(p)
    return 2.0 * p["mb"] * p["oc"] * oh * ow * (p["ic"] // p["g"]) * p["kh"] * p["kw"]


def with_batch(desc, batch):
    p = parse_problem(desc)
    p["mb"] = batch
    return problem_str(p)


def read_layers(path, batch=None, pattern=None):
    """bench/conv_layers.txt: `model layer_name count descriptor` lines ('#' comments). pattern
    (a regex) keeps the lines where it is found in the model, the layer name, model.layer or the
    descriptor; batch replaces the descriptors' mb."""
    rows = []
    rx = re.compile(pattern) if pattern else None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 4:
                raise ValueError(f"{path}:{n}: expected 'model layer_name count descriptor'")
            model, name, count, desc = parts
            desc = with_batch(desc, batch) if batch else problem_str(parse_problem(desc))
            if rx and not any(rx.search(t) for t in (model, name, f"{model}.{name}", desc)):
                continue
            rows.append({"model": model, "layer": name, "count": int(count), "problem": desc})
    return rows


# ---------------------------------------------------------------------------------------------
# Run context (shared with cnn_torch.py)
# ---------------------------------------------------------------------------------------------
def set_thread_env(threads):
    for v in THREAD_ENV_VARS:
        os.environ[v] = str(threads)


def import_torch(threads, device, who):
    """torch on `threads` CPU threads (the thread variables set before the import); for device
    "cuda" with TF32 off (FP32 math, as nnperf's); None, after a line on stderr naming `who`,
    when torch sees no CUDA device."""
    set_thread_env(threads)
    import torch

    torch.set_num_threads(threads)
    if device == "cuda":
        if not torch.cuda.is_available():
            print(f"{who}: torch sees no CUDA device", file=sys.stderr)
            return None
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    return torch


def run_context(torch, threads, warmup, measure):
    try:
        load_start = list(os.getloadavg())
    except OSError:
        load_start = None
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "hostname": socket.gethostname(),
        "cpu": cpu_model(),
        "loadavg_start": load_start,
        "command": " ".join([sys.executable] + sys.argv),
        "env": {v: os.environ.get(v) for v in THREAD_ENV_VARS},
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "threads": threads,
        "torch_num_threads": torch.get_num_threads(),
        "warmup": warmup,
        "measure": measure,
        "flops_convention": "direct-convolution FLOPs (2 per multiply-add)",
    }


def write_records(path, torch, ctx, records):
    """Records the load at the end in ctx, then writes {peer, version, context, records} to path
    (a temporary file renamed into place) when path is set."""
    try:
        ctx["loadavg_end"] = list(os.getloadavg())
    except OSError:
        pass
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"peer": "torch", "version": torch.__version__, "context": ctx, "records": records}, f,
                      indent=2)
        os.replace(tmp, path)


def summary(ms):
    return {"time_ms_median": statistics.median(ms), "time_ms_min": min(ms), "time_ms_max": max(ms),
            "reps": len(ms)}


# ---------------------------------------------------------------------------------------------
# --list-layers: the distinct convolutions of VGG16 and ResNet-50 at 224x224, from torchvision
# ---------------------------------------------------------------------------------------------
def list_layers(size=224):
    import torch
    import torchvision

    lines = [
        "# The distinct conv layers of torchvision's vgg16 and resnet50 (v1.5: stride on the 3x3) at",
        f"# {size}x{size}, batch 1: model, first layer with that shape, how many layers of the model",
        "# have it, benchdnn descriptor. Generated by `bench/peers/conv_torch.py --list-layers`;",
        "# read by scripts/bench_conv.sh (nnperf bench conv2d, conv_torch.py, onednn_conv_peer).",
    ]
    for model in ("vgg16", "resnet50"):
        net = getattr(torchvision.models, model)(weights=None).eval()
        shapes = {}
        order = []
        hooks = []
        for name, mod in net.named_modules():
            if isinstance(mod, torch.nn.Conv2d):
                def hook(m, inp, _out, name=name):
                    x = inp[0]
                    p = {"g": m.groups, "mb": 1, "ic": m.in_channels, "ih": x.shape[2], "iw": x.shape[3],
                         "oc": m.out_channels, "kh": m.kernel_size[0], "kw": m.kernel_size[1],
                         "sh": m.stride[0], "sw": m.stride[1], "ph": m.padding[0], "pw": m.padding[1],
                         "dh": m.dilation[0], "dw": m.dilation[1]}
                    d = problem_str(p)
                    if d not in shapes:
                        shapes[d] = [name, 0]
                        order.append(d)
                    shapes[d][1] += 1
                hooks.append(mod.register_forward_hook(hook))
        with torch.inference_mode():
            net(torch.zeros(1, 3, size, size))
        for h in hooks:
            h.remove()
        total = sum(c for _, c in shapes.values())
        lines.append(f"# {model}: {total} conv layers, {len(order)} distinct shapes")
        for d in order:
            lines.append(f"{model} {shapes[d][0]} {shapes[d][1]} {d}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------
def capture_graphs(torch, F, inputs, b, kw):
    """Per variant, F.conv2d captured once into a CUDA graph (after warm-up calls on a side
    stream, where cudnn.benchmark makes its choice), as torch.cuda.graphs' documentation does it:
    {variant: (graph, its static output)}."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for xi, wi in inputs.values():
            for _ in range(3):
                F.conv2d(xi, wi, b, **kw)
    torch.cuda.current_stream().wait_stream(side)
    graphs = {}
    for v, (xi, wi) in inputs.items():
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = F.conv2d(xi, wi, b, **kw)
        graphs[v] = (g, y)
    return graphs


def reduction_length(p, conv_pass):
    """Terms summed per output element of the pass (the K of the error bound)."""
    oh, ow = out_hw(p)
    if conv_pass == "backward-data":
        return (p["oc"] // p["g"]) * p["kh"] * p["kw"]
    if conv_pass == "backward-weights":
        return p["mb"] * oh * ow
    return (p["ic"] // p["g"]) * p["kh"] * p["kw"]


def backward_call(torch, p, conv_pass, b, kw):
    """fn(x, w, dy) -> the pass's gradient: dX, or dW (the bias gradient computed with it)."""
    data = conv_pass == "backward-data"
    mask = [data, not data, not data and b is not None]
    sizes = [p["oc"]] if mask[2] else None
    args = ([kw["stride"][0], kw["stride"][1]], [kw["padding"][0], kw["padding"][1]],
            [kw["dilation"][0], kw["dilation"][1]], False, [0, 0], kw["groups"], mask)

    def run(x, w, dy):
        grads = torch.ops.aten.convolution_backward(dy, x, w, sizes, *args)
        return grads[0] if data else grads[1]
    return run


def check_backward(torch, p, conv_pass, seed):
    """Largest |difference| between the pass's gradient as timed (convolution_backward, float32)
    and autograd's gradient of F.conv2d in float64 on the same inputs, over max |reference|: a
    stride, padding, groups or mask passed wrongly shows as O(1)."""
    F = torch.nn.functional
    gen = torch.Generator().manual_seed(seed)
    oh, ow = out_hw(p)
    x = torch.rand(p["mb"], p["ic"], p["ih"], p["iw"], generator=gen) * 2 - 1
    w = torch.rand(p["oc"], p["ic"] // p["g"], p["kh"], p["kw"], generator=gen) * 2 - 1
    b = torch.rand(p["oc"], generator=gen) * 2 - 1
    dy = torch.rand(p["mb"], p["oc"], oh, ow, generator=gen) * 2 - 1
    kw = dict(stride=(p["sh"], p["sw"]), padding=(p["ph"], p["pw"]), dilation=(p["dh"], p["dw"]), groups=p["g"])
    got = backward_call(torch, p, conv_pass, b, kw)(x, w, dy)
    x64, w64, b64 = (t.double().requires_grad_() for t in (x, w, b))
    y = F.conv2d(x64, w64, b64, **kw)
    (ref,) = torch.autograd.grad(y, x64 if conv_pass == "backward-data" else w64, dy.double())
    return float((got.double() - ref).abs().max() / ref.abs().max().clamp(min=1e-30))


def bench_problem(torch, p, variants, warmup, measure, seed, device="cpu", cuda_graph=False,
                  conv_pass="forward"):
    F = torch.nn.functional
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(p["mb"], p["ic"], p["ih"], p["iw"], generator=gen) * 2 - 1
    w = torch.rand(p["oc"], p["ic"] // p["g"], p["kh"], p["kw"], generator=gen) * 2 - 1
    b = torch.rand(p["oc"], generator=gen) * 2 - 1
    gpu = device == "cuda"
    if gpu:  # as nnperf's cuDNN rows: no bias, on the device, timed by CUDA events
        x, w, b = x.cuda(), w.cuda(), None
    kw = dict(stride=(p["sh"], p["sw"]), padding=(p["ph"], p["pw"]), dilation=(p["dh"], p["dw"]), groups=p["g"])
    backward = conv_pass != "forward"
    if backward:
        oh, ow = out_hw(p)
        dy = torch.rand(p["mb"], p["oc"], oh, ow, generator=gen) * 2 - 1
        dy = dy.cuda() if gpu else dy
        call = backward_call(torch, p, conv_pass, b, kw)
    inputs = {}
    for v in variants:
        if v == "nchw":
            inputs[v] = (x.contiguous(), w.contiguous()) + ((dy.contiguous(),) if backward else ())
        else:
            cl = torch.channels_last
            inputs[v] = (x.contiguous(memory_format=cl), w.contiguous(memory_format=cl)) + (
                (dy.contiguous(memory_format=cl),) if backward else ())
    times = {v: [] for v in variants}
    outs = {}
    with torch.inference_mode():
        graphs = capture_graphs(torch, F, inputs, b, kw) if gpu and cuda_graph else {}
        for r in range(warmup + measure):
            events = {}
            for v in variants:
                xi, wi = inputs[v][:2]
                if gpu:
                    events[v] = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                    events[v][0].record()
                t0 = time.perf_counter()
                if v in graphs:
                    graphs[v][0].replay()
                    y = graphs[v][1]
                elif backward:
                    y = call(xi, wi, inputs[v][2])
                else:
                    y = F.conv2d(xi, wi, b, **kw)
                t = (time.perf_counter() - t0) * 1e3
                if gpu:
                    events[v][1].record()
                elif r >= warmup:
                    times[v].append(t)
                if r == 0:
                    outs[v] = (y, y.is_contiguous(memory_format=torch.channels_last))
            if gpu:  # one synchronisation per round, as nnperf's bench conv2d --device cuda
                torch.cuda.synchronize()
                if r >= warmup:
                    for v in variants:
                        times[v].append(events[v][0].elapsed_time(events[v][1]))
    # The variants must compute the same thing (a cheap guard against a mis-specified variant).
    agree = None
    if len(variants) > 1:
        ref = outs[variants[0]][0].float()
        agree = max(float((outs[v][0].float() - ref).abs().max()) for v in variants[1:])
    oh, ow = out_hw(p)
    fl = flops(p)
    recs = []
    for v in variants:
        s = summary(times[v])
        recs.append({"algorithm": f"torch_{v}", "problem": problem_str(p), "pass": conv_pass, "status": "ok", **s,
                     "flops": fl,
                     "gflops_per_s": fl / (s["time_ms_median"] * 1e-3) * 1e-9, "peer": "torch",
                     "version": torch.__version__, "dst_channels_last": outs[v][1],
                     "max_abs_diff_vs_first_variant": agree if v != variants[0] else 0.0,
                     "oh": oh, "ow": ow})
    return recs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--problem", action="append", default=[], help="benchdnn descriptor (repeatable)")
    ap.add_argument("--layers", help="layer list file (model layer_name count descriptor)")
    ap.add_argument("--batch", type=int, default=None, help="override mb of --layers descriptors")
    ap.add_argument("--filter", default=None, help="regex: keep --layers lines where it is found in the model, the layer name, "
                         "model.layer or the descriptor")
    ap.add_argument("--variants", default="nchw,channels_last", help="comma list of nchw, channels_last")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--measure", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="cuda: cuDNN with torch.backends.cudnn.benchmark = True (its find), TF32 "
                         "off, no bias, CUDA events read once per round")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="with --device cuda: each variant's call captured once as a CUDA graph "
                         "and replayed (as nnperf bench conv2d --launch graph)")
    ap.add_argument("--pass", dest="conv_pass", default="forward", choices=PASSES,
                    help="the pass timed: F.conv2d, or convolution_backward for dX or dW (+ db)")
    ap.add_argument("--check", action="store_true",
                    help="with a backward --pass: each problem's gradient against autograd's of F.conv2d in "
                         "float64 first (CPU); exit 1 above 1e-5 of its largest entry")
    ap.add_argument("--json", default=None, metavar="FILE")
    ap.add_argument("--list-layers", action="store_true",
                    help="print the conv layer list of vgg16 and resnet50 (from torchvision) and exit")
    a = ap.parse_args(argv)
    if a.threads < 1 or a.warmup < 0 or a.measure < 1:
        ap.error("--threads and --measure must be >= 1, --warmup >= 0")
    if a.cuda_graph and a.device != "cuda":
        ap.error("--cuda-graph: applies to --device cuda only")
    if a.check and (a.conv_pass == "forward" or a.device != "cpu"):
        ap.error("--check: checks a backward --pass on the CPU")
    if a.cuda_graph and a.conv_pass != "forward":
        ap.error("--cuda-graph: captures the forward convolution only (--pass forward)")
    variants = [v for v in a.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad or not variants:
        ap.error(f"--variants: expected a comma list of {', '.join(VARIANTS)}")

    set_thread_env(a.threads)
    import torch

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(a.threads)
    except RuntimeError:
        pass
    if a.list_layers:
        sys.stdout.write(list_layers())
        return 0

    problems = list(a.problem)
    if a.layers:
        problems += [r["problem"] for r in read_layers(a.layers, a.batch, a.filter)]
    elif a.batch:
        problems = [with_batch(d, a.batch) for d in problems]
    if not problems:
        ap.error("give --problem or --layers")
    parsed = []
    for d in problems:
        try:
            parsed.append(parse_problem(d))
        except ValueError as e:
            ap.error(str(e))

    if a.device == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    ctx = run_context(torch, a.threads, a.warmup, a.measure)
    ctx["device"] = a.device
    ctx["pass"] = a.conv_pass
    if a.device == "cuda":
        ctx["cuda_device"] = torch.cuda.get_device_name(0)
        ctx["cudnn_version"] = torch.backends.cudnn.version()
        ctx["launch"] = "graph" if a.cuda_graph else "eager"
    if a.check:
        for p in parsed:
            err = check_backward(torch, p, a.conv_pass, a.seed)
            print(f"check {problem_str(p)} {a.conv_pass}: max |error| / max |reference| {err:.2e}")
            if not err <= 1e-5:
                print(f"conv_torch: {a.conv_pass} of {problem_str(p)} differs from autograd's by {err:.3g}",
                      file=sys.stderr)
                return 1
    records = []
    print(f"torch {torch.__version__} ({ctx['cpu_capability']}), {a.conv_pass}, {a.threads} thread(s)")
    print(f"{'problem':38} {'variant':15} {'median_ms':>10} {'min_ms':>9} {'GFLOP/s':>8}")
    for p in parsed:
        for r in bench_problem(torch, p, variants, a.warmup, a.measure, a.seed, a.device, a.cuda_graph,
                               a.conv_pass):
            records.append(r)
            print(f"{r['problem']:38} {r['algorithm'][6:]:15} {r['time_ms_median']:10.3f} "
                  f"{r['time_ms_min']:9.3f} {r['gflops_per_s']:8.1f}", flush=True)
            # Both variants within the conventions bound K * eps * sum|a*b| of the exact result
            # (inputs uniform in [-1, 1]: sum|a*b| ~ K / 4), so at most twice that apart.
            k = reduction_length(p, a.conv_pass)
            if r["max_abs_diff_vs_first_variant"] > 2 * k * 2.0**-23 * (k / 4 + 1):
                print(f"conv_torch: {r['algorithm']} differs from {variants[0]} by "
                      f"{r['max_abs_diff_vs_first_variant']:.3g}", file=sys.stderr)
                return 1
    write_records(a.json, torch, ctx, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
