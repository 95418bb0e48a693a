#!/usr/bin/env python3
"""The PyTorch baseline of the benchmarks: the original example in PyTorch,
what a user would write instead of calling the service, on one GPU (cuda, the
default: scripts/gpu-check.sh) or on the CPU (cpu: bench/run_benchmarks.py
--peers). ST by GBM, `st @ a` over column chunks of A drawn on the device, and
the same per-column statistics (mean, sample stddev, VaR and ES of the PnL =
exp(-rT) SC - V0). The quantiles are NumPy's "linear" ones, through
torch.quantile (a sort; the default on cuda, and it takes at most 2^24
elements, so P x chunk must stay below) or through torch.topk of the k
smallest PnL per column (the default on cpu, where it is the faster). Prints
JSON on its last line with the seconds (device-synchronised, after a warm-up)
and the GFLOP/s and TFLOP/s.

  torch_baseline.py --scenarios 1000000 [--device cuda|cpu] [--chunk-columns C]
                    [--precision fp32|tf32] [--quantiles topk|quantile]
"""
import argparse
import json
import math
import os
import time

import torch


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--paths", type=int, default=10000)
    parser.add_argument("--issuers", type=int, default=500)
    parser.add_argument("--scenarios", type=int, default=1000000)
    parser.add_argument("--chunk-columns", type=int,
                        help="1600 on cuda (torch.quantile's limit), 10000 on cpu (as NumPy)")
    parser.add_argument("--precision", choices=["fp32", "tf32"], default="fp32")
    parser.add_argument("--quantiles", choices=["topk", "quantile"],
                        help="topk on cpu, quantile on cuda")
    parser.add_argument("--var", type=float, default=0.99)
    parser.add_argument("--es", type=float, default=0.975)
    args = parser.parse_args()
    cpu = args.device == "cpu"
    if args.chunk_columns is None:
        args.chunk_columns = 10000 if cpu else 1600
    if args.quantiles is None:
        args.quantiles = "topk" if cpu else "quantile"
    return args


def lower_tail_topk(pnl, levels):
    """NumPy's "linear" quantiles of each column of `pnl` at the (small)
    `levels`, and the k smallest values per column they come from (ascending):
    h = (P - 1) q, k = floor(h), q = s[k] + (h - k) (s[k + 1] - s[k])."""
    p = pnl.shape[0]
    spots = [((p - 1) * q, math.floor((p - 1) * q)) for q in levels]
    count = min(p, max(k for _, k in spots) + 2)
    smallest = torch.topk(pnl, count, dim=0, largest=False, sorted=True).values
    quantiles = []
    for h, k in spots:
        above = min(k + 1, p - 1)
        quantiles.append(smallest[k] + (h - k) * (smallest[above] - smallest[k]))
    return torch.stack(quantiles), smallest


def column_statistics(sc, v0, discount, args):
    """Mean, sample stddev, VaR and ES of each column (4 x columns)."""
    pnl = discount * sc - v0
    levels = [1 - args.var, 1 - args.es]
    if args.quantiles == "topk":
        q, tail_values = lower_tail_topk(pnl, levels)
    else:
        q = torch.quantile(pnl, torch.tensor(levels, device=pnl.device), dim=0)
        tail_values = pnl
    tail = tail_values <= q[1]
    es = -(tail_values * tail).sum(dim=0) / tail.sum(dim=0)
    return torch.stack([sc.mean(dim=0), sc.std(dim=0), -q[0], es])


def price(scenarios, args, device, generator):
    """The example at `scenarios` columns; the statistics per chunk, on the host."""
    p, n, r, t = args.paths, args.issuers, 0.02, 1.0
    spot = 5 + 5 * torch.rand(n, device=device, generator=generator)
    sigma = torch.rand(n, device=device, generator=generator)
    z = torch.randn(p, n, device=device, generator=generator)
    st = spot * torch.exp((r - 0.5 * sigma * sigma) * t + sigma * (t ** 0.5) * z)
    discount = math.exp(-r * t)
    out = []
    for first in range(0, scenarios, args.chunk_columns):
        count = min(args.chunk_columns, scenarios - first)
        a = torch.rand(n, count, device=device, generator=generator)
        sc = st @ a
        v0 = (spot.double() @ a.double()).float()
        out.append(column_statistics(sc, v0, discount, args).cpu())
    synchronize(device)
    return out


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    args = parse_args()
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    else:
        torch.set_num_threads(os.cpu_count())
    generator = torch.Generator(device=device).manual_seed(7)
    # Warm-up: kernels loaded, thread pool and allocator primed (on the CPU a
    # small one: a full chunk would cost seconds of the machine).
    price(args.chunk_columns * 2 if device.type == "cuda" else 1000, args, device, generator)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    statistics = price(args.scenarios, args, device, generator)
    seconds = time.perf_counter() - start
    flops = 2.0 * args.paths * args.issuers * args.scenarios
    figures = {
        "paths": args.paths, "issuers": args.issuers, "scenarios": args.scenarios,
        "device": args.device, "precision": args.precision, "quantiles": args.quantiles,
        "chunk_columns": args.chunk_columns, "seconds": seconds,
        "gflops": flops / seconds / 1e9, "tflops": flops / seconds / 1e12,
        "checksum": float(sum(s.double().sum() for s in statistics)),
        "torch": torch.__version__,
    }
    if device.type == "cuda":
        figures.update(peak_bytes=torch.cuda.max_memory_allocated(),
                       device=torch.cuda.get_device_name())
    else:
        figures.update(threads=torch.get_num_threads())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
