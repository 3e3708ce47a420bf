"""Weight layouts: the workbench's parameter names → other codebases' state dicts.

The mapping matches ``icl-cli export-weights --layout garg`` (core/training/weights_import.cpp,
``workbenchToGarg``) key for key, shape for shape and value for value.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping

import numpy as np

#: GPT2Config's default vocabulary: the rows of the (unused) ``_backbone.wte.weight`` of Garg et al.'s models.
GPT2_VOCAB_SIZE = 50257


def garg_state_dict(weights: Mapping[str, np.ndarray], config: Mapping[str, Any]) -> Dict[str, np.ndarray]:
    """Garg et al.'s ``TransformerModel`` state dict (over transformers 4.17's ``GPT2Model``) from a workbench
    ``gpt2`` regression checkpoint, float32, in the order ``icl-cli export-weights --layout garg`` writes it.

    Workbench → Garg: ``read_in`` → ``_read_in``; ``pos_embed`` [P, D] → ``_backbone.wpe.weight``; per layer l,
    ``blocks.l.attn.W_Q/W_K/W_V`` [H, D, d_head] → columns of the fused Conv1D ``_backbone.h.l.attn.c_attn.weight``
    [D, 3D] (head h at columns h·d_head …), ``b_Q/b_K/b_V`` [H, d_head] → ``c_attn.bias`` [3D], ``W_O``
    [H, d_head, D] → ``c_proj.weight`` [D, D], ``ln1/ln2`` → ``ln_1/ln_2``, ``mlp.W_in/b_in/W_out/b_out`` →
    ``mlp.c_fc/c_proj``; ``ln_final`` → ``_backbone.ln_f``; ``read_out`` → ``_read_out``. Buffers that
    transformers 4.17 keeps: ``_backbone.wte.weight`` (zeros [50257, D]), each layer's ``attn.bias`` (causal mask
    [1, 1, P, P]) and ``attn.masked_bias`` (−1e4).

    Raises ValueError for a run that is not a gpt2 regression model, or a missing parameter.
    """
    model = config.get("model", {})
    task = config.get("task", {})
    if model.get("kind") != "gpt2" or task.get("kind") == "fewshot_classification":
        what = model.get("kind", "?") + (" classifier" if task.get("kind") == "fewshot_classification" else "")
        raise ValueError(f"layout 'garg': Garg et al.'s TransformerModel is the gpt2 regression model; this run "
                         f"holds a {what} (use layout='workbench')")

    def get(name: str) -> np.ndarray:
        if name not in weights:
            raise ValueError(f"layout 'garg': parameter {name} is missing")
        return np.asarray(weights[name], dtype=np.float32)

    pos_embed = get("pos_embed")
    d_model, n_heads, n_layers = int(model["d_model"]), int(model["n_heads"]), int(model["n_layers"])
    n_positions = pos_embed.shape[0]
    out: Dict[str, np.ndarray] = {}
    out["_read_in.weight"] = get("read_in.weight")
    out["_read_in.bias"] = get("read_in.bias")
    out["_backbone.wte.weight"] = np.zeros((GPT2_VOCAB_SIZE, d_model), dtype=np.float32)
    out["_backbone.wpe.weight"] = pos_embed
    mask = np.tril(np.ones((n_positions, n_positions), dtype=np.float32)).reshape(1, 1, n_positions, n_positions)
    for layer in range(n_layers):
        h, b = f"_backbone.h.{layer}.", f"blocks.{layer}."
        out[h + "ln_1.weight"] = get(b + "ln1.weight")
        out[h + "ln_1.bias"] = get(b + "ln1.bias")
        out[h + "attn.bias"] = mask.copy()
        out[h + "attn.masked_bias"] = np.full((), -1e4, dtype=np.float32)
        # [H, D, d_head] → [D, H, d_head] → [D, D]: head h's columns h·d_head … (h+1)·d_head − 1.
        out[h + "attn.c_attn.weight"] = np.concatenate(
            [get(b + f"attn.W_{n}").transpose(1, 0, 2).reshape(d_model, d_model) for n in "QKV"], axis=1)
        out[h + "attn.c_attn.bias"] = np.concatenate([get(b + f"attn.b_{n}").reshape(d_model) for n in "QKV"])
        out[h + "attn.c_proj.weight"] = get(b + "attn.W_O").reshape(n_heads * (d_model // n_heads), d_model)
        out[h + "attn.c_proj.bias"] = get(b + "attn.b_O")
        out[h + "ln_2.weight"] = get(b + "ln2.weight")
        out[h + "ln_2.bias"] = get(b + "ln2.bias")
        out[h + "mlp.c_fc.weight"] = get(b + "mlp.W_in")
        out[h + "mlp.c_fc.bias"] = get(b + "mlp.b_in")
        out[h + "mlp.c_proj.weight"] = get(b + "mlp.W_out")
        out[h + "mlp.c_proj.bias"] = get(b + "mlp.b_out")
    out["_backbone.ln_f.weight"] = get("ln_final.weight")
    out["_backbone.ln_f.bias"] = get("ln_final.bias")
    out["_read_out.weight"] = get("read_out.weight")
    out["_read_out.bias"] = get("read_out.bias")
    return out
