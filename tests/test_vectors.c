/*
 * Every public vector in shared/conformance/vectors (every .json file, f32) through the
 * public API, compared with its expected data. The reference is checked
 * against the same data, which validates the oracle the other tests use.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "problem.h"
#include "reference.h"

#ifndef DGRAD_VECTORS_DIR
#define DGRAD_VECTORS_DIR "../shared/conformance/vectors"
#endif

typedef struct shaped {
    int ndims;
    int64_t dims[DGRAD_MAX_NDIMS];
    float *data;
    size_t count;
} shaped_t;

static int read_shaped(json_t *obj, shaped_t *s) {
    memset(s, 0, sizeof *s);
    json_t *shape = json_object_get(obj, "shape");
    json_t *data = json_object_get(obj, "data");
    if (!json_is_array(shape) || !json_is_array(data)) return 0;
    s->ndims = (int)json_array_size(shape);
    if (s->ndims > DGRAD_MAX_NDIMS) return 0;
    for (int i = 0; i < s->ndims; i++)
        s->dims[i] = json_integer_value(json_array_get(shape, (size_t)i));
    s->count = json_array_size(data);
    s->data = malloc((s->count ? s->count : 1) * sizeof(float));
    for (size_t i = 0; i < s->count; i++)
        s->data[i] = (float)json_number_value(json_array_get(data, i));
    return 1;
}

static int set_list(dgrad_op_t *op, dgrad_op_attr_t attr, json_t *list) {
    int64_t v[DGRAD_MAX_NDIMS];
    size_t n = json_array_size(list);
    if (!json_is_array(list)) return 1; /* absent: keep the default */
    for (size_t i = 0; i < n && i < DGRAD_MAX_NDIMS; i++)
        v[i] = json_integer_value(json_array_get(list, i));
    return dgrad_op_set_attr_s64s(op, attr, v, n) == dgrad_success;
}

/* Builds the op of a vector case; the vector schema uses OpenVINO-style
 * names, mapped here to each dialect's own. */
static dgrad_op_t *build_op(json_t *c, dgrad_op_kind_t kind) {
    json_t *attrs = json_object_get(c, "attrs");
    dgrad_op_t *op;
    if (dgrad_op_create(&op, 0, kind, NULL) != dgrad_success) return NULL;
    int ok = set_list(op, dgrad_op_attr_strides, json_object_get(attrs, "strides"))
            && set_list(op, dgrad_op_attr_dilations, json_object_get(attrs, "dilations"))
            && set_list(op, dgrad_op_attr_output_padding,
                    json_object_get(attrs, "output_padding"));
    json_t *pb = json_object_get(attrs, "pads_begin");
    json_t *pe = json_object_get(attrs, "pads_end");
    const char *auto_pad = json_string_value(json_object_get(attrs, "auto_pad"));
    int64_t groups = json_integer_value(json_object_get(attrs, "groups"));
    if (kind == dgrad_op_conv_transpose) {
        json_t *pads = json_array();
        json_array_extend(pads, pb);
        json_array_extend(pads, pe);
        ok = ok && set_list(op, dgrad_op_attr_pads, pads);
        json_decref(pads);
        if (auto_pad && !strcmp(auto_pad, "explicit")) auto_pad = "NOTSET";
        if (groups) ok = ok && dgrad_op_set_attr_s64(op, dgrad_op_attr_group, groups) == 0;
        ok = ok && set_list(op, dgrad_op_attr_output_shape, json_object_get(c, "output_shape"));
        ok = ok && set_list(op, dgrad_op_attr_kernel_shape,
                json_object_get(attrs, "kernel_shape"));
    } else {
        ok = ok && set_list(op, dgrad_op_attr_pads_begin, pb)
                && set_list(op, dgrad_op_attr_pads_end, pe);
    }
    if (kind == dgrad_op_convolution_backward_data) {
        const char *df = json_string_value(json_object_get(attrs, "data_format"));
        const char *wf = json_string_value(json_object_get(attrs, "weights_format"));
        if (groups) ok = ok && dgrad_op_set_attr_s64(op, dgrad_op_attr_groups, groups) == 0;
        if (df) ok = ok && dgrad_op_set_attr_str(op, dgrad_op_attr_data_format, df) == 0;
        if (wf) ok = ok && dgrad_op_set_attr_str(op, dgrad_op_attr_weights_format, wf) == 0;
        ok = ok && set_list(op, dgrad_op_attr_dst_shape,
                json_object_get(attrs, "dst_shape"));
    }
    if (auto_pad) ok = ok && dgrad_op_set_attr_str(op, dgrad_op_attr_auto_pad, auto_pad) == 0;
    if (!ok) {
        cr_log_error("attribute rejected: %s", dgrad_last_error_message());
        dgrad_op_destroy(op);
        return NULL;
    }
    return op;
}

/* Runs one case; returns 1 when it matches its expectation. */
static int run_case(json_t *c, const char *file) {
    const char *name = json_string_value(json_object_get(c, "name"));
    dgrad_op_kind_t kind;
    if (dgrad_op_kind_from_name(json_string_value(json_object_get(c, "op")),
                &kind) != dgrad_success) {
        cr_log_error("%s %s: unknown op", file, name);
        return 0;
    }
    shaped_t in, wei, bias, expected;
    read_shaped(json_object_get(c, "diff_dst"), &in);
    read_shaped(json_object_get(c, "weights"), &wei);
    int has_bias = read_shaped(json_object_get(c, "bias"), &bias);
    read_shaped(json_object_get(c, "expected"), &expected);
    const char *expect_error = json_string_value(json_object_get(c, "expect_error"));
    int passed = 0;

    dgrad_op_t *op = build_op(c, kind);
    dgrad_logical_tensor_t lts[3], out_lt;
    dgrad_logical_tensor_init(&lts[0], 0, dgrad_f32, in.ndims, in.dims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&lts[1], 1, dgrad_f32, wei.ndims, wei.dims,
            dgrad_layout_type_strided, dgrad_property_type_constant);
    size_t n_inputs = 2;
    int64_t shape_values[DGRAD_MAX_NDIMS];
    json_t *shape_input = json_object_get(c, "dst_shape_input");
    if (!shape_input && kind != dgrad_op_conv_transpose)
        shape_input = json_object_get(c, "output_shape");
    if (json_is_array(shape_input)) {
        int64_t n = (int64_t)json_array_size(shape_input);
        for (int64_t i = 0; i < n; i++)
            shape_values[i] = json_integer_value(json_array_get(shape_input, (size_t)i));
        dgrad_logical_tensor_init(&lts[2], 2, dgrad_s64, 1, &n,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        n_inputs = 3;
    } else if (has_bias) {
        dgrad_logical_tensor_init(&lts[2], 2, dgrad_f32, bias.ndims, bias.dims,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        n_inputs = 3;
    }
    /* Output dims unknown: a shape input is then resolved at execution. */
    dgrad_logical_tensor_init(&out_lt, 3, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    /* Buffer large enough for any output the case may legally produce. */
    size_t capacity = (expected.count + 1) * sizeof(float);
    float *out = calloc(expected.count + 1, sizeof(float));
    dgrad_compiled_op_t *compiled = NULL;
    dgrad_status_t st = op ? dgrad_compiled_op_create(&compiled, op, n_inputs,
                                     lts, &out_lt)
                           : dgrad_invalid_arguments;
    const void *bufs[3] = {in.data, wei.data,
            n_inputs == 3 && !has_bias ? (const void *)shape_values : bias.data};
    if (st == dgrad_success)
        st = dgrad_compiled_op_execute_dynamic(compiled, n_inputs, bufs, out,
                capacity, &out_lt);
    if (expect_error) {
        passed = st != dgrad_success && !strcmp(dgrad_status_name(st), expect_error);
        if (!passed)
            cr_log_error("%s %s: expected %s, got %s", file, name, expect_error,
                    dgrad_status_name(st));
        goto done;
    }
    if (st != dgrad_success) {
        cr_log_error("%s %s: %s: %s", file, name, dgrad_status_name(st),
                dgrad_last_error_message());
        goto done;
    }
    for (int i = 0; i < expected.ndims; i++)
        if (out_lt.ndims != expected.ndims || out_lt.dims[i] != expected.dims[i]) {
            cr_log_error("%s %s: output dim %d is %lld, expected %lld", file,
                    name, i, (long long)out_lt.dims[i], (long long)expected.dims[i]);
            goto done;
        }

    /* The canonical problem through the dialect layer, for the reference:
     * its sum of |terms| gives the f32 rounding tolerance, and its own
     * result must match the expected data too. */
    dgrad_resolved_t r;
    size_t n_values = n_inputs == 3 && !has_bias ? (size_t)lts[2].dims[0] : 0;
    st = dgrad_problem_resolve(dgrad_op_get_desc(op), n_inputs, lts, &out_lt,
            n_values ? shape_values : NULL, n_values, &r);
    cr_assert_eq(st, dgrad_success, "%s", dgrad_last_error_message());
    float *ref = malloc(expected.count * sizeof(float));
    double *abs_sum = malloc(expected.count * sizeof(double));
    dgrad_reference_compute(&r.problem, in.data, wei.data,
            has_bias ? bias.data : NULL, ref, abs_sum);
    passed = 1;
    for (size_t i = 0; i < expected.count && passed; i++) {
        double tol = 1e-6 * (1.0 + fabs(expected.data[i])) + 8.0 * 0x1p-24 * abs_sum[i];
        double err = fabs((double)out[i] - expected.data[i]);
        double ref_err = fabs((double)ref[i] - expected.data[i]);
        if (err > tol || ref_err > tol) {
            cr_log_error("%s %s: element %zu: dgrad %.9g, reference %.9g, "
                    "expected %.9g (tolerance %.3g)", file, name, i, out[i],
                    ref[i], expected.data[i], tol);
            passed = 0;
        }
    }
    free(ref);
    free(abs_sum);
done:
    dgrad_compiled_op_destroy(compiled);
    dgrad_op_destroy(op);
    free(out);
    free(in.data);
    free(wei.data);
    free(expected.data);
    if (has_bias) free(bias.data);
    return passed;
}

static int run_file(const char *path, int *n_cases) {
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    cr_assert_not_null(root, "%s:%d:%d: %s", path, err.line, err.column, err.text);
    json_t *cases = json_object_get(root, "cases");
    size_t i;
    json_t *c;
    int failures = 0;
    json_array_foreach(cases, i, c) {
        (*n_cases)++;
        if (!run_case(c, path)) failures++;
    }
    json_decref(root);
    return failures;
}

Test(vectors, every_public_vector_matches) {
    DIR *dir = opendir(DGRAD_VECTORS_DIR);
    cr_assert_not_null(dir, "cannot open %s", DGRAD_VECTORS_DIR);
    struct dirent *e;
    int n_files = 0, n_cases = 0, failures = 0;
    while ((e = readdir(dir))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".json")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", DGRAD_VECTORS_DIR, e->d_name);
        failures += run_file(path, &n_cases);
        n_files++;
    }
    closedir(dir);
    cr_expect_geq(n_files, 3, "expected the three public vector files");
    cr_expect_geq(n_cases, 44, "expected at least 44 cases, found %d", n_cases);
    cr_expect_eq(failures, 0, "%d of %d vector cases failed", failures, n_cases);
}
