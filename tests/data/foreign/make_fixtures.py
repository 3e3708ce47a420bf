#!/usr/bin/env python3
"""Writes every foreign-checkpoint fixture in tests/data/foreign/ (deterministic: fixed seeds, fixed zip times).

    /usr/bin/python3 tests/data/foreign/make_fixtures.py

Needs Debian's python3-torch (1.13) and python3-numpy; PyYAML (python3-yaml) for config.yaml when present.
Every file is byte-for-byte reproducible except legacy.pt (PyTorch's legacy format names storages by memory
address). The model is Garg et al.'s TransformerModel as re-implemented in garg_model.py (n_dims 5, n_embd 32,
n_layer 2, n_head 4, n_positions 11), except that wte has FIXTURE_VOCAB rows instead of 50257 (wte is never
read; the real size would make every file ~6 MB). See README.md for what each file is for.
"""

import collections
import contextlib
import io
import json
import os
import pickletools
import struct
import sys
import time
import zipfile

if os.environ.get("PYTHONHASHSEED") != "0":  # TorchScript writes Final constants in set order: pin the hash seed
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable] + sys.argv)
sys.dont_write_bytecode = True  # no __pycache__ in the fixture folder

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import garg_model  # noqa: E402

N_DIMS, N_EMBD, N_LAYER, N_HEAD, N_POSITIONS = 5, 32, 2, 4, 11
FIXTURE_VOCAB = 4  # rows of the unused wte in the fixtures (the real model has 50257)
STEPS = (100, 200, 300)
LEARNING_RATE = 1e-4  # config.yaml's training.learning_rate, also the Adam step of state.pt
N_PROMPTS = 4
HOSTILE_MARKER = "/tmp/icl_workbench_hostile_pickle_ran"
FIXED_ZIP_TIME = (2024, 1, 1, 0, 0, 0)  # numpy.savez stamps zip entries with the clock; fixed for determinism


def new_model():
    return garg_model.TransformerModel(N_DIMS, N_POSITIONS, N_EMBD, N_LAYER, N_HEAD, vocab_size=FIXTURE_VOCAB)


def random_weights(seed):
    """A state dict of random weights: non-trivial LayerNorm gains/biases and biases everywhere, scaled so that
    the residual stream stays O(1) and predictions are O(1)."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape, scale=1.0, mean=0.0):
        return mean + scale * torch.randn(*shape, generator=g)

    model = new_model()
    sd = model.state_dict()
    d, dm = N_DIMS, N_EMBD
    values = {
        "_read_in.weight": randn(dm, d, scale=1.0 / d ** 0.5),
        "_read_in.bias": randn(dm, scale=0.1),
        "_backbone.wte.weight": randn(FIXTURE_VOCAB, dm, scale=0.02),
        "_backbone.wpe.weight": randn(2 * N_POSITIONS, dm, scale=0.3),
        "_backbone.ln_f.weight": randn(dm, scale=0.2, mean=1.0),
        "_backbone.ln_f.bias": randn(dm, scale=0.1),
        "_read_out.weight": randn(1, dm, scale=1.0 / dm ** 0.5),
        "_read_out.bias": randn(1, scale=0.1),
    }
    for i in range(N_LAYER):
        p = f"_backbone.h.{i}."
        values.update({
            p + "ln_1.weight": randn(dm, scale=0.2, mean=1.0),
            p + "ln_1.bias": randn(dm, scale=0.1),
            p + "attn.c_attn.weight": randn(dm, 3 * dm, scale=1.0 / dm ** 0.5),
            p + "attn.c_attn.bias": randn(3 * dm, scale=0.1),
            p + "attn.c_proj.weight": randn(dm, dm, scale=0.5 / dm ** 0.5),
            p + "attn.c_proj.bias": randn(dm, scale=0.05),
            p + "ln_2.weight": randn(dm, scale=0.2, mean=1.0),
            p + "ln_2.bias": randn(dm, scale=0.1),
            # MLP pre-activations O(2), where gelu_new and the exact (erf) GELU differ visibly.
            p + "mlp.c_fc.weight": randn(dm, 4 * dm, scale=2.0 / dm ** 0.5),
            p + "mlp.c_fc.bias": randn(4 * dm, scale=0.1),
            p + "mlp.c_proj.weight": randn(4 * dm, dm, scale=1.0 / (4 * dm) ** 0.5),
            p + "mlp.c_proj.bias": randn(dm, scale=0.05),
        })
    assert set(values) == {k for k, v in sd.items() if v.is_floating_point() and v.dim() > 0}
    for k, v in values.items():
        assert v.shape == sd[k].shape, k
        sd[k].copy_(v)
    model.load_state_dict(sd, strict=True)
    return model


def regression_prompts(seed, batch, points):
    """x ~ N(0, I_d), y = <w, x> with w ~ N(0, I_d) per prompt (Garg's linear_regression), every value rounded
    to float32 so that a float32 reader sees exactly the numbers the float64 reference used."""
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(batch, points, N_DIMS, generator=g)
    ws = torch.randn(batch, N_DIMS, generator=g)
    ys = torch.einsum("bnd,bd->bn", xs.double(), ws.double()).float()
    return xs.double(), ys.double()


def adam_one_step(model, seed):
    """One real torch.optim.Adam step (lr = LEARNING_RATE) on Garg's training loss; returns the optimizer."""
    xs, ys = regression_prompts(seed, 8, N_POSITIONS)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    optimizer.zero_grad()
    loss = (model(xs.float(), ys.float()) - ys.float()).square().mean()
    loss.backward()
    optimizer.step()
    return optimizer


def numpy_forward(sd, xs, ys):
    """A second, plain-NumPy float64 forward pass over a Garg state dict (a cross-check of garg_model)."""
    f = {k: v.double().numpy() for k, v in sd.items()}
    b, n, d = xs.shape
    z = np.zeros((b, 2 * n, d))
    z[:, 0::2] = xs
    z[:, 1::2, 0] = ys

    def ln(h, prefix):
        mu = h.mean(-1, keepdims=True)
        var = ((h - mu) ** 2).mean(-1, keepdims=True)
        return (h - mu) / np.sqrt(var + 1e-5) * f[prefix + ".weight"] + f[prefix + ".bias"]

    h = z @ f["_read_in.weight"].T + f["_read_in.bias"] + f["_backbone.wpe.weight"][: 2 * n]
    t, hd = 2 * n, N_EMBD // N_HEAD
    causal = np.tril(np.ones((t, t), dtype=bool))
    for i in range(N_LAYER):
        p = f"_backbone.h.{i}."
        a = ln(h, p + "ln_1")
        qkv = a @ f[p + "attn.c_attn.weight"] + f[p + "attn.c_attn.bias"]
        heads = []
        for hh in range(N_HEAD):
            q = qkv[..., hh * hd:(hh + 1) * hd]
            k = qkv[..., N_EMBD + hh * hd:N_EMBD + (hh + 1) * hd]
            v = qkv[..., 2 * N_EMBD + hh * hd:2 * N_EMBD + (hh + 1) * hd]
            s = np.where(causal, q @ np.swapaxes(k, 1, 2) / np.sqrt(hd), -np.inf)
            s = np.exp(s - s.max(-1, keepdims=True))
            heads.append((s / s.sum(-1, keepdims=True)) @ v)
        h = h + np.concatenate(heads, -1) @ f[p + "attn.c_proj.weight"] + f[p + "attn.c_proj.bias"]
        m = ln(h, p + "ln_2") @ f[p + "mlp.c_fc.weight"] + f[p + "mlp.c_fc.bias"]
        m = 0.5 * m * (1 + np.tanh(np.sqrt(2 / np.pi) * (m + 0.044715 * m ** 3)))
        h = h + m @ f[p + "mlp.c_proj.weight"] + f[p + "mlp.c_proj.bias"]
    h = ln(h, "_backbone.ln_f")
    return (h @ f["_read_out.weight"].T + f["_read_out.bias"])[:, 0::2, 0]


def reference_predictions(sd, xs, ys):
    """The float64 forward pass of garg_model on `sd` exactly as stored (any float dtype, upcast to float64)."""
    model = new_model()
    model.load_state_dict(sd, strict=True)  # copies into float32 buffers: fine for float32/fp16/bf16 values
    for k, v in sd.items():  # float64 files would lose bits in a float32 module: check none did
        if v.is_floating_point():
            assert v.dtype != torch.float64 or torch.equal(v, v.float().double()), k
    out = model.forward_float64(xs, ys)
    cross = numpy_forward(sd, xs.numpy(), ys.numpy())
    gap = float(np.abs(out.numpy() - cross).max())
    assert gap < 1e-10, f"garg_model and the NumPy cross-check disagree by {gap}"
    return out


def converted(model, convert):
    """state_dict() of a copy of `model` after convert (e.g. nn.Module.half): float tensors converted, the
    uint8 causal masks kept, as model.half().state_dict() gives."""
    import copy
    return convert(copy.deepcopy(model)).state_dict()


class Wrapper(nn.Module):
    """Holds a module under one attribute name, to produce real prefixed state dicts ("module." as DDP does,
    "_orig_mod." as torch.compile's OptimizedModule does)."""

    def __init__(self, name, inner):
        super().__init__()
        self.add_module(name, inner)


class HostilePayload:
    """Pickles as a call of os.system: unpickling it runs a shell command. Never load hostile.pt."""

    def __reduce__(self):
        return (os.system, (f"touch {HOSTILE_MARKER}",))


class TinyScripted(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        return torch.relu(self.linear(x))


@contextlib.contextmanager
def fixed_zip_clock():
    """zipfile stamps entries with time.localtime(time.time()); pin it so numpy.savez output is reproducible."""
    real = zipfile.time

    class Clock:
        @staticmethod
        def time():
            return 0.0

        @staticmethod
        def localtime(_=None):
            return time.struct_time(FIXED_ZIP_TIME + (0, 1, -1))

    zipfile.time = Clock
    try:
        yield
    finally:
        zipfile.time = real


@contextlib.contextmanager
def cuda_location_tags():
    """Makes torch.save tag CPU storages "cuda:0", as a checkpoint saved from a GPU model is tagged (Garg's
    train.py trains on CUDA). Only the location string in data.pkl changes; the bytes are the same."""
    active = [True]

    def tagger(obj):
        if active[0] and getattr(obj, "device", torch.device("meta")).type == "cpu":
            return "cuda:0"
        return None

    def deserializer(obj, location):
        return None

    torch.serialization.register_package(-100, tagger, deserializer)
    try:
        yield
    finally:
        active[0] = False  # the registry has no removal; a disabled tagger falls through to the CPU one


def safetensors_bytes(tensors, metadata):
    """Safetensors as the reference writer lays it out: u64 LE header length, JSON header ("__metadata__" first,
    then tensors in data order), padded with spaces to a multiple of 8, then the raw little-endian data, tensors
    sorted by element size (largest first), then name."""
    names = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
             torch.int64: "I64", torch.int32: "I32", torch.uint8: "U8", torch.bool: "BOOL"}
    items = sorted(tensors.items(), key=lambda kv: (-kv[1].element_size(), kv[0]))
    header = collections.OrderedDict([("__metadata__", metadata)])
    blobs, offset = [], 0
    for name, t in items:
        t = t.detach().contiguous()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        assert len(raw) == t.numel() * t.element_size()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def noncontiguous_copy(sd):
    """The same values, several tensors saved as views: non-zero storage offsets, transposed and strided
    layouts, and two tensors sharing one storage. Storage elements outside the views hold large junk values,
    so a reader that ignores offset/stride reads visibly wrong numbers."""
    g = torch.Generator().manual_seed(777)
    out = collections.OrderedDict((k, v.clone()) for k, v in sd.items())

    def junk(*shape):
        return 1000.0 + 100.0 * torch.randn(*shape, generator=g)

    w = sd["_backbone.h.0.attn.c_attn.weight"]  # [32, 96] as a transposed slice of a [100, 40] storage
    big = junk(100, 40)
    big[1:97, 3:35] = w.t()
    out["_backbone.h.0.attn.c_attn.weight"] = big[1:97, 3:35].t()
    w = sd["_backbone.h.1.mlp.c_fc.weight"]  # [32, 128] as every other column of a [32, 257] storage
    big = junk(32, 257)
    big[:, 1::2] = w
    out["_backbone.h.1.mlp.c_fc.weight"] = big[:, 1::2]
    shared = torch.cat([sd["_backbone.h.0.ln_1.weight"], sd["_backbone.h.0.ln_1.bias"]])  # one storage, two views
    out["_backbone.h.0.ln_1.weight"] = shared[:N_EMBD]
    out["_backbone.h.0.ln_1.bias"] = shared[N_EMBD:]
    out["_backbone.wpe.weight"] = sd["_backbone.wpe.weight"].t().contiguous().t()  # column-major [22, 32]
    rows = junk(3, N_EMBD)  # [1, 32] as row 2 of a [3, 32] storage (offset 64)
    rows[2] = sd["_read_out.weight"][0]
    out["_read_out.weight"] = rows[2:3]
    out._metadata = sd._metadata
    for k in out:
        assert torch.equal(out[k], sd[k]), k
    return out


def garg_config_yaml():
    """config.yaml as Garg's train.py writes it: yaml.dump(args.__dict__, default_flow_style=False), keys sorted."""
    config = {
        "config": "conf/toy.yaml",
        "inherit": ["conf/models/standard.yaml", "conf/wandb.yaml"],
        "model": {"family": "gpt2", "n_dims": N_DIMS, "n_embd": N_EMBD, "n_head": N_HEAD, "n_layer": N_LAYER,
                  "n_positions": N_POSITIONS},
        "out_dir": "../models/linear_regression/0b6f1c2e-3d4a-4e5f-8a9b-0c1d2e3f4a5b",
        "test_run": False,
        "training": {
            "batch_size": 64,
            "curriculum": {"dims": {"end": N_DIMS, "inc": 1, "interval": 2000, "start": N_DIMS},
                           "points": {"end": N_POSITIONS, "inc": 2, "interval": 2000, "start": N_POSITIONS}},
            "data": "gaussian",
            "keep_every_steps": 100,
            "learning_rate": LEARNING_RATE,
            "num_tasks": None,
            "num_training_examples": None,
            "resume_id": None,
            "save_every_steps": 100,
            "task": "linear_regression",
            "task_kwargs": {},
            "train_steps": 301,
        },
        "wandb": {"entity": "in-context", "log_every_steps": 100, "name": "linear_regression_toy", "notes": "",
                  "project": "in-context-training"},
    }
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        return yaml.dump(config, default_flow_style=False)
    return COMMITTED_CONFIG_YAML  # same text, for machines without PyYAML


# What PyYAML 6 writes for garg_config_yaml()'s dict (checked against it whenever PyYAML is present).
COMMITTED_CONFIG_YAML = """config: conf/toy.yaml
inherit:
- conf/models/standard.yaml
- conf/wandb.yaml
model:
  family: gpt2
  n_dims: 5
  n_embd: 32
  n_head: 4
  n_layer: 2
  n_positions: 11
out_dir: ../models/linear_regression/0b6f1c2e-3d4a-4e5f-8a9b-0c1d2e3f4a5b
test_run: false
training:
  batch_size: 64
  curriculum:
    dims:
      end: 5
      inc: 1
      interval: 2000
      start: 5
    points:
      end: 11
      inc: 2
      interval: 2000
      start: 11
  data: gaussian
  keep_every_steps: 100
  learning_rate: 0.0001
  num_tasks: null
  num_training_examples: null
  resume_id: null
  save_every_steps: 100
  task: linear_regression
  task_kwargs: {}
  train_steps: 301
wandb:
  entity: in-context
  log_every_steps: 100
  name: linear_regression_toy
  notes: ''
  project: in-context-training
"""


def to_list(t):
    return t.tolist()


def main():
    torch.manual_seed(0)
    run_dir = os.path.join(HERE, "garg_run")
    os.makedirs(run_dir, exist_ok=True)
    written = []

    def path(name):
        p = os.path.join(HERE, name)
        written.append(p)
        return p

    # Weights of the three "steps". Step 300 is step-300-before-update plus one real Adam step, so state.pt
    # holds the weights together with the optimizer state that produced them (as Garg's train.py saves it).
    models = {100: random_weights(100), 200: random_weights(200)}
    models[300] = random_weights(300)
    optimizer = adam_one_step(models[300], seed=3000)
    sds = {step: m.state_dict() for step, m in models.items()}
    sd = sds[300]

    # --- Garg run folder
    config_text = garg_config_yaml()
    if config_text != COMMITTED_CONFIG_YAML:
        raise SystemExit("PyYAML writes config.yaml differently from COMMITTED_CONFIG_YAML: update it")
    with open(path("garg_run/config.yaml"), "w") as f:
        f.write(config_text)
    torch.save(sds[100], path("garg_run/model_100.pt"))
    torch.save(sds[200], path("garg_run/model_200.pt"))
    torch.save({"model_state_dict": sd, "optimizer_state_dict": optimizer.state_dict(), "train_step": 300},
               path("garg_run/state.pt"))

    # --- step-300 weights in every other layout
    torch.save(sd, path("bare.pt"))
    torch.save(Wrapper("module", models[300]).state_dict(), path("prefixed_module.pt"))
    torch.save(Wrapper("_orig_mod", Wrapper("module", models[300])).state_dict(), path("prefixed_compile.pt"))
    sd_fp16 = converted(models[300], nn.Module.half)
    sd_bf16 = converted(models[300], nn.Module.bfloat16)
    torch.save(sd_fp16, path("fp16.pt"))
    torch.save(sd_bf16, path("bf16.pt"))
    torch.save(converted(models[300], nn.Module.double), path("fp64.pt"))
    torch.save(noncontiguous_copy(sd), path("noncontiguous.pt"))
    torch.save({"model": sd}, path("model_key.pt"))
    torch.save({"state_dict": sd, "epoch": 3}, path("state_dict_key.pt"))
    torch.save({"weight": torch.randn(3, 4, generator=torch.Generator().manual_seed(34))}, path("one_key.pt"))
    torch.manual_seed(5)
    torch.jit.save(torch.jit.script(TinyScripted()), path("torchscript.pt"))
    torch.save(sd, path("legacy.pt"), _use_new_zipfile_serialization=False)
    with open(os.path.join(HERE, "bare.pt"), "rb") as f:
        bare = f.read()
    with open(path("truncated.pt"), "wb") as f:
        f.write(bare[: len(bare) // 2])
    hostile = collections.OrderedDict([("_read_in.weight", sd["_read_in.weight"]), ("payload", HostilePayload())])
    torch.save(hostile, path("hostile.pt"))
    with cuda_location_tags():
        torch.save(sd, path("cuda_location.pt"))
    with open(path("model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(sd, {"format": "pt"}))
    with open(path("model_fp16.safetensors"), "wb") as f:
        f.write(safetensors_bytes(sd_fp16, {"format": "pt"}))
    arrays = {k: v.numpy() for k, v in sd.items()}
    with fixed_zip_clock():
        np.savez(path("model.npz"), **arrays)
        np.savez_compressed(path("model_compressed.npz"), **arrays)

    # hostile.pt must name os.system and must never be loaded: inspect its pickle opcodes only.
    with zipfile.ZipFile(os.path.join(HERE, "hostile.pt")) as z:
        listing = io.StringIO()
        pickletools.dis(z.read("hostile/data.pkl"), out=listing)
        assert "system" in listing.getvalue() and ("posix" in listing.getvalue() or "nt" in listing.getvalue())

    # --- reference predictions (float64 forward of the stored values)
    xs, ys = regression_prompts(4242, N_PROMPTS, N_POSITIONS)
    predictions = collections.OrderedDict()
    for step in STEPS:
        predictions[str(step)] = reference_predictions(sds[step], xs, ys)
    predictions["fp16"] = reference_predictions(sd_fp16, xs, ys)
    predictions["bf16"] = reference_predictions(sd_bf16, xs, ys)
    for a in predictions:
        for b in predictions:
            if a < b and a.isdigit() and b.isdigit():
                assert (predictions[a] - predictions[b]).abs().max() > 0.1, (a, b)
    assert 0.05 < float(predictions["300"].abs().mean()) < 10, "predictions should be O(1)"
    float32_gap = float((models[300](xs.float(), ys.float()).double() - predictions["300"]).abs().max())
    assert float32_gap < 1e-4, float32_gap

    # --- prompt file: 10 labelled points and a query (whose label the model cannot see: causal attention)
    pxs, pys = regression_prompts(99, 1, N_POSITIONS)
    query_only = pys.clone()
    query_only[0, -1] = 0.0
    prompt_prediction = float(reference_predictions(sd, pxs, query_only)[0, -1])
    query_only[0, -1] = 123.0
    assert float(reference_predictions(sd, pxs, query_only)[0, -1]) == prompt_prediction

    reference = collections.OrderedDict([
        ("n_dims", N_DIMS), ("n_embd", N_EMBD), ("n_layer", N_LAYER), ("n_head", N_HEAD),
        ("n_positions", N_POSITIONS),
        ("prompts", {"x": to_list(xs), "y": to_list(ys)}),
        ("predictions", collections.OrderedDict((k, to_list(v)) for k, v in predictions.items())),
        ("prompt_prediction", {"300": prompt_prediction}),
    ])
    with open(path("reference.json"), "w") as f:
        json.dump(reference, f, indent=1)
        f.write("\n")
    with open(path("prompt.json"), "w") as f:
        json.dump({"x": to_list(pxs[0]), "y": to_list(pys[0, :-1])}, f, indent=1)
        f.write("\n")
    with open(path("prompt.csv"), "w") as f:
        f.write(",".join([f"x_{j + 1}" for j in range(N_DIMS)] + ["y"]) + "\n")
        for i in range(N_POSITIONS):
            label = repr(float(pys[0, i])) if i < N_POSITIONS - 1 else ""
            f.write(",".join([repr(float(v)) for v in pxs[0, i]] + [label]) + "\n")

    total = 0
    print(f"wrote {len(written)} files in {HERE}:")
    for p in sorted(written):
        size = os.path.getsize(p)
        total += size
        print(f"  {os.path.relpath(p, HERE):28s} {size:9d} bytes")
    print(f"  total {total} bytes; predictions (prompt 0, last point): "
          + ", ".join(f"{k}={float(v[0, -1]):.6f}" for k, v in predictions.items())
          + f"; prompt.json query prediction {prompt_prediction:.6f}")


if __name__ == "__main__":
    main()
