/*
 * The conformance model: DESIGN.md section 1 (dialects -> canonical
 * problem) written a second time, from the specification and not from
 * src/problem.c, so that a slip in the dialect layer shows up as a mismatch
 * instead of being shared by dgrad and its oracle. It only has to resolve
 * valid cases: invalid ones carry the status dgrad must return, and dgrad's
 * own validation is what they test.
 *
 * The fifth dialect, oneDNN Graph's inference op ConvTranspose
 * ("onednn:ConvTranspose"), is written from oneDNN 3.7.1's specification
 * (doc/graph/operations/ConvTranspose.md) and its library's shape
 * inference (infer_convtranspose_output_shape, infer_auto_pad): the
 * output shape is always inferred from the attributes (explicit pads,
 * VALID, or SAME_* by the kernel alone, plus output_padding without a
 * bound), and output dims a tensor gives only have to agree with it.
 *
 * A case's post-op chain is resolved last, against the output resolved
 * here (model_post.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

static int fail(char *why, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int fail(char *why, size_t size, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(why, size, fmt, args);
    va_end(args);
    return 0;
}

enum { AP_EXPLICIT, AP_SAME_UPPER, AP_SAME_LOWER, AP_VALID };

static int lower_eq(const char *a, const char *b) {
    for (; *a && *b; a++, b++) {
        int x = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a;
        if (x != *b) return 0;
    }
    return *a == *b;
}

/* auto_pad in any dialect's spelling (every dialect ignores case). */
static int parse_auto_pad(const char *text, int *ap) {
    if (!text || lower_eq(text, "explicit") || lower_eq(text, "none")
            || lower_eq(text, "notset"))
        *ap = AP_EXPLICIT;
    else if (lower_eq(text, "same_upper")) *ap = AP_SAME_UPPER;
    else if (lower_eq(text, "same_lower")) *ap = AP_SAME_LOWER;
    else if (lower_eq(text, "valid")) *ap = AP_VALID;
    else return 0;
    return 1;
}

/* oneDNN Graph writes an unset dst_shape or output_padding as 12 zeros
 * (DNNL_MAX_NDIMS): all zeros (or none) of any length is "not given" for
 * these attributes of its two ops (ConvTranspose has no dst_shape). */

static int all_zero(const int64_t *v, int n) {
    for (int i = 0; i < n; i++)
        if (v[i]) return 0;
    return 1;
}

/* Not inlined: GCC 12's -Wstring-compare then flags the comparisons
 * with the shorter literal a caller passes, which are rightly false. */
__attribute__((noinline)) static int zero_means_unset(const cf_case_t *c,
        const char *name) {
    if (c->kind == dgrad_op_onednn_conv_transpose)
        return !strcmp(name, "output_padding");
    return c->kind == dgrad_op_convolution_backward_data
            && (!strcmp(name, "dst_shape") || !strcmp(name, "output_padding"));
}

/* Integer-list attribute of length @p need, or @p dflt everywhere. */
static int list_attr(const cf_case_t *c, const char *name, int need,
        int64_t dflt, int64_t *v, char *why, size_t size) {
    const char *text = cf_case_attr(c, name);
    int64_t parsed[CF_MAX_LIST]; /* @p v holds only @p need values */
    int n = 0;
    if (text && !cf_parse_ints(text, parsed, CF_MAX_LIST, &n))
        return fail(why, size, "%s '%.64s' is not an integer list", name, text);
    if (!text || (zero_means_unset(c, name) && all_zero(parsed, n))) {
        for (int i = 0; i < need; i++) v[i] = dflt;
        return 1;
    }
    if (n != need)
        return fail(why, size, "%s has %d values, expected %d", name, n, need);
    memcpy(v, parsed, (size_t)n * sizeof *v);
    return 1;
}

int cf_model_act_pos(const cf_geom_t *g, int d) {
    if (!g->nxc || d == 0) return d;
    return d == 1 ? g->nsp + 1 : d - 1;
}

void cf_model_output_dims(const cf_geom_t *g, int64_t *dims) {
    dims[0] = g->N;
    dims[cf_model_act_pos(g, 1)] = g->Cout;
    for (int i = 0; i < g->nsp; i++) dims[cf_model_act_pos(g, 2 + i)] = g->Y[i];
}

void cf_model_act_strides(const cf_geom_t *g, const int64_t *user,
        int64_t *canon) {
    for (int d = 0; d < 2 + g->nsp; d++) canon[d] = user[cf_model_act_pos(g, d)];
}

void cf_model_wei_strides(const cf_geom_t *g, const int64_t *user,
        int64_t *canon) {
    const int nsp = g->nsp;
    const int64_t cin_g = g->Cin / g->G;
    if (g->kind == dgrad_op_group_convolution_backprop_data) {
        for (int d = 0; d < 3 + nsp; d++) canon[d] = user[d];
        return;
    }
    /* One Cin dim holding g * Cin/G + ci: group stride = Cin/G rows. */
    int ci = g->xio ? nsp + 1 : 0, co = g->xio ? nsp : 1, k0 = g->xio ? 0 : 2;
    canon[0] = cin_g * user[ci];
    canon[1] = user[ci];
    canon[2] = user[co];
    for (int i = 0; i < nsp; i++) canon[3 + i] = user[k0 + i];
}

/* Arithmetic on file values: any overflow makes the case one the model
 * cannot resolve (dgrad must reject such sizes anyway). */
static int ovf(char *why, size_t size, const char *what) {
    return fail(why, size, "%s overflows 64 bits", what);
}

/* floor(a / 2), rounding toward minus infinity. */
static int64_t floor_half(int64_t a) { return a / 2 - (a < 0 && a % 2); }

/* Weights: kernel sizes, G, Cout; checks Cin. */
static int read_weights(const cf_case_t *c, cf_geom_t *g, char *why,
        size_t size) {
    const cf_tensor_t *w = &c->weights;
    const int nsp = g->nsp;
    int grouped = g->kind == dgrad_op_group_convolution_backprop_data;
    int want = 2 + nsp + grouped;
    if (w->ndims != want)
        return fail(why, size, "weights rank %d, expected %d", (int)w->ndims,
                want);
    for (int d = 0; d < w->ndims; d++)
        if (w->dims[d] < 1)
            return fail(why, size, "weights dim %d is %lld", d,
                    (long long)w->dims[d]);
    int64_t wcin, cout_g, v[1] = {0};
    const int64_t *k;
    if (grouped) { /* [G, Cin/G, Cout/G, K...] */
        g->G = w->dims[0];
        if (__builtin_mul_overflow(w->dims[0], w->dims[1], &wcin))
            return ovf(why, size, "weights channels");
        cout_g = w->dims[2];
        k = &w->dims[3];
    } else if (g->xio) { /* [K..., Cout/G, Cin]: XIO, or ConvTranspose's XOI */
        wcin = w->dims[nsp + 1];
        cout_g = w->dims[nsp];
        k = &w->dims[0];
    } else { /* [Cin, Cout/G, K...]: OIX, IOX, OpenVINO, ONNX */
        wcin = w->dims[0];
        cout_g = w->dims[1];
        k = &w->dims[2];
    }
    if (!grouped) {
        const char *gname = g->kind == dgrad_op_convolution_backward_data
                        || g->kind == dgrad_op_onednn_conv_transpose
                ? "groups" : g->kind == dgrad_op_conv_transpose ? "group" : NULL;
        if (!gname) v[0] = 1;
        else if (!list_attr(c, gname, 1, 1, v, why, size)) return 0;
        g->G = v[0];
    }
    if (g->G < 1 || g->Cin % g->G)
        return fail(why, size, "groups %lld do not divide %lld channels",
                (long long)g->G, (long long)g->Cin);
    if (wcin != g->Cin)
        return fail(why, size, "weights hold %lld input channels, data %lld",
                (long long)wcin, (long long)g->Cin);
    if (__builtin_mul_overflow(g->G, cout_g, &g->Cout))
        return ovf(why, size, "output channels");
    for (int i = 0; i < nsp; i++) g->K[i] = k[i];
    return 1;
}

/* The requested output's dims, when all are known. */
static int output_dims_known(const cf_case_t *c) {
    if (c->output.ndims < 1) return 0;
    for (int d = 0; d < c->output.ndims; d++)
        if (c->output.dims[d] < 0) return 0;
    return 1;
}

/* Every output dim the case's output tensor knows (>= 0) is the one of
 * @p g; a known rank is 2 + spatial rank. */
static int output_dims_agree(const cf_case_t *c, const cf_geom_t *g,
        char *why, size_t size) {
    int64_t want[2 + CF_MAX_SPATIAL];
    char a[96], b[96];
    if (c->output.ndims < 0) return 1;
    cf_model_output_dims(g, want);
    int same = c->output.ndims == 2 + g->nsp;
    for (int d = 0; same && d < c->output.ndims; d++)
        same = c->output.dims[d] < 0 || c->output.dims[d] == want[d];
    if (same) return 1;
    return fail(why, size, "output dims %s differ from the inferred %s",
            cf_format_ints(a, sizeof a, c->output.dims, c->output.ndims),
            cf_format_ints(b, sizeof b, want, 2 + g->nsp));
}

/* The output shape the case gives (spatial sizes in @p y), if any. oneDNN
 * Graph: the dst_shape input, else the attribute (not all zeros), else the
 * output tensor's dims when all are known; known dims must agree with a
 * dst_shape. */
static int given_shape(const cf_case_t *c, const cf_geom_t *g, int *given,
        int64_t *y, char *why, size_t size) {
    int64_t v[CF_MAX_LIST];
    int n = 0, full = g->kind == dgrad_op_convolution_backward_data;
    *given = 0;
    if (c->third == cf_third_shape) {
        n = c->n_shape;
        memcpy(v, c->shape_values, (size_t)n * sizeof *v);
    } else if (full || g->kind == dgrad_op_conv_transpose) {
        const char *name = full ? "dst_shape" : "output_shape";
        const char *text = cf_case_attr(c, name);
        if (text && !cf_parse_ints(text, v, CF_MAX_LIST, &n))
            return fail(why, size, "%s '%s' is not an integer list", name, text);
        if (full && (!text || all_zero(v, n))) {
            if (!output_dims_known(c)) return 1;
            n = c->output.ndims;
            memcpy(v, c->output.dims, (size_t)n * sizeof *v);
        } else if (!text) {
            return 1;
        }
    } else {
        return 1;
    }
    if (full && output_dims_known(c)
            && (n != c->output.ndims
                    || memcmp(v, c->output.dims, (size_t)n * sizeof *v)))
        return fail(why, size, "dst_shape and the output dims differ");
    int need = full ? g->nsp + 2 : g->nsp;
    if (n != need)
        return fail(why, size, "output shape has %d values, expected %d", n,
                need);
    if (full) {
        if (v[0] != g->N || v[cf_model_act_pos(g, 1)] != g->Cout)
            return fail(why, size, "output shape N/C (%lld, %lld) differ from "
                    "(%lld, %lld)", (long long)v[0],
                    (long long)v[cf_model_act_pos(g, 1)], (long long)g->N,
                    (long long)g->Cout);
        for (int i = 0; i < g->nsp; i++) y[i] = v[cf_model_act_pos(g, 2 + i)];
    } else {
        for (int i = 0; i < g->nsp; i++) y[i] = v[i];
    }
    for (int i = 0; i < g->nsp; i++)
        if (y[i] < 1) return fail(why, size, "output size %lld", (long long)y[i]);
    *given = 1;
    return 1;
}

/* PB (and the check of Y) of axis i for a given output size. */
static int pb_given(const cf_geom_t *g, int ap, int64_t pb, int64_t pe,
        int64_t op, int i, int64_t y, int64_t *PB, char *why, size_t size) {
    int64_t total, lo;
    /* oneDNN Graph: output_padding never changes the result. */
    if (g->kind == dgrad_op_convolution_backward_data) op = 0;
    if (__builtin_add_overflow(g->F[i], op, &total)
            || __builtin_sub_overflow(total, y, &total)
            || __builtin_sub_overflow(g->F[i], pb, &lo)
            || __builtin_sub_overflow(lo, pe, &lo) || lo == INT64_MIN)
        return ovf(why, size, "the padding total");
    int64_t t = total > 0 ? total : 0;
    switch (g->kind) {
        case dgrad_op_convolution_backward_data:
            /* Forward convolution's SAME rule (adjoint of Convolution),
             * total = max(F - Y, 0). */
            if (ap == AP_SAME_UPPER) { *PB = t / 2; return 1; }
            if (ap == AP_SAME_LOWER) { *PB = t - t / 2; return 1; }
            if (ap == AP_VALID) pb = pe = 0, lo = g->F[i];
            /* None/explicit/VALID: pads kept, Y may add less than a stride
             * (y >= 1 and lo > INT64_MIN: y - lo fits unless lo < 0 is
             * huge, which the first test catches). */
            if (y < lo || y - lo >= g->S[i])
                return fail(why, size, "oneDNN Graph output size %lld on axis "
                        "%d is not in [%lld, %lld + stride %lld)", (long long)y,
                        i, (long long)lo, (long long)lo, (long long)g->S[i]);
            *PB = pb;
            return 1;
        case dgrad_op_conv_transpose:
            *PB = ap == AP_SAME_UPPER ? floor_half(total)
                                      : total - floor_half(total);
            return 1;
        default: /* OpenVINO specification: pads ignored */
            if (ap == AP_SAME_UPPER) *PB = t - t / 2;
            else if (ap == AP_VALID) *PB = 0;
            else *PB = t / 2;
            return 1;
    }
}

int cf_model_resolve(const cf_case_t *c, cf_geom_t *g, char *why,
        size_t size) {
    memset(g, 0, sizeof *g);
    g->kind = c->kind;
    const cf_tensor_t *in = &c->data;
    if (in->ndims < 3 || in->ndims > 5)
        return fail(why, size, "data rank %d is not 3, 4 or 5", (int)in->ndims);
    g->nsp = in->ndims - 2;
    const int nsp = g->nsp;
    const int onednn_ct = c->kind == dgrad_op_onednn_conv_transpose;
    if (c->kind == dgrad_op_convolution_backward_data || onednn_ct) {
        /* ConvTranspose names the same two weights layouts after its own
         * channels: XOI = [K..., Cout/G, Cin] has XIO's shape, IOX =
         * [Cin, Cout/G, K...] OIX's. The first is the default of both. */
        const char *x_first = onednn_ct ? "XOI" : "XIO";
        const char *c_first = onednn_ct ? "IOX" : "OIX";
        const char *df = cf_case_attr(c, "data_format");
        const char *wf = cf_case_attr(c, "weights_format");
        if (df && strcmp(df, "NXC") && strcmp(df, "NCX"))
            return fail(why, size, "data_format '%s'", df);
        if (wf && strcmp(wf, x_first) && strcmp(wf, c_first))
            return fail(why, size, "weights_format '%s' (%s or %s)", wf,
                    x_first, c_first);
        g->nxc = !df || !strcmp(df, "NXC"); /* oneDNN Graph defaults */
        g->xio = !wf || !strcmp(wf, x_first);
    }
    if (onednn_ct && c->third == cf_third_shape)
        return fail(why, size, "oneDNN Graph's ConvTranspose has no output "
                "shape input (its inputs are src, weights and bias)");
    for (int d = 0; d < in->ndims; d++)
        if (in->dims[d] < 1)
            return fail(why, size, "data dim %d is %lld", d,
                    (long long)in->dims[d]);
    g->N = in->dims[0];
    g->Cin = in->dims[cf_model_act_pos(g, 1)];
    for (int i = 0; i < nsp; i++) g->X[i] = in->dims[cf_model_act_pos(g, 2 + i)];
    if (!read_weights(c, g, why, size)) return 0;

    int64_t pb[CF_MAX_SPATIAL], pe[CF_MAX_SPATIAL], op[CF_MAX_SPATIAL];
    int64_t pads[2 * CF_MAX_SPATIAL];
    int onnx = c->kind == dgrad_op_conv_transpose;
    if (!list_attr(c, "strides", nsp, 1, g->S, why, size)
            || !list_attr(c, "dilations", nsp, 1, g->D, why, size)
            || !list_attr(c, "output_padding", nsp, 0, op, why, size))
        return 0;
    if (onnx) {
        if (!list_attr(c, "pads", 2 * nsp, 0, pads, why, size)) return 0;
        for (int i = 0; i < nsp; i++) pb[i] = pads[i], pe[i] = pads[nsp + i];
    } else if (!list_attr(c, "pads_begin", nsp, 0, pb, why, size)
            || !list_attr(c, "pads_end", nsp, 0, pe, why, size)) {
        return 0;
    }
    int ap;
    if (!parse_auto_pad(cf_case_attr(c, "auto_pad"), &ap))
        return fail(why, size, "auto_pad '%s'", cf_case_attr(c, "auto_pad"));
    for (int i = 0; i < nsp; i++) {
        if (g->S[i] < 1 || g->D[i] < 1 || pb[i] < 0 || pe[i] < 0 || op[i] < 0)
            return fail(why, size, "axis %d: stride %lld, dilation %lld, pads "
                    "%lld/%lld, output_padding %lld out of range", i,
                    (long long)g->S[i], (long long)g->D[i], (long long)pb[i],
                    (long long)pe[i], (long long)op[i]);
        int64_t reach;
        if (__builtin_mul_overflow(g->S[i], g->X[i] - 1, &g->F[i])
                || __builtin_mul_overflow(g->K[i] - 1, g->D[i], &reach)
                || __builtin_add_overflow(g->F[i], reach, &g->F[i])
                || __builtin_add_overflow(g->F[i], 1, &g->F[i]))
            return ovf(why, size, "the natural output size");
    }
    g->has_bias = c->third == cf_third_bias;
    if (g->has_bias && (c->bias.ndims != 1 || c->bias.dims[0] != g->Cout))
        return fail(why, size, "bias is not [%lld]", (long long)g->Cout);

    int given;
    int64_t y[CF_MAX_SPATIAL];
    if (!given_shape(c, g, &given, y, why, size)) return 0;
    if (!given && c->kind == dgrad_op_convolution_backward_data)
        return fail(why, size, "oneDNN Graph needs an output shape "
                "(dst_shape input, attribute or known output dims)");
    for (int i = 0; i < nsp; i++) {
        if (given) {
            g->Y[i] = y[i];
            if (!pb_given(g, ap, pb[i], pe[i], op[i], i, y[i], &g->PB[i], why,
                        size))
                return 0;
        } else if (onednn_ct && (ap == AP_SAME_UPPER || ap == AP_SAME_LOWER)) {
            /* oneDNN Graph ConvTranspose: SAME pads by the kernel alone,
             * total = max((K-1)*D+1 - S, 0) whatever X (the library's
             * shape inference), the odd unit at the end for SAME_UPPER;
             * output_padding still adds to the end. */
            int64_t total = g->F[i] - g->S[i] * (g->X[i] - 1) - g->S[i];
            if (total < 0) total = 0;
            g->PB[i] = ap == AP_SAME_UPPER ? total / 2 : total - total / 2;
            if (__builtin_add_overflow(g->F[i], op[i], &g->Y[i])
                    || __builtin_sub_overflow(g->Y[i], total, &g->Y[i]))
                return ovf(why, size, "the output size");
        } else if (onnx && (ap == AP_SAME_UPPER || ap == AP_SAME_LOWER)) {
            int64_t total;
            if (__builtin_mul_overflow(g->X[i], g->S[i], &g->Y[i])
                    || __builtin_add_overflow(g->F[i], op[i], &total)
                    || __builtin_sub_overflow(total, g->Y[i], &total))
                return ovf(why, size, "the output size");
            g->PB[i] = ap == AP_SAME_UPPER ? floor_half(total)
                                           : total - floor_half(total);
        } else if (ap == AP_EXPLICIT) {
            g->PB[i] = pb[i];
            if (__builtin_sub_overflow(g->F[i], pb[i], &g->Y[i])
                    || __builtin_sub_overflow(g->Y[i], pe[i], &g->Y[i])
                    || __builtin_add_overflow(g->Y[i], op[i], &g->Y[i]))
                return ovf(why, size, "the output size");
        } else { /* valid; OpenVINO same_*: pads 0 */
            g->PB[i] = 0;
            if (__builtin_add_overflow(g->F[i], op[i], &g->Y[i]))
                return ovf(why, size, "the output size");
        }
        if (g->Y[i] < 1)
            return fail(why, size, "output size %lld on axis %d",
                    (long long)g->Y[i], i);
    }
    /* oneDNN Graph ConvTranspose: the output shape is always inferred;
     * output dims the tensor gives must agree, they never choose it. */
    if (onednn_ct && !output_dims_agree(c, g, why, size)) return 0;
    /* The chain applies to the output as resolved (model_post.c). */
    return cf_model_post_ops(c, g, why, size);
}

/* oneDNN Graph SAME_* with a given output size crops PB = floor(t/2)
 * (upper) or ceil(t/2) (lower), t = max(F - Y, 0); output_padding plays no
 * part. Whether that crop is @p want on axis @p i. */
static int same_gives(const cf_geom_t *g, int i, int lower, int64_t want) {
    int64_t t = g->F[i] - g->Y[i];
    if (t < 0) t = 0;
    return (lower ? t - t / 2 : t / 2) == want;
}

int cf_model_translate(const cf_case_t *c, const cf_geom_t *g, int nxc,
        int xio, cf_case_t *out, char *why, size_t size) {
    const int nsp = g->nsp;
    if (g->has_bias)
        return fail(why, size, "ConvolutionBackwardData has no bias input");
    /* Sizes the runner executes are small; larger ones are not translated
     * (which keeps the arithmetic below far from overflow). */
    const int64_t big = (int64_t)1 << 40;
    for (int i = 0; i < nsp; i++)
        if (g->F[i] > big || g->Y[i] > big || g->PB[i] > big || g->PB[i] < -big
                || g->S[i] > big || g->D[i] > big)
            return fail(why, size, "sizes beyond 2^40 are not translated");
    /* Explicit pads with a dst_shape: Y may exceed F - PB - PE by less than
     * a stride, PB and PE >= 0. Failing that, SAME_UPPER or SAME_LOWER when
     * its crop is the one wanted. */
    int64_t pe[CF_MAX_SPATIAL], op[CF_MAX_SPATIAL] = {0, 0, 0};
    const char *auto_pad = "None";
    int explicit_ok = 1;
    for (int i = 0; i < nsp; i++) {
        int64_t rest = g->F[i] - g->PB[i] - g->Y[i];
        pe[i] = rest > 0 ? rest : 0;
        explicit_ok = explicit_ok && g->PB[i] >= 0 && -rest < g->S[i];
    }
    for (int lower = 0; !explicit_ok && lower < 2; lower++) {
        int ok = 1;
        for (int i = 0; i < nsp && ok; i++) ok = same_gives(g, i, lower, g->PB[i]);
        if (ok) {
            auto_pad = lower ? "SAME_LOWER" : "SAME_UPPER";
            explicit_ok = 1;
            memset(pe, 0, sizeof pe);
        }
    }
    if (!explicit_ok) {
        char a[64], b[64];
        for (int i = 0; i < nsp; i++)
            if (g->PB[i] < 0)
                return fail(why, size, "crop at the beginning is negative "
                        "(%lld) on axis %d", (long long)g->PB[i], i);
        return fail(why, size, "neither explicit pads nor SAME_* give crop "
                "%s with output %s", cf_format_ints(a, sizeof a, g->PB, nsp),
                cf_format_ints(b, sizeof b, g->Y, nsp));
    }
    cf_case_init(out);
    snprintf(out->name, sizeof out->name, "%s", c->name);
    snprintf(out->suite, sizeof out->suite, "%s", c->suite);
    snprintf(out->where, sizeof out->where, "%s", c->where);
    out->kind = dgrad_op_convolution_backward_data;
    out->seed = c->seed;
    out->constant_weights = c->constant_weights;
    cf_geom_t t = *g;
    t.kind = out->kind;
    t.nxc = nxc;
    t.xio = xio;
    char buf[CF_ATTR_VALUE];
    int64_t v[DGRAD_MAX_NDIMS];
    cf_case_add_attr(out, "strides", cf_format_ints(buf, sizeof buf, g->S, nsp));
    cf_case_add_attr(out, "dilations", cf_format_ints(buf, sizeof buf, g->D, nsp));
    int same = strcmp(auto_pad, "None") != 0;
    int64_t zeros[CF_MAX_SPATIAL] = {0, 0, 0};
    cf_case_add_attr(out, "pads_begin",
            cf_format_ints(buf, sizeof buf, same ? zeros : g->PB, nsp));
    cf_case_add_attr(out, "pads_end", cf_format_ints(buf, sizeof buf, pe, nsp));
    cf_case_add_attr(out, "output_padding", cf_format_ints(buf, sizeof buf, op, nsp));
    cf_case_add_attr(out, "auto_pad", auto_pad);
    snprintf(buf, sizeof buf, "%lld", (long long)g->G);
    cf_case_add_attr(out, "groups", buf);
    cf_case_add_attr(out, "data_format", nxc ? "NXC" : "NCX");
    cf_case_add_attr(out, "weights_format", xio ? "XIO" : "OIX");
    cf_model_output_dims(&t, v);
    cf_case_add_attr(out, "dst_shape", cf_format_ints(buf, sizeof buf, v, nsp + 2));

    out->data.ndims = 2 + nsp;
    out->data.dims[0] = g->N;
    out->data.dims[cf_model_act_pos(&t, 1)] = g->Cin;
    for (int i = 0; i < nsp; i++)
        out->data.dims[cf_model_act_pos(&t, 2 + i)] = g->X[i];
    out->weights.ndims = 2 + nsp;
    int64_t *wd = out->weights.dims;
    if (xio) {
        for (int i = 0; i < nsp; i++) wd[i] = g->K[i];
        wd[nsp] = g->Cout / g->G;
        wd[nsp + 1] = g->Cin;
    } else {
        wd[0] = g->Cin;
        wd[1] = g->Cout / g->G;
        for (int i = 0; i < nsp; i++) wd[2 + i] = g->K[i];
    }
    out->output.ndims = 2 + nsp;
    memcpy(out->output.dims, v, sizeof v);
    out->expected.ndims = 2 + nsp;
    memcpy(out->expected.dims, v, sizeof v);
    out->has_expected = 1;
    cf_model_translate_post(c, g, &t, out);
    return 1;
}
