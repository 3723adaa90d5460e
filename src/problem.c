/*
 * Dialect layer: op descriptions in the four dialects -> one canonical
 * problem (DESIGN.md section 1). No oneDNN here.
 *
 * Decisions the specification leaves open (each is repeated where it is
 * implemented):
 * - data_format / weights_format values are case-sensitive ("NXC", "NCX",
 *   "XIO", "OIX"), as oneDNN Graph spells them; only auto_pad ignores case.
 * - An integer list attribute may be set empty (count 0, values may then be
 *   NULL; "[]" as text); resolve reports its length.
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
 *   result: the output shape is always known for this op, so SAME uses
 *   total = max(F - Y, 0), and explicit/VALID bound Y by the stride.
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
#include "problem.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aliasing.h"
#include "error.h"

/* ================================================================ names */

const char *dgrad_data_type_name(dgrad_data_type_t data_type) {
    switch (data_type) {
        case dgrad_f32: return "f32";
        case dgrad_bf16: return "bf16";
        case dgrad_f16: return "f16";
        case dgrad_s32: return "s32";
        case dgrad_s64: return "s64";
        default: return "undef";
    }
}

size_t dgrad_data_type_size(dgrad_data_type_t data_type) {
    switch (data_type) {
        case dgrad_f32: return 4;
        case dgrad_bf16: return 2;
        case dgrad_f16: return 2;
        case dgrad_s32: return 4;
        case dgrad_s64: return 8;
        default: return 0;
    }
}

/* A string value a dialect accepts and what it means. */
typedef struct choice {
    const char *text;
    int value;
} choice_t;

#define N_CHOICES(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const choice_t onednn_auto_pads[] = {
        {"None", dgrad_auto_pad_explicit},
        {"SAME_UPPER", dgrad_auto_pad_same_upper},
        {"SAME_LOWER", dgrad_auto_pad_same_lower},
        {"VALID", dgrad_auto_pad_valid},
        {"explicit", dgrad_auto_pad_explicit}};
static const choice_t openvino_auto_pads[] = {
        {"explicit", dgrad_auto_pad_explicit},
        {"notset", dgrad_auto_pad_explicit},
        {"same_upper", dgrad_auto_pad_same_upper},
        {"same_lower", dgrad_auto_pad_same_lower},
        {"valid", dgrad_auto_pad_valid}};
static const choice_t onnx_auto_pads[] = {
        {"NOTSET", dgrad_auto_pad_explicit},
        {"SAME_UPPER", dgrad_auto_pad_same_upper},
        {"SAME_LOWER", dgrad_auto_pad_same_lower},
        {"VALID", dgrad_auto_pad_valid}};
/* value: 1 = channels last (NXC) / kernel first (XIO). */
static const choice_t data_formats[] = {{"NXC", 1}, {"NCX", 0}};
static const choice_t weights_formats[] = {{"XIO", 1}, {"OIX", 0}};

/* Tensor roles, to index kind_info_t.tensor (names used in messages). */
enum { T_DATA, T_WEI, T_THIRD, T_OUT };

typedef struct kind_info {
    const char *name;
    const char *tensor[4];  /* data, weights, third input, output */
    unsigned attrs;         /* bit (1u << attr) for every attribute it has */
    const choice_t *auto_pads;
    int n_auto_pads;
    dgrad_third_input_t third;
} kind_info_t;

#define BIT(a) (1u << dgrad_op_attr_##a)
#define COMMON_ATTRS \
    (BIT(strides) | BIT(dilations) | BIT(output_padding) | BIT(auto_pad))
#define OPENVINO_ATTRS (COMMON_ATTRS | BIT(pads_begin) | BIT(pads_end))

static const kind_info_t kind_infos[] = {
        [dgrad_op_convolution_backward_data] = {"ConvolutionBackwardData",
                {"diff_dst", "weights", "dst_shape", "diff_src"},
                OPENVINO_ATTRS | BIT(groups) | BIT(data_format)
                        | BIT(weights_format) | BIT(dst_shape),
                onednn_auto_pads, N_CHOICES(onednn_auto_pads),
                dgrad_third_input_full_shape},
        [dgrad_op_convolution_backprop_data] = {"ConvolutionBackpropData",
                {"data", "weights", "output_shape", "output"}, OPENVINO_ATTRS,
                openvino_auto_pads, N_CHOICES(openvino_auto_pads),
                dgrad_third_input_spatial_shape},
        [dgrad_op_group_convolution_backprop_data] = {
                "GroupConvolutionBackpropData",
                {"data", "weights", "output_shape", "output"}, OPENVINO_ATTRS,
                openvino_auto_pads, N_CHOICES(openvino_auto_pads),
                dgrad_third_input_spatial_shape},
        [dgrad_op_conv_transpose] = {"ConvTranspose", {"X", "W", "B", "Y"},
                COMMON_ATTRS | BIT(pads) | BIT(group) | BIT(output_shape)
                        | BIT(kernel_shape),
                onnx_auto_pads, N_CHOICES(onnx_auto_pads),
                dgrad_third_input_bias},
};

static const kind_info_t *kind_info(dgrad_op_kind_t kind) {
    if ((int)kind <= 0 || (int)kind >= N_CHOICES(kind_infos)) return NULL;
    return &kind_infos[kind];
}

const char *dgrad_op_kind_name(dgrad_op_kind_t kind) {
    const kind_info_t *ki = kind_info(kind);
    return ki ? ki->name : "undef";
}

dgrad_status_t dgrad_op_kind_from_name(
        const char *name, dgrad_op_kind_t *kind) {
    if (!name || !kind)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_op_kind_from_name: %s is NULL", !name ? "name" : "kind");
    for (int k = 1; k < N_CHOICES(kind_infos); k++)
        if (!strcmp(name, kind_infos[k].name)) {
            *kind = (dgrad_op_kind_t)k;
            return dgrad_success;
        }
    return dgrad_error(dgrad_invalid_arguments,
            "unknown op kind '%.64s' (expected ConvolutionBackwardData, "
            "ConvolutionBackpropData, GroupConvolutionBackpropData or "
            "ConvTranspose)", name);
}

dgrad_third_input_t dgrad_op_kind_third_input(dgrad_op_kind_t kind) {
    const kind_info_t *ki = kind_info(kind);
    return ki ? ki->third : dgrad_third_input_none;
}

typedef enum { ATTR_LIST, ATTR_SCALAR, ATTR_STRING } attr_type_t;

static const char *const attr_type_names[] = {
        "an integer list", "an integer", "a string"};

static const struct {
    const char *name;
    attr_type_t type;
} attr_infos[dgrad_op_attr_count] = {
        [dgrad_op_attr_undef] = {"undef", ATTR_LIST},
        [dgrad_op_attr_strides] = {"strides", ATTR_LIST},
        [dgrad_op_attr_pads_begin] = {"pads_begin", ATTR_LIST},
        [dgrad_op_attr_pads_end] = {"pads_end", ATTR_LIST},
        [dgrad_op_attr_pads] = {"pads", ATTR_LIST},
        [dgrad_op_attr_dilations] = {"dilations", ATTR_LIST},
        [dgrad_op_attr_output_padding] = {"output_padding", ATTR_LIST},
        [dgrad_op_attr_auto_pad] = {"auto_pad", ATTR_STRING},
        [dgrad_op_attr_groups] = {"groups", ATTR_SCALAR},
        [dgrad_op_attr_group] = {"group", ATTR_SCALAR},
        [dgrad_op_attr_data_format] = {"data_format", ATTR_STRING},
        [dgrad_op_attr_weights_format] = {"weights_format", ATTR_STRING},
        [dgrad_op_attr_dst_shape] = {"dst_shape", ATTR_LIST},
        [dgrad_op_attr_output_shape] = {"output_shape", ATTR_LIST},
        [dgrad_op_attr_kernel_shape] = {"kernel_shape", ATTR_LIST},
};

static int attr_valid(dgrad_op_attr_t attr) {
    return (int)attr > 0 && (int)attr < dgrad_op_attr_count;
}

const char *dgrad_op_attr_name(dgrad_op_attr_t attr) {
    return attr_valid(attr) ? attr_infos[attr].name : "undef";
}

dgrad_op_attr_t dgrad_op_attr_from_name(const char *name) {
    if (!name) return dgrad_op_attr_undef;
    for (int a = 1; a < dgrad_op_attr_count; a++)
        if (!strcmp(name, attr_infos[a].name)) return (dgrad_op_attr_t)a;
    return dgrad_op_attr_undef;
}

static int kind_has_attr(const kind_info_t *ki, dgrad_op_attr_t attr) {
    return attr_valid(attr) && (ki->attrs & (1u << attr));
}

/* ============================================================== helpers */

/* Records "<op>: <message>" and returns @p status. */
static dgrad_status_t op_error(const char *op, dgrad_status_t status,
        const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static dgrad_status_t op_error(const char *op, dgrad_status_t status,
        const char *fmt, ...) {
    char msg[900];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    return dgrad_error(status, "%s: %s", op, msg);
}

static int lower(int ch) { return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch; }

static int same_text(const char *a, const char *b, int ignore_case) {
    if (!ignore_case) return !strcmp(a, b);
    for (; *a && *b; a++, b++)
        if (lower((unsigned char)*a) != lower((unsigned char)*b)) return 0;
    return *a == *b;
}

static int find_choice(const choice_t *c, int n, const char *text,
        int ignore_case) {
    for (int i = 0; i < n; i++)
        if (same_text(c[i].text, text, ignore_case)) return i;
    return -1;
}

/* "a, b, c" for messages. */
static const char *join_choices(char *buf, size_t size, const choice_t *c,
        int n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s",
                i ? ", " : "", c[i].text);
    return buf;
}

/* The accepted values of a string attribute; auto_pad ignores case (every
 * dialect's examples use both spellings), the formats do not (oneDNN Graph
 * spells them in upper case only). */
static const choice_t *string_choices(const kind_info_t *ki,
        dgrad_op_attr_t attr, int *n, int *ignore_case) {
    *ignore_case = attr == dgrad_op_attr_auto_pad;
    switch (attr) {
        case dgrad_op_attr_auto_pad: *n = ki->n_auto_pads; return ki->auto_pads;
        case dgrad_op_attr_data_format:
            *n = N_CHOICES(data_formats);
            return data_formats;
        default:
            *n = N_CHOICES(weights_formats);
            return weights_formats;
    }
}

/* ===================================================== op description */

dgrad_status_t dgrad_op_desc_init(dgrad_op_desc_t *desc, dgrad_op_kind_t kind) {
    if (!desc)
        return dgrad_error(dgrad_invalid_arguments,
                "dgrad_op_desc_init: desc is NULL");
    if (!kind_info(kind))
        return dgrad_error(dgrad_invalid_arguments,
                "unknown op kind (%d)", (int)kind);
    memset(desc, 0, sizeof *desc);
    desc->kind = kind;
    return dgrad_success;
}

static dgrad_status_t unknown_attr_error(const kind_info_t *ki,
        const char *name) {
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    for (int a = 1; a < dgrad_op_attr_count && used < sizeof list; a++)
        if (kind_has_attr(ki, (dgrad_op_attr_t)a))
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s",
                    used ? ", " : "", attr_infos[a].name);
    return op_error(ki->name, dgrad_invalid_arguments,
            "unknown attribute '%.64s' (this op has: %s)", name, list);
}

/* Common checks of the setters: a valid description whose kind has the
 * attribute; the type is checked by the caller. */
static dgrad_status_t check_settable(const dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, const kind_info_t **ki) {
    if (!desc)
        return dgrad_error(dgrad_invalid_arguments,
                "setting attribute %s: op description is NULL",
                dgrad_op_attr_name(attr));
    *ki = kind_info(desc->kind);
    if (!*ki)
        return dgrad_error(dgrad_invalid_arguments,
                "setting attribute %s: unknown op kind (%d)",
                dgrad_op_attr_name(attr), (int)desc->kind);
    if (!kind_has_attr(*ki, attr))
        return unknown_attr_error(*ki, dgrad_op_attr_name(attr));
    return dgrad_success;
}

static dgrad_status_t type_error(const kind_info_t *ki, dgrad_op_attr_t attr,
        attr_type_t given) {
    return op_error(ki->name, dgrad_invalid_arguments, "%s takes %s, not %s",
            attr_infos[attr].name, attr_type_names[attr_infos[attr].type],
            attr_type_names[given]);
}

static void store_ints(dgrad_op_desc_t *desc, dgrad_op_attr_t attr,
        const int64_t *values, size_t count) {
    dgrad_attr_value_t v; /* built aside: @p values may point into desc */
    memset(&v, 0, sizeof v);
    v.is_set = 1;
    v.count = (int)count;
    if (count) memcpy(v.values, values, count * sizeof *values);
    desc->attrs[attr] = v;
}

dgrad_status_t dgrad_op_desc_set_s64(dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, int64_t value) {
    const kind_info_t *ki = NULL;
    dgrad_status_t st = check_settable(desc, attr, &ki);
    if (st != dgrad_success) return st;
    if (attr_infos[attr].type != ATTR_SCALAR)
        return type_error(ki, attr, ATTR_SCALAR);
    store_ints(desc, attr, &value, 1);
    return dgrad_success;
}

/* Lists take 0..DGRAD_ATTR_MAX_VALUES values (NULL is fine for 0); scalars
 * may come through here with exactly one value. */
dgrad_status_t dgrad_op_desc_set_s64s(dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, const int64_t *values, size_t count) {
    const kind_info_t *ki = NULL;
    dgrad_status_t st = check_settable(desc, attr, &ki);
    if (st != dgrad_success) return st;
    const char *name = attr_infos[attr].name;
    if (attr_infos[attr].type == ATTR_STRING)
        return type_error(ki, attr, ATTR_LIST);
    if (attr_infos[attr].type == ATTR_SCALAR && count != 1)
        return op_error(ki->name, dgrad_invalid_arguments,
                "%s takes one value (got %zu)", name, count);
    if (count > DGRAD_ATTR_MAX_VALUES)
        return op_error(ki->name, dgrad_invalid_arguments,
                "%s has %zu values, at most %d are allowed", name, count,
                DGRAD_ATTR_MAX_VALUES);
    if (!values && count)
        return op_error(ki->name, dgrad_invalid_arguments,
                "%s: values is NULL", name);
    store_ints(desc, attr, values, count);
    return dgrad_success;
}

dgrad_status_t dgrad_op_desc_set_str(dgrad_op_desc_t *desc,
        dgrad_op_attr_t attr, const char *value) {
    const kind_info_t *ki = NULL;
    dgrad_status_t st = check_settable(desc, attr, &ki);
    if (st != dgrad_success) return st;
    if (attr_infos[attr].type != ATTR_STRING)
        return type_error(ki, attr, ATTR_STRING);
    if (!value)
        return op_error(ki->name, dgrad_invalid_arguments, "%s: value is NULL",
                attr_infos[attr].name);
    int n, ignore_case;
    const choice_t *choices = string_choices(ki, attr, &n, &ignore_case);
    if (find_choice(choices, n, value, ignore_case) < 0) {
        char list[160];
        return op_error(ki->name, dgrad_invalid_arguments,
                "%s '%.64s' is not one of %s", attr_infos[attr].name, value,
                join_choices(list, sizeof list, choices, n));
    }
    /* Every accepted value is shorter than the buffer. */
    dgrad_attr_value_t *v = &desc->attrs[attr];
    memset(v, 0, sizeof *v);
    v->is_set = 1;
    v->count = 1;
    memcpy(v->text, value, strlen(value) + 1);
    return dgrad_success;
}

static int is_digit(char ch) { return ch >= '0' && ch <= '9'; }

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

static int starts_number(const char *p) {
    return is_digit(*p) || ((*p == '-' || *p == '+') && is_digit(p[1]));
}

/* Parses "2", "2,2", "[2, 2]", "2 2" strictly: integers separated by one
 * comma and/or blanks, optionally in one pair of brackets; "[]" is the
 * empty list. */
static dgrad_status_t parse_ints(const char *op, const char *name,
        const char *text, int64_t *values, size_t *count) {
    const char *p = skip_space(text);
    int bracket = *p == '[';
    p = skip_space(p + bracket);
    if (bracket && *p == ']' && !*skip_space(p + 1)) {
        *count = 0; /* "[]": a list of zero values */
        return dgrad_success;
    }
    if (!*p)
        return op_error(op, dgrad_invalid_arguments, "%s value '%.64s' is "
                "empty (write [] for a list of zero values)", name, text);
    size_t n = 0;
    for (;;) {
        if (!starts_number(p)) return op_error(op, dgrad_invalid_arguments,
                "%s value '%.64s' is not an integer list", name, text);
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno == ERANGE)
            return op_error(op, dgrad_invalid_arguments,
                    "%s value '%.64s' overflows 64 bits", name, text);
        if (n == DGRAD_ATTR_MAX_VALUES)
            return op_error(op, dgrad_invalid_arguments, "%s value '%.64s' "
                    "has more than %d values", name, text,
                    DGRAD_ATTR_MAX_VALUES);
        values[n++] = (int64_t)v;
        p = skip_space(end);
        if (*p == ',') p = skip_space(p + 1); /* a number must follow */
        else if (p == end || !starts_number(p)) break; /* not "2 2" */
    }
    if (bracket) p = *p == ']' ? skip_space(p + 1) : "]";
    if (*p) return op_error(op, dgrad_invalid_arguments,
            "%s value '%.64s' is not an integer list", name, text);
    *count = n;
    return dgrad_success;
}

dgrad_status_t dgrad_op_desc_set_by_name(dgrad_op_desc_t *desc,
        const char *name, const char *value) {
    if (!desc || !name || !value)
        return dgrad_error(dgrad_invalid_arguments,
                "setting an attribute by name: %s is NULL",
                !desc ? "op description" : !name ? "name" : "value");
    const kind_info_t *ki = kind_info(desc->kind);
    if (!ki)
        return dgrad_error(dgrad_invalid_arguments,
                "setting attribute '%.64s': unknown op kind (%d)", name,
                (int)desc->kind);
    dgrad_op_attr_t attr = dgrad_op_attr_from_name(name);
    if (!kind_has_attr(ki, attr)) return unknown_attr_error(ki, name);
    if (attr_infos[attr].type == ATTR_STRING)
        return dgrad_op_desc_set_str(desc, attr, value);
    int64_t values[DGRAD_ATTR_MAX_VALUES];
    size_t count = 0;
    dgrad_status_t st = parse_ints(ki->name, name, value, values, &count);
    if (st != dgrad_success) return st;
    return dgrad_op_desc_set_s64s(desc, attr, values, count);
}

/* ============================================================ resolve */

/* Everything dgrad_problem_resolve works with; r is the result. */
typedef struct ctx {
    const dgrad_op_desc_t *desc;
    const kind_info_t *ki;
    const char *op;
    dgrad_op_kind_t kind;
    size_t n_inputs;
    const dgrad_logical_tensor_t *data, *wei, *third, *req;
    const int64_t *shape_values;
    size_t n_shape_values;
    int nsp;
    int nxc; /* data and output are [N, X..., C] (oneDNN Graph NXC) */
    int xio; /* weights are [K..., Cout/G, Cin] (oneDNN Graph XIO) */
    dgrad_auto_pad_t auto_pad;
    int64_t F[DGRAD_MAX_SPATIAL];
    dgrad_resolved_t r;
} ctx_t;

typedef dgrad_status_t step_fn(ctx_t *c);

static const char *tname(const ctx_t *c, int role) {
    return c->ki->tensor[role];
}

static int has_shape_input(const ctx_t *c) {
    return c->third && c->ki->third != dgrad_third_input_bias;
}

static const dgrad_attr_value_t *attr_of(const ctx_t *c,
        dgrad_op_attr_t a) {
    return &c->desc->attrs[a];
}

/* Value @p i of a list attribute, or @p dflt when it is not set. */
static int64_t attr_at(const ctx_t *c, dgrad_op_attr_t a, int i,
        int64_t dflt) {
    const dgrad_attr_value_t *v = attr_of(c, a);
    return v->is_set && i < v->count ? v->values[i] : dflt;
}

static int64_t stride_at(const ctx_t *c, int i) {
    return attr_at(c, dgrad_op_attr_strides, i, 1);
}
static int64_t dilation_at(const ctx_t *c, int i) {
    return attr_at(c, dgrad_op_attr_dilations, i, 1);
}
static int64_t out_pad_at(const ctx_t *c, int i) {
    return attr_at(c, dgrad_op_attr_output_padding, i, 0);
}
static int64_t pad_begin_at(const ctx_t *c, int i) {
    if (c->kind == dgrad_op_conv_transpose)
        return attr_at(c, dgrad_op_attr_pads, i, 0);
    return attr_at(c, dgrad_op_attr_pads_begin, i, 0);
}
static int64_t pad_end_at(const ctx_t *c, int i) {
    if (c->kind == dgrad_op_conv_transpose)
        return attr_at(c, dgrad_op_attr_pads, c->nsp + i, 0);
    return attr_at(c, dgrad_op_attr_pads_end, i, 0);
}

/* Position of canonical data/output dim d ([N, C, X...]) in dialect order. */
static int act_pos(const ctx_t *c, int d) {
    if (!c->nxc || d == 0) return d;
    return d == 1 ? c->nsp + 1 : d - 1;
}

/* Positions of Cin (or Cin/G), Cout/G and the first kernel dim in the
 * user's weights. */
static void wei_pos(const ctx_t *c, int *ci, int *co, int *k0) {
    if (c->kind == dgrad_op_group_convolution_backprop_data) {
        *ci = 1, *co = 2, *k0 = 3; /* [G, Cin/G, Cout/G, K...] */
    } else if (c->xio) {
        *ci = c->nsp + 1, *co = c->nsp, *k0 = 0; /* [K..., Cout/G, Cin] */
    } else {
        *ci = 0, *co = 1, *k0 = 2; /* [Cin, Cout/G, K...] */
    }
}

static int all_dims_known(const dgrad_logical_tensor_t *t) {
    if (t->ndims == DGRAD_UNKNOWN_NDIMS) return 0;
    for (int d = 0; d < t->ndims; d++)
        if (t->dims[d] == DGRAD_UNKNOWN_DIM) return 0;
    return 1;
}

/* Formats a list of values into a local char array (for messages). */
#define DIMS(buf, v, n) dgrad_format_dims(buf, sizeof buf, v, n)

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
    int onednn = c->kind == dgrad_op_convolution_backward_data, ap;
    dgrad_status_t st = string_attr(c, dgrad_op_attr_auto_pad,
            dgrad_auto_pad_explicit, &ap);
    c->auto_pad = (dgrad_auto_pad_t)ap;
    /* oneDNN Graph defaults: NXC data, XIO weights. */
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
    if (n_inputs < 2 || n_inputs > 3
            || (n_inputs == 3 && c->ki->third == dgrad_third_input_none))
        return op_error(c->op, dgrad_invalid_arguments, "%zu inputs given, "
                "the op takes %s, %s and optionally %s", n_inputs,
                tname(c, T_DATA), tname(c, T_WEI), tname(c, T_THIRD));
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

/* ---------------------------------------------------------- step 2 */

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

/* ---------------------------------------------------------- step 3 */

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

/* ---------------------------------------------------------- step 4 */

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

/* ---------------------------------------------------------- step 5 */

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

/* ---------------------------------------------------------- step 6 */

/* oneDNN Graph writes an unset dst_shape or output_padding as a list of
 * zeros (DNNL_MAX_NDIMS of them): all-zero or empty, of any length, means
 * "not given" for these two attributes of ConvolutionBackwardData. */
static int list_given(const ctx_t *c, dgrad_op_attr_t a) {
    const dgrad_attr_value_t *v = attr_of(c, a);
    if (!v->is_set) return 0;
    if (c->kind != dgrad_op_convolution_backward_data
            || (a != dgrad_op_attr_dst_shape
                    && a != dgrad_op_attr_output_padding))
        return 1;
    for (int i = 0; i < v->count; i++)
        if (v->values[i] != 0) return 1;
    return 0;
}

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

/* ---------------------------------------------------------- step 7 */

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

/* ---------------------------------------------------------- step 8 */

static int64_t groups_of(const ctx_t *c) {
    switch (c->kind) {
        case dgrad_op_convolution_backward_data:
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

/* ---------------------------------------------------------- step 9 */

static dgrad_status_t compute_natural_sizes(ctx_t *c) {
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

/* --------------------------------------------------------- step 10 */

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

static dgrad_status_t resolve_output_shape(ctx_t *c) {
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

/* --------------------------------------------------------- step 11 */

/* Dense channels-last strides (C innermost, then spatial, then N) for the
 * canonical dims, written in the dialect's dims order. */
static dgrad_status_t channels_last_strides(ctx_t *c,
        dgrad_logical_tensor_t *o) {
    const dgrad_problem_t *p = &c->r.problem;
    int64_t s = p->Cout;
    char buf[200];
    o->strides[act_pos(c, 1)] = 1;
    for (int i = c->nsp - 1; i >= 0; i--) {
        o->strides[act_pos(c, 2 + i)] = s;
        if (__builtin_mul_overflow(s, p->Y[i], &s))
            return op_error(c->op, dgrad_invalid_shape, "%s (dims %s) element "
                    "count overflows 64 bits", tname(c, T_OUT),
                    DIMS(buf, o->dims, o->ndims));
    }
    o->strides[0] = s;
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
    /* Strides: the caller's when given; layout any gets channels-last (what
     * oneDNN's fastest kernels write directly); strided without dims gets
     * row-major in the dialect's order. */
    o->layout_type = dgrad_layout_type_strided;
    if (c->req->layout_type == dgrad_layout_type_strided
            && all_dims_known(c->req))
        memcpy(o->strides, c->req->strides, (size_t)o->ndims * sizeof(int64_t));
    else if (c->req->layout_type == dgrad_layout_type_any)
        st = channels_last_strides(c, o);
    else
        st = row_major_strides(c, o);
    if (st != dgrad_success) return st;
    st = check_extent(c, o, tname(c, T_OUT));
    for (int d = 0; d < o->ndims; d++)
        p->out_strides[d] = o->strides[act_pos(c, d)];
    return st;
}

/* --------------------------------------------------------- step 12 */

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
                    "%lld elements, too many to check that no two share an "
                    "address", tname(c, T_OUT), dims, strides,
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
    /* The context (and the result inside it) is zeroed first, padding
     * included: the problem is compared bytewise as a cache key. */
    ctx_t c;
    dgrad_status_t st = init_ctx(&c, desc, n_inputs, inputs, output,
            shape_values, n_shape_values, out);
    static step_fn *const steps[] = {check_types, check_layouts, check_ranks,
            check_extents, check_attr_lengths, check_attr_ranges,
            check_channels, fill_geometry, compute_natural_sizes,
            resolve_output_shape, fill_output, check_output_aliasing};
    for (int i = 0; st == dgrad_success && i < N_CHOICES(steps); i++)
        st = steps[i](&c);
    if (st != dgrad_success) return st;
    memcpy(out, &c.r, sizeof *out); /* memcpy keeps the zeroed padding */
    return dgrad_success;
}

/* ================================================ operands without an op */

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
