#!/usr/bin/env python3
"""Trains every preset on several seeds, runs the analyses behind each paper's headline number, and writes
reproduce/summary.md and reproduce/summary.json: per experiment the headline metrics as mean ± sd over the
seeds, the paper's value and pass/fail against the targets (issue 19; docs/science.md for the science).

Usage: scripts/reproduce.sh [--scale quick|paper] [--seeds 0,1,2] [--presets a,b,…] [--out reproduce]
                            [--threads N] [--jobs J] [--list]

Runs that are already finished are not trained again, interrupted ones are resumed (`icl-cli train --resume`),
and an analysis whose JSON is already in OUT/results/ is not run again: delete that file to redo it. The run files
(OUT/runs/) are not committed; OUT/results/ is, so on a fresh clone a run whose analyses are all cached is summarised
from the cache instead of being trained again (delete OUT/results/<id>-s<seed>/ to retrain it).
Only the Python standard library is used; every number comes from `icl-cli … --json`.
"""
import argparse
import concurrent.futures
import datetime
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- metric helpers -------------------------------------------------------------------------------------------


def ratio(a, b):
    return a / b if b else math.inf


def curve_at(curve, name, n):
    """Error of series `name` ("model" or a baseline) at n in-context examples of an `eval --json` curve."""
    ns = curve["n_examples"]
    series = curve["model"] if name == "model" else curve["baselines"][name]
    return series["error"][ns.index(n)]


def garg_metrics(r, cfg):
    """Garg et al. Fig. 2: squared error / d against N (eval reports 0.5·squared error, so ×2/d)."""
    c = r["eval"]
    d = cfg["task"]["d"]
    ns = c["n_examples"]
    norm = [2.0 * e / d for e in c["model"]["error"]]
    ls = [2.0 * e / d for e in c["baselines"]["least_squares"]["error"]]
    under_d = [n for n in ns if n < d]
    gap = max(abs(norm[ns.index(n)] - (d - n) / d) for n in under_d)
    return {
        "d": d,
        "err_over_d_at_0": norm[ns.index(0)],
        "err_over_d_at_2d": norm[ns.index(2 * d)] if 2 * d in ns else math.nan,
        "max_gap_to_least_squares_below_d": gap,
        "least_squares_at_2d": ls[ns.index(2 * d)] if 2 * d in ns else math.nan,
        "monotone_fraction": sum(1 for a, b in zip(norm, norm[1:]) if b <= a + 0.02) / max(1, len(norm) - 1),
    }


def alignment_metrics(key):
    def f(r, cfg):
        a = r[key]
        return {
            "model_loss": a["model_loss"],
            "reference_loss": a["reference_loss"],
            "loss_ratio": ratio(a["model_loss"], a["reference_loss"]),
            "model_cosine": a["model_cosine"],
            "relative_model_difference": a["relative_model_difference"],
        }

    return f


def icl_iwl_metrics(r, cfg):
    a = r["icl_iwl"]
    return {"icl_accuracy": a["icl_accuracy"], "iwl_accuracy": a["iwl_accuracy"]}


def copy_metrics(r, cfg):
    m = alignment_metrics("gd_alignment")(r, cfg)
    m["own_next_ratio"] = r["copy"]["own_next_ratio"]
    m["next_other_ratio"] = r["copy"]["next_other_ratio"]
    return m


def kernel_metrics(r, cfg):
    k = r["kernel"]
    return {"exact_max_error": k["exact_max_error"], "eval_loss": r["info"]["final"]["eval_loss"]}


def guo_metrics(r, cfg):
    c = r["eval"]
    n = c["n_examples"][-1]
    model = curve_at(c, "model", n)
    oracle = curve_at(c, "oracle_ridge_phi", n)
    ridge = curve_at(c, "ridge", n)
    return {"n": n, "model": model, "oracle": oracle, "ridge_raw_x": ridge,
            "model_over_oracle": ratio(model, oracle), "model_over_ridge_raw_x": ratio(model, ridge)}


def paste_metrics(r, cfg):
    p = r["paste"]
    return {"pasted_loss": p["pasted_loss"], "scratch_loss": p["scratch_loss"], "ridge_loss": p["ridge_loss"],
            "pasted_over_ridge": ratio(p["pasted_loss"], p["ridge_loss"]),
            "pasted_over_scratch": ratio(p["pasted_loss"], p["scratch_loss"]),
            # How far the zero predictor is from ridge: the pasted / ridge target only discriminates when this is
            # well above it (a noisy task brings ridge down to the zero predictor's loss).
            "zero_over_ridge": ratio(p["zero_loss"], p["ridge_loss"]),
            # The pasting is part of the experiment's budget: parent training plus this.
            "paste_minutes": p["wall_time_s"] / 60.0}


def fu_metrics(r, cfg):
    """Fu et al.: k*_Newton(ℓ) over the middle layers (its linear fit) against a linear fit of GD's best steps."""
    f = r["algorithm_map"]["families"]
    newton, gd = f["newton"], f["gd"]
    nan = float("nan")
    num = lambda v: nan if v is None else v
    return {"newton_spearman": num(newton["fit"]["spearman"]), "newton_r2": num(newton["fit"]["r2"]),
            "newton_slope": num(newton["fit"]["slope"]), "gd_linear_r2": num(gd["fit_linear"]["r2"]),
            "gd_log_linear_r2": num(gd["fit"]["r2"]),
            "newton_r2_minus_gd_linear_r2": num(newton["fit"]["r2"]) - num(gd["fit_linear"]["r2"]),
            "middle_layers": f"{newton['fit']['first_layer']}-{newton['fit']['last_layer']}",
            # a model still on the loss plateau (eval loss ≈ the zero predictor's) has no map to speak of
            "eval_loss_over_zero": r["info"]["final"]["eval_loss"] / r["info"]["final"]["baselines"]["zero"],
            "newton_best_steps": newton["best_step"], "gd_best_steps": gd["best_step"],
            # how closely the best step matches, over the middle layers (1: the layer is that algorithm)
            "newton_best_similarity_middle": middle_best_similarity(newton),
            "gd_best_similarity_middle": middle_best_similarity(gd)}


def middle_best_similarity(family):
    """Mean over the fit's middle layers of the largest similarity of errors on the family's grid."""
    fit = family["fit"]
    rows = family["sim_errors"][fit["first_layer"] - 1:fit["last_layer"]]
    return statistics.fmean(max(r) for r in rows) if rows else float("nan")


def construction_map_metrics(r, cfg):
    """An LSA holding the GD construction: layer ℓ against GD step ℓ on the algorithm map."""
    gd = r["algorithm_map"]["families"]["gd"]
    layers = r["algorithm_map"]["layers"]
    diag = [gd["sim_errors"][l - 1][gd["steps"].index(float(l))] for l in layers]
    diag_w = [gd["sim_weights"][l - 1][gd["steps"].index(float(l))] for l in layers]
    return {"min_diagonal_similarity_of_errors": min(diag), "min_diagonal_similarity_of_weights": min(diag_w),
            "best_step_is_layer": sum(1 for l in layers if gd["best_step"][l - 1] == l) / len(layers)}


# --- experiments ---------------------------------------------------------------------------------------------
# Each experiment: a preset (and --set overrides), the analyses whose JSON carries its headline number, the
# metrics computed from them, the targets (metric, "<=" or ">=", value) and what the paper reports.

EXPERIMENTS = [
    {
        "id": "vonoswald-lsa-1layer", "preset": "vonoswald-lsa-1layer",
        "analyses": {"gd_alignment": ["analyze", "{run}", "gd-alignment", "--json"]},
        "metrics": alignment_metrics("gd_alignment"),
        "targets": [("loss_ratio", "<=", 1.02), ("model_cosine", ">=", 0.99)],
        "paper": "1 LSA layer = 1 GD step with the best η: loss ratio → 1, model cosine → 1 (Fig. 2)",
    },
    {
        "id": "vonoswald-lsa-multilayer", "preset": "vonoswald-lsa-multilayer",
        "analyses": {"gd_alignment": ["analyze", "{run}", "gd-alignment", "--reference", "gdpp", "--json"]},
        "metrics": alignment_metrics("gd_alignment"),
        "targets": [("loss_ratio", "<=", 1.10), ("model_cosine", ">=", 0.98)],
        "paper": "K = 3 untied layers track 3 steps of GD++ (Fig. 3)",
    },
    {
        "id": "vonoswald-gdpp", "preset": "vonoswald-gdpp",
        "analyses": {"gd_alignment": ["analyze", "{run}", "gd-alignment", "--reference", "gdpp", "--json"]},
        "metrics": alignment_metrics("gd_alignment"),
        "targets": [("loss_ratio", "<=", 1.25), ("model_cosine", ">=", 0.98)],
        "paper": "one tied layer applied 3 times ≈ GD++-3 (Fig. 3/4)",
    },
    {
        "id": "vonoswald-interleaved-copy", "preset": "vonoswald-interleaved-copy",
        "analyses": {"gd_alignment": ["analyze", "{run}", "gd-alignment", "--json"],
                     "copy": ["analyze", "{run}", "copy", "--json"]},
        "metrics": copy_metrics,
        "targets": [("loss_ratio", "<=", 1.05), ("next_other_ratio", ">=", 10.0)],
        "paper": "the softmax first layer copies y_i into the x_i token, then one GD step (Sec. 4 / Fig. 6)",
    },
    {
        "id": "vonoswald-sine", "preset": "vonoswald-sine",
        "analyses": {"gd_alignment": ["analyze", "{run}", "gd-alignment", "--reference", "features_gd_1", "--json"]},
        "metrics": alignment_metrics("gd_alignment"),
        "targets": [("loss_ratio", "<=", 1.10)],
        "paper": "MLP features + 1 LSA layer ≈ meta-learned features + 1 GD step (Sec. 5, sine regression)",
    },
    {
        "id": "renliu-kernel", "preset": "renliu-kernel",
        "analyses": {"kernel": ["analyze", "{run}", "kernel", "--m", "16,256", "--seeds", "2", "--json"]},
        "metrics": kernel_metrics, "needs_info": True,
        "targets": [("exact_max_error", "<=", 1e-5)],
        "paper": "softmax attention = one GD step of the contrastive reference model, exactly with the exact kernel",
    },
    {
        "id": "guo-representation", "preset": "guo-representation",
        "analyses": {"eval": ["eval", "{run}", "--json"]},
        "metrics": guo_metrics,
        "targets": [("model_over_ridge_raw_x", "<=", 0.5), ("model_over_oracle", "<=", 3.0)],
        "paper": "near the oracle (ridge on Φ*(x)), far below ridge on raw x (Fig. 2)",
    },
    {
        "id": "guo-pasting", "preset": "guo-pasting",
        "analyses": {"paste": ["analyze", "{run}", "paste", "--embedding", "transformer1", "--cut-layer", "1",
                               "--init-from-parent", "--match-label-scale", "--steps", "2000", "--lr", "2e-3",
                               "--schedule", "cosine", "--eval-every", "250", "--force", "--json"]},
        "metrics": paste_metrics,
        "targets": [("pasted_over_ridge", "<=", 1.5), ("pasted_over_scratch", "<=", 1.0)],
        "paper": "pasted upper layers reach near-ridge error; a scratch model of the same size does not (pasting experiment)",
    },
    {
        "id": "garg-linear-regression", "preset": "garg-linear-regression",
        "analyses": {"eval": ["eval", "{run}", "--json"]},
        "metrics": garg_metrics, "needs_info": True,
        "targets": [("err_over_d_at_0", ">=", 0.7), ("err_over_d_at_2d", "<=", 0.1),
                    ("max_gap_to_least_squares_below_d", "<=", 0.15)],
        "paper": "error/d falls with N like least squares' (d − N)/d and is ≈ 0 from N = 2d (Fig. 2)",
    },
    {
        "id": "fu-newton", "preset": "fu-newton",
        "analyses": {"algorithm_map": ["analyze", "{run}", "algorithm-map", "--store", "--json"]},
        "metrics": fu_metrics,
        # The second target needs middle layers past about 7 Newton iterations, a model near least squares; the
        # quick scale's are not (docs/science.md §5, "What the map can tell apart").
        "targets": [("newton_spearman", ">=", 0.9), ("newton_r2_minus_gd_linear_r2", ">=", 1e-9)],
        "paper": "the best-matching Newton step grows linearly with the layer (≈ 3 iterations per middle layer); "
                 "matching a layer takes exponentially more GD steps (Fig. 3)",
    },
    {
        "id": "fu-lsa-gd-construction", "preset": "vonoswald-lsa-multilayer",
        "set": ["model.init=gd_construction", "training.steps=0", 'eval.baselines=["zero","least_squares","gd"]',
                'eval.alignment=["gd_3"]'],
        "analyses": {"algorithm_map": ["analyze", "{run}", "algorithm-map", "--families", "gd,newton", "--json"]},
        "metrics": construction_map_metrics,
        "targets": [("min_diagonal_similarity_of_errors", ">=", 1 - 1e-6), ("best_step_is_layer", ">=", 1.0)],
        "paper": "von Oswald et al.'s Proposition 1 on the algorithm map: layer ℓ of the GD construction is GD step ℓ",
    },
    {
        "id": "chan-bursty", "preset": "chan-bursty",
        "analyses": {"icl_iwl": ["analyze", "{run}", "icl-iwl", "--json"]},
        "metrics": icl_iwl_metrics,
        "targets": [("icl_accuracy", ">=", 0.85)],
        "paper": "bursty training sequences give ICL on holdout classes (Fig. 2)",
    },
    {
        "id": "chan-bursty-p0", "preset": "chan-bursty", "set": ["task.p_bursty=0"],
        "analyses": {"icl_iwl": ["analyze", "{run}", "icl-iwl", "--json"]},
        "metrics": icl_iwl_metrics,
        "targets": [("icl_accuracy", "<=", 0.6)],
        "paper": "without bursty sequences no ICL emerges (Fig. 2, p_bursty = 0)",
    },
    {
        "id": "chan-zipf", "preset": "chan-zipf",
        "analyses": {"icl_iwl": ["analyze", "{run}", "icl-iwl", "--json"]},
        "metrics": icl_iwl_metrics,
        "targets": [("icl_accuracy", ">=", 0.7), ("iwl_accuracy", ">=", 0.7)],
        "paper": "Zipf exponent α ≈ 1: ICL and IWL in the same model (Fig. 5)",
    },
]


# --- running -------------------------------------------------------------------------------------------------


def run_cmd(cli, argv, log, threads, capture=False):
    cmd = [cli] + argv + (["--threads", str(threads)] if threads and argv[0] in ("train",) else [])
    with open(log, "a") as lf:
        lf.write("$ " + " ".join(cmd) + "\n")
        lf.flush()
        if capture:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=lf, text=True)
        else:
            p = subprocess.run(cmd, stdout=lf, stderr=lf, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {p.returncode}); see {log}")
    return p.stdout if capture else None


def info(cli, run, log):
    return json.loads(run_cmd(cli, ["info", run, "--json"], log, 0, capture=True))


def finished(cli, run, log):
    if not os.path.exists(run):
        return False
    try:
        s = info(cli, run, log)
    except RuntimeError:
        return False
    steps = s.get("config", {}).get("training", {}).get("steps", -1)
    last = max((c["step"] for c in s.get("checkpoints", []) if isinstance(c, dict) and "step" in c), default=-1)
    return last >= steps


def trimmed_info(s):
    """What a record needs from `icl-cli info --json`: the config, the final evaluation, the checkpoint steps."""
    return {"config": s.get("config"), "final": s.get("final"),
            "checkpoints": [{"step": c["step"]} for c in s.get("checkpoints", []) if isinstance(c, dict) and "step" in c]}


def cached_info(exp, res_dir):
    """The record's info from OUT/results/ when the run file is gone (a fresh clone: runs are not committed).

    `info.json` is written beside the analyses of every run; results cached before it existed fall back to the
    checkpoint step the analyses report, which is enough for experiments whose metrics need neither the config nor the final evaluation.
    Returns None when neither is there (or the experiment's metrics need the run's info): the run is trained again."""
    path = os.path.join(res_dir, "info.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    if exp.get("needs_info"):
        return None
    steps = []
    for key in exp["analyses"]:
        with open(os.path.join(res_dir, key + ".json")) as f:
            steps.append(json.load(f).get("checkpoint_step"))
    if any(not isinstance(s, int) for s in steps) or len(set(steps)) != 1:
        return None
    return {"config": None, "final": None, "checkpoints": [{"step": steps[0]}]}


def one(args, exp, seed):
    """Trains (or resumes) one experiment on one seed and runs its analyses; returns its record.

    When the run file is absent but every analysis of this experiment and seed is cached in OUT/results/ (as
    committed), the record is rebuilt from the cache without training; delete OUT/results/<id>-s<seed>/ to redo it."""
    name = f"{exp['id']}-s{seed}"
    run = os.path.join(args.out, "runs", name + ".h5")
    log = os.path.join(args.out, "logs", name + ".log")
    res_dir = os.path.join(args.out, "results", name)
    os.makedirs(res_dir, exist_ok=True)
    all_cached = all(os.path.exists(os.path.join(res_dir, k + ".json")) for k in exp["analyses"])
    cached = cached_info(exp, res_dir) if all_cached and not os.path.exists(run) else None
    t0 = time.time()
    trained = False
    if cached is None:
        if not os.path.exists(run):
            argv = ["train", "--preset", exp["preset"], "--scale", args.scale, "--set", f"seed={seed}", "--out", run]
            for s in exp.get("set", []):
                argv += ["--set", s]
            run_cmd(args.cli, argv, log, args.threads)
            trained = True
        elif not finished(args.cli, run, log):
            run_cmd(args.cli, ["train", "--resume", "--out", run], log, args.threads)
            trained = True
        results = {"info": trimmed_info(info(args.cli, run, log))}
        with open(os.path.join(res_dir, "info.json"), "w") as f:
            json.dump(results["info"], f, indent=1)
    else:
        results = {"info": cached}
    train_s = time.time() - t0 if trained else None
    for key, argv in exp["analyses"].items():
        path = os.path.join(res_dir, key + ".json")
        if not os.path.exists(path):
            out = run_cmd(args.cli, [a.format(run=run) for a in argv], log, 0, capture=True)
            json.loads(out)  # must be one JSON object
            with open(path, "w") as f:
                f.write(out)
        with open(path) as f:
            results[key] = json.load(f)
    report_dir = os.path.join(args.out, "reports", name)
    if not os.path.isdir(report_dir) and os.path.exists(run):
        run_cmd(args.cli, ["report", run, "--out", report_dir], log, 0)
    cfg = results["info"]["config"]
    metrics = exp["metrics"](results, cfg)
    timing_path = os.path.join(res_dir, "train_seconds.json")
    if train_s is not None and not os.path.exists(timing_path):
        with open(timing_path, "w") as f:
            json.dump({"train_seconds": train_s}, f)
    if os.path.exists(timing_path):
        with open(timing_path) as f:
            metrics["train_minutes"] = json.load(f)["train_seconds"] / 60.0
    metrics["final_step"] = max((c["step"] for c in results["info"].get("checkpoints", []) if "step" in c), default=-1)
    return {"experiment": exp["id"], "seed": seed, "run": os.path.relpath(run, args.out),
            "report": os.path.relpath(report_dir, args.out) if os.path.isdir(report_dir) else None,
            "from_cache": cached is not None, "metrics": metrics}


def passes(value, op, bound):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return value <= bound if op == "<=" else value >= bound


def fmt(x):
    if isinstance(x, float):
        if math.isnan(x) or math.isinf(x):
            return str(x)
        return f"{x:.3g}" if abs(x) < 1e-3 else f"{x:.4f}".rstrip("0").rstrip(".") if abs(x) < 100 else f"{x:.1f}"
    return str(x)


def summarise(args, records, selected):
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout.strip()
    # `icl-cli runtime`: "BLAS: …", "CPU kernels: …", "allocator: …" lines.
    version = {}
    try:
        out = subprocess.run([args.cli, "runtime"], stdout=subprocess.PIPE, text=True).stdout
        version = dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)
    except OSError:
        pass
    blas, kernels = version.get("BLAS", ""), version.get("CPU kernels", "")
    summary = {"commit": git, "scale": args.scale, "seeds": args.seeds, "date": datetime.datetime.utcnow().isoformat() + "Z",
               "machine": f"{platform.machine()}, {os.cpu_count()} cores", "blas": blas, "cpu_kernels": kernels,
               "threads": args.threads or "default", "experiments": []}
    lines = [f"# Reproduction summary ({args.scale} scale)", "",
             f"Commit `{git}`, seeds {', '.join(map(str, args.seeds))}, {summary['machine']}, BLAS: {blas}, "
             f"CPU kernels: {kernels}, "
             f"threads per run: {summary['threads']}. Written by `scripts/reproduce.sh`; do not edit by hand.", "",
             "| experiment | metric | mean ± sd | per seed | target | pass | paper |", "|---|---|---|---|---|---|---|"]
    all_pass = True
    for exp in selected:
        recs = sorted((r for r in records if r["experiment"] == exp["id"]), key=lambda r: r["seed"])
        entry = {"id": exp["id"], "preset": exp["preset"], "set": exp.get("set", []), "paper": exp["paper"],
                 "runs": recs, "metrics": {}, "targets": []}
        keys = list(recs[0]["metrics"].keys()) if recs else []
        for k in keys:
            vals = [r["metrics"].get(k) for r in recs if isinstance(r["metrics"].get(k), (int, float))]
            if not vals:
                continue
            finite = all(math.isfinite(v) for v in vals)  # statistics.stdev fails on NaN (Python 3.11)
            mean = statistics.fmean(vals) if finite else math.nan
            sd = (statistics.stdev(vals) if len(vals) > 1 else 0.0) if finite else math.nan
            entry["metrics"][k] = {"mean": mean, "sd": sd, "values": vals}
        target_keys = {t[0] for t in exp["targets"]}
        for k in keys:
            if k not in entry["metrics"]:
                continue
            m = entry["metrics"][k]
            tgt = [t for t in exp["targets"] if t[0] == k]
            if tgt:
                _, op, bound = tgt[0]
                ok = len(m["values"]) == len(args.seeds) and all(passes(v, op, bound) for v in m["values"])
                all_pass &= ok
                entry["targets"].append({"metric": k, "op": op, "bound": bound, "pass": ok})
                t_txt, p_txt = f"{op} {fmt(bound)}", ("**pass**" if ok else "**FAIL**")
            elif k in ("train_minutes", "final_step") or k not in target_keys:
                t_txt, p_txt = "", ""
            per_seed = ", ".join(fmt(v) for v in m["values"])
            paper = exp["paper"] if k == keys[0] else ""
            lines.append(f"| {exp['id'] if k == keys[0] else ''} | {k} | {fmt(m['mean'])} ± {fmt(m['sd'])} | "
                         f"{per_seed} | {t_txt} | {p_txt} | {paper} |")
        if recs:
            links = ", ".join(f"[s{r['seed']}]({r['report']}/)" if r["report"] else f"s{r['seed']}: from the cache"
                              for r in recs)
            lines.append(f"| | plots | {links} | | | | |")
        summary["experiments"].append(entry)
    summary["all_pass"] = all_pass
    lines += ["", f"All targets met: **{'yes' if all_pass else 'no'}**."]
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return all_pass


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", default="quick", choices=["quick", "paper"])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--presets", default="", help="comma-separated experiment ids (default: all; see --list)")
    ap.add_argument("--out", default=os.path.join(ROOT, "reproduce"))
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads per run (0: the trainer's default)")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "cli", "icl-cli"))
    ap.add_argument("--list", action="store_true", help="list the experiments and their targets")
    args = ap.parse_args()
    if args.list:
        for e in EXPERIMENTS:
            tg = ", ".join(f"{m} {op} {b}" for m, op, b in e["targets"])
            print(f"{e['id']:28s} preset {e['preset']} {' '.join(e.get('set', []))}  targets: {tg}")
        return 0
    try:
        args.seeds = [int(s) for s in args.seeds.split(",") if s != ""]
    except ValueError:
        ap.error(f"--seeds: expected comma-separated integers, got {args.seeds!r}")
    ids = [e["id"] for e in EXPERIMENTS]
    wanted = [p for p in args.presets.split(",") if p] or ids
    unknown = [p for p in wanted if p not in ids]
    if unknown:
        ap.error(f"--presets: unknown experiment {', '.join(unknown)} (known: {', '.join(ids)})")
    if not os.access(args.cli, os.X_OK):
        ap.error(f"{args.cli} not found: build first (scripts/build.sh) or pass --cli")
    args.out = os.path.abspath(args.out)
    for sub in ("runs", "logs", "results", "reports"):
        os.makedirs(os.path.join(args.out, sub), exist_ok=True)
    selected = [e for e in EXPERIMENTS if e["id"] in wanted]
    jobs = [(e, s) for e in selected for s in args.seeds]
    records, failures = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(one, args, e, s): (e["id"], s) for e, s in jobs}
        for fut in concurrent.futures.as_completed(futures):
            eid, s = futures[fut]
            try:
                rec = fut.result()
                records.append(rec)
                print(f"reproduce: {eid} seed {s}: " + ", ".join(f"{k} {fmt(v)}" for k, v in rec["metrics"].items()),
                      flush=True)
            except Exception as ex:  # one failed run must not lose the others' results
                failures.append(f"{eid} seed {s}: {ex}")
                print(f"reproduce: {eid} seed {s}: FAILED: {ex}", file=sys.stderr, flush=True)
    ok = summarise(args, records, selected)
    print(f"reproduce: wrote {os.path.join(args.out, 'summary.md')} and summary.json; all targets met: {ok}")
    for f in failures:
        print("reproduce: failed: " + f, file=sys.stderr)
    return 0 if ok and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
