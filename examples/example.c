#define _POSIX_C_SOURCE 200809L
/*
 * The specification's ConvolutionBackpropData example through the public
 * API: data 1x20x224x224, weights 20x10x3x3, strides 2, pads 1 ->
 * 1x10x447x447. Checks a sample of output points against a direct sum.
 */
#include <dgrad/dgrad.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                      \
    do {                                                                 \
        dgrad_status_t s_ = (call);                                      \
        if (s_ != dgrad_success) {                                       \
            fprintf(stderr, "%s failed: %s: %s\n", #call,                \
                    dgrad_status_name(s_), dgrad_last_error_message());  \
            return 1;                                                    \
        }                                                                \
    } while (0)

enum { N = 1, CIN = 20, COUT = 10, X = 224, K = 3, S = 2, P = 1 };

/* out[co][y][x] by the definition: taps where in_pos * S + k == out_pos + P. */
static double direct_point(const float *in, const float *w, int co, int oy,
        int ox) {
    double acc = 0;
    for (int ci = 0; ci < CIN; ci++)
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) {
                int ty = oy + P - ky, tx = ox + P - kx;
                if (ty < 0 || tx < 0 || ty % S || tx % S) continue;
                if (ty / S >= X || tx / S >= X) continue;
                acc += (double)in[(ci * X + ty / S) * X + tx / S]
                        * w[((ci * COUT + co) * K + ky) * K + kx];
            }
    return acc;
}

int main(void) {
    const int64_t data_dims[] = {N, CIN, X, X};
    const int64_t wei_dims[] = {CIN, COUT, K, K};
    const int64_t strides[] = {S, S}, pads[] = {P, P};

    dgrad_op_t *op = NULL;
    CHECK(dgrad_op_create(&op, 0, dgrad_op_convolution_backprop_data, NULL));
    CHECK(dgrad_op_set_attr_s64s(op, dgrad_op_attr_strides, strides, 2));
    CHECK(dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_begin, pads, 2));
    CHECK(dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_end, pads, 2));

    dgrad_logical_tensor_t inputs[2], output;
    CHECK(dgrad_logical_tensor_init(&inputs[0], 1, dgrad_f32, 4, data_dims,
            dgrad_layout_type_strided, dgrad_property_type_variable));
    CHECK(dgrad_logical_tensor_init(&inputs[1], 2, dgrad_f32, 4, wei_dims,
            dgrad_layout_type_strided, dgrad_property_type_constant));
    CHECK(dgrad_logical_tensor_init(&output, 3, dgrad_f32,
            DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided,
            dgrad_property_type_variable));

    dgrad_compiled_op_t *compiled = NULL;
    CHECK(dgrad_compiled_op_create(&compiled, op, 2, inputs, &output));
    dgrad_op_destroy(op);

    int64_t out_elems;
    CHECK(dgrad_logical_tensor_get_span(&output, &out_elems));
    float *in = malloc(sizeof(float) * N * CIN * X * X);
    float *w = malloc(sizeof(float) * CIN * COUT * K * K);
    float *out = malloc(sizeof(float) * (size_t)out_elems);
    if (!in || !w || !out) return 1;
    srand(1);
    for (int i = 0; i < N * CIN * X * X; i++) in[i] = rand() % 7 - 3;
    for (int i = 0; i < CIN * COUT * K * K; i++) w[i] = rand() % 7 - 3;

    const void *bufs[] = {in, w};
    struct timespec t0, t1;
    CHECK(dgrad_compiled_op_execute(compiled, 2, bufs, out)); /* warm-up */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK(dgrad_compiled_op_execute(compiled, 2, bufs, out));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    double flops = 2.0 * N * CIN * COUT * K * K * X * X;

    /* Sample output points, corners included. */
    const int64_t Y = output.dims[2];
    double max_err = 0;
    for (int i = 0; i < 200; i++) {
        int co = i % COUT;
        int oy = i < 4 ? (i & 1) * (int)(Y - 1) : rand() % (int)Y;
        int ox = i < 4 ? (i >> 1) * (int)(Y - 1) : rand() % (int)Y;
        double want = direct_point(in, w, co, oy, ox);
        double got = out[(co * Y + oy) * Y + ox];
        max_err = fmax(max_err, fabs(got - want));
    }
    int ok = output.dims[0] == 1 && output.dims[1] == COUT && Y == 447
            && output.dims[3] == 447 && max_err == 0.0;
    printf("ConvolutionBackpropData f32 data 1x20x224x224 weights 20x10x3x3 "
           "s2 p1 -> %lldx%lldx%lldx%lld  impl %s  %.3f ms  %.1f GFLOP/s  "
           "max error %g  %s\n",
            (long long)output.dims[0], (long long)output.dims[1],
            (long long)output.dims[2], (long long)output.dims[3],
            dgrad_compiled_op_impl_name(compiled), ms, flops / ms / 1e6,
            max_err, ok ? "PASS" : "FAIL");
    dgrad_compiled_op_destroy(compiled);
    free(in);
    free(w);
    free(out);
    return ok ? 0 : 1;
}
