/*
 * Reader of vector files (../shared/conformance/vectors/README.md): cases
 * with their inputs and expected outputs, or the status they must be
 * rejected with.
 *
 * The schema names attributes the OpenVINO way; each case is mapped to its
 * own dialect's names here (ONNX: pads = pads_begin ++ pads_end, group,
 * auto_pad NOTSET for explicit; oneDNN Graph: groups, formats, dst_shape;
 * its ConvTranspose, "onednn:ConvTranspose": groups, formats (XOI/IOX),
 * bias, auto_pad None for explicit, no output shape: it is inferred).
 * Attribute *values* are passed on as they are, even out-of-range ones:
 * cases with expect_error are there to see dgrad reject them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_common.h"

/* The attributes a vector case may carry, and which dialects have them. */
enum { K_ONEDNN = 1, K_OV = 2, K_ONNX = 4, K_ONEDNN_CT = 8, K_ALL = 15 };
typedef enum { V_LIST, V_INT, V_STRING } vtype_t;
static const struct {
    const char *name;
    vtype_t type;
    int kinds;
} known_attrs[] = {
        {"strides", V_LIST, K_ALL},       {"pads_begin", V_LIST, K_ALL},
        {"pads_end", V_LIST, K_ALL},      {"dilations", V_LIST, K_ALL},
        {"output_padding", V_LIST, K_ALL}, {"auto_pad", V_STRING, K_ALL},
        {"groups", V_INT, K_ALL},         {"kernel_shape", V_LIST, K_ONNX},
        {"data_format", V_STRING, K_ONEDNN | K_ONEDNN_CT},
        {"weights_format", V_STRING, K_ONEDNN | K_ONEDNN_CT},
        {"dst_shape", V_LIST, K_ONEDNN},
};
#define N_KNOWN (sizeof known_attrs / sizeof known_attrs[0])

static int kind_bit(dgrad_op_kind_t k) {
    return k == dgrad_op_convolution_backward_data ? K_ONEDNN
            : k == dgrad_op_conv_transpose         ? K_ONNX
            : k == dgrad_op_onednn_conv_transpose  ? K_ONEDNN_CT
                                                   : K_OV;
}

/* {shape, data}: @p allow_zero lets an expect_error case carry a 0 dim. */
static int read_tensor(jctx_t *j, json_t *obj, const char *path,
        int allow_zero, cf_tensor_t *t) {
    char p[JPATH];
    if (!jexpect_object(j, obj, path)) return 0;
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (strcmp(key, "shape") && strcmp(key, "data"))
            return jerr(j, jpath_key(p, path, key), "unknown field",
                    "a tensor has only 'shape' and 'data'");
    }
    json_t *shape = json_object_get(obj, "shape"), *data = json_object_get(obj, "data");
    if (!shape || !data)
        return jerr(j, path, "missing field", "a tensor needs '%s'",
                shape ? "data" : "shape");
    int nd;
    if (!jget_dims(j, shape, jpath_key(p, path, "shape"), allow_zero ? 0 : 1,
                t->dims, &nd))
        return 0;
    t->ndims = nd;
    int64_t count = cf_dims_count(t->dims, nd);
    if (!json_is_array(data))
        return jerr(j, jpath_key(p, path, "data"), "wrong type",
                "expected a list of numbers, got %s", jtype(data));
    if ((int64_t)json_array_size(data) != count)
        return jerr(j, jpath_key(p, path, "data"), "inconsistent",
                "%zu values for shape of %lld elements", json_array_size(data),
                (long long)count);
    t->data = malloc((size_t)(count > 0 ? count : 1) * sizeof(double));
    if (!t->data) return jerr(j, path, "out of memory", "%lld values", (long long)count);
    t->count = (size_t)count;
    for (size_t i = 0; i < (size_t)count; i++) {
        json_t *e = json_array_get(data, i);
        char q[JPATH];
        if (!json_is_number(e))
            return jerr(j, jpath_index(q, jpath_key(p, path, "data"), i),
                    "wrong type", "expected a number, got %s", jtype(e));
        t->data[i] = json_number_value(e);
    }
    return 1;
}

/* One attribute, as text, under the dialect's own name. */
static int read_attr(jctx_t *j, json_t *v, const char *path, size_t a,
        char *text, size_t size) {
    int64_t vals[CF_MAX_LIST];
    int n;
    switch (known_attrs[a].type) {
        case V_LIST:
            if (!jget_ints(j, v, path, INT64_MIN, vals, CF_MAX_LIST, &n))
                return 0;
            if (n) cf_format_ints(text, size, vals, n);
            else snprintf(text, size, "[]"); /* what the setter takes */
            return 1;
        case V_INT:
            if (!json_is_integer(v))
                return jerr(j, path, "wrong type", "expected an integer, got %s",
                        jtype(v));
            snprintf(text, size, "%lld", (long long)json_integer_value(v));
            return 1;
        default:
            if (!json_is_string(v))
                return jerr(j, path, "wrong type", "expected a string, got %s",
                        jtype(v));
            if (strlen(json_string_value(v)) >= size)
                return jerr(j, path, "too large", "the string is longer than %zu "
                        "bytes", size - 1);
            snprintf(text, size, "%s", json_string_value(v));
            return 1;
    }
}

static int add_attr(jctx_t *j, cf_case_t *c, const char *path,
        const char *name, const char *value) {
    if (cf_case_add_attr(c, name, value)) return 1;
    return jerr(j, path, "too large", "attribute '%s' does not fit", name);
}

/* Maps the schema's attributes onto the case's dialect. */
static int read_attrs(jctx_t *j, json_t *attrs, const char *path,
        cf_case_t *c) {
    char p[JPATH], text[CF_ATTR_VALUE], pads_b[CF_ATTR_VALUE] = "",
            pads_e[CF_ATTR_VALUE] = "";
    if (!jexpect_object(j, attrs, path)) return 0;
    int onnx = c->kind == dgrad_op_conv_transpose;
    int onednn_ct = c->kind == dgrad_op_onednn_conv_transpose;
    const char *key;
    json_t *v;
    json_object_foreach(attrs, key, v) {
        jpath_key(p, path, key);
        size_t a = 0;
        while (a < N_KNOWN && strcmp(known_attrs[a].name, key)) a++;
        if (a == N_KNOWN)
            return jerr(j, p, "unknown attribute", "'%.64s' is not an "
                    "attribute of the vector schema", key);
        if (!(known_attrs[a].kinds & kind_bit(c->kind)))
            return jerr(j, p, "unknown attribute", "'%s' does not apply to "
                    "%s cases", key, dgrad_op_kind_name(c->kind));
        if (!read_attr(j, v, p, a, text, sizeof text)) return 0;
        if (onnx && !strcmp(key, "pads_begin")) {
            snprintf(pads_b, sizeof pads_b, "%s", text);
        } else if (onnx && !strcmp(key, "pads_end")) {
            snprintf(pads_e, sizeof pads_e, "%s", text);
        } else if ((onnx || onednn_ct) && !strcmp(key, "auto_pad")) {
            /* The schema writes ONNX's NOTSET (oneDNN's None) as explicit. */
            if (!add_attr(j, c, p, key, !strcmp(text, "explicit")
                                ? (onnx ? "NOTSET" : "None") : text))
                return 0;
        } else if (!strcmp(key, "groups")) {
            int64_t g = (int64_t)json_integer_value(v);
            if (c->kind == dgrad_op_convolution_backprop_data && g != 1)
                return jerr(j, p, "inconsistent", "ConvolutionBackpropData has "
                        "no groups (%lld given)", (long long)g);
            if (c->kind == dgrad_op_group_convolution_backprop_data
                    && c->weights.ndims > 0 && g != c->weights.dims[0])
                return jerr(j, p, "inconsistent", "groups (%lld) differ from "
                        "weights.shape[0] (%lld), which defines them",
                        (long long)g, (long long)c->weights.dims[0]);
            if ((c->kind == dgrad_op_convolution_backward_data || onnx
                        || onednn_ct)
                    && !add_attr(j, c, p, onnx ? "group" : "groups", text))
                return 0;
        } else if (!add_attr(j, c, p, key, text)) {
            return 0;
        }
    }
    if (onnx && (pads_b[0] || pads_e[0])) {
        /* ONNX pads [b1..bn, e1..en]; a missing half is zeros. */
        int64_t b[DGRAD_MAX_NDIMS], e[DGRAD_MAX_NDIMS], all[2 * DGRAD_MAX_NDIMS];
        int nb = 0, ne = 0;
        cf_parse_ints(pads_b, b, DGRAD_MAX_NDIMS, &nb);
        cf_parse_ints(pads_e, e, DGRAD_MAX_NDIMS, &ne);
        int n = nb > ne ? nb : ne;
        for (int i = 0; i < n; i++) {
            all[i] = pads_b[0] ? (i < nb ? b[i] : 0) : 0;
            all[n + i] = pads_e[0] ? (i < ne ? e[i] : 0) : 0;
        }
        if (pads_b[0] && pads_e[0] && nb != ne)
            return jerr(j, path, "inconsistent", "pads_begin has %d values, "
                    "pads_end %d", nb, ne);
        if (!add_attr(j, c, path, "pads",
                    cf_format_ints(text, sizeof text, all, 2 * n)))
            return 0;
    }
    return 1;
}

/* One post-op: {kind, attrs (name -> number or string), operand
 * ({shape, data}, optional dtype and strides)}. */
static int read_post_op(jctx_t *j, json_t *obj, const char *path,
        int allow_zero, cf_post_t *po) {
    char p[JPATH], q[JPATH];
    const char *kind = NULL, *key;
    json_t *v;
    if (!jexpect_object(j, obj, path)
            || !jget_string(j, obj, path, "kind", 1, &kind))
        return 0;
    json_object_foreach(obj, key, v) {
        if (strcmp(key, "kind") && strcmp(key, "attrs") && strcmp(key, "operand"))
            return jerr(j, jpath_key(p, path, key), "unknown field", "a post-op "
                    "has only 'kind', 'attrs' and 'operand'");
    }
    if (strlen(kind) >= sizeof po->kind)
        return jerr(j, jpath_key(p, path, "kind"), "too large", "the kind is "
                "longer than %zu bytes", sizeof po->kind - 1);
    snprintf(po->kind, sizeof po->kind, "%s", kind);
    json_t *attrs = json_object_get(obj, "attrs");
    if (attrs) {
        jpath_key(p, path, "attrs");
        if (!jexpect_object(j, attrs, p)) return 0;
        json_object_foreach(attrs, key, v) {
            jpath_key(q, p, key);
            if (po->n_attrs == CF_POST_ATTRS || strlen(key) >= CF_ATTR_NAME)
                return jerr(j, q, "too large", "at most %d attributes with "
                        "names below %d bytes", CF_POST_ATTRS, CF_ATTR_NAME);
            cf_attr_t *a = &po->attrs[po->n_attrs++];
            snprintf(a->name, sizeof a->name, "%s", key);
            /* numbers as dgrad_op_append_post_op takes them: text that
             * reads back as the same double */
            if (json_is_number(v))
                snprintf(a->value, sizeof a->value, "%.17g", json_number_value(v));
            else if (json_is_string(v) && strlen(json_string_value(v)) < CF_ATTR_VALUE)
                snprintf(a->value, sizeof a->value, "%s", json_string_value(v));
            else
                return jerr(j, q, "wrong type", "expected a number or a string "
                        "(below %d bytes), got %s", CF_ATTR_VALUE, jtype(v));
        }
    }
    json_t *op = json_object_get(obj, "operand");
    if (!op) return 1;
    jpath_key(p, path, "operand");
    if (!jexpect_object(j, op, p)) return 0;
    /* dtype and strides are the operand's own; the rest is a tensor */
    json_t *t = json_deep_copy(op);
    json_t *dt = json_object_get(op, "dtype"), *st = json_object_get(op, "strides");
    json_object_del(t, "dtype");
    json_object_del(t, "strides");
    int ok = read_tensor(j, t, p, allow_zero, &po->operand);
    json_decref(t);
    if (!ok) return 0;
    po->has_operand = 1;
    if (dt) {
        jpath_key(q, p, "dtype");
        if (!json_is_string(dt))
            return jerr(j, q, "wrong type", "expected a string, got %s", jtype(dt));
        po->operand_dt = cf_data_type_named(json_string_value(dt));
        if (!po->operand_dt)
            return jerr(j, q, "bad value", "'%.16s' is not a data type name",
                    json_string_value(dt));
    }
    if (st) {
        int n;
        jpath_key(q, p, "strides");
        if (!jget_ints(j, st, q, 0, po->operand.strides, DGRAD_MAX_NDIMS, &n))
            return 0;
        if (n != po->operand.ndims)
            return jerr(j, q, "inconsistent", "%d strides for %d dims", n,
                    (int)po->operand.ndims);
        po->operand.has_strides = 1;
    }
    return 1;
}

static int read_post_ops(jctx_t *j, json_t *v, const char *path,
        int allow_zero, cf_case_t *c) {
    char p[JPATH];
    if (!json_is_array(v))
        return jerr(j, path, "wrong type", "expected a list of post-ops, got %s",
                jtype(v));
    if (json_array_size(v) > CF_MAX_POST)
        return jerr(j, path, "too large", "at most %d post-ops", CF_MAX_POST);
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e) {
        cf_post_t *po = &c->post[c->n_post++];
        memset(po, 0, sizeof *po);
        if (!read_post_op(j, e, jpath_index(p, path, i), allow_zero, po))
            return 0;
    }
    return 1;
}

static int status_known(const char *name) {
    for (int s = 0; s <= dgrad_abi_mismatch; s++)
        if (!strcmp(dgrad_status_name((dgrad_status_t)s), name)) return 1;
    return 0;
}

static int read_shape_input(jctx_t *j, json_t *v, const char *path,
        cf_case_t *c) {
    int n;
    if (!jget_ints(j, v, path, INT64_MIN, c->shape_values, DGRAD_MAX_NDIMS, &n))
        return 0;
    c->third = cf_third_shape;
    c->n_shape = n;
    c->shape_dt = dgrad_s64;
    return 1;
}

static int read_case(jctx_t *j, json_t *obj, const char *path,
        cf_case_t *c) {
    char p[JPATH];
    const char *name = NULL, *op = NULL, *dtype = NULL, *expect = NULL;
    if (!jexpect_object(j, obj, path)
            || !jget_string(j, obj, path, "name", 1, &name)
            || !jget_string(j, obj, path, "op", 1, &op)
            || !jget_string(j, obj, path, "dtype", 0, &dtype)
            || !jget_string(j, obj, path, "expect_error", 0, &expect))
        return 0;
    snprintf(c->name, sizeof c->name, "%s#%s", j->file, name);
    snprintf(c->suite, sizeof c->suite, "%s", j->file);
    snprintf(c->where, sizeof c->where, "%s:%s", j->file, path);
    if (dgrad_op_kind_from_name(op, &c->kind) != dgrad_success)
        return jerr(j, jpath_key(p, path, "op"), "bad value", "'%.64s' is not "
                "one of ConvolutionBackwardData, ConvolutionBackpropData, "
                "GroupConvolutionBackpropData, ConvTranspose, "
                "onednn:ConvTranspose", op);
    /* The expected data were computed from the values in this type. */
    c->values_dt = dtype ? cf_data_type_named(dtype) : dgrad_f32;
    if (!cf_is_compute_type(c->values_dt))
        return jerr(j, jpath_key(p, path, "dtype"), "bad value", "'%.16s' is "
                "not f32, bf16 or f16", dtype);
    if (expect) {
        if (!status_known(expect))
            return jerr(j, jpath_key(p, path, "expect_error"), "bad value",
                    "'%.32s' is not a dgrad status name", expect);
        if (!strcmp(expect, "success"))
            return jerr(j, jpath_key(p, path, "expect_error"), "bad value",
                    "a case expecting success has 'expected' instead");
        snprintf(c->expect_error, sizeof c->expect_error, "%s", expect);
    }
    json_t *in = json_object_get(obj, "diff_dst"), *w = json_object_get(obj, "weights");
    json_t *exp = json_object_get(obj, "expected"), *attrs = json_object_get(obj, "attrs");
    if (!in || !w || !attrs || (!exp && !expect))
        return jerr(j, path, "missing field", "a case needs '%s'",
                !in ? "diff_dst" : !w ? "weights" : !attrs ? "attrs"
                                                           : "expected (or expect_error)");
    if (!read_tensor(j, in, jpath_key(p, path, "diff_dst"), !!expect, &c->data)
            || !read_tensor(j, w, jpath_key(p, path, "weights"), !!expect,
                    &c->weights)
            || !read_attrs(j, attrs, jpath_key(p, path, "attrs"), c))
        return 0;
    if (exp) {
        if (!read_tensor(j, exp, jpath_key(p, path, "expected"), !!expect,
                    &c->expected))
            return 0;
        c->has_expected = !expect;
    }
    json_t *posts = json_object_get(obj, "post_ops");
    if (posts && !read_post_ops(j, posts, jpath_key(p, path, "post_ops"),
                !!expect, c))
        return 0;
    json_t *bias = json_object_get(obj, "bias");
    if (bias) {
        if (c->kind != dgrad_op_conv_transpose
                && c->kind != dgrad_op_onednn_conv_transpose)
            return jerr(j, jpath_key(p, path, "bias"), "inconsistent",
                    "only ConvTranspose and onednn:ConvTranspose cases have "
                    "a bias");
        if (!read_tensor(j, bias, jpath_key(p, path, "bias"), !!expect, &c->bias))
            return 0;
        c->third = cf_third_bias;
    }
    json_t *os = json_object_get(obj, "output_shape");
    json_t *dsi = json_object_get(obj, "dst_shape_input");
    char text[CF_ATTR_VALUE];
    if (os && !json_is_null(os)) {
        jpath_key(p, path, "output_shape");
        if (c->kind == dgrad_op_convolution_backward_data)
            return jerr(j, p, "inconsistent", "ConvolutionBackwardData cases "
                    "give the output shape as attrs.dst_shape or "
                    "dst_shape_input");
        if (c->kind == dgrad_op_onednn_conv_transpose)
            return jerr(j, p, "inconsistent", "onednn:ConvTranspose infers "
                    "its output shape from its attributes: it has none to "
                    "give");
        if (c->kind == dgrad_op_conv_transpose) { /* ONNX: an attribute */
            int64_t v[DGRAD_MAX_NDIMS];
            int n;
            if (!jget_ints(j, os, p, INT64_MIN, v, DGRAD_MAX_NDIMS, &n)
                    || !add_attr(j, c, p, "output_shape",
                            cf_format_ints(text, sizeof text, v, n)))
                return 0;
        } else if (!read_shape_input(j, os, p, c)) { /* OpenVINO: an input */
            return 0;
        }
    }
    if (dsi && !json_is_null(dsi)) {
        jpath_key(p, path, "dst_shape_input");
        if (c->kind != dgrad_op_convolution_backward_data)
            return jerr(j, p, "inconsistent", "only ConvolutionBackwardData "
                    "cases have a dst_shape input");
        if (!read_shape_input(j, dsi, p, c)) return 0;
    }
    /* Output dims are left to dgrad: its shape inference is under test
     * (and with a shape input, the plan is made at execution). */
    c->output.ndims = DGRAD_UNKNOWN_NDIMS;
    for (const char *s = name; *s; s++) c->seed = c->seed * 31u + (unsigned char)*s;
    return 1;
}

static void read_root(jctx_t *j, json_t *root) {
    char p[JPATH];
    if (!jexpect_object(j, root, "$")) return;
    json_t *cases;
    if (!jget_array(j, root, "$", "cases", "a vector file has 'cases'",
                "an array", &cases))
        return;
    size_t i;
    json_t *v;
    json_array_foreach(cases, i, v) {
        cf_case_t c;
        cf_case_init(&c);
        /* A bad case is reported and the others still run. */
        if (read_case(j, v, jpath_index(p, "$.cases", i), &c))
            j->sink->on_case(j->sink, &c);
        cf_case_free(&c);
    }
    json_t *skipped;
    if (!jget_array(j, root, "$", "skipped", NULL, "an array", &skipped)
            || !skipped)
        return;
    json_array_foreach(skipped, i, v) {
        const char *name = NULL, *reason = "skipped by the vector file";
        jpath_index(p, "$.skipped", i);
        if (!jexpect_object(j, v, p) || !jget_string(j, v, p, "name", 1, &name)
                || !jget_string(j, v, p, "reason", 0, &reason))
            continue;
        char full[CF_NAME];
        snprintf(full, sizeof full, "%s#%s", j->file, name);
        j->sink->on_skip(j->sink, j->file, full, reason);
    }
}

int cf_vectors_from_json(jctx_t *j, json_t *root) {
    read_root(j, root);
    return j->errors;
}
