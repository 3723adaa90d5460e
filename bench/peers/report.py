#!/usr/bin/python3
"""The peers' results as bench/README.md shows them: from the CSV files of
peers.py (one a configuration), the geomean of dgrad's time over each
peer's per suite (the batch files of bench/suites/full.txt), a table per
problem, and a gnuplot plot of the per-suite ratios.

Usage: report.py OUT.md OUT.png PEERS_CSV..."""
import csv
import math
import subprocess
import sys

LABELS = {"f32_nxc": "f32 NXC (channels-last)", "f32_ncx": "f32 NCX (NCHW)"}
PEERS = [("torch", "PyTorch"), ("ort", "ONNX Runtime")]


def geomean(values):
    v = [x for x in values if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else float("nan")


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for r in csv.DictReader(f):
                for k in list(r):
                    if k.endswith("_ms") or k.startswith("dgrad_over"):
                        r[k] = float(r[k])
                rows.append(r)
    return rows


def ordered(values):
    seen = []
    for v in values:
        if v not in seen:
            seen.append(v)
    return seen


def summary(rows):
    """{(config, suite): {peer: geomean, "n": count}} with suite "all"."""
    out = {}
    for config in ordered(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == config]
        for suite in ordered(r["suite"] for r in mine) + ["all"]:
            sel = [r for r in mine if suite in ("all", r["suite"])]
            out[(config, suite)] = {"n": len(sel)}
            for peer, _ in PEERS:
                out[(config, suite)][peer] = geomean([r["dgrad_over_" + peer] for r in sel])
    return out


def fmt(x, digits=3):
    return "" if not math.isfinite(x) else "%.*f" % (digits, x)


def fmt_ms(x):
    return "" if not math.isfinite(x) else "%.4g" % x


def markdown(rows, table):
    configs = ordered(r["config"] for r in rows)
    suites = ordered(r["suite"] for r in rows) + ["all"]
    lines = []
    head = ["suite", "problems"] + ["%s dgrad/%s" % (LABELS.get(c, c), name)
                                    for c in configs for _, name in PEERS]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| " + " | ".join(["---"] * len(head)) + " |")
    for suite in suites:
        n = table[(configs[0], suite)]["n"]
        cells = [("**%s**" % suite) if suite == "all" else "`%s`" % suite, str(n)]
        for c in configs:
            for peer, _ in PEERS:
                v = table.get((c, suite), {}).get(peer, float("nan"))
                cells.append(("**%s**" % fmt(v)) if v > 1 else fmt(v))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Geomean of dgrad's time over the peer's per suite (below 1: dgrad is "
                 "faster; above 1, in bold: the peer is).")
    for c in configs:
        lines.append("")
        lines.append("### %s, per problem (ms; ratios dgrad/peer)" % LABELS.get(c, c))
        lines.append("")
        lines.append("| problem | suite | dgrad | PyTorch | ONNX Runtime | ORT through Node | "
                     "dgrad/PyTorch | dgrad/ORT | PyTorch adaptation |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in rows:
            if r["config"] != c:
                continue
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["problem"], r["suite"], fmt_ms(r["dgrad_ms"]), fmt_ms(r["torch_ms"]),
                fmt_ms(r["ort_ms"]), fmt_ms(r["ort_node_ms"]),
                fmt(r["dgrad_over_torch"]), fmt(r["dgrad_over_ort"]),
                r["torch_adaptation"]))
    return "\n".join(lines) + "\n"


def plot(rows, table, png):
    """Clustered bars per suite: dgrad/peer for each configuration and
    peer, log scale, with the line of equal time."""
    configs = ordered(r["config"] for r in rows)
    suites = ordered(r["suite"] for r in rows) + ["all"]
    series = [(c, peer, "%s / %s" % (LABELS.get(c, c), name)) for c in configs for peer, name in PEERS]
    data = "\n".join(" ".join([s] + ["%.6g" % table[(c, s)][peer] if math.isfinite(table[(c, s)][peer])
                                     else "NaN" for c, peer, _ in series]) for s in suites)
    finite = [table[(c, s)][peer] for s in suites for c, peer, _ in series
              if math.isfinite(table[(c, s)][peer])] or [1]
    low, high = min(0.01, min(finite) / 1.5), max(2, max(finite) * 1.5)
    script = "\n".join([
        "set terminal pngcairo size 1200,560 font ',10'",
        "set output '%s'" % png,
        "set title 'dgrad time / peer time, geomean per suite (below 1: dgrad faster)'",
        "set style data histogram",
        "set style histogram clustered gap 1",
        "set style fill solid 0.85 border -1",
        "set logscale y",
        "set yrange [%g:%g]" % (low, high),
        "set ytics (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10)",
        "set grid ytics",
        "set xtics rotate by -30 noenhanced",
        "set key top left noenhanced",
        "set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'",
        "$data << EOD", data, "EOD",
        "plot " + ", ".join("$data using %d:xtic(1) title '%s'" % (i + 2, t)
                            for i, (_, _, t) in enumerate(series)),
    ])
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    md, png, paths = argv[0], argv[1], argv[2:]
    rows = load(paths)
    table = summary(rows)
    with open(md, "w") as f:
        f.write(markdown(rows, table))
    plot(rows, table, png)


if __name__ == "__main__":
    main(sys.argv[1:])
