"""ONNX Runtime's side of a run, from Python: writes each problem's model and
inputs to a work directory, runs ort_peer.js on all of them in one Node
process (onnxruntime-node from bench/peers/node_modules, installed by
install.sh: nothing is downloaded at run time), and returns the timings
and outputs."""
import json
import os
import subprocess

import numpy as np

import onnx_model

HERE = os.path.dirname(os.path.abspath(__file__))


def _write(path, array):
    np.ascontiguousarray(array, dtype=np.float32).tofile(path)


def prepare(work_dir, index, problem, x, w, layout, constant_weights):
    """Writes problem `index`'s model and inputs; returns its job entry."""
    model, x_dims, y_dims = onnx_model.build(problem, w, layout, constant_weights)
    stem = os.path.join(work_dir, "p%03d" % index)
    with open(stem + ".onnx", "wb") as f:
        f.write(model)
    data = np.moveaxis(x, 1, -1) if layout == "NXC" else x
    _write(stem + ".x.f32", data)
    inputs = [{"name": "X", "file": stem + ".x.f32", "dims": x_dims}]
    if not constant_weights:
        _write(stem + ".w.f32", w)
        inputs.append({"name": "W", "file": stem + ".w.f32", "dims": list(w.shape)})
    return {"id": index, "model": stem + ".onnx", "inputs": inputs,
            "output": {"name": "Y", "file": stem + ".y.f32", "dims": y_dims}}


def run(work_dir, entries, threads, timing):
    """Runs the job; returns {id: result line} (ms, min_ms, max_ms, reps,
    inner, or error)."""
    job = os.path.join(work_dir, "job.json")
    with open(job, "w") as f:
        json.dump({"threads": threads, "timing": timing, "problems": entries}, f)
    proc = subprocess.run(["node", os.path.join(HERE, "ort_peer.js"), job],
                          capture_output=True, text=True, cwd=HERE)
    results = {}
    for line in proc.stdout.splitlines():
        r = json.loads(line)
        results[r["id"]] = r
    if proc.returncode not in (0, 1) or len(results) != len(entries):
        raise RuntimeError("ort_peer.js failed (status %d): %s" % (proc.returncode, proc.stderr.strip()))
    return results


def output(entry, layout):
    """A problem's first output as a logical (N, C, X...) array."""
    y = np.fromfile(entry["output"]["file"], dtype=np.float32).reshape(entry["output"]["dims"])
    return np.moveaxis(y, -1, 1) if layout == "NXC" else y


def version():
    out = subprocess.run(["node", os.path.join(HERE, "ort_peer.js"), "--version"],
                         capture_output=True, text=True, check=True, cwd=HERE).stdout
    return json.loads(out)
