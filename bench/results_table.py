#!/usr/bin/env python3
"""Markdown tables for bench/README.md from the outputs of bench/run-suites.sh:
a summary per configuration and one row per problem. Usage:
results_table.py DIR (the directory holding <config>.csv and <config>.txt)."""
import csv
import json
import math
import os
import re
import sys

CONFIGS = [
    ("f32_nxc", "f32 NXC/XIO, user weights"),
    ("f32_nxc_prepacked", "f32 NXC/XIO, `--constant-weights` vs `--raw-weights prepacked`"),
    ("f32_ncx", "f32 NCX/OIX"),
    ("f16_nxc", "f16 NXC/XIO (baseline: raw f32)"),
    ("f16_ncx", "f16 NCX/OIX (baseline: raw f32)"),
    ("bf16_nxc", "bf16 NXC/XIO"),
    ("bf16_ncx", "bf16 NCX/OIX"),
]

# A table row of `dgrad bench`: name, dgrad impl, ms, [min..max], raw impl,
# raw ms, ratio, added us (absent in tables written before it), GFLOP/s,
# roof%, compile, cached, mem, (f16/f32 or bf16/f32), (graph ms, dgrad/graph: builds on
# oneDNN 3), check.
ROW = re.compile(r"^(?P<name>\S+)\s+(?P<impl>\S+)\s+[\d.]+\s+\[[^\]]*\]"
                 r"\s+(?P<raw_impl>\S+)\s+(?P<raw_ms>\S+)\s+\S+(?:\s+\S+)?"
                 r"\s+(?P<gflops>[\d.]+)\s+(?P<roof>[\d.]+)\s+\S+"
                 r"\s+(?P<cached>[\d.]+)us\s+\S+(?:\s+(?P<vs_f32>[\d.]+))?"
                 r"(?:\s+(?:[\d.]+|n/a)\s+(?:[\d.]+|nan))?\s+(?:ok|FAIL|-)$")


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def depthwise(desc):
    g = re.search(r"(?:^|[^a-z])g(\d+)", desc)
    ic = re.search(r"ic(\d+)", desc)
    oc = re.search(r"oc(\d+)", desc)
    return bool(g and ic and oc and int(g.group(1)) > 1
                and g.group(1) == ic.group(1) == oc.group(1))


def load(directory, config):
    path_csv = os.path.join(directory, config + ".csv")
    path_txt = os.path.join(directory, config + ".txt")
    if not (os.path.exists(path_csv) and os.path.exists(path_txt)):
        return None
    numbers = list(csv.DictReader(open(path_csv)))
    rows = []
    for line in open(path_txt):
        m = ROW.match(line.rstrip())
        if not m:
            continue
        rows.append({
            "name": m["name"], "impl": m["impl"], "raw_impl": m["raw_impl"],
            "raw_ms": float(m["raw_ms"]) if m["raw_ms"] != "n/a" else float("nan"),
            "gflops": float(m["gflops"]), "roof": float(m["roof"]),
            "cached_us": float(m["cached"]),
            "vs_f32": float(m["vs_f32"]) if m["vs_f32"] else float("nan"),
        })
    if len(rows) != len(numbers):
        sys.exit("%s: %d table rows, %d CSV rows" % (config, len(rows), len(numbers)))
    # The CSV has more digits than the table.
    for r, n in zip(rows, numbers):
        r["dw"] = depthwise(n["problem"])
        # The table truncates names; the descriptor's n"name" is whole (no
        # descriptor key starts with n, so the first digit-n ends the shape).
        named = re.search(r"\dn(.+)$", n["problem"])
        if named:
            r["name"] = named.group(1).strip('"')
        # A baseline whose output was wrong (raw_wrong / graph_wrong, CSVs
        # from the arbiter on) is no comparison.
        r["ratio"] = (float("nan") if n.get("raw_wrong") == "1"
                      else float(n["ratio"]))
        r["gflops"] = float(n["gflops"])
        r["roof"] = float(n["roofline_pct"])
        r["roof_us"] = float(n.get("roofline_us", "nan"))
        r["graph"] = (float("nan") if n.get("graph_wrong") == "1"
                      else float(n["dgrad_ms"]) / float(n.get("graph_ms", "nan")))
        r["slower"] = r["ratio"] > 1.0
    return rows


def suite_table(directory, data):
    """dgrad/oneDNN Graph geomean per suite file and configuration (the
    suites of problems.jsonl, written by run-suites.sh)."""
    path = os.path.join(directory, "problems.jsonl")
    if not os.path.exists(path):
        return
    suites = [os.path.splitext(os.path.basename(json.loads(line)["file"]))[0]
              for line in open(path) if line.strip()]
    names = list(dict.fromkeys(suites))
    shown = [(c, label) for c, label in CONFIGS if data[c]]
    print()
    print("| suite | " + " | ".join(label for _, label in shown) + " |")
    print("| --- |" + " --- |" * len(shown))
    for name in names + ["all"]:
        cells = []
        for c, _ in shown:
            rows = data[c]
            g = [r["graph"] for r, s in zip(rows, suites)
                 if (name == "all" or s == name) and math.isfinite(r["graph"])]
            cells.append("%.3f (%d)" % (geomean(g), len(g)) if g else "")
        print("| %s | %s |" % (name, " | ".join(cells)))


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "bench/results"
    data = {c: load(directory, c) for c, _ in CONFIGS}
    graph = any(r for c, _ in CONFIGS for r in (data[c] or [])
                if math.isfinite(r["graph"]))
    print("| configuration | geomean dgrad/raw | same kernel as raw | "
          "same kernel, raw >= 20 us | depthwise | 16-bit/f32 | roofline geomean | "
          "roofline geomean, roofline >= 10 us | slower than raw | "
          "cached compile (largest median) |" + (" dgrad/oneDNN Graph |" if graph else ""))
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |" + (" --- |" if graph else ""))
    for c, label in CONFIGS:
        rows = data[c]
        if not rows:
            continue
        same = [r["ratio"] for r in rows if r["impl"] == r["raw_impl"]]
        big = [r["ratio"] for r in rows
               if r["impl"] == r["raw_impl"] and r["raw_ms"] >= 0.02]
        vs_f32 = geomean([r["vs_f32"] for r in rows])
        long = [r["roof"] / 100 for r in rows if r["roof_us"] >= 10]
        slower = [r for r in rows if r["slower"]]
        # beyond what runs of one plan vary between processes on a VM
        # (bench/README.md, eleventh look: the same kernel as raw at
        # 0.97-1.06x)
        clearly = [r for r in slower if r["ratio"] > 1.05]
        g = [r["graph"] for r in rows if math.isfinite(r["graph"])]
        print(("| %s | %.3f | %.3f (%d) | %.3f (%d) | %.3f (%d) | %s | %.1f%% | %.1f%% (%d) | %d (max %.2f), %d by > 5%% | %.1f µs |"
               + (" %.3f (%d) |" % (geomean(g), len(g)) if graph else "")) % (
            label, geomean([r["ratio"] for r in rows]), geomean(same), len(same),
            geomean(big), len(big),
            geomean([r["ratio"] for r in rows if r["dw"]]),
            sum(r["dw"] for r in rows), "" if math.isnan(vs_f32) else "%.3f" % vs_f32,
            100 * geomean([r["roof"] / 100 for r in rows]),
            100 * geomean(long), len(long), len(slower),
            max([r["ratio"] for r in slower] or [0.0]), len(clearly),
            max(r["cached_us"] for r in rows)))
    if graph:
        suite_table(directory, data)
    base = data["f32_nxc"]
    if not base:
        return
    print()
    print("| problem | dgrad kernel (f32 NXC) | raw kernel | NXC ratio | NXC prepacked | "
          "NCX ratio | f16/f32 | bf16 ratio | bf16/f32 | GFLOP/s | roof% |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    def col(config, i, key, fmt="%.2f"):
        rows = data.get(config)
        if not rows or math.isnan(rows[i][key]):
            return ""
        return fmt % rows[i][key]

    for i, r in enumerate(base):
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f | %.1f |" % (
            r["name"], r["impl"], r["raw_impl"], col("f32_nxc", i, "ratio"),
            col("f32_nxc_prepacked", i, "ratio"), col("f32_ncx", i, "ratio"),
            col("f16_nxc", i, "vs_f32"), col("bf16_nxc", i, "ratio"),
            col("bf16_nxc", i, "vs_f32"), r["gflops"], r["roof"]))


if __name__ == "__main__":
    main()
