#!/usr/bin/python3
"""dgrad against the runtimes a user would pick instead, in one run on the
same problems and threads: `dgrad bench` (its CSV), then ONNX Runtime
(onnxruntime-node, CPU) and PyTorch (Debian's python3-torch) on the
problems `dgrad bench --list-problems` prints, each checked against the
other and, where it is cheap, against the definition (reference.py).
Writes one CSV row per problem. bench/peers/run.sh runs it for each
configuration and then report.py; bench/README.md ("Peers") explains what
is measured.

Usage: peers.py --dgrad BIN --layout NXC|NCX --csv OUT [options] BATCH..."""
import argparse
import csv
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from problems import list_problems  # noqa: E402

TOLERANCE = 1e-4  # relative, f32: max |a - b| / max |reference|
# The definition is checked where numpy does it quickly: few steps (groups
# x taps), moderate work.
NAIVE_MAX_STEPS = 8192
NAIVE_MAX_MULTIPLY_ADDS = 5e9

COLUMNS = ["config", "suite", "problem", "descriptor", "dgrad_ms", "torch_ms",
           "ort_ms", "ort_session_ms", "ort_node_ms", "dgrad_over_torch", "dgrad_over_ort",
           "dgrad_over_ort_node", "torch_adaptation", "check"]


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("batch", nargs="+", help="batch files of `dgrad bench`")
    ap.add_argument("--dgrad", required=True, help="the dgrad command")
    ap.add_argument("--layout", choices=["NXC", "NCX"], required=True,
                    help="user layout of data and output (weights XIO with NXC, OIX with NCX)")
    ap.add_argument("--csv", required=True, help="the joined results of this configuration")
    ap.add_argument("--config", help="configuration name in the CSV (default f32_<layout>)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(),
                    help="threads of every participant (default: the CPUs, %(default)s)")
    ap.add_argument("--weights", choices=["constant", "variable"], default="constant",
                    help="constant: dgrad --constant-weights, ORT weights as an initializer "
                         "(a deployed model); variable: weights given with each call")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--min-sample-ms", type=float, default=1.0)
    ap.add_argument("--max-problem-s", type=float, default=20.0,
                    help="per participant and problem, as dgrad bench's option")
    ap.add_argument("--skip", default="",
                    help="regular expression: problems (labels) the peers do not run")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work-dir", help="models and tensors for ONNX Runtime (default: a temporary one)")
    ap.add_argument("--dgrad-arg", action="append", default=[],
                    help="extra option for dgrad bench (repeatable)")
    return ap.parse_args(argv)


def run_dgrad(args, csv_path):
    """dgrad bench on the batch files with the run's layout, threads and
    timing; returns its rows in order."""
    cmd = [args.dgrad, "bench", "-q", "--csv", csv_path,
           "--data-format", args.layout,
           "--weights-format", "XIO" if args.layout == "NXC" else "OIX",
           "--warmup", str(args.warmup), "--reps", str(args.reps),
           "--min-sample-ms", str(args.min_sample_ms),
           "--max-problem-s", str(args.max_problem_s),
           # The peaks of bench/run-suites.sh: no calibration (the
           # roofline is not used here).
           "--peak-gflops", "300", "--peak-gbs", "30"]
    if args.weights == "constant":
        cmd += ["--constant-weights", "--raw-weights", "prepacked"]
    cmd += args.dgrad_arg
    for path in args.batch:
        cmd += ["--batch", path]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("peers: " + " ".join(cmd), file=sys.stderr)
    table = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stderr.write(table.stdout)
    if table.returncode != 0:
        raise SystemExit("dgrad bench failed (status %d): %s" % (table.returncode, table.stderr))
    with open(csv_path) as f:
        return list(csv.DictReader(f))


def ratio(a, b):
    return a / b if a and b and math.isfinite(a) and math.isfinite(b) else float("nan")


def main(argv):
    args = parse_args(argv)
    # Thread counts are fixed before torch (and its BLAS) start.
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np  # noqa: F401  (after the thread settings)
    import ort_runner
    import reference
    import torch_peer

    torch_peer.configure(args.threads)
    problems = list_problems(args.dgrad, args.batch)
    config = args.config or "f32_" + args.layout.lower()
    skip = re.compile(args.skip) if args.skip else None
    timing = {"warmup": args.warmup, "reps": args.reps,
              "min_sample_ms": args.min_sample_ms, "max_problem_s": args.max_problem_s}
    constant = args.weights == "constant"

    with tempfile.TemporaryDirectory(prefix="dgrad-peers-") as tmp:
        work = args.work_dir or tmp
        os.makedirs(work, exist_ok=True)
        dgrad_rows = run_dgrad(args, os.path.join(tmp, "dgrad.csv"))
        if [r["problem"] for r in dgrad_rows] != [p["descriptor"] for p in problems]:
            raise SystemExit("dgrad bench's CSV and --list-problems disagree on the problems")

        # ONNX Runtime: every problem in one Node process.
        selected = [i for i, p in enumerate(problems) if not (skip and skip.search(p["label"]))]
        entries = {}
        for i in selected:
            x, w = reference.random_inputs(problems[i], args.seed + i)
            entries[i] = ort_runner.prepare(work, i, problems[i], x, w, args.layout, constant)
        print("peers: ONNX Runtime on %d problems" % len(selected), file=sys.stderr)
        ort = ort_runner.run(work, [entries[i] for i in selected], args.threads, timing)

        # PyTorch, then the checks, problem by problem.
        rows, failures = [], 0
        for i, p in enumerate(problems):
            row = {"config": config, "suite": p["suite"], "problem": p["label"],
                   "descriptor": p["descriptor"], "dgrad_ms": float(dgrad_rows[i]["dgrad_ms"]),
                   "torch_ms": float("nan"), "ort_ms": float("nan"), "ort_session_ms": float("nan"),
                   "ort_node_ms": float("nan"),
                   "torch_adaptation": "", "check": "skipped"}
            if i in entries:
                print("peers: [%d/%d] %s" % (i + 1, len(problems), p["label"]), file=sys.stderr)
                row.update(run_peers(p, args, i, entries[i], ort[i], timing, torch_peer,
                                     ort_runner, reference))
                failures += not row["check"].startswith("ok")
            row["dgrad_over_torch"] = ratio(row["dgrad_ms"], row["torch_ms"])
            row["dgrad_over_ort"] = ratio(row["dgrad_ms"], row["ort_ms"])
            row["dgrad_over_ort_node"] = ratio(row["dgrad_ms"], row["ort_node_ms"])
            rows.append(row)

    with open(args.csv, "w", newline="") as f:
        out = csv.DictWriter(f, COLUMNS)
        out.writeheader()
        for row in rows:
            out.writerow({k: ("%.6g" % v if isinstance(v, float) else v) for k, v in row.items()})
    print("peers: wrote %s (%d problems, %d failed)" % (args.csv, len(rows), failures), file=sys.stderr)
    return 1 if failures else 0


def run_peers(p, args, index, entry, ort, timing, torch_peer, ort_runner, reference):
    """PyTorch's timing, and the three-way check of one problem."""
    import timing as timing_rule
    x, w = reference.random_inputs(p, args.seed + index)
    result = {}
    problems_found = []
    if "error" in ort:
        problems_found.append("ONNX Runtime: " + ort["error"])
        ort_out = None
    else:
        # ONNX Runtime's time: its own per run (profiler), or session.run
        # through Node when that is less (the profiler's overhead shows on
        # microsecond problems): the smaller, in ONNX Runtime's favour.
        result["ort_ms"] = min(ort["session_ms"], ort["ms"])
        result["ort_session_ms"] = ort["session_ms"]
        result["ort_node_ms"] = ort["ms"]
        ort_out = ort_runner.output(entry, args.layout)
    op = torch_peer.TorchOp(p, x, w, args.layout)
    adaptation = []
    if op.args["needs_slice"]:
        adaptation.append("slice " + " ".join(
            "%s[%d:%d] of %d" % (axis, start, stop, full)
            for axis, (start, stop), full in zip(p["axes"], op.args["slices"], op.args["full_output"])
            if (start, stop) != (0, full)))
    if op.converts_output:
        adaptation.append("output converted to %s" % args.layout)
    result["torch_adaptation"] = "; ".join(adaptation)
    torch_out = op.output()
    if list(torch_out.shape) != [p["mb"], p["oc"]] + list(p["o"]):
        raise AssertionError("%s: PyTorch output %s" % (p["label"], list(torch_out.shape)))
    result["torch_ms"] = timing_rule.measure(op.run, **timing)["ms"]

    checks = []
    if ort_out is not None:
        e = reference.relative_error(ort_out, torch_out)
        checks.append("ort-torch %.1e" % e)
        if e > TOLERANCE:
            problems_found.append("ONNX Runtime and PyTorch differ: %.3g" % e)
    steps, multiply_adds = reference.naive_cost(p)
    if steps <= NAIVE_MAX_STEPS and multiply_adds <= NAIVE_MAX_MULTIPLY_ADDS:
        want = reference.naive_transposed_conv(p, x, w)
        for name, got in (("torch", torch_out), ("ort", ort_out)):
            if got is None:
                continue
            e = reference.relative_error(got, want)
            checks.append("%s-definition %.1e" % (name, e))
            if e > TOLERANCE:
                problems_found.append("%s differs from the definition: %.3g" % (name, e))
    if problems_found:
        print("peers: %s: %s" % (p["label"], "; ".join(problems_found)), file=sys.stderr)
        result["check"] = "FAIL: " + "; ".join(problems_found)
    else:
        result["check"] = "ok (" + "; ".join(checks) + ")"
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
