# PyTorch eager reference for BM_Gpt2TrainStep and BM_Gpt2TrainStepCuda (run by scripts/check-cuda.sh): the same
# GPT-2 training step (Garg et al.: d = 20, N = 40,
# 81 interleaved tokens [x_i; (y_i, 0...)], read-in, learned positions, pre-LN blocks with causal multi-head
# attention and an MLP x4 with GPT-2's tanh-form GELU, final LN, read-out to one number, half-MSE over all y predictions, Adam).
import sys, time, torch, torch.nn as nn, torch.nn.functional as F

class Block(nn.Module):
    def __init__(s, D, H):
        super().__init__(); s.H = H
        s.ln1 = nn.LayerNorm(D); s.qkv = nn.Linear(D, 3 * D); s.o = nn.Linear(D, D)
        s.ln2 = nn.LayerNorm(D); s.w1 = nn.Linear(D, 4 * D); s.w2 = nn.Linear(4 * D, D)
    def forward(s, x, mask):
        B, T, D = x.shape; h = s.ln1(x)
        q, k, v = s.qkv(h).view(B, T, 3, s.H, D // s.H).permute(2, 0, 3, 1, 4)
        a = (q @ k.transpose(-1, -2)) / (D // s.H) ** 0.5
        a = a.masked_fill(~mask, float('-inf')).softmax(-1)
        x = x + s.o((a @ v).transpose(1, 2).reshape(B, T, D))
        return x + s.w2(F.gelu(s.w1(s.ln2(x)), approximate='tanh'))

class Gpt2(nn.Module):
    def __init__(s, L, H, D, d=20, T=81):
        super().__init__()
        s.read_in = nn.Linear(d, D); s.pos = nn.Parameter(torch.randn(T, D) * 0.02)
        s.blocks = nn.ModuleList(Block(D, H) for _ in range(L)); s.ln = nn.LayerNorm(D); s.read_out = nn.Linear(D, 1)
    def forward(s, tok, mask):
        x = s.read_in(tok) + s.pos
        for b in s.blocks: x = b(x, mask)
        return s.read_out(s.ln(x)).squeeze(-1)

def steps_per_s(L, H, D, B, dev, seconds=3.0):
    torch.manual_seed(0); d, N = 20, 40
    x = torch.randn(B, N + 1, d); w = torch.randn(B, d); y = (x @ w.unsqueeze(-1)).squeeze(-1)
    ytok = torch.zeros(B, N, d); ytok[..., 0] = y[:, :N]
    tok = torch.cat([torch.stack([x[:, :N], ytok], 2).reshape(B, 2 * N, d), x[:, N:]], 1).to(dev)
    y = y.to(dev); mask = torch.ones(81, 81, dtype=torch.bool, device=dev).tril()
    m = Gpt2(L, H, D).to(dev); opt = torch.optim.Adam(m.parameters(), 1e-4)
    def step():
        opt.zero_grad(); pred = m(tok, mask)[:, 0::2]  # predictions at the x tokens: y_1..y_N, y_q
        loss = 0.5 * (pred - y).pow(2).mean(); loss.backward(); opt.step(); return loss.item()
    t0 = time.time()
    while time.time() - t0 < 1.0: step()
    n, t0 = 0, time.time()
    while time.time() - t0 < seconds: step(); n += 1
    return n / (time.time() - t0)

dev = sys.argv[1] if len(sys.argv) > 1 else 'cuda'
for L, H, D, B in [(3, 2, 64, 64), (12, 8, 256, 64), (12, 8, 256, 1024)]:
    print(f"pytorch_eager {dev} layers={L} heads={H} d_model={D} batch={B}: {steps_per_s(L, H, D, B, dev):.1f} steps/s", flush=True)
