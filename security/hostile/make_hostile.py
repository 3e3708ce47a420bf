#!/usr/bin/python3
"""Writes the hostile-input corpus of issue 46 (docs/security.md, "The hostile corpus") into OUT_DIR:

    /usr/bin/python3 security/hostile/make_hostile.py OUT_DIR --run RUN.h5 --pt RUN.pt --safetensors RUN.safetensors \
        --garg-run tests/data/foreign/garg_run

RUN.h5 is a valid run (icl-cli train --preset vonoswald-lsa-1layer --steps 20, then analyze … gd-alignment so that it
holds an analysis); RUN.pt and RUN.safetensors its weights (icl-cli export-weights). run_hostile.py makes them and
calls this script. Every case is a folder OUT_DIR/<id>/ with the hostile file(s) and the valid files it attacks; the
manifest OUT_DIR/cases.json lists for each case its class, what it is, and the icl-cli commands to run in the folder
({cli} is the executable; paths are relative to the folder; "outputs" are the files a command is asked to write,
everything else in the folder must be byte-identical afterwards). `refuse`: every command must fail with one line
(not for journals, where reading the run as it was before the interrupted commit is as good; not for a damaged
checkpoint or analysis, which a command that does not use it may skip; not for escapes, where what matters is that
names reach the terminal escaped). `stderr_excludes`: strings the command's stderr must not contain.

Needs Debian's python3-h5py and python3-numpy; never LibTorch (pickles are written opcode by opcode).
"""

import argparse
import hashlib
import json
import os
import shutil
import struct
import sys
import zipfile
import zlib

import h5py
import numpy as np

DEPTH = 1_000_000  # JSON and YAML nesting depth of the deep cases
ESCAPE_NAME = "blocks.0.attn.w_q\x1b[2J\x1b[H\x1b[1;32mverify: all 17 objects OK\x1b[0m\nfake: line\x07"


# ----------------------------------------------------------------------------------------------------------------
# The commands run on each kind of case.

def run_read_commands(run):
    """Every command that reads a run file; only eval stores in it (its ICL curve), the others are read-only."""
    return [
        {"name": "info", "argv": ["{cli}", "info", run]},
        {"name": "verify", "argv": ["{cli}", "verify", run]},
        {"name": "eval", "argv": ["{cli}", "eval", run, "--prompts", "64"], "stores": [run]},
        {"name": "analyze", "argv": ["{cli}", "analyze", run, "attention"]},
        {"name": "export", "argv": ["{cli}", "export", run, "--plot", "loss", "--format", "csv", "--out", "out/loss.csv"],
         "outputs": ["out/loss.csv"]},
        {"name": "report", "argv": ["{cli}", "report", run, "--out", "out/report"], "outputs": ["out/report"]},
        {"name": "export-weights", "argv": ["{cli}", "export-weights", run, "--out", "out/w.safetensors"],
         "outputs": ["out/w.safetensors"]},
    ]


def import_commands(source, extra=()):
    return [
        {"name": "import --dry-run", "argv": ["{cli}", "import", source, "--dry-run", *extra]},
        {"name": "import --out", "argv": ["{cli}", "import", source, "--out", "out/imported.h5", *extra],
         "outputs": ["out/imported.h5"]},
    ]


# ----------------------------------------------------------------------------------------------------------------
# File builders.

def write(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def deep_json(depth=DEPTH):
    return "[" * depth + "]" * depth


def safetensors_bytes(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header, ensure_ascii=False).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def read_safetensors(path):
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n]), b[8 + n:]


class Pickle:
    """A protocol 2 pickle written opcode by opcode (the subset torch.save uses, plus sets)."""

    def __init__(self):
        self.b = bytearray(b"\x80\x02")
        self.memo = {}  # (module, name) of a global -> its memo slot
        self.slots = 0

    def op(self, *parts):
        for p in parts:
            self.b += p if isinstance(p, (bytes, bytearray)) else bytes([p])
        return self

    def global_(self, module, name):
        key = (module, name)
        if key in self.memo:
            return self.get(self.memo[key])
        self.op(b"c", f"{module}\n{name}\n".encode())
        self.memo[key] = self.put()
        return self

    def put(self):
        i = self.slots
        self.slots += 1
        self.op(b"q", i) if i < 256 else self.op(b"r", struct.pack("<I", i))
        return i

    def get(self, i):
        return self.op(b"h", i) if i < 256 else self.op(b"j", struct.pack("<I", i))

    def string(self, s):
        e = s.encode("utf-8", "surrogatepass")
        return self.op(b"X", struct.pack("<I", len(e)), e)

    def int_(self, v):
        if 0 <= v < 256:
            return self.op(b"K", v)
        if 0 <= v < 65536:
            return self.op(b"M", struct.pack("<H", v))
        if -2**31 <= v < 2**31:
            return self.op(b"J", struct.pack("<i", v))
        n = (v.bit_length() + 8) // 8
        return self.op(b"\x8a", n, v.to_bytes(n, "little", signed=True))

    def int_tuple(self, values):
        self.op(b"(")
        for v in values:
            self.int_(v)
        return self.op(b"t")

    def ordered_dict(self):
        self.global_("collections", "OrderedDict")
        return self.op(b")R")

    def tensor(self, key, numel, offset, size, stride, dtype_class="FloatStorage"):
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.op(b"((")
        self.string("storage")
        self.global_("torch", dtype_class)
        self.string(key).string("cpu").int_(numel)
        self.op(b"tQ")  # the persistent id tuple, BINPERSID
        self.int_(offset).int_tuple(size).int_tuple(stride)
        self.op(b"\x89")  # requires_grad False
        self.ordered_dict()
        return self.op(b"tR")

    def stop(self):
        return bytes(self.b + b".")


def torch_zip(pickle_bytes, storages, compress_storages=False, folder="archive"):
    """A torch.save-style zip: FOLDER/data.pkl, FOLDER/byteorder, FOLDER/data/<key>, FOLDER/version.
    storages: {key: bytes or a callable(writer) that streams the bytes}."""
    import io
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        z.writestr(zipfile.ZipInfo(f"{folder}/data.pkl", (1980, 1, 1, 0, 0, 0)), pickle_bytes)
        z.writestr(zipfile.ZipInfo(f"{folder}/byteorder", (1980, 1, 1, 0, 0, 0)), b"little")
        for key, data in storages.items():
            info = zipfile.ZipInfo(f"{folder}/data/{key}", (1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if compress_storages else zipfile.ZIP_STORED
            if callable(data):
                with z.open(info, "w", force_zip64=True) as f:
                    data(f)
            else:
                z.writestr(info, data)
        z.writestr(zipfile.ZipInfo(f"{folder}/version", (1980, 1, 1, 0, 0, 0)), b"3\n")
    return buf.getvalue()


def replace_root_attribute(path, name, value):
    with h5py.File(path, "r+") as f:
        del f.attrs[name]
        f.attrs[name] = value


# ----------------------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--run", required=True)
    ap.add_argument("--pt", required=True)
    ap.add_argument("--safetensors", required=True)
    ap.add_argument("--garg-run", required=True)
    args = ap.parse_args()
    out = args.out
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cases = []

    def case(cid, klass, what, commands, refuse=True):
        cases.append({"id": cid, "class": klass, "what": what, "commands": commands, "refuse": refuse})
        return os.path.join(out, cid)

    def copy_run(cid, name="RUN.h5"):
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        shutil.copyfile(args.run, os.path.join(d, name))
        return os.path.join(d, name)

    # --- 1. HDF5 attributes of the wrong shape (read before any checksum) ---------------------------------------
    aaaa = struct.unpack("<d", b"A" * 8)[0]  # 0x4141414141414141: a pointer the crash would free
    for cid, name, value, what in [
        ("h5_format_version_64_doubles", "format_version", np.full(64, aaaa), "root format_version: 64 doubles"),
        ("h5_format_version_8000_doubles", "format_version", np.full(8000, aaaa), "root format_version: 8,000 doubles"),
        ("h5_format_4000_fixed_strings", "format", np.array([b"A" * 13] * 4000, dtype="S13"),
         "root format: 4,000 fixed-length strings"),
        ("h5_format_2000_vlen_strings", "format", np.array(["A" * 64] * 2000, dtype=h5py.string_dtype()),
         "root format: 2,000 variable-length strings"),
        ("h5_app_version_2000_vlen_strings", "app_version", np.array(["B" * 64] * 2000, dtype=h5py.string_dtype()),
         "root app_version: 2,000 variable-length strings"),
    ]:
        run = copy_run(cid)
        replace_root_attribute(run, name, value)
        case(cid, "hdf5-attribute", what, run_read_commands("RUN.h5"))

    run = copy_run("h5_train_loss_8000_doubles")
    with h5py.File(run, "r+") as f:
        g = f["checkpoints"][sorted(f["checkpoints"])[-1]]
        del g.attrs["train_loss"]
        g.attrs["train_loss"] = np.full(8000, aaaa)
    case("h5_train_loss_8000_doubles", "hdf5-attribute", "last checkpoint's train_loss: 8,000 doubles",
         run_read_commands("RUN.h5"), refuse=False)

    run = copy_run("h5_optimizer_scalar_8000_doubles")
    with h5py.File(run, "r+") as f:
        opt = f["checkpoints"][sorted(f["checkpoints"])[-1]]["optimizer"]
        g = opt[sorted(opt)[0]]
        del g.attrs["step"]
        g.attrs["step"] = np.full(8000, aaaa)
    case("h5_optimizer_scalar_8000_doubles", "hdf5-attribute", "an optimizer scalar (step): 8,000 doubles",
         run_read_commands("RUN.h5"), refuse=False)

    run = copy_run("h5_analysis_step_8000_ints")
    with h5py.File(run, "r+") as f:
        found = False
        for kind in f.get("analysis", {}):
            for rid in f["analysis"][kind]:
                a = f["analysis"][kind][rid]
                del a.attrs["checkpoint_step"]
                a.attrs["checkpoint_step"] = np.full(8000, 0x4141414141414141, dtype=np.int64)
                found = True
                break
            break
        if not found:
            sys.exit("make_hostile: --run holds no analysis (run icl-cli analyze RUN gd-alignment first)")
    case("h5_analysis_step_8000_ints", "hdf5-attribute", "a stored analysis's checkpoint_step: 8,000 int64",
         run_read_commands("RUN.h5"), refuse=False)

    run = copy_run("h5_escape_in_names")
    with h5py.File(run, "r+") as f:
        params = f["checkpoints"][sorted(f["checkpoints"])[-1]]["params"]
        params.move("blocks.0.attn.w_q", ESCAPE_NAME)
        series = sorted(k for k in f["metrics"] if isinstance(f["metrics"][k], h5py.Dataset))
        if series:
            f["metrics"].move(series[0], "eval_loss\x1b]0;owned\x07\r\x1b[Kall good")
    case("h5_escape_in_names", "escapes", "a parameter and a metric named with terminal escapes and newlines",
         run_read_commands("RUN.h5"), refuse=False)

    # --- 2. Nesting a million deep ---------------------------------------------------------------------------------
    d = os.path.join(out, "json_deep_prompt")
    copy_run("json_deep_prompt")
    write(os.path.join(d, "prompt.json"), ('{"x": ' + deep_json() + ', "y": [0]}').encode())
    case("json_deep_prompt", "nesting", "prompt file: x nested 10^6 deep", [
        {"name": "analyze --prompt", "argv": ["{cli}", "analyze", "RUN.h5", "attention", "--prompt", "prompt.json"]},
        {"name": "export --prompt", "argv": ["{cli}", "export", "RUN.h5", "--plot", "attention", "--prompt",
                                             "prompt.json", "--format", "csv", "--out", "out/a.csv"],
         "outputs": ["out/a.csv"]},
    ])

    d = os.path.join(out, "json_deep_config")
    os.makedirs(d)
    shutil.copyfile(args.safetensors, os.path.join(d, "model.safetensors"))
    write(os.path.join(d, "config.json"), ('{"model": ' + deep_json() + "}").encode())
    case("json_deep_config", "nesting", "import --config: JSON nested 10^6 deep",
         import_commands("model.safetensors", ["--config", "config.json"]))

    d = os.path.join(out, "yaml_deep_config")
    shutil.copytree(args.garg_run, d)
    write(os.path.join(d, "config.yaml"), ("model: " + "[" * DEPTH + "]" * DEPTH + "\n").encode())
    case("yaml_deep_config", "nesting", "Garg run folder whose config.yaml is nested 10^6 deep", import_commands("."))

    header, data = read_safetensors(args.safetensors)
    meta = dict(header.pop("__metadata__", {}))
    meta["icl_workbench_config"] = deep_json()
    tensors = [(k, v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()]
    d = os.path.join(out, "safetensors_deep_metadata")
    write(os.path.join(d, "model.safetensors"), safetensors_bytes(tensors, meta))
    case("safetensors_deep_metadata", "nesting", "safetensors whose __metadata__ config is JSON nested 10^6 deep",
         import_commands("model.safetensors"))

    with zipfile.ZipFile(args.pt) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    pkl_name = next(n for n in entries if n.endswith("/data.pkl"))
    config = json.loads(read_safetensors(args.safetensors)[0]["__metadata__"]["icl_workbench_config"])
    old = None
    for candidate in (json.dumps(config, separators=(",", ":")),):
        e = candidate.encode()
        if b"X" + struct.pack("<I", len(e)) + e in entries[pkl_name]:
            old = e
    if old is None:  # find the longest BINUNICODE that parses as a JSON object
        p, best = entries[pkl_name], None
        i = p.find(b"X")
        while i >= 0:
            if i + 5 <= len(p):
                n = struct.unpack("<I", p[i + 1:i + 5])[0]
                s = p[i + 5:i + 5 + n]
                if len(s) == n and s.startswith(b"{") and (best is None or n > len(best)):
                    best = s
            i = p.find(b"X", i + 1)
        old = best
    deep = deep_json().encode()
    entries[pkl_name] = entries[pkl_name].replace(b"X" + struct.pack("<I", len(old)) + old,
                                                  b"X" + struct.pack("<I", len(deep)) + deep, 1)
    d = os.path.join(out, "pt_deep_pickled_config")
    os.makedirs(d)
    with zipfile.ZipFile(os.path.join(d, "model.pt"), "w", zipfile.ZIP_STORED) as z:
        for n, b in entries.items():
            z.writestr(zipfile.ZipInfo(n, (1980, 1, 1, 0, 0, 0)), b)
    case("pt_deep_pickled_config", "nesting", ".pt whose pickled icl_workbench_config is JSON nested 10^6 deep",
         import_commands("model.pt"))

    # --- 3. Forged journals beside a valid run ---------------------------------------------------------------------
    run_size = os.path.getsize(args.run)
    with open(args.run, "rb") as f:
        first_page = f.read(4096)

    def journal(old_size, pages):
        body = b"ICLJRNL1" + struct.pack("<QQQ", 4096, old_size, len(pages))
        for index, page in pages:
            body += struct.pack("<Q", index) + page.ljust(4096, b"\0")[:4096]
        return body + hashlib.sha256(body).hexdigest().encode()

    for cid, j, what in [
        ("journal_old_size_zero", journal(0, []), "RUN.h5.journal with old size 0 (a roll-back truncates the run)"),
        ("journal_garbage_superblock", journal(run_size, [(0, b"\x41" * 4096)]),
         "RUN.h5.journal whose saved page 0 is garbage (written over the superblock)"),
        ("journal_index_wraps", journal(64 * 2**30 + 4096, [(2**52 + 2**24, first_page)]),
         "RUN.h5.journal with a page index whose index * 4096 wraps to 64 GiB"),
        ("journal_incomplete", journal(run_size, [(0, first_page)])[:-1],
         "an incomplete RUN.h5.journal (a read-only command must not delete it either)"),
    ]:
        copy_run(cid)
        write(os.path.join(out, cid, "RUN.h5.journal"), j)
        case(cid, "journal", what, run_read_commands("RUN.h5"), refuse=False)

    copy_run("journal_symlink_dev_zero")
    os.symlink("/dev/zero", os.path.join(out, "journal_symlink_dev_zero", "RUN.h5.journal"))
    case("journal_symlink_dev_zero", "journal", "RUN.h5.journal is a symlink to /dev/zero",
         run_read_commands("RUN.h5")[:3], refuse=False)
    copy_run("journal_fifo")
    os.mkfifo(os.path.join(out, "journal_fifo", "RUN.h5.journal"))
    case("journal_fifo", "journal", "RUN.h5.journal is a FIFO (opening it blocks)", run_read_commands("RUN.h5")[:2],
         refuse=False)

    # --- 4. Small files that ask for gigabytes -----------------------------------------------------------------------
    p = Pickle()
    p.ordered_dict().op(b"(")
    for i in range(200):
        p.string(f"v{i}").tensor("0", 1, 0, [2936, 2936], [0, 0])
    pkl = p.op(b"u").stop()
    d = os.path.join(out, "pt_200_stride0_views")
    write(os.path.join(d, "model.pt"), torch_zip(pkl, {"0": b"\0\0\x80\x3f"}))
    case("pt_200_stride0_views", "memory", f"a {len(pkl) // 1024} KB pickle of 200 stride-0 views of one float "
         "(6.9 GB materialised)", import_commands("model.pt"))

    # A dict whose values are 2,500 set() calls on one memoised list of 2,000 items, and a chain of 2,500 sets each
    # holding the previous one twice (a walk that does not share sub-objects visits 2^2500 nodes).
    p = Pickle()
    p.op(b"}]")
    lst = p.put()
    p.op(b"(").op(b"N" * 2000).op(b"e0")  # APPENDS, then POP the list (it stays in the memo)
    p.global_("builtins", "set").op(b"0")
    setfn = p.memo[("builtins", "set")]
    p.op(b"(")
    for i in range(2500):
        p.string(f"s{i}").get(setfn).get(lst).op(b"\x85R")  # set((lst,))
    flat = p.op(b"u").stop()
    p = Pickle()
    p.op(b"}").string("chain").op(b"\x8f")  # EMPTY_SET
    for _ in range(2500):
        prev = p.put()
        p.op(b"0")  # POP the previous set (it stays in the memo)
        p.global_("builtins", "set").op(b"(").get(prev).get(prev).op(b"l\x85R")  # set(([prev, prev],))
    nested = p.op(b"s").stop()
    for cid, pkl, what in [("pt_2500_set_copies", flat, "2,500 set() of one 2,000-item list"),
                           ("pt_2500_nested_sets", nested, "a chain of 2,500 sets, each holding the previous twice")]:
        d = os.path.join(out, cid)
        write(os.path.join(d, "model.pt"), torch_zip(pkl, {}))
        case(cid, "memory", f"{what} ({len(pkl) // 1024} KB pickle)", import_commands("model.pt"))

    # A 1 GiB storage deflated to ~1 MB, in a .pt and an .npz.
    zeros = bytes(1 << 24)

    def gib_of_zeros(f):
        for _ in range(64):
            f.write(zeros)

    p = Pickle()
    p.ordered_dict().op(b"(").string("_read_in.weight").tensor("0", 1 << 28, 0, [1 << 14, 1 << 14], [1 << 14, 1])
    d = os.path.join(out, "pt_zip_bomb")
    write(os.path.join(d, "model.pt"), torch_zip(p.op(b"u").stop(), {"0": gib_of_zeros}, compress_storages=True))
    case("pt_zip_bomb", "memory", f"a {os.path.getsize(os.path.join(d, 'model.pt')) // 1024} KB .pt whose storage "
         "entry deflates to 1 GiB", import_commands("model.pt"))

    d = os.path.join(out, "npz_zip_bomb")
    os.makedirs(d)
    with zipfile.ZipFile(os.path.join(d, "model.npz"), "w", zipfile.ZIP_DEFLATED, allowZip64=True) as z:
        info = zipfile.ZipInfo("_read_in.weight.npy", (1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (16384, 16384), }"
            hdr += " " * (-(len(hdr) + 11) % 64) + "\n"
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
            gib_of_zeros(f)
    case("npz_zip_bomb", "memory", f"a {os.path.getsize(os.path.join(d, 'model.npz')) // 1024} KB .npz whose array "
         "deflates to 1 GiB", import_commands("model.npz"))

    f32 = lambda n: np.zeros(n, dtype="<f4").tobytes()  # noqa: E731
    d = os.path.join(out, "safetensors_layer_100000000000")
    write(os.path.join(d, "model.safetensors"), safetensors_bytes([
        ("_read_in.weight", "F32", [32, 5], f32(160)), ("_read_in.bias", "F32", [32], f32(32)),
        ("_backbone.wpe.weight", "F32", [22, 32], f32(22 * 32)),
        ("_backbone.h.100000000000.ln_1.weight", "F32", [32], f32(32))]))
    case("safetensors_layer_100000000000", "memory", "a tensor named _backbone.h.100000000000.ln_1.weight",
         import_commands("model.safetensors"))

    d = os.path.join(out, "safetensors_d_model_65536")
    # The workbench's gpt2 layout: d_model from read_in.weight, the positions from pos_embed, the heads from W_Q.
    tensors = [("read_in.weight", "F32", [65536, 5], f32(65536 * 5)), ("pos_embed", "F32", [4, 65536], f32(4 * 65536)),
               ("blocks.0.attn.W_Q", "F32", [1, 65536, 1], f32(65536))]
    write(os.path.join(d, "model.safetensors"), safetensors_bytes(tensors))
    case("safetensors_d_model_65536", "memory", f"{sum(len(t[3]) for t in tensors) / 1e6:.1f} MB of tensors implying "
         "d_model 65,536 (17 GB for each D x D weight)",
         import_commands("model.safetensors", ["--set", "task.kind=linear_regression"]))

    # --- 5. Raw errors and terminal injection -------------------------------------------------------------------
    d = os.path.join(out, "folder_model_99999999999999999999")
    shutil.copytree(args.garg_run, d)
    for name in os.listdir(d):
        if name.startswith("model_") and name.endswith(".pt"):
            os.rename(os.path.join(d, name), os.path.join(d, "model_99999999999999999999.pt"))
            break
    case("folder_model_99999999999999999999", "raw-error", "a Garg run folder with model_99999999999999999999.pt",
         import_commands("."))

    for cid, old_line, new_line, what in [
        ("yaml_integer_2_pow_64_minus_2", "n_embd: 32", "n_embd: 18446744073709551614", "n_embd 2^64 - 2"),
        ("yaml_integer_10_pow_23", "n_layer: 2", "n_layer: 99999999999999999999999", "n_layer 10^23")]:
        d = os.path.join(out, cid)
        shutil.copytree(args.garg_run, d)
        with open(os.path.join(d, "config.yaml")) as f:
            text = f.read()
        write(os.path.join(d, "config.yaml"), text.replace(old_line, new_line).encode())
        commands = import_commands(".")
        for c in commands:
            c["stderr_excludes"] = [" -2", "=-2", "(-2"]  # the value wrapped to int64, as the issue saw it
        case(cid, "raw-error", f"config.yaml with {what}", commands)

    d = os.path.join(out, "safetensors_escape_names")
    write(os.path.join(d, "model.safetensors"), safetensors_bytes([
        (ESCAPE_NAME, "F32", [2], f32(2)), ("\x1b[2K\rall good\nOK: imported", "F32", [1], f32(1))],
        {"format": "pt", "note": "\x1b]0;title\x07"}))
    case("safetensors_escape_names", "escapes", "tensor names with escape sequences and newlines",
         import_commands("model.safetensors"), refuse=False)

    d = os.path.join(out, "config_escape_key")
    os.makedirs(d)
    shutil.copyfile(args.safetensors, os.path.join(d, "model.safetensors"))
    write(os.path.join(d, "config.json"),
          json.dumps({"model": {"\x1b[2J\x1b[32mall good\x1b[0m\n": 1}}, ensure_ascii=False).encode())
    case("config_escape_key", "escapes", "import --config: a JSON key with escape sequences",
         import_commands("model.safetensors", ["--config", "config.json"]), refuse=False)

    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)
    print(f"make_hostile: {len(cases)} cases, {sum(len(c['commands']) for c in cases)} commands in {out}")


if __name__ == "__main__":
    main()
