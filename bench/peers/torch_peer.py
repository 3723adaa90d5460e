"""PyTorch as a user runs a transposed convolution: the functional
conv_transpose{1,2,3}d under torch.inference_mode, on the user's layout.

NCX: contiguous tensors. NXC: the data live channels-last; for 2D and 3D
that is torch.channels_last / channels_last_3d (the weights converted too,
once, as `model.to(memory_format=...)` does); for 1D PyTorch has no
channels-last format, so the NWC data are passed as a transposed (strided)
view. When PyTorch returns its output in another layout than the user's,
the conversion to the user's layout is part of the timed call (it is part
of what the user pays). A problem whose output PyTorch cannot produce
exactly (translate.torch_args) is computed larger and sliced: a view, no
copy."""
import numpy as np
import torch
import torch.nn.functional as F

from translate import torch_args


def configure(threads):
    """Threads of the run: intra-op as given, no inter-op parallelism."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


def channels_last_format(rank):
    return {2: torch.channels_last, 3: torch.channels_last_3d}.get(rank)


def to_user_layout(x, layout):
    """A logical (N, C, X...) numpy array as the user holds it: contiguous
    NCX, or NXC storage seen through a permuted (N, C, X...) view."""
    t = torch.from_numpy(np.ascontiguousarray(x))
    if layout == "NCX":
        return t
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(x, 1, -1))).movedim(-1, 1)


def is_user_layout(t, layout):
    if layout == "NCX":
        return t.is_contiguous()
    return t.movedim(1, -1).is_contiguous()


class TorchOp:
    """One problem ready to run: inputs in the user's layout, the call, the
    slice and, if needed, the conversion of the output to the user's
    layout."""

    def __init__(self, problem, x, w, layout):
        self.args = torch_args(problem)
        self.layout = layout
        self.function = getattr(F, self.args["function"])
        self.x = to_user_layout(x, layout)
        fmt = channels_last_format(problem["spatial_rank"])
        w = torch.from_numpy(np.ascontiguousarray(w))
        self.w = w.contiguous(memory_format=fmt) if layout == "NXC" and fmt else w
        self.window = (slice(None), slice(None)) + tuple(slice(a, b) for a, b in self.args["slices"])
        with torch.inference_mode():
            raw = self._conv()
        if list(raw.shape[2:]) != self.args["full_output"]:
            raise AssertionError("%s: PyTorch output %s, expected %s" % (
                problem["label"], list(raw.shape[2:]), self.args["full_output"]))
        # PyTorch may answer a channels-last input with a contiguous output.
        self.converts_output = not is_user_layout(raw, layout)

    def _conv(self):
        a = self.args
        return self.function(self.x, self.w, None, a["stride"], a["padding"],
                             a["output_padding"], a["groups"], a["dilation"])

    def run(self):
        """The timed call: convolution, layout conversion when PyTorch's
        output is not in the user's layout, slice (a view)."""
        with torch.inference_mode():
            y = self._conv()
            if self.converts_output:
                y = y.movedim(1, -1).contiguous().movedim(-1, 1) if self.layout == "NXC" else y.contiguous()
            return y[self.window]

    def output(self):
        """The output as a logical (N, C, X...) numpy array."""
        return self.run().numpy()


def version():
    return torch.__version__
