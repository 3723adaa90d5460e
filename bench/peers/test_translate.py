#!/usr/bin/python3
"""The peers' translation of `dgrad bench` problems (translate.py), checked
against the sizes `dgrad bench --list-problems` derives, without PyTorch,
ONNX or ONNX Runtime: every output size and crop must be dgrad's exactly.
When numpy, torch, onnx and bench/peers/node_modules are all present, a
tiny end-to-end run of peers.py follows (both peers checked against each
other and the definition).

Usage: test_translate.py DGRAD (the dgrad command). Exit status 0 when
everything holds."""
import csv
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import translate  # noqa: E402
from problems import list_problems  # noqa: E402

# Each case: a descriptor, and what the translation must be on it.
CASES = [
    # DCGAN-style k4 s2 p1: symmetric, exact for both peers.
    ("mb2ic8ih4oc4oh8kh4sh2ph1n\"symmetric\"",
     {"padding": [1, 1], "output_padding": [0, 0], "slices": [(0, 8), (0, 8)],
      "pads": [1, 1, 1, 1], "onnx_output_padding": [0, 0]}),
    # ENet k3 s2 p1 with output padding 1 (end pad -1 + ... = 0 vs begin 1).
    ("mb1ic4ih5oc2oh10kh3sh2ph1n\"output_padding\"",
     {"padding": [1, 1], "output_padding": [1, 1], "slices": [(0, 10), (0, 10)],
      "pads": [1, 1, 0, 0], "onnx_output_padding": [0, 0]}),
    # Output past the natural size (end pad -1): ONNX output_padding.
    ("mb1ic2iw6oc2ow14kw3sw2pw0n\"past_natural_1d\"",
     {"padding": [0], "output_padding": [1], "slices": [(0, 14)],
      "pads": [0, 0], "onnx_output_padding": [1]}),
    # End cropped more than the beginning: PyTorch slices the end away.
    ("mb1ic2ih5oc3oh3kh3ph1n\"slice_end\"",
     {"padding": [1, 1], "output_padding": [0, 0], "slices": [(0, 3), (0, 3)],
      "pads": [1, 1, 3, 3], "onnx_output_padding": [0, 0]}),
    # Stride 1, end pad below the begin pad by more than PyTorch's output
    # padding allows (benchdnn's deconv_ci_2d:gemm shape): slice the start.
    ("mb1ic2ih5oc2oh4kh3ph3n\"slice_start\"",
     {"padding": [0, 0], "output_padding": [0, 0], "slices": [(3, 7), (3, 7)],
      "pads": [3, 3, 0, 0], "onnx_output_padding": [0, 0]}),
    # Dilated and grouped, asymmetric per axis, 2D.
    ("g2mb1ic4ih5iw6oc6oh11ow13kh3kw4sh2sw2ph1pw0dh1dw0n\"dilated_grouped\"",
     {"padding": [1, 0], "output_padding": [0, 0], "slices": [(0, 11), (0, 13)],
      "dilation": [2, 1], "groups": 2, "pads": [1, 0, 1, 1], "onnx_output_padding": [0, 0]}),
    # 3D, depthwise.
    ("g3mb1ic3id4oc3od8kd4sd2pd1n\"depthwise_3d\"",
     {"padding": [1, 1, 1], "output_padding": [0, 0, 0], "slices": [(0, 8)] * 3,
      "groups": 3, "pads": [1] * 6, "onnx_output_padding": [0, 0, 0]}),
]


class Failures:
    def __init__(self):
        self.count = 0

    def check(self, condition, message):
        if not condition:
            self.count += 1
            print("FAIL: " + message)


def check_problem(p, want, f):
    name = p["label"]
    rank = p["spatial_rank"]
    t = translate.torch_args(p)
    o = translate.onnx_attributes(p)
    f.check(t["function"] == "conv_transpose%dd" % rank, "%s: function %s" % (name, t["function"]))
    for key in ("padding", "output_padding", "slices"):
        f.check([tuple(v) if isinstance(v, (list, tuple)) else v for v in t[key]] == want[key],
                "%s: torch %s %s, expected %s" % (name, key, t[key], want[key]))
    f.check(o["pads"] == want["pads"], "%s: onnx pads %s, expected %s" % (name, o["pads"], want["pads"]))
    f.check(o["output_padding"] == want["onnx_output_padding"],
            "%s: onnx output_padding %s, expected %s" % (name, o["output_padding"], want["onnx_output_padding"]))
    f.check(t["dilation"] == want.get("dilation", [1] * rank) == o["dilations"],
            "%s: dilation torch %s onnx %s" % (name, t["dilation"], o["dilations"]))
    f.check(t["groups"] == want.get("groups", 1) == o["group"], "%s: groups" % name)
    f.check(o["kernel_shape"] == p["k"] and o["strides"] == p["s"] == t["stride"],
            "%s: kernel or strides" % name)
    # The rules, on every axis, against dgrad's derived sizes.
    for a in range(rank):
        i, k, s, d = p["i"][a], p["k"][a], p["s"][a], p["dilation"][a]
        full = translate.torch_output_size(i, k, s, t["padding"][a], t["output_padding"][a], d)
        start, stop = t["slices"][a]
        f.check(full == t["full_output"][a], "%s axis %d: full output %d vs %d" % (name, a, full, t["full_output"][a]))
        f.check(0 <= start and stop <= full and stop - start == p["o"][a],
                "%s axis %d: slice %d:%d of %d for output %d" % (name, a, start, stop, full, p["o"][a]))
        # PyTorch's output starts `padding` into the natural output; the
        # slice must start where dgrad's does (its begin pad p).
        f.check(t["padding"][a] + start == p["p"][a],
                "%s axis %d: PyTorch crop %d + slice %d != begin pad %d" % (name, a, t["padding"][a], start, p["p"][a]))
        f.check(t["padding"][a] >= 0 and 0 <= t["output_padding"][a] < max(s, d),
                "%s axis %d: PyTorch rejects padding %d, output_padding %d" % (name, a, t["padding"][a], t["output_padding"][a]))
        size = translate.onnx_output_size(i, k, s, d, o["pads"][a], o["pads"][rank + a], o["output_padding"][a])
        f.check(size == p["o"][a], "%s axis %d: ONNX output %d, dgrad %d" % (name, a, size, p["o"][a]))
        f.check(o["pads"][a] == p["p"][a] and min(o["pads"]) >= 0, "%s axis %d: ONNX pads %s" % (name, a, o["pads"]))
    f.check(t["needs_slice"] == any(sl != (0, full) for sl, full in zip(t["slices"], t["full_output"])),
            "%s: needs_slice" % name)


def end_to_end(dgrad, descriptors, f):
    have = all(importlib.util.find_spec(m) for m in ("numpy", "torch", "onnx"))
    have = have and os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node"))
    if not have:
        print("end-to-end: skipped (needs python3-numpy, python3-torch, python3-onnx and "
              "bench/peers/install.sh)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        batch = os.path.join(tmp, "tiny.txt")
        with open(batch, "w") as out:
            out.write("\n".join(descriptors) + "\n")
        for layout in ("NXC", "NCX"):
            result = os.path.join(tmp, "peers.csv")
            run = subprocess.run([sys.executable, os.path.join(HERE, "peers.py"), "--dgrad", dgrad,
                                  "--layout", layout, "--csv", result, "--reps", "1", "--warmup", "1",
                                  "--min-sample-ms", "0.01", batch], capture_output=True, text=True)
            f.check(run.returncode == 0, "peers.py %s: status %d\n%s" % (layout, run.returncode, run.stderr[-3000:]))
            if run.returncode == 0:
                rows = list(csv.DictReader(open(result)))
                f.check(len(rows) == len(descriptors), "peers.py %s: %d rows" % (layout, len(rows)))
                for r in rows:
                    f.check(r["check"].startswith("ok") and "definition" in r["check"],
                            "peers.py %s %s: %s" % (layout, r["problem"], r["check"]))
        print("end-to-end: peers.py ran %d problems in NXC and NCX" % len(descriptors))


def main(argv):
    if len(argv) != 1:
        sys.exit(__doc__)
    dgrad = argv[0]
    problems = list_problems(dgrad, [], [d for d, _ in CASES])
    f = Failures()
    f.check(len(problems) == len(CASES), "%d problems listed" % len(problems))
    for p, (_, want) in zip(problems, CASES):
        check_problem(p, want, f)
    end_to_end(dgrad, [d for d, _ in CASES], f)
    print("%d cases, %d failures" % (len(CASES), f.count))
    return 1 if f.count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
