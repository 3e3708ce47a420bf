"""docs/file-format.md is complete and exact: every group, dataset and attribute in the files that icl-cli writes
(tests/python/make_runs.py: every model and task kind, every stored analysis, an import, an activation capture of
its own) matches a documented row with the same kind, dtype and rank, and every documented row is written in at
least one of them.

The doc's tables list objects by row: | `PATH`[, `PATH` ...] | kind | dtype | shape | ... | where PATH is a path
inside an experiment file ("/checkpoints/<step>/params/<param>"), an attribute ("/checkpoints/<step>@train_loss")
or a path inside a separate capture file ("ACTS.h5:/<activation>"). Placeholders: <step> (9 digits), <id>
(4 digits), one letter (<l>, <k>, <i>, ...: an integer); <param>, <activation>, <kind> stand for any name of the
doc's tables of parameter names, activation names and analysis kinds. A shape with "…" leaves the rank open.
"""

import os
import re
import unittest

import h5py
import numpy as np

from fixture import ROOT, manifest

DOC = os.path.join(ROOT, "docs", "file-format.md")
KINDS = ("group", "dataset", "attribute")
INTEGER = r"(?:0|[1-9][0-9]*)"
FIXED = {"<step>": r"[0-9]{9}", "<id>": r"[0-9]{4}"}


def table_rows(text, heading):
    """Rows (lists of cells) whose first cell is backticked, of the tables in the sections whose heading starts
    with `heading` (a section runs to the next heading)."""
    rows, on = [], False
    for line in text.splitlines():
        if line.startswith("#"):
            on = line.lstrip("#").strip().startswith(heading)
            continue
        if on and line.startswith("|") and not re.match(r"^\|\s*-", line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0].startswith("`"):
                rows.append(cells)
    return rows


def to_regex(pattern, names):
    out, pos = "", 0
    for m in re.finditer(r"<[a-z_]+>", pattern):
        out += re.escape(pattern[pos:m.start()])
        token = m.group(0)
        if token in FIXED:
            out += FIXED[token]
        elif len(token) == 3:  # a one-letter placeholder: <l>, <k>, <g>, <b>, <i>
            out += INTEGER
        elif token in names:
            out += "(?:" + "|".join(names[token]) + ")"
        else:
            raise AssertionError(f"docs/file-format.md: unknown placeholder {token} in `{pattern}`")
        pos = m.end()
    return out + re.escape(pattern[pos:])


def name_patterns(text, heading):
    """Backticked names in the first column of a section's tables, with their regexes."""
    return [(name, to_regex(name, {})) for cells in table_rows(text, heading)
            for name in re.findall(r"`([^`]+)`", cells[0])]


def documented_objects(text):
    names = {
        "<param>": [r for _, r in name_patterns(text, "Parameter names")],
        "<activation>": [r for _, r in name_patterns(text, "Activation names")],
        "<kind>": [r for _, r in name_patterns(text, "Analysis kinds")],
    }
    for key, value in names.items():
        assert value, f"docs/file-format.md: no table of {key} names"
    rows = []
    for cells in table_rows(text, ""):
        paths = re.findall(r"`([^`]+)`", cells[0])
        if not (paths[0].startswith("/") or paths[0].startswith("ACTS.h5:/")):
            continue  # a name table (parameters, activations, kinds), not a path
        assert len(cells) >= 4, f"docs/file-format.md: row of `{paths[0]}` needs kind, dtype and shape"
        kind, dtype, shape = cells[1], cells[2].strip("`"), cells[3]
        assert kind in KINDS, f"docs/file-format.md: `{paths[0]}`: kind must be one of {KINDS}, got {kind!r}"
        if kind == "group":
            rank = None
        elif "…" in shape:
            rank = "any"  # the rank depends on the object (a parameter, an activation)
        else:
            rank = 0 if shape == "scalar" else len(shape.strip("[]").split(","))
        for path in paths:
            rows.append({"path": path, "regex": re.compile(to_regex(path, names) + r"\Z"), "kind": kind,
                         "dtype": dtype if kind != "group" else "—", "rank": rank})
    return rows


def same(row, kind, dtype, rank):
    """An observed object (kind, dtype, rank) fits a documented row."""
    return row["kind"] == kind and row["dtype"] == dtype and (row["rank"] == "any" or row["rank"] == rank)


def dtype_name(dt):
    if h5py.check_string_dtype(dt) is not None:
        return "string"
    return np.dtype(dt).name


def observed_objects(path, prefix=""):
    """(path, kind, dtype, rank) of every group, dataset and attribute of an HDF5 file; root attributes as "/@name"."""
    out = []

    def attrs(obj, where):
        for name in obj.attrs:
            a = obj.attrs.get_id(name)
            out.append((f"{where}@{name}", "attribute", dtype_name(a.dtype), len(a.shape)))

    with h5py.File(path, "r") as f:
        attrs(f, prefix + "/")

        def visit(name, obj):
            where = prefix + "/" + name
            if isinstance(obj, h5py.Group):
                out.append((where, "group", "—", None))
            else:
                out.append((where, "dataset", dtype_name(obj.dtype), obj.ndim))
            attrs(obj, where)

        f.visititems(visit)
    return out


class FileFormatDoc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOC, encoding="utf-8") as f:
            cls.text = f.read()
        cls.rows = documented_objects(cls.text)
        m = manifest()
        cls.observed = []
        for name, path in list(m["runs"].items()) + [("gpt2_pasted", m["other_files"]["gpt2_pasted"])]:
            cls.observed += [(o, name) for o in observed_objects(path)]
        cls.observed += [(o, "lsa_capture") for o in observed_objects(m["other_files"]["lsa_capture"], "ACTS.h5:")]

    def test_every_written_object_is_documented(self):
        undocumented = set()
        for (path, kind, dtype, rank), run in self.observed:
            matches = [r for r in self.rows if r["regex"].match(path)]
            if not any(same(r, kind, dtype, rank) for r in matches):
                found = "; ".join(f"`{r['path']}` {r['kind']} {r['dtype']} rank {r['rank']}" for r in matches)
                undocumented.add(f"{path} ({kind}, {dtype}, rank {rank}; in {run}.h5)"
                                 + (f" — documented differently: {found}" if found else ""))
        self.assertFalse(undocumented,
                         "written but not in docs/file-format.md:\n  " + "\n  ".join(sorted(undocumented)))

    def test_every_documented_object_is_written(self):
        never = [f"`{r['path']}` ({r['kind']}, {r['dtype']})" for r in self.rows
                 if not any(r["regex"].match(p) and same(r, k, d, n) for (p, k, d, n), _ in self.observed)]
        self.assertFalse(never, "documented but written by none of the fixture runs:\n  " + "\n  ".join(never))

    def test_every_documented_name_is_written(self):
        """The parameter names, activation names and analysis kinds of the doc's name tables all occur."""
        paths = [p for (p, _, _, _), _ in self.observed]
        where = {"Parameter names": r"/params/",
                 "Activation names": r"(?:/analysis/activations/[0-9]{4}/|ACTS\.h5:/)",
                 "Analysis kinds": r"^/analysis/"}
        for heading, prefix in where.items():
            names = name_patterns(self.text, heading)
            self.assertTrue(names, heading)
            for name, regex in names:
                with self.subTest(name=name):
                    end = r"(?:/|\Z)" if heading == "Analysis kinds" else r"\Z"
                    pattern = re.compile(prefix + regex + end)
                    self.assertTrue(any(pattern.search(p) for p in paths), f"`{name}` ({heading}) is never written")

    def test_parameter_and_activation_ranks_match_the_name_tables(self):
        """The shape column of the name tables: a parameter's rank, an activation's rank per prompt (the captured
        dataset has one more dimension, the prompts)."""
        for heading, prefix, extra, least in (("Parameter names", r"/params/", 0, 1000),
                                              ("Activation names", r"(?:/analysis/activations/[0-9]{4}/|ACTS\.h5:/)", 1, 12)):
            table = []
            for cells in table_rows(self.text, heading):
                # "[H, D, D]" or alternatives "[16], []": the ranks allowed.
                ranks = {0 if not shape.strip() else len(shape.split(","))
                         for shape in re.findall(r"\[([^\]]*)\]", cells[1])}
                self.assertTrue(ranks, f"{cells[0]}: no shape")
                for name in re.findall(r"`([^`]+)`", cells[0]):
                    table.append((name, re.compile(prefix + to_regex(name, {}) + r"\Z"), ranks))
            checked = 0
            for (path, kind, _, rank), run in self.observed:
                if kind != "dataset":
                    continue
                for name, regex, ranks in table:
                    if regex.search(path):
                        self.assertIn(rank - extra, ranks, f"{path} in {run}.h5 has rank {rank - extra}, `{name}`: {ranks}")
                        checked += 1
            self.assertGreaterEqual(checked, least, heading)

    def test_format_version_is_the_newest_documented(self):
        history = self.text.split("## Format versions")[1]
        versions = [int(v) for v in re.findall(r"^\|\s*(\d+)\s*\|", history, re.M)]
        self.assertTrue(versions)
        written = set()
        for path in manifest()["runs"].values():
            with h5py.File(path, "r") as f:
                written.add(int(f.attrs["format_version"]))
        self.assertEqual(written, {max(versions)})


if __name__ == "__main__":
    unittest.main()
