"""The ONNX model ONNX Runtime runs for a problem, built with onnx.helper:
one ConvTranspose on NCX data. For NXC data, ONNX has no channels-last
ConvTranspose (and ONNX Runtime's CPU provider has no NHWC kernel for it:
its NHWC transformer converts only QLinearConv, fp16 Conv and pooling), so
a user holding NXC data runs Transpose -> ConvTranspose -> Transpose. The
weights are an initializer (a model's constant weights, which ONNX Runtime
may prepack at session creation) or, with variable weights, a second
input."""
import onnx
from onnx import TensorProto, helper, numpy_helper

from translate import onnx_attributes

OPSET = 17  # the newest opset of Debian 12's python3-onnx 1.12


def nxc_perms(rank):
    """Permutations NXC -> NCX and back for `rank` spatial axes."""
    to_ncx = [0, rank + 1] + list(range(1, rank + 1))
    to_nxc = [0] + list(range(2, rank + 2)) + [1]
    return to_ncx, to_nxc


def build(problem, w, layout, constant_weights):
    """The model (bytes) and its input and output names and dims: X is the
    data input in the user's layout, W the weights [Cin, Cout/G, K...] when
    they are an input, Y the output in the user's layout."""
    rank = problem["spatial_rank"]
    x_dims = [problem["mb"], problem["ic"]] + list(problem["i"])
    y_dims = [problem["mb"], problem["oc"]] + list(problem["o"])
    nodes, initializers = [], []
    inputs = []
    conv_in, conv_out = "X", "Y"
    if layout == "NXC":
        to_ncx, to_nxc = nxc_perms(rank)
        x_dims = [x_dims[i] for i in to_nxc]
        y_dims = [y_dims[i] for i in to_nxc]
        nodes.append(helper.make_node("Transpose", ["X"], ["X_ncx"], perm=to_ncx))
        conv_in, conv_out = "X_ncx", "Y_ncx"
    inputs.append(helper.make_tensor_value_info("X", TensorProto.FLOAT, x_dims))
    if constant_weights:
        initializers.append(numpy_helper.from_array(w, name="W"))
    else:
        inputs.append(helper.make_tensor_value_info("W", TensorProto.FLOAT, list(w.shape)))
    nodes.append(helper.make_node("ConvTranspose", [conv_in, "W"], [conv_out],
                                  **onnx_attributes(problem)))
    if layout == "NXC":
        nodes.append(helper.make_node("Transpose", ["Y_ncx"], ["Y"], perm=to_nxc))
    graph = helper.make_graph(nodes, "dgrad_peer", inputs,
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_dims)],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="dgrad bench/peers")
    model.ir_version = 8  # what ONNX Runtime reads for opset 17
    onnx.checker.check_model(model)
    return model.SerializeToString(), x_dims, y_dims


def version():
    return onnx.__version__
