/*
 * Sweeps: generated cases over the core matrix below, and invalid cases
 * that must be rejected with the right status.
 *
 * The core matrix (dialect (5) x rank x groups {1, 2, depthwise} x stride
 * {1, 2, 3} x dilation {1, 2}) is enumerated in full, once for quick and
 * twelve times for full. Every other knob (asymmetric pads, output_padding
 * (for oneDNN Graph's ConvolutionBackwardData also beyond the stride, where
 * it changes nothing; for its ConvTranspose beyond the stride too, where
 * it adds to the output), auto_pad and its spelling, output shape none
 * (for oneDNN Graph's ConvolutionBackwardData: the output dims alone) /
 * attribute / input / input with dims unknown at compile, oneDNN's
 * 12-zero list defaults, NCX/NXC/channels-last strides/padded layouts,
 * OIX/XIO (XOI/IOX), s32/s64 shape inputs, constant weights, bias, output
 * dims known, partly known or unknown, layout any,
 * batch, channel counts with vector tails, kernels larger than the input)
 * rotates across the cases through a per-knob scramble, so each value
 * meets many combinations of the others. Sizes stay small: quick runs in a
 * few minutes on 2 cores under the sanitizers.
 *
 * A second pass over the matrix (without its dilation axis) adds a
 * post-op chain to each case, and invalid chains follow the invalid
 * cases (sweep_chain.c).
 *
 * The generator only states the op; the expected result comes from the
 * conformance model (model.c) and the reference.
 */
#include <stdio.h>
#include <string.h>

#include "sweep.h"

#define knob cf_sweep_knob

int cf_sweep_knob(unsigned j, unsigned salt, int n) {
    unsigned h = (j + salt * 7919u) * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (int)(h % (unsigned)n);
}

/* The fifth dialect comes last, so that the quick sweep's first four
 * dialects keep their case numbers (names in reports and --filter). */
static const dgrad_op_kind_t kinds[] = {
        dgrad_op_convolution_backward_data, dgrad_op_convolution_backprop_data,
        dgrad_op_group_convolution_backprop_data, dgrad_op_conv_transpose,
        dgrad_op_onednn_conv_transpose};
#define N_KINDS (sizeof kinds / sizeof kinds[0])

static const char *short_kind(dgrad_op_kind_t k) {
    switch (k) {
        case dgrad_op_convolution_backward_data: return "onednn";
        case dgrad_op_convolution_backprop_data: return "ov";
        case dgrad_op_group_convolution_backprop_data: return "ovgroup";
        case dgrad_op_onednn_conv_transpose: return "onednnct";
        default: return "onnx";
    }
}

enum { SHAPE_NONE, SHAPE_ATTR, SHAPE_INPUT, SHAPE_DEFERRED };
enum { AP_EXPLICIT, AP_SAME_UPPER, AP_SAME_LOWER, AP_VALID };
enum { LAYOUT_DENSE, LAYOUT_CHANNELS_LAST, LAYOUT_PADDED };

/* The spelling of auto_pad in each dialect (alt: another accepted case). */
static const char *auto_pad_text(dgrad_op_kind_t k, int ap, int alt) {
    static const char *const onednn[] = {"None", "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const char *const onednn_alt[] = {"explicit", "same_upper", "Same_Lower", "valid"};
    static const char *const ov[] = {"explicit", "same_upper", "same_lower", "valid"};
    static const char *const ov_alt[] = {"notset", "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const char *const onnx[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const char *const onnx_alt[] = {"notset", "same_upper", "same_lower", "valid"};
    /* ConvTranspose: oneDNN's four values, in any case (no "explicit"). */
    static const char *const onednnct_alt[] = {"NONE", "same_upper", "Same_Lower", "valid"};
    if (k == dgrad_op_convolution_backward_data) return alt ? onednn_alt[ap] : onednn[ap];
    if (k == dgrad_op_onednn_conv_transpose) return alt ? onednnct_alt[ap] : onednn[ap];
    if (k == dgrad_op_conv_transpose) return alt ? onnx_alt[ap] : onnx[ap];
    return alt ? ov_alt[ap] : ov[ap];
}

/* Strides for @p dims laid out in physical order @p phys (outermost
 * first); @p pad adds a gap after each innermost run. */
static void layout_strides(const int64_t *dims, int nd, const int *phys,
        int pad, int64_t *strides) {
    int64_t acc = 1;
    for (int k = nd - 1; k >= 0; k--) {
        strides[phys[k]] = acc;
        acc *= dims[phys[k]];
        if (k == nd - 1 && pad) acc += 3;
    }
}

static void set_layout(cf_tensor_t *t, int layout, int channels_dim) {
    int phys[DGRAD_MAX_NDIMS], n = 0;
    if (layout == LAYOUT_DENSE) return; /* dense row-major */
    if (layout == LAYOUT_CHANNELS_LAST && channels_dim > 0) {
        phys[n++] = 0;
        for (int d = 1; d < t->ndims; d++)
            if (d != channels_dim) phys[n++] = d;
        phys[n++] = channels_dim;
    } else {
        for (int d = 0; d < t->ndims; d++) phys[n++] = d;
    }
    layout_strides(t->dims, t->ndims, phys, layout == LAYOUT_PADDED, t->strides);
    t->has_strides = 1;
}

static void add_list(cf_case_t *c, const char *name, const int64_t *v, int n) {
    char buf[CF_ATTR_VALUE];
    cf_case_add_attr(c, name, cf_format_ints(buf, sizeof buf, v, n));
}

static void add_int(cf_case_t *c, const char *name, int64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    cf_case_add_attr(c, name, buf);
}

/* The knobs of one generated case. */
typedef struct gen {
    dgrad_op_kind_t kind;
    int nsp, nxc, xio;
    int64_t N, G, Cin, Cout;
    int64_t X[3], K[3], S[3], D[3], pb[3], pe[3], op[3], Y[3];
    int ap, shape, bias;
} gen_t;

static int64_t natural(const gen_t *g, int i) {
    return g->S[i] * (g->X[i] - 1) + (g->K[i] - 1) * g->D[i] + 1;
}

/* Case number j of the matrix point (kind, nsp, gm, s, d); @p chain: with
 * a post-op chain (sweep_chain.c). */
static void make_valid(unsigned j, dgrad_op_kind_t kind, int nsp, int gm,
        int64_t s, int64_t d, const char *sweep_name, int chain,
        cf_case_t *c) {
    gen_t g;
    memset(&g, 0, sizeof g);
    if (kind == dgrad_op_convolution_backprop_data && gm) /* OV: no groups */
        kind = dgrad_op_group_convolution_backprop_data;
    g.kind = kind;
    g.nsp = nsp;
    int onednn = kind == dgrad_op_convolution_backward_data;
    int onednnct = kind == dgrad_op_onednn_conv_transpose;
    int graph = onednn || onednnct; /* oneDNN Graph's layouts and names */
    int onnx = kind == dgrad_op_conv_transpose;
    int ov = !graph && !onnx;

    /* Channels: tails of vector lengths (17, 5, 3) and full vectors (16). */
    static const int64_t ch2[][2] = {{1, 1}, {2, 3}, {3, 2}, {4, 4}, {17, 5},
            {5, 17}, {16, 16}, {3, 17}};
    static const int64_t ch3[][2] = {{1, 1}, {2, 3}, {3, 2}, {4, 4}, {5, 3}};
    static const int64_t dw2[] = {3, 4, 16, 17}, dw3[] = {2, 3, 5};
    const int64_t *cc = nsp < 3 ? ch2[knob(j, 1, 8)] : ch3[knob(j, 1, 5)];
    if (gm == 0) g.G = 1, g.Cin = cc[0], g.Cout = cc[1];
    else if (gm == 1) g.G = 2, g.Cin = 2 * cc[0], g.Cout = 2 * cc[1];
    else g.G = g.Cin = g.Cout = nsp < 3 ? dw2[knob(j, 2, 4)] : dw3[knob(j, 2, 3)];
    static const int64_t batches[] = {1, 1, 2, 3};
    g.N = batches[knob(j, 3, 4)];
    static const int64_t xs[3][5] = {{1, 2, 3, 5, 7}, {1, 2, 3, 4, 5}, {1, 2, 3, 4, 2}};
    for (int i = 0; i < nsp; i++) {
        g.X[i] = xs[nsp - 1][knob(j, 10 + i, 5)];
        g.K[i] = 1 + knob(j, 20 + i, nsp < 3 ? 4 : 3);
        if (knob(j, 30 + i, 6) == 0) g.K[i] = g.X[i] + 2; /* kernel > input */
        g.S[i] = i == 0 ? s : 1 + knob(j, 40 + i, 3);
        g.D[i] = i == nsp - 1 ? d : 1 + knob(j, 50 + i, 2);
        g.pb[i] = knob(j, 60 + i, 4);
        g.pe[i] = knob(j, 70 + i, 4);
        int64_t opmax = (g.S[i] > g.D[i] ? g.S[i] : g.D[i]) - 1;
        if (ov && opmax == 0) opmax = 1; /* OpenVINO: no bound (its own data) */
        if (onednn) opmax = g.S[i] + 1; /* oneDNN Graph: no bound, no effect */
        if (onednnct) opmax = g.S[i] + 1; /* no bound: it adds to Y */
        g.op[i] = knob(j, 80 + i, 3) == 0 ? opmax : 0;
    }
    g.ap = knob(j, 90, 4);
    g.shape = knob(j, 91, 4);
    if (ov && g.shape == SHAPE_ATTR) g.shape = SHAPE_INPUT;
    if (onnx && g.shape >= SHAPE_INPUT) g.shape = SHAPE_ATTR;
    if (onednnct) g.shape = SHAPE_NONE; /* its output shape is inferred */
    g.bias = (onnx || onednnct) && knob(j, 92, 2);
    if (graph) {
        g.nxc = knob(j, 93, 2);
        g.xio = knob(j, 94, 2);
    }
    /* Output sizes: given ones near the natural size (smaller, equal,
     * larger); inferred ones must stay >= 1 (else the pads go). */
    /* oneDNN Graph without a shape: the output dims are the shape. */
    int dims_given = g.shape != SHAPE_NONE || onednn;
    for (int i = 0; i < nsp; i++) {
        int64_t F = natural(&g, i);
        if (!dims_given) {
            if (g.ap == AP_EXPLICIT && F - g.pb[i] - g.pe[i] + g.op[i] < 1)
                g.pb[i] = g.pe[i] = 0;
            continue;
        }
        if (onednn && (g.ap == AP_EXPLICIT || g.ap == AP_VALID)) {
            if (g.ap == AP_VALID || F - g.pb[i] - g.pe[i] < 1) g.pb[i] = g.pe[i] = 0;
            g.Y[i] = F - g.pb[i] - g.pe[i] + knob(j, 100 + i, (int)g.S[i]);
        } else if (knob(j, 110 + i, 5) == 0) {
            g.Y[i] = g.X[i] * g.S[i]; /* the forward convolution's SAME size */
        } else {
            g.Y[i] = F + g.op[i] - (knob(j, 120 + i, 6) - 2);
            if (g.Y[i] < 1) g.Y[i] = 1;
        }
        /* ONNX: output_padding < stride or dilation holds; with a given
         * shape it only shifts SAME crops. oneDNN Graph: it does nothing. */
    }

    cf_case_init(c);
    c->kind = kind;
    c->seed = j * 7u + 1u;
    /* Attributes, defaults sometimes left out. */
    int omit = knob(j, 130, 3) == 0;
    int64_t ones[3] = {1, 1, 1};
    if (!omit || memcmp(g.S, ones, (size_t)nsp * sizeof *ones)) add_list(c, "strides", g.S, nsp);
    if (!omit || memcmp(g.D, ones, (size_t)nsp * sizeof *ones)) add_list(c, "dilations", g.D, nsp);
    if (onnx) {
        int64_t pads[6];
        for (int i = 0; i < nsp; i++) pads[i] = g.pb[i], pads[nsp + i] = g.pe[i];
        add_list(c, "pads", pads, 2 * nsp);
        add_int(c, "group", g.G);
        if (knob(j, 131, 4) == 0) add_list(c, "kernel_shape", g.K, nsp);
    } else {
        add_list(c, "pads_begin", g.pb, nsp);
        add_list(c, "pads_end", g.pe, nsp);
    }
    /* oneDNN writes unset lists as 12 zeros (benchdnn's files carry them) */
    int64_t zero[3] = {0, 0, 0}, zero12[12] = {0};
    int op_zero = !memcmp(g.op, zero, (size_t)nsp * sizeof *zero);
    if (graph && op_zero && knob(j, 133, 3) == 0)
        add_list(c, "output_padding", zero12, 12);
    else if (!omit || !op_zero)
        add_list(c, "output_padding", g.op, nsp);
    if (!omit || g.ap != AP_EXPLICIT)
        cf_case_add_attr(c, "auto_pad", auto_pad_text(kind, g.ap, knob(j, 132, 3) == 0));
    if (graph) {
        /* ConvTranspose's names of the same two weights layouts */
        const char *x_first = onednnct ? "XOI" : "XIO";
        const char *c_first = onednnct ? "IOX" : "OIX";
        if (!omit || g.G != 1) add_int(c, "groups", g.G);
        if (!omit || !g.nxc) cf_case_add_attr(c, "data_format", g.nxc ? "NXC" : "NCX");
        if (!omit || !g.xio) cf_case_add_attr(c, "weights_format", g.xio ? x_first : c_first);
    }

    /* Tensors in the dialect's dims order. */
    cf_tensor_t *in = &c->data, *w = &c->weights, *o = &c->output;
    in->ndims = o->ndims = 2 + nsp;
    int cpos = g.nxc ? nsp + 1 : 1;
    in->dims[0] = g.N;
    in->dims[cpos] = g.Cin;
    for (int i = 0; i < nsp; i++) in->dims[g.nxc ? 1 + i : 2 + i] = g.X[i];
    if (kind == dgrad_op_group_convolution_backprop_data) {
        w->ndims = 3 + nsp;
        w->dims[0] = g.G, w->dims[1] = g.Cin / g.G, w->dims[2] = g.Cout / g.G;
        for (int i = 0; i < nsp; i++) w->dims[3 + i] = g.K[i];
    } else if (g.xio) {
        w->ndims = 2 + nsp;
        for (int i = 0; i < nsp; i++) w->dims[i] = g.K[i];
        w->dims[nsp] = g.Cout / g.G, w->dims[nsp + 1] = g.Cin;
    } else {
        w->ndims = 2 + nsp;
        w->dims[0] = g.Cin, w->dims[1] = g.Cout / g.G;
        for (int i = 0; i < nsp; i++) w->dims[2 + i] = g.K[i];
    }
    /* Physical layouts: channels-last strides under NCX dims (or NXC
     * itself), padded rows. */
    int dl = knob(j, 140, 3);
    set_layout(in, g.nxc && dl == LAYOUT_CHANNELS_LAST ? LAYOUT_DENSE : dl,
            g.nxc ? 0 : 1);
    set_layout(w, knob(j, 141, 4) == 0 ? LAYOUT_PADDED : LAYOUT_DENSE, 0);
    c->constant_weights = knob(j, 142, 4) == 0;

    /* Output dims (known ones come from the generator's own arithmetic:
     * the model then checks the dialect layer against them). */
    int64_t Y[3];
    for (int i = 0; i < nsp; i++) {
        int64_t F = natural(&g, i);
        if (dims_given) Y[i] = g.Y[i];
        else if (onnx && (g.ap == AP_SAME_UPPER || g.ap == AP_SAME_LOWER)) Y[i] = g.X[i] * g.S[i];
        else if (onednnct && (g.ap == AP_SAME_UPPER || g.ap == AP_SAME_LOWER)) {
            /* the kernel's reach beyond one stride is cropped */
            int64_t total = (g.K[i] - 1) * g.D[i] + 1 - g.S[i];
            Y[i] = F + g.op[i] - (total > 0 ? total : 0);
        }
        else if (g.ap == AP_EXPLICIT) Y[i] = F - g.pb[i] - g.pe[i] + g.op[i];
        else Y[i] = F + g.op[i];
    }
    o->dims[0] = g.N;
    o->dims[cpos] = g.Cout;
    for (int i = 0; i < nsp; i++) o->dims[g.nxc ? 1 + i : 2 + i] = Y[i];
    c->expected = *o;
    c->has_expected = 1;
    int ol = knob(j, 143, 5);
    if (onednn && g.shape == SHAPE_NONE && ol == 4) ol = 0; /* dims needed */
    if (g.shape == SHAPE_DEFERRED || ol == 4) {
        o->ndims = DGRAD_UNKNOWN_NDIMS;
    } else if (ol == 3) {
        o->layout_any = 1;
    } else if (onednnct && ol == 0 && knob(j, 148, 3) == 0) {
        /* dims partly known (dense strides come with the dims) */
        o->dims[knob(j, 149, 2 + nsp)] = DGRAD_UNKNOWN_DIM;
    } else {
        set_layout(o, ol == 2 ? LAYOUT_PADDED : ol == 1 && !g.nxc
                        ? LAYOUT_CHANNELS_LAST : LAYOUT_DENSE, g.nxc ? 0 : 1);
    }

    /* Output shape: attribute or input (oneDNN Graph without one:
     * sometimes an all-zero attribute, which means "not given"). */
    if (onednn && g.shape == SHAPE_NONE && knob(j, 146, 2))
        add_list(c, "dst_shape", zero12, knob(j, 147, 2) ? 12 : 2 + nsp);
    if (g.shape == SHAPE_ATTR) {
        if (onednn) add_list(c, "dst_shape", c->expected.dims, 2 + nsp);
        else add_list(c, "output_shape", Y, nsp);
    } else if (g.shape >= SHAPE_INPUT) {
        c->third = cf_third_shape;
        c->shape_dt = knob(j, 144, 2) ? dgrad_s64 : dgrad_s32;
        if (onednn) {
            c->n_shape = 2 + nsp;
            memcpy(c->shape_values, c->expected.dims, sizeof c->shape_values);
            /* With an all-zero ("not given") attribute beside it. */
            if (knob(j, 145, 3) == 0)
                add_list(c, "dst_shape", zero12, knob(j, 147, 2) ? 12 : 2 + nsp);
        } else {
            c->n_shape = nsp;
            memcpy(c->shape_values, Y, (size_t)nsp * sizeof *Y);
        }
    }
    if (g.bias) {
        c->third = cf_third_bias;
        c->bias.ndims = 1;
        c->bias.dims[0] = g.Cout;
    }

    char post[CF_NAME / 2] = "";
    if (chain)
        cf_sweep_chain(j, c, c->expected.dims, 2 + nsp, g.nxc, post,
                sizeof post);
    static const char *const shapes[] = {"none", "attr", "input", "deferred"};
    static const char *const aps[] = {"explicit", "same_upper", "same_lower", "valid"};
    char xs_[32], ks[32], ss[32], ds[32], pbs[32], pes[32], ops[32];
    snprintf(c->suite, sizeof c->suite, "sweep-%s", sweep_name);
    snprintf(c->name, sizeof c->name,
            "sweep-%s#%04u:%s,%dd,N%lld,G%lld,Cin%lld,Cout%lld,X%s,K%s,S%s,D%s,"
            "pads%s/%s,op%s,%s,shape=%s%s%s%s%s%s",
            sweep_name, j, short_kind(kind), nsp, (long long)g.N, (long long)g.G,
            (long long)g.Cin, (long long)g.Cout,
            cf_format_ints(xs_, sizeof xs_, g.X, nsp),
            cf_format_ints(ks, sizeof ks, g.K, nsp),
            cf_format_ints(ss, sizeof ss, g.S, nsp),
            cf_format_ints(ds, sizeof ds, g.D, nsp),
            cf_format_ints(pbs, sizeof pbs, g.pb, nsp),
            cf_format_ints(pes, sizeof pes, g.pe, nsp),
            cf_format_ints(ops, sizeof ops, g.op, nsp), aps[g.ap],
            shapes[g.shape], graph ? (g.nxc ? ",NXC" : ",NCX") : "",
            onednn ? (g.xio ? "/XIO" : "/OIX")
                   : onednnct ? (g.xio ? "/XOI" : "/IOX") : "",
            g.bias ? ",bias" : "", chain ? ",post=" : "",
            chain ? (post[0] ? post : "none") : "");
    snprintf(c->where, sizeof c->where, "%s", c->name);
}

/* ------------------------------------------------------- invalid cases */

/* A small valid 2D case of @p kind: data 1x4x3x3, kernel 2x2, stride 2,
 * output 1x6x6x6 (oneDNN Graph: dst_shape attribute, NCX/OIX; its
 * ConvTranspose: NCX/IOX, the output inferred). */
static void base_case(cf_case_t *c, dgrad_op_kind_t kind) {
    cf_case_init(c);
    c->kind = kind;
    c->seed = 99;
    int64_t two[2] = {2, 2};
    add_list(c, "strides", two, 2);
    c->data.ndims = 4;
    int64_t in[4] = {1, 4, 3, 3};
    memcpy(c->data.dims, in, sizeof in);
    c->weights.ndims = 4;
    int64_t w[4] = {4, 6, 2, 2};
    memcpy(c->weights.dims, w, sizeof w);
    if (kind == dgrad_op_group_convolution_backprop_data) {
        c->weights.ndims = 5;
        int64_t gw[5] = {2, 2, 3, 2, 2};
        memcpy(c->weights.dims, gw, sizeof gw);
    }
    if (kind == dgrad_op_convolution_backward_data) {
        cf_case_add_attr(c, "data_format", "NCX");
        cf_case_add_attr(c, "weights_format", "OIX");
        cf_case_add_attr(c, "dst_shape", "1,6,6,6");
    }
    if (kind == dgrad_op_onednn_conv_transpose) {
        cf_case_add_attr(c, "data_format", "NCX");
        cf_case_add_attr(c, "weights_format", "IOX");
    }
    c->output.ndims = DGRAD_UNKNOWN_NDIMS;
}

/* Replaces (or adds) an attribute. */
static void put(cf_case_t *c, const char *name, const char *value) {
    for (int i = 0; i < c->n_attrs; i++)
        if (!strcmp(c->attrs[i].name, name)) {
            snprintf(c->attrs[i].value, sizeof c->attrs[i].value, "%s", value);
            return;
        }
    cf_case_add_attr(c, name, value);
}

typedef struct invalid {
    const char *label;
    dgrad_op_kind_t kind;
    const char *status;
} invalid_t;

#define ONEDNN dgrad_op_convolution_backward_data
#define OV dgrad_op_convolution_backprop_data
#define OVG dgrad_op_group_convolution_backprop_data
#define ONNX dgrad_op_conv_transpose
#define ONEDNNCT dgrad_op_onednn_conv_transpose

static const invalid_t invalids[] = {
        {"groups_do_not_divide_channels", ONEDNN, "invalid_arguments"},
        {"weights_channels_mismatch", OV, "invalid_shape"},
        {"group_channels_mismatch", OVG, "invalid_shape"},
        {"zero_stride", OV, "invalid_arguments"},
        {"zero_dilation", ONNX, "invalid_arguments"},
        {"negative_stride", ONEDNN, "invalid_arguments"},
        {"negative_pads_begin", OV, "invalid_arguments"},
        {"negative_pads", ONNX, "invalid_arguments"},
        {"negative_output_padding", ONEDNN, "invalid_arguments"},
        {"output_padding_length", ONEDNN, "invalid_arguments"},
        {"output_padding_too_large", ONNX, "invalid_arguments"},
        {"strides_length", OV, "invalid_arguments"},
        {"pads_length", ONNX, "invalid_arguments"},
        {"unknown_auto_pad", ONEDNN, "invalid_arguments"},
        {"unknown_auto_pad", OVG, "invalid_arguments"},
        {"unknown_attribute", ONEDNN, "invalid_arguments"},
        {"unknown_attribute", OV, "invalid_arguments"},
        {"lowercase_data_format", ONEDNN, "invalid_arguments"},
        {"unknown_weights_format", ONEDNN, "invalid_arguments"},
        {"mixed_data_types", OV, "invalid_data_type"},
        {"mixed_data_types", ONEDNN, "invalid_data_type"},
        {"integer_data", ONNX, "invalid_data_type"},
        {"no_output_shape", ONEDNN, "invalid_arguments"},
        {"no_output_shape_partial_dims", ONEDNN, "invalid_arguments"},
        {"twelve_value_dst_shape", ONEDNN, "invalid_arguments"},
        {"dst_shape_differs_from_output_dims", ONEDNN, "invalid_shape"},
        {"dst_shape_input_differs_from_output_dims", ONEDNN, "invalid_shape"},
        {"output_too_large_for_pads", ONEDNN, "invalid_shape"},
        {"output_too_small_for_pads", ONEDNN, "invalid_shape"},
        {"dst_shape_wrong_batch", ONEDNN, "invalid_shape"},
        {"dst_shape_wrong_channels", ONEDNN, "invalid_shape"},
        {"data_rank_2", OV, "invalid_shape"},
        {"data_rank_6", OV, "invalid_shape"},
        {"data_rank_6", ONNX, "unimplemented"},
        {"weights_rank", ONNX, "invalid_shape"},
        {"dims_overflow", OV, "invalid_shape"},
        {"zero_dim", ONNX, "invalid_shape"},
        {"output_shape_input_length", OV, "invalid_shape"},
        {"dst_shape_input_length", ONEDNN, "invalid_shape"},
        {"shape_input_f32", OVG, "invalid_data_type"},
        {"shape_input_zero_size", OV, "invalid_shape"},
        {"shape_values_differ_from_output_dims", OV, "invalid_shape"},
        {"requested_output_dims_wrong", ONNX, "invalid_shape"},
        {"negative_output_strides", OV, "invalid_arguments"},
        {"bias_length", ONNX, "invalid_shape"},
        {"kernel_shape_mismatch", ONNX, "invalid_shape"},
        {"inferred_output_empty", OV, "invalid_shape"},
        {"group_zero", ONNX, "invalid_arguments"},
        /* oneDNN Graph's ConvTranspose (last: the others keep their order) */
        {"groups_do_not_divide_channels", ONEDNNCT, "invalid_arguments"},
        {"weights_channels_mismatch", ONEDNNCT, "invalid_shape"},
        {"zero_stride", ONEDNNCT, "invalid_arguments"},
        {"negative_pads_with_auto_pad", ONEDNNCT, "invalid_arguments"},
        {"negative_output_padding", ONEDNNCT, "invalid_arguments"},
        {"output_padding_length", ONEDNNCT, "invalid_arguments"},
        {"twelve_value_output_padding", ONEDNNCT, "invalid_arguments"},
        {"unknown_auto_pad", ONEDNNCT, "invalid_arguments"},
        {"unknown_attribute", ONEDNNCT, "invalid_arguments"},
        {"lowercase_data_format", ONEDNNCT, "invalid_arguments"},
        {"unknown_weights_format", ONEDNNCT, "invalid_arguments"},
        {"mixed_data_types", ONEDNNCT, "invalid_data_type"},
        {"requested_output_dims_wrong", ONEDNNCT, "invalid_shape"},
        {"requested_output_dims_partly_wrong", ONEDNNCT, "invalid_shape"},
        {"bias_length", ONEDNNCT, "invalid_shape"},
        {"inferred_output_empty", ONEDNNCT, "invalid_shape"},
};
#define N_INVALID (sizeof invalids / sizeof invalids[0])

static void make_invalid(size_t i, const char *sweep_name, cf_case_t *c) {
    const invalid_t *v = &invalids[i];
    const char *l = v->label;
    base_case(c, v->kind);
    if (!strcmp(l, "groups_do_not_divide_channels")) put(c, "groups", "3");
    else if (!strcmp(l, "weights_channels_mismatch")) c->weights.dims[0] = 5;
    else if (!strcmp(l, "group_channels_mismatch")) c->weights.dims[1] = 3;
    else if (!strcmp(l, "zero_stride")) put(c, "strides", "0,2");
    else if (!strcmp(l, "zero_dilation")) put(c, "dilations", "1,0");
    else if (!strcmp(l, "negative_stride")) put(c, "strides", "2,-1");
    else if (!strcmp(l, "negative_pads_begin")) put(c, "pads_begin", "-1,0");
    else if (!strcmp(l, "negative_pads")) put(c, "pads", "0,0,-1,0");
    else if (!strcmp(l, "negative_output_padding")) put(c, "output_padding", "0,-1");
    else if (!strcmp(l, "output_padding_length")) put(c, "output_padding", "1,1,1");
    else if (!strcmp(l, "output_padding_too_large")) put(c, "output_padding", "2,0");
    else if (!strcmp(l, "strides_length")) put(c, "strides", "2,2,2");
    else if (!strcmp(l, "pads_length")) put(c, "pads", "1,1");
    else if (!strcmp(l, "unknown_auto_pad")) put(c, "auto_pad", "SAME");
    else if (!strcmp(l, "unknown_attribute")) {
        /* the attribute of the sibling op: ConvTranspose has no dst_shape */
        if (v->kind == ONEDNNCT) put(c, "dst_shape", "1,6,6,6");
        else put(c, v->kind == ONEDNN ? "group" : "groups", "1");
    } else if (!strcmp(l, "lowercase_data_format")) put(c, "data_format", "ncx");
    else if (!strcmp(l, "unknown_weights_format"))
        /* each op's names are its own: IOX is ConvTranspose's, XIO not */
        put(c, "weights_format", v->kind == ONEDNNCT ? "XIO" : "IOX");
    else if (!strcmp(l, "negative_pads_with_auto_pad")) {
        put(c, "pads_begin", "0,-1"); /* irrelevant under SAME, still wrong */
        put(c, "auto_pad", "SAME_UPPER");
    } else if (!strcmp(l, "twelve_value_output_padding"))
        put(c, "output_padding", "1,1,0,0,0,0,0,0,0,0,0,0");
    else if (!strcmp(l, "mixed_data_types")) c->mixed_types = 1;
    else if (!strcmp(l, "integer_data")) c->data_dt = dgrad_s32;
    else if (!strcmp(l, "no_output_shape")) c->n_attrs--; /* drops dst_shape */
    else if (!strcmp(l, "no_output_shape_partial_dims")) {
        c->n_attrs--;
        c->output.ndims = 4;
        int64_t o[4] = {1, 6, -1, 6};
        memcpy(c->output.dims, o, sizeof o);
    } else if (!strcmp(l, "twelve_value_dst_shape"))
        put(c, "dst_shape", "1,6,6,6,0,0,0,0,0,0,0,0");
    else if (!strcmp(l, "dst_shape_differs_from_output_dims")) {
        /* 7x7 alone would be valid: F = 6, and 7 is within the stride */
        c->output.ndims = 4;
        int64_t o[4] = {1, 6, 7, 7};
        memcpy(c->output.dims, o, sizeof o);
    } else if (!strcmp(l, "dst_shape_input_differs_from_output_dims")) {
        c->third = cf_third_shape;
        c->n_shape = 4;
        int64_t vals[4] = {1, 6, 7, 7}, o[4] = {1, 6, 6, 6};
        memcpy(c->shape_values, vals, sizeof vals);
        c->output.ndims = 4;
        memcpy(c->output.dims, o, sizeof o);
    }
    else if (!strcmp(l, "output_too_large_for_pads")) put(c, "dst_shape", "1,6,8,8");
    else if (!strcmp(l, "output_too_small_for_pads")) put(c, "dst_shape", "1,6,5,6");
    else if (!strcmp(l, "dst_shape_wrong_batch")) put(c, "dst_shape", "2,6,6,6");
    else if (!strcmp(l, "dst_shape_wrong_channels")) put(c, "dst_shape", "1,5,6,6");
    else if (!strcmp(l, "data_rank_2")) {
        c->data.ndims = 2;
        c->weights.ndims = 2;
        c->n_attrs = 0; /* no spatial axis for strides */
    } else if (!strcmp(l, "data_rank_6")) {
        c->data.ndims = c->weights.ndims = 6;
        c->data.dims[4] = c->data.dims[5] = 2;
        c->weights.dims[4] = c->weights.dims[5] = 1;
        put(c, "strides", "1,1,1,1");
    } else if (!strcmp(l, "weights_rank")) c->weights.ndims = 3;
    else if (!strcmp(l, "dims_overflow")) {
        c->data.dims[2] = (int64_t)1 << 40;
        c->data.dims[3] = (int64_t)1 << 40;
    } else if (!strcmp(l, "zero_dim")) c->data.dims[3] = 0;
    else if (!strcmp(l, "output_shape_input_length")) {
        c->third = cf_third_shape;
        c->n_shape = 3;
        c->shape_values[0] = c->shape_values[1] = c->shape_values[2] = 6;
    } else if (!strcmp(l, "dst_shape_input_length")) {
        c->third = cf_third_shape;
        c->n_shape = 3;
        c->shape_values[0] = 1, c->shape_values[1] = 6, c->shape_values[2] = 6;
    } else if (!strcmp(l, "shape_input_f32")) {
        c->third = cf_third_shape;
        c->shape_dt = dgrad_f32;
        c->n_shape = 2;
        c->shape_values[0] = c->shape_values[1] = 6;
    } else if (!strcmp(l, "shape_input_zero_size")) {
        c->third = cf_third_shape;
        c->n_shape = 2;
        c->shape_values[0] = 0, c->shape_values[1] = 6;
    } else if (!strcmp(l, "shape_values_differ_from_output_dims")) {
        /* Output dims known at compile: execute checks the values. */
        c->third = cf_third_shape;
        c->n_shape = 2;
        c->shape_values[0] = 7, c->shape_values[1] = 6;
        c->output.ndims = 4;
        int64_t o[4] = {1, 6, 6, 6};
        memcpy(c->output.dims, o, sizeof o);
    } else if (!strcmp(l, "requested_output_dims_wrong")) {
        c->output.ndims = 4;
        int64_t o[4] = {1, 6, 6, 7};
        memcpy(c->output.dims, o, sizeof o);
    } else if (!strcmp(l, "requested_output_dims_partly_wrong")) {
        c->output.ndims = 4; /* the known channels disagree */
        int64_t o[4] = {1, 5, -1, -1};
        memcpy(c->output.dims, o, sizeof o);
    } else if (!strcmp(l, "negative_output_strides")) {
        c->output.ndims = 4;
        int64_t o[4] = {1, 6, 6, 6}, s[4] = {216, 36, 6, -1};
        memcpy(c->output.dims, o, sizeof o);
        memcpy(c->output.strides, s, sizeof s);
        c->output.has_strides = 1;
    } else if (!strcmp(l, "bias_length")) {
        c->third = cf_third_bias;
        c->bias.ndims = 1;
        c->bias.dims[0] = 5;
    } else if (!strcmp(l, "kernel_shape_mismatch")) put(c, "kernel_shape", "3,3");
    else if (!strcmp(l, "inferred_output_empty")) {
        put(c, "pads_begin", "4,0");
        put(c, "pads_end", "3,0");
    } else if (!strcmp(l, "group_zero")) put(c, "group", "0");
    snprintf(c->expect_error, sizeof c->expect_error, "%s", v->status);
    snprintf(c->suite, sizeof c->suite, "sweep-%s", sweep_name);
    snprintf(c->name, sizeof c->name, "sweep-%s#invalid:%s:%s", sweep_name,
            short_kind(v->kind), l);
    snprintf(c->where, sizeof c->where, "%s", c->name);
}

/* Invalid chain @p i (sweep_chain.c) on the base case of its kind. */
static void make_invalid_chain(int i, const char *sweep_name, cf_case_t *c) {
    const char *label;
    dgrad_op_kind_t kind = cf_sweep_invalid_chain_kind(i);
    base_case(c, kind);
    cf_sweep_invalid_chain(i, c, &label);
    snprintf(c->suite, sizeof c->suite, "sweep-%s", sweep_name);
    snprintf(c->name, sizeof c->name, "sweep-%s#invalid:%s:%s", sweep_name,
            short_kind(kind), label);
    snprintf(c->where, sizeof c->where, "%s", c->name);
}

/* The core matrix and the invalid cases keep their numbers (names in
 * reports, --filter); the chains come after them: the matrix without
 * dilation (dialect x rank x groups x stride, the dilation a knob) with
 * a chain of 0 to 3 post-ops each, once for quick and twelve times for
 * full, then the invalid chains. */
int cf_sweep_generate(cf_sweep_t sweep, cf_sink_t *sink) {
    if (sweep == cf_sweep_none) return 0;
    const char *name = sweep == cf_sweep_full ? "full" : "quick";
    const unsigned rounds = sweep == cf_sweep_full ? 12 : 1;
    static const int64_t strides[] = {1, 2, 3}, dilations[] = {1, 2};
    unsigned j = 0;
    cf_case_t c;
    for (unsigned r = 0; r < rounds; r++)
        for (size_t k = 0; k < N_KINDS; k++)
            for (int nsp = 1; nsp <= 3; nsp++)
                for (int gm = 0; gm < 3; gm++)
                    for (int s = 0; s < 3; s++)
                        for (int d = 0; d < 2; d++) {
                            make_valid(j++, kinds[k], nsp, gm, strides[s],
                                    dilations[d], name, 0, &c);
                            sink->on_case(sink, &c);
                        }
    for (size_t i = 0; i < N_INVALID; i++) {
        make_invalid(i, name, &c);
        sink->on_case(sink, &c);
        j++;
    }
    for (unsigned r = 0; r < rounds; r++)
        for (size_t k = 0; k < N_KINDS; k++)
            for (int nsp = 1; nsp <= 3; nsp++)
                for (int gm = 0; gm < 3; gm++)
                    for (int s = 0; s < 3; s++) {
                        make_valid(j, kinds[k], nsp, gm, strides[s],
                                dilations[knob(j, 55, 2)], name, 1, &c);
                        j++;
                        sink->on_case(sink, &c);
                    }
    for (int i = 0; i < cf_sweep_invalid_chains(); i++) {
        make_invalid_chain(i, name, &c);
        sink->on_case(sink, &c);
        j++;
    }
    return (int)j;
}
