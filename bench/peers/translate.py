"""One `dgrad bench` problem in the terms of each peer: the arguments of
PyTorch's conv_transpose{1,2,3}d and the attributes of an ONNX
ConvTranspose node. Pure arithmetic on the sizes `dgrad bench
--list-problems` printed (no descriptor is parsed here, and neither torch
nor onnx is imported), so the tests run it anywhere.

Per axis, dgrad's output is the natural output `natural = s*(i-1) +
(k-1)*dilation + 1` cropped by the begin pad p and the end pad
`pad_end = natural - p - o`, which is negative when the output extends past
the natural size (output padding: those positions receive no term)."""


class Untranslatable(Exception):
    """The problem cannot be expressed in the peer's terms without a copy."""


def torch_axis(p, pad_end, stride, dilation):
    """(padding, output_padding, slice_start) of one axis for PyTorch, whose
    padding crops both ends by the same amount and whose output_padding
    (below max(stride, dilation)) extends the end. The peer's output, sliced
    from slice_start for o positions, is dgrad's output: the slice is a view
    (no copy), at the end of the peer's output whenever slice_start > 0."""
    bound = max(stride, dilation)  # output_padding < bound
    extra = p - pad_end  # how much longer the end is than PyTorch's symmetric crop
    if 0 <= extra < bound:
        return p, extra, 0  # exact: symmetric pads plus output padding
    if extra < 0:
        # The end is cropped more than the beginning: crop both by p and
        # drop the last -extra positions with the slice.
        return p, 0, 0
    # Output padding beyond the bound: crop `start` less at both ends (the
    # largest output padding makes `start` smallest) and slice the first
    # `start` positions away.
    start = extra - (bound - 1)
    if start > p:
        raise Untranslatable(
            "end pad %d with begin pad %d needs output padding %d, more than "
            "PyTorch's max(stride, dilation) - 1 = %d plus the begin pad"
            % (pad_end, p, extra, bound - 1))
    return p - start, bound - 1, start


def torch_output_size(i, k, stride, padding, output_padding, dilation):
    """PyTorch's documented output size of a transposed convolution axis."""
    return (i - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1


def torch_args(problem):
    """Keyword arguments of torch.nn.functional.conv_transpose{N}d and the
    per-axis slices (start, stop) that give dgrad's output; `needs_slice`
    when some axis is not an exact mapping."""
    padding, output_padding, slices = [], [], []
    for a in range(problem["spatial_rank"]):
        pad, out_pad, start = torch_axis(problem["p"][a], problem["pad_end"][a],
                                         problem["s"][a], problem["dilation"][a])
        full = torch_output_size(problem["i"][a], problem["k"][a], problem["s"][a],
                                 pad, out_pad, problem["dilation"][a])
        stop = start + problem["o"][a]
        assert 0 <= start and stop <= full, (problem["label"], a, start, stop, full)
        padding.append(pad)
        output_padding.append(out_pad)
        slices.append((start, stop, full))
    return {
        "function": "conv_transpose%dd" % problem["spatial_rank"],
        "stride": list(problem["s"]),
        "padding": padding,
        "output_padding": output_padding,
        "groups": problem["g"],
        "dilation": list(problem["dilation"]),
        "slices": [(start, stop) for start, stop, _ in slices],
        "full_output": [full for _, _, full in slices],
        "needs_slice": any(start != 0 or stop != full for start, stop, full in slices),
    }


def onnx_attributes(problem):
    """Attributes of ONNX ConvTranspose for the problem: explicit begin and
    end pads, and output_padding for a negative end pad. ONNX's output size
    per axis is `s*(i-1) + output_padding + (k-1)*dilation + 1 - pad_begin
    - pad_end`, dgrad's exactly."""
    rank = problem["spatial_rank"]
    pad_end = problem["pad_end"]
    return {
        "kernel_shape": list(problem["k"]),
        "strides": list(problem["s"]),
        "dilations": list(problem["dilation"]),
        "group": problem["g"],
        "pads": list(problem["p"]) + [max(e, 0) for e in pad_end],
        "output_padding": [max(-e, 0) for e in pad_end][:rank],
    }


def onnx_output_size(i, k, stride, dilation, pad_begin, pad_end, output_padding):
    """The ONNX specification's output size of ConvTranspose with explicit
    pads."""
    return stride * (i - 1) + output_padding + (k - 1) * dilation + 1 - pad_begin - pad_end


def shapes(problem):
    """Logical (N, C, spatial...) shapes of data input, weights (ONNX's and
    PyTorch's [Cin, Cout/G, K...]) and output."""
    return {
        "input": [problem["mb"], problem["ic"]] + list(problem["i"]),
        "weights": [problem["ic"], problem["oc"] // problem["g"]] + list(problem["k"]),
        "output": [problem["mb"], problem["oc"]] + list(problem["o"]),
    }
