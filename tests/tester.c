#include "tester.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "problem.h"
#include "reference.h"

void tester_init(tester_t *t, dgrad_op_kind_t kind, int nsp) {
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->nsp = nsp;
    t->N = 1;
    t->G = 1;
    t->Cin = 3;
    t->Cout = 3;
    for (int i = 0; i < 3; i++) {
        t->X[i] = 5;
        t->K[i] = 3;
        t->S[i] = 1;
        t->D[i] = 1;
    }
    t->dt = dgrad_f32;
    t->executions = 1;
    t->seed = 1;
    if (kind == dgrad_op_convolution_backward_data)
        t->shape_mode = tester_shape_attr;
}

/* oneDNN Graph's ops: data_format, weights_format and groups attributes. */
static int onednn_graph(dgrad_op_kind_t k) {
    return k == dgrad_op_convolution_backward_data
            || k == dgrad_op_onednn_conv_transpose;
}

static const char *kind_short(dgrad_op_kind_t k) {
    switch (k) {
        case dgrad_op_convolution_backward_data: return "onednn";
        case dgrad_op_convolution_backprop_data: return "ov";
        case dgrad_op_group_convolution_backprop_data: return "ovgroup";
        case dgrad_op_conv_transpose: return "onnx";
        case dgrad_op_onednn_conv_transpose: return "onednnct";
        default: return "?";
    }
}

/* ------------------------------------------------------------ post-ops */

/* The canonical algorithm of a post-op and its parameters, from oneDNN
 * Graph's op definitions (written here again, not taken from
 * src/post_ops.c, so that a slip there shows as a mismatch). */
static int post_alg(const tester_post_op_t *po, int32_t *alg, double *alpha,
        double *beta) {
    static const struct {
        const char *name;
        int32_t alg;
        double alpha, beta;
    } table[] = {{"Abs", dgrad_post_abs, 0, 0}, {"Clamp", dgrad_post_clip, 0, 0},
            {"Elu", dgrad_post_elu, 0, 0}, {"Exp", dgrad_post_exp, 0, 0},
            {"GELU", dgrad_post_gelu_erf, 0, 0},
            {"HardSigmoid", dgrad_post_hardsigmoid, 0, 0},
            {"HardSwish", dgrad_post_hardswish, 1.0 / 6, 0.5},
            {"LeakyReLU", dgrad_post_relu, 0, 0}, {"Log", dgrad_post_log, 0, 0},
            {"Mish", dgrad_post_mish, 0, 0}, {"ReLU", dgrad_post_relu, 0, 0},
            {"Round", dgrad_post_round, 0, 0},
            {"Sigmoid", dgrad_post_logistic, 0, 0},
            {"SoftPlus", dgrad_post_soft_relu, 1, 0},
            {"Sqrt", dgrad_post_sqrt, 0, 0}, {"Square", dgrad_post_square, 0, 0},
            {"Tanh", dgrad_post_tanh, 0, 0}, {"Add", dgrad_post_add, 0, 0},
            {"BiasAdd", dgrad_post_add, 0, 0},
            {"Multiply", dgrad_post_mul, 0, 0},
            {"Maximum", dgrad_post_max, 0, 0},
            {"Minimum", dgrad_post_min, 0, 0}, {"Divide", dgrad_post_div, 0, 0},
            {"Subtract", dgrad_post_sub, 0, 0}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, po->kind)) continue;
        *alg = table[i].alg;
        *alpha = table[i].alpha;
        *beta = table[i].beta;
        for (int a = 0; a < 2 && po->attr[a][0]; a++) {
            const char *n = po->attr[a][0], *v = po->attr[a][1];
            if (!strcmp(n, "mode"))
                *alg = strcmp(v, "gelu_tanh") ? dgrad_post_gelu_erf
                                              : dgrad_post_gelu_tanh;
            else if (!strcmp(n, "min") || !strcmp(n, "alpha")
                    || (!strcmp(n, "beta") && *alg == dgrad_post_soft_relu))
                *alpha = strtod(v, NULL);
            else if (!strcmp(n, "max") || !strcmp(n, "beta"))
                *beta = strtod(v, NULL);
        }
        return 1;
    }
    return 0;
}

static int post_has_operand(const tester_post_op_t *po) {
    int32_t alg;
    double a, b;
    return post_alg(po, &alg, &a, &b) && dgrad_post_alg_is_binary(alg);
}

static dgrad_data_type_t operand_dt(const tester_t *t,
        const tester_post_op_t *po) {
    return po->dt != dgrad_data_type_undef ? po->dt : t->dt;
}

const char *tester_describe(const tester_t *t, char *buf, size_t size) {
    size_t u = (size_t)snprintf(buf, size,
            "%s %dD N%ld G%ld Cin%ld Cout%ld %s layout%d%s shape%d%s%s%s",
            kind_short(t->kind), t->nsp, t->N, t->G, t->Cin, t->Cout,
            dgrad_data_type_name(t->dt), t->channels_last,
            t->weights_xio ? " XIO" : "", (int)t->shape_mode,
            t->constant_weights ? " const" : "", t->bias ? " bias" : "",
            t->output_any ? " any" : "");
    for (int i = 0; i < t->nsp && u < size; i++)
        u += (size_t)snprintf(buf + u, size - u,
                " [X%ld K%ld S%ld D%ld p%ld,%ld op%ld]", t->X[i], t->K[i],
                t->S[i], t->D[i], t->pb[i], t->pe[i], t->op[i]);
    for (int i = 0; i < t->n_post && u < size; i++) {
        const tester_post_op_t *po = &t->post[i];
        u += (size_t)snprintf(buf + u, size - u, " -> %s", po->kind);
        for (int a = 0; a < 2 && po->attr[a][0] && u < size; a++)
            u += (size_t)snprintf(buf + u, size - u, "%s%s=%s",
                    a ? "," : "(", po->attr[a][0], po->attr[a][1]);
        if (po->attr[0][0] && u < size)
            u += (size_t)snprintf(buf + u, size - u, ")");
        if (post_has_operand(po) && u < size)
            u += (size_t)snprintf(buf + u, size - u, "[rank%d bcast%x %s]",
                    po->rank, po->broadcast,
                    dgrad_data_type_name(operand_dt(t, po)));
    }
    if (t->in_place && u < size) snprintf(buf + u, size - u, " in-place");
    return buf;
}

static int fail(char *why, size_t size, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, size, fmt, args);
    va_end(args);
    return 0;
}

/* Canonical strides of an activation [N, C, sp...] stored NCX or
 * channels-last, densely. */
static void activation_strides(const tester_t *t, long C, const int64_t *sp,
        int64_t *s) {
    int nsp = t->nsp;
    if (t->channels_last) {
        int64_t acc = 1;
        s[1] = acc;
        acc *= C;
        for (int i = nsp - 1; i >= 0; i--) {
            s[2 + i] = acc;
            acc *= sp[i];
        }
        s[0] = acc;
    } else {
        int64_t acc = 1;
        for (int i = nsp - 1; i >= 0; i--) {
            s[2 + i] = acc;
            acc *= sp[i];
        }
        s[1] = acc;
        s[0] = acc * C;
    }
}

/* The user's logical tensor of an activation from its canonical strides. */
static void activation_lt(const tester_t *t, size_t id, long C,
        const int64_t *sp, const int64_t *s, dgrad_logical_tensor_t *lt) {
    int64_t dims[5], strides[5];
    int nd = 2 + t->nsp;
    int nxc = onednn_graph(t->kind) && t->channels_last == 1;
    dims[0] = t->N;
    strides[0] = s[0];
    if (nxc) {
        for (int i = 0; i < t->nsp; i++) {
            dims[1 + i] = sp[i];
            strides[1 + i] = s[2 + i];
        }
        dims[nd - 1] = C;
        strides[nd - 1] = s[1];
    } else {
        dims[1] = C;
        strides[1] = s[1];
        for (int i = 0; i < t->nsp; i++) {
            dims[2 + i] = sp[i];
            strides[2 + i] = s[2 + i];
        }
    }
    dgrad_logical_tensor_init_with_strides(lt, id, t->dt, nd, dims, strides,
            dgrad_property_type_variable);
}

/* Output canonical strides from the logical tensor dgrad returned. */
static void canonical_from_lt(const tester_t *t,
        const dgrad_logical_tensor_t *lt, int64_t *s) {
    int nxc = onednn_graph(t->kind) && t->channels_last == 1;
    s[0] = lt->strides[0];
    if (nxc) {
        s[1] = lt->strides[lt->ndims - 1];
        for (int i = 0; i < t->nsp; i++) s[2 + i] = lt->strides[1 + i];
    } else {
        for (int i = 1; i < lt->ndims; i++) s[i] = lt->strides[i];
    }
}

/* User weights logical tensor plus canonical strides [G, ci, co, K...]. */
static void weights_layout(const tester_t *t, dgrad_logical_tensor_t *lt,
        int64_t *s) {
    const long cin_g = t->Cin / t->G, cout_g = t->Cout / t->G;
    int nsp = t->nsp;
    int64_t dims[6];
    int nd = 0;
    int64_t kprod = 1;
    for (int i = 0; i < nsp; i++) kprod *= t->K[i];
    if (t->weights_xio) { /* [K..., Cout/G, Cin] */
        int64_t acc = t->Cin * cout_g;
        for (int i = nsp - 1; i >= 0; i--) {
            s[3 + i] = acc;
            acc *= t->K[i];
        }
        s[0] = cin_g;
        s[1] = 1;
        s[2] = t->Cin;
        for (int i = 0; i < nsp; i++) dims[nd++] = t->K[i];
        dims[nd++] = cout_g;
        dims[nd++] = t->Cin;
    } else { /* bytes [G][Cin/G][Cout/G][K...] */
        int64_t acc = 1;
        for (int i = nsp - 1; i >= 0; i--) {
            s[3 + i] = acc;
            acc *= t->K[i];
        }
        s[2] = kprod;
        s[1] = kprod * cout_g;
        s[0] = kprod * cout_g * cin_g;
        if (t->kind == dgrad_op_group_convolution_backprop_data) {
            dims[nd++] = t->G;
            dims[nd++] = cin_g;
        } else {
            dims[nd++] = t->Cin;
        }
        dims[nd++] = cout_g;
        for (int i = 0; i < nsp; i++) dims[nd++] = t->K[i];
    }
    dgrad_logical_tensor_init(lt, 2, t->dt, nd, dims,
            dgrad_layout_type_strided,
            t->constant_weights ? dgrad_property_type_constant
                                : dgrad_property_type_variable);
}

static int64_t span_of(const int64_t *dims, const int64_t *s, int nd) {
    int64_t last = 0;
    for (int i = 0; i < nd; i++) last += (dims[i] - 1) * s[i];
    return last + 1;
}

static void fill_random(void *buf, dgrad_data_type_t dt, int64_t n,
        unsigned *state) {
    for (int64_t i = 0; i < n; i++) {
        *state = *state * 1103515245u + 12345u;
        dgrad_store(buf, dt, i, (double)((int)((*state >> 16) % 7u) - 3));
    }
}

static int64_t natural_size(const tester_t *t, int i) {
    return t->S[i] * (t->X[i] - 1) + (t->K[i] - 1) * t->D[i] + 1;
}

static int64_t floor_half(int64_t v) {
    return v >= 0 ? v / 2 : -((-v + 1) / 2);
}

/* Expected PB of axis i for output size Y: the dialect's rule, written
 * independently of src/problem.c (DESIGN.md section 1). With a shape the
 * pads of OpenVINO and ONNX are ignored: total = F + output_padding - Y. */
static int64_t expected_pb(const tester_t *t, int i, int64_t Y) {
    if (t->shape_mode == tester_shape_none
            || t->kind == dgrad_op_convolution_backward_data)
        return t->pb[i];
    int64_t total = natural_size(t, i) + t->op[i] - Y;
    if (t->kind == dgrad_op_conv_transpose) return total - floor_half(total);
    return total > 0 ? total / 2 : 0; /* OpenVINO explicit */
}

/* Dialect position of canonical activation axis d ([N, C, sp...]). */
static int dialect_pos(const tester_t *t, int d) {
    int nxc = onednn_graph(t->kind) && t->channels_last == 1;
    if (!nxc || d == 0) return d;
    return d == 1 ? t->nsp + 1 : d - 1;
}

/* The operand of post-op @p po for output sizes @p Y: dense, in the
 * dialect's order, broadcast as the post-op asks. */
static void operand_lt(const tester_t *t, const tester_post_op_t *po,
        const int64_t *Y, size_t id, dgrad_logical_tensor_t *lt) {
    int R = 2 + t->nsp;
    int64_t odims[5], dims[5];
    odims[dialect_pos(t, 0)] = t->N;
    odims[dialect_pos(t, 1)] = t->Cout;
    for (int i = 0; i < t->nsp; i++) odims[dialect_pos(t, 2 + i)] = Y[i];
    int r = R;
    if (!strcmp(po->kind, "BiasAdd")) {
        r = 1;
        dims[0] = t->Cout;
    } else {
        r = po->rank ? po->rank : R;
        for (int j = 0; j < r; j++)
            dims[j] = po->broadcast & (1u << (R - r + j)) ? 1
                                                          : odims[R - r + j];
    }
    dgrad_logical_tensor_init(lt, id, operand_dt(t, po), r, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
}

/* Canonical view of an operand (dims 1 where it broadcasts). */
static void operand_canonical(const tester_t *t, const tester_post_op_t *po,
        const dgrad_logical_tensor_t *lt, dgrad_post_op_t *c) {
    int R = 2 + t->nsp, r = lt->ndims;
    c->dt = lt->data_type;
    for (int d = 0; d < R; d++) {
        int pos = dialect_pos(t, d), q;
        if (!strcmp(po->kind, "BiasAdd")) q = d == 1 ? 0 : -1;
        else q = pos - (R - r);
        c->dims[d] = q >= 0 ? lt->dims[q] : 1;
        c->strides[d] = q >= 0 && lt->dims[q] > 1 ? lt->strides[q] : 0;
    }
}

static dgrad_op_t *build_op(const tester_t *t, const int64_t *Y) {
    dgrad_op_t *op = NULL;
    if (dgrad_op_create(&op, 0, t->kind, "tester") != dgrad_success)
        return NULL;
    int n = t->nsp;
    int64_t v[8];
    int onednn = onednn_graph(t->kind);
    int onnx = t->kind == dgrad_op_conv_transpose;
    const char *kernel_first = t->kind == dgrad_op_convolution_backward_data
            ? "XIO" : "XOI";
    const char *kernel_last = t->kind == dgrad_op_convolution_backward_data
            ? "OIX" : "IOX";
#define LIST(field) (v[0] = t->field[0], v[1] = t->field[1], v[2] = t->field[2], v)
    int ok = dgrad_op_set_attr_s64s(op, dgrad_op_attr_strides, LIST(S), n) == 0
            && dgrad_op_set_attr_s64s(op, dgrad_op_attr_dilations, LIST(D), n) == 0
            && dgrad_op_set_attr_s64s(op, dgrad_op_attr_output_padding, LIST(op), n) == 0;
#undef LIST
    if (onnx) {
        for (int i = 0; i < n; i++) {
            v[i] = t->pb[i];
            v[n + i] = t->pe[i];
        }
        ok = ok && dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads, v, 2 * n) == 0;
        ok = ok && dgrad_op_set_attr_s64(op, dgrad_op_attr_group, t->G) == 0;
    } else {
        for (int i = 0; i < n; i++) v[i] = t->pb[i];
        ok = ok && dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_begin, v, n) == 0;
        for (int i = 0; i < n; i++) v[i] = t->pe[i];
        ok = ok && dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_end, v, n) == 0;
    }
    if (onednn) {
        ok = ok && dgrad_op_set_attr_s64(op, dgrad_op_attr_groups, t->G) == 0;
        ok = ok && dgrad_op_set_attr_str(op, dgrad_op_attr_data_format,
                t->channels_last == 1 ? "NXC" : "NCX") == 0;
        ok = ok && dgrad_op_set_attr_str(op, dgrad_op_attr_weights_format,
                t->weights_xio ? kernel_first : kernel_last) == 0;
    }
    if (t->shape_mode == tester_shape_attr) {
        if (onednn) {
            int nxc = t->channels_last == 1;
            v[0] = t->N;
            for (int i = 0; i < n; i++) v[(nxc ? 1 : 2) + i] = Y[i];
            v[nxc ? n + 1 : 1] = t->Cout;
            ok = ok && dgrad_op_set_attr_s64s(op, dgrad_op_attr_dst_shape, v, n + 2) == 0;
        } else {
            for (int i = 0; i < n; i++) v[i] = Y[i];
            ok = ok && dgrad_op_set_attr_s64s(op, dgrad_op_attr_output_shape, v, n) == 0;
        }
    }
    for (int i = 0; ok && i < t->n_post; i++) {
        const tester_post_op_t *po = &t->post[i];
        const char *names[3], *values[3];
        size_t n_attrs = 0;
        for (int a = 0; a < 2 && po->attr[a][0]; a++, n_attrs++) {
            names[n_attrs] = po->attr[a][0];
            values[n_attrs] = po->attr[a][1];
        }
        if (!strcmp(po->kind, "BiasAdd")) {
            names[n_attrs] = "data_format";
            values[n_attrs++] = onednn && t->channels_last == 1 ? "NXC" : "NCX";
        }
        ok = dgrad_op_append_post_op(op, po->kind, n_attrs, names, values) == 0;
    }
    if (!ok) {
        dgrad_op_destroy(op);
        return NULL;
    }
    return op;
}

/* The canonical problem of @p t for output spatial sizes @p Y, as the
 * reference sees it; output strides from the tensor dgrad reported. */
static void reference_problem(const tester_t *t, const int64_t *Y,
        const dgrad_logical_tensor_t *out_lt, dgrad_problem_t *p) {
    memset(p, 0, sizeof *p);
    p->nsp = t->nsp;
    p->dt = t->dt;
    p->N = t->N;
    p->G = t->G;
    p->Cin = t->Cin;
    p->Cout = t->Cout;
    for (int i = 0; i < t->nsp; i++) {
        p->X[i] = t->X[i];
        p->K[i] = t->K[i];
        p->S[i] = t->S[i];
        p->D[i] = t->D[i];
        p->Y[i] = Y[i];
        p->PB[i] = expected_pb(t, i, Y[i]);
    }
    activation_strides(t, t->Cin, p->X, p->in_strides);
    dgrad_logical_tensor_t wei;
    weights_layout(t, &wei, p->wei_strides);
    canonical_from_lt(t, out_lt, p->out_strides);
    p->has_bias = t->bias;
    p->bias_stride = t->bias ? 1 : 0;
    p->n_post_ops = t->n_post;
    for (int i = 0; i < t->n_post; i++) {
        dgrad_post_op_t *c = &p->post_ops[i];
        post_alg(&t->post[i], &c->alg, &c->alpha, &c->beta);
        if (!dgrad_post_alg_is_binary(c->alg)) continue;
        dgrad_logical_tensor_t lt;
        operand_lt(t, &t->post[i], Y, 0, &lt);
        operand_canonical(t, &t->post[i], &lt, c);
    }
}

void tester_case_destroy(tester_case_t *c) {
    dgrad_compiled_op_destroy(c->compiled);
    dgrad_op_destroy(c->op);
    free(c->in);
    free(c->wei);
    free(c->bias);
    for (int i = 0; i < c->n_operands; i++) free(c->operands[i]);
    memset(c, 0, sizeof *c);
}

size_t tester_case_shape_values(const tester_case_t *c, const int64_t *Y,
        int64_t *values) {
    const tester_t *t = &c->t;
    size_t n = 0;
    if (t->kind == dgrad_op_convolution_backward_data) {
        int64_t s[5];
        dgrad_logical_tensor_t o;
        activation_strides(t, t->Cout, Y, s);
        activation_lt(t, 3, t->Cout, Y, s, &o);
        for (int i = 0; i < o.ndims; i++) values[n++] = o.dims[i];
    } else {
        for (int i = 0; i < t->nsp; i++) values[n++] = Y[i];
    }
    return n;
}

int64_t tester_case_output_count(const tester_case_t *c, const int64_t *Y) {
    int64_t n = c->t.N * c->t.Cout;
    for (int i = 0; i < c->t.nsp; i++) n *= Y[i];
    return n;
}

void tester_init_unreached(tester_t *t) {
    tester_init(t, dgrad_op_conv_transpose, 1);
    t->X[0] = 1;
    t->K[0] = 1;
    t->S[0] = 2;
    t->pb[0] = 1;
    t->op[0] = 1;
    t->bias = 1;
}

int tester_case_create(tester_case_t *c, const tester_t *t, char *why,
        size_t why_size) {
    const int nsp = t->nsp;
    unsigned state = t->seed;
    memset(c, 0, sizeof *c);
    c->t = *t;
    int64_t X[3], in_strides[5], out_strides[5], wei_strides[6];
    for (int i = 0; i < nsp; i++) {
        X[i] = t->X[i];
        c->Y[i] = natural_size(t, i) - t->pb[i] - t->pe[i] + t->op[i];
    }
    activation_strides(t, t->Cin, X, in_strides);
    activation_strides(t, t->Cout, c->Y, out_strides);
    activation_lt(t, 1, t->Cin, X, in_strides, &c->inputs[0]);
    weights_layout(t, &c->inputs[1], wei_strides);
    c->n_inputs = 2;
    if (t->shape_mode >= tester_shape_input) {
        int64_t values[8];
        int64_t d = (int64_t)tester_case_shape_values(c, c->Y, values);
        dgrad_logical_tensor_init(&c->inputs[2], 4, dgrad_s64, 1, &d,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        c->n_inputs = 3;
    }
    if (t->bias) {
        int64_t d = t->Cout;
        dgrad_logical_tensor_init(&c->inputs[2], 4, t->dt, 1, &d,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        c->n_inputs = 3;
    }
    c->n_own_inputs = c->n_inputs;
    for (int i = 0; i < t->n_post; i++) {
        const tester_post_op_t *po = &t->post[i];
        if (!post_has_operand(po)) continue;
        dgrad_logical_tensor_t *lt = &c->inputs[c->n_inputs++];
        operand_lt(t, po, c->Y, 5 + (size_t)i, lt);
        int64_t n = span_of(lt->dims, lt->strides, lt->ndims);
        void *buf = malloc((size_t)n * dgrad_data_type_size(lt->data_type));
        if (!buf) {
            tester_case_destroy(c);
            return fail(why, why_size, "out of memory");
        }
        c->operands[c->n_operands++] = buf;
        /* divisors 1..4, other operands -3..3 */
        int divide = !strcmp(po->kind, "Divide");
        for (int64_t j = 0; j < n; j++) {
            state = state * 1103515245u + 12345u;
            unsigned r = (state >> 16) % 7u;
            dgrad_store(buf, lt->data_type, j,
                    divide ? (double)(1 + r % 4) : (double)((int)r - 3));
        }
    }
    if (t->shape_mode == tester_shape_input_deferred) {
        dgrad_logical_tensor_init(&c->output, 3, t->dt, DGRAD_UNKNOWN_NDIMS,
                NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    } else {
        activation_lt(t, 3, t->Cout, c->Y, out_strides, &c->output);
        if (t->output_any) c->output.layout_type = dgrad_layout_type_any;
    }

    size_t es = dgrad_data_type_size(t->dt);
    int64_t in_span = span_of(c->inputs[0].dims, c->inputs[0].strides,
            c->inputs[0].ndims);
    int64_t wei_span = span_of(c->inputs[1].dims, c->inputs[1].strides,
            c->inputs[1].ndims);
    c->in = malloc((size_t)in_span * es);
    c->wei = malloc((size_t)wei_span * es);
    c->bias = t->bias ? malloc((size_t)t->Cout * es) : NULL;
    if (!c->in || !c->wei || (t->bias && !c->bias)) {
        tester_case_destroy(c);
        return fail(why, why_size, "out of memory");
    }
    fill_random(c->in, t->dt, in_span, &state);
    fill_random(c->wei, t->dt, wei_span, &state);
    if (t->bias) fill_random(c->bias, t->dt, t->Cout, &state);

    c->op = build_op(t, c->Y);
    if (!c->op) {
        fail(why, why_size, "building the op failed: %s",
                dgrad_last_error_message());
        tester_case_destroy(c);
        return 0;
    }
    dgrad_status_t st = dgrad_compiled_op_create(&c->compiled, c->op,
            c->n_inputs, c->inputs, &c->output);
    if (st != dgrad_success) {
        fail(why, why_size, "compile failed: %s: %s", dgrad_status_name(st),
                dgrad_last_error_message());
        tester_case_destroy(c);
        return 0;
    }
    return 1;
}

/* A value in type @p dt, as a store rounds it. */
static double rounded(dgrad_data_type_t dt, double v) {
    unsigned char buf[8] = {0};
    dgrad_store(buf, dt, 0, v);
    return dgrad_load(buf, dt, 0);
}

/* Whether @p got, an element after the post-ops, is right. The chain
 * runs in f32 (oneDNN's approximations of exp, tanh, erf ... are good to a
 * few f32 ulps); a 16-bit output may be rounded before the chain as well
 * as after (an unfused pass reads the stored value): either reading
 * passes, within one unit of the output type's last place plus the f32
 * error. Non-finite and huge results must agree in kind and sign. */
static int got_matches_chain(const dgrad_problem_t *p, const tester_case_t *c,
        const int64_t *idx, double got, double want) {
    const void *const *ops = (const void *const *)c->operands;
    double pre = dgrad_reference_point(p, c->in, c->wei, c->bias, idx[0],
            idx[1], idx + 2, NULL);
    double candidates[2] = {want, rounded(p->dt,
            dgrad_reference_post_ops(p, ops, idx[0], idx[1], idx + 2,
                    rounded(p->dt, pre)))};
    double ulp = p->dt == dgrad_f32 ? 0x1p-23 : p->dt == dgrad_bf16 ? 0x1p-7
                                                                   : 0x1p-10;
    for (int k = 0; k < 2; k++) {
        double w = candidates[k];
        if (isnan(w) && isnan(got)) return 1;
        int huge_w = !(fabs(w) < 1e30), huge_g = !(fabs(got) < 1e30);
        if (huge_w || huge_g) {
            if (huge_w && huge_g && (w > 0) == (got > 0)) return 1;
            continue;
        }
        double tol = (ulp + 1e-5) * fabs(w) + 1e-5;
        if (fabs(got - w) <= tol) return 1;
    }
    return 0;
}

int tester_case_check(const tester_case_t *c, const int64_t *Y,
        const dgrad_logical_tensor_t *out_lt, const void *out, char *why,
        size_t why_size) {
    const tester_t *t = &c->t;
    const int nsp = t->nsp;
    int64_t s[5];
    dgrad_logical_tensor_t expected_out;
    activation_strides(t, t->Cout, Y, s);
    activation_lt(t, 3, t->Cout, Y, s, &expected_out);
    if (out_lt->ndims != expected_out.ndims)
        return fail(why, why_size, "output rank is %d, expected %d",
                (int)out_lt->ndims, (int)expected_out.ndims);
    for (int i = 0; i < expected_out.ndims; i++)
        if (out_lt->dims[i] != expected_out.dims[i])
            return fail(why, why_size, "output dim %d is %lld, expected %lld",
                    i, (long long)out_lt->dims[i],
                    (long long)expected_out.dims[i]);
    int64_t count = tester_case_output_count(c, Y);
    if (span_of(out_lt->dims, out_lt->strides, out_lt->ndims) > count)
        return fail(why, why_size, "dgrad chose a non-dense output layout");

    dgrad_problem_t p;
    reference_problem(t, Y, out_lt, &p);
    void *ref = malloc((size_t)count * dgrad_data_type_size(t->dt));
    if (!ref) return fail(why, why_size, "out of memory");
    dgrad_reference_compute_fused(&p, c->in, c->wei, c->bias,
            (const void *const *)c->operands, ref, NULL);

    /* Compare every element through the canonical index space. */
    int passed = 1;
    int64_t idx[5] = {0};
    int nd = 2 + nsp;
    int64_t cdims[5] = {t->N, t->Cout, Y[0], nsp > 1 ? Y[1] : 1,
            nsp > 2 ? Y[2] : 1};
    for (;;) {
        int64_t off = 0;
        for (int i = 0; i < nd; i++) off += idx[i] * p.out_strides[i];
        double got = dgrad_load(out, t->dt, off);
        double want = dgrad_load(ref, t->dt, off);
        if (p.n_post_ops && !got_matches_chain(&p, c, idx, got, want)) {
            passed = fail(why, why_size,
                    "mismatch at canonical index [%lld,%lld,%lld,%lld,%lld]: "
                    "got %.9g, want %.9g (post-ops, beyond the tolerance)",
                    (long long)idx[0], (long long)idx[1], (long long)idx[2],
                    (long long)idx[3], (long long)idx[4], got, want);
            break;
        }
        if (!p.n_post_ops && !(got == want)) {
            passed = fail(why, why_size,
                    "mismatch at canonical index [%lld,%lld,%lld,%lld,%lld]: "
                    "got %g, want %g", (long long)idx[0], (long long)idx[1],
                    (long long)idx[2], (long long)idx[3], (long long)idx[4],
                    got, want);
            break;
        }
        int i = nd - 1;
        while (i >= 0 && ++idx[i] == cdims[i]) idx[i--] = 0;
        if (i < 0) break;
    }
    free(ref);
    return passed;
}

/* The input an in-place run passes the output buffer as, found from the
 * logical tensors (not dgrad's canonical views): the first Add operand
 * with the output's dims, strides (on axes of two or more) and type; -1
 * when there is none. */
static int64_t expected_in_place_input(const tester_case_t *c,
        const dgrad_logical_tensor_t *out) {
    for (int i = 0, k = 0; i < c->t.n_post; i++) {
        const tester_post_op_t *po = &c->t.post[i];
        if (!post_has_operand(po)) continue;
        size_t index = c->n_own_inputs + (size_t)k++;
        const dgrad_logical_tensor_t *lt = &c->inputs[index];
        int same = !strcmp(po->kind, "Add") && lt->ndims == out->ndims
                && lt->data_type == out->data_type;
        for (int d = 0; same && d < lt->ndims; d++)
            same = lt->dims[d] == out->dims[d]
                    && (lt->dims[d] == 1 || lt->strides[d] == out->strides[d]);
        if (same) return (int64_t)index;
    }
    return -1;
}

/* Checks the in-place input dgrad reports and makes @p bufs pass the
 * output buffer as it. Returns the operand's number among the case's
 * operands (its values go into the output before each execution), or -1
 * with @p why. */
static int in_place_setup(const tester_case_t *c, const void **bufs,
        void *out, char *why, size_t why_size) {
    int64_t want = expected_in_place_input(c, &c->output), got = -2;
    dgrad_status_t st = dgrad_compiled_op_query_in_place_input(c->compiled,
            &got);
    if (st != dgrad_success || got != want || want < 0) {
        fail(why, why_size, "in-place input: dgrad says %lld (%s), the "
                "tester %lld", (long long)got, dgrad_status_name(st),
                (long long)want);
        return -1;
    }
    bufs[want] = out;
    return (int)(want - (int64_t)c->n_own_inputs);
}

int tester_run(const tester_t *t, char *why, size_t why_size) {
    tester_case_t c;
    if (!tester_case_create(&c, t, why, why_size)) return 0;
    size_t es = dgrad_data_type_size(t->dt);
    int64_t count = tester_case_output_count(&c, c.Y);
    int64_t shape_values[8];
    tester_case_shape_values(&c, c.Y, shape_values);
    void *out = malloc((size_t)count * es);
    int passed = 0;
    if (!out) {
        fail(why, why_size, "out of memory");
        goto done;
    }
    memset(out, 0x7f, (size_t)count * es); /* garbage dgrad must overwrite */
    const void *bufs[3 + TESTER_MAX_POST] = {c.in, c.wei,
            t->bias ? c.bias : shape_values};
    for (int i = 0; i < c.n_operands; i++)
        bufs[c.n_own_inputs + (size_t)i] = c.operands[i];
    dgrad_logical_tensor_t out_lt = c.output;
    int shared = t->in_place ? in_place_setup(&c, bufs, out, why, why_size)
                             : -1;
    if (t->in_place && shared < 0) goto done;
    for (int e = 0; e < t->executions; e++) {
        dgrad_status_t st;
        if (shared >= 0)
            memcpy(out, c.operands[shared], (size_t)count * es);
        if (t->shape_mode == tester_shape_input_deferred)
            st = dgrad_compiled_op_execute_dynamic(c.compiled, c.n_inputs,
                    bufs, out, (size_t)count * es, &out_lt);
        else
            st = dgrad_compiled_op_execute(c.compiled, c.n_inputs, bufs, out);
        if (st != dgrad_success) {
            fail(why, why_size, "execute failed: %s: %s",
                    dgrad_status_name(st), dgrad_last_error_message());
            goto done;
        }
    }
    passed = tester_case_check(&c, c.Y, &out_lt, out, why, why_size);
    if (!passed) {
        size_t u = strlen(why);
        snprintf(why + u, why_size - u, " (impl %s)",
                dgrad_compiled_op_impl_name(c.compiled));
    }
done:
    free(out);
    tester_case_destroy(&c);
    return passed;
}
