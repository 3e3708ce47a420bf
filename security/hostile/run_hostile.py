#!/usr/bin/python3
"""Runs icl-cli on every case of the hostile corpus (make_hostile.py) and checks what issue 46 asks of each:
no signal, no hang, no "internal error", no raw control bytes from the file on the terminal, no process over
2 GB, every victim file byte-identical, and a refusal (non-zero exit, one line on stderr) where one is due.

    /usr/bin/python3 security/hostile/run_hostile.py [--cli build/app/cli/icl-cli] [--work build/hostile]
                                                      [--only SUBSTRING] [--json results.json]

Set-up (in --work, reused while the executable is unchanged): a valid run (train --preset vonoswald-lsa-1layer
--steps 20, then analyze … gd-alignment so that it holds an analysis), its weights as .pt and .safetensors
(export-weights), then make_hostile.py. Each command runs in a fresh copy of its case folder (cp -a: symlinks and
FIFOs stay what they are) under a 60 s limit (the process group is killed: "hang") and an address-space limit
(--as-limit, default 8 GiB, as the issue's reproduction had), with the default memory budget (ICL_MAX_MEMORY unset).
Peak RSS is the kernel's account of the reaped child (wait4). Every file in the folder that the command was not asked
to write is compared (type, size, SHA-256, link target) before and after; a file the command stores its results in
("stores": eval's run) may change only when the command succeeds, and must then still pass icl-cli verify. Prints a table and a summary; exit status 0
only when every run passes.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RSS_LIMIT_MB = 2048
RAW = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")  # control bytes other than \t and \n (ESC, CR, BEL, …)


def parse_size(text):
    units = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    m = re.fullmatch(r"([0-9.]+)([KMGT]?)(i?B)?", text.strip())
    if not m:
        sys.exit(f"run_hostile: not a size: {text}")
    return int(float(m.group(1)) * units[m.group(2)])


def snapshot(folder, outputs):
    """{relative path: (type, size, sha256 or link target)} of everything under folder except the outputs."""
    result = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, folder)
            if any(rel == o or rel.startswith(o.rstrip("/") + "/") for o in outputs) or rel == "out":
                continue
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                result[rel] = ("link", 0, os.readlink(full))
            elif stat.S_ISREG(st.st_mode):
                h = hashlib.sha256()
                with open(full, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                result[rel] = ("file", st.st_size, h.hexdigest())
            elif stat.S_ISDIR(st.st_mode):
                result[rel] = ("dir", 0, "")
            else:
                result[rel] = ("special", 0, oct(stat.S_IFMT(st.st_mode)))
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
    return result


def snapshot_sizes_first(folder, outputs, before):
    """snapshot(), but a file whose size changed is not read (a forged journal can make a 64 GiB sparse file)."""
    for rel, (kind, size, _) in before.items():
        full = os.path.join(folder, rel)
        if kind == "file" and os.path.isfile(full) and not os.path.islink(full) and os.path.getsize(full) != size:
            after = {k: v for k, v in before.items()}
            after[rel] = ("file", os.path.getsize(full), "size changed")
            return after
    return snapshot(folder, outputs)


def describe_changes(before, after):
    changes = []
    for rel in sorted(set(before) | set(after)):
        b, a = before.get(rel), after.get(rel)
        if b == a:
            continue
        if a is None:
            changes.append(f"{rel} removed")
        elif b is None:
            changes.append(f"{rel} created")
        elif b[0] == "file" and a[0] == "file" and b[1] != a[1]:
            changes.append(f"{rel} {b[1]} -> {a[1]} bytes")
        else:
            changes.append(f"{rel} changed")
    return changes


def run_one(argv, cwd, timeout, as_limit, env):
    def limits():
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    out_path, err_path = os.path.join(cwd, ".stdout"), os.path.join(cwd, ".stderr")
    start = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                preexec_fn=limits)
        hung = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() - start > timeout:
                hung = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = 0  # reaped by wait4; keep Popen from waiting again
    wall = time.monotonic() - start
    with open(out_path, "rb") as f:
        stdout = f.read()
    with open(err_path, "rb") as f:
        stderr = f.read()
    os.remove(out_path)
    os.remove(err_path)
    return {"hung": hung, "status": status, "wall": wall, "rss_mb": usage.ru_maxrss / 1024.0, "stdout": stdout,
            "stderr": stderr}


def escaped_line(b, width=80):
    text = "".join(chr(c) if 0x20 <= c < 0x7f else f"\\x{c:02x}" for c in b)
    return text if len(text) <= width else text[:width - 1] + "…"


def setup(cli, work, env):
    """The valid run, its weights and the corpus, made once per executable (keyed by its size and mtime)."""
    st = os.stat(cli)
    key = f"{os.path.realpath(cli)} {st.st_size} {st.st_mtime_ns}"
    stamp = os.path.join(work, "setup.key")
    corpus = os.path.join(work, "corpus")
    if os.path.exists(stamp) and open(stamp).read() == key and os.path.exists(os.path.join(corpus, "cases.json")):
        return corpus
    shutil.rmtree(work, ignore_errors=True)
    victims = os.path.join(work, "victims")
    os.makedirs(victims)
    run = os.path.join(victims, "RUN.h5")
    for argv in ([cli, "train", "--preset", "vonoswald-lsa-1layer", "--steps", "20", "--out", run],
                 [cli, "analyze", run, "gd-alignment", "--prompts", "256"],
                 [cli, "export-weights", run, "--out", os.path.join(victims, "RUN.pt")],
                 [cli, "export-weights", run, "--out", os.path.join(victims, "RUN.safetensors")]):
        r = subprocess.run(argv, env=env, capture_output=True)
        if r.returncode != 0:
            sys.exit(f"run_hostile: set-up failed: {' '.join(argv)}\n{r.stderr.decode(errors='replace')}")
    subprocess.run([sys.executable, os.path.join(HERE, "make_hostile.py"), corpus, "--run", run, "--pt",
                    os.path.join(victims, "RUN.pt"), "--safetensors", os.path.join(victims, "RUN.safetensors"),
                    "--garg-run", os.path.join(ROOT, "tests", "data", "foreign", "garg_run")], check=True)
    with open(stamp, "w") as f:
        f.write(key)
    return corpus


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "app", "cli", "icl-cli"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "hostile"))
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--as-limit", default="8G", help="address-space limit of each command (default 8G)")
    ap.add_argument("--only", default="", help="run only the cases whose id contains this (or matches a glob)")
    ap.add_argument("--json", help="also write every run's result to this file")
    args = ap.parse_args()
    cli = os.path.abspath(args.cli)
    if not os.access(cli, os.X_OK):
        sys.exit(f"run_hostile: {cli} is not an executable (build icl-cli first)")
    env = {k: v for k, v in os.environ.items() if k != "ICL_MAX_MEMORY"}
    env["QT_QPA_PLATFORM"] = "offscreen"
    work = os.path.abspath(args.work)
    corpus = setup(cli, work, env)
    with open(os.path.join(corpus, "cases.json")) as f:
        cases = json.load(f)
    if args.only:
        cases = [c for c in cases if args.only in c["id"] or fnmatch.fnmatch(c["id"], args.only)]
    as_limit = parse_size(args.as_limit)
    scratch = os.path.join(work, "run")
    os.makedirs(scratch, exist_ok=True)
    results = []
    header = f"{'case':34} {'command':17} {'exit':>9} {'RSS MB':>7} {'s':>5}  problems / first line of stderr"
    print(header)
    print("-" * len(header))
    for c in cases:
        for cmd in c["commands"]:
            folder = os.path.join(scratch, c["id"])
            shutil.rmtree(folder, ignore_errors=True)
            subprocess.run(["cp", "-a", os.path.join(corpus, c["id"]), folder], check=True)
            os.makedirs(os.path.join(folder, "out"), exist_ok=True)
            outputs = cmd.get("outputs", [])
            before = snapshot(folder, outputs)
            stores = cmd.get("stores", [])
            verified_before = {rel: subprocess.run([cli, "verify", rel], cwd=folder, env=env,
                                                   capture_output=True).returncode == 0 for rel in stores}
            argv = [cli if a == "{cli}" else a for a in cmd["argv"]]
            r = run_one(argv, folder, args.timeout, as_limit, env)
            after = snapshot_sizes_first(folder, outputs, before)
            problems = []
            status = r["status"]
            if r["hung"]:
                exit_text = "HANG"
                problems.append(f"hang (killed after {args.timeout:.0f} s)")
            elif os.WIFSIGNALED(status):
                exit_text = signal.Signals(os.WTERMSIG(status)).name
                problems.append(f"signal {exit_text}")
            else:
                exit_text = str(os.WEXITSTATUS(status))
            both = r["stdout"] + r["stderr"]
            if b"internal error" in both:
                problems.append("internal error")
            if RAW.search(both):
                problems.append("raw control bytes")
            if r["rss_mb"] > RSS_LIMIT_MB:
                problems.append(f"RSS {r['rss_mb'] / 1024:.1f} GB")
            succeeded = not r["hung"] and not os.WIFSIGNALED(status) and os.WEXITSTATUS(status) == 0
            if succeeded and stores:
                # A store is a commit: the file may grow, and a file that verified before must verify after.
                for rel in stores:
                    size_before = before.get(rel, ("file", 0, ""))[1]
                    if os.path.getsize(os.path.join(folder, rel)) < size_before:
                        problems.append(f"{rel} shrank after the store")
                    v = subprocess.run([cli, "verify", rel], cwd=folder, env=env, capture_output=True)
                    if verified_before[rel] and v.returncode != 0:
                        problems.append(f"{rel} fails verify after the store: "
                                        + escaped_line(v.stderr.strip().split(b"\n")[-1], 60))
                before = {k: v for k, v in before.items() if k not in stores}
                after = {k: v for k, v in after.items() if k not in stores}
            changes = describe_changes(before, after)
            if changes:
                problems.append("victim changed: " + "; ".join(changes))
            for text in cmd.get("stderr_excludes", []):
                if text.encode() in r["stderr"]:
                    problems.append(f"stderr shows {text}")
            err_lines = [l for l in r["stderr"].split(b"\n") if l.strip()]
            if c["refuse"] and not r["hung"] and not os.WIFSIGNALED(status):
                if os.WEXITSTATUS(status) == 0:
                    problems.append("accepted")
                elif len(err_lines) != 1:
                    problems.append(f"{len(err_lines)} lines on stderr")
            first = escaped_line(err_lines[0] if err_lines else b"", 80)
            results.append({"case": c["id"], "class": c["class"], "command": cmd["name"], "exit": exit_text,
                            "rss_mb": round(r["rss_mb"], 1), "wall_s": round(r["wall"], 2), "problems": problems,
                            "stderr_first_line": first, "victims_changed": changes})
            shutil.rmtree(folder, ignore_errors=True)
            verdict = ("FAIL " + ", ".join(problems)) if problems else "ok"
            print(f"{c['id'][:34]:34} {cmd['name'][:17]:17} {exit_text:>9} {r['rss_mb']:7.0f} {r['wall']:5.1f}  "
                  f"{verdict}", flush=True)
            if first:
                print(f"{'':34} {'':17} {'':>9} {'':>7} {'':>5}    {first}", flush=True)
    failed = [r for r in results if r["problems"]]
    count = lambda pred: sum(1 for r in results if pred(r))  # noqa: E731
    print()
    print(f"runs: {len(results)} ({len(cases)} cases), passed: {len(results) - len(failed)}, failed: {len(failed)}")
    print(f"signals: {count(lambda r: any(p.startswith('signal') for p in r['problems']))}, "
          f"hangs: {count(lambda r: r['exit'] == 'HANG')}, "
          f"internal errors: {count(lambda r: 'internal error' in r['problems'])}, "
          f"raw control bytes: {count(lambda r: 'raw control bytes' in r['problems'])}, "
          f"over {RSS_LIMIT_MB} MB: {count(lambda r: r['rss_mb'] > RSS_LIMIT_MB)}, "
          f"max RSS: {max((r['rss_mb'] for r in results), default=0):.0f} MB, "
          f"victims changed: {count(lambda r: r['victims_changed'])}, "
          f"accepted: {count(lambda r: 'accepted' in r['problems'])}, "
          f"multi-line refusals: {count(lambda r: any(p.endswith('lines on stderr') for p in r['problems']))}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    shutil.rmtree(scratch, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
