#!/usr/bin/env python3
"""Checks that a `icl-cli export-weights … --layout garg` file loads into Garg et al.'s model and predicts right.

    check_garg_export.py PT_FILE REFERENCE_JSON

Builds tests/data/foreign/garg_model.py's TransformerModel (an independent re-implementation of Garg's
model over transformers 4.17's GPT2Model) with the sizes in REFERENCE_JSON and the real GPT-2 vocabulary
(wte [50257, n_embd]), loads torch.load(PT_FILE) with load_state_dict(strict=True) as Garg's eval.py does,
checks the causal-mask buffers, runs the float64 forward pass on the reference prompts and compares with
predictions["300"] (absolute tolerance 1e-4).

Exit status: 0 pass; 1 fail (the message says what); 77 when python3-torch is not installed (a ctest skip).
"""

import json
import os
import sys

sys.dont_write_bytecode = True

TOLERANCE = 1e-4


def fail(message):
    print(f"check_garg_export: FAIL: {message}")
    sys.exit(1)


def main(argv):
    if len(argv) != 3:
        print("usage: check_garg_export.py PT_FILE REFERENCE_JSON")
        return 2
    pt_file, reference_json = argv[1], argv[2]
    try:
        import torch
    except ImportError:
        print("python3-torch not installed: skipped")
        return 77
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "foreign"))
    import garg_model

    with open(reference_json) as f:
        ref = json.load(f)
    model = garg_model.TransformerModel(ref["n_dims"], ref["n_positions"], ref["n_embd"], ref["n_layer"],
                                        ref["n_head"], vocab_size=garg_model.HF_GPT2_VOCAB_SIZE)
    # Poison the buffers first, so that the mask checks below cannot pass on the constructor's own values.
    for name, buf in model.named_buffers():
        buf.fill_(7)

    try:
        # weights_only: the file must hold nothing but tensors and plain containers (torch >= 2.6's default).
        state = torch.load(pt_file, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        fail(f"{pt_file}: torch.load(weights_only=True) failed: {type(e).__name__}: {e}")
    if not isinstance(state, dict):
        fail(f"{pt_file}: holds a {type(state).__name__}, not a state dict (Garg's eval.py loads it directly)")
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        fail(f"{pt_file}: load_state_dict(strict=True) refused it: {e}")

    n_tokens = 2 * ref["n_positions"]
    mask = torch.tril(torch.ones(n_tokens, n_tokens, dtype=torch.uint8)).view(1, 1, n_tokens, n_tokens)
    for i, block in enumerate(model._backbone.h):
        if block.attn.bias.dtype != torch.uint8 or not torch.equal(block.attn.bias, mask):
            fail(f"{pt_file}: _backbone.h.{i}.attn.bias is not the lower-triangular causal mask [1, 1, P, P]")
        if float(block.attn.masked_bias) != garg_model.MASKED_SCORE:
            fail(f"{pt_file}: _backbone.h.{i}.attn.masked_bias is {float(block.attn.masked_bias)}, not -1e4")

    xs = torch.tensor(ref["prompts"]["x"], dtype=torch.float64)
    ys = torch.tensor(ref["prompts"]["y"], dtype=torch.float64)
    expected = torch.tensor(ref["predictions"]["300"], dtype=torch.float64)
    got = model.forward_float64(xs, ys)
    if got.shape != expected.shape:
        fail(f"predictions have shape {list(got.shape)}, the reference {list(expected.shape)}")
    gap = float((got - expected).abs().max())
    if not gap <= TOLERANCE:
        worst = divmod(int((got - expected).abs().argmax()), expected.shape[1])
        fail(f"{pt_file}: predictions differ from {reference_json} predictions[\"300\"] by up to {gap:.3g} "
             f"(> {TOLERANCE}; prompt {worst[0]}, point {worst[1]}: got {float(got[worst]):.6f}, "
             f"expected {float(expected[worst]):.6f})")
    print(f"check_garg_export: OK: {pt_file} loads strictly into Garg's TransformerModel "
          f"({len(state)} tensors, wte {list(model._backbone.wte.weight.shape)}); "
          f"max |prediction - reference| = {gap:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
