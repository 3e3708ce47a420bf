#!/usr/bin/python3
"""Writes the fuzz seeds that need no workbench code into OUT_DIR/<harness>/ (deterministic):

    /usr/bin/python3 tests/fuzz/make_seeds.py OUT_DIR      (tests/fuzz/make_seeds.sh runs it)

npy and npz (NumPy: float32/float16/float64/int64/bool, Fortran order, 0-d, big-endian, savez_compressed), idx
(images and labels, plain and gzip), png (written chunk by chunk with zlib: grey 1/2/4/8/16 bits, RGB, grey+alpha,
RGBA, a palette with tRNS, Adam7 interlacing), pickle (the data.pkl of the small torch_zip seeds and of the fixtures
tests/data/foreign/one_key.pt and hostile.pt, plus hand-written protocol 2 streams). Needs python3-numpy.
Also the hostile inputs of issue 46 that byte mutations would take long to find, as regression inputs
(OUT_DIR/_regressions/<harness>/hostile_*; make_seeds.sh moves them to tests/fuzz/regressions): HDF5 attributes of the
wrong shape (from the experiment_file seed run, python3-h5py), JSON nested 100,000 deep (prompt, config, safetensors
metadata, a .pt's pickled config), 200 stride-0 views, 2,500 set() copies, a PNG claiming 65,535 x 65,535. security/hostile has the full classes.
"""

import gzip
import io
import json
import os
import struct
import sys
import zipfile
import zlib

import numpy as np

DEPTH = 100_000  # nesting of the deep-JSON regression inputs (200 KB; the hostile corpus uses 10^6)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FOREIGN = os.path.join(ROOT, "tests", "data", "foreign")


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def npy_bytes(array, fortran=False):
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(array) if fortran else array)
    return buf.getvalue()


def npz_bytes(arrays, compressed):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as z:
        for name, a in arrays.items():
            info = zipfile.ZipInfo(name + ".npy", date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
            z.writestr(info, npy_bytes(a))
    return buf.getvalue()


def idx_bytes(type_code, dims, payload):
    return bytes([0, 0, type_code, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png_bytes(width, height, bit_depth, color_type, rows, palette=None, trns=None, interlace=0):
    """rows: the raw scanlines (without filter bytes) of the image, or of each Adam7 pass when interlaced."""
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, interlace)
    raw = b"".join(b"\x00" + r for r in rows)
    out = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr)
    if palette is not None:
        out += png_chunk(b"PLTE", palette)
    if trns is not None:
        out += png_chunk(b"tRNS", trns)
    return out + png_chunk(b"IDAT", zlib.compress(raw, 9)) + png_chunk(b"IEND", b"")


def packed_rows(width, height, bits):
    """Rows of a grey image of `bits` per sample (1, 2, 4: packed MSB first; 8; 16 big-endian)."""
    rows = []
    for y in range(height):
        values = [(x * 7 + y * 3) % (1 << min(bits, 8)) for x in range(width)]
        if bits == 16:
            rows.append(b"".join(struct.pack(">H", v * 257) for v in values))
        elif bits == 8:
            rows.append(bytes(values))
        else:
            per = 8 // bits
            row = bytearray()
            for i in range(0, width, per):
                byte = 0
                for j in range(per):
                    v = values[i + j] if i + j < width else 0
                    byte |= v << (8 - bits * (j + 1))
                row.append(byte)
            rows.append(bytes(row))
    return rows


def adam7_rows(width, height, channels):
    """Scanlines of each non-empty Adam7 pass of an 8-bit image with `channels` samples per pixel."""
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    rows = []
    for x0, y0, dx, dy in passes:
        xs = list(range(x0, width, dx))
        for y in range(y0, height, dy):
            if xs:
                rows.append(bytes(((x + 2 * y + c) * 17) % 256 for x in xs for c in range(channels)))
    return rows


def pickle_of(pt_bytes):
    with zipfile.ZipFile(io.BytesIO(pt_bytes)) as z:
        name = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        return z.read(name)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_seeds.py OUT_DIR")
    out = sys.argv[1]

    def seed(harness, name, data):
        write(os.path.join(out, harness, name), data)

    a = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
    seed("npy", "f32_2x3.npy", npy_bytes(a))
    seed("npy", "f32_fortran.npy", npy_bytes(a, fortran=True))
    seed("npy", "f16.npy", npy_bytes(a.astype(np.float16)))
    seed("npy", "f64_be.npy", npy_bytes(a.astype(">f8")))
    seed("npy", "i64.npy", npy_bytes(np.arange(4, dtype=np.int64)))
    seed("npy", "bool.npy", npy_bytes(np.array([True, False, True])))
    seed("npy", "scalar.npy", npy_bytes(np.float32(2.5)))
    seed("npy", "u8_3d.npy", npy_bytes(np.arange(8, dtype=np.uint8).reshape(2, 2, 2)))
    arrays = {"blocks.0.attn.w_q": a, "head.bias": np.array([0.5, -0.5], dtype=np.float32)}
    seed("npz", "stored.npz", npz_bytes(arrays, False))
    seed("npz", "compressed.npz", npz_bytes(arrays, True))
    seed("npz", "mixed_dtypes.npz", npz_bytes({"a": a.astype(np.float64), "b": np.arange(3, dtype=np.int32)}, True))

    images = bytes(range(2 * 4 * 4))
    seed("idx", "images_u8.idx", idx_bytes(0x08, [2, 4, 4], images))
    seed("idx", "labels_u8.idx", idx_bytes(0x08, [2], b"\x03\x07"))
    seed("idx", "images_u8.idx.gz", gzip.compress(idx_bytes(0x08, [2, 4, 4], images), mtime=0))
    seed("idx", "labels_u8.idx.gz", gzip.compress(idx_bytes(0x08, [3], b"\x00\x01\x02"), mtime=0))
    seed("idx", "int16.idx", idx_bytes(0x0B, [2, 2], struct.pack(">4h", 1, -2, 3, -4)))
    seed("idx", "float.idx", idx_bytes(0x0D, [3], struct.pack(">3f", 0.5, 1.5, -2.0)))
    seed("idx", "empty_dims.idx", idx_bytes(0x08, [0, 4, 4], b""))

    w, h = 5, 3
    for bits in (1, 2, 4, 8, 16):
        seed("png", f"grey{bits}.png", png_bytes(w, h, bits, 0, packed_rows(w, h, bits)))
    rgb = [bytes(((x * 40 + c * 80 + y) % 256) for x in range(w) for c in range(3)) for y in range(h)]
    seed("png", "rgb8.png", png_bytes(w, h, 8, 2, rgb))
    seed("png", "grey_alpha8.png", png_bytes(w, h, 8, 4, [bytes((x * 50) % 256 for x in range(2 * w))] * h))
    rgba = [bytes(((x * 30 + c * 60 + y) % 256) for x in range(w) for c in range(4)) for y in range(h)]
    seed("png", "rgba8.png", png_bytes(w, h, 8, 6, rgba))
    palette = bytes([0, 0, 0, 255, 0, 0, 0, 255, 0, 255, 255, 255])
    seed("png", "palette2_trns.png",
         png_bytes(w, h, 2, 3, [bytes([0b00011011, 0b00100000])] * h, palette=palette, trns=b"\x00\xff"))
    seed("png", "grey8_adam7.png", png_bytes(9, 9, 8, 0, adam7_rows(9, 9, 1), interlace=1))
    seed("png", "rgb8_adam7.png", png_bytes(9, 9, 8, 2, adam7_rows(9, 9, 3), interlace=1))

    # Pickles: the small torch_zip seeds (written by fuzz_make_seeds into the same OUT_DIR), two fixtures, and
    # hand-written protocol 2 streams of the containers the unpickler accepts.
    for harness_dir, names in ((os.path.join(out, "torch_zip"), None), (FOREIGN, ("one_key.pt", "hostile.pt"))):
        if not os.path.isdir(harness_dir):
            continue
        for name in sorted(os.listdir(harness_dir)):
            if name.endswith(".pt") and (names is None or name in names):
                with open(os.path.join(harness_dir, name), "rb") as f:
                    seed("pickle", name[:-3] + ".pkl", pickle_of(f.read()))
    seed("pickle", "dict_list_tuple.pkl", b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01]q\x02(K\x01K\x02e"
         b"X\x01\x00\x00\x00bq\x03K\x01K\x02\x86q\x04X\x01\x00\x00\x00cq\x05G?\xf0\x00\x00\x00\x00\x00\x00u.")
    seed("pickle", "long1.pkl", b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.")

    # Prompt and safetensors/torch fixtures from tests/data/foreign that are small.
    for name, harness in (("prompt.json", "prompt"), ("prompt.csv", "prompt"), ("one_key.pt", "torch_zip"),
                          ("hostile.pt", "torch_zip"), ("torchscript.pt", "torch_zip")):
        with open(os.path.join(FOREIGN, name), "rb") as f:
            seed(harness, "foreign_" + name, f.read())
    seed("prompt", "d1_plain_numbers.json", b'{"x": [0.5, 1.5, 2.5], "y": [1, 3]}')
    seed("prompt", "gui_export.csv", b"# seed: 3\n# w: 1 -1\ntoken,x[1],x[2],y\n0,0.5,1,2\n1,1.5,-1,\n")
    # Finite values beyond the ±1e6 bound (refused: the float32 models would give NaN), in x, y and w.
    seed("prompt", "huge_x.json", b'{"x": [[1, 2], [3, 1e308]], "y": [1]}')
    seed("prompt", "huge_w.json", b'{"x": [[1], [2]], "y": [1], "w": [-1e7]}')
    seed("prompt", "huge_y.csv", b"x_1,y\n1,1\n2,-2e6\n3,\n")
    hostile_regressions(out)


def pickle_string(s):
    e = s.encode()
    return b"X" + struct.pack("<I", len(e)) + e


def torch_zip_bytes(pkl, storages):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in [("archive/data.pkl", pkl), ("archive/byteorder", b"little")] + \
                [(f"archive/data/{k}", v) for k, v in storages.items()] + [("archive/version", b"3\n")]:
            z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data)
    return buf.getvalue()


def hostile_regressions(out):
    """The inputs of issue 46's classes that reach a reader directly, small enough to replay in CI."""
    import h5py

    def reg(harness, name, data):
        write(os.path.join(out, "_regressions", harness, "hostile_" + name), data)

    deep = "[" * DEPTH + "]" * DEPTH
    reg("prompt", "deep_x.json", ('{"x": ' + deep + ', "y": [0]}').encode())
    reg("config_json", "deep_model.json", ('{"model": ' + deep + "}").encode())
    h = json.dumps({"__metadata__": {"icl_workbench_config": deep}, "w": {"dtype": "F32", "shape": [1],
                                                                          "data_offsets": [0, 4]}}).encode()
    reg("safetensors", "deep_metadata.safetensors", struct.pack("<Q", len(h)) + h + b"\0\0\x80\x3f")

    # Pickles (opcode by opcode): a config string nested deep, 200 stride-0 views of one float, 2,500 set() copies.
    rebuild = b"ctorch._utils\n_rebuild_tensor_v2\nq\x00"
    od = b"ccollections\nOrderedDict\nq\x01)R"
    views = bytearray(b"\x80\x02" + od + b"(")
    for i in range(200):
        views += pickle_string(f"v{i}") + (rebuild if i == 0 else b"h\x00") + b"((" + pickle_string("storage")
        views += (b"ctorch\nFloatStorage\nq\x02" if i == 0 else b"h\x02") + pickle_string("0")
        views += pickle_string("cpu") + b"K\x01tQK\x00(M\x78\x0bM\x78\x0bt(K\x00K\x00t\x89h\x01)RtR"
    views += b"u."
    reg("pickle", "200_stride0_views.pkl", bytes(views))
    reg("torch_zip", "200_stride0_views.pt", torch_zip_bytes(bytes(views), {"0": b"\0\0\x80\x3f"}))
    sets = bytearray(b"\x80\x02}]q\x00(" + b"N" * 2000 + b"e0cbuiltins\nset\nq\x010(")
    for i in range(2500):
        sets += pickle_string(f"s{i}") + b"h\x01h\x00\x85R"
    sets += b"u."
    reg("pickle", "2500_set_copies.pkl", bytes(sets))
    deep_config = b"\x80\x02}(" + pickle_string("state_dict") + od + pickle_string("icl_workbench_config")
    deep_config += pickle_string(deep) + b"u."
    reg("torch_zip", "deep_pickled_config.pt", torch_zip_bytes(deep_config, {}))

    # A 206-byte PNG whose header claims 65,535 x 65,535 grey pixels (4.3 GB before the first row is read).
    rows = b"".join(b"\x00" + bytes(65535) for _ in range(2))
    reg("png", "65535x65535_in_206_bytes.png", b"\x89PNG\r\n\x1a\n" +
        png_chunk(b"IHDR", struct.pack(">IIBBBBB", 65535, 65535, 8, 0, 0, 0, 0)) +
        png_chunk(b"IDAT", zlib.compress(rows, 9)) + png_chunk(b"IEND", b""))

    # HDF5 attributes of the wrong shape, on the experiment_file seed run written by fuzz_make_seeds.
    run = os.path.join(out, "experiment_file", "run_task_analysis.h5")
    if not os.path.exists(run):
        return
    aaaa = struct.unpack("<d", b"A" * 8)[0]
    for name, where, attr, value in [
        ("format_version_64_doubles.h5", "/", "format_version", np.full(64, aaaa)),
        ("format_version_8000_doubles.h5", "/", "format_version", np.full(8000, aaaa)),
        ("format_4000_fixed_strings.h5", "/", "format", np.array([b"A" * 13] * 4000, dtype="S13")),
        ("format_2000_vlen_strings.h5", "/", "format", np.array(["A" * 64] * 2000, dtype=h5py.string_dtype())),
        ("train_loss_8000_doubles.h5", "checkpoint", "train_loss", np.full(8000, aaaa)),
        ("optimizer_scalar_8000_doubles.h5", "optimizer", "step", np.full(8000, aaaa)),
        ("analysis_step_8000_ints.h5", "analysis", "checkpoint_step", np.full(8000, 0x4141414141414141, np.int64)),
    ]:
        path = os.path.join(out, "_regressions", "experiment_file", "hostile_" + name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(run, "rb") as f:
            write(path, f.read())
        with h5py.File(path, "r+") as f:
            if where == "/":
                obj = f
            elif where == "checkpoint":
                obj = f["checkpoints"][sorted(f["checkpoints"])[-1]]
            elif where == "optimizer":
                opt = f["checkpoints"][sorted(f["checkpoints"])[-1]]["optimizer"]
                obj = opt[sorted(opt)[0]]
            else:
                kind = sorted(f["analysis"])[0]
                obj = f["analysis"][kind][sorted(f["analysis"][kind])[0]]
            del obj.attrs[attr]
            obj.attrs[attr] = value


if __name__ == "__main__":
    main()
