#!/usr/bin/env python3
"""Times PyTorch's scaled_dot_product_attention (flash backend, causal, bf16) at the attention
benchmark's shapes, forward and forward+backward, with CUDA events: warm-up, then many repeats
cycling through several input sets; medians to a JSON file, a table to stdout. Run it beside
`pathbench bench-attention` on the same GPU so the ratio is measured in one run; by default it times
the shapes that binary times (`--pathbench`, default build/pathbench, asked with --list-shapes)."""
import argparse
import json
import os
import statistics
import subprocess

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F


def parse_shape(text):
    parts = text.split("x")
    if len(parts) != 4 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise SystemExit(f"bench_sdpa.py: shape '{text}' is not BxTxHxD with positive integers")
    return tuple(int(p) for p in parts)


def anchor_shapes(pathbench):
    """The shapes `pathbench bench-attention` times by default, asked of the binary itself."""
    try:
        listing = subprocess.run([pathbench, "bench-attention", "--list-shapes"], check=True, capture_output=True,
                                 text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"bench_sdpa.py: could not ask {pathbench} for its anchor shapes ({e}); "
                         "pass --pathbench BINARY or --shapes")
    return listing.split()


def bench_shape(shape, warmup, repeats, sets):
    b, t, h, d = shape
    inputs = []
    for s in range(sets):
        g = torch.Generator(device="cuda").manual_seed(1000 + s)
        make = lambda: torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16, generator=g).requires_grad_()
        q, k, v = make(), make(), make()
        inputs.append((q, k, v, torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16, generator=g)))

    def run(i, backward):
        q, k, v, do = inputs[i % sets]
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if backward:
            torch.autograd.grad(o, (q, k, v), do)

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for i in range(warmup):
            run(i, True)
        fwd, total = [], []
        for i in range(repeats):
            e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            q, k, v, do = inputs[i % sets]
            e0.record()
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            e1.record()
            torch.autograd.grad(o, (q, k, v), do)
            e2.record()
            torch.cuda.synchronize()
            fwd.append(e0.elapsed_time(e1))
            total.append(e0.elapsed_time(e2))
    return {"encoding": "sdpa_flash", "batch": b, "length": t, "heads": h, "head_dim": d,
            "forward_ms_median": statistics.median(fwd), "forward_ms_min": min(fwd),
            "forward_backward_ms_median": statistics.median(total), "forward_backward_ms_min": min(total)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", nargs="+", help="BxTxHxD shapes (default: those `PATHBENCH bench-attention` times)")
    ap.add_argument("--pathbench", default="build/pathbench", help="the binary whose anchor shapes are the default")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--out", default="bench-sdpa.json")
    args = ap.parse_args()
    shapes = args.shapes or anchor_shapes(args.pathbench)
    if not torch.cuda.is_available():
        raise SystemExit("bench_sdpa.py: no CUDA device")
    results = []
    print(f"PyTorch {torch.__version__} SDPA (flash) on {torch.cuda.get_device_name()}: bf16, causal")
    print("| B·T·H·D | forward ms | forward+backward ms |\n|---|---|---|")
    for text in shapes:
        r = bench_shape(parse_shape(text), args.warmup, args.repeats, args.sets)
        results.append(r)
        print(f"| {text.replace('x', '·')} | {r['forward_ms_median']:.3f} | {r['forward_backward_ms_median']:.3f} |",
              flush=True)
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "precision": "bf16",
           "warmup": args.warmup, "repeats": args.repeats, "input_sets": args.sets, "results": results}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
