"""Shared helpers of the Python tests: where the fixture runs are (written by make_runs.py) and an independent
safetensors reader (format: 8-byte little-endian header length, JSON header, raw little-endian data)."""

import json
import os
import struct
import sys
from collections import OrderedDict

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))  # the package straight from the tree

_DTYPES = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def fixture_dir():
    """OUT_DIR of make_runs.py, from the environment (set by ctest)."""
    d = os.environ.get("ICL_TEST_RUNS")
    if not d or not os.path.exists(os.path.join(d, "manifest.json")):
        raise RuntimeError("ICL_TEST_RUNS does not name a folder written by tests/python/make_runs.py (run the "
                           "tests with ctest, which runs make_runs.py first)")
    return d


def manifest():
    with open(os.path.join(fixture_dir(), "manifest.json")) as f:
        return json.load(f)


def cli_json(key):
    with open(manifest()["cli"][key]) as f:
        return json.load(f)


def icl_cli():
    return os.environ["ICL_CLI"]


def read_safetensors(path):
    """name -> array, in the file's header order."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n), object_pairs_hook=OrderedDict)
        data = f.read()
    out = OrderedDict()
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out
