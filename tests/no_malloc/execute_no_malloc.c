/*
 * Warm executions of small problems allocate nothing: this program
 * replaces the process's allocation functions (exported with
 * ENABLE_EXPORTS, so libdgrad's and libgomp's calls bind to them), runs
 * each compiled op once to warm it, then counts the allocations of many
 * more executions and fails on any, or on a wrong output. ctest runs it
 * with DGRAD_OWN_LOOP=only (dgrad's own loop, which calls no oneDNN
 * primitive: oneDNN's execute allocates its argument map each call) and
 * two OpenMP threads, where the work is too small to fork for: there even
 * a one-thread OpenMP region made libgomp allocate its team each time.
 *
 * Not built with sanitizers: they replace malloc themselves.
 * Usage: dgrad_test_execute_no_malloc
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad.h"

#include "counting_malloc.h"

/* An ONNX ConvTranspose, 1 image, NCX f32, no padding, unit strides but
 * for the dilation: C channels in and out, spatial X, kernel K, dilation
 * D on every axis, optionally followed by ReLU. */
typedef struct problem {
    const char *name;
    int nsp;
    int64_t c, x, k, d;
    int relu;
} problem_t;

static int64_t power(int64_t v, int n) {
    int64_t r = 1;
    while (n-- > 0) r *= v;
    return r;
}

/* y = sum over taps of x[i] w[ci][co][t], y at i + D t, computed here
 * in double (the expected output). */
static void naive(const problem_t *p, const float *x, const float *w,
        double *y) {
    int64_t y_len = p->x + p->d * (p->k - 1), xs = power(p->x, p->nsp),
            ys = power(y_len, p->nsp), ks = power(p->k, p->nsp);
    memset(y, 0, (size_t)(p->c * ys) * sizeof *y);
    for (int64_t ci = 0; ci < p->c; ci++)
        for (int64_t co = 0; co < p->c; co++)
            for (int64_t i = 0; i < xs; i++)
                for (int64_t t = 0; t < ks; t++) {
                    int64_t at = 0, ri = i, rt = t, scale = 1;
                    for (int a = 0; a < p->nsp; a++) {
                        at += (ri % p->x + p->d * (rt % p->k)) * scale;
                        ri /= p->x;
                        rt /= p->k;
                        scale *= y_len;
                    }
                    y[co * ys + at] += (double)x[ci * xs + i]
                            * (double)w[(ci * p->c + co) * ks + t];
                }
    if (p->relu)
        for (int64_t j = 0; j < p->c * ys; j++) y[j] = y[j] > 0 ? y[j] : 0;
}

/* 0 when @p p runs warm without allocating and computes its output. */
static int check(const problem_t *p) {
    int64_t dims_x[5] = {1, p->c}, dims_w[5] = {p->c, p->c},
            dil[3] = {p->d, p->d, p->d};
    for (int a = 0; a < p->nsp; a++) {
        dims_x[2 + a] = p->x;
        dims_w[2 + a] = p->k;
    }
    int64_t xs = power(p->x, p->nsp), ks = power(p->k, p->nsp),
            ys = power(p->x + p->d * (p->k - 1), p->nsp);
    float *x = malloc((size_t)(p->c * xs) * sizeof *x),
          *w = malloc((size_t)(p->c * p->c * ks) * sizeof *w),
          *y = malloc((size_t)(p->c * ys) * sizeof *y);
    double *want = malloc((size_t)(p->c * ys) * sizeof *want);
    dgrad_op_t *op = NULL;
    dgrad_compiled_op_t *compiled = NULL;
    int failed = 1;
    if (!x || !w || !y || !want) goto done;
    for (int64_t i = 0; i < p->c * xs; i++) x[i] = (float)(i % 7) - 3.0f;
    for (int64_t i = 0; i < p->c * p->c * ks; i++)
        w[i] = (float)(i % 5) * 0.5f - 1.0f;
    naive(p, x, w, want);
    dgrad_logical_tensor_t in[2], out;
    if (dgrad_op_create(&op, 0, dgrad_op_conv_transpose, p->name)
                    != dgrad_success
            || dgrad_op_set_attr_s64s(op, dgrad_op_attr_dilations, dil,
                       (size_t)p->nsp) != dgrad_success
            || (p->relu
                    && dgrad_op_append_post_op(op, "ReLU", 0, NULL, NULL)
                            != dgrad_success)
            || dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 2 + p->nsp,
                       dims_x, dgrad_layout_type_strided,
                       dgrad_property_type_variable) != dgrad_success
            || dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 2 + p->nsp,
                       dims_w, dgrad_layout_type_strided,
                       dgrad_property_type_variable) != dgrad_success
            || dgrad_logical_tensor_init(&out, 2, dgrad_f32,
                       DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided,
                       dgrad_property_type_variable) != dgrad_success
            || dgrad_compiled_op_create(&compiled, op, 2, in, &out)
                    != dgrad_success) {
        fprintf(stderr, "%s: %s\n", p->name, dgrad_last_error_message());
        goto done;
    }
    const void *inputs[] = {x, w};
    const int warm = 3, counted = 200;
    for (int r = 0; r < warm; r++)
        if (dgrad_compiled_op_execute(compiled, 2, inputs, y)
                != dgrad_success) {
            fprintf(stderr, "%s: %s\n", p->name, dgrad_last_error_message());
            goto done;
        }
    size_t before = __atomic_load_n(&allocations, __ATOMIC_RELAXED);
    dgrad_status_t st = dgrad_success;
    for (int r = 0; r < counted && st == dgrad_success; r++)
        st = dgrad_compiled_op_execute(compiled, 2, inputs, y);
    size_t made = __atomic_load_n(&allocations, __ATOMIC_RELAXED) - before;
    int64_t wrong = 0;
    for (int64_t i = 0; i < p->c * ys; i++)
        wrong += fabs((double)y[i] - want[i]) > 1e-4 * (1 + fabs(want[i]));
    printf("%s (%s): %zu allocations in %d executions, %lld of %lld "
           "outputs wrong\n", p->name, dgrad_compiled_op_impl_name(compiled),
            made, counted, (long long)wrong, (long long)(p->c * ys));
    failed = st != dgrad_success || made != 0 || wrong != 0;
done:
    dgrad_compiled_op_destroy(compiled);
    dgrad_op_destroy(op);
    free(x);
    free(w);
    free(y);
    free(want);
    return failed;
}

/* An output that no input position reaches (ONNX 1D: stride 3, kernel 1,
 * pads 1 and 0, output_padding 2: the one computed position is cut off,
 * the two left come from the output padding), with bias and ReLU: each
 * element relu(bias) of its channel, written by the post pass alone. */
static int check_all_border(void) {
    const int64_t dims_x[] = {1, 3, 1}, dims_w[] = {3, 3, 1}, dims_b[] = {3},
                  strides[] = {3}, pads[] = {1, 0}, out_pad[] = {2};
    const float x[3] = {1, 2, 3}, w[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1},
                b[3] = {-1.5f, 0.25f, 2.0f};
    float y[6];
    dgrad_op_t *op = NULL;
    dgrad_compiled_op_t *compiled = NULL;
    dgrad_logical_tensor_t in[3], out;
    int failed = 1;
    if (dgrad_op_create(&op, 0, dgrad_op_conv_transpose, "all border")
                    != dgrad_success
            || dgrad_op_set_attr_s64s(op, dgrad_op_attr_strides, strides, 1)
            || dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads, pads, 2)
            || dgrad_op_set_attr_s64s(op, dgrad_op_attr_output_padding,
                    out_pad, 1)
            || dgrad_op_append_post_op(op, "ReLU", 0, NULL, NULL)
            || dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 3, dims_x,
                    dgrad_layout_type_strided, dgrad_property_type_variable)
            || dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 3, dims_w,
                    dgrad_layout_type_strided, dgrad_property_type_variable)
            || dgrad_logical_tensor_init(&in[2], 2, dgrad_f32, 1, dims_b,
                    dgrad_layout_type_strided, dgrad_property_type_variable)
            || dgrad_logical_tensor_init(&out, 3, dgrad_f32,
                    DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided,
                    dgrad_property_type_variable)
            || dgrad_compiled_op_create(&compiled, op, 3, in, &out)) {
        fprintf(stderr, "all border: %s\n", dgrad_last_error_message());
        goto done;
    }
    if (out.ndims != 3 || out.dims[2] != 2) {
        fprintf(stderr, "all border: output of %lld, not 2\n",
                (long long)out.dims[2]);
        goto done;
    }
    const void *inputs[] = {x, w, b};
    dgrad_status_t st = dgrad_compiled_op_execute(compiled, 3, inputs, y);
    size_t before = __atomic_load_n(&allocations, __ATOMIC_RELAXED);
    for (int r = 0; r < 200 && st == dgrad_success; r++)
        st = dgrad_compiled_op_execute(compiled, 3, inputs, y);
    size_t made = __atomic_load_n(&allocations, __ATOMIC_RELAXED) - before;
    int wrong = 0;
    for (int i = 0; i < 6; i++)
        wrong += y[i] != (b[i / 2] > 0 ? b[i / 2] : 0.0f);
    printf("all border (%s): %zu allocations in 200 executions, %d of 6 "
           "outputs wrong\n", dgrad_compiled_op_impl_name(compiled), made,
            wrong);
    failed = st != dgrad_success || made != 0 || wrong != 0;
done:
    dgrad_compiled_op_destroy(compiled);
    dgrad_op_destroy(op);
    return failed;
}

int main(void) {
    static const problem_t problems[] = {
            {"dilations 2D", 2, 1, 3, 2, 2, 0},
            {"1D, 4 channels", 1, 4, 24, 3, 1, 0},
            {"3D", 3, 2, 4, 3, 1, 0},
            {"2D with ReLU", 2, 3, 5, 3, 2, 1},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof problems / sizeof problems[0]; i++)
        failed |= check(&problems[i]);
    return failed | check_all_border();
}
