"""Tests of the Python reader (python/icl_workbench) on experiment files written by the real icl-cli
(tests/python/make_runs.py). Expected values come from what icl-cli prints with --json and from the C++
export-weights files, never from the reader itself."""

import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import tempfile
import unittest

import h5py
import numpy as np

from fixture import cli_json, icl_cli, manifest, read_safetensors

import icl_workbench


def close(a, b):
    """Equal as printed by icl-cli's JSON (null for non-finite numbers)."""
    if b is None:
        return a is None or (isinstance(a, float) and not math.isfinite(a))
    return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-300)


class ReaderAgainstCli(unittest.TestCase):
    def setUp(self):
        self.m = manifest()

    def test_config_checkpoints_metrics_match_info_json(self):
        for name, path in self.m["runs"].items():
            with self.subTest(run=name):
                info = cli_json(f"{name}.info")
                run = icl_workbench.open(path)
                self.assertEqual(run.config, info["config"])
                self.assertEqual(run.format_version, info["format_version"])
                self.assertEqual(run.app_version, info["app_version"])
                self.assertEqual(run.created, info["created"])
                self.assertEqual(run.checkpoints, [c["step"] for c in info["checkpoints"]])
                self.assertTrue(run.checkpoints, "every fixture run has checkpoints")
                for c, expected in zip(run.checkpoint_info, info["checkpoints"]):
                    self.assertTrue(close(c.train_loss, expected["train_loss"]), (c, expected))
                final = info["final"]
                checked = 0
                for series, values in run.metrics.items():
                    self.assertEqual(values.ndim, 1, series)
                    self.assertEqual(len(values), len(run.metrics["step"]), series)
                    if series.startswith("baseline/"):
                        expected = final["baselines"][series[len("baseline/"):]]
                    elif series.startswith("baseline_eta/"):
                        expected = final["baselines"]["eta_" + series[len("baseline_eta/"):]]
                    else:
                        expected = final[series]
                    self.assertTrue(close(values[-1], expected), (series, values[-1], expected))
                    checked += 1
                # Every series icl-cli reports is one the reader has, and back.
                reported = {k for k in final if k != "baselines"} | {
                    ("baseline_eta/" + k[4:]) if k.startswith("eta_") else "baseline/" + k for k in final["baselines"]}
                self.assertEqual(reported, set(run.metrics))
                self.assertGreater(checked, 3)
                self.assertEqual({a.kind for a in run.analyses}, set(info["analyses"]))
                for kind, count in info["analyses"].items():
                    self.assertEqual(sum(a.kind == kind for a in run.analyses), count)

    def test_train_json_final_step_and_eval_loss(self):
        for name, path in self.m["runs"].items():
            if name == "imported":
                continue
            with self.subTest(run=name):
                train = cli_json(f"{name}.train")
                run = icl_workbench.open(path)
                self.assertEqual(run.checkpoints[-1], train["final_step"])
                self.assertTrue(close(run.metrics["eval_loss"][-1], train["eval_loss"]))
                for baseline, value in train["baselines"].items():
                    self.assertTrue(close(run.metrics["baseline/" + baseline][-1], value), baseline)

    def test_weights_equal_the_cpp_export(self):
        """run.weights(step) against icl-cli export-weights --layout workbench (a safetensors file)."""
        tmp = tempfile.mkdtemp()
        try:
            for name in ("lsa", "gpt2", "fewshot_lstm", "lsa_sine"):
                path = self.m["runs"][name]
                run = icl_workbench.open(path)
                step = run.checkpoints[0]
                out = os.path.join(tmp, name + ".safetensors")
                subprocess.run([icl_cli(), "export-weights", path, "--out", out, "--checkpoint", str(step)],
                               check=True, stdout=subprocess.DEVNULL)
                expected = read_safetensors(out)
                got = run.weights(step)
                with self.subTest(run=name):
                    self.assertEqual(sorted(got), sorted(expected))
                    for k, v in expected.items():
                        self.assertEqual(got[k].dtype, np.float32, k)
                        np.testing.assert_array_equal(got[k], v, err_msg=k)
                    self.assertEqual(set(run.state_dict(step)), set(expected))
        finally:
            shutil.rmtree(tmp)

    def test_garg_state_dict_equals_cpp_export_key_for_key(self):
        for run_name, file_name, step in (("gpt2_garg", "gpt2_garg_safetensors", None),
                                          ("imported", "imported_garg_safetensors", 200)):
            with self.subTest(run=run_name):
                expected = read_safetensors(self.m["other_files"][file_name])
                got = icl_workbench.open(self.m["runs"][run_name]).state_dict(step, layout="garg")
                self.assertEqual(list(got), list(expected))  # same keys in the same order
                for k, v in expected.items():
                    self.assertEqual(got[k].shape, v.shape, k)
                    self.assertEqual(got[k].dtype, v.dtype, k)
                    np.testing.assert_array_equal(got[k], v, err_msg=k)

    def test_garg_layout_refused_for_other_models(self):
        with self.assertRaisesRegex(ValueError, "gpt2 regression model; this run holds a lsa"):
            icl_workbench.open(self.m["runs"]["lsa"]).state_dict(layout="garg")
        with self.assertRaisesRegex(ValueError, "classifier"):
            icl_workbench.open(self.m["runs"]["fewshot_gpt2"]).state_dict(layout="garg")
        with self.assertRaisesRegex(ValueError, "layout: expected"):
            icl_workbench.open(self.m["runs"]["lsa"]).state_dict(layout="hf")

    def test_icl_curve_analysis_matches_eval_json(self):
        for name in ("lsa", "gpt2"):
            with self.subTest(run=name):
                printed = cli_json(f"{name}.eval")
                a = icl_workbench.open(self.m["runs"][name]).analysis("icl_curve")
                self.assertEqual(a.checkpoint_step, printed["checkpoint_step"])
                np.testing.assert_array_equal(a.result["n_examples"], printed["n_examples"])
                np.testing.assert_array_equal(a.result["series"]["model"]["error"], printed["model"]["error"])
                np.testing.assert_array_equal(a.result["series"]["model"]["ci_upper"], printed["model"]["ci_upper"])
                for baseline, entry in printed["baselines"].items():
                    np.testing.assert_array_equal(a.result["series"][baseline]["error"], entry["error"])
                self.assertEqual(a.options["n_prompts"], printed["n_prompts"])
                self.assertIsInstance(a.result["series"]["model"]["error"], np.ndarray)

    def test_stored_analyses_match_analyze_json(self):
        run = icl_workbench.open(self.m["runs"]["lsa"])
        printed = cli_json("lsa.gd_alignment")
        a = run.analysis("gd_alignment")
        for key in ("prediction_difference", "model_cosine", "model_difference", "relative_model_difference",
                    "model_loss", "reference_loss"):
            self.assertEqual(a.result[key], printed[key], key)
        self.assertEqual(a.result["reference"], printed["reference"])
        self.assertEqual(a.checkpoint_step, printed["checkpoint_step"])
        self.assertRegex(a.created, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

        ood = run.analysis("ood")
        printed = cli_json("lsa.ood")
        for key in ("alpha", "model_loss", "gd_loss", "least_squares_loss", "zero_loss"):
            np.testing.assert_array_equal(ood.result[key], printed[key], err_msg=key)

        probe = icl_workbench.open(self.m["runs"]["gpt2"]).analysis("probe")
        printed = cli_json("gpt2.probe")
        np.testing.assert_array_equal(probe.result["normalized_mse"], printed["normalized_mse"])

    def test_captures_in_the_file_and_in_their_own_file(self):
        run = icl_workbench.open(self.m["runs"]["lsa"])
        printed = cli_json("lsa.capture")
        self.assertEqual(len(run.captures), 1)
        c = run.captures[0]
        self.assertEqual(c.group, printed["group"])
        self.assertEqual(c.names, printed["names"])
        self.assertEqual(c.n_prompts, printed["n_prompts"])
        self.assertEqual(c.checkpoint_step, printed["checkpoint_step"])
        cfg = run.config["task"]
        n, d = cfg["n_context"], cfg["d"]
        self.assertEqual(c.x.shape, (8, n + 1, d))
        self.assertEqual(c.y.shape, (8, n + 1))
        # Shapes per prompt as icl-cli printed them; values as h5py reads them directly.
        with h5py.File(self.m["runs"]["lsa"], "r") as f:
            for name in c.names:
                self.assertEqual(list(c[name].shape), [8] + printed["shapes"][name], name)
                self.assertEqual(c[name].dtype, np.float32)
                np.testing.assert_array_equal(c[name], f[c.group][name][()])
        self.assertEqual(set(c.activations), set(c.names))
        # The prompts are the task's: y = <w, x> with one w per prompt and no noise, so least squares on the first
        # N = d points reproduces the query's label (to the float32 precision the prompts are drawn in).
        for i in range(3):
            w, *_ = np.linalg.lstsq(c.x[i, :n], c.y[i, :n], rcond=None)
            self.assertLess(abs(float(c.x[i, n] @ w) - float(c.y[i, n])), 1e-4 * (1 + abs(float(c.y[i, n]))))
        # The analysis list shows it too, with the stored options.
        a = run.analysis("activations")
        self.assertEqual(a.options["n_prompts"], 8)
        self.assertEqual(sorted(a.datasets), sorted(c.names + ["x", "y"]))

        sep = icl_workbench.open_capture(self.m["other_files"]["lsa_capture"])
        printed = cli_json("lsa.capture_file")
        self.assertEqual(sep.names, printed["names"])
        self.assertEqual(list(sep["resid_pre.0"].shape), [8] + printed["shapes"]["resid_pre.0"])
        self.assertEqual(sep.group, "/")
        self.assertEqual(sep.checkpoint_step, printed["checkpoint_step"])
        with self.assertRaisesRegex(icl_workbench.ExperimentFileError, "not an ICL Workbench activation capture"):
            icl_workbench.open_capture(self.m["runs"]["lsa"])

    def test_task_arrays_and_import_provenance(self):
        run = icl_workbench.open(self.m["runs"]["gpt2"])
        task = run.config["task"]
        self.assertIn("phi/0/B_1", run.task_arrays)
        self.assertEqual(run.task_arrays["phi/0/B_1"].shape[1], task["d"])
        self.assertIsNone(run.import_provenance)
        imported = icl_workbench.open(self.m["runs"]["imported"])
        self.assertEqual(imported.import_provenance, cli_json("imported.info")["import"])
        # One checkpoint per imported source file (Garg's model_<step>.pt and state.pt), as the provenance lists them.
        self.assertEqual(imported.checkpoints, sorted(src["step"] for src in imported.import_provenance["sources"]))
        self.assertEqual(len(imported.checkpoints), 3)

    def test_optimizer_state(self):
        run = icl_workbench.open(self.m["runs"]["lsa"])
        arrays, scalars = run.optimizer_state()
        weights = run.weights()
        for name, w in weights.items():
            self.assertEqual(arrays[name + "/exp_avg"].shape, w.shape)
            self.assertEqual(arrays[name + "/exp_avg_sq"].shape, w.shape)
            self.assertEqual(scalars[name + "/step"], run.checkpoints[-1])
        self.assertEqual(icl_workbench.open(self.m["runs"]["imported"]).optimizer_state(), ({}, {}))

    def test_checkpoint_selection(self):
        run = icl_workbench.open(self.m["runs"]["lsa"])
        self.assertEqual(run.checkpoints, [0, 2, 4])
        last = run.weights()
        np.testing.assert_array_equal(last["blocks.0.attn.w_q"], run.weights(4)["blocks.0.attn.w_q"])
        np.testing.assert_array_equal(run.weights(-3)["blocks.0.attn.w_q"], run.weights(0)["blocks.0.attn.w_q"])
        with self.assertRaisesRegex(icl_workbench.ExperimentFileError, r"no checkpoint at step 3 \(saved: 0, 2, 4\)"):
            run.weights(3)


class BadInput(unittest.TestCase):
    """Each bad file gives one ExperimentFileError line in Python, and icl-cli refuses it with one line too."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.good = manifest()["runs"]["lsa"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def check(self, path, pattern):
        with self.assertRaises(icl_workbench.ExperimentFileError) as ctx:
            icl_workbench.open(path)
        message = str(ctx.exception)
        self.assertNotIn("\n", message)
        self.assertIn(path, message)
        self.assertRegex(message, pattern)
        cli = subprocess.run([icl_cli(), "info", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertNotEqual(cli.returncode, 0)
        self.assertLess(cli.returncode, 128, "icl-cli crashed")
        self.assertEqual(len(cli.stderr.strip().splitlines()), 1, cli.stderr)
        return message

    def test_missing_file_and_directory(self):
        self.check(os.path.join(self.tmp, "nothing.h5"), "no such file")
        self.check(self.tmp, "directory")

    def test_not_hdf5(self):
        path = os.path.join(self.tmp, "text.h5")
        with open(path, "w") as f:
            f.write("not an experiment\n" * 100)
        self.check(path, "not an ICL Workbench experiment file")

    def test_other_hdf5_file(self):
        path = os.path.join(self.tmp, "other.h5")
        with h5py.File(path, "w") as f:
            f["data"] = np.arange(10)
        self.check(path, "no 'format' attribute")
        with h5py.File(path, "a") as f:
            f.attrs["format"] = "something-else"
        self.check(path, "format is 'something-else'")

    def test_truncated_files(self):
        size = os.path.getsize(self.good)
        with open(self.good, "rb") as f:
            data = f.read()
        for fraction in (0.02, 0.5, 0.9):
            path = os.path.join(self.tmp, f"truncated_{fraction}.h5")
            with open(path, "wb") as f:
                f.write(data[: int(size * fraction)])
            with self.subTest(fraction=fraction):
                # The error may come at open or when the missing part is read: both are ExperimentFileError.
                try:
                    run = icl_workbench.open(path)
                    for step in run.checkpoints:
                        run.weights(step)
                    self.fail("a truncated file read without error")
                except icl_workbench.ExperimentFileError as e:
                    self.assertNotIn("\n", str(e))
                    self.assertIn(path, str(e))

    def test_newer_format_version(self):
        path = os.path.join(self.tmp, "newer.h5")
        shutil.copy(self.good, path)
        with h5py.File(path, "a") as f:
            f.attrs["format_version"] = np.int32(99)
        message = self.check(path, "format_version 99")
        self.assertIn("newer than this reader", message)

    def test_damaged_config(self):
        path = os.path.join(self.tmp, "badconfig.h5")
        shutil.copy(self.good, path)
        with h5py.File(path, "a") as f:
            f["config"].attrs["json"] = "{not json"
        with self.assertRaisesRegex(icl_workbench.ExperimentFileError, "/config: not valid JSON"):
            icl_workbench.open(path)

    def test_damaged_weight_and_metric_give_the_cli_line(self):
        """A changed weight or metric value (its stored SHA-256 no longer matches) is refused with the same line
        `icl-cli verify` prints for it, never returned."""
        for what in ("weight", "metric"):
            path = os.path.join(self.tmp, f"damaged_{what}.h5")
            shutil.copy(self.good, path)
            with h5py.File(path, "a") as f:
                if what == "weight":
                    step = sorted(f["checkpoints"])[-1]
                    params = f["checkpoints"][step]["params"]
                    d = params[sorted(params)[0]]
                else:
                    d = f["metrics"]["eval_loss"]
                values = d[()]
                values.flat[0] += 1e-3
                d[...] = values
            with self.subTest(what=what):
                with self.assertRaises(icl_workbench.ExperimentFileError) as ctx:
                    run = icl_workbench.open(path)
                    run.weights()
                verify = subprocess.run([icl_cli(), "verify", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
                self.assertEqual(verify.returncode, 1, verify.stderr)
                self.assertIn(str(ctx.exception), verify.stdout.splitlines())
                self.assertIn("(checksum mismatch)", str(ctx.exception))

    def test_interrupted_commit_is_refused_here_read_by_info_and_rolled_back_by_recover(self):
        """A journal left by a killed commit (docs/file-format.md, "Commits and the journal"), written here from the
        documented layout, independently of the C++ code: it holds the original first page, which the killed commit
        had already overwritten. This reader refuses the file with one line naming `icl-cli recover`; `icl-cli info`
        reads the file as it was before the commit without writing it; `icl-cli recover` rolls it back."""
        path = os.path.join(self.tmp, "interrupted.h5")
        shutil.copy(self.good, path)
        with open(self.good, "rb") as f:
            original = f.read()
        self.assertGreater(len(original), 4096)
        with h5py.File(self.good, "r") as f:
            file_id = f.attrs["file_id"]
            generation = int(f.attrs["generation"])
        file_id = file_id if isinstance(file_id, bytes) else file_id.encode()
        self.assertEqual(len(file_id), 32)
        added = 10000
        overwritten = b"\xff" * 4096  # the superblock and root group, half overwritten
        body = (b"ICLJRNL2" + struct.pack("<QQQQ", 4096, len(original), len(original) + added, 1) + file_id
                + struct.pack("<QQ", generation, generation + 1)
                + struct.pack("<Q", 0) + original[:4096] + hashlib.sha256(overwritten).digest())
        journal = path + ".journal"
        with open(journal, "wb") as f:
            f.write(body + hashlib.sha256(body).hexdigest().encode())
        with open(path, "r+b") as f:
            f.write(overwritten)
            f.seek(0, os.SEEK_END)
            f.write(b"\0" * added)  # and bytes the commit had added
        with open(path, "rb") as f:
            killed = f.read()
        mtime = os.stat(path).st_mtime_ns
        with self.assertRaises(icl_workbench.ExperimentFileError) as ctx:
            icl_workbench.open(path)
        message = str(ctx.exception)
        self.assertNotIn("\n", message)
        self.assertEqual(message, f"{path}: an interrupted commit left {journal}; run `icl-cli recover {path}` (or "
                                  "the next `train --resume`) to roll it back")
        info = cli_json_of(path)
        self.assertIn(f"a commit was interrupted and left {journal}", " ".join(info["notes"]))
        self.assertEqual([c["step"] for c in info["checkpoints"]], icl_workbench.open(self.good).checkpoints)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), killed, "icl-cli info wrote the run file")
        self.assertEqual(os.stat(path).st_mtime_ns, mtime)
        self.assertTrue(os.path.exists(journal))
        cli = subprocess.run([icl_cli(), "recover", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertEqual(cli.stdout, f"{path}: an interrupted commit was rolled back from {journal} (the file holds "
                                     "the commit before it)\n")
        self.assertFalse(os.path.exists(journal))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), original, "the file is its previous commit, byte for byte")
        self.assertEqual(icl_workbench.open(path).checkpoints, icl_workbench.open(self.good).checkpoints)

        # An incomplete journal (the commit was killed while writing it, before it changed the file): refused here,
        # read around by icl-cli info (which leaves it), removed by icl-cli recover.
        with open(journal, "wb") as f:
            f.write(body[:100])
        with self.assertRaises(icl_workbench.ExperimentFileError):
            icl_workbench.open(path)
        self.assertIn("incomplete", " ".join(cli_json_of(path)["notes"]))
        self.assertTrue(os.path.exists(journal))
        cli = subprocess.run([icl_cli(), "recover", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(cli.returncode, 0, cli.stderr)
        self.assertIn("incomplete", cli.stdout)
        self.assertFalse(os.path.exists(journal))
        with open(path, "rb") as f:
            self.assertEqual(f.read(), original)

    def test_a_forged_journal_is_refused_and_changes_nothing(self):
        """Old size 0 made earlier builds truncate the run to 0 bytes on `icl-cli info`."""
        path = os.path.join(self.tmp, "forged.h5")
        shutil.copy(self.good, path)
        with open(self.good, "rb") as f:
            original = f.read()
        body = b"ICLJRNL2" + struct.pack("<QQQQ", 4096, 0, len(original), 0) + b"\0" * 32 + struct.pack("<QQ", 0, 1)
        with open(path + ".journal", "wb") as f:
            f.write(body + hashlib.sha256(body).hexdigest().encode())
        for command in (["info"], ["verify"], ["recover"]):
            with self.subTest(command=command[0]):
                cli = subprocess.run([icl_cli(), *command, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
                self.assertEqual(cli.returncode, 1, cli.stderr)
                self.assertIn("records an old size of 0 bytes", cli.stdout + cli.stderr)
                with open(path, "rb") as f:
                    self.assertEqual(f.read(), original)
        self.check(path, "an interrupted commit left")

    def test_hostile_attributes_are_refused_without_a_crash(self):
        """Attributes that are arrays where one value belongs (earlier builds of icl-cli overwrote the stack)."""
        cases = {
            "format_version": (lambda f: f.attrs.create("format_version", np.full(64, 65.0))),
            "format": (lambda f: f.attrs.create("format", np.array([b"A" * 16] * 4000))),
            "format_vlen": (lambda f: f.attrs.create("format", ["A" * 64] * 2000,
                                                      dtype=h5py.string_dtype())),
        }
        for name, edit in cases.items():
            with self.subTest(attribute=name):
                path = os.path.join(self.tmp, f"hostile_{name}.h5")
                shutil.copy(self.good, path)
                with h5py.File(path, "a") as f:
                    edit(f)
                self.check(path, "damaged")

    def test_json_nested_without_end_is_refused(self):
        """Python's json module recurses once per level (RecursionError); the depth is checked before."""
        path = os.path.join(self.tmp, "deep.h5")
        shutil.copy(self.good, path)
        with h5py.File(path, "a") as f:
            f["config"].attrs["json"] = np.bytes_('{"a":' * 100000 + "1" + "}" * 100000)
        self.check(path, "JSON nested deeper than 64 levels")

    def test_a_dataset_declaring_more_than_the_budget_is_refused_before_it_is_read(self):
        """2^28 doubles (2 GiB) declared, nothing stored, under a budget of 64 MiB (ICL_MAX_MEMORY)."""
        path = os.path.join(self.tmp, "huge.h5")
        shutil.copy(self.good, path)
        with h5py.File(path, "a") as f:
            f["metrics"].create_dataset("huge", shape=(1 << 28,), dtype="<f8")
        self.assertLess(os.path.getsize(path), 10 << 20)
        saved = os.environ.get("ICL_MAX_MEMORY")
        os.environ["ICL_MAX_MEMORY"] = "64M"
        try:
            self.check(path, r"refused: /metrics/huge would need 2147483648 bytes, over the memory budget of "
                             r"67108864 bytes")
        finally:
            if saved is None:
                del os.environ["ICL_MAX_MEMORY"]
            else:
                os.environ["ICL_MAX_MEMORY"] = saved


def cli_json_of(path):
    cli = subprocess.run([icl_cli(), "info", "--json", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert cli.returncode == 0, cli.stderr
    return json.loads(cli.stdout)


if __name__ == "__main__":
    unittest.main()
