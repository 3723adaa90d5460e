"""The problems to run, as `dgrad bench --list-problems` prints them: the
descriptor parser of dgrad is the only one (bench/desc.c)."""
import json
import os
import subprocess


def list_problems(dgrad, batch_files, descriptors=()):
    """Problems of the batch files and descriptors, in `dgrad bench`'s
    order, each a dict of the JSON keys (bench/README.md) plus `suite`: the
    batch file the problem was read from, without directory and .txt."""
    args = [dgrad, "bench", "--list-problems"]
    for path in batch_files:
        args += ["--batch", path]
    args += list(descriptors)
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    problems = [json.loads(line) for line in out.splitlines() if line.strip()]
    for p in problems:
        p["suite"] = os.path.splitext(os.path.basename(p["file"]))[0] if p["file"] else "command line"
    return problems
