"""The GPU GEMM peer: torch.mm on a CUDA device, timed as `nnperf bench gemm --device cuda` times
its rows (each run bracketed by CUDA events, all read after one synchronisation, median of
--measure after --warmup), FP32 with TF32 off, so the cuBLAS row's figure has its peer.

  python gemm_torch_cuda.py --sizes 1024,2048,4096 [--measure 20] [--json out.json]

Prints one line per size, `torch.mm m4096n4096k4096 median_ms=... gflops=...`, and with --json a
{context, records} document with the same record fields as nnperf's. Exits 2 with one line on
stderr when torch has no usable CUDA device.
"""

import argparse
import json
import statistics
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="4096", help="comma-separated square sizes n (m = n = k)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--measure", type=int, default=10)
    ap.add_argument("--json", default=None, metavar="FILE")
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        sys.exit(f"gemm_torch_cuda: --sizes: expected comma-separated integers, got '{args.sizes}'")
    if not sizes or any(n <= 0 for n in sizes) or args.measure < 1 or args.warmup < 0:
        sys.exit("gemm_torch_cuda: --sizes must be positive, --measure >= 1, --warmup >= 0")

    import torch

    if not torch.cuda.is_available():
        print("gemm_torch_cuda: torch sees no CUDA device", file=sys.stderr)
        sys.exit(2)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda:0")
    gen = torch.Generator(device=dev).manual_seed(1)
    records = []
    for n in sizes:
        a = torch.rand((n, n), device=dev, generator=gen) * 2 - 1
        b = torch.rand((n, n), device=dev, generator=gen) * 2 - 1
        c = torch.empty((n, n), device=dev)
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(args.warmup + args.measure)]
        for start, end in events:
            start.record()
            torch.mm(a, b, out=c)
            end.record()
        torch.cuda.synchronize()
        ms = [s.elapsed_time(e) for s, e in events[args.warmup:]]
        med = statistics.median(ms)
        flops = 2.0 * n * n * n
        rec = {"algorithm": "torch.mm", "device": "cuda", "problem": f"m{n}n{n}k{n}", "status": "ok",
               "time_ms_median": med, "time_ms_min": min(ms), "time_ms_max": max(ms),
               "reps": len(ms), "flops": flops, "gflops_per_s": flops / (med * 1e-3) * 1e-9}
        records.append(rec)
        print(f"torch.mm m{n}n{n}k{n} median_ms={med:.4f} gflops={rec['gflops_per_s']:.1f}")
    if args.json:
        ctx = {"torch": torch.__version__, "cuda": torch.version.cuda,
               "device": torch.cuda.get_device_name(0), "tf32": False,
               "timer": "cuda events, one synchronisation after all runs"}
        with open(args.json, "w") as f:
            json.dump({"context": ctx, "records": records}, f, indent=1)


if __name__ == "__main__":
    main()
