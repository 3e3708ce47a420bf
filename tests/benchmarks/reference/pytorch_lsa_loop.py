# PyTorch eager reference for BM_LsaTrainLoop: von Oswald et al.'s linear self-attention training loop as a
# PyTorch user writes it, one step = draw the batch (d = 10, N = 10, batch 2,048: x ~ U(-1, 1)^d in float64,
# w ~ N(0, I), y = <w, x>, then float32), pair tokens e_i = (x_i, y_i) with the query's y zeroed, K untied LSA layers
# e <- e + sum_h W_O^h (e W_Q^h' (C W_K^h')^T)(C W_V^h') over the N context tokens C (no softmax, no scaling),
# prediction -e_q[y], half-MSE, backward, gradient-norm clipping (inf: measured, not applied), Adam, loss.item().
# Usage: python3 pytorch_lsa_loop.py LAYERS THREADS [SECONDS]   prints steps/s.
import sys, time, torch

def main():
    K, threads = int(sys.argv[1]), int(sys.argv[2])
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 8.0
    torch.set_num_threads(threads)
    d, N, B, H = 10, 10, 2048, 1
    D = d + 1
    g = torch.Generator().manual_seed(0)
    params = []
    for _ in range(K):
        for _ in range(4):  # W_Q, W_K, W_V, W_O per layer, variance scaling 1/K as in the benchmark
            params.append((torch.randn(H, D, D, generator=g) * (1.0 / K / D) ** 0.5).requires_grad_())
    opt = torch.optim.Adam(params, lr=1e-3)

    def step(seed):
        gen = torch.Generator().manual_seed(seed)
        x = torch.rand(B, N + 1, d, generator=gen, dtype=torch.float64) * 2.0 - 1.0
        w = torch.randn(B, d, generator=gen, dtype=torch.float64)
        y = torch.einsum('bnd,bd->bn', x, w)
        x, y = x.float(), y.float()
        yin = y.clone(); yin[:, N] = 0
        e = torch.cat([x, yin.unsqueeze(-1)], -1)  # [B, N+1, D]
        opt.zero_grad()
        for l in range(K):
            wq, wk, wv, wo = params[4 * l: 4 * l + 4]
            ctx = e[:, :N]
            q = torch.einsum('btd,hed->bhte', e, wq)
            k = torch.einsum('bnd,hed->bhne', ctx, wk)
            v = torch.einsum('bnd,hed->bhne', ctx, wv)
            z = (q @ k.transpose(-1, -2)) @ v
            e = e + torch.einsum('bhte,hfe->btf', z, wo)
        loss = 0.5 * ((-e[:, N, d]) - y[:, N]).pow(2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, float('inf'))
        opt.step()
        return loss.item()

    for s in range(20):
        step(s + 1)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        step(n + 100)
        n += 1
    print(f"{n / (time.perf_counter() - t0):.2f}")

if __name__ == '__main__':
    main()
