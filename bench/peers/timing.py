"""The timing rule of `dgrad bench` (bench/measure.c, time_interleaved) for
one participant, so that peers are timed exactly as dgrad is: `warmup`
executions (at least 1) give the time of one; a sample runs the op back to
back `inner = ceil(min_sample_ms / that time)` times (1 to 10000) and
records the time per execution; `reps` samples, fewer (at least 3) when
they would take longer than `max_problem_s`; the median, min and max.
ort_peer.js implements the same rule in JavaScript."""
import math
import time


def now_ms():
    return time.perf_counter() * 1e3  # CLOCK_MONOTONIC on Linux, as dgrad


def plan(per_execution_ms, reps, min_sample_ms, max_problem_s):
    """(inner, reps) for an op that took per_execution_ms in the warm-up."""
    inner = math.ceil(min_sample_ms / per_execution_ms) if per_execution_ms > 0 else 1000
    inner = min(max(inner, 1), 10000)
    per_round = per_execution_ms * inner
    budget_ms = max_problem_s * 1e3
    if per_round * reps > budget_ms:
        fit = int(budget_ms / per_round)
        reps = fit if fit >= 3 else min(reps, 3)
    return inner, reps


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def measure(run, warmup=3, reps=15, min_sample_ms=1.0, max_problem_s=20.0):
    """Times run() by the rule above; returns a dict of median/min/max in
    ms per execution, the samples taken and the executions per sample."""
    w = max(warmup, 1)
    t0 = now_ms()
    for _ in range(w):
        run()
    inner, reps = plan((now_ms() - t0) / w, reps, min_sample_ms, max_problem_s)
    samples = []
    for _ in range(reps):
        t0 = now_ms()
        for _ in range(inner):
            run()
        samples.append((now_ms() - t0) / inner)
    return {"ms": median(samples), "min_ms": min(samples), "max_ms": max(samples),
            "reps": reps, "inner": inner}
