#!/usr/bin/env python3
"""How bf16 rounding of PaTH's chunk factor X = (I + strict_lower(diag(β) W Wᵀ))⁻¹ diag(β) bends
the chunk transform P = I − Wᵀ X W (a contraction, ‖P‖₂ ≤ 1, in exact arithmetic): ‖P‖₂ with X
rounded to bf16 (the bf16 kernels before 79dea87) and with X as X_hi + X_lo (after), both with
Y = X W rounded to bf16 as the kernels store it; X itself is solved in float64 from the bf16 w.
Without arguments: synthetic chunks of 64 tokens whose w (bf16-rounded unit rows) and β repeat with
period 1 (one repeated token), 2, 3, 4 and 8, β in [1.8, 1.999) or 2σ(N(0, 1)), 20 draws each.
With --slice FILE (a one-sequence `pathbench op` input, e.g. from `scripts/op_files.py slice`):
each of its chunks. Needs numpy.
Usage: scripts/path_ut_rounding.py [--slice FILE]"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_files import np, read, to_bf16  # noqa: E402


def transform_norms(w, beta):
    """(‖P‖₂ with X in bf16, with X as X_hi + X_lo) for one chunk: w [64, D], beta [64]."""
    d = w.shape[1]
    a = np.eye(len(beta)) + np.tril(beta[:, None] * (w @ w.T), -1)
    x = np.linalg.solve(a, np.diag(beta))
    hi = to_bf16(x)
    lo = to_bf16(x - hi)
    return tuple(np.linalg.norm(np.eye(d) - w.T @ to_bf16(xs @ w), 2) for xs in (hi, hi + lo))


def synthetic():
    rng = np.random.default_rng(0)
    d = 128
    print("period  beta           max ‖P‖₂, X in bf16   max ‖P‖₂, X_hi + X_lo")
    for period in (1, 2, 3, 4, 8):
        for name, draw in (("[1.8, 1.999)", lambda n: rng.uniform(1.8, 1.999, n)),
                           ("2σ(N(0, 1))", lambda n: 2 / (1 + np.exp(-rng.standard_normal(n))))):
            worst = np.zeros(2)
            for _ in range(20):
                v = rng.standard_normal((period, d))
                v = to_bf16(v / np.linalg.norm(v, axis=1, keepdims=True))
                b = draw(period).astype(np.float32).astype(np.float64)
                rows = np.arange(64) % period
                worst = np.maximum(worst, transform_norms(v[rows], b[rows]))
            print(f"{period:>6}  {name:<13}  {worst[0]:>20.4f}  {worst[1]:>22.5f}")


def from_slice(path):
    t, _ = read(path)
    w, beta = t["w"].reshape(-1, t["w"].shape[-2], t["w"].shape[-1])[0], t["beta"].reshape(-1, t["beta"].shape[-1])[0]
    print(f"{path}: chunk, distinct w rows, β range, ‖P‖₂ with X in bf16, with X_hi + X_lo")
    for c in range(0, len(beta), 64):
        wc, bc = w[c:c + 64].astype(np.float64), beta[c:c + 64].astype(np.float64)
        old, new = transform_norms(wc, bc)
        print(f"  {c // 64:>3}  {len({r.tobytes() for r in wc}):>3}  {bc.min():.3f}–{bc.max():.3f}  {old:.4f}  {new:.5f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slice", help="a one-sequence pathbench op input file")
    args = parser.parse_args()
    if args.slice:
        from_slice(args.slice)
    else:
        synthetic()


if __name__ == "__main__":
    main()
