/*
 * Validation and resolution: an op description and its logical tensors
 * -> the canonical problem (DESIGN.md section 1), as an ordered table of
 * steps (dgrad_problem_resolve at the end), each named after its rule;
 * messages name the op, the values and the rule. The output-shape rules
 * are output_shape.c's.
 *
 * Decisions the specification leaves open:
 * - Explicit pads are range-checked (>= 0) even when auto_pad or an output
 *   shape makes the dialect ignore them.
 * - A data rank above 5 is dgrad_unimplemented for ONNX (valid there, not
 *   supported here) and dgrad_invalid_shape for the other dialects, whose
 *   specifications stop at 3 spatial axes.
 * - Layout problems (not strided, negative strides, an output whose
 *   elements share addresses) are invalid_arguments; unknown or
 *   out-of-range ranks and dims are invalid_shape. Inputs whose elements
 *   share addresses are valid (see check_output_aliasing).
 * - shape_values without a shape input, or a count that differs from the
 *   shape input's length, is invalid_arguments.
 * - Deferred output: layout type as requested, strides 0 (they are chosen
 *   when the shape values are known).
 * - The output_padding bound (< stride or < dilation) is ONNX's alone: not
 *   OpenVINO's, whose own test data breaks it, nor oneDNN Graph's, where
 *   output_padding does not matter (see check_output_padding).
 */
#include <stdio.h>
#include <string.h>

#include "aliasing.h"
#include "dialect_impl.h"

/* ============================================================ resolve */


/* Value of a string attribute of the description, or @p dflt when unset.
 * The setters validated the text; a description written by hand is
 * checked again so that a bad text cannot index out of the table. */
static dgrad_status_t string_attr(const ctx_t *c, dgrad_op_attr_t a,
        int dflt, int *value) {
    const dgrad_attr_value_t *v = attr_of(c, a);
    int n, ignore_case;
    const choice_t *choices = string_choices(c->ki, a, &n, &ignore_case);
    *value = dflt;
    if (!v->is_set) return dgrad_success;
    int i = memchr(v->text, '\0', sizeof v->text)
            ? find_choice(choices, n, v->text, ignore_case) : -1;
    char list[160];
    if (i < 0)
        return op_error(c->op, dgrad_invalid_arguments, "%s '%.24s' is not "
                "one of %s", attr_infos[a].name, v->text,
                join_choices(list, sizeof list, choices, n));
    *value = choices[i].value;
    return dgrad_success;
}

/* Reads auto_pad and the oneDNN Graph formats; rejects list lengths that
 * no setter can produce (a description written by hand). */
static dgrad_status_t read_string_attrs(ctx_t *c) {
    for (int a = 1; a < dgrad_op_attr_count; a++) {
        const dgrad_attr_value_t *v = attr_of(c, (dgrad_op_attr_t)a);
        if (v->is_set && (v->count < 0 || v->count > DGRAD_ATTR_MAX_VALUES))
            return op_error(c->op, dgrad_invalid_arguments,
                    "%s has a bad value count (%d)", attr_infos[a].name,
                    v->count);
    }
    int onednn = c->ki->onednn_graph, ap;
    dgrad_status_t st = string_attr(c, dgrad_op_attr_auto_pad,
            dgrad_auto_pad_explicit, &ap);
    c->auto_pad = (dgrad_auto_pad_t)ap;
    /* oneDNN Graph defaults: NXC data, kernel-first weights. */
    if (st == dgrad_success)
        st = string_attr(c, dgrad_op_attr_data_format, onednn, &c->nxc);
    if (st == dgrad_success)
        st = string_attr(c, dgrad_op_attr_weights_format, onednn, &c->xio);
    return st;
}

/* Step 1: pointers, kind, input count; fills the context. */
static dgrad_status_t init_ctx(ctx_t *c, const dgrad_op_desc_t *desc,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, const dgrad_resolved_t *out) {
    memset(c, 0, sizeof *c);
    if (!desc || !inputs || !output || !out)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_problem_resolve: %s is NULL",
                !desc ? "desc" : !inputs ? "inputs" : !output ? "output"
                                                            : "out");
    c->ki = kind_info(desc->kind);
    if (!c->ki)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_problem_resolve: unknown op kind (%d)", (int)desc->kind);
    c->desc = desc;
    c->op = c->ki->name;
    c->kind = desc->kind;
    /* The post-ops' operands come after the op's own inputs. */
    size_t n_operands = (size_t)dgrad_op_desc_post_operands(desc);
    size_t own = n_inputs >= n_operands ? n_inputs - n_operands : 0;
    if (own < 2 || own > 3
            || (own == 3 && c->ki->third == dgrad_third_input_none)) {
        char more[64] = "";
        if (n_operands)
            snprintf(more, sizeof more, ", then %zu post-op operand%s",
                    n_operands, n_operands > 1 ? "s" : "");
        return op_error(c->op, dgrad_invalid_arguments, "%zu inputs given, "
                "the op takes %s, %s and optionally %s%s", n_inputs,
                tname(c, T_DATA), tname(c, T_WEI), tname(c, T_THIRD), more);
    }
    n_inputs = own;
    c->operands = inputs + own;
    c->n_inputs = n_inputs;
    c->data = &inputs[0];
    c->wei = &inputs[1];
    c->third = n_inputs == 3 ? &inputs[2] : NULL;
    c->req = output;
    if (shape_values && !has_shape_input(c))
        return op_error(c->op, dgrad_invalid_arguments,
                "shape values given but there is no %s input",
                c->ki->third == dgrad_third_input_bias ? "shape"
                                                       : tname(c, T_THIRD));
    c->shape_values = shape_values;
    c->n_shape_values = n_shape_values;

    return read_string_attrs(c);
}

/* ------------------------------------------------ step 2: data types */

static int is_float(dgrad_data_type_t t) {
    return t == dgrad_f32 || t == dgrad_bf16 || t == dgrad_f16;
}

static dgrad_status_t check_types(ctx_t *c) {
    dgrad_data_type_t dt = c->data->data_type, wt = c->wei->data_type;
    const char *dn = tname(c, T_DATA), *wn = tname(c, T_WEI);
    if (!is_float(dt) || !is_float(wt))
        return op_error(c->op, dgrad_invalid_data_type,
                "%s data type (%s) is not one of f32, bf16, f16",
                is_float(dt) ? wn : dn,
                dgrad_data_type_name(is_float(dt) ? wt : dt));
    if (wt != dt)
        return op_error(c->op, dgrad_invalid_data_type,
                "%s data type (%s) and %s data type (%s) differ", dn,
                dgrad_data_type_name(dt), wn, dgrad_data_type_name(wt));
    dgrad_data_type_t ot = c->req->data_type;
    if (ot != dgrad_data_type_undef && ot != dt)
        return op_error(c->op, dgrad_invalid_data_type,
                "%s data type (%s) differs from %s data type (%s)",
                tname(c, T_OUT), dgrad_data_type_name(ot), dn,
                dgrad_data_type_name(dt));
    if (!c->third) return dgrad_success;
    dgrad_data_type_t tt = c->third->data_type;
    if (has_shape_input(c) && tt != dgrad_s32 && tt != dgrad_s64)
        return op_error(c->op, dgrad_invalid_data_type,
                "%s data type (%s) is not s32 or s64", tname(c, T_THIRD),
                dgrad_data_type_name(tt));
    if (!has_shape_input(c) && tt != dt)
        return op_error(c->op, dgrad_invalid_data_type,
                "%s data type (%s) differs from %s data type (%s)",
                tname(c, T_THIRD), dgrad_data_type_name(tt), dn,
                dgrad_data_type_name(dt));
    return dgrad_success;
}

/* --------------------------------------------------- step 3: layouts */

static const char *layout_name(dgrad_layout_type_t l) {
    return l == dgrad_layout_type_strided ? "strided"
            : l == dgrad_layout_type_any  ? "any"
                                          : "undef";
}

static dgrad_status_t check_strides(const ctx_t *c,
        const dgrad_logical_tensor_t *t, const char *name) {
    char buf[200];
    for (int d = 0; d < t->ndims; d++)
        if (t->strides[d] < 0)
            return op_error(c->op, dgrad_invalid_arguments,
                    "%s strides (%s) must be non-negative", name,
                    DIMS(buf, t->strides, t->ndims));
    return dgrad_success;
}

static dgrad_status_t check_rank_range(const ctx_t *c,
        const dgrad_logical_tensor_t *t, const char *name) {
    if (t->ndims < 1 || t->ndims > DGRAD_MAX_NDIMS)
        return op_error(c->op, dgrad_invalid_shape,
                "%s rank (%d) is unknown or outside 1..%d", name,
                (int)t->ndims, DGRAD_MAX_NDIMS);
    return dgrad_success;
}

static dgrad_status_t check_input_layout(const ctx_t *c,
        const dgrad_logical_tensor_t *t, const char *name) {
    if (t->layout_type != dgrad_layout_type_strided)
        return op_error(c->op, dgrad_invalid_arguments,
                "%s layout (%s) must be strided", name,
                layout_name(t->layout_type));
    dgrad_status_t st = check_rank_range(c, t, name);
    if (st != dgrad_success) return st;
    char buf[200];
    if (!all_dims_known(t))
        return op_error(c->op, dgrad_invalid_shape,
                "%s dims (%s) must all be known", name,
                DIMS(buf, t->dims, t->ndims));
    return check_strides(c, t, name);
}

static dgrad_status_t check_layouts(ctx_t *c) {
    const dgrad_logical_tensor_t *in[3] = {c->data, c->wei, c->third};
    for (size_t i = 0; i < c->n_inputs; i++) {
        dgrad_status_t st = check_input_layout(c, in[i], tname(c, (int)i));
        if (st != dgrad_success) return st;
    }
    const dgrad_logical_tensor_t *o = c->req;
    if (o->layout_type != dgrad_layout_type_strided
            && o->layout_type != dgrad_layout_type_any)
        return op_error(c->op, dgrad_invalid_arguments,
                "%s layout (%s) must be strided or any", tname(c, T_OUT),
                layout_name(o->layout_type));
    if (o->ndims == DGRAD_UNKNOWN_NDIMS) return dgrad_success;
    dgrad_status_t st = check_rank_range(c, o, tname(c, T_OUT));
    if (st != dgrad_success) return st;
    if (o->layout_type == dgrad_layout_type_strided && all_dims_known(o))
        return check_strides(c, o, tname(c, T_OUT));
    return dgrad_success;
}

/* -------------------------------------------- step 4: ranks and dims */

static dgrad_status_t check_positive_dims(const ctx_t *c,
        const dgrad_logical_tensor_t *t, const char *name, int allow_unknown) {
    char buf[200];
    for (int d = 0; d < t->ndims; d++) {
        if (allow_unknown && t->dims[d] == DGRAD_UNKNOWN_DIM) continue;
        if (t->dims[d] < 1)
            return op_error(c->op, dgrad_invalid_shape,
                    "%s dims (%s) must all be at least 1", name,
                    DIMS(buf, t->dims, t->ndims));
    }
    return dgrad_success;
}

static dgrad_status_t check_third_rank(const ctx_t *c) {
    const dgrad_logical_tensor_t *t = c->third;
    const char *name = tname(c, T_THIRD);
    if (t->ndims != 1)
        return op_error(c->op, dgrad_invalid_shape, "%s rank (%d) must be 1",
                name, (int)t->ndims);
    if (c->ki->third == dgrad_third_input_full_shape
            && t->dims[0] != c->nsp + 2)
        return op_error(c->op, dgrad_invalid_shape, "%s length (%lld) must "
                "equal the %s rank (%d)", name, (long long)t->dims[0],
                tname(c, T_OUT), c->nsp + 2);
    if (c->ki->third == dgrad_third_input_spatial_shape
            && t->dims[0] != c->nsp)
        return op_error(c->op, dgrad_invalid_shape, "%s length (%lld) must "
                "equal the spatial rank (%d)", name, (long long)t->dims[0],
                c->nsp);
    return dgrad_success; /* the bias length is checked with the channels */
}

static dgrad_status_t check_ranks(ctx_t *c) {
    int rank = c->data->ndims;
    if (rank > 5 && c->kind == dgrad_op_conv_transpose)
        return op_error(c->op, dgrad_unimplemented, "%s rank (%d): more than "
                "3 spatial axes are not supported", tname(c, T_DATA), rank);
    if (rank < 3 || rank > 5)
        return op_error(c->op, dgrad_invalid_shape, "%s rank (%d) must be 3, "
                "4 or 5 (1 to 3 spatial axes)", tname(c, T_DATA), rank);
    c->nsp = rank - 2;
    int wrank = c->kind == dgrad_op_group_convolution_backprop_data
            ? rank + 1 : rank;
    if (c->wei->ndims != wrank)
        return op_error(c->op, dgrad_invalid_shape, "%s rank (%d) must be %d "
                "for %s rank %d", tname(c, T_WEI), (int)c->wei->ndims, wrank,
                tname(c, T_DATA), rank);
    dgrad_status_t st = c->third ? check_third_rank(c) : dgrad_success;
    const dgrad_logical_tensor_t *in[3] = {c->data, c->wei, c->third};
    for (size_t i = 0; st == dgrad_success && i < c->n_inputs; i++)
        st = check_positive_dims(c, in[i], tname(c, (int)i), 0);
    if (st != dgrad_success || c->req->ndims == DGRAD_UNKNOWN_NDIMS) return st;
    if (c->req->ndims != rank)
        return op_error(c->op, dgrad_invalid_shape, "%s rank (%d) must equal "
                "%s rank (%d)", tname(c, T_OUT), (int)c->req->ndims,
                tname(c, T_DATA), rank);
    return check_positive_dims(c, c->req, tname(c, T_OUT), 1);
}

/* --------------------------------------- step 5: extents fit 64 bits */

/* Element count, largest offset and byte size of @p t must fit int64. */
static dgrad_status_t check_extent(const ctx_t *c,
        const dgrad_logical_tensor_t *t, const char *name) {
    int64_t count = 1, span = 0, term, bytes;
    char buf[200];
    const char *what = NULL;
    for (int d = 0; d < t->ndims && !what; d++) {
        if (__builtin_mul_overflow(count, t->dims[d], &count))
            what = "element count";
        else if (__builtin_mul_overflow(t->dims[d] - 1, t->strides[d], &term)
                || __builtin_add_overflow(span, term, &span))
            what = "largest element offset";
    }
    if (!what && (__builtin_add_overflow(span, 1, &term)
            || __builtin_mul_overflow(term,
                    (int64_t)dgrad_data_type_size(t->data_type), &bytes)))
        what = "byte size";
    if (!what) return dgrad_success;
    return op_error(c->op, dgrad_invalid_shape,
            "%s (dims %s) %s overflows 64 bits", name,
            DIMS(buf, t->dims, t->ndims), what);
}

static dgrad_status_t check_extents(ctx_t *c) {
    const dgrad_logical_tensor_t *in[3] = {c->data, c->wei, c->third};
    for (size_t i = 0; i < c->n_inputs; i++) {
        dgrad_status_t st = check_extent(c, in[i], tname(c, (int)i));
        if (st != dgrad_success) return st;
    }
    return dgrad_success;
}

/* ---------------------------------------------- step 6: list lengths */

static int expected_length(const ctx_t *c, dgrad_op_attr_t a) {
    if (a == dgrad_op_attr_pads) return 2 * c->nsp;
    if (a == dgrad_op_attr_dst_shape) return c->nsp + 2;
    return c->nsp;
}

static dgrad_status_t check_attr_lengths(ctx_t *c) {
    for (int a = 1; a < dgrad_op_attr_count; a++) {
        const dgrad_attr_value_t *v = attr_of(c, (dgrad_op_attr_t)a);
        if (attr_infos[a].type != ATTR_LIST
                || !list_given(c, (dgrad_op_attr_t)a))
            continue;
        int want = expected_length(c, (dgrad_op_attr_t)a);
        if (v->count != want)
            return op_error(c->op, dgrad_invalid_arguments,
                    "%s has %d values, expected %d for spatial rank %d",
                    attr_infos[a].name, v->count, want, c->nsp);
    }
    return dgrad_success;
}

/* ------------------------------------------ step 7: attribute ranges */

/* "must all be at least 1" / "must be non-negative": the rule in words. */
static dgrad_status_t check_list_min(const ctx_t *c, dgrad_op_attr_t a,
        int64_t min) {
    const dgrad_attr_value_t *v = attr_of(c, a);
    char buf[200], rule[64];
    if (min == 0) snprintf(rule, sizeof rule, "non-negative");
    else snprintf(rule, sizeof rule, "at least %lld", (long long)min);
    for (int i = 0; v->is_set && i < v->count; i++)
        if (v->values[i] < min)
            return op_error(c->op, dgrad_invalid_arguments,
                    "%s (%s) must %sbe %s", attr_infos[a].name,
                    DIMS(buf, v->values, v->count),
                    attr_infos[a].type == ATTR_LIST ? "all " : "", rule);
    return dgrad_success;
}

/* output_padding must be smaller than the stride or the dilation: the
 * PyTorch and ONNX rule, and only ONNX's. OpenVINO's specification sets no
 * bound and its own reference tests use output_padding 1 with stride 1 and
 * dilation 1 (ConvolutionBackpropData cases [3], [10], [20] of the
 * conformance vectors), where it shortens the crop at the end. oneDNN
 * Graph's ConvolutionBackwardData always knows its output shape, so
 * output_padding never changes its result (oneDNN's library does not read
 * it, and benchdnn's own harness runs output_padding 2 with stride 2). */
static dgrad_status_t check_output_padding(const ctx_t *c) {
    if (c->kind != dgrad_op_conv_transpose) return dgrad_success;
    for (int i = 0; i < c->nsp; i++) {
        int64_t op = out_pad_at(c, i), s = stride_at(c, i),
                d = dilation_at(c, i);
        if (op >= s && op >= d)
            return op_error(c->op, dgrad_invalid_arguments,
                    "output_padding (%lld) on axis %d must be smaller than "
                    "the stride (%lld) or the dilation (%lld)",
                    (long long)op, i, (long long)s, (long long)d);
    }
    return dgrad_success;
}

static dgrad_status_t check_attr_ranges(ctx_t *c) {
    /* Every dialect forbids negative explicit pads; they are checked even
     * where auto_pad or an output shape makes them irrelevant. */
    static const struct {
        dgrad_op_attr_t attr;
        int64_t min;
    } mins[] = {{dgrad_op_attr_strides, 1}, {dgrad_op_attr_dilations, 1},
            {dgrad_op_attr_pads_begin, 0}, {dgrad_op_attr_pads_end, 0},
            {dgrad_op_attr_pads, 0}, {dgrad_op_attr_output_padding, 0},
            {dgrad_op_attr_groups, 1}, {dgrad_op_attr_group, 1}};
    for (int i = 0; i < N_CHOICES(mins); i++) {
        dgrad_status_t st = check_list_min(c, mins[i].attr, mins[i].min);
        if (st != dgrad_success) return st;
    }
    return check_output_padding(c);
}

/* ----------------------------- step 8: groups, channels and geometry */

static int64_t groups_of(const ctx_t *c) {
    switch (c->kind) {
        case dgrad_op_convolution_backward_data:
        case dgrad_op_onednn_conv_transpose:
            return attr_at(c, dgrad_op_attr_groups, 0, 1);
        case dgrad_op_group_convolution_backprop_data: return c->wei->dims[0];
        case dgrad_op_conv_transpose:
            return attr_at(c, dgrad_op_attr_group, 0, 1);
        default: return 1;
    }
}

static dgrad_status_t check_kernel_shape(const ctx_t *c, const int64_t *K) {
    const dgrad_attr_value_t *v = attr_of(c, dgrad_op_attr_kernel_shape);
    char a[100], b[100];
    if (!v->is_set || !memcmp(v->values, K, (size_t)c->nsp * sizeof *K))
        return dgrad_success;
    return op_error(c->op, dgrad_invalid_shape, "kernel_shape (%s) does not "
            "match %s spatial dims (%s)", DIMS(a, v->values, v->count),
            tname(c, T_WEI), DIMS(b, K, c->nsp));
}

static dgrad_status_t check_channels(ctx_t *c) {
    dgrad_problem_t *p = &c->r.problem;
    const int64_t *wd = c->wei->dims;
    int ci, co, k0;
    wei_pos(c, &ci, &co, &k0);
    p->N = c->data->dims[0];
    p->Cin = c->data->dims[act_pos(c, 1)];
    p->G = groups_of(c);
    if (p->Cin % p->G)
        return op_error(c->op, dgrad_invalid_arguments,
                "groups (%lld) does not divide %s channels (%lld)",
                (long long)p->G, tname(c, T_DATA), (long long)p->Cin);
    /* The grouped OpenVINO weights hold Cin/G per group: compare the total
     * (G * Cin/G fits: both are dims of one tensor whose size fits). */
    int grouped = c->kind == dgrad_op_group_convolution_backprop_data;
    int64_t wcin = grouped ? p->G * wd[ci] : wd[ci];
    if (wcin != p->Cin)
        return op_error(c->op, dgrad_invalid_shape,
                "%s input channels (%lld%s) do not match %s channels (%lld)",
                tname(c, T_WEI), (long long)wcin,
                grouped ? " over all groups" : "", tname(c, T_DATA),
                (long long)p->Cin);
    p->Cout = p->G * wd[co];
    for (int i = 0; i < c->nsp; i++) p->K[i] = wd[k0 + i];
    dgrad_status_t st = check_kernel_shape(c, p->K);
    if (st != dgrad_success) return st;
    if (c->third && !has_shape_input(c) && c->third->dims[0] != p->Cout)
        return op_error(c->op, dgrad_invalid_shape,
                "%s length (%lld) must equal the output channels (%lld)",
                tname(c, T_THIRD), (long long)c->third->dims[0],
                (long long)p->Cout);
    return dgrad_success;
}

/* Fills the geometry and the canonical input strides (no copies: the user
 * tensors are only described in canonical order). */
static dgrad_status_t fill_geometry(ctx_t *c) {
    dgrad_problem_t *p = &c->r.problem;
    const int64_t *ds = c->data->strides, *ws = c->wei->strides;
    p->nsp = c->nsp;
    p->dt = c->data->data_type;
    for (int d = 0; d < 2 + c->nsp; d++) p->in_strides[d] = ds[act_pos(c, d)];
    int ci, co, k0;
    wei_pos(c, &ci, &co, &k0);
    int grouped = c->kind == dgrad_op_group_convolution_backprop_data;
    /* Ungrouped layouts store Cin = G * Cin/G as one dim, g outermost.
     * (Cin/G) * stride fits: it is at most the largest offset plus one
     * stride, and the byte size (>= 2 bytes an element) fits. */
    p->wei_strides[0] = grouped ? ws[0] : (p->Cin / p->G) * ws[ci];
    p->wei_strides[1] = ws[ci];
    p->wei_strides[2] = ws[co];
    for (int i = 0; i < c->nsp; i++) {
        p->wei_strides[3 + i] = ws[k0 + i];
        p->X[i] = c->data->dims[act_pos(c, 2 + i)];
        p->S[i] = stride_at(c, i);
        p->D[i] = dilation_at(c, i);
    }
    if (c->third && !has_shape_input(c)) {
        p->has_bias = 1;
        p->bias_stride = c->third->strides[0];
    }
    return dgrad_success;
}

/* ---------------------------------- step 11: output dims and strides */

/* Dense strides with the canonical axes in the caller's order (an output
 * of layout any), written in the dialect's dims order. */
/* A caller's axis order must name every canonical axis once. */
static int valid_order(const int *order, int n) {
    unsigned seen = 0;
    for (int j = 0; j < n; j++) {
        if (order[j] < 0 || order[j] >= n || (seen & (1u << order[j])))
            return 0;
        seen |= 1u << order[j];
    }
    return 1;
}

static dgrad_status_t ordered_strides(ctx_t *c, dgrad_logical_tensor_t *o) {
    const dgrad_problem_t *p = &c->r.problem;
    if (!valid_order(c->any_order, c->nsp + 2))
        return op_error(c->op, dgrad_invalid_arguments, "the axis order for "
                "%s of layout any must name each of its %d axes once",
                tname(c, T_OUT), c->nsp + 2);
    int64_t canonical[2 + DGRAD_MAX_SPATIAL] = {p->N, p->Cout};
    for (int i = 0; i < c->nsp; i++) canonical[2 + i] = p->Y[i];
    int64_t s = 1;
    char buf[200];
    for (int j = c->nsp + 1; j >= 0; j--) {
        int d = c->any_order[j];
        o->strides[act_pos(c, d)] = s;
        if (__builtin_mul_overflow(s, canonical[d], &s))
            return op_error(c->op, dgrad_invalid_shape, "%s (dims %s) element "
                    "count overflows 64 bits", tname(c, T_OUT),
                    DIMS(buf, o->dims, o->ndims));
    }
    return dgrad_success;
}

/* Dense row-major strides over the dialect's own dims order (what a caller
 * asking for a strided output without giving strides expects). */
static dgrad_status_t row_major_strides(ctx_t *c, dgrad_logical_tensor_t *o) {
    int64_t s = 1;
    char buf[200];
    for (int d = o->ndims - 1; d >= 0; d--) {
        o->strides[d] = s;
        if (__builtin_mul_overflow(s, o->dims[d], &s))
            return op_error(c->op, dgrad_invalid_shape, "%s (dims %s) element "
                    "count overflows 64 bits", tname(c, T_OUT),
                    DIMS(buf, o->dims, o->ndims));
    }
    return dgrad_success;
}

static dgrad_status_t check_requested_dims(const ctx_t *c,
        const dgrad_logical_tensor_t *o) {
    const dgrad_logical_tensor_t *r = c->req;
    if (r->ndims == DGRAD_UNKNOWN_NDIMS) return dgrad_success;
    char a[200], b[200];
    for (int d = 0; d < o->ndims; d++)
        if (r->dims[d] != DGRAD_UNKNOWN_DIM && o->dims[d] != DGRAD_UNKNOWN_DIM
                && r->dims[d] != o->dims[d])
            return op_error(c->op, dgrad_invalid_shape, "requested %s dims "
                    "(%s) do not match the inferred dims (%s)",
                    tname(c, T_OUT), DIMS(a, r->dims, r->ndims),
                    DIMS(b, o->dims, o->ndims));
    return dgrad_success;
}

static dgrad_status_t fill_output(ctx_t *c) {
    dgrad_problem_t *p = &c->r.problem;
    dgrad_logical_tensor_t *o = &c->r.output;
    o->struct_size = sizeof *o;
    o->id = c->req->id;
    o->property = c->req->property;
    o->data_type = p->dt;
    o->ndims = 2 + c->nsp;
    o->dims[0] = p->N;
    o->dims[act_pos(c, 1)] = p->Cout;
    /* Deferred: the spatial dims the caller knows stay known, so that
     * execution checks the shape input's values against them. */
    int req_known = c->req->ndims == o->ndims;
    for (int i = 0; i < c->nsp; i++) {
        int d = act_pos(c, 2 + i);
        o->dims[d] = !c->r.deferred ? p->Y[i]
                : req_known ? c->req->dims[d] : DGRAD_UNKNOWN_DIM;
    }
    dgrad_status_t st = check_requested_dims(c, o);
    if (st != dgrad_success) return st;
    if (c->r.deferred) { /* strides are chosen once the values are known */
        o->layout_type = c->req->layout_type;
        return dgrad_success;
    }
    /* Strides: the caller's when given; layout any gets the order the
     * backend asked for; otherwise row-major in the dialect's order. */
    o->layout_type = dgrad_layout_type_strided;
    if (c->req->layout_type == dgrad_layout_type_strided
            && all_dims_known(c->req))
        memcpy(o->strides, c->req->strides, (size_t)o->ndims * sizeof(int64_t));
    else if (c->req->layout_type == dgrad_layout_type_any && c->any_order)
        st = ordered_strides(c, o);
    else
        st = row_major_strides(c, o);
    if (st != dgrad_success) return st;
    st = check_extent(c, o, tname(c, T_OUT));
    for (int d = 0; d < o->ndims; d++)
        p->out_strides[d] = o->strides[act_pos(c, d)];
    return st;
}

/* ------------------ step 12: output elements have distinct addresses */

/* An output whose layout gives two elements one address would make the
 * result depend on the order of writes: refused. Inputs may alias (a
 * stride-0 broadcast is a fine thing to read); the oneDNN layer reads
 * such inputs through a copy of its own. */
static dgrad_status_t check_output_aliasing(ctx_t *c) {
    const dgrad_logical_tensor_t *o = &c->r.output;
    if (c->r.deferred) return dgrad_success; /* strides chosen later */
    int64_t a[DGRAD_MAX_NDIMS], b[DGRAD_MAX_NDIMS];
    char dims[200], strides[200], ia[200], ib[200];
    dgrad_aliasing_t found = dgrad_layout_find_alias(o->ndims, o->dims,
            o->strides, a, b);
    DIMS(dims, o->dims, o->ndims);
    DIMS(strides, o->strides, o->ndims);
    switch (found) {
        case dgrad_aliasing_none: return dgrad_success;
        case dgrad_aliasing_found:
            return op_error(c->op, dgrad_invalid_arguments, "%s (dims %s, "
                    "strides %s) puts elements [%s] and [%s] at one "
                    "address: an output's elements must not share "
                    "addresses", tname(c, T_OUT), dims, strides,
                    DIMS(ia, a, o->ndims), DIMS(ib, b, o->ndims));
        case dgrad_aliasing_unknown:
            return op_error(c->op, dgrad_unimplemented, "%s (dims %s, "
                    "strides %s): the strides interleave over more than "
                    "%lld elements (or addresses), too many to check that no "
                    "two share an address", tname(c, T_OUT), dims, strides,
                    (long long)DGRAD_ALIASING_MAX_VISIT);
        case dgrad_aliasing_no_memory: break;
    }
    return op_error(c->op, dgrad_out_of_memory, "%s (dims %s, strides %s): "
            "out of memory checking that no two elements share an address",
            tname(c, T_OUT), dims, strides);
}

dgrad_status_t dgrad_problem_resolve(const dgrad_op_desc_t *desc,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, dgrad_resolved_t *out) {
    return dgrad_problem_resolve_with_layout(desc, n_inputs, inputs, output,
            shape_values, n_shape_values, NULL, out);
}

dgrad_status_t dgrad_problem_resolve_with_layout(const dgrad_op_desc_t *desc,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs,
        const dgrad_logical_tensor_t *output, const int64_t *shape_values,
        size_t n_shape_values, const int *any_order, dgrad_resolved_t *out) {
    /* The context (and the result inside it) is zeroed first, padding
     * included, so that equal requests give byte-identical results. */
    ctx_t c;
    dgrad_status_t st = init_ctx(&c, desc, n_inputs, inputs, output,
            shape_values, n_shape_values, out);
    c.any_order = any_order;
    static step_fn *const steps[] = {check_types, check_layouts, check_ranks,
            check_extents, check_attr_lengths, check_attr_ranges,
            check_channels, fill_geometry, compute_natural_sizes,
            resolve_output_shape, fill_output, resolve_post_ops,
            check_output_aliasing};
    for (int i = 0; st == dgrad_success && i < N_CHOICES(steps); i++)
        st = steps[i](&c);
    if (st != dgrad_success) return st;
    memcpy(out, &c.r, sizeof *out);
    return dgrad_success;
}

/* ---------------------------------------------- operands without an op */

dgrad_status_t dgrad_problem_check_operands(dgrad_op_kind_t kind,
        size_t n_inputs, const dgrad_logical_tensor_t *inputs) {
    dgrad_op_desc_t desc;
    dgrad_status_t st = dgrad_op_desc_init(&desc, kind);
    if (st != dgrad_success) return st;
    dgrad_logical_tensor_t in[3], out;
    int ranks_known = 1;
    for (size_t i = 0; i < n_inputs && i < 3; i++) {
        in[i] = inputs[i];
        ranks_known &= in[i].ndims != DGRAD_UNKNOWN_NDIMS;
    }
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    out.ndims = DGRAD_UNKNOWN_NDIMS;
    out.layout_type = dgrad_layout_type_any;
    ctx_t c;
    dgrad_resolved_t unused;
    st = init_ctx(&c, &desc, n_inputs, in, &out, NULL, 0, &unused);
    if (st == dgrad_success) st = check_types(&c);
    /* The rank rules relate the ranks to each other: with one unknown,
     * they wait for resolve. */
    if (st != dgrad_success || !ranks_known) return st;
    /* Unknown dims are not judged: 1 stands for them, and a third input
     * of rank 1 and unknown length has nothing left to judge. */
    if (c.third && c.third->ndims == 1
            && c.third->dims[0] == DGRAD_UNKNOWN_DIM) {
        c.third = NULL;
        c.n_inputs = 2;
    }
    for (size_t i = 0; i < c.n_inputs; i++)
        for (int d = 0; d < in[i].ndims && d < DGRAD_MAX_NDIMS; d++)
            if (in[i].dims[d] == DGRAD_UNKNOWN_DIM) in[i].dims[d] = 1;
    return check_ranks(&c);
}
