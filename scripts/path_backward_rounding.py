#!/usr/bin/env python3
"""Which bf16 rounding in PaTH's per-chunk backward (local b, path_backward.cu) puts dβ and dw off
over a run of repeated tokens: float64 against the kernel's bf16 operands, for one chunk of 64 tokens
whose unit w (bf16) repeat with period 1 or 2 and share one β. X = A⁻¹ diag(β) is X_hi + X_lo (as
since 79dea87); dM, dY random (lower-triangular dM), K random bf16. The product chain is the kernel's:
dX = tril(dM SLᵀ + dY Wᵀ), Z = A⁻ᵀ dX, dA = strict_lower(−Z Xᵀ), dβ_i = Σ_j dA_ij G_ij + Z_ii,
dG = diag(β) dA, dSL = strict_lower(Xᵀ dM), dw = dSL K + Xᵀ dY + dG W + dGᵀ W. Variants: Z rounded
to bf16 in −Z Xᵀ or kept as Z_hi + Z_lo; dM, dY rounded to bf16 in their products with X or split
likewise. Prints the worst relative error (max-norm) of dβ and dw over 5 draws. Needs numpy.
Usage: scripts/path_backward_rounding.py"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from op_files import np, to_bf16  # noqa: E402

CHUNK, D = 64, 64


def split(x):
    """x as bf16 hi + bf16 lo, as the kernels keep X."""
    hi = to_bf16(x)
    return hi + to_bf16(x - hi)


def relative(a, exact):
    return np.abs(a - exact).max() / np.abs(exact).max()


def errors(beta_value, period, z_split, dm_dy_split, seed):
    """(dβ error, dw error) of one chunk."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal((period, D))
    w = to_bf16(np.array([v[i % period] / np.linalg.norm(v[i % period]) for i in range(CHUNK)]))
    k = to_bf16(rng.standard_normal((CHUNK, D)))
    beta = np.full(CHUNK, beta_value)
    g = w @ w.T
    a = np.eye(CHUNK) + np.diag(beta) @ np.tril(g, -1)
    x = np.linalg.solve(a, np.diag(beta))
    sl = np.tril(w @ k.T, -1)
    dm = np.tril(rng.standard_normal((CHUNK, CHUNK))) * 0.1
    dy = rng.standard_normal((CHUNK, D)) * 0.1

    def chain(xs, z_op, dm_op, dy_op, dx_dm, dx_dy, sl_op, dg_op):
        z = np.linalg.solve(a.T, np.tril(dx_dm(dm) @ sl_op(sl).T + dx_dy(dy) @ w.T))  # the solve is fp32
        da = np.tril(-(z_op(z) @ xs.T), -1)
        dbeta = (da * g).sum(1) + np.diag(z)
        dg = np.diag(beta) @ da
        dw = np.tril(xs.T @ dm_op(dm), -1) @ k + xs.T @ dy_op(dy) + dg_op(dg) @ w + dg_op(dg).T @ w
        return dbeta, dw

    same = lambda t: t  # noqa: E731
    exact = chain(x, same, same, same, same, same, same, same)
    z_op = split if z_split else to_bf16
    x_op = split if dm_dy_split else to_bf16
    bf16 = chain(split(x), z_op, x_op, x_op, to_bf16, to_bf16, to_bf16, to_bf16)
    return relative(bf16[0], exact[0]), relative(bf16[1], exact[1])


def main():
    print("β      period  Z            dM, dY       dβ error   dw error")
    for beta_value, period in ((1.925, 1), (1.99, 1), (1.925, 2), (1.5, 1)):
        for z_split, dm_dy_split in ((False, False), (True, False), (True, True)):
            worst = np.max([errors(beta_value, period, z_split, dm_dy_split, s) for s in range(5)], axis=0)
            print(f"{beta_value:<6} {period:<7} {'hi + lo' if z_split else 'bf16':<12} "
                  f"{'hi + lo' if dm_dy_split else 'bf16':<12} {100 * worst[0]:6.3f} %  {100 * worst[1]:6.3f} %")


if __name__ == "__main__":
    main()
