#!/usr/bin/env python3
"""Writes the generated part of dgrad's committed conformance suites:

  vectors/edge_cases.json   vector cases with expected data
  graph/*.json              oneDNN Graph JSON graph files (benchdnn format)

The expected data come from a direct transposed convolution written here in
plain Python from ../shared/DESIGN.md section 1 (the gather, and each
dialect's rule for the crop at the beginning and the output size; oneDNN
Graph's inference op ConvTranspose, "onednn:ConvTranspose", from oneDNN
3.7.1's specification and its library's shape inference). It is a
third implementation, independent of the dialect layer (src/resolve.c, src/output_shape.c) and of the runner's
conformance model, and only used to author files: CI reads the committed
JSON. Run it from anywhere; it rewrites the files next to it.

    python3 conformance/suites/make_suites.py
"""
import itertools
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


ONEDNN_CT = "onednn:ConvTranspose"  # oneDNN Graph's ConvTranspose in dgrad


def floor_half(a):
    return a // 2  # Python floors toward minus infinity


def resolve(op, attrs, x_sp, k_sp, out_given, nsp):
    """(PB, Y) per axis, DESIGN.md section 1."""
    s = attrs.get("strides", [1] * nsp)
    d = attrs.get("dilations", [1] * nsp)
    opad = attrs.get("output_padding", [0] * nsp)
    if not any(opad):  # oneDNN's 12 zeros (or none): not given
        opad = [0] * nsp
    if op == "ConvTranspose":
        pads = attrs.get("pads", [0] * 2 * nsp)
        pb, pe = pads[:nsp], pads[nsp:]
    else:
        pb = attrs.get("pads_begin", [0] * nsp)
        pe = attrs.get("pads_end", [0] * nsp)
    ap = attrs.get("auto_pad", "explicit").lower()
    if ap in ("none", "notset"):
        ap = "explicit"
    PB, Y = [], []
    for i in range(nsp):
        F = s[i] * (x_sp[i] - 1) + (k_sp[i] - 1) * d[i] + 1
        if out_given is not None:
            y = out_given[i]
            total = F + opad[i] - y
            t = max(total, 0)
            if op == "ConvolutionBackwardData":
                # The output shape is always known for this op:
                # output_padding never changes the result.
                t = max(F - y, 0)
                if ap == "same_upper":
                    p = t // 2
                elif ap == "same_lower":
                    p = t - t // 2
                else:
                    b, e = (0, 0) if ap == "valid" else (pb[i], pe[i])
                    assert 0 <= y - (F - b - e) < s[i], "bad oneDNN output size"
                    p = b
            elif op == "ConvTranspose":
                p = floor_half(total) if ap == "same_upper" else total - floor_half(total)
            else:
                p = t - t // 2 if ap == "same_upper" else 0 if ap == "valid" else t // 2
        elif op == ONEDNN_CT:
            # Always inferred: SAME_* pads by the kernel's reach beyond one
            # stride, whatever the input size; output_padding is unbounded.
            if ap in ("same_upper", "same_lower"):
                total = max((k_sp[i] - 1) * d[i] + 1 - s[i], 0)
                p = total // 2 if ap == "same_upper" else total - total // 2
                y = F + opad[i] - total
            elif ap == "valid":
                p, y = 0, F + opad[i]
            else:
                p, y = pb[i], F - pb[i] - pe[i] + opad[i]
        else:
            if op == "ConvTranspose" and ap in ("same_upper", "same_lower"):
                y = x_sp[i] * s[i]
                total = F + opad[i] - y
                p = floor_half(total) if ap == "same_upper" else total - floor_half(total)
            elif ap == "explicit":
                p, y = pb[i], F - pb[i] - pe[i] + opad[i]
            else:
                p, y = 0, F + opad[i]
        PB.append(p)
        Y.append(y)
    return PB, Y, s, d


def transposed_conv(x, w, N, G, cin, cout, X, K, S, D, PB, Y, bias=None):
    """Canonical gather: x[n][ci][X...], w[g][ci_g][co_g][K...] (nested by
    flat index functions), returns out[n][co][Y...] flat row-major."""
    cin_g, cout_g = cin // G, cout // G
    nsp = len(X)
    out = []
    for n in range(N):
        for c in range(cout):
            g, co = divmod(c, cout_g)
            for y in itertools.product(*[range(v) for v in Y]):
                acc = bias[c] if bias else 0.0
                for k in itertools.product(*[range(v) for v in K]):
                    xs = []
                    for i in range(nsp):
                        t = y[i] + PB[i] - k[i] * D[i]
                        if t < 0 or t % S[i] or t // S[i] >= X[i]:
                            break
                        xs.append(t // S[i])
                    else:
                        for ci in range(cin_g):
                            acc += x(n, g * cin_g + ci, xs) * w(g, ci, co, k)
                out.append(float(acc))
    return out


def ints(count, seed, lo=-3, hi=3):
    """Deterministic small integers."""
    vals, state = [], seed
    for _ in range(count):
        state = (state * 1103515245 + 12345) % 2**31
        vals.append(float(lo + (state >> 8) % (hi - lo + 1)))
    return vals


def prod(v):
    r = 1
    for e in v:
        r *= e
    return r


def strides_of(dims):
    s, acc = [0] * len(dims), 1
    for i in reversed(range(len(dims))):
        s[i] = acc
        acc *= dims[i]
    return s


# Post-op chains: oneDNN Graph's element-wise ops, from oneDNN 3.7.1's
# operation specifications (doc/graph/operations/*.md), a third time (the
# dialect layer has src/post_ops.c and the reference, the runner's model
# model_post.c). Each applies to the output in the dialect's dims order.

def _softplus(x, beta=1.0):
    z = beta * x
    return (z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))) / beta


POST_UNARY = {
    "Abs": lambda x, a: abs(x),
    "Clamp": lambda x, a: min(max(x, a["min"]), a["max"]),
    "Elu": lambda x, a: x if x > 0 else a["alpha"] * (math.exp(x) - 1),
    "Exp": lambda x, a: math.exp(x),
    "GELU": lambda x, a: (0.5 * x * (1 + math.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
                          if a.get("mode") == "gelu_tanh" else 0.5 * x * (1 + math.erf(x / math.sqrt(2)))),
    "HardSigmoid": lambda x, a: max(0.0, min(1.0, a["alpha"] * x + a["beta"])),
    "HardSwish": lambda x, a: x * min(max(x + 3, 0.0), 6.0) / 6,
    "LeakyReLU": lambda x, a: x if x >= 0 else a["alpha"] * x,
    "Log": lambda x, a: math.log(x),
    "Mish": lambda x, a: x * math.tanh(_softplus(x)),
    "ReLU": lambda x, a: x if x > 0 else 0.0,
    "Round": lambda x, a: float(round(x)),  # Python rounds ties to even
    "Sigmoid": lambda x, a: 1 / (1 + math.exp(-x)),
    "SoftPlus": lambda x, a: _softplus(x, a.get("beta", 1.0)),
    "Sqrt": lambda x, a: math.sqrt(x),
    "Square": lambda x, a: x * x,
    "Tanh": lambda x, a: math.tanh(x),
}
POST_BINARY = {
    "Add": lambda x, b: x + b, "Multiply": lambda x, b: x * b,
    "Maximum": lambda x, b: max(x, b), "Minimum": lambda x, b: min(x, b),
    "Divide": lambda x, b: x / b, "Subtract": lambda x, b: x - b,
}


def post_op(kind, attrs=None, operand=None, dtype=None, strides=None):
    """A post-op of a vector case: operand is its shape (data generated)."""
    p = {"kind": kind}
    if attrs:
        p["attrs"] = attrs
    if operand is not None:
        p["operand"] = {"shape": operand}
        if dtype:
            p["operand"]["dtype"] = dtype
        if strides:
            p["operand"]["strides"] = strides
    return p


def post_operand_data(post_ops, seed):
    """Small integers for each operand (never 0 for a divisor)."""
    for i, p in enumerate(post_ops):
        o = p.get("operand")
        if o is not None and "data" not in o:
            vals = ints(prod(o["shape"]), seed + 7 + i)
            if p["kind"] == "Divide":
                vals = [v if v else 2.0 for v in vals]
            o["data"] = vals


def post_chain(post_ops, out, dims, nxc):
    """The chain over the flat canonical output [N][C][Y...]; dims in the
    dialect's order (NXC: the channels last)."""
    R = len(dims)
    N, C = dims[0], dims[-1] if nxc else dims[1]
    Y = dims[1:-1] if nxc else dims[2:]
    res, i = [], 0
    for n in range(N):
        for c in range(C):
            for y in itertools.product(*[range(v) for v in Y]):
                u = [n] + list(y) + [c] if nxc else [n, c] + list(y)
                x = out[i]
                i += 1
                for p in post_ops:
                    a, k = p.get("attrs", {}), p["kind"]
                    if k in POST_UNARY:
                        x = POST_UNARY[k](x, a)
                        continue
                    o = p["operand"]
                    shape, data = o["shape"], o["data"]
                    if k == "BiasAdd":  # its data_format names the axis
                        axis = R - 1 if a.get("data_format", "NXC") == "NXC" else 1
                        x += data[u[axis]]
                        continue
                    r, st = len(shape), strides_of(shape)
                    off = sum((0 if shape[q] == 1 else u[R - r + q]) * st[q] for q in range(r))
                    x = POST_BINARY[k](x, data[off])
                res.append(float(x))
    return res


def vector_case(name, op, attrs, data_shape, w_shape, output_shape=None,
                dst_shape_input=None, bias=False, seed=1, expect_error=None,
                comment=None, post_ops=None):
    """A vector case in the schema of ../shared/conformance/vectors."""
    nsp = len(data_shape) - 2
    graph_op = op in ("ConvolutionBackwardData", ONEDNN_CT)
    df = attrs.get("data_format", "NXC") if graph_op else "NCX"
    wf = attrs.get("weights_format", "XOI" if op == ONEDNN_CT else "XIO") if graph_op else "OIX"
    wf = {"XOI": "XIO", "IOX": "OIX"}.get(wf, wf)  # ConvTranspose's names, same shapes
    xd = ints(prod(data_shape), seed)
    wd = ints(prod(w_shape), seed + 1)
    case = {"name": name, "op": op, "dtype": "f32"}
    if comment:
        case["comment"] = comment
    schema_attrs = dict(attrs)
    if op == "ConvTranspose" and "pads" in schema_attrs:
        pads = schema_attrs.pop("pads")
        schema_attrs["pads_begin"], schema_attrs["pads_end"] = pads[:nsp], pads[nsp:]
    if op == "ConvTranspose" and "group" in schema_attrs:
        schema_attrs["groups"] = schema_attrs.pop("group")
    schema_attrs.pop("output_shape", None)  # the schema's own field
    if op == "ConvTranspose" and schema_attrs.get("auto_pad") == "NOTSET":
        schema_attrs["auto_pad"] = "explicit"
    if op == ONEDNN_CT and schema_attrs.get("auto_pad") == "None":
        schema_attrs["auto_pad"] = "explicit"
    case["attrs"] = schema_attrs
    case["diff_dst"] = {"shape": data_shape, "data": xd}
    case["weights"] = {"shape": w_shape, "data": wd}
    if op in ("ConvolutionBackpropData", "GroupConvolutionBackpropData", "ConvTranspose"):
        case["output_shape"] = output_shape
    if dst_shape_input is not None:
        case["dst_shape_input"] = dst_shape_input
    bd = None
    if bias:
        cout = w_shape[1] * attrs.get("group", 1)
        if op == ONEDNN_CT:
            cout = (w_shape[nsp] if wf == "XIO" else w_shape[1]) * attrs.get("groups", 1)
        bd = ints(cout, seed + 2)
        case["bias"] = {"shape": [cout], "data": bd}
    if post_ops is not None:
        post_operand_data(post_ops, seed)
        case["post_ops"] = post_ops
    if expect_error:
        case["expect_error"] = expect_error
        return case

    # Canonical view of the operands.
    if df == "NXC":
        N, cin, X = data_shape[0], data_shape[-1], data_shape[1:-1]
        xs = strides_of(data_shape)
        x = lambda n, c, sp: xd[n * xs[0] + c * xs[-1] + sum(sp[i] * xs[1 + i] for i in range(nsp))]
    else:
        N, cin, X = data_shape[0], data_shape[1], data_shape[2:]
        xs = strides_of(data_shape)
        x = lambda n, c, sp: xd[n * xs[0] + c * xs[1] + sum(sp[i] * xs[2 + i] for i in range(nsp))]
    ws = strides_of(w_shape)
    if op == "GroupConvolutionBackpropData":
        G, cout_g, K = w_shape[0], w_shape[2], w_shape[3:]
        w = lambda g, ci, co, k: wd[g * ws[0] + ci * ws[1] + co * ws[2] + sum(k[i] * ws[3 + i] for i in range(nsp))]
    else:
        G = attrs.get("groups", attrs.get("group", 1)) if op != "ConvolutionBackpropData" else 1
        cin_g = cin // G
        if wf == "XIO":
            K, cout_g = w_shape[:nsp], w_shape[nsp]
            w = lambda g, ci, co, k: wd[(g * cin_g + ci) * ws[-1] + co * ws[nsp] + sum(k[i] * ws[i] for i in range(nsp))]
        else:
            cout_g, K = w_shape[1], w_shape[2:]
            w = lambda g, ci, co, k: wd[(g * cin_g + ci) * ws[0] + co * ws[1] + sum(k[i] * ws[2 + i] for i in range(nsp))]
    cout = G * cout_g
    given = None
    full = dst_shape_input if dst_shape_input is not None else attrs.get("dst_shape")
    if op == "ConvolutionBackwardData" and full and any(full):
        given = full[1:-1] if df == "NXC" else full[2:]
    elif op != "ConvolutionBackwardData":
        given = output_shape if output_shape is not None else attrs.get("output_shape")
    PB, Y, S, D = resolve(op, attrs, X, K, given, nsp)
    out = transposed_conv(x, w, N, G, cin, cout, X, K, S, D, PB, Y, bd)
    shape = [N, cout] + Y
    if post_ops:
        out = post_chain(post_ops, out, [N] + Y + [cout] if df == "NXC" else shape,
                         df == "NXC")
    if df == "NXC":  # canonical [N][C][Y] -> [N][Y][C]
        ys = prod(Y)
        out = [out[(n * cout + c) * ys + p] for n in range(N) for p in range(ys) for c in range(cout)]
        shape = [N] + Y + [cout]
    case["expected"] = {"shape": shape, "data": out}
    return case


def write_vectors():
    C = []
    # ONNX: output larger than natural (negative total): SAME_UPPER gives
    # PB = floor(total/2) < 0 (the data shift right, zeros lead), NOTSET and
    # SAME_LOWER PB = total - floor(total/2).
    C.append(vector_case("onnx_output_larger_same_upper", "ConvTranspose",
        {"strides": [1, 1], "auto_pad": "SAME_UPPER", "output_shape": [8, 6]},
        [1, 1, 3, 3], [1, 2, 3, 3], output_shape=[8, 6], seed=11,
        comment="total = 5 - 8 = -3 on axis 0: PB = floor(-3/2) = -2 (negative crop)"))
    C.append(vector_case("onnx_output_larger_notset", "ConvTranspose",
        {"strides": [2, 1], "auto_pad": "NOTSET"},
        [1, 2, 2, 3], [2, 1, 2, 2], output_shape=[6, 7], seed=12,
        comment="total = 4 - 6 = -2: PB = -2 - floor(-1) = -1"))
    C.append(vector_case("onnx_same_lower_no_output_shape", "ConvTranspose",
        {"strides": [2, 3], "auto_pad": "SAME_LOWER", "dilations": [1, 2]},
        [1, 1, 3, 2], [1, 2, 3, 2], seed=13, comment="Y = X * S; PB = total - floor(total/2)"))
    C.append(vector_case("onnx_bias_group", "ConvTranspose",
        {"strides": [2], "group": 2, "pads": [1, 0], "output_padding": [1]},
        [2, 4, 3], [4, 3, 3], bias=True, seed=14))
    C.append(vector_case("onnx_kernel_larger_than_input_3d", "ConvTranspose",
        {"strides": [1, 2, 1], "dilations": [2, 1, 1], "pads": [0, 1, 0, 2, 0, 1]},
        [1, 2, 1, 2, 2], [2, 1, 3, 3, 4], seed=15))
    # OpenVINO: output_shape with explicit pads (the specification's rule:
    # pads ignored, PB = floor(total/2); OpenVINO's reference code would
    # keep pads_begin).
    C.append(vector_case("openvino_explicit_with_output_shape", "ConvolutionBackpropData",
        {"strides": [2, 2], "pads_begin": [3, 0], "pads_end": [0, 3], "auto_pad": "explicit"},
        [1, 2, 3, 3], [2, 1, 3, 3], output_shape=[5, 6], seed=21,
        comment="F = 7: totals 2 and 1 give PB 1 and 0; the pads are ignored"))
    C.append(vector_case("openvino_same_upper_odd_total", "ConvolutionBackpropData",
        {"strides": [1], "auto_pad": "same_upper"},
        [1, 1, 5], [1, 2, 4], output_shape=[5], seed=22,
        comment="F = 8, total 3: same_upper crops ceil(3/2) = 2 at the beginning"))
    C.append(vector_case("openvino_same_lower_odd_total", "ConvolutionBackpropData",
        {"strides": [1], "auto_pad": "same_lower"},
        [1, 1, 5], [1, 2, 4], output_shape=[5], seed=22,
        comment="same data: same_lower crops floor(3/2) = 1"))
    C.append(vector_case("openvino_output_shape_larger_valid", "GroupConvolutionBackpropData",
        {"strides": [1, 1], "auto_pad": "valid"},
        [1, 4, 2, 2], [2, 2, 1, 3, 3], output_shape=[6, 5], seed=23,
        comment="output larger than natural: trailing zeros"))
    C.append(vector_case("openvino_output_padding_stride_1", "GroupConvolutionBackpropData",
        {"strides": [1, 1], "pads_begin": [1, 1], "pads_end": [1, 1], "output_padding": [1, 0]},
        [1, 3, 3, 2], [3, 1, 1, 3, 3], seed=24,
        comment="OpenVINO sets no bound on output_padding (depthwise)"))
    # oneDNN Graph: the auto_pad example of the specification with data.
    C.append(vector_case("onednn_same_upper_pads_1_2", "ConvolutionBackwardData",
        {"strides": [1, 1], "auto_pad": "SAME_UPPER", "data_format": "NCX",
         "weights_format": "OIX", "dst_shape": [1, 1, 6, 6]},
        [1, 1, 6, 6], [1, 1, 4, 4], seed=31, comment="pads (1, 2): the adjoint of Convolution SAME_UPPER"))
    C.append(vector_case("onednn_same_lower_pads_2_1", "ConvolutionBackwardData",
        {"strides": [1, 1], "auto_pad": "SAME_LOWER", "data_format": "NCX",
         "weights_format": "OIX", "dst_shape": [1, 1, 6, 6]},
        [1, 1, 6, 6], [1, 1, 4, 4], seed=31))
    C.append(vector_case("onednn_valid_dst_9x9", "ConvolutionBackwardData",
        {"strides": [1, 1], "auto_pad": "VALID", "data_format": "NCX",
         "weights_format": "OIX", "dst_shape": [1, 1, 9, 9]},
        [1, 1, 6, 6], [1, 1, 4, 4], seed=31))
    C.append(vector_case("onednn_nxc_xio_groups_output_tail", "ConvolutionBackwardData",
        {"strides": [2, 2], "pads_begin": [1, 0], "pads_end": [0, 1], "groups": 2,
         "dst_shape": [2, 7, 4, 6]},
        [2, 3, 2, 4], [3, 2, 3, 4], seed=32,
        comment="NXC/XIO defaults; Y exceeds F - pads by 1 < stride (the output-padding tail)"))
    C.append(vector_case("onednn_dst_shape_input_wins", "ConvolutionBackwardData",
        {"strides": [2], "data_format": "NCX", "weights_format": "OIX",
         "dst_shape": [1, 2, 5]},
        [1, 1, 3], [1, 2, 2], dst_shape_input=[1, 2, 6], seed=33,
        comment="the attribute says 5, the input 6: the input wins"))
    C.append(vector_case("onednn_same_upper_output_padding", "ConvolutionBackwardData",
        {"strides": [3], "auto_pad": "SAME_UPPER", "output_padding": [2], "data_format": "NCX",
         "weights_format": "OIX", "dst_shape": [1, 1, 6]},
        [1, 1, 3], [1, 1, 2], seed=34,
        comment="total = max(F - Y, 0) = 7 - 6 = 1: PB 0; output_padding changes nothing"))
    C.append(vector_case("onednn_output_padding_equal_to_stride", "ConvolutionBackwardData",
        {"strides": [2, 2], "output_padding": [2, 2], "data_format": "NCX",
         "weights_format": "OIX", "dst_shape": [1, 2, 6, 6],
         "pads_begin": [0, 0], "pads_end": [0, 0]},
        [1, 3, 3, 3], [3, 2, 1, 1], seed=35,
        comment="benchdnn's harness runs output_padding 2 with stride 2: F = 5, Y = 6 "
                "(the stride tail), output_padding changes nothing"))
    C.append(vector_case("onednn_twelve_zero_lists", "ConvolutionBackwardData",
        {"strides": [2], "output_padding": [0] * 12, "data_format": "NCX",
         "weights_format": "OIX", "dst_shape": [0] * 12},
        [1, 2, 3], [2, 1, 3], dst_shape_input=[1, 1, 7], seed=36,
        comment="oneDNN writes unset lists as 12 zeros: not given"))
    # Cases that must be rejected.
    C.append(vector_case("onednn_no_output_shape", "ConvolutionBackwardData",
        {"strides": [1], "data_format": "NCX", "weights_format": "OIX"},
        [1, 1, 3], [1, 1, 2], expect_error="invalid_arguments"))
    C.append(vector_case("onednn_output_too_large_for_pads", "ConvolutionBackwardData",
        {"strides": [2], "data_format": "NCX", "weights_format": "OIX", "dst_shape": [1, 1, 8]},
        [1, 1, 3], [1, 1, 2], expect_error="invalid_shape"))
    C.append(vector_case("onnx_output_padding_not_below_stride", "ConvTranspose",
        {"strides": [2], "output_padding": [2]},
        [1, 1, 3], [1, 1, 2], expect_error="invalid_arguments"))
    C.append(vector_case("onnx_group_does_not_divide", "ConvTranspose",
        {"group": 2}, [1, 3, 3], [3, 1, 2], expect_error="invalid_arguments"))
    C.append(vector_case("openvino_channel_mismatch", "ConvolutionBackpropData",
        {"strides": [1]}, [1, 2, 3], [3, 1, 2], expect_error="invalid_shape"))
    C.append(vector_case("openvino_zero_stride", "ConvolutionBackpropData",
        {"strides": [0]}, [1, 1, 3], [1, 1, 2], expect_error="invalid_arguments"))
    # oneDNN Graph's ConvTranspose: the output shape is always inferred.
    C.append(vector_case("onednnct_nxc_xoi_groups_bias_output_padding", ONEDNN_CT,
        {"strides": [2, 2], "pads_begin": [1, 0], "pads_end": [0, 1], "groups": 2,
         "output_padding": [1, 3]},
        [2, 3, 2, 4], [3, 2, 3, 4], bias=True, seed=41,
        comment="NXC/XOI defaults; output_padding 3 beyond stride 2 (no bound): "
                "Y = F - pads + output_padding = (7 - 1 + 1, 4 - 1 + 3) = (7, 6)"))
    C.append(vector_case("onednnct_same_upper_odd_total", ONEDNN_CT,
        {"strides": [1], "auto_pad": "SAME_UPPER", "data_format": "NCX",
         "weights_format": "IOX"},
        [1, 2, 5], [2, 1, 4], seed=42,
        comment="total = K - S = 3: SAME_UPPER crops 1 at the beginning, Y = F - 3 = 5"))
    C.append(vector_case("onednnct_same_lower_odd_total", ONEDNN_CT,
        {"strides": [1], "auto_pad": "same_lower", "data_format": "NCX",
         "weights_format": "IOX"},
        [1, 2, 5], [2, 1, 4], seed=42,
        comment="same data: SAME_LOWER crops 2 at the beginning (any case)"))
    C.append(vector_case("onednnct_same_upper_dilated_output_padding", ONEDNN_CT,
        {"strides": [2, 3], "dilations": [2, 1], "auto_pad": "SAME_UPPER",
         "output_padding": [1, 0], "data_format": "NCX", "weights_format": "IOX"},
        [1, 3, 3, 2], [3, 2, 3, 2], seed=43,
        comment="totals max((K-1)*D+1 - S, 0) = 3 and 0 (the dilated kernel, not X): "
                "Y = (9 + 1 - 3, 5), ONNX would give X*S"))
    C.append(vector_case("onednnct_valid_output_padding_stride_1", ONEDNN_CT,
        {"strides": [1, 1], "auto_pad": "VALID", "output_padding": [2, 1],
         "pads_begin": [1, 1], "pads_end": [1, 1]},
        [1, 3, 3, 2], [2, 2, 1, 2], seed=44,
        comment="VALID ignores the pads; output_padding 2 with stride 1 adds 2 zero-fed rows"))
    C.append(vector_case("onednnct_twelve_zero_output_padding_3d", ONEDNN_CT,
        {"strides": [1, 2, 1], "pads_begin": [0, 1, 0], "pads_end": [1, 0, 0],
         "dilations": [1, 1, 2], "output_padding": [0] * 12, "data_format": "NCX",
         "weights_format": "IOX"},
        [1, 2, 2, 3, 2], [2, 2, 2, 2, 2], seed=45,
        comment="oneDNN writes an unset output_padding as 12 zeros: not given"))
    C.append(vector_case("onednnct_output_padding_length", ONEDNN_CT,
        {"strides": [2], "output_padding": [1, 1], "data_format": "NCX",
         "weights_format": "IOX"},
        [1, 1, 3], [1, 1, 2], expect_error="invalid_arguments"))
    C.append(vector_case("onednnct_weights_format_of_the_other_op", ONEDNN_CT,
        {"strides": [2], "data_format": "NCX", "weights_format": "OIX"},
        [1, 1, 3], [1, 1, 2], expect_error="invalid_arguments"))
    doc = {
        "source": "dgrad conformance/suites/make_suites.py",
        "license": "same as dgrad",
        "notes": "Edge cases found while building dgrad. Expected data from a direct "
                 "transposed convolution in make_suites.py (DESIGN.md section 1), "
                 "independent of src/ and of the runner's model.",
        "cases": C,
    }
    path = os.path.join(HERE, "vectors", "edge_cases.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def write_post_op_vectors():
    """Vector cases with post-op chains (vectors/post_ops.json)."""
    P = post_op
    C = []
    C.append(vector_case("onnx_bias_then_biasadd_ncx_relu", "ConvTranspose",
        {"strides": [2, 2]}, [1, 2, 3, 3], [2, 3, 2, 2], bias=True, seed=51,
        post_ops=[P("BiasAdd", {"data_format": "NCX"}, [3]), P("ReLU")],
        comment="the op's bias, then BiasAdd along NCX's channels, then ReLU"))
    C.append(vector_case("onnx_biasadd_default_nxc_is_the_last_axis", "ConvTranspose",
        {"strides": [2]}, [1, 2, 4], [2, 3, 3], seed=52,
        post_ops=[P("BiasAdd", None, [9]), P("Tanh")],
        comment="BiasAdd's default data_format NXC names the last axis: on ONNX's "
                "[N, C, Y] output that is Y (9 values), not the channels"))
    C.append(vector_case("onednn_nxc_biasadd_clamp_multiply_per_position", "ConvolutionBackwardData",
        {"strides": [2, 2], "dst_shape": [1, 6, 6, 5]}, [1, 3, 3, 4], [2, 2, 5, 4], seed=53,
        post_ops=[P("BiasAdd", None, [5]), P("Clamp", {"min": -4, "max": 6}),
                  P("Multiply", {"auto_broadcast": "numpy"}, [6, 6, 1])],
        comment="NXC/XIO defaults: BiasAdd on the channels (last), a per-position "
                "operand [Y, X, 1]"))
    C.append(vector_case("openvino_group_gelu_tanh_maximum_scalar_sigmoid", "GroupConvolutionBackpropData",
        {"strides": [1, 1]}, [1, 4, 3, 3], [2, 2, 3, 2, 2], seed=54,
        post_ops=[P("GELU", {"mode": "gelu_tanh"}), P("Maximum", None, [1]), P("Sigmoid")]))
    C.append(vector_case("openvino_elu_subtract_full_none_softplus", "ConvolutionBackpropData",
        {"strides": [1]}, [2, 3, 4], [3, 2, 3], seed=55,
        post_ops=[P("Elu", {"alpha": 0.5}),
                  P("Subtract", {"auto_broadcast": "none"}, [2, 2, 6]),
                  P("SoftPlus", {"beta": 2})]))
    C.append(vector_case("onednnct_nxc_xoi_bias_leaky_divide_per_channel_hardswish", ONEDNN_CT,
        {"strides": [2, 2]}, [1, 3, 3, 2], [2, 2, 3, 2], bias=True, seed=56,
        post_ops=[P("LeakyReLU", {"alpha": 0.25}), P("Divide", None, [3]), P("HardSwish")],
        comment="NXC: a per-channel operand is [C]"))
    C.append(vector_case("onnx_3d_square_halves_round_to_even_mish", "ConvTranspose",
        {"strides": [1, 1, 1]}, [1, 1, 2, 2, 2], [1, 2, 2, 2, 2], seed=57,
        post_ops=[P("Square"), dict(P("Divide", None, [1]), operand={"shape": [1], "data": [2.0]}),
                  P("Round"), P("Minimum", None, [3]), P("Mish")],
        comment="odd squares / 2 are ties: Round takes them to even"))
    C.append(vector_case("onednnct_hardsigmoid_exp_sqrt_log", ONEDNN_CT,
        {"strides": [1], "data_format": "NCX", "weights_format": "IOX"},
        [1, 2, 5], [2, 2, 3], seed=58,
        post_ops=[P("HardSigmoid", {"alpha": 0.2, "beta": 0.5}), P("Exp"), P("Sqrt"), P("Log")],
        comment="Log last: an f32 exp(0) a unit below 1 gives a tiny negative log, "
                "which a Sqrt after it would make NaN"))
    C.append(vector_case("onednn_ncx_add_bf16_operand_per_channel", "ConvolutionBackwardData",
        {"strides": [1, 1], "data_format": "NCX", "weights_format": "OIX",
         "dst_shape": [1, 3, 5, 5]}, [1, 2, 3, 3], [2, 3, 3, 3], seed=59,
        post_ops=[P("Add", None, [3, 1, 1], dtype="bf16"), P("Abs")],
        comment="an operand in its own type (bf16), whatever the op's"))
    C.append(vector_case("openvino_3d_abs_maximum_channel_long_form", "ConvolutionBackpropData",
        {"strides": [2, 2, 2]}, [1, 2, 2, 2, 2], [2, 3, 2, 2, 2], seed=60,
        post_ops=[P("Abs"), P("Maximum", {"auto_broadcast": "numpy"}, [1, 3, 1, 1, 1])]))
    # Chains oneDNN computed wrong before dgrad kept them from it (found by
    # the post-op sweeps; see operand_trusted in src/plan/post_pass.c).
    C.append(vector_case("mixed_operand_types_f32_then_f16", "ConvTranspose",
        {"strides": [3]}, [1, 2, 7], [2, 2, 1], seed=61,
        post_ops=[P("BiasAdd", None, [19], dtype="f32"), P("Divide", None, [2, 1], dtype="f16")],
        comment="an f16 operand after an f32 one in an f32 or bf16 op (oneDNN 2.6 "
                "read it in the wrong type: dgrad's loop runs it there)"))
    C.append(vector_case("bias_then_f16_scalar_operand", "ConvTranspose",
        {"strides": [2]}, [1, 2, 3], [2, 2, 2], bias=True, seed=62,
        post_ops=[P("Add", None, [1], dtype="f16")],
        comment="the op's bias and an f16 operand in an f32 op (the chain carried "
                "by the bias add; oneDNN 2.6 added the wrong value)"))
    C.append(vector_case("strided_operand_after_a_unary_op", "ConvTranspose",
        {"strides": [1]}, [1, 1, 3], [1, 4, 1], seed=63,
        post_ops=[P("Abs"), P("Divide", None, [1, 4, 1], strides=[12, 3, 1])],
        comment="a non-dense operand of a binary post-op after a unary one (oneDNN "
                "read it as dense: the gaps gave NaN)"))
    C.append(vector_case("nxc_full_operand_with_a_unit_axis", "ConvolutionBackwardData",
        {"strides": [1, 2], "dilations": [2, 2], "auto_pad": "SAME_UPPER", "groups": 3,
         "dst_shape": [1, 14, 1, 3]}, [1, 4, 1, 3], [6, 1, 1, 3], seed=64,
        post_ops=[P("Minimum", None, [1, 14, 1, 3])],
        comment="NXC output 1x14x1x3 with a full dense operand (oneDNN gave 13 of "
                "42 elements the wrong operand value)"))
    C.append(vector_case("per_channel_operand_after_a_unary_op_unit_axis",
        "GroupConvolutionBackpropData", {"strides": [2], "pads_begin": [2], "pads_end": [3]},
        [3, 2, 1], [2, 1, 1, 3], output_shape=[1], seed=65,
        post_ops=[P("ReLU"), P("Add", None, [2, 1])],
        comment="output 3x2x1 (N > 1, one position) with a per-channel operand "
                "after a unary op (oneDNN 2.6 and 3.7.1 added other channels' values)"))
    # Chains that must be rejected.
    C.append(vector_case("post_op_unknown_kind", "ConvTranspose", {"strides": [2]},
        [1, 1, 3], [1, 1, 2], post_ops=[P("Relu")], expect_error="invalid_arguments",
        comment="oneDNN Graph's name is ReLU"))
    C.append(vector_case("post_op_clamp_without_max", "ConvolutionBackpropData", {"strides": [2]},
        [1, 1, 3], [1, 1, 2], post_ops=[P("Clamp", {"min": 0})], expect_error="invalid_arguments"))
    C.append(vector_case("post_op_operand_does_not_broadcast", "ConvTranspose", {"strides": [2]},
        [1, 1, 3], [1, 1, 2], post_ops=[P("Add", None, [4])], expect_error="invalid_shape",
        comment="the output is [1, 1, 6]: 4 is neither 1 nor 6"))
    C.append(vector_case("post_op_add_without_operand", ONEDNN_CT,
        {"strides": [2], "data_format": "NCX", "weights_format": "IOX"},
        [1, 1, 3], [1, 1, 2], post_ops=[P("Add")], expect_error="invalid_arguments",
        comment="Add takes one more input: the op gets one too few"))
    C.append(vector_case("post_op_biasadd_wrong_length", "ConvolutionBackwardData",
        {"strides": [2], "data_format": "NCX", "weights_format": "OIX", "dst_shape": [1, 2, 6]},
        [1, 1, 3], [1, 2, 2], post_ops=[P("BiasAdd", {"data_format": "NCX"}, [3])],
        expect_error="invalid_shape"))
    C.append(vector_case("post_op_none_broadcast_per_channel", "GroupConvolutionBackpropData",
        {"strides": [2]}, [1, 2, 3], [2, 1, 1, 2],
        post_ops=[P("Multiply", {"auto_broadcast": "none"}, [1, 2, 1])],
        expect_error="invalid_shape", comment="none asks for the output's dims [1, 2, 6]"))
    C.append(vector_case("elu_negative_alpha", "ConvTranspose", {"strides": [2]},
        [1, 1, 3], [1, 1, 2], post_ops=[P("Elu", {"alpha": -1})],
        expect_error="invalid_arguments",
        comment="oneDNN Graph's Elu: alpha is a non-negative f32 value"))
    write_json(os.path.join(HERE, "vectors", "post_ops.json"), {
        "source": "dgrad conformance/suites/make_suites.py",
        "license": "same as dgrad",
        "notes": "Post-op chains (the post_ops field, conformance/README.md). Expected "
                 "data from make_suites.py's transposed convolution and its own chain "
                 "(oneDNN 3.7.1's operation specifications), independent of src/ and "
                 "of the runner's model.",
        "cases": C,
    }, indent=1)


def write_json(path, doc, indent):
    with open(path, "w") as f:
        json.dump(doc, f, indent=indent)
        f.write("\n")


def lt(tid, dtype, shape, stride=None, layout="strided", prop="variable"):
    return {"id": tid, "dtype": dtype, "shape": shape,
            "stride": stride if stride is not None else (strides_of(shape) if layout == "strided" else []),
            "layout_type": layout, "property_type": prop}


def a_list(v):
    return {"type": "s64[]", "value": v}


def a_str(v):
    return {"type": "string", "value": v}


def a_int(v):
    return {"type": "s64", "value": v}


def conv_op(oid, name, attrs, inputs, outputs, kind="ConvolutionBackwardData"):
    return {"id": oid, "name": name, "kind": kind,
            "attrs": attrs, "inputs": inputs, "outputs": outputs}


def ct_op(oid, name, attrs, inputs, outputs):
    """oneDNN Graph's ConvTranspose (dgrad's onednn:ConvTranspose)."""
    return conv_op(oid, name, attrs, inputs, outputs, kind="ConvTranspose")


def ct_out(attrs, data_shape, w_shape):
    """ConvTranspose's output dims by its rule (resolve above)."""
    nsp = len(data_shape) - 2
    plain = {k: v["value"] for k, v in attrs.items()}
    nxc = plain.get("data_format", "NXC") == "NXC"
    xoi = plain.get("weights_format", "XOI") == "XOI"
    X = data_shape[1:-1] if nxc else data_shape[2:]
    K = w_shape[:nsp] if xoi else w_shape[2:]
    cout = (w_shape[nsp] if xoi else w_shape[1]) * plain.get("groups", 1)
    _, Y, _, _ = resolve(ONEDNN_CT, plain, X, K, None, nsp)
    return [data_shape[0]] + Y + [cout] if nxc else [data_shape[0], cout] + Y


def graph(ops, inputs, outputs):
    return {"version": "3.0.0", "engine_kind": "cpu", "fpmath_mode": "strict",
            "input_ports": inputs, "output_ports": outputs, "graph": ops}


def write_graphs():
    G = {}
    G["nxc_xio_explicit_pads.json"] = graph([conv_op(0, "bwd_d_nxc_xio", {
        "strides": a_list([2, 2]), "pads_begin": a_list([1, 0]), "pads_end": a_list([0, 1]),
        "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
        "data_format": a_str("NXC"), "weights_format": a_str("XIO"),
        "dst_shape": a_list([2, 9, 10, 17])},
        [lt(0, "f32", [2, 4, 5, 16]), lt(1, "f32", [3, 3, 17, 16], prop="constant")],
        [lt(2, "f32", [2, 9, 10, 17])])], [0, 1], [2])
    G["ncx_oix_groups_dilations.json"] = graph([conv_op(0, "grouped", {
        "strides": a_list([1, 2]), "pads_begin": a_list([2, 1]), "pads_end": a_list([1, 2]),
        "dilations": a_list([2, 1]), "auto_pad": a_str("None"), "groups": a_int(2),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 6, 7, 7])},
        [lt(0, "f32", [1, 4, 6, 4]), lt(1, "f32", [4, 3, 3, 3])],
        [lt(2, "f32", [1, 6, 7, 7])])], [0, 1], [2])
    # The oneDNN Graph specification's auto_pad example.
    for ap, name in (("SAME_UPPER", "same_upper"), ("SAME_LOWER", "same_lower")):
        G["auto_pad_%s.json" % name] = graph([conv_op(0, name, {
            "strides": a_list([1, 1]), "pads_begin": a_list([0, 0]), "pads_end": a_list([0, 0]),
            "dilations": a_list([1, 1]), "auto_pad": a_str(ap), "groups": a_int(1),
            "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
            "dst_shape": a_list([1, 1, 6, 6])},
            [lt(0, "f32", [1, 1, 6, 6]), lt(1, "f32", [1, 1, 4, 4])],
            [lt(2, "f32", [1, 1, 6, 6])])], [0, 1], [2])
    G["auto_pad_valid.json"] = graph([conv_op(0, "valid", {
        "strides": a_list([1, 1]), "dilations": a_list([1, 1]), "auto_pad": a_str("VALID"),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 1, 9, 9])},
        [lt(0, "f32", [1, 1, 6, 6]), lt(1, "f32", [1, 1, 4, 4])],
        [lt(2, "f32", [1, 1, 9, 9])])], [0, 1], [2])
    G["output_padding.json"] = graph([conv_op(0, "output_padding", {
        "strides": a_list([3]), "pads_begin": a_list([1]), "pads_end": a_list([0]),
        "output_padding": a_list([2]), "dilations": a_list([1]), "auto_pad": a_str("None"),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([2, 3, 9])},
        [lt(0, "f32", [2, 5, 3]), lt(1, "f32", [5, 3, 2])],
        [lt(2, "f32", [2, 3, 9])])], [0, 1], [2])
    G["same_upper_output_padding.json"] = graph([conv_op(0, "same_upper_op", {
        "strides": a_list([2, 2]), "output_padding": a_list([1, 0]),
        "auto_pad": a_str("SAME_UPPER"), "data_format": a_str("NXC"),
        "weights_format": a_str("XIO"), "dst_shape": a_list([1, 5, 6, 3])},
        [lt(0, "f32", [1, 3, 3, 2]), lt(1, "f32", [3, 2, 3, 2])],
        [lt(2, "f32", [1, 5, 6, 3])])], [0, 1], [2])
    # oneDNN Graph reads the output shape from the output tensor when no
    # dst_shape is given (benchdnn's files rely on it).
    G["dst_shape_omitted.json"] = graph([conv_op(0, "no_dst_shape", {
        "strides": a_list([2, 2]), "pads_begin": a_list([1, 0]), "pads_end": a_list([0, 1]),
        "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "output_padding": a_list([0] * 12)},
        [lt(0, "f32", [1, 6, 4, 3]), lt(1, "f32", [6, 5, 3, 2], prop="constant")],
        [lt(2, "f32", [1, 5, 8, 6])])], [0, 1], [2])
    # oneDNN writes unset lists as 12 zeros (DNNL_MAX_NDIMS).
    G["dst_shape_12_zeros.json"] = graph([conv_op(0, "dst_shape_zeros", {
        "strides": a_list([2, 1]), "pads_begin": a_list([0, 0]), "pads_end": a_list([0, 0]),
        "dilations": a_list([1, 2]), "auto_pad": a_str("SAME_LOWER"), "groups": a_int(2),
        "data_format": a_str("NXC"), "weights_format": a_str("XIO"),
        "dst_shape": a_list([0] * 12), "output_padding": a_list([0] * 12)},
        [lt(0, "f32", [2, 3, 4, 4]), lt(1, "f32", [3, 2, 3, 4])],
        [lt(2, "f32", [2, 6, 4, 6])])], [0, 1], [2])
    # benchdnn's harness line --op-attrs=0:output_padding:2x2 on its
    # conv_bwd_d_2d.json (stride 2), smaller: output_padding changes nothing.
    G["output_padding_2x2_stride_2.json"] = graph([conv_op(0, "output_padding_2x2", {
        "strides": a_list([2, 2]), "pads_begin": a_list([0, 0]), "pads_end": a_list([0, 0]),
        "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 4, 10, 10]), "output_padding": a_list([2, 2])},
        [lt(0, "f32", [1, 8, 5, 5]), lt(1, "f32", [8, 4, 1, 1], prop="constant")],
        [lt(2, "f32", [1, 4, 10, 10])])], [0, 1], [2])
    G["dst_shape_input_s64.json"] = graph([conv_op(0, "dst_shape_input", {
        "strides": a_list([2, 2]), "pads_begin": a_list([0, 0]), "pads_end": a_list([0, 0]),
        "auto_pad": a_str("SAME_LOWER"), "data_format": a_str("NXC"), "weights_format": a_str("XIO"),
        "dst_shape": a_list([0] * 12)},
        [lt(0, "f32", [1, 4, 4, 3]), lt(1, "f32", [3, 3, 5, 3]), lt(3, "s64", [4])],
        [lt(2, "f32", [1, 8, 8, 5])])], [0, 1, 3], [2])
    G["dst_shape_input_s32_3d.json"] = graph([conv_op(0, "dst_shape_input_3d", {
        "strides": a_list([1, 2, 1]), "pads_begin": a_list([1, 0, 0]), "pads_end": a_list([0, 0, 1]),
        "dilations": a_list([1, 1, 2]), "auto_pad": a_str("None"), "groups": a_int(1),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "output_padding": a_list([0] * 12)},
        [lt(0, "f32", [1, 3, 2, 3, 3]), lt(1, "f32", [3, 2, 2, 2, 2]), lt(3, "s32", [5])],
        [lt(2, "f32", [1, 2, 2, 7, 4])])], [0, 1, 3], [2])
    # NCX dims with channels-last strides (as benchdnn writes them).
    G["channels_last_strides_3d.json"] = graph([conv_op(0, "channels_last", {
        "strides": a_list([1, 1, 1]), "pads_begin": a_list([1, 1, 1]), "pads_end": a_list([1, 1, 1]),
        "dilations": a_list([1, 1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 3, 4, 5, 5])},
        [lt(0, "f32", [1, 16, 4, 5, 5], [1600, 1, 400, 80, 16]), lt(1, "f32", [16, 3, 3, 3, 3])],
        [lt(2, "f32", [1, 3, 4, 5, 5], [300, 1, 75, 15, 3])])], [0, 1], [2])
    G["depthwise.json"] = graph([conv_op(0, "depthwise", {
        "strides": a_list([2, 2]), "pads_begin": a_list([1, 1]), "pads_end": a_list([1, 1]),
        "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(17),
        "data_format": a_str("NXC"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 7, 7, 17])},
        [lt(0, "f32", [1, 4, 4, 17]), lt(1, "f32", [17, 1, 3, 3], prop="constant")],
        [lt(2, "f32", [1, 7, 7, 17])])], [0, 1], [2])
    G["layout_any_1d.json"] = graph([conv_op(0, "layout_any", {
        "strides": a_list([2]), "pads_begin": a_list([0]), "pads_end": a_list([1]),
        "dilations": a_list([2]), "auto_pad": a_str("None"),
        "data_format": a_str("NCX"), "weights_format": a_str("XIO"),
        "dst_shape": a_list([3, 5, 12])},
        [lt(0, "f32", [3, 4, 5]), lt(1, "f32", [3, 5, 4], prop="constant")],
        [lt(2, "f32", [3, 5, 12], layout="any")])], [0, 1], [2])
    G["padded_strides.json"] = graph([conv_op(0, "padded", {
        "strides": a_list([2, 1]), "pads_begin": a_list([0, 1]), "pads_end": a_list([1, 0]),
        "auto_pad": a_str("None"), "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 3, 6, 4])},
        [lt(0, "f32", [1, 2, 3, 4], [40, 20, 6, 1]), lt(1, "f32", [2, 3, 2, 2])],
        [lt(2, "f32", [1, 3, 6, 4], [120, 40, 6, 1])])], [0, 1], [2])
    G["bf16_file.json"] = graph([conv_op(0, "bf16", {
        "strides": a_list([2, 2]), "pads_begin": a_list([1, 1]), "pads_end": a_list([1, 1]),
        "auto_pad": a_str("None"), "data_format": a_str("NXC"), "weights_format": a_str("XIO"),
        "dst_shape": a_list([1, 9, 9, 32])},
        [lt(0, "bf16", [1, 5, 5, 64]), lt(1, "bf16", [3, 3, 32, 64], prop="constant")],
        [lt(2, "bf16", [1, 9, 9, 32])])], [0, 1], [2])
    # A training graph: only the ConvolutionBackwardData ops run, the others
    # are skipped with their kind named.
    relu_bwd = {"id": 1, "name": "relu_bwd", "kind": "ReLUBackward", "attrs": {},
                "inputs": [lt(10, "f32", [1, 8, 4, 4]), lt(11, "f32", [1, 8, 4, 4])],
                "outputs": [lt(12, "f32", [1, 8, 4, 4])]}
    conv1 = conv_op(2, "conv1_bwd_d", {
        "strides": a_list([1, 1]), "pads_begin": a_list([1, 1]), "pads_end": a_list([1, 1]),
        "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 4, 4, 4])},
        [lt(12, "f32", [1, 8, 4, 4]), lt(13, "f32", [8, 4, 3, 3], prop="constant")],
        [lt(14, "f32", [1, 4, 4, 4])])
    bias_bwd = {"id": 3, "name": "bias_bwd", "kind": "BiasAddBackward",
                "attrs": {"data_format": a_str("NCX")},
                "inputs": [lt(12, "f32", [1, 8, 4, 4])], "outputs": [lt(15, "f32", [8])]}
    conv0 = conv_op(4, "conv0_bwd_d", {
        "strides": a_list([2, 2]), "pads_begin": a_list([0, 0]), "pads_end": a_list([0, 0]),
        "dilations": a_list([1, 1]), "auto_pad": a_str("SAME_UPPER"), "groups": a_int(2),
        "data_format": a_str("NCX"), "weights_format": a_str("OIX"),
        "dst_shape": a_list([1, 2, 8, 8])},
        [lt(14, "f32", [1, 4, 4, 4]), lt(16, "f32", [4, 1, 3, 3], prop="constant")],
        [lt(17, "f32", [1, 2, 8, 8])])
    G["training_graph.json"] = graph([relu_bwd, conv1, bias_bwd, conv0],
                                     [10, 11, 13, 16], [15, 17])
    # oneDNN Graph's ConvTranspose: the output dims follow its rule (they
    # only have to agree with it: it infers them).
    a = {"strides": a_list([2, 2]), "pads_begin": a_list([1, 0]), "pads_end": a_list([0, 1]),
         "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(2),
         "output_padding": a_list([1, 2]), "data_format": a_str("NXC"),
         "weights_format": a_str("XOI")}
    G["conv_transpose_nxc_xoi_bias.json"] = graph([ct_op(0, "ct_bias", a,
        [lt(0, "f32", [2, 3, 4, 6]), lt(1, "f32", [3, 2, 5, 6], prop="constant"),
         lt(3, "f32", [10])],
        [lt(2, "f32", ct_out(a, [2, 3, 4, 6], [3, 2, 5, 6]))])], [0, 1, 3], [2])
    a = {"strides": a_list([1, 2]), "pads_begin": a_list([0, 0]), "pads_end": a_list([0, 0]),
         "dilations": a_list([2, 1]), "auto_pad": a_str("SAME_LOWER"), "groups": a_int(1),
         "output_padding": a_list([0] * 12), "data_format": a_str("NCX"),
         "weights_format": a_str("IOX")}
    G["conv_transpose_ncx_iox_same_lower.json"] = graph([ct_op(0, "ct_same_lower", a,
        [lt(0, "f32", [1, 5, 4, 3]), lt(1, "f32", [5, 3, 3, 4])],
        [lt(2, "f32", ct_out(a, [1, 5, 4, 3], [5, 3, 3, 4]))])], [0, 1], [2])
    # Output dims unknown (-1) and layout any: ConvTranspose infers them.
    a = {"strides": a_list([3]), "pads_begin": a_list([2]), "pads_end": a_list([0]),
         "dilations": a_list([1]), "auto_pad": a_str("SAME_UPPER"), "groups": a_int(4),
         "data_format": a_str("NXC"), "weights_format": a_str("XOI")}
    G["conv_transpose_output_unknown.json"] = graph([
        ct_op(0, "ct_unknown_dims", a, [lt(0, "f32", [2, 5, 8]), lt(1, "f32", [4, 3, 8])],
              [lt(2, "f32", [-1, -1, -1], stride=[-1, -1, -1])]),
        ct_op(1, "ct_layout_any", a, [lt(0, "f32", [2, 5, 8]), lt(1, "f32", [4, 3, 8])],
              [lt(3, "f32", ct_out(a, [2, 5, 8], [4, 3, 8]), layout="any")])],
        [0, 1], [2, 3])
    # NCX dims with channels-last strides, VALID, 3D.
    a = {"strides": a_list([1, 2, 1]), "pads_begin": a_list([1, 1, 1]), "pads_end": a_list([1, 1, 1]),
         "dilations": a_list([1, 1, 1]), "auto_pad": a_str("VALID"), "groups": a_int(1),
         "data_format": a_str("NCX"), "weights_format": a_str("IOX")}
    out = ct_out(a, [1, 16, 3, 2, 2], [16, 3, 2, 2, 2])
    G["conv_transpose_channels_last_3d.json"] = graph([ct_op(0, "ct_channels_last", a,
        [lt(0, "f32", [1, 16, 3, 2, 2], [192, 1, 64, 32, 16]), lt(1, "f32", [16, 3, 2, 2, 2])],
        [lt(2, "f32", out, [out[1] * out[2] * out[3] * out[4], 1,
                            out[1] * out[3] * out[4], out[1] * out[4], out[1]])])], [0, 1], [2])
    # benchdnn's convtranspose post-ops patterns: the ConvTranspose runs,
    # its post-ops (BiasAdd, ReLU) are skipped with their kinds named.
    a = {"strides": a_list([2, 2]), "pads_begin": a_list([1, 1]), "pads_end": a_list([1, 1]),
         "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
         "output_padding": a_list([0] * 12), "data_format": a_str("NCX"),
         "weights_format": a_str("IOX")}
    out = ct_out(a, [1, 8, 3, 3], [8, 4, 3, 3])
    post_bias = {"id": 1, "name": "bias_add", "kind": "BiasAdd",
                 "attrs": {"data_format": a_str("NCX")},
                 "inputs": [lt(2, "f32", out), lt(3, "f32", [4])],
                 "outputs": [lt(4, "f32", out)]}
    post_relu = {"id": 2, "name": "relu", "kind": "ReLU", "attrs": {},
                 "inputs": [lt(4, "f32", out)], "outputs": [lt(5, "f32", out)]}
    G["conv_transpose_post_ops.json"] = graph([ct_op(0, "ct", a,
        [lt(0, "f32", [1, 8, 3, 3]), lt(1, "f32", [8, 4, 3, 3], prop="constant")],
        [lt(2, "f32", out)]), post_bias, post_relu], [0, 1, 3], [5])
    # Fused partitions as graph_partition makes them: a chain of three
    # (Clamp; Add taking the chain second, which it may; Multiply by a
    # per-position operand) after one ConvTranspose in NXC/XOI, and a
    # second ConvTranspose whose output two ops read, which takes no chain
    # (both are skipped).
    a = {"strides": a_list([2, 2]), "pads_begin": a_list([0, 1]), "pads_end": a_list([1, 0]),
         "dilations": a_list([1, 1]), "auto_pad": a_str("None"), "groups": a_int(1),
         "data_format": a_str("NXC"), "weights_format": a_str("XOI")}
    out = ct_out(a, [2, 3, 3, 4], [2, 3, 5, 4])
    clamp = {"id": 1, "name": "clamp", "kind": "Clamp",
             "attrs": {"min": {"type": "f32", "value": -2.5}, "max": {"type": "f32", "value": 6.0}},
             "inputs": [lt(2, "f32", out)], "outputs": [lt(3, "f32", out)]}
    add = {"id": 2, "name": "skip_add", "kind": "Add",
           "attrs": {"auto_broadcast": a_str("numpy")},
           "inputs": [lt(4, "f32", [out[-1]]), lt(3, "f32", out)], "outputs": [lt(5, "f32", out)]}
    mul = {"id": 3, "name": "scale", "kind": "Multiply", "attrs": {},
           "inputs": [lt(5, "f32", out), lt(6, "f32", out[1:3] + [1])],
           "outputs": [lt(7, "f32", out)]}
    b = dict(a, data_format=a_str("NCX"), weights_format=a_str("IOX"))
    out2 = ct_out(b, [1, 4, 2, 2], [4, 2, 2, 2])
    relu = {"id": 5, "name": "relu", "kind": "ReLU", "attrs": {},
            "inputs": [lt(11, "f32", out2)], "outputs": [lt(12, "f32", out2)]}
    tanh = {"id": 6, "name": "tanh", "kind": "Tanh", "attrs": {},
            "inputs": [lt(11, "f32", out2)], "outputs": [lt(13, "f32", out2)]}
    G["conv_transpose_chain_fused.json"] = graph([
        ct_op(0, "ct_chain", a, [lt(0, "f32", [2, 3, 3, 4]), lt(1, "f32", [2, 3, 5, 4], prop="constant")],
              [lt(2, "f32", out)]), clamp, add, mul,
        ct_op(4, "ct_two_readers", b, [lt(9, "f32", [1, 4, 2, 2]), lt(10, "f32", [4, 2, 2, 2])],
              [lt(11, "f32", out2)]), relu, tanh],
        [0, 1, 4, 6, 9, 10], [7, 12, 13])
    for name, doc in G.items():
        with open(os.path.join(HERE, "graph", name), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    os.makedirs(os.path.join(HERE, "vectors"), exist_ok=True)
    os.makedirs(os.path.join(HERE, "graph"), exist_ok=True)
    write_vectors()
    write_post_op_vectors()
    write_graphs()
