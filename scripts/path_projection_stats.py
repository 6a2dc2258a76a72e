#!/usr/bin/env python3
"""PaTH's first-layer w and β at a checkpoint, on training sequences of the run's task, to diagnose
non-finite steps: the norm of the activation that w normalizes (‖a‖: the gradient through
w = a / ‖a‖ grows as 1/‖a‖), β, and, with w rounded to bf16 as the GPU's bf16 kernels read it,
|1 − β‖w‖²| (above 1, a transformation that no longer contracts). The forward (embedding, RMSNorm,
low-rank projection, causal width-3 convolution, SiLU) is computed here with numpy from the
checkpoint's tensors, independently of pathbench; the sequences come from `pathbench sample` with
the run config the checkpoint holds. Layer 0 only (a deeper layer's input needs the attention).
Usage: scripts/path_projection_stats.py CHECKPOINT [--count 64] [--seed SEED] [--pathbench BINARY]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots"))
import find_matplotlib  # noqa: E402,F401  (an interpreter with matplotlib has numpy)
from op_files import np, read, to_bf16  # noqa: E402


def read_checkpoint(path):
    """(the model's tensors as float64 arrays, metadata) of a checkpoint; the optimizer state left out."""
    tensors, metadata = read(path)
    return {name: t.astype(np.float64) for name, t in tensors.items() if not name.startswith("optimizer.")}, metadata


def sample_tokens(pathbench, run_config, count, seed):
    """[count, T] token ids of the task's first training sequences for `seed`."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(run_config, f)
    try:
        out = subprocess.run([pathbench, "sample", f.name, "--count", str(count), "--seed", str(seed)],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    finally:
        os.unlink(f.name)
    symbols = json.loads("[" + ",".join(out[1][len("symbols: "):].split(" ")) + "]")
    ids = {s: i for i, s in enumerate(symbols)}
    rows = [[ids[t.split("[")[0]] for t in out[i + 1].split(" ")] for i, line in enumerate(out) if line.startswith("#")]
    return np.array(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--count", type=int, default=64, help="training sequences (default 64)")
    parser.add_argument("--seed", type=int, help="task seed (default: the run's)")
    parser.add_argument("--pathbench", default=next((p for p in ("build/pathbench", "build-cpu/pathbench",
                                                                  "build-cuda/pathbench") if os.path.exists(p)), None))
    args = parser.parse_args()
    if not args.pathbench:
        sys.exit("path_projection_stats: no pathbench binary found; give --pathbench")
    t, meta = read_checkpoint(args.checkpoint)
    if "run_config" not in meta:
        sys.exit(f"{args.checkpoint}: holds no run config (an older checkpoint)")
    run = json.loads(meta["run_config"])
    model = json.loads(meta["model_config"])
    if model["encoding"] not in ("path", "path_fox"):
        sys.exit(f"{args.checkpoint}: encoding {model['encoding']} has no PaTH projection")
    heads, width = model["n_heads"], model["d_model"]
    tokens = sample_tokens(args.pathbench, run, args.count, run["seed"] if args.seed is None else args.seed)
    x = t["embedding"][tokens]                                               # [B, T, C]
    x = x / np.sqrt((x * x).mean(-1, keepdims=True) + model["norm_eps"]) * t["layers.0.norm1"]
    y = x @ t["layers.0.attn.path_w_down"].T @ t["layers.0.attn.path_w_up"].T  # [B, T, H·D]
    conv = t["layers.0.attn.path_w_conv"]                                    # [H·D, 3], tap 2 = this token
    z = np.zeros_like(y)
    for tap in range(3):
        lag = 2 - tap
        z[:, lag:] += conv[:, tap] * y[:, :y.shape[1] - lag]
    a = (z / (1 + np.exp(-z))).reshape(*z.shape[:2], heads, width // heads)  # [B, T, H, D]
    norm = np.linalg.norm(a, axis=-1)
    w16 = to_bf16(a / np.maximum(norm, 1e-12)[..., None])
    pre = x @ t["layers.0.attn.path_beta_weight"].T + t["layers.0.attn.path_beta_bias"]
    beta = 2 / (1 + np.exp(-pre))                                           # [B, T, H]
    eps = model["encoding_options"].get("beta_clip_eps", 0)
    if eps > 0:
        beta = np.minimum(beta, 2 - eps)
    gain = np.abs(1 - beta * (w16 * w16).sum(-1))
    print(f"{args.checkpoint}: layer 0, {tokens.shape[0]} sequences of {tokens.shape[1]} tokens")
    for h in range(heads):
        print(f"  head {h}: ||a|| min {norm[..., h].min():.3g} median {np.median(norm[..., h]):.3g}; "
              f"beta {beta[..., h].min():.4f}..{beta[..., h].max():.4f}; "
              f"bf16 ||w||^2 {((w16[..., h, :] ** 2).sum(-1)).min():.5f}..{((w16[..., h, :] ** 2).sum(-1)).max():.5f}; "
              f"|1 - beta ||w||^2| max {gain[..., h].max():.4f} (above 1: {(gain[..., h] > 1).sum()} tokens)")


if __name__ == "__main__":
    main()
