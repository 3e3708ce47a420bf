"""Independent re-implementation of Garg et al.'s TransformerModel, for test fixtures and checks.

Garg, Tsipras, Liang, Valiant (2022), "What Can Transformers Learn In-Context?", code at
github.com/dtsip/in-context-learning (src/models.py). Their model is a read-in nn.Linear(n_dims, n_embd), a
Hugging Face GPT2Model (transformers 4.17, the version of their environment.yml) run on inputs_embeds, and a
read-out nn.Linear(n_embd, 1). This file rebuilds it on plain torch.nn so that:

  * state_dict() has exactly the keys, shapes, dtypes and order of the real model:
      _read_in.{weight [D, d], bias [D]}
      _backbone.wte.weight [vocab, D]                 (never used: the model runs on inputs_embeds)
      _backbone.wpe.weight [P, D]                      P = 2 * n_positions (x and y tokens)
      _backbone.h.{i}.ln_1.{weight, bias} [D]
      _backbone.h.{i}.attn.bias [1, 1, P, P] uint8     buffer: lower-triangular causal mask
      _backbone.h.{i}.attn.masked_bias []              buffer: tensor(-1e4), the masked score
      _backbone.h.{i}.attn.c_attn.{weight [D, 3D], bias [3D]}   Conv1D: y = x @ W + b, W is [in, out]
      _backbone.h.{i}.attn.c_proj.{weight [D, D], bias [D]}
      _backbone.h.{i}.ln_2.{weight, bias} [D]
      _backbone.h.{i}.mlp.c_fc.{weight [D, 4D], bias [4D]}
      _backbone.h.{i}.mlp.c_proj.{weight [4D, D], bias [D]}
      _backbone.ln_f.{weight, bias} [D]
      _read_out.{weight [1, D], bias [1]}
  * the forward pass computes what HF GPT-2 computes: h_0 = inputs_embeds + wpe[0..T-1]; per block
    h += attn(ln_1 h), h += mlp(ln_2 h) (pre-LN); ln_f at the end. LayerNorm eps 1e-5; attention scores
    q k^T / sqrt(head_dim), causal (masked scores replaced by masked_bias, then softmax); the MLP is
    c_proj(gelu_new(c_fc h)) with gelu_new the tanh approximation; no dropout (Garg sets every pdrop to 0).

forward_float64() runs a float64 copy of the module: the fixtures' reference predictions come from it.

Run with Debian's python3-torch (1.13): /usr/bin/python3.
"""

import copy
import math

import torch
from torch import nn

# GPT2Config's default vocabulary; Garg's models keep it (their wte is allocated but never read).
HF_GPT2_VOCAB_SIZE = 50257
LAYER_NORM_EPS = 1e-5
MASKED_SCORE = -1e4  # transformers 4.17 GPT2Attention.masked_bias


def gelu_new(x):
    """GELU, tanh approximation (HF "gelu_new"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GeluNew(nn.Module):
    """gelu_new as a module (the MLP holds one, as HF's does; it has no parameters)."""

    def forward(self, x):
        return gelu_new(x)


class Conv1D(nn.Module):
    """HF's "Conv1D": an affine map whose weight is stored [in_features, out_features]; y = x @ W + b."""

    def __init__(self, out_features, in_features):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_features, out_features).normal_(0.0, 0.02))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        return torch.matmul(x, self.weight) + self.bias


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with GPT-2's fused q|k|v projection c_attn [D, 3D] and c_proj [D, D]."""

    def __init__(self, n_embd, n_head, max_positions):
        super().__init__()
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd {n_embd} is not a multiple of n_head {n_head}")
        # Buffers first: they precede c_attn / c_proj in state_dict(), as in the real module.
        mask = torch.tril(torch.ones(max_positions, max_positions, dtype=torch.uint8))
        self.register_buffer("bias", mask.view(1, 1, max_positions, max_positions))
        self.register_buffer("masked_bias", torch.tensor(MASKED_SCORE))
        self.n_embd = n_embd
        self.n_head = n_head
        self.head_dim = n_embd // n_head
        self.c_attn = Conv1D(3 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(0.0)
        self.resid_dropout = nn.Dropout(0.0)

    def _heads(self, t):
        # [B, T, D] -> [B, H, T, head_dim]; head h owns columns h*head_dim .. (h+1)*head_dim-1.
        b, n, _ = t.shape
        return t.reshape(b, n, self.n_head, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, h):
        b, n, _ = h.shape
        q, k, v = self.c_attn(h).split(self.n_embd, dim=2)
        q, k, v = self._heads(q), self._heads(k), self._heads(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (float(self.head_dim) ** 0.5)  # [B, H, T, T]
        allowed = self.bias[:, :, :n, :n].bool()
        scores = torch.where(allowed, scores, self.masked_bias.to(scores.dtype))
        pattern = self.attn_dropout(torch.softmax(scores, dim=-1))
        z = torch.matmul(pattern, v)  # [B, H, T, head_dim]
        z = z.permute(0, 2, 1, 3).reshape(b, n, self.n_embd)
        return self.resid_dropout(self.c_proj(z))


class Mlp(nn.Module):
    """c_proj(gelu_new(c_fc(h))) with c_fc [D, 4D] and c_proj [4D, D]."""

    def __init__(self, n_embd):
        super().__init__()
        self.c_fc = Conv1D(4 * n_embd, n_embd)
        self.c_proj = Conv1D(n_embd, 4 * n_embd)
        self.act = GeluNew()
        self.dropout = nn.Dropout(0.0)

    def forward(self, h):
        return self.dropout(self.c_proj(self.act(self.c_fc(h))))


class Block(nn.Module):
    """Pre-LN transformer block: h + attn(ln_1 h), then h + mlp(ln_2 h)."""

    def __init__(self, n_embd, n_head, max_positions):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, eps=LAYER_NORM_EPS)
        self.attn = CausalSelfAttention(n_embd, n_head, max_positions)
        self.ln_2 = nn.LayerNorm(n_embd, eps=LAYER_NORM_EPS)
        self.mlp = Mlp(n_embd)

    def forward(self, h):
        h = h + self.attn(self.ln_1(h))
        return h + self.mlp(self.ln_2(h))


class Gpt2Backbone(nn.Module):
    """The GPT2Model part: wte (unused here), wpe, blocks h.{i}, ln_f; run on inputs_embeds only."""

    def __init__(self, n_positions, n_embd, n_layer, n_head, vocab_size):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.drop = nn.Dropout(0.0)
        self.h = nn.ModuleList([Block(n_embd, n_head, n_positions) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd, eps=LAYER_NORM_EPS)
        for emb in (self.wte, self.wpe):
            nn.init.normal_(emb.weight, 0.0, 0.02)

    def forward(self, inputs_embeds):
        n = inputs_embeds.shape[1]
        if n > self.wpe.num_embeddings:
            raise ValueError(f"{n} tokens, but the model has {self.wpe.num_embeddings} positions")
        positions = torch.arange(n, device=inputs_embeds.device)
        h = self.drop(inputs_embeds + self.wpe(positions))
        for block in self.h:
            h = block(h)
        return self.ln_f(h)


class TransformerModel(nn.Module):
    """Garg et al.'s in-context regression transformer (n_positions = the most (x, y) points of a prompt).

    vocab_size: rows of the unused wte. The real model has HF_GPT2_VOCAB_SIZE; the committed fixtures use a
    smaller one to stay small (nothing reads wte), and say so.
    """

    def __init__(self, n_dims, n_positions, n_embd=128, n_layer=12, n_head=4, vocab_size=HF_GPT2_VOCAB_SIZE):
        super().__init__()
        self.name = f"gpt2_embd={n_embd}_layer={n_layer}_head={n_head}"
        self.n_positions = n_positions
        self.n_dims = n_dims
        self._read_in = nn.Linear(n_dims, n_embd)
        self._backbone = Gpt2Backbone(2 * n_positions, n_embd, n_layer, n_head, vocab_size)
        self._read_out = nn.Linear(n_embd, 1)

    @staticmethod
    def _combine(xs, ys):
        """[B, N, d] x's and [B, N] y's -> [B, 2N, d] tokens x_1, y_1, x_2, y_2, ... with y_i as [y_i, 0, ..., 0]."""
        b, n, d = xs.shape
        y_tokens = torch.zeros(b, n, d, dtype=xs.dtype, device=xs.device)
        y_tokens[:, :, 0] = ys
        return torch.stack((xs, y_tokens), dim=2).reshape(b, 2 * n, d)

    def forward(self, xs, ys, inds=None):
        """Predictions [B, N] at every x token (or at the points `inds`): read_out(h)[:, ::2, 0]."""
        if inds is None:
            inds = torch.arange(ys.shape[1])
        else:
            inds = torch.tensor(inds)
            if int(inds.max()) >= ys.shape[1] or int(inds.min()) < 0:
                raise ValueError("inds contain indices where xs and ys are not defined")
        out = self._backbone(self._read_in(self._combine(xs, ys)))
        return self._read_out(out)[:, ::2, 0][:, inds]

    def forward_float64(self, xs, ys, inds=None):
        """The reference: the same forward pass on a float64 copy (parameters upcast exactly), xs/ys as float64."""
        reference = copy.deepcopy(self).double().eval()
        with torch.no_grad():
            return reference(torch.as_tensor(xs, dtype=torch.float64), torch.as_tensor(ys, dtype=torch.float64),
                             inds)
