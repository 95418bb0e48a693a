#!/usr/bin/env python3
"""The GPU baseline of the benchmarks: the original example in PyTorch on one
GPU, what a user would write instead of calling the service. ST on the device,
torch.matmul over column chunks of A drawn on the device, and the same
per-column statistics (mean, sample stddev, VaR and ES of the PnL through
torch.quantile). Prints JSON with the seconds (device-synchronised) and the
TFLOP/s. Run by scripts/gpu-check.sh on the GPU machine.

  torch_baseline.py --scenarios 1000000 [--chunk-columns 1600] [--dtype fp32|tf32]
"""
import argparse
import json
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=10000)
    parser.add_argument("--issuers", type=int, default=500)
    parser.add_argument("--scenarios", type=int, default=1000000)
    # torch.quantile takes at most 2^24 elements: P x chunk must stay below.
    parser.add_argument("--chunk-columns", type=int, default=1600)
    parser.add_argument("--precision", choices=["fp32", "tf32"], default="fp32")
    parser.add_argument("--var", type=float, default=0.99)
    parser.add_argument("--es", type=float, default=0.975)
    args = parser.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    device = torch.device("cuda")
    generator = torch.Generator(device=device).manual_seed(7)
    p, n, r, t = args.paths, args.issuers, 0.02, 1.0

    def run(scenarios):
        spot = 5 + 5 * torch.rand(n, device=device, generator=generator)
        sigma = torch.rand(n, device=device, generator=generator)
        z = torch.randn(p, n, device=device, generator=generator)
        st = spot * torch.exp((r - 0.5 * sigma * sigma) * t + sigma * (t ** 0.5) * z)
        discount = torch.exp(torch.tensor(-r * t, device=device))
        levels = torch.tensor([1 - args.var, 1 - args.es], device=device)
        out = []
        for first in range(0, scenarios, args.chunk_columns):
            count = min(args.chunk_columns, scenarios - first)
            a = torch.rand(n, count, device=device, generator=generator)
            sc = st @ a
            v0 = (spot.double() @ a.double()).float()
            pnl = discount * sc - v0
            q = torch.quantile(pnl, levels, dim=0)
            tail = pnl <= q[1]
            es = -(pnl * tail).sum(dim=0) / tail.sum(dim=0)
            out.append(torch.stack([sc.mean(dim=0), sc.std(dim=0), -q[0], es]).cpu())
        torch.cuda.synchronize()
        return out

    run(args.chunk_columns * 2)  # warm-up: kernels loaded, allocator primed
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    run(args.scenarios)
    seconds = time.perf_counter() - start
    flops = 2.0 * p * n * args.scenarios
    print(json.dumps({
        "paths": p, "issuers": n, "scenarios": args.scenarios, "precision": args.precision,
        "seconds": seconds, "tflops": flops / seconds / 1e12,
        "peak_bytes": torch.cuda.max_memory_allocated(),
        "device": torch.cuda.get_device_name(),
    }))


if __name__ == "__main__":
    main()
