#!/usr/bin/env python3
"""Which GD step best matches Iterative Newton's step k, by the algorithm map's similarity of errors.

An independent NumPy computation (docs/science.md §5, "What the map can show"): Newton-k takes the place of a
layer, and its residual sequence over the prefixes i = 1 … N is compared with GD's on the map's GD grid, exactly
as the map compares a layer (GD from w = 0 with s = 1/‖S_i‖₂, Newton from α = 1/‖SSᵀ‖_F, x ~ N(0, I), w ~ N(0, I),
no noise). Prints a Markdown table. Needs python3-numpy only.

    scripts/newton_gd_matched_steps.py --d 5 --n 15
"""
import argparse

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=5)
    ap.add_argument("--n", type=int, default=15, help="in-context examples N")
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-k", type=int, default=20)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    d, n, b = a.d, a.n, a.prompts
    x = rng.standard_normal((b, n + 1, d))
    w = rng.standard_normal((b, d))
    y = np.einsum("bnd,bd->bn", x, w)

    # Per prompt and prefix i: eigenvalues of S_i and the products (q_jᵀX_iᵀy)(q_jᵀx_{i+1}), so that every
    # algorithm's prediction of y_{i+1} is Σ_j f(λ_j)·proj_j for its spectral filter f.
    lam = np.zeros((b, n, d))
    proj = np.zeros((b, n, d))
    for i in range(1, n + 1):
        s = np.einsum("bnd,bne->bde", x[:, :i], x[:, :i])
        l, q = np.linalg.eigh(s)
        xty = np.einsum("bnd,bn->bd", x[:, :i], y[:, :i])
        lam[:, i - 1] = l
        proj[:, i - 1] = np.einsum("bdj,bd->bj", q, xty) * np.einsum("bdj,bd->bj", q, x[:, i])
    target = y[:, 1:]
    positive = lam > 1e-9 * lam.max(-1, keepdims=True)
    safe = np.where(positive, lam, 1.0)

    def residuals(f):
        return (np.where(positive, f, 0.0) * proj).sum(-1) - target

    def newton(k):
        alpha = 1.0 / np.sqrt((lam ** 4).sum(-1, keepdims=True))
        return (1.0 - (1.0 - alpha * lam ** 2) ** (2 ** k)) / safe

    def gd(k):
        r = lam / lam.max(-1, keepdims=True)
        return (1.0 - (1.0 - r) ** k) / safe

    def similarity(u, v):
        return float(np.mean((u * v).sum(1) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))))

    grid = sorted(set(int(round(v)) for v in np.logspace(0, 3, 25)))
    gd_res = {k: residuals(gd(k)) for k in grid}
    zero = float((target ** 2).mean())
    print(f"d = {d}, N = {n}, {b} prompts, seed {a.seed}\n")
    print("| Newton k | best GD step | similarity | Newton's error / zero's |")
    print("|---:|---:|---:|---:|")
    for k in range(1, a.max_k + 1):
        r = residuals(newton(k))
        sims = [similarity(r, gd_res[g]) for g in grid]
        best = int(np.argmax(sims))
        print(f"| {k} | {grid[best]} | {sims[best]:.4f} | {float((r ** 2).mean()) / zero:.3f} |")


if __name__ == "__main__":
    main()
