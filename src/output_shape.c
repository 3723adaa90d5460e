/*
 * The output-shape rules of DESIGN.md section 1 ("Resolving PB and Y"):
 * the natural size F per axis, then, per dialect, where the output shape
 * comes from and how PB and Y follow from it.
 *
 * Decisions the specification leaves open:
 * - oneDNN Graph: an all-zero (or empty) dst_shape or output_padding of any
 *   length means "not given" (oneDNN writes unset lists as 12 zeros and
 *   benchdnn's files carry them); a non-zero list must have the right
 *   length. Other attributes and dialects have no such default.
 * - oneDNN Graph output shape: the dst_shape input, else the dst_shape
 *   attribute, else the output tensor's dims when all are known (as
 *   oneDNN's own shape inference does). Known output dims that differ from
 *   a dst_shape are invalid_shape naming both; at execution the dst_shape
 *   input's values are checked against the compiled output dims (api.c),
 *   and a deferred output keeps the spatial dims the caller did know, so
 *   the values are checked against those too. No source at all is
 *   invalid_arguments.
 * - oneDNN Graph output_padding only has to be >= 0 and never changes the
 *   result of ConvolutionBackwardData: the output shape is always known for
 *   this op, so SAME uses total = max(F - Y, 0), and explicit/VALID bound Y
 *   by the stride.
 * - oneDNN Graph ConvTranspose: the shape always comes from the
 *   attributes, Y = F - total pads + output_padding (any output_padding
 *   >= 0, as oneDNN's shape inference); known output dims must agree
 *   (fill_output), as oneDNN checks them and never takes them. SAME: total
 *   = max(dilated kernel - stride, 0), SAME_UPPER crops floor(total / 2)
 *   at the beginning: Y = X * stride + output_padding once the dilated
 *   kernel reaches the stride.
 */
#include <stdio.h>
#include <string.h>

#include "dialect_impl.h"

/* --------------------------------------------- step 9: natural sizes */

dgrad_status_t compute_natural_sizes(ctx_t *c) {
    const dgrad_problem_t *p = &c->r.problem;
    for (int i = 0; i < c->nsp; i++) {
        int64_t a, b;
        if (__builtin_mul_overflow(p->S[i], p->X[i] - 1, &a)
                || __builtin_mul_overflow(p->K[i] - 1, p->D[i], &b)
                || __builtin_add_overflow(a, b, &a)
                || __builtin_add_overflow(a, 1, &c->F[i]))
            return op_error(c->op, dgrad_invalid_shape,
                    "natural output size on axis %d (stride %lld * (%lld - 1)"
                    " + (kernel %lld - 1) * dilation %lld + 1) overflows 64 "
                    "bits", i, (long long)p->S[i], (long long)p->X[i],
                    (long long)p->K[i], (long long)p->D[i]);
    }
    return dgrad_success;
}

/* ----------------------------------- step 10: output shape: PB and Y */

/* floor(a / 2) for any a > INT64_MIN (C division truncates). */
static int64_t floor_half(int64_t a) { return (a - (a < 0)) / 2; }

static dgrad_status_t overflow_error(const ctx_t *c, const char *what, int i) {
    return op_error(c->op, dgrad_invalid_shape,
            "%s on axis %d overflows 64 bits", what, i);
}

/* ONNX splits total = F + op - Y with floor division; total may be
 * negative (Y larger than the natural size), PB then too for SAME_UPPER. */
static int64_t onnx_pb(const ctx_t *c, int64_t total) {
    if (c->auto_pad == dgrad_auto_pad_same_upper) return floor_half(total);
    return total - floor_half(total);
}

/* PB and Y of axis @p i when no output shape is given. */
static dgrad_status_t axis_inferred(const ctx_t *c, int i, int64_t *pb,
        int64_t *y) {
    int64_t F = c->F[i], op = out_pad_at(c, i), t;
    const dgrad_problem_t *p = &c->r.problem;
    int same = c->auto_pad == dgrad_auto_pad_same_upper
            || c->auto_pad == dgrad_auto_pad_same_lower;
    if (c->kind == dgrad_op_onednn_conv_transpose && same) {
        /* oneDNN Graph (infer_auto_pad of its deconvolution): total =
         * max(dilated kernel - stride, 0), the odd unit cropped at the
         * end for SAME_UPPER, at the beginning for SAME_LOWER. The dilated
         * kernel is at most F, which fits. */
        int64_t total = (p->K[i] - 1) * p->D[i] + 1 - p->S[i];
        if (total < 0) total = 0;
        *pb = c->auto_pad == dgrad_auto_pad_same_upper ? total / 2
                                                       : total - total / 2;
        if (__builtin_add_overflow(F, op, &t))
            return overflow_error(c, "output size", i);
        *y = t - total;
        return dgrad_success;
    }
    if (c->kind == dgrad_op_conv_transpose && same) {
        if (__builtin_mul_overflow(p->X[i], p->S[i], y)
                || __builtin_add_overflow(F, op, &t))
            return overflow_error(c, "output size X * stride", i);
        *pb = onnx_pb(c, t - *y);
        return dgrad_success;
    }
    if (c->auto_pad == dgrad_auto_pad_explicit) {
        *pb = pad_begin_at(c, i);
        if (__builtin_sub_overflow(F, *pb, &t)
                || __builtin_sub_overflow(t, pad_end_at(c, i), &t)
                || __builtin_add_overflow(t, op, y))
            return overflow_error(c, "output size", i);
        return dgrad_success;
    }
    *pb = 0; /* valid, and OpenVINO same_*: pads are 0 */
    if (__builtin_add_overflow(F, op, y))
        return overflow_error(c, "output size", i);
    return dgrad_success;
}

/* oneDNN Graph explicit/VALID with a given Y: Y may exceed the padded
 * natural size only by less than one stride (the output-padding tail). */
static dgrad_status_t onednn_bounded(const ctx_t *c, int i, int64_t y,
        int64_t *pb) {
    int valid = c->auto_pad == dgrad_auto_pad_valid;
    int64_t lo = c->F[i], diff;
    *pb = valid ? 0 : pad_begin_at(c, i);
    int ovf = !valid && (__builtin_sub_overflow(lo, *pb, &lo)
                    || __builtin_sub_overflow(lo, pad_end_at(c, i), &lo));
    int64_t s = c->r.problem.S[i];
    if (ovf || __builtin_sub_overflow(y, lo, &diff) || diff < 0 || diff >= s)
        return op_error(c->op, dgrad_invalid_shape,
                "%s size (%lld) on axis %d cannot be produced: it must be at "
                "least the natural size minus pads (%lld) and less than that "
                "plus the stride (%lld)", tname(c, T_OUT), (long long)y, i,
                (long long)lo, (long long)s);
    return dgrad_success;
}

/* PB of axis @p i for a given output size @p y. */
static dgrad_status_t axis_given(const ctx_t *c, int i, int64_t y,
        int64_t *pb) {
    int64_t total;
    /* oneDNN Graph: output_padding never changes the result (see
     * check_output_padding). F + op - y cannot overflow once F + op fits
     * (both sides >= 1). */
    int64_t op = c->kind == dgrad_op_convolution_backward_data
            ? 0 : out_pad_at(c, i);
    if (__builtin_add_overflow(c->F[i], op, &total))
        return overflow_error(c, "natural size plus output_padding", i);
    total -= y;
    int64_t t = total > 0 ? total : 0;
    if (c->kind == dgrad_op_conv_transpose) {
        *pb = onnx_pb(c, total);
    } else if (c->kind == dgrad_op_convolution_backward_data) {
        /* The forward convolution's SAME rule (odd unit cropped at the end
         * for SAME_UPPER) with total = max(F - Y, 0): the op is then
         * Convolution's exact adjoint. */
        if (c->auto_pad == dgrad_auto_pad_same_upper) *pb = t / 2;
        else if (c->auto_pad == dgrad_auto_pad_same_lower) *pb = t - t / 2;
        else return onednn_bounded(c, i, y, pb);
    } else {
        /* OpenVINO specification text: pads ignored; same_upper crops the
         * odd unit at the beginning. */
        if (c->auto_pad == dgrad_auto_pad_same_upper) *pb = t - t / 2;
        else if (c->auto_pad == dgrad_auto_pad_valid) *pb = 0;
        else *pb = t / 2;
    }
    return dgrad_success;
}

/* The output shape values from the shape input: the given values, or the
 * requested output's dims standing for them; NULL means deferred. */
static dgrad_status_t shape_input_values(const ctx_t *c, int64_t *buf,
        const int64_t **vals, char *label, size_t size) {
    size_t want = (size_t)c->third->dims[0];
    *vals = NULL;
    if (c->shape_values) {
        if (c->n_shape_values != want)
            return op_error(c->op, dgrad_invalid_arguments,
                    "%zu shape values given for a %s input of length %zu",
                    c->n_shape_values, tname(c, T_THIRD), want);
        *vals = c->shape_values;
        snprintf(label, size, "%s input", tname(c, T_THIRD));
    } else if (all_dims_known(c->req)) {
        const int64_t *od = c->req->dims;
        for (size_t j = 0; j < want; j++)
            buf[j] = c->ki->third == dgrad_third_input_full_shape
                    ? od[j] : od[act_pos(c, 2 + (int)j)];
        *vals = buf;
        snprintf(label, size, "%s input (from the %s dims)",
                tname(c, T_THIRD), tname(c, T_OUT));
    }
    return dgrad_success;
}

/* oneDNN Graph without a dst_shape input: the dst_shape attribute, else
 * the output tensor's dims when all are known (oneDNN's own shape
 * inference takes them: infer_conv_bprop_data_output_shape). */
static dgrad_status_t onednn_shape_source(const ctx_t *c, int64_t *buf,
        const int64_t **vals, int *n, char *label, size_t size) {
    const dgrad_attr_value_t *v = attr_of(c, dgrad_op_attr_dst_shape);
    const dgrad_logical_tensor_t *o = c->req;
    int known = all_dims_known(o);
    char a[200], b[200];
    if (list_given(c, dgrad_op_attr_dst_shape)) {
        if (known && memcmp(v->values, o->dims,
                        (size_t)v->count * sizeof *o->dims))
            return op_error(c->op, dgrad_invalid_shape, "dst_shape attribute "
                    "(%s) and %s dims (%s) differ", DIMS(a, v->values, v->count),
                    tname(c, T_OUT), DIMS(b, o->dims, o->ndims));
        *vals = v->values;
        *n = v->count;
        snprintf(label, size, "dst_shape attribute");
        return dgrad_success;
    }
    if (!known)
        return op_error(c->op, dgrad_invalid_arguments, "no output shape: "
                "give a dst_shape input, a dst_shape attribute (not all "
                "zeros) or %s dims that are all known (got %s)",
                tname(c, T_OUT), o->ndims == DGRAD_UNKNOWN_NDIMS
                        ? "an unknown rank" : DIMS(a, o->dims, o->ndims));
    memcpy(buf, o->dims, (size_t)o->ndims * sizeof *o->dims);
    *vals = buf;
    *n = o->ndims;
    snprintf(label, size, "%s dims", tname(c, T_OUT));
    return dgrad_success;
}

/* Picks the output shape source. On success, @p vals is NULL when there is
 * none (or resolution is deferred), otherwise it has @p n values, full
 * (dialect order) when n == nsp + 2, spatial otherwise; @p label names the
 * source in messages. */
static dgrad_status_t output_shape_source(ctx_t *c, int64_t *buf,
        const int64_t **vals, int *n, char *label, size_t size) {
    *vals = NULL;
    if (has_shape_input(c)) {
        dgrad_status_t st = shape_input_values(c, buf, vals, label, size);
        if (st != dgrad_success) return st;
        c->r.deferred = !*vals;
        *n = (int)c->third->dims[0];
        return dgrad_success;
    }
    if (c->kind == dgrad_op_convolution_backward_data)
        return onednn_shape_source(c, buf, vals, n, label, size);
    if (c->kind != dgrad_op_conv_transpose)
        return dgrad_success; /* OpenVINO without an output_shape input */
    const dgrad_attr_value_t *v = attr_of(c, dgrad_op_attr_output_shape);
    if (!v->is_set) return dgrad_success;
    *vals = v->values;
    *n = v->count;
    snprintf(label, size, "output_shape attribute");
    return dgrad_success;
}

/* Checks a given output shape and extracts its spatial sizes into @p y. */
static dgrad_status_t given_sizes(const ctx_t *c, const int64_t *v, int n,
        const char *label, int64_t *y) {
    const dgrad_problem_t *p = &c->r.problem;
    char buf[200];
    for (int j = 0; j < n; j++)
        if (v[j] < 1)
            return op_error(c->op, dgrad_invalid_shape, "%s (%s): sizes "
                    "must all be at least 1", label, DIMS(buf, v, n));
    int full = n == c->nsp + 2;
    if (full && v[0] != p->N)
        return op_error(c->op, dgrad_invalid_shape, "%s N (%lld) does not "
                "match %s N (%lld)", label, (long long)v[0],
                tname(c, T_DATA), (long long)p->N);
    if (full && v[act_pos(c, 1)] != p->Cout)
        return op_error(c->op, dgrad_invalid_shape, "%s channels (%lld) do "
                "not match the output channels of %s (%lld)", label,
                (long long)v[act_pos(c, 1)], tname(c, T_WEI),
                (long long)p->Cout);
    for (int i = 0; i < c->nsp; i++) y[i] = full ? v[act_pos(c, 2 + i)] : v[i];
    return dgrad_success;
}

dgrad_status_t resolve_output_shape(ctx_t *c) {
    dgrad_problem_t *p = &c->r.problem;
    int64_t buf[DGRAD_MAX_NDIMS], y[DGRAD_MAX_SPATIAL];
    const int64_t *vals;
    char label[64] = "";
    int n = 0;
    dgrad_status_t st = output_shape_source(c, buf, &vals, &n, label,
            sizeof label);
    if (st != dgrad_success || c->r.deferred) return st;
    if (vals) st = given_sizes(c, vals, n, label, y);
    for (int i = 0; st == dgrad_success && i < c->nsp; i++) {
        if (vals) {
            p->Y[i] = y[i];
            st = axis_given(c, i, y[i], &p->PB[i]);
        } else {
            st = axis_inferred(c, i, &p->PB[i], &p->Y[i]);
            if (st == dgrad_success && p->Y[i] < 1)
                return op_error(c->op, dgrad_invalid_shape, "inferred %s "
                        "size (%lld) on axis %d must be at least 1",
                        tname(c, T_OUT), (long long)p->Y[i], i);
        }
    }
    return st;
}
