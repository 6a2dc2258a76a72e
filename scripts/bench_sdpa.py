#!/usr/bin/env python3
"""Times the reference attention kernels the project measures itself against, at the attention
benchmark's shapes, forward and forward+backward, with CUDA events: warm-up, then many repeats
cycling through several input sets; medians to a JSON file, a table to stdout. Always PyTorch's
scaled_dot_product_attention (flash backend, causal, bf16); with `--fla DIR` (a source tree staged by
scripts/stage_fla.sh) also fla's PaTH, PaTH-FoX and FoX kernels (parallel_path_attn with and without
its forget gate, parallel_forgetting_attn). Run it beside `pathbench bench-attention` on the same GPU
so the ratios are measured in one run; by default it times the shapes that binary times
(`--pathbench`, default build/pathbench, asked with --list-shapes)."""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

# fla's PaTH kernel stops with an illegal memory access at head dims 16 and 32 on the H200, and an
# illegal access ends the process's CUDA context, so fla is timed at these head dims only.
FLA_HEAD_DIMS = (64, 128)


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


def load_fla(folder):
    """fla's kernels from a staged source tree (DIR/fla, DIR/COMMIT): {name: make_inputs, run} and the commit."""
    if not os.path.isdir(os.path.join(folder, "fla")):
        raise SystemExit(f"bench_sdpa.py: --fla {folder} holds no fla/ package (stage it with scripts/stage_fla.sh)")
    stamp = os.path.join(folder, "COMMIT")
    commit = open(stamp).read().strip() if os.path.exists(stamp) else None
    sys.path.insert(0, folder)
    from fla.ops.forgetting_attn import parallel_forgetting_attn
    from fla.ops.path_attn import parallel_path_attn

    # fla's layout is [B, T, H, D]; w and β (and the per-step log gates g) are fp32, as fla requires.
    # The inputs follow `pathbench bench-attention`'s: w rows of unit norm, β uniform in (0, 2),
    # per-step log gates uniform in (−0.1, 0).
    def tokens(shape, g, dtype=torch.bfloat16):
        return torch.randn(*shape, device="cuda", dtype=dtype, generator=g)

    def gates(shape, g):
        return -0.1 * torch.rand(shape[0], shape[1], shape[2], device="cuda", generator=g)

    def path_inputs(shape, g, gated):
        q, k, v = tokens(shape, g), tokens(shape, g), tokens(shape, g)
        w = F.normalize(tokens(shape, g, torch.float32), dim=-1)
        beta = 2 * torch.rand(shape[0], shape[1], shape[2], device="cuda", generator=g)
        return (q, k, v, w, beta) + ((gates(shape, g),) if gated else ())

    kernels = {
        "fla_path": (lambda s, g: path_inputs(s, g, False), lambda x: parallel_path_attn(*x)[0]),
        "fla_path_fox": (lambda s, g: path_inputs(s, g, True), lambda x: parallel_path_attn(*x)[0]),
        "fla_fox": (lambda s, g: (tokens(s, g), tokens(s, g), tokens(s, g), gates(s, g)),
                    lambda x: parallel_forgetting_attn(*x)),
    }
    return kernels, commit


def sdpa_kernel_entry():
    """SDPA's inputs are [B, H, T, D]; the flash backend is chosen around the whole timing."""
    def inputs(shape, g):
        b, t, h, d = shape
        return tuple(torch.randn(b, h, t, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    return inputs, lambda x: F.scaled_dot_product_attention(*x, is_causal=True)


def time_kernel(name, make_inputs, run, shape, warmup, repeats, sets):
    """Median forward and forward+backward ms of run(inputs) over `repeats` calls; the gradients of
    every input are taken, against a random output gradient."""
    input_sets = []
    for s in range(sets):
        g = torch.Generator(device="cuda").manual_seed(1000 + s)
        x = tuple(t.detach().requires_grad_() for t in make_inputs(shape, g))
        out = run(x)  # the output's shape and type for the output gradient
        input_sets.append((x, torch.randn(out.shape, device="cuda", dtype=out.dtype, generator=g)))
    for i in range(warmup):
        x, do = input_sets[i % sets]
        torch.autograd.grad(run(x), x, do)
    fwd, total = [], []
    for i in range(repeats):
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        x, do = input_sets[i % sets]
        e0.record()
        o = run(x)
        e1.record()
        torch.autograd.grad(o, x, do)
        e2.record()
        torch.cuda.synchronize()
        fwd.append(e0.elapsed_time(e1))
        total.append(e0.elapsed_time(e2))
    b, t, h, d = shape
    return {"encoding": name, "batch": b, "length": t, "heads": h, "head_dim": d,
            "forward_ms_median": statistics.median(fwd), "forward_ms_min": min(fwd),
            "forward_backward_ms_median": statistics.median(total), "forward_backward_ms_min": min(total)}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shapes", nargs="+", help="BxTxHxD shapes (default: those `PATHBENCH bench-attention` times)")
    ap.add_argument("--pathbench", default="build/pathbench", help="the binary whose anchor shapes are the default")
    ap.add_argument("--fla", metavar="DIR", help="also time fla's kernels from this staged source tree")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--sets", type=int, default=3)
    ap.add_argument("--out", default="bench-sdpa.json")
    args = ap.parse_args()
    shapes = [(text, parse_shape(text)) for text in (args.shapes or anchor_shapes(args.pathbench))]
    if not torch.cuda.is_available():
        raise SystemExit("bench_sdpa.py: no CUDA device")
    kernels = {"sdpa_flash": sdpa_kernel_entry()}
    fla_commit = None
    if args.fla:
        fla_kernels, fla_commit = load_fla(args.fla)
        kernels.update(fla_kernels)
    names = list(kernels)
    results = []
    print(f"PyTorch {torch.__version__} on {torch.cuda.get_device_name()}: bf16, causal"
          + (f"; fla {fla_commit or '(commit unknown)'} at head dims {FLA_HEAD_DIMS}" if args.fla else ""))
    print("forward / forward+backward ms (median)")
    print("| B·T·H·D | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        for text, shape in shapes:
            cells = []
            for name in names:
                if name.startswith("fla_") and shape[3] not in FLA_HEAD_DIMS:
                    cells.append("—")
                    continue
                r = time_kernel(name, *kernels[name], shape, args.warmup, args.repeats, args.sets)
                results.append(r)
                cells.append(f"{r['forward_ms_median']:.3f} / {r['forward_backward_ms_median']:.3f}")
            print(f"| {text.replace('x', '·')} | " + " | ".join(cells) + " |", flush=True)
    doc = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "precision": "bf16",
           "warmup": args.warmup, "repeats": args.repeats, "input_sets": args.sets, "results": results}
    if args.fla:
        import triton
        doc.update({"fla_commit": fla_commit, "triton": triton.__version__, "fla_head_dims": list(FLA_HEAD_DIMS)})
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
