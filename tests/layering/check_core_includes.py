#!/usr/bin/env python3
"""Checks that core's folders include one another in one order (docs/architecture.md, "Core's folders").

A file in core/A may include core/B only when B is A or stands below A in LEVELS. Prints one line
"FILE:LINE: core/A includes core/B (INCLUDE): B stands above A" per include that runs against the order, and one
for a file in a folder LEVELS does not place; exits 1 if there is any. Standard library only.

Usage: check_core_includes.py [REPO_ROOT]      (default: the repository this script lives in)
       check_core_includes.py --self-test      (a wrong include in a scratch tree must be reported)
"""
import os
import re
import sys
import tempfile

# Bottom first. error.h and version.h sit beside types; report.{h,cpp} (core/report.*) is the top.
LEVELS = ["types", "runtime", "io", "tasks", "models", "baselines", "metrics", "training", "analysis", "report"]
ROOT_FILES = {"error": "types", "version": "types", "report": "report"}
INCLUDE = re.compile(r'^\s*#\s*include\s*["<](core/[^">]+)[">]')
SOURCES = (".h", ".hpp", ".cpp", ".cc", ".h.in")


def folder_of(path):
    """core-relative folder of `path` ("core/models/lsa.h" -> "models", "core/error.h" -> "types"), or None."""
    parts = path.split("/")
    if len(parts) < 2 or parts[0] != "core":
        return None
    if len(parts) == 2:
        return ROOT_FILES.get(parts[1].split(".")[0])
    return parts[1]


def check(root):
    problems = []
    core = os.path.join(root, "core")
    for dirpath, _, names in os.walk(core):
        for name in sorted(names):
            if not name.endswith(SOURCES):
                continue
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            here = folder_of(rel)
            if here not in LEVELS:
                problems.append(f"{rel}:1: core/{here or name} is not placed in the order {' <- '.join(LEVELS)} "
                                f"(add it to LEVELS in tests/layering/check_core_includes.py and to docs/architecture.md)")
                continue
            with open(full, encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    there = folder_of(m.group(1))
                    if there == here:
                        continue
                    if there not in LEVELS:
                        problems.append(f"{rel}:{number}: includes {m.group(1)}, in a folder the order does not place")
                    elif LEVELS.index(there) > LEVELS.index(here):
                        problems.append(f"{rel}:{number}: core/{here} includes core/{there} ({m.group(1)}): "
                                        f"{there} stands above {here} in {' <- '.join(LEVELS)}")
    return problems


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "core", "models"))
        os.makedirs(os.path.join(root, "core", "training"))
        with open(os.path.join(root, "core", "models", "good.h"), "w") as f:
            f.write('#include "core/error.h"\n#include "core/tasks/linear_regression.h"\n')
        with open(os.path.join(root, "core", "models", "bad.cpp"), "w") as f:
            f.write('#include "core/models/good.h"\n\n#include "core/training/trainer.h"\n')
        with open(os.path.join(root, "core", "training", "trainer.h"), "w") as f:
            f.write('#include "core/models/good.h"\n')
        problems = check(root)
    expected = ["core/models/bad.cpp:3: core/models includes core/training (core/training/trainer.h): "
                "training stands above models in " + " <- ".join(LEVELS)]
    if problems != expected:
        print("self-test failed: expected", expected, "got", problems)
        return 1
    print("self-test: the wrong include was reported:", problems[0])
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) in core run against the order (docs/architecture.md, \"Core's folders\")")
        return 1
    print("core's includes keep the order " + " <- ".join(LEVELS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
