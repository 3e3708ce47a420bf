#!/usr/bin/env python3
"""Start-up timings of icl-cli and icl-workbench as whole processes: the median wall time of --repeat runs of each
command (after one untimed warm-up run, so that the page cache holds the libraries), against the targets of
docs/performance.md ("Start-up"). Prints a Markdown table; --json writes the numbers too.

    python3 scripts/bench-startup.py [--build build] [--repeat 9] [--json out.json]

The attention row is `analyze RUN attention` on Garg et al.'s 12-layer 8-head 256-wide GPT-2 (its initial weights:
the time is start-up, reading the checkpoint and one forward pass). Measure on an idle machine: the numbers are
seconds of wall time, which anything else running stretches.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

TARGETS = {"--version": 0.1, "info": 0.3, "analyze attention (12 × 8 × 256)": 1.0, "GUI window (--quit)": 1.5}


def timed(argv, env, repeat):
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm-up
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"bench-startup: {' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="build directory (default: build)")
    ap.add_argument("--repeat", type=int, default=9, help="timed runs per command (default: 9)")
    ap.add_argument("--json", help="also write the timings to this file")
    args = ap.parse_args()
    cli = os.path.join(args.build, "app", "cli", "icl-cli")
    gui = os.path.join(args.build, "app", "gui", "icl-workbench")
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as tmp:
        small = os.path.join(tmp, "small.h5")
        big = os.path.join(tmp, "gpt2-12x8x256.h5")
        for out, argv in ((small, ["--preset", "vonoswald-lsa-1layer"]),
                          (big, ["--preset", "garg-linear-regression", "--scale", "paper"])):
            subprocess.run([cli, "train", *argv, "--steps", "0", "--set", "eval.n_prompts=16", "--set",
                            "eval.bootstrap=0", "--out", out], env=env, check=True, stdout=subprocess.DEVNULL)
        rows = [("--version", [cli, "--version"]), ("--help", [cli, "--help"]), ("presets", [cli, "presets"]),
                ("config --list", [cli, "config", "--list"]), ("info", [cli, "info", small]),
                ("verify", [cli, "verify", small]), ("runtime (loads LibTorch)", [cli, "runtime"]),
                ("analyze attention (12 × 8 × 256)", [cli, "analyze", big, "attention", "--json"])]
        if os.path.exists(gui):
            rows.append(("GUI window (--quit)", [gui, "--quit"]))
        results = []
        print(f"| command | median s | min s | max s | target s |\n|---|---|---|---|---|")
        for name, argv in rows:
            t = timed(argv, env, args.repeat)
            target = TARGETS.get(name)
            results.append({"command": name, "median_s": statistics.median(t), "min_s": min(t), "max_s": max(t),
                            "target_s": target, "runs": len(t)})
            mark = "" if target is None else (f" {target}" + (" ✓" if statistics.median(t) <= target else " ✗"))
            print(f"| `{name}` | {statistics.median(t):.3f} | {min(t):.3f} | {max(t):.3f} |{mark} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"repeat": args.repeat, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
