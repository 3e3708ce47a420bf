#!/usr/bin/env python3
"""ctest fixture: writes small experiment files of every model and task kind with the real icl-cli, runs the
analyses that store results in them, and keeps what icl-cli prints with --json beside them.

    make_runs.py ICL_CLI OUT_DIR [FOREIGN_DIR]

OUT_DIR/runs/<name>.h5     the experiment files (and the other HDF5 files icl-cli writes: a pasted model, a
                           separate activation capture)
OUT_DIR/cli/<name>.<what>.json   stdout of `icl-cli ... --json` (info, eval, analyze ...)
OUT_DIR/manifest.json      {"runs": {name: path}, "other_files": {name: path}, "cli": {key: path}}

Every run is a few training steps with small evaluation sets so that the whole fixture takes seconds per run.
The python reader tests and the file-format test read them (FIXTURES_REQUIRED in tests/python/CMakeLists.txt).
"""

import json
import os
import shutil
import subprocess
import sys
import time

# Small evaluation for every run: a few prompts, no long bootstrap.
SMALL = ["--set", "eval.n_prompts=64", "--set", "eval.bootstrap=20", "--set", "training.batch_size=16",
         "--set", "training.eval_every=2", "--set", "training.checkpoint_every=2", "--threads", "1"]
FASHION = "/usr/share/datasets/fashion-mnist"
LSA_ACTIVATIONS = "embed,resid_pre.0,resid_post.0,attn.pattern.0,attn.q.0,attn.k.0,attn.v.0,attn.out.0,attn.result.0"
TINY_GPT2 = ["--set", "model.d_model=16", "--set", "model.n_layers=2", "--set", "model.n_heads=2"]

# name -> (train arguments, analyses: list of (key, icl-cli arguments after the file))
RUNS = {
    "lsa": (["--preset", "vonoswald-lsa-1layer", "--steps", "4"],
            [("eval", ["eval", "--json"]),
             ("gd_alignment", ["analyze", "gd-alignment", "--json"]),
             ("eta_scan", ["analyze", "eta-scan", "--points", "20", "--json"]),
             ("ood", ["analyze", "ood", "--kind", "x_scale", "--json"]),
             ("capture", ["analyze", "attention", "--prompts", "8", "--store", "--capture", LSA_ACTIVATIONS,
                          "--json"])]),
    # GD++ (fitted with 3,000 Adam steps per k: one k only keeps this at ~20 s).
    "lsa_gdpp": (["--preset", "vonoswald-gdpp", "--steps", "2", "--set", "eval.gd_steps=[2]",
                  "--set", 'eval.alignment=["gdpp_2"]'], []),
    "lsa_interleaved": (["--preset", "vonoswald-interleaved-copy", "--steps", "2"],
                        [("copy", ["analyze", "copy", "--json"]),
                         ("kernel", ["analyze", "kernel", "--m", "16,64", "--seeds", "2", "--json"])]),
    "lsa_sine": (["--preset", "vonoswald-sine", "--steps", "2", "--set", "eval.features_gd_steps=20"], []),
    "lsa_options": (["--preset", "renliu-augmented", "--steps", "2",
                     "--set", "model.layer_norm=true", "--set", "model.mlp=true"], []),
    "gpt2": (["--preset", "guo-representation", "--steps", "2", *TINY_GPT2],
             [("eval", ["eval", "--json"]),
              ("probe", ["analyze", "probe", "--target", "phi", "--positions", "x", "--prompts", "64", "--json"]),
              ("capture", ["analyze", "attention", "--prompts", "4", "--store", "--capture",
                           "mlp.out.1,attn.pattern.1", "--json"]),
              ("paste", ["analyze", "paste", "--cut-layer", "1", "--steps", "2", "--prompts", "64",
                         "--out", "{runs}/gpt2_pasted.h5", "--json"])]),
    "gpt2_mixture": (["--preset", "guo-mixture", "--steps", "2", *TINY_GPT2], []),
    "gpt2_garg": (["--preset", "garg-linear-regression", "--steps", "2", *TINY_GPT2], []),
    "fewshot_gpt2": (["--preset", "chan-bursty", "--steps", "2", *TINY_GPT2, "--set", "eval.n_prompts=64"],
                     [("icl_iwl", ["analyze", "icl-iwl", "--prompts", "32", "--json"])]),
    # Image exemplars (Fashion-MNIST, Debian's dataset-fashion-mnist) through the ResNet encoder, with a common / rare
    # class split (its metrics).
    "fewshot_resnet": (["--preset", "chan-bursty", "--steps", "2", *TINY_GPT2, "--set", "model.encoder=resnet",
                        "--set", "task.exemplar_source=idx", "--set", f"task.exemplar_path={FASHION}/t10k-images-idx3-ubyte.gz",
                        "--set", f"task.exemplar_labels_path={FASHION}/t10k-labels-idx1-ubyte.gz",
                        "--set", "task.n_classes=8", "--set", "task.n_holdout=2", "--set", "task.n_common_classes=4",
                        "--set", "training.batch_size=4"], []),
    "fewshot_lstm": (["--preset", "chan-bursty", "--steps", "2", "--set", "model.kind=lstm", "--set", "model.d_model=16",
                      "--set", "model.n_layers=1"], []),
    "fewshot_rnn": (["--preset", "chan-bursty", "--steps", "2", "--set", "model.kind=rnn", "--set", "model.d_model=16",
                     "--set", "model.n_layers=1"], []),
}


def run(cli, args, out_json=None):
    started = time.time()
    proc = subprocess.run([cli, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(f"make_runs: FAIL: icl-cli {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    if out_json:
        with open(out_json, "w") as f:
            f.write(proc.stdout)
    print(f"make_runs: {time.time() - started:5.1f} s  icl-cli {' '.join(args)}")


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__)
        return 2
    cli, out = argv[1], os.path.abspath(argv[2])
    foreign = argv[3] if len(argv) == 4 else None
    runs_dir, cli_dir = os.path.join(out, "runs"), os.path.join(out, "cli")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(runs_dir)
    os.makedirs(cli_dir)
    manifest = {"runs": {}, "other_files": {}, "cli": {}}
    for name, (train, analyses) in RUNS.items():
        path = os.path.join(runs_dir, name + ".h5")
        run(cli, ["train", *SMALL, *train, "--out", path, "--json"], os.path.join(cli_dir, name + ".train.json"))
        manifest["runs"][name] = path
        manifest["cli"][f"{name}.train"] = os.path.join(cli_dir, name + ".train.json")
        for key, args in analyses:
            args = [a.replace("{runs}", runs_dir) for a in args]
            json_path = os.path.join(cli_dir, f"{name}.{key}.json")
            run(cli, [args[0], path, *args[1:], "--threads", "1"], json_path)
            manifest["cli"][f"{name}.{key}"] = json_path
        info = os.path.join(cli_dir, name + ".info.json")
        run(cli, ["info", path, "--json"], info)
        manifest["cli"][f"{name}.info"] = info
    manifest["other_files"]["gpt2_pasted"] = os.path.join(runs_dir, "gpt2_pasted.h5")
    # An activation capture in its own file.
    capture = os.path.join(runs_dir, "lsa_capture.h5")
    run(cli, ["analyze", manifest["runs"]["lsa"], "attention", "--prompts", "8", "--capture", "resid_pre.0",
              "--out", capture, "--json", "--threads", "1"], os.path.join(cli_dir, "lsa.capture_file.json"))
    manifest["other_files"]["lsa_capture"] = capture
    manifest["cli"]["lsa.capture_file"] = os.path.join(cli_dir, "lsa.capture_file.json")
    # An imported run (/import): Garg et al.'s run folder of the foreign-weights fixtures.
    if foreign:
        path = os.path.join(runs_dir, "imported.h5")
        run(cli, ["import", os.path.join(foreign, "garg_run"), "--out", path, "--set", "eval.n_prompts=64",
                  "--threads", "1", "--json"], os.path.join(cli_dir, "imported.import.json"))
        manifest["runs"]["imported"] = path
        info = os.path.join(cli_dir, "imported.info.json")
        run(cli, ["info", path, "--json"], info)
        manifest["cli"]["imported.info"] = info
        garg = os.path.join(runs_dir, "imported_garg.safetensors")
        run(cli, ["export-weights", path, "--out", garg, "--layout", "garg", "--checkpoint", "200"])
        manifest["other_files"]["imported_garg_safetensors"] = garg
    garg = os.path.join(runs_dir, "gpt2_garg.safetensors")
    run(cli, ["export-weights", manifest["runs"]["gpt2_garg"], "--out", garg, "--layout", "garg"])
    manifest["other_files"]["gpt2_garg_safetensors"] = garg
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
