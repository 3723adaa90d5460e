"""The peers' inputs and an independent check of their outputs: random
values exact in f32 products and sums, the transposed convolution computed
directly from its definition (numpy only), and the comparison rule."""
import numpy as np

from translate import shapes


def random_inputs(problem, seed):
    """Data input (N, C, spatial...) and weights [Cin, Cout/G, K...], f32
    multiples of 1/32 in [-1, 1] (as dgrad bench's): products and sums of
    moderate length are exact, so agreeing peers agree closely."""
    rng = np.random.default_rng(seed)
    sh = shapes(problem)

    def values(shape):
        return (rng.integers(-32, 33, size=shape, dtype=np.int32) / np.float32(32)).astype(np.float32)
    return values(sh["input"]), values(sh["weights"])


def naive_transposed_conv(problem, x, w):
    """dgrad's output from the definition: each input position x and tap k
    adds x * w to the output position s*x + dilation*k - p when it lies in
    [0, o). Loops over groups and taps; each step is one product over
    channels for every input position at once (float64)."""
    rank = problem["spatial_rank"]
    g = problem["g"]
    icg, ocg = problem["ic"] // g, problem["oc"] // g
    natural = problem["natural"]
    full = np.zeros([problem["mb"], problem["oc"]] + list(natural), dtype=np.float64)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    for group in range(g):
        xs = x64[:, group * icg:(group + 1) * icg]
        ws = w64[group * icg:(group + 1) * icg]
        for tap in np.ndindex(*problem["k"]):
            # Output positions s*x + dilation*k along every axis.
            where = tuple(slice(problem["dilation"][a] * tap[a],
                                problem["dilation"][a] * tap[a] + problem["s"][a] * (problem["i"][a] - 1) + 1,
                                problem["s"][a]) for a in range(rank))
            contribution = np.tensordot(xs, ws[(slice(None), slice(None)) + tap], axes=([1], [0]))
            # tensordot puts the output channel last: move it to axis 1.
            full[(slice(None), slice(group * ocg, (group + 1) * ocg)) + where] += np.moveaxis(contribution, -1, 1)
    out = np.zeros([problem["mb"], problem["oc"]] + list(problem["o"]), dtype=np.float64)
    # Crop by the begin pad; positions past the natural size stay zero.
    take = tuple(slice(0, min(problem["o"][a], natural[a] - problem["p"][a])) for a in range(rank))
    src = tuple(slice(problem["p"][a], problem["p"][a] + take[a].stop) for a in range(rank))
    out[(slice(None), slice(None)) + take] = full[(slice(None), slice(None)) + src]
    return out


def naive_cost(problem):
    """Numpy steps and multiply-adds of naive_transposed_conv: it is run on
    the problems where it takes well under a second."""
    steps = problem["g"] * int(np.prod(problem["k"]))
    return steps, problem["flops"] / 2


def relative_error(got, want):
    """max |got - want| / max |want| (1 when want is all zero and got is
    not): the comparison of whole outputs the peers must pass."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise ValueError("shape %s, expected %s" % (got.shape, want.shape))
    scale = np.abs(want).max() if want.size else 0.0
    diff = np.abs(got - want).max() if want.size else 0.0
    return diff / scale if scale > 0 else (0.0 if diff == 0 else 1.0)
