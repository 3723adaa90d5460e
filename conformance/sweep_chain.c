/*
 * Post-op chains in the sweeps: random chains of 0 to 3 of oneDNN Graph's
 * element-wise ops on the generated cases (every dialect, rank and layout
 * the core matrix gives), and invalid chains that must be rejected with
 * the status dgrad.h names.
 *
 * A chain's operands broadcast to the output as numpy does, counted from
 * its last axis in the dialect's dims order: per channel (NCX: [C, 1...]
 * or [1, C, 1...]; NXC: [C] or [1..., C]), per position (the spatial
 * sizes), scalar ([1] or all ones), full (the output's dims, or without
 * N, or N 1); BiasAdd names its channel axis with data_format (NXC, the
 * default, the last axis even when that is a spatial one). Operands come
 * dense, padded or channels-last, in the run's type or a fixed one.
 *
 * The data are small integers (runner_data.c), so the chain is kept
 * where f32, the reference's double and 16-bit outputs agree up to the
 * judge's chain tolerance: Exp last or on a bounded input (after Tanh,
 * Sigmoid, HardSigmoid or Clamp: no f32 overflow), Log and Sqrt only
 * last (their NaN and -inf go nowhere) and on integers (an f32 result
 * near 0 could have either sign), Round only on integers (no ties that an
 * f32 approximation could tip), divisors never 0. The expected
 * result is the conformance model's and the reference's, never the
 * generator's.
 */
#include <stdio.h>
#include <string.h>

#include "sweep.h"

static const char *const unary[] = {"Abs", "Clamp", "Elu", "Exp", "GELU",
        "HardSigmoid", "HardSwish", "LeakyReLU", "Log", "Mish", "ReLU",
        "Round", "Sigmoid", "SoftPlus", "Sqrt", "Square", "Tanh"};
#define N_UNARY ((int)(sizeof unary / sizeof unary[0]))
static const char *const binary[] = {"Add", "Multiply", "Maximum",
        "Minimum", "Divide", "Subtract"};
#define N_BINARY ((int)(sizeof binary / sizeof binary[0]))

static void attr(cf_post_t *po, const char *name, const char *value) {
    cf_attr_t *a = &po->attrs[po->n_attrs++];
    snprintf(a->name, sizeof a->name, "%s", name);
    snprintf(a->value, sizeof a->value, "%s", value);
}

/* What the values are before a post-op: integers (the op's result on
 * integer data, kept by Abs, ReLU, Square, Round, integer Clamp and
 * integer operands) and bounded (|x| <= 3 or so: after Tanh, Sigmoid,
 * HardSigmoid, Clamp). */
typedef struct state {
    int integer, bounded;
} state_t;

static int allowed(const char *k, const state_t *s, int last) {
    /* last, an overflow is an infinity both ways; before another op, inf
     * times 0 would be NaN in f32 and not in double */
    if (!strcmp(k, "Exp")) return s->bounded || last;
    /* an input near 0 of either sign (Mish of a large negative value)
     * would tip Log between NaN and -inf: exact integers only */
    if (!strcmp(k, "Log") || !strcmp(k, "Sqrt")) return last && s->integer;
    if (!strcmp(k, "Round")) return s->integer;
    return 1;
}

/* A unary post-op (kind from knob @p u on), its attributes. */
static void make_unary(unsigned j, int p, int last, state_t *s,
        cf_post_t *po) {
    int u = cf_sweep_knob(j, 220 + (unsigned)p, N_UNARY);
    while (!allowed(unary[u], s, last)) u = (u + 1) % N_UNARY;
    const char *k = unary[u];
    snprintf(po->kind, sizeof po->kind, "%s", k);
    int v = cf_sweep_knob(j, 230 + (unsigned)p, 3);
    int keep_integer = 0, bounded = 0;
    if (!strcmp(k, "Clamp")) {
        static const char *const lo[] = {"-2", "-1.5", "0"}, *const hi[] = {"3", "2.5", "1"};
        attr(po, "min", lo[v]);
        attr(po, "max", hi[v]);
        keep_integer = v != 1;
        bounded = 1;
    } else if (!strcmp(k, "Elu")) {
        static const char *const a[] = {"1", "0.5", "0"};
        attr(po, "alpha", a[v]);
    } else if (!strcmp(k, "GELU")) {
        if (v) attr(po, "mode", v == 1 ? "gelu_erf" : "gelu_tanh");
    } else if (!strcmp(k, "HardSigmoid")) {
        static const char *const a[] = {"0.2", "0.1666667", "0.5"};
        attr(po, "alpha", a[v]);
        attr(po, "beta", "0.5");
        bounded = 1;
    } else if (!strcmp(k, "LeakyReLU")) {
        static const char *const a[] = {"0.25", "0.01", "-0.5"};
        attr(po, "alpha", a[v]);
    } else if (!strcmp(k, "SoftPlus")) {
        static const char *const b[] = {"2", "0.5", "-1"};
        if (v || cf_sweep_knob(j, 235 + (unsigned)p, 2)) attr(po, "beta", b[v]);
    } else {
        keep_integer = !strcmp(k, "Abs") || !strcmp(k, "ReLU")
                || !strcmp(k, "Square") || !strcmp(k, "Round");
        bounded = (!strcmp(k, "Abs") || !strcmp(k, "Round")) && s->bounded;
        bounded |= !strcmp(k, "Tanh") || !strcmp(k, "Sigmoid");
    }
    s->integer = s->integer && keep_integer;
    s->bounded = bounded;
}

/* An operand of the given shape class, in dialect order. */
enum { PER_CHANNEL, PER_POSITION, SCALAR, FULL };
static const char *const classes[] = {"C", "X", "1", "full"};

static void make_operand(unsigned j, int p, const int64_t *out, int R,
        int nxc, int cls, int long_form, cf_tensor_t *t) {
    const int ch = nxc ? R - 1 : 1;
    int64_t full[DGRAD_MAX_NDIMS];
    for (int d = 0; d < R; d++) {
        int spatial = d != 0 && d != ch;
        full[d] = cls == FULL ? out[d] : cls == PER_CHANNEL ? (d == ch ? out[d] : 1)
                : cls == PER_POSITION ? (spatial ? out[d] : 1) : 1;
    }
    if (cls == FULL && long_form == 2) full[0] = 1; /* N broadcast */
    /* The shortest form numpy takes: drop the leading ones (a scalar
     * keeps one dim); full without N drops N. */
    int lead = 0;
    if (!long_form || (cls == FULL && long_form == 3)) {
        while (lead < R - 1 && full[lead] == 1) lead++;
        if (cls == FULL && long_form == 3) lead = 1;
    }
    t->ndims = R - lead;
    memcpy(t->dims, &full[lead], (size_t)t->ndims * sizeof *t->dims);
    /* Layouts: padded rows, or channels-last strides under NCX dims. */
    int layout = cf_sweep_knob(j, 260 + (unsigned)p, 4);
    if (t->ndims == R && layout == 0) {
        int64_t acc = 1;
        for (int d = R - 1; d >= 0; d--) {
            t->strides[d] = acc;
            acc *= t->dims[d];
            if (d == R - 1) acc += 2;
        }
        t->has_strides = 1;
    } else if (t->ndims == R && layout == 1 && !nxc) {
        int64_t acc = 1;
        t->strides[1] = acc;
        acc *= t->dims[1];
        for (int d = R - 1; d >= 2; d--) {
            t->strides[d] = acc;
            acc *= t->dims[d];
        }
        t->strides[0] = acc;
        t->has_strides = 1;
    }
}

/* A binary post-op or a BiasAdd with its operand. */
static void make_binary(unsigned j, int p, const int64_t *out, int R,
        int nxc, state_t *s, cf_post_t *po, char *desc,
        size_t size) {
    int bias = cf_sweep_knob(j, 240 + (unsigned)p, 4) == 0;
    po->has_operand = 1;
    static const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int t = cf_sweep_knob(j, 250 + (unsigned)p, 6);
    po->operand_dt = t < 3 ? dts[t] : dgrad_data_type_undef;
    const char *dtn = po->operand_dt ? dgrad_data_type_name(po->operand_dt) : "";
    if (bias) {
        snprintf(po->kind, sizeof po->kind, "BiasAdd");
        int f = cf_sweep_knob(j, 270 + (unsigned)p, 3);
        if (f) attr(po, "data_format", f == 1 ? "NXC" : "NCX");
        int axis = f == 2 ? 1 : R - 1;
        po->operand.ndims = 1;
        po->operand.dims[0] = out[axis];
        snprintf(desc, size, "BiasAdd(%s)%s%s", f == 2 ? "NCX" : "NXC",
                *dtn ? "/" : "", dtn);
        return; /* integer operands keep integers and bounds go */
    }
    int b = cf_sweep_knob(j, 280 + (unsigned)p, N_BINARY);
    snprintf(po->kind, sizeof po->kind, "%s", binary[b]);
    int cls = cf_sweep_knob(j, 290 + (unsigned)p, 4);
    int long_form = cf_sweep_knob(j, 300 + (unsigned)p, cls == FULL ? 4 : 2);
    make_operand(j, p, out, R, nxc, cls, long_form, &po->operand);
    int same = po->operand.ndims == R;
    for (int d = 0; same && d < R; d++) same = po->operand.dims[d] == out[d];
    int ab = cf_sweep_knob(j, 310 + (unsigned)p, 3);
    if (ab == 1 || (ab == 2 && !same)) attr(po, "auto_broadcast", "numpy");
    else if (ab == 2) attr(po, "auto_broadcast", "none");
    char dims[64];
    snprintf(desc, size, "%s[%s:%s]%s%s%s", binary[b], classes[cls],
            cf_format_ints(dims, sizeof dims, po->operand.dims,
                    po->operand.ndims),
            ab == 2 && same ? "/none" : "", *dtn ? "/" : "", dtn);
    s->integer = s->integer && strcmp(binary[b], "Divide");
    s->bounded = 0;
}

void cf_sweep_chain(unsigned j, cf_case_t *c, const int64_t *out, int R,
        int nxc, char *label, size_t size) {
    int n = cf_sweep_knob(j, 200, 4);
    state_t s = {1, 0};
    size_t used = 0;
    label[0] = '\0';
    for (int p = 0; p < n; p++) {
        cf_post_t *po = &c->post[c->n_post++];
        memset(po, 0, sizeof *po);
        char desc[96];
        if (cf_sweep_knob(j, 210 + (unsigned)p, 8) < 4) {
            make_unary(j, p, p == n - 1, &s, po);
            snprintf(desc, sizeof desc, "%s", po->kind);
            for (int a = 0; a < po->n_attrs; a++) {
                size_t l = strlen(desc);
                snprintf(desc + l, sizeof desc - l, "%s%s", a ? "," : "(",
                        po->attrs[a].value);
            }
            if (po->n_attrs) strncat(desc, ")", sizeof desc - strlen(desc) - 1);
        } else {
            make_binary(j, p, out, R, nxc, &s, po,
                    desc, sizeof desc);
        }
        if (used < size)
            used += (size_t)snprintf(label + used, size - used, "%s%s",
                    p ? "+" : "", desc);
    }
}

/* ------------------------------------------------------- invalid chains */

typedef struct invalid_chain {
    const char *label;
    dgrad_op_kind_t kind;
    const char *status;
} invalid_chain_t;

static const invalid_chain_t invalids[] = {
        /* appending: dgrad_op_append_post_op's rules */
        {"post_op_unknown_kind", dgrad_op_convolution_backward_data, "invalid_arguments"},
        {"post_op_unknown_attribute", dgrad_op_convolution_backprop_data, "invalid_arguments"},
        {"post_op_missing_attribute", dgrad_op_group_convolution_backprop_data, "invalid_arguments"},
        {"post_op_attribute_not_a_number", dgrad_op_conv_transpose, "invalid_arguments"},
        {"post_op_attribute_infinite", dgrad_op_onednn_conv_transpose, "invalid_arguments"},
        {"post_op_bad_auto_broadcast", dgrad_op_convolution_backward_data, "invalid_arguments"},
        {"post_op_bad_bias_data_format", dgrad_op_convolution_backprop_data, "invalid_arguments"},
        {"post_op_bad_gelu_mode", dgrad_op_group_convolution_backprop_data, "invalid_arguments"},
        {"post_op_softplus_beta_zero", dgrad_op_conv_transpose, "invalid_arguments"},
        {"post_op_chain_too_long", dgrad_op_onednn_conv_transpose, "invalid_arguments"},
        /* operands: their count, type and broadcast */
        {"post_op_operand_missing", dgrad_op_convolution_backward_data, "invalid_arguments"},
        {"post_op_operand_extra", dgrad_op_conv_transpose, "invalid_arguments"},
        {"post_op_operand_integer", dgrad_op_convolution_backprop_data, "invalid_data_type"},
        {"post_op_operand_does_not_broadcast", dgrad_op_group_convolution_backprop_data, "invalid_shape"},
        {"post_op_operand_rank_too_large", dgrad_op_onednn_conv_transpose, "invalid_shape"},
        {"post_op_operand_zero_dim", dgrad_op_convolution_backward_data, "invalid_shape"},
        {"post_op_none_broadcast_needs_equal_dims", dgrad_op_conv_transpose, "invalid_shape"},
        {"post_op_bias_add_wrong_length", dgrad_op_onednn_conv_transpose, "invalid_shape"},
        {"post_op_bias_add_rank_2", dgrad_op_convolution_backprop_data, "invalid_shape"},
};
#define N_INVALID ((int)(sizeof invalids / sizeof invalids[0]))

int cf_sweep_invalid_chains(void) { return N_INVALID; }

dgrad_op_kind_t cf_sweep_invalid_chain_kind(int i) { return invalids[i].kind; }

static cf_post_t *post(cf_case_t *c, const char *kind) {
    cf_post_t *po = &c->post[c->n_post++];
    memset(po, 0, sizeof *po);
    snprintf(po->kind, sizeof po->kind, "%s", kind);
    return po;
}

static void operand(cf_post_t *po, int nd, const int64_t *dims) {
    po->has_operand = 1;
    po->operand.ndims = nd;
    memcpy(po->operand.dims, dims, (size_t)nd * sizeof *dims);
}

void cf_sweep_invalid_chain(int i, cf_case_t *c, const char **label) {
    const char *l = invalids[i].label;
    *label = l;
    /* The base case's output is 1x6x6x6 (NCX dims in every dialect). */
    const int64_t chan[] = {6, 1, 1};
    post(c, "ReLU"); /* a valid link first: the error names the second */
    cf_post_t *po;
    if (!strcmp(l, "post_op_unknown_kind")) post(c, "Relu");
    else if (!strcmp(l, "post_op_unknown_attribute")) attr(post(c, "Tanh"), "alpha", "1");
    else if (!strcmp(l, "post_op_missing_attribute")) attr(post(c, "Clamp"), "min", "0");
    else if (!strcmp(l, "post_op_attribute_not_a_number")) attr(post(c, "LeakyReLU"), "alpha", "0.1x");
    else if (!strcmp(l, "post_op_attribute_infinite")) attr(post(c, "Elu"), "alpha", "inf");
    else if (!strcmp(l, "post_op_bad_auto_broadcast")) {
        po = post(c, "Add");
        attr(po, "auto_broadcast", "bidirectional");
        operand(po, 3, chan);
    } else if (!strcmp(l, "post_op_bad_bias_data_format")) {
        po = post(c, "BiasAdd");
        attr(po, "data_format", "NCHW");
        operand(po, 1, chan);
    } else if (!strcmp(l, "post_op_bad_gelu_mode")) attr(post(c, "GELU"), "mode", "tanh");
    else if (!strcmp(l, "post_op_softplus_beta_zero")) attr(post(c, "SoftPlus"), "beta", "0");
    else if (!strcmp(l, "post_op_chain_too_long")) {
        while (c->n_post < DGRAD_MAX_POST_OPS + 1) post(c, "Abs");
    } else if (!strcmp(l, "post_op_operand_missing")) post(c, "Multiply");
    else if (!strcmp(l, "post_op_operand_extra")) {
        /* with the bias: one input more than the op and its chain take */
        c->third = cf_third_bias;
        c->bias.ndims = 1;
        c->bias.dims[0] = 6;
        operand(post(c, "Sigmoid"), 3, chan);
    } else if (!strcmp(l, "post_op_operand_integer")) {
        po = post(c, "Add");
        operand(po, 3, chan);
        po->operand_dt = dgrad_s32;
    } else if (!strcmp(l, "post_op_operand_does_not_broadcast")) {
        const int64_t d[] = {6, 5};
        operand(post(c, "Subtract"), 2, d);
    } else if (!strcmp(l, "post_op_operand_rank_too_large")) {
        const int64_t d[] = {1, 1, 6, 6, 6};
        operand(post(c, "Maximum"), 5, d);
    } else if (!strcmp(l, "post_op_operand_zero_dim")) {
        const int64_t d[] = {0};
        operand(post(c, "Minimum"), 1, d);
    } else if (!strcmp(l, "post_op_none_broadcast_needs_equal_dims")) {
        const int64_t d[] = {1, 6, 1, 1};
        po = post(c, "Divide");
        attr(po, "auto_broadcast", "none");
        operand(po, 4, d);
    } else if (!strcmp(l, "post_op_bias_add_wrong_length")) {
        const int64_t d[] = {5};
        po = post(c, "BiasAdd");
        attr(po, "data_format", "NCX");
        operand(po, 1, d);
    } else if (!strcmp(l, "post_op_bias_add_rank_2")) {
        const int64_t d[] = {6, 1};
        po = post(c, "BiasAdd");
        attr(po, "data_format", "NCX");
        operand(po, 2, d);
    }
    snprintf(c->expect_error, sizeof c->expect_error, "%s", invalids[i].status);
}
