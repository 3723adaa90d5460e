/*
 * Op descriptions in the five dialects: the kinds, their attributes and
 * accepted values, the setters (typed and from text). Range checks that
 * need the tensors happen in resolve.c, so that they name the tensors.
 *
 * Decisions the specification leaves open:
 * - data_format / weights_format values are case-sensitive ("NXC", "NCX",
 *   "XIO", "OIX", "XOI", "IOX"), as oneDNN Graph spells them; only
 *   auto_pad ignores case.
 * - An integer list attribute may be set empty (count 0, values may then be
 *   NULL; "[]" as text); resolve reports its length.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect_impl.h"

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
/* ConvolutionBackwardData names its weights as the forward convolution's
 * (O = its diff_dst channels), ConvTranspose as its own (O = its output
 * channels per group): XIO and XOI are one layout, [K..., Cout/G, Cin],
 * and so are OIX and IOX, [Cin, Cout/G, K...]. */
static const choice_t backward_data_weights[] = {{"XIO", 1}, {"OIX", 0}};
static const choice_t transposed_weights[] = {{"XOI", 1}, {"IOX", 0}};


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
                dgrad_third_input_full_shape, 1, backward_data_weights,
                N_CHOICES(backward_data_weights)},
        [dgrad_op_convolution_backprop_data] = {"ConvolutionBackpropData",
                {"data", "weights", "output_shape", "output"}, OPENVINO_ATTRS,
                openvino_auto_pads, N_CHOICES(openvino_auto_pads),
                dgrad_third_input_spatial_shape, 0, NULL, 0},
        [dgrad_op_group_convolution_backprop_data] = {
                "GroupConvolutionBackpropData",
                {"data", "weights", "output_shape", "output"}, OPENVINO_ATTRS,
                openvino_auto_pads, N_CHOICES(openvino_auto_pads),
                dgrad_third_input_spatial_shape, 0, NULL, 0},
        [dgrad_op_conv_transpose] = {"ConvTranspose", {"X", "W", "B", "Y"},
                COMMON_ATTRS | BIT(pads) | BIT(group) | BIT(output_shape)
                        | BIT(kernel_shape),
                onnx_auto_pads, N_CHOICES(onnx_auto_pads),
                dgrad_third_input_bias, 0, NULL, 0},
        [dgrad_op_onednn_conv_transpose] = {"onednn:ConvTranspose",
                {"src", "weights", "bias", "dst"},
                OPENVINO_ATTRS | BIT(groups) | BIT(data_format)
                        | BIT(weights_format),
                onednn_auto_pads, N_CHOICES(onednn_auto_pads),
                dgrad_third_input_bias, 1, transposed_weights,
                N_CHOICES(transposed_weights)},
};

const kind_info_t *kind_info(dgrad_op_kind_t kind) {
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
            "ConvolutionBackpropData, GroupConvolutionBackpropData, "
            "ConvTranspose or onednn:ConvTranspose)", name);
}

dgrad_third_input_t dgrad_op_kind_third_input(dgrad_op_kind_t kind) {
    const kind_info_t *ki = kind_info(kind);
    return ki ? ki->third : dgrad_third_input_none;
}


static const char *const attr_type_names[] = {
        "an integer list", "an integer", "a string"};

const attr_info_t attr_infos[dgrad_op_attr_count] = {
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

int kind_has_attr(const kind_info_t *ki, dgrad_op_attr_t attr) {
    return attr_valid(attr) && (ki->attrs & (1u << attr));
}

/* ============================================================== helpers */

/* Records "<op>: <message>" and returns @p status. */
dgrad_status_t op_error(const char *op, dgrad_status_t status,
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

int find_choice(const choice_t *c, int n, const char *text,
        int ignore_case) {
    for (int i = 0; i < n; i++)
        if (same_text(c[i].text, text, ignore_case)) return i;
    return -1;
}

/* "a, b, c" for messages. */
const char *join_choices(char *buf, size_t size, const choice_t *c,
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
const choice_t *string_choices(const kind_info_t *ki,
        dgrad_op_attr_t attr, int *n, int *ignore_case) {
    *ignore_case = attr == dgrad_op_attr_auto_pad;
    switch (attr) {
        case dgrad_op_attr_auto_pad: *n = ki->n_auto_pads; return ki->auto_pads;
        case dgrad_op_attr_data_format:
            *n = N_CHOICES(data_formats);
            return data_formats;
        default: *n = ki->n_weights_formats; return ki->weights_formats;
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
    /* ONNX's op and oneDNN Graph's share the name ConvTranspose: point a
     * caller who reached for the other one to it. */
    dgrad_op_attr_t a = dgrad_op_attr_from_name(name);
    const kind_info_t *graph = kind_info(dgrad_op_onednn_conv_transpose),
                      *onnx = kind_info(dgrad_op_conv_transpose);
    const char *hint = ki == onnx && kind_has_attr(graph, a)
            ? " (oneDNN Graph's ConvTranspose is op kind onednn:ConvTranspose)"
            : ki == graph && kind_has_attr(onnx, a)
            ? " (ONNX's ConvTranspose is op kind ConvTranspose)" : "";
    return op_error(ki->name, dgrad_invalid_arguments,
            "unknown attribute '%.64s' (this op has: %s)%s", name, list, hint);
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
