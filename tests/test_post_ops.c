/*
 * Post-op chains (dgrad_op_append_post_op): their descriptions and
 * operands refused with the rule, the reference's algorithms on values
 * worked out by hand, and whole chains through the public API against
 * the reference in every dialect, type and layout.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "assert_err.h"
#include "api_internal.h"
#include "plan/plan_impl.h"
#include "problem.h"
#include "reference.h"
#include "tester.h"

/* --------------------------------------------------------- descriptions */

static dgrad_status_t append(dgrad_op_desc_t *d, const char *kind,
        const char *name, const char *value) {
    const char *n[1] = {name}, *v[1] = {value};
    return dgrad_op_desc_append_post_op(d, kind, name ? 1 : 0, n, v);
}

Test(post_ops_desc, refused_with_the_rule_and_the_op_unchanged) {
    dgrad_op_desc_t d;
    cr_assert_eq(dgrad_op_desc_init(&d, dgrad_op_conv_transpose), 0);
    ASSERT_ERR(append(&d, "Swish", NULL, NULL), dgrad_invalid_arguments,
            "ConvTranspose: post-op 1 'Swish' is not a post-op dgrad fuses "
            "(Abs, Clamp,");
    ASSERT_ERR(append(&d, "Clamp", "min", "0"), dgrad_invalid_arguments,
            "post-op 1 (Clamp): attribute max is required");
    ASSERT_ERR(append(&d, "LeakyReLU", "slope", "0.1"),
            dgrad_invalid_arguments, "post-op 1 (LeakyReLU): unknown "
            "attribute 'slope' (it has: alpha)");
    ASSERT_ERR(append(&d, "Elu", "alpha", "1x"), dgrad_invalid_arguments,
            "post-op 1 (Elu): alpha '1x' is not a finite number");
    ASSERT_ERR(append(&d, "Elu", "alpha", "inf"), dgrad_invalid_arguments,
            "is not a finite number");
    ASSERT_ERR(append(&d, "SoftPlus", "beta", "0"), dgrad_invalid_arguments,
            "post-op 1 (SoftPlus): beta must not be 0");
    ASSERT_ERR(append(&d, "GELU", "mode", "fast"), dgrad_invalid_arguments,
            "mode 'fast' is not one of gelu_erf, gelu_tanh");
    ASSERT_ERR(append(&d, "Add", "auto_broadcast", "numpy2"),
            dgrad_invalid_arguments, "auto_broadcast 'numpy2' is not one of "
            "numpy, none");
    ASSERT_ERR(append(&d, "BiasAdd", "data_format", "NHWC"),
            dgrad_invalid_arguments, "data_format 'NHWC' is not one of NXC, "
            "NCX");
    ASSERT_ERR(append(&d, "ReLU", "alpha", "1"), dgrad_invalid_arguments,
            "(ReLU): unknown attribute 'alpha' (it has: none)");
    cr_assert_eq(d.n_post_ops, 0, "a refused post-op was kept");
    for (int i = 0; i < DGRAD_MAX_POST_OPS; i++)
        cr_assert_eq(append(&d, "ReLU", NULL, NULL), dgrad_success);
    ASSERT_ERR(append(&d, "Tanh", NULL, NULL), dgrad_invalid_arguments,
            "post-op 9 (Tanh): a chain holds at most 8 post-ops");
    cr_assert_eq(d.n_post_ops, DGRAD_MAX_POST_OPS);
}

Test(post_ops_desc, attributes_set_the_canonical_parameters) {
    dgrad_op_desc_t d;
    cr_assert_eq(dgrad_op_desc_init(&d, dgrad_op_onednn_conv_transpose), 0);
    const char *n[2] = {"max", "min"}, *v[2] = {"6", "-1.5"};
    cr_assert_eq(dgrad_op_desc_append_post_op(&d, "Clamp", 2, n, v), 0);
    cr_assert_eq(append(&d, "GELU", "mode", "gelu_tanh"), 0);
    cr_assert_eq(append(&d, "SoftPlus", NULL, NULL), 0);
    cr_assert_eq(append(&d, "HardSwish", NULL, NULL), 0);
    cr_assert_eq(append(&d, "Multiply", "auto_broadcast", "none"), 0);
    const dgrad_post_op_desc_t *p = d.post_ops;
    cr_assert(p[0].alg == dgrad_post_clip && p[0].alpha == -1.5
            && p[0].beta == 6);
    cr_assert_eq(p[1].alg, dgrad_post_gelu_tanh);
    cr_assert(p[2].alg == dgrad_post_soft_relu && p[2].alpha == 1);
    cr_assert(p[3].alpha == 1.0 / 6 && p[3].beta == 0.5);
    cr_assert(p[4].alg == dgrad_post_mul && p[4].has_operand && !p[4].numpy);
    cr_assert_eq(dgrad_op_desc_post_operands(&d), 1);
}

/* Compile-time checks of the operands, through the public API: ONNX
 * X 1x2x3x3, W 2x4x2x2 -> Y 1x4x4x4 with an Add. */
static dgrad_status_t compile_with_operand(const char *kind,
        const char *attr, const char *value, int rank, const int64_t *dims,
        dgrad_data_type_t dt, size_t n_inputs) {
    dgrad_op_t *op = NULL;
    cr_assert_eq(dgrad_op_create(&op, 1, dgrad_op_conv_transpose, "up"), 0);
    const char *n[1] = {attr}, *v[1] = {value};
    cr_assert_eq(dgrad_op_append_post_op(op, "ReLU", 0, NULL, NULL), 0);
    cr_assert_eq(dgrad_op_append_post_op(op, kind, attr ? 1 : 0, n, v), 0);
    const int64_t x[] = {1, 2, 3, 3}, w[] = {2, 4, 2, 2};
    dgrad_logical_tensor_t in[4], out;
    dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 4, x,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 4, w,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[2], 2, dt, rank, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    in[3] = in[2];
    dgrad_logical_tensor_init(&out, 3, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL,
            dgrad_layout_type_any, dgrad_property_type_variable);
    dgrad_compiled_op_t *c = NULL;
    dgrad_status_t st = dgrad_compiled_op_create(&c, op, n_inputs, in, &out);
    cr_assert_eq(c == NULL, st != dgrad_success);
    dgrad_compiled_op_destroy(c);
    dgrad_op_destroy(op);
    return st;
}

Test(post_ops_desc, operands_must_broadcast_to_the_output) {
    const int64_t ok3[] = {4, 1, 4}, ok1[] = {1}, full[] = {1, 4, 4, 4},
                  bad[] = {1, 3, 1, 1}, big[] = {1, 1, 4, 4, 4};
    cr_assert_eq(compile_with_operand("Add", NULL, NULL, 3, ok3, dgrad_f32,
            3), dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_eq(compile_with_operand("Maximum", NULL, NULL, 1, ok1,
            dgrad_bf16, 3), dgrad_success, "%s", dgrad_last_error_message());
    ASSERT_ERR(compile_with_operand("Add", NULL, NULL, 4, bad, dgrad_f32, 3),
            dgrad_invalid_shape, "ConvTranspose 'up': post-op 2 (Add) operand "
            "(input 2) dims (1,3,1,1) do not broadcast to Y dims (1,4,4,4): "
            "counted from the last axis, each must be 1 or equal");
    ASSERT_ERR(compile_with_operand("Add", "auto_broadcast", "none", 3, ok3,
            dgrad_f32, 3), dgrad_invalid_shape,
            "auto_broadcast none asks for equal dims");
    cr_assert_eq(compile_with_operand("Add", "auto_broadcast", "none", 4,
            full, dgrad_f32, 3), dgrad_success, "%s",
            dgrad_last_error_message());
    ASSERT_ERR(compile_with_operand("Add", NULL, NULL, 5, big, dgrad_f32, 3),
            dgrad_invalid_shape, "operand (input 2) rank (5) must be 1 to 4");
    ASSERT_ERR(compile_with_operand("Add", NULL, NULL, 1, ok1, dgrad_s32, 3),
            dgrad_invalid_data_type, "operand (input 2) data type (s32) is "
            "not one of f32, bf16, f16");
    ASSERT_ERR(compile_with_operand("BiasAdd", "data_format", "NCX", 1, ok1,
            dgrad_f32, 3), dgrad_invalid_shape, "post-op 2 (BiasAdd) operand "
            "(input 2) dims (1) must be one value per channel: Y dims are "
            "(1,4,4,4), data_format NCX");
    /* without its operand: the count names the post-op's input */
    ASSERT_ERR(compile_with_operand("Add", NULL, NULL, 1, ok1, dgrad_f32, 2),
            dgrad_invalid_arguments, "2 inputs given, the op takes 2 or 3 and "
            "one per post-op with an operand");
    /* ONNX's optional B and the operand together */
    cr_assert_eq(compile_with_operand("BiasAdd", "data_format", "NCX", 1,
            (const int64_t[]){4}, dgrad_f32, 4), dgrad_success, "%s",
            dgrad_last_error_message());
}

/* ------------------------------------------------------------ reference */

/* A 1x1 transposed convolution with weight 1 passes x through: the chain
 * alone decides the output. */
Test(post_ops_reference, algorithms_on_values_worked_out_by_hand) {
    static const struct {
        int32_t alg;
        double alpha, beta, x, want;
    } k[] = {{dgrad_post_abs, 0, 0, -2, 2}, {dgrad_post_clip, -1, 1, 3, 1},
            {dgrad_post_clip, -1, 1, -3, -1}, {dgrad_post_elu, 2, 0, -1,
                    2 * (0.36787944117144233 - 1)},
            {dgrad_post_exp, 0, 0, 1, 2.718281828459045},
            {dgrad_post_gelu_erf, 0, 0, 1, 0.8413447460685429},
            {dgrad_post_gelu_tanh, 0, 0, 1, 0.8411919906082768},
            {dgrad_post_hardsigmoid, 0.2, 0.5, 1, 0.7},
            {dgrad_post_hardswish, 1.0 / 6, 0.5, 1, 2.0 / 3},
            {dgrad_post_relu, 0.1, 0, -2, -0.2}, {dgrad_post_log, 0, 0, 1, 0},
            {dgrad_post_logistic, 0, 0, 0, 0.5},
            {dgrad_post_mish, 0, 0, 1, 0.8650983882673103},
            {dgrad_post_round, 0, 0, 2.5, 2}, {dgrad_post_round, 0, 0, 3.5, 4},
            {dgrad_post_soft_relu, 2, 0, 0, 0.34657359027997264},
            {dgrad_post_sqrt, 0, 0, 9, 3}, {dgrad_post_square, 0, 0, -3, 9},
            {dgrad_post_tanh, 0, 0, 0.5, 0.46211715726000974}};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        dgrad_problem_t p;
        memset(&p, 0, sizeof p);
        p.nsp = 1;
        p.dt = dgrad_f32;
        p.N = p.G = p.Cin = p.Cout = 1;
        p.X[0] = p.K[0] = p.S[0] = p.D[0] = p.Y[0] = 1;
        p.n_post_ops = 1;
        p.post_ops[0] = (dgrad_post_op_t){k[i].alg, k[i].alpha, k[i].beta,
                dgrad_f32, {0}, {0}};
        int64_t y = 0;
        double got = dgrad_reference_post_ops(&p, NULL, 0, 0, &y, k[i].x);
        cr_assert(fabs(got - k[i].want) < 1e-12, "alg %d at %g: %.17g, want "
                "%.17g", k[i].alg, k[i].x, got, k[i].want);
    }
}

Test(post_ops_reference, binary_operands_broadcast_by_canonical_index) {
    /* out [1, 2, 3]; operand [1, 2, 1] (per channel) then [1, 1, 3] */
    dgrad_problem_t p;
    memset(&p, 0, sizeof p);
    p.nsp = 1;
    p.N = 1;
    p.Cout = 2;
    p.Y[0] = 3;
    p.n_post_ops = 2;
    p.post_ops[0] = (dgrad_post_op_t){dgrad_post_mul, 0, 0, dgrad_f32,
            {1, 2, 1}, {0, 1, 0}};
    p.post_ops[1] = (dgrad_post_op_t){dgrad_post_sub, 0, 0, dgrad_f32,
            {1, 1, 3}, {0, 0, 1}};
    const float per_channel[2] = {10, 100}, per_position[3] = {1, 2, 3};
    const void *ops[2] = {per_channel, per_position};
    int64_t y = 2;
    cr_assert_eq(dgrad_reference_post_ops(&p, ops, 0, 1, &y, 5), 497);
    y = 0;
    cr_assert_eq(dgrad_reference_post_ops(&p, ops, 0, 0, &y, 5), 49);
}

/* Units in the last place of f32 between @p got and the exact @p want
 * (0 where both are the same NaN, infinity or zero). */
static double ulps_off(float got, double want) {
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : 1e9;
    float w = (float)want;
    if (isinf(w) || isinf(got))
        return w == got ? 0 : 1e9;
    if (got == 0 && w == 0) return signbit(got) == signbit(w) ? 0 : 1e9;
    int e;
    frexp(fabs((double)w) > 0x1p-126 ? (double)w : 0x1p-126, &e);
    return fabs((double)got - want) / ldexp(1, e - 24);
}

/* Unary op @p alg with @p a, @p b (alpha, beta) on @p x in double: the
 * reference's definitions (reference.c). */
static double unary_exact(int32_t alg, double a, double b, double x) {
    switch (alg) {
        case dgrad_post_exp: return exp(x);
        case dgrad_post_logistic: return 1 / (1 + exp(-x));
        case dgrad_post_tanh: return tanh(x);
        case dgrad_post_elu: return x > 0 ? x : a * expm1(x);
        case dgrad_post_log: return log(x);
        case dgrad_post_soft_relu:
            return a * x > 0 ? x + log1p(exp(-a * x)) / a
                             : log1p(exp(a * x)) / a;
        case dgrad_post_mish: return x * tanh(x > 0 ? x + log1p(exp(-x))
                                                    : log1p(exp(x)));
        case dgrad_post_hardsigmoid: return fmax(0, fmin(1, a * x + b));
        case dgrad_post_hardswish: return x * fmax(0, fmin(1, a * x + b));
        case dgrad_post_round: return nearbyint(x);
        case dgrad_post_sqrt: return sqrt(x);
        case dgrad_post_gelu_tanh:
            return 0.5 * x * (1 + tanh(0.7978845608028654
                                      * (x + 0.044715 * x * x * x)));
        default: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    }
}

/* The chain's unary row functions (post_chain_row) against libm's
 * double forms, rounded once: the vector forms where the CPU has AVX-512
 * (math_avx512.h and post_pass.c), libm's f32 ones elsewhere,
 * on every 9,973rd f32 of either sign (every exponent, subnormals, an
 * infinity), zeros, infinities, a NaN, and the edges of exp's range, of
 * tanh's and expm1's series and of log's reduction. Within 4 units in
 * the last place (the largest measured: 3.82, Mish below 0; values
 * under 2^-100 within 2^-120); the GELUs, whose cubic and erf
 * argument round first (and whose erf is Numerical Recipes' erfc fit,
 * 1.2e-7 relative, in the vector form), within 1e-6 of
 * 1 + |x|; in rows of every length 1 to 16 (the masked tail) and the
 * whole row. */
Test(post_ops_reference, vector_functions_against_libm) {
    enum { STEP = 9973, MAX_VALUES = 2 * (0x7f800000 / STEP + 1) + 64 };
    float *x = malloc(3 * MAX_VALUES * sizeof *x);
    cr_assert(x);
    float *row = x + MAX_VALUES, *tmp = row + MAX_VALUES;
    int n = 0;
    for (uint32_t u = 0; u <= 0x7f800000u; u += STEP) {
        uint32_t neg = u | 0x80000000u;
        memcpy(&x[n++], &u, sizeof u);
        memcpy(&x[n++], &neg, sizeof neg);
    }
    const float edges[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f,
            88.72f, 88.73f, 88.8f, 89.0f, -87.3f, -100.0f, -103.9f,
            -104.0f, -110.0f, 44.0f, 9.01f, 0.5499999f, 0.55f, -0.55f,
            0.5500001f, 0.3465736f, 1e-8f, 0.4999999f, -0.5f, 1.4142135f,
            1.4142137f, 0.70710677f, 1.0f, 0.99999994f, 2.5f, -2.5f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        x[n++] = edges[i];
    static const struct {
        int32_t alg;
        double a, b;
        int gelu;
    } ops[] = {{dgrad_post_exp, 0, 0, 0}, {dgrad_post_logistic, 0, 0, 0},
            {dgrad_post_tanh, 0, 0, 0}, {dgrad_post_elu, 1, 0, 0},
            {dgrad_post_elu, 0.5, 0, 0}, {dgrad_post_log, 0, 0, 0},
            {dgrad_post_soft_relu, 1, 0, 0}, {dgrad_post_soft_relu, 2, 0, 0},
            {dgrad_post_mish, 0, 0, 0}, {dgrad_post_hardsigmoid, 0.2, 0.5, 0},
            {dgrad_post_hardswish, 1.0 / 6, 0.5, 0},
            {dgrad_post_round, 0, 0, 0}, {dgrad_post_sqrt, 0, 0, 0},
            {dgrad_post_gelu_tanh, 0, 0, 1}, {dgrad_post_gelu_erf, 0, 0, 1}};
    dgrad_problem_t p;
    memset(&p, 0, sizeof p);
    p.nsp = 1;
    p.N = p.Cout = 1;
    p.Y[0] = n;
    p.n_post_ops = 1;
    int64_t idx[3] = {0, 0, 0};
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        p.post_ops[0] = (dgrad_post_op_t){ops[o].alg, ops[o].a, ops[o].b,
                dgrad_f32, {0}, {0}};
        for (int len = 1; len <= 17; len++) {
            int64_t at = len == 17 ? 0 : n - len; /* 17: the whole row */
            int64_t count = len == 17 ? n : len;
            memcpy(row, x + at, (size_t)count * sizeof *row);
            post_chain_row(&p, NULL, 0, idx, count, row, tmp);
            for (int64_t i = 0; i < count; i++) {
                double v = x[at + i];
                /* alpha and beta as the f32 loop has them */
                double want = unary_exact(ops[o].alg, (float)ops[o].a,
                        (float)ops[o].b, v);
                float got = row[i];
                if (ops[o].gelu && isfinite(v)) {
                    cr_assert(fabs(got - want) <= 1e-6 * (1 + fabs(v)),
                            "alg %d at %.9g: %.9g, want %.9g", ops[o].alg,
                            v, got, want);
                    continue;
                }
                /* under 2^-100 the intermediates may be subnormal (mish
                 * far below 0: x times e^x) */
                if (fabs(want) < 0x1p-100 && fabs(got - want) <= 0x1p-120)
                    continue;
                cr_assert(ulps_off(got, want) <= 4,
                        "alg %d (alpha %g) at %.9g: %.9g, want %.9g (%.1f "
                        "ulp)", ops[o].alg, ops[o].a, v, got, want,
                        ulps_off(got, want));
            }
        }
    }
    free(x);
}

/* ------------------------------------------------------------- the API */

#define POST(k) {(k), {{NULL, NULL}, {NULL, NULL}}, 0, 0, 0}

static void expect_pass(tester_t *t) {
    char why[512], desc[768];
    cr_expect(tester_run(t, why, sizeof why), "%s: %s",
            tester_describe(t, desc, sizeof desc), why);
}

/* Every unary op alone, each type, on an ONNX problem with a bias. */
Test(post_ops_api, every_unary_op_in_every_type) {
    static const tester_post_op_t ops[] = {POST("Abs"),
            {"Clamp", {{"min", "-2.5"}, {"max", "4"}}, 0, 0, 0},
            {"Elu", {{"alpha", "0.5"}, {NULL, NULL}}, 0, 0, 0}, POST("Exp"),
            POST("GELU"), {"GELU", {{"mode", "gelu_tanh"}, {NULL, NULL}}, 0, 0, 0},
            {"HardSigmoid", {{"alpha", "0.2"}, {"beta", "0.5"}}, 0, 0, 0},
            POST("HardSwish"),
            {"LeakyReLU", {{"alpha", "0.01"}, {NULL, NULL}}, 0, 0, 0},
            POST("Log"), POST("Mish"), POST("ReLU"), POST("Round"),
            POST("Sigmoid"), POST("SoftPlus"),
            {"SoftPlus", {{"beta", "2"}, {NULL, NULL}}, 0, 0, 0},
            POST("Sqrt"), POST("Square"), POST("Tanh")};
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        for (int d = 0; d < 3; d++) {
            tester_t t;
            tester_init(&t, dgrad_op_conv_transpose, 2);
            t.dt = dts[d];
            t.bias = 1;
            t.S[0] = 2;
            t.n_post = 1;
            t.post[0] = ops[i];
            t.seed = (unsigned)(i * 3 + (size_t)d);
            expect_pass(&t);
        }
}

/* Every binary op with the broadcasts a graph carries (per channel, per
 * position, a scalar, a full tensor), in each dialect and layout. */
Test(post_ops_api, every_binary_op_and_broadcast_in_every_dialect) {
    static const char *const binaries[] = {"Add", "Multiply", "Maximum",
            "Minimum", "Divide", "Subtract", "BiasAdd"};
    static const dgrad_op_kind_t kinds[] = {
            dgrad_op_convolution_backward_data,
            dgrad_op_convolution_backprop_data,
            dgrad_op_group_convolution_backprop_data,
            dgrad_op_conv_transpose, dgrad_op_onednn_conv_transpose};
    /* rank, broadcast bits over the output's dialect axes (NCX: N=0,
     * C=1, spatial 2..; NXC: C last) */
    static const struct {
        int rank;
        unsigned bcast;
    } shapes[] = {{0, 0}, {0, 0x1 | 0xC}, {2, 0x4}, {1, 0}, {1, 0x8},
            {0, 0x1}};
    int j = 0;
    for (size_t b = 0; b < sizeof binaries / sizeof binaries[0]; b++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++, j++) {
            tester_t t;
            tester_init(&t, kinds[k], 2);
            if (kinds[k] == dgrad_op_group_convolution_backprop_data) {
                t.G = 3;
                t.Cin = 6;
                t.Cout = 3;
            }
            t.channels_last = j % 3;
            t.dt = j % 4 == 3 ? dgrad_bf16 : dgrad_f32;
            t.S[1] = 2;
            t.pb[0] = 1;
            t.op[1] = 1;
            t.n_post = 2;
            t.post[0] = (tester_post_op_t)POST("Tanh");
            t.post[1] = (tester_post_op_t)POST(binaries[b]);
            t.post[1].rank = shapes[j % 6].rank;
            t.post[1].broadcast = shapes[j % 6].bcast;
            t.post[1].dt = j % 5 == 1 ? dgrad_bf16 : dgrad_data_type_undef;
            t.seed = 100u + (unsigned)j;
            expect_pass(&t);
        }
}

/* Chains of three with two operands, in 1D to 3D, constant weights and a
 * layout-any output; and an output no term reaches (the border alone,
 * the chain applied to the bias). */
Test(post_ops_api, chains_of_three_and_the_border) {
    for (int nsp = 1; nsp <= 3; nsp++)
        for (int d = 0; d < 3; d++) {
            tester_t t;
            tester_init(&t, nsp == 2 ? dgrad_op_onednn_conv_transpose
                                     : dgrad_op_conv_transpose, nsp);
            t.dt = d == 0 ? dgrad_f32 : d == 1 ? dgrad_bf16 : dgrad_f16;
            t.bias = 1;
            t.channels_last = d % 2;
            t.constant_weights = d == 1;
            t.executions = 2;
            t.output_any = d == 2;
            t.S[0] = 3;
            t.op[0] = 2;
            t.n_post = 3;
            t.post[0] = (tester_post_op_t)POST("Add");
            t.post[0].broadcast = 0x1;
            t.post[1] = (tester_post_op_t){"Clamp", {{"min", "-6"},
                    {"max", "6"}}, 0, 0, 0};
            t.post[2] = (tester_post_op_t)POST("Multiply");
            t.post[2].rank = 1;
            t.seed = (unsigned)(nsp * 10 + d);
            expect_pass(&t);
        }
    tester_t t;
    tester_init_unreached(&t);
    t.n_post = 2;
    t.post[0] = (tester_post_op_t)POST("Sigmoid");
    t.post[1] = (tester_post_op_t)POST("Add");
    expect_pass(&t);
}

/* Two post-ops of one oneDNN algorithm with other parameters: oneDNN
 * 2.6.3's binary primitive gives the second the first's (33 -> 132 for
 * SoftPlus beta 2 as linear, soft_relu, linear); dgrad must not let it
 * (src/plan/onednn_defects.c, eltwise_params_shared). */
Test(post_ops_api, chains_repeating_an_algorithm) {
    static const tester_post_op_t chains[][2] = {
            {{"LeakyReLU", {{"alpha", "0.25"}, {NULL, NULL}}, 0, 0, 0},
                    POST("ReLU")},
            {{"Clamp", {{"min", "-20"}, {"max", "30"}}, 0, 0, 0},
                    {"Clamp", {{"min", "-5"}, {"max", "8"}}, 0, 0, 0}},
            {{"SoftPlus", {{"beta", "2"}, {NULL, NULL}}, 0, 0, 0},
                    {"SoftPlus", {{"beta", "0.5"}, {NULL, NULL}}, 0, 0, 0}},
            {{"HardSigmoid", {{"alpha", "0.2"}, {"beta", "0.5"}}, 0, 0, 0},
                    {"Clamp", {{"min", "0.25"}, {"max", "0.75"}}, 0, 0, 0}}};
    for (size_t i = 0; i < sizeof chains / sizeof chains[0]; i++)
        for (int d = 0; d < 2; d++) {
            tester_t t;
            tester_init(&t, dgrad_op_conv_transpose, 2);
            t.dt = d ? dgrad_bf16 : dgrad_f32;
            t.S[0] = 2;
            t.n_post = 2;
            t.post[0] = chains[i][0];
            t.post[1] = chains[i][1];
            t.seed = 7u + (unsigned)i;
            expect_pass(&t);
        }
}

/* Plans made afterwards by the default policy with these strategy
 * settings (choice.c: 0 never, 1 timed, 2 only). */
/* Strategies as given; a chain a step can carry is carried (no timing
 * against the pass), so that tests know where it rides. */
static void use_strategies(int phase_fold, int own_loop) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.phase_fold = phase_fold;
    policy.own_loop = own_loop;
    policy.chain_pass = 1;
    dgrad_api_set_policy_for_testing(&policy);
}

/* Folded plans carry a unary chain in their forward convolution (after
 * its bias); binary ones take the pass. Every layout, each type. */
/* 8 -> 6 channels, 4x4 kernel, stride 2, pads 1: a problem that has a
 * folded plan (phase_fold.c). */
static void folded_geometry(tester_t *t) {
    t->Cin = 8;
    t->Cout = 6;
    t->S[0] = t->S[1] = 2;
    t->K[0] = t->K[1] = 4;
    t->pb[0] = t->pb[1] = t->pe[0] = t->pe[1] = 1;
}

Test(post_ops_api, folded_plans_carry_unary_chains) {
    use_strategies(2, 0);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int j = 0; j < 6; j++) {
        tester_t t;
        tester_init(&t, j % 2 ? dgrad_op_onednn_conv_transpose
                              : dgrad_op_conv_transpose, 2);
        t.dt = dts[j % 3];
        t.channels_last = j % 3;
        t.bias = 1;
        folded_geometry(&t);
        t.n_post = 2;
        t.post[0] = (tester_post_op_t){"LeakyReLU", {{"alpha", "0.2"},
                {NULL, NULL}}, 0, 0, 0};
        t.post[1] = (tester_post_op_t)POST(j < 4 ? "Tanh" : "Add");
        t.seed = 50u + (unsigned)j;
        expect_pass(&t);
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* A plan whose backward-data convolution writes the output itself (no
 * bias, channels-last, the whole output): the chain takes the pass, in
 * the output's channels-last layout. */
Test(post_ops_api, chains_without_a_bias_on_channels_last) {
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16};
    for (int j = 0; j < 4; j++) {
        tester_t t;
        tester_init(&t, dgrad_op_onednn_conv_transpose, 2);
        t.dt = dts[j % 2];
        t.channels_last = 1;
        t.weights_xio = 1;
        t.Cin = 32;
        t.Cout = 16;
        t.X[0] = t.X[1] = 8;
        t.S[0] = t.S[1] = 2;
        t.K[0] = t.K[1] = 2;
        t.n_post = 2;
        t.post[0] = (tester_post_op_t)POST("ReLU");
        t.post[1] = (tester_post_op_t)POST(j < 2 ? "Sigmoid" : "Multiply");
        t.post[1].rank = 1;
        t.seed = 80u + (unsigned)j;
        expect_pass(&t);
    }
}

/* ------------------------------------------- a leading bias is the bias */

/* ONNX X 1x2x3x3, W 2x4x2x2 -> Y 1x4x4x4 (B when @p own_bias), chain
 * @p first (with operand dims @p dims in type @p dt) then ReLU, resolved:
 * whether the first post-op became the problem's bias. */
static dgrad_resolved_t resolve_chain(int own_bias, const char *first,
        int rank, const int64_t *dims, dgrad_data_type_t dt) {
    dgrad_op_desc_t desc;
    cr_assert_eq(dgrad_op_desc_init(&desc, dgrad_op_conv_transpose), 0);
    cr_assert_eq(append(&desc, first, first[0] == 'B' ? "data_format" : NULL,
            "NCX"), 0, "%s", dgrad_last_error_message());
    cr_assert_eq(append(&desc, "ReLU", NULL, NULL), 0);
    const int64_t x[] = {1, 2, 3, 3}, w[] = {2, 4, 2, 2}, b[] = {4};
    dgrad_logical_tensor_t in[4], out;
    dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 4, x,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 4, w,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[2], 2, dgrad_f32, 1, b,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[2 + own_bias], 3, dt, rank, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&out, 4, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL,
            dgrad_layout_type_any, dgrad_property_type_variable);
    dgrad_resolved_t r;
    cr_assert_eq(dgrad_problem_resolve(&desc, (size_t)(3 + own_bias), in,
            &out, NULL, 0, &r), dgrad_success, "%s",
            dgrad_last_error_message());
    return r;
}

Test(post_ops_resolve, a_leading_per_channel_addition_is_the_bias) {
    const int64_t c4[] = {4}, c411[] = {4, 1, 1}, x44[] = {4, 4};
    dgrad_resolved_t r = resolve_chain(0, "BiasAdd", 1, c4, dgrad_f32);
    cr_expect_eq(r.bias_from_post_op, 1);
    cr_expect_eq(r.problem.has_bias, 1);
    cr_expect_eq(r.problem.bias_stride, 1);
    cr_expect_eq(r.problem.n_post_ops, 1, "ReLU is left");
    cr_expect_eq(r.problem.post_ops[0].alg, dgrad_post_relu);
    r = resolve_chain(0, "Add", 3, c411, dgrad_f32);
    cr_expect_eq(r.bias_from_post_op, 1, "Add of [C, 1, 1]");
    cr_expect_eq(r.problem.n_post_ops, 1);
    /* Not: the op has its own bias; another type; not per channel. */
    r = resolve_chain(1, "BiasAdd", 1, c4, dgrad_f32);
    cr_expect_eq(r.bias_from_post_op, 0);
    cr_expect_eq(r.problem.n_post_ops, 2);
    r = resolve_chain(0, "BiasAdd", 1, c4, dgrad_bf16);
    cr_expect_eq(r.bias_from_post_op, 0, "a bf16 bias in an f32 op");
    cr_expect_eq(r.problem.has_bias, 0);
    r = resolve_chain(0, "Add", 2, x44, dgrad_f32);
    cr_expect_eq(r.bias_from_post_op, 0, "one value per position");
    cr_expect_eq(r.problem.n_post_ops, 2);
}

/* The same end to end, against the reference: BiasAdd or a per-channel
 * Add first, in every dialect and layout, on plain and folded plans. */
Test(post_ops_api, a_leading_per_channel_addition_runs_as_the_bias) {
    static const dgrad_op_kind_t kinds[] = {
            dgrad_op_convolution_backward_data,
            dgrad_op_convolution_backprop_data,
            dgrad_op_conv_transpose, dgrad_op_onednn_conv_transpose};
    for (int fold = 0; fold < 2; fold++) {
        use_strategies(fold ? 2 : 0, 0);
        for (int j = 0; j < 8; j++) {
            tester_t t;
            tester_init(&t, kinds[j % 4], 2);
            t.dt = j % 3 == 2 ? dgrad_bf16 : dgrad_f32;
            t.channels_last = j % 2;
            folded_geometry(&t);
            t.n_post = 2;
            t.post[0] = (tester_post_op_t)POST(j < 4 ? "BiasAdd" : "Add");
            /* Add: one value per channel, [C, 1, 1] or NXC's [C] */
            t.post[0].broadcast = j < 4 ? 0 : t.channels_last ? 0x7 : 0xD;
            t.post[1] = (tester_post_op_t)POST("ReLU");
            t.seed = 300u + (unsigned)(8 * fold + j);
            expect_pass(&t);
        }
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* ------------------------------------------------- dgrad's own loop */

/* Compiles @p t and expects @p carrier to apply its chain, on a plan
 * whose impl contains @p impl. */
static void expect_carrier(const tester_t *t, const char *carrier,
        const char *impl) {
    tester_case_t c;
    char why[512], desc[768];
    cr_assert(tester_case_create(&c, t, why, sizeof why), "%s", why);
    const char *got = dgrad_compiled_op_chain_carrier(c.compiled);
    const char *got_impl = dgrad_compiled_op_impl_name(c.compiled);
    cr_expect_str_eq(got, carrier, "%s: chain on %s (impl %s)",
            tester_describe(t, desc, sizeof desc), got, got_impl);
    cr_expect(strstr(got_impl, impl) != NULL, "%s: impl %s",
            tester_describe(t, desc, sizeof desc), got_impl);
    tester_case_destroy(&c);
}

/* Chain j (0-8) of the own loops' tests: a LeakyReLU, Clamp or Sigmoid
 * first (the first two run in registers), then Add of a full operand
 * (in place), Multiply by one value per channel in bf16, or Subtract one
 * value per position of the last axis (@p per_channel, @p per_position:
 * their broadcast bits in the dialect's axis order), then Tanh or
 * Square; two executions. */
/* The chain steps the own loops' kernels apply in registers. */
static const tester_post_op_t leaky = {"LeakyReLU",
        {{"alpha", "0.2"}, {NULL, NULL}}, 0, 0, 0};
static const tester_post_op_t clamp = {"Clamp",
        {{"min", "-1.5"}, {"max", "2"}}, 0, 0, 0};

static void own_loop_chain(tester_t *t, int j, unsigned per_channel,
        unsigned per_position) {
    t->n_post = 3;
    t->post[0] = j < 3 ? leaky : j < 6 ? clamp : (tester_post_op_t)POST("Sigmoid");
    t->post[1] = (tester_post_op_t)POST(j < 3 ? "Add" : j < 6 ? "Multiply"
                                                             : "Subtract");
    if (j >= 3 && j < 6) {
        t->post[1].broadcast = per_channel;
        t->post[1].dt = dgrad_bf16;
    } else if (j >= 6) {
        t->post[1].broadcast = per_position;
    }
    t->post[2] = (tester_post_op_t)POST(j % 2 ? "Tanh" : "Square");
    t->in_place = j < 3;
    t->executions = 2;
}

/* @p t for case @p j of an own loop's chain test in @p nsp spatial
 * axes: OpenVINO's and ONNX's NCX dialects (@p ncx), else oneDNN Graph's
 * channels-last ones; ConvTranspose (which takes a bias) on odd @p j. */
static void own_loop_dialect(tester_t *t, int j, int ncx, int nsp) {
    if (ncx)
        tester_init(t, j % 2 ? dgrad_op_conv_transpose
                             : dgrad_op_group_convolution_backprop_data,
                nsp);
    else
        tester_init(t, j % 2 ? dgrad_op_onednn_conv_transpose
                             : dgrad_op_convolution_backward_data,
                nsp);
    t->channels_last = !ncx;
}

/* own_loop_chain's chain j on @p t with its operands broadcast as the
 * layout orders the axes (bit d: axis d): per channel, and per position
 * of the last axis. */
static void own_loop_chain_in_layout(tester_t *t, int j) {
    int nsp = t->nsp;
    unsigned spatial = ((1u << nsp) - 1) << 2;
    if (t->channels_last)
        own_loop_chain(t, j, (1u << (nsp + 1)) - 1,
                ((1u << (nsp + 2)) - 1) & ~(1u << nsp));
    else
        own_loop_chain(t, j, 0x1 | spatial,
                0x3 | (spatial & ~(1u << (1 + nsp))));
}

/* Case @p j of an own loop's chain test (@p t set up but for its
 * chain): own_loop_chain_in_layout's chain, checked against the
 * reference with the in-place Add where the chain has one, then carried
 * by the loop (@p impl) itself. */
static void expect_loop_carries(tester_t *t, int j, unsigned seed,
        const char *impl) {
    own_loop_chain_in_layout(t, j);
    t->seed = seed + (unsigned)j;
    expect_pass(t);
    t->in_place = 0;
    expect_carrier(t, "own loop", impl);
}

/* The own loop (direct.c) applies the whole chain to each row it writes,
 * in f32 before the row's one rounding, a leading LeakyReLU or Clamp in
 * registers on the stride-2 path: unary ops, binary operands with every
 * broadcast and in another type, the in-place Add, strides 1 (one
 * phase), 2 (both phases in one pass) and 3 (phases through a buffer),
 * 1D to 3D, each type; checked against the reference. */
Test(post_ops_api, the_own_loop_carries_the_chain) {
    use_strategies(dgrad_plan_policy_default().phase_fold, 2);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int j = 0; j < 9; j++) {
        tester_t t;
        int nsp = 1 + j % 3;
        tester_init(&t, j % 2 ? dgrad_op_conv_transpose
                              : dgrad_op_group_convolution_backprop_data, nsp);
        t.G = 2;
        t.Cin = 4;
        t.Cout = 6;
        t.dt = dts[j % 3];
        for (int i = 0; i < nsp; i++) {
            t.X[i] = i == nsp - 1 ? 21 : 4;
            t.S[i] = i == nsp - 1 ? 1 + j % 3 : 2;
            t.K[i] = 3;
            t.pb[i] = t.pe[i] = 1;
        }
        t.bias = j % 2;
        expect_loop_carries(&t, j, 700u, "direct");
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* The channels-last depthwise loop (direct_dw.c) applies the whole
 * chain to each pixel it writes, along its channels, a leading LeakyReLU
 * or Clamp in registers: unary ops, binary operands full (in place for
 * some), per channel in bf16 and per position, 1D to 3D, each type (16-bit
 * through f32 copies), channel counts of whole and partial vectors;
 * checked against the reference. */
Test(post_ops_api, the_depthwise_channels_last_loop_carries_the_chain) {
    use_strategies(dgrad_plan_policy_default().phase_fold, 2);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    const int64_t channels[] = {20, 37, 64};
    for (int j = 0; j < 9; j++) {
        tester_t t;
        int nsp = 1 + j % 3;
        /* oneDNN Graph's NXC dialects: a full operand, dense in dialect
         * order, has the output's layout and can be it (in place) */
        tester_init(&t, j % 2 ? dgrad_op_onednn_conv_transpose
                              : dgrad_op_convolution_backward_data, nsp);
        t.channels_last = 1;
        t.G = t.Cin = t.Cout = channels[j / 3];
        t.dt = dts[j % 3];
        for (int i = 0; i < nsp; i++) {
            t.X[i] = i == nsp - 1 ? 9 : 3;
            t.S[i] = 1 + (i + j) % 3;
            t.K[i] = 4;
            t.pb[i] = t.pe[i] = 1;
        }
        t.bias = j % 2; /* ConvTranspose only */
        expect_loop_carries(&t, j, 800u, "direct_dw");
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* Case @p j (0-8) of the blocks loop's chain tests: one group, 1 + j % 3
 * spatial axes, f32, bf16 or f16 by j % 3, @p channels[j / 3] output
 * channels, @p cin input channels, a bias on the ConvTranspose cases;
 * oneDNN Graph's channels-last dialects, or (@p ncx) OpenVINO's and
 * ONNX's NCX ones. Geometry is the caller's. */
static void blocks_chain_case(tester_t *t, int j, const int64_t *channels,
        long cin, int ncx) {
    int nsp = 1 + j % 3;
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    if (ncx)
        tester_init(t, j % 2 ? dgrad_op_conv_transpose
                             : dgrad_op_convolution_backprop_data, nsp);
    else
        tester_init(t, j % 2 ? dgrad_op_onednn_conv_transpose
                             : dgrad_op_convolution_backward_data, nsp);
    t->channels_last = !ncx;
    t->G = 1;
    t->Cin = cin;
    t->Cout = channels[j / 3];
    t->dt = dts[j % 3];
    t->bias = j % 2; /* ConvTranspose only */
}

/* The channels-last loop of windows that do not overlap
 * (direct_blocks.c) applies the chain the same way, per output pixel
 * along its channels after the row's columns are stored: K = S (and K <
 * S on the first axis, rows no tap reaches), 1D to 3D, each type,
 * output columns of partial and whole vectors, 16-bit rows of more than
 * one stretch; checked against the reference. */
Test(post_ops_api, the_blocks_channels_last_loop_carries_the_chain) {
    use_strategies(dgrad_plan_policy_default().phase_fold, 2);
    const int64_t channels[] = {5, 20, 32};
    for (int j = 0; j < 9; j++) {
        tester_t t;
        blocks_chain_case(&t, j, channels, 3 + j, 0);
        int nsp = t.nsp;
        for (int i = 0; i < nsp; i++) {
            /* 32 channels, 53 input pixels a row: 16-bit output rows are
             * chained and rounded in stretches of 48 pixels and 5 */
            t.X[i] = i < nsp - 1 ? 3 : j >= 6 ? 53 : 9;
            t.S[i] = 2;
            t.K[i] = i == 0 && nsp > 1 ? 1 : 2;
            t.pb[i] = t.pe[i] = 0;
        }
        /* an output of S times the input where K < S */
        if (nsp > 1) t.op[0] = 1;
        expect_loop_carries(&t, j, 900u, "direct_blocks");
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* Geometry of the overlapping cases below: K = 4 (3 or 4 on the last
 * axis) at stride 2, padding 1, an output padding on the last axis. */
static void overlapping_geometry(tester_t *t, int j) {
    for (int i = 0; i < t->nsp; i++) {
        t->X[i] = i < t->nsp - 1 ? 3 : 11;
        t->S[i] = 2;
        t->K[i] = i == t->nsp - 1 ? 3 + j % 2 : 4;
        t->pb[i] = t->pe[i] = 1;
    }
    t->op[t->nsp - 1] = 1;
}

/* The blocks loop's chain cases of overlapping_geometry, channels-last
 * or (@p ncx) NCX, under the policy that takes the blocks loop wherever
 * it applies (DGRAD_OWN_LOOP=blocks: on NCX the rows loop would take
 * these first). */
static void expect_blocks_overlapping_carry(int ncx, unsigned seed) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    policy.own_loop_kind = DIRECT_BLOCKS_CL;
    policy.chain_pass = 1;
    dgrad_api_set_policy_for_testing(&policy);
    const int64_t channels[] = {5, 21, 32};
    for (int j = 0; j < 9; j++) {
        tester_t t;
        blocks_chain_case(&t, j, channels, 2 + j, ncx);
        overlapping_geometry(&t, j);
        expect_loop_carries(&t, j, seed, "direct_blocks");
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* The same loop where windows overlap and the padding cuts blocks at a
 * row's ends: the chain runs on the pixels of a partial block only,
 * 1D to 3D, each type (16-bit through f32 copies), output columns of
 * partial and whole vectors; checked against the reference. */
Test(post_ops_api, the_blocks_loop_carries_the_chain_where_windows_overlap) {
    expect_blocks_overlapping_carry(0, 1000u);
}

/* The same on NCX: the chain runs on each output row in its
 * channels-last scratch before the row is stored channel by channel. */
Test(post_ops_api, the_blocks_loop_carries_the_chain_on_ncx) {
    expect_blocks_overlapping_carry(1, 1100u);
}

/* @p G groups for blocks_chain_case's @p t: OpenVINO's grouped op where
 * the case took the ungrouped one. */
static void lanes_chain_groups(tester_t *t, long G) {
    if (t->kind == dgrad_op_convolution_backprop_data)
        t->kind = dgrad_op_group_convolution_backprop_data;
    t->G = G;
}

/* The same loop with 4 and 8 groups of few channels, on the widest
 * kernels: on AVX-512 the lanes form (direct_blocks.c), whose kernels
 * apply a leading LeakyReLU or Clamp in registers like the others, the
 * rest of the chain per pixel; input channels in one vector (16) and
 * two (24, 32), output columns of one vector and of two; 1D to 3D,
 * each type; the input permuted as the terms load it (never spread),
 * and spread (always: its chains go past the epilogue, so row by row),
 * and spread on NCX (where only the spread input gives the lanes form);
 * then chains of one LeakyReLU or Clamp, spread (from lists: NXC and
 * NCX) and not. */
Test(post_ops_api, the_blocks_loop_carries_the_chain_in_the_lanes_form) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    policy.own_loop_kind = DIRECT_BLOCKS_CL;
    policy.own_kernels = 1;
    policy.chain_pass = 1;
    const int64_t channels[] = {8, 16, 8};
    for (int mode = 0; mode < 3; mode++) {
        policy.spread_input = mode ? 2 : 1;
        dgrad_api_set_policy_for_testing(&policy);
        for (int j = 0; j < 9; j++) {
            tester_t t;
            blocks_chain_case(&t, j, channels, 16 + 8 * (j % 3), mode == 2);
            lanes_chain_groups(&t, j / 3 == 2 ? 8 : 4);
            overlapping_geometry(&t, j);
            unsigned seed = 1200u + 100u * (unsigned)mode;
            expect_loop_carries(&t, j, seed, "direct_blocks");
        }
    }
    /* a chain the kernels apply whole, spread (from lists) and not */
    for (int j = 0; j < 9; j++) {
        policy.spread_input = j % 2 ? 2 : 1;
        dgrad_api_set_policy_for_testing(&policy);
        tester_t t;
        blocks_chain_case(&t, j, channels, 16 + 8 * (j % 3), j >= 6);
        lanes_chain_groups(&t, 4);
        overlapping_geometry(&t, j);
        t.n_post = 1;
        t.post[0] = j % 3 ? leaky : clamp;
        t.executions = 2;
        t.seed = 1500u + (unsigned)j;
        expect_pass(&t);
        expect_carrier(&t, "own loop", "direct_blocks");
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* oneDNN 2.6.3's gemm convolution with groups on a channels-last output
 * reads a binary operand that varies over positions at the wrong
 * positions (onednn_defects.c, binary_operand_misplaced): folded plans
 * of such problems, a full operand with and without its batch axis and
 * a per-channel one, must match the reference whichever kernel timing
 * picks, and a gemm kernel must leave positional operands to the pass.
 * (On an AMD EPYC Zen 3 with 2 threads timing picks gemm for the full
 * operands: without the rule they were off from the second position.) */
Test(post_ops_api, a_grouped_channels_last_gemm_carries_no_positional_operand) {
    use_strategies(2, 0);
    for (int j = 0; j < 9; j++) {
        tester_t t;
        tester_init(&t, dgrad_op_convolution_backward_data, 1);
        t.G = 2;
        t.Cin = 10;
        t.Cout = 34;
        t.X[0] = 3;
        t.K[0] = 4;
        t.pe[0] = 2;
        t.channels_last = 1;
        t.n_post = 1;
        t.post[0] = (tester_post_op_t)POST("Subtract");
        /* rank 2: [X, C] over every image; 1: [C]; 0: the output's */
        t.post[0].rank = j % 3 == 0 ? 2 : j % 3 == 1 ? 1 : 0;
        t.seed = 900u + (unsigned)j;
        expect_pass(&t);
        tester_case_t c;
        char why[512];
        cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
        const char *impl = dgrad_compiled_op_impl_name(c.compiled);
        if (strstr(impl, "gemm") && t.post[0].rank != 1)
            cr_expect_str_eq(dgrad_compiled_op_chain_carrier(c.compiled),
                    "pass", "impl %s, operand rank %d", impl, t.post[0].rank);
        tester_case_destroy(&c);
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* ------------------------------------- a folded plan writing the output */

/* A folded plan of stride 1 whose one phase is exactly the output
 * (phase_fold.c, fold_writes_output): the forward convolution writes the
 * caller's layout itself, so it carries binary ops too (per channel
 * here: oneDNN 2.6's brgconv refuses a full-tensor operand, which then
 * takes the pass); strides 2 keep their phase copies and a binary chain
 * takes the pass. Against the reference in each layout and type, and
 * with a residual Add in place. */
Test(post_ops_api, a_stride_1_fold_writes_the_output_and_carries_the_chain) {
    use_strategies(2, 0);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int j = 0; j < 12; j++) {
        tester_t t;
        int nsp = 1 + j % 3, stride = j < 6 || j >= 9 ? 1 : 2,
            residual = j >= 9;
        tester_init(&t, j % 2 ? dgrad_op_conv_transpose
                              : dgrad_op_onednn_conv_transpose, nsp);
        t.Cin = 5;
        t.Cout = 4;
        t.dt = dts[j % 3];
        t.channels_last = j % 2 == 0; /* NXC for oneDNN Graph's */
        for (int i = 0; i < nsp; i++) {
            t.X[i] = 6;
            t.K[i] = 3;
            t.S[i] = stride;
            t.pb[i] = t.pe[i] = j % 4 == 1 ? 1 : 0;
        }
        t.bias = j % 2;
        t.n_post = 3;
        t.post[0] = (tester_post_op_t)POST("ReLU");
        t.post[1] = (tester_post_op_t)POST(residual ? "Add" : "Subtract");
        t.post[2] = (tester_post_op_t)POST("Multiply");
        /* one value per channel (bit d of broadcast: axis d in the
         * dialect's order); the residual: a full tensor, in place */
        t.post[2].broadcast = 0x1;
        for (int i = 0; i < nsp; i++)
            t.post[2].broadcast |= 1u << (t.channels_last ? 1 + i : 2 + i);
        t.post[1].broadcast = residual ? 0 : t.post[2].broadcast;
        t.in_place = residual;
        t.executions = 2;
        t.seed = 800u + (unsigned)j;
        expect_pass(&t);
        t.in_place = 0;
        /* which step carries it: in f32 (no oneDNN stages it) and
         * channels-last (oneDNN 3.7 runs a plain-layout fold as gemm,
         * which takes no binary post-op) */
        if (t.dt == dgrad_f32 && t.channels_last && !residual)
            expect_carrier(&t, stride == 1 ? "convolution" : "pass", "fold:");
    }
    /* Pads past the window (ONNX pads 3, kernel 3): the convolution
     * computes a position before the output's, which a phase copy then
     * leaves out; it still carries a unary chain. */
    tester_t t;
    tester_init(&t, dgrad_op_conv_transpose, 1);
    t.X[0] = 9;
    t.pb[0] = t.pe[0] = 3;
    t.bias = 1;
    t.n_post = 1;
    t.post[0] = (tester_post_op_t)POST("Tanh");
    expect_pass(&t);
    expect_carrier(&t, "convolution", "fold:");
    dgrad_api_set_policy_for_testing(NULL);
}

/* The other side of the timed choice between carrying a chain and
 * passing it (timing.c, try_chain_passed): with the pass forced, plans
 * whose forward convolution or bias add would carry the chain run it as
 * a pass, and match the reference (unary and binary chains, in place
 * too, each type); with carrying forced, the same plans carry it. */
Test(post_ops_api, a_chain_a_step_could_carry_runs_as_a_pass_when_faster) {
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int j = 0; j < 8; j++) {
        tester_t t;
        int fold = j < 4, nsp = 1 + j % 2;
        /* oneDNN Graph's, NXC: the bias add writes the user's layout */
        tester_init(&t, dgrad_op_onednn_conv_transpose, nsp);
        t.Cin = 5;
        t.Cout = 4;
        t.dt = dts[j % 3];
        t.channels_last = 1;
        for (int i = 0; i < nsp; i++) {
            t.X[i] = 6;
            t.K[i] = 3;
            t.S[i] = fold ? 1 : 2;
        }
        t.bias = 1;
        t.n_post = 2;
        t.post[0] = (tester_post_op_t)POST("ReLU");
        t.post[1] = (tester_post_op_t)POST(j % 4 == 3 ? "Add" : "Tanh");
        t.in_place = j % 4 == 3;
        t.executions = 2;
        t.seed = 1300u + (unsigned)j;
        for (int pass = 1; pass <= 2; pass++) {
            dgrad_plan_policy_t policy = dgrad_plan_policy_default();
            /* folded plans; else ranked backward data with its bias add */
            policy.phase_fold = fold ? 2 : 0;
            policy.own_loop = 0;
            policy.layout_search = fold;
            policy.chain_pass = pass;
            dgrad_api_set_policy_for_testing(&policy);
            expect_pass(&t);
            t.in_place = 0;
            /* oneDNN 2.6's brgconv takes no full operand: the Add
             * then takes the pass either way */
            if (t.dt == dgrad_f32 && (pass == 2 || j % 4 != 3))
                expect_carrier(&t, pass == 2 ? "pass"
                                : fold ? "convolution" : "bias add",
                        fold ? "fold:" : "");
            t.in_place = j % 4 == 3;
        }
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* Case @p j of an epilogue-chain test of own loop @p loop (its impl
 * name's part): one LeakyReLU or Clamp, cases 0-5, which the loop
 * carries where the CPU runs it (@p cpu), or that and a Tanh, case 6,
 * which it does not (another plan runs it); checked against the
 * reference either way. */
static void expect_epilogue_chain(tester_t *t, int j, unsigned seed,
        const char *loop, int cpu) {
    t->n_post = 1;
    t->post[0] = j % 2 ? leaky : clamp;
    if (j == 6) {
        t->n_post = 2;
        t->post[1] = (tester_post_op_t)POST("Tanh");
    }
    t->executions = 2;
    t->seed = seed + (unsigned)j;
    expect_pass(t);
    tester_case_t c;
    char why[512];
    cr_assert(tester_case_create(&c, t, why, sizeof why), "%s", why);
    int ours = strstr(dgrad_compiled_op_impl_name(c.compiled), loop) != NULL;
    tester_case_destroy(&c);
    cr_assert_eq(ours, j < 6 && cpu, "%s, case %d", loop, j);
    if (ours) expect_carrier(t, "own loop", loop);
}

/* The row vectors loop (direct_row_vectors.c) carries a chain its
 * kernels apply whole (one LeakyReLU or Clamp) in registers before each
 * store: 1D to 3D, each type, channels-last and NCX (the vectors
 * scattered), with and without a bias, stride 2 with padding (lanes
 * no tap reaches); checked against the reference. A chain past that is
 * not its to carry: another plan runs the problem (the policy asks for
 * this loop, which does not apply). */
Test(post_ops_api, the_row_vectors_loop_carries_an_epilogue_chain) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    policy.own_loop_kind = DIRECT_ROW_VECTORS;
    policy.chain_pass = 1;
    dgrad_api_set_policy_for_testing(&policy);
    const int64_t channels[] = {2, 12};
    for (int j = 0; j < 7; j++) {
        tester_t t;
        blocks_chain_case(&t, j % 6, channels, 1 + j % 3, j % 2);
        for (int i = 0; i < t.nsp; i++) {
            t.X[i] = 2;
            t.S[i] = 2;
            t.K[i] = 3;
            t.pb[i] = t.pe[i] = 1;
        }
        expect_epilogue_chain(&t, j, 2100u, "direct_row_vectors",
                cpu_has_avx512f() || cpu_has_avx2_fma());
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* The phase pair loop (direct_phase_pair.c) carries a chain its kernels
 * apply whole (one LeakyReLU or Clamp) in registers before each store:
 * 1D NCX of stride 2, masknet's taps (k7) on 2 rows of steps, each type,
 * with and without a bias; checked against the reference. A chain past
 * that is not its to carry: another plan runs the problem. */
Test(post_ops_api, the_phase_pair_loop_carries_an_epilogue_chain) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    policy.own_loop_kind = DIRECT_PHASE_PAIR;
    policy.chain_pass = 1;
    dgrad_api_set_policy_for_testing(&policy);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    int cpu = cpu_has_avx512f() && cpu_has_avx512bw() && cpu_has_avx512vl();
    for (int j = 0; j < 7; j++) {
        tester_t t;
        tester_init(&t, j % 2 ? dgrad_op_conv_transpose
                              : dgrad_op_convolution_backprop_data, 1);
        t.channels_last = 0;
        t.G = 1;
        t.Cin = 5 + j;
        t.Cout = 1 + j % 4;
        t.dt = dts[j % 3];
        t.bias = j % 2; /* ConvTranspose only */
        t.X[0] = 70;
        t.S[0] = 2;
        t.K[0] = 7;
        t.pb[0] = t.pe[0] = j % 3;
        expect_epilogue_chain(&t, j, 2200u, "direct_phase_pair", cpu);
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* The gemm rows loop (direct_gemm_rows.c) applies the whole chain to
 * each output row as it writes it, in f32 before a 16-bit output's one
 * rounding: on NCX in place in the output, on channels-last in its
 * scratch before the row is stored a channel stride apart. own_loop_chain's
 * chains (unary ops, the in-place Add, per-channel and per-position
 * operands), 1D and 2D, each type, one group of 16 input channels or two,
 * stride 2 and 3, with and without a bias, both layouts; checked against
 * the reference, then the loop itself carrying the chain. */
Test(post_ops_api, the_gemm_rows_loop_carries_the_chain) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    policy.own_loop_kind = DIRECT_GEMM_ROWS;
    dgrad_api_set_policy_for_testing(&policy);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int ncx = 0; ncx <= 1; ncx++)
        for (int j = 0; j < 9; j++) {
            tester_t t;
            int nsp = 1 + j % 2;
            own_loop_dialect(&t, j, ncx, nsp);
            t.G = ncx && j % 2 == 0 ? 2 : 1;
            t.Cin = t.G == 1 ? 16 + j % 3 : 32;
            t.Cout = (1 + j % 3) * t.G;
            t.dt = dts[j % 3];
            for (int i = 0; i < nsp; i++) {
                t.X[i] = i == nsp - 1 ? 13 : 4;
                t.S[i] = i == nsp - 1 ? 2 + j % 3 / 2 : 2;
                t.K[i] = i == nsp - 1 ? 5 : 3;
                t.pb[i] = t.pe[i] = 1;
            }
            t.bias = j % 2; /* ConvTranspose only */
            expect_loop_carries(&t, j, ncx ? 2400u : 2500u, "gemm_rows");
        }
    dgrad_api_set_policy_for_testing(NULL);
}

/* The other side of the timed choice between an own loop carrying the
 * chain and a pass after the bare loop (challenge.c, own_chain_passed):
 * with the pass forced, each loop that would carry the chain (rows,
 * channels-last depthwise, blocks, gemm rows) leaves it to a pass after
 * it, and the output matches the reference (own_loop_chain's chains:
 * unary ops, the in-place Add, per-channel and per-position operands;
 * 1D to 3D, each type, both layouts); with carrying forced, the same
 * plans carry it. */
Test(post_ops_api, an_own_loop_leaves_its_chain_to_a_pass_when_faster) {
    static const struct {
        int kind, ncx, nsp;
        long G, Cin, Cout, X, S, K, pad;
        const char *impl;
    } loops[] = {
            {DIRECT_ROWS, 1, 2, 2, 4, 6, 21, 2, 3, 1, "dgrad:direct"},
            {DIRECT_ROWS, 1, 3, 1, 3, 2, 9, 3, 3, 1, "dgrad:direct"},
            {DIRECT_DEPTHWISE_CL, 0, 2, 20, 20, 20, 9, 2, 4, 1,
                    "direct_dw"},
            {DIRECT_BLOCKS_CL, 0, 2, 1, 7, 20, 9, 2, 2, 0, "direct_blocks"},
            {DIRECT_BLOCKS_CL, 0, 1, 1, 5, 32, 53, 2, 2, 0,
                    "direct_blocks"},
            {DIRECT_GEMM_ROWS, 1, 2, 2, 32, 4, 13, 2, 5, 1, "gemm_rows"},
            {DIRECT_GEMM_ROWS, 0, 1, 1, 17, 3, 13, 3, 5, 1, "gemm_rows"},
    };
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (size_t l = 0; l < sizeof loops / sizeof loops[0]; l++)
        for (int j = 0; j < 9; j += 4) {
            tester_t t;
            int nsp = loops[l].nsp;
            own_loop_dialect(&t, j, loops[l].ncx, nsp);
            t.G = loops[l].G;
            t.Cin = loops[l].Cin;
            t.Cout = loops[l].Cout;
            t.dt = dts[(l + (size_t)j) % 3];
            for (int i = 0; i < nsp; i++) {
                t.X[i] = i == nsp - 1 ? loops[l].X : 4;
                t.S[i] = loops[l].S;
                t.K[i] = loops[l].K;
                t.pb[i] = t.pe[i] = loops[l].pad;
            }
            t.bias = j % 2; /* ConvTranspose only */
            own_loop_chain_in_layout(&t, j);
            t.seed = 2600u + 10u * (unsigned)l + (unsigned)j;
            int in_place = t.in_place;
            for (int pass = 2; pass >= 1; pass--) {
                dgrad_plan_policy_t policy = dgrad_plan_policy_default();
                policy.own_loop = 2;
                policy.own_loop_kind = loops[l].kind;
                policy.chain_pass = pass;
                dgrad_api_set_policy_for_testing(&policy);
                t.in_place = in_place;
                expect_pass(&t);
                t.in_place = 0;
                tester_case_t c;
                char why[512], desc[768];
                cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s",
                        why);
                const char *carrier =
                        dgrad_compiled_op_chain_carrier(c.compiled);
                const char *impl = dgrad_compiled_op_impl_name(c.compiled);
                tester_describe(&t, desc, sizeof desc);
                cr_expect(strstr(impl, loops[l].impl) != NULL, "%s: impl %s",
                        desc, impl);
                if (pass == 1)
                    cr_expect_str_eq(carrier, "own loop", "%s: chain on %s",
                            desc, carrier);
                else
                    cr_expect(!strcmp(carrier, "pass")
                                    || !strcmp(carrier, "own pass"),
                            "%s: chain on %s, not a pass", desc, carrier);
                tester_case_destroy(&c);
            }
        }
    dgrad_api_set_policy_for_testing(NULL);
}

/* Its AMX form (direct_phase_pair_amx.c) likewise, bf16 only: 1 to 4
 * output channels, with and without a bias, on a CPU with AMX. */
Test(post_ops_api, the_phase_pair_amx_loop_carries_an_epilogue_chain) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    policy.own_loop_kind = DIRECT_PHASE_PAIR_AMX;
    policy.chain_pass = 1;
    dgrad_api_set_policy_for_testing(&policy);
    for (int j = 0; j < 5; j++) {
        tester_t t;
        tester_init(&t, j % 2 ? dgrad_op_conv_transpose
                              : dgrad_op_convolution_backprop_data, 1);
        t.channels_last = 0;
        t.G = 1;
        t.Cin = 5 + 9 * j;
        t.Cout = 1 + j % 4;
        t.dt = dgrad_bf16;
        t.bias = j % 2; /* ConvTranspose only */
        t.X[0] = 70;
        t.S[0] = 2;
        t.K[0] = 7;
        t.pb[0] = t.pe[0] = j % 3;
        expect_epilogue_chain(&t, j, 2300u, "direct_phase_pair_amx",
                cpu_has_amx_bf16());
    }
    dgrad_api_set_policy_for_testing(NULL);
}

/* The projection (projection.c) writes the output with its bias in one
 * matmul and takes no chain: the chain runs as a pass after it (oneDNN's
 * binary primitive or dgrad's loop), an
 * operand per channel, a Clamp and a full operand (in place on every
 * third case), in 1D to 3D, each type, NCX with IOX weights and
 * channels-last with XIO, variable and constant weights; checked
 * against the reference. */
Test(post_ops_api, the_projection_runs_its_chain_as_a_pass) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.projection = 2;
    dgrad_api_set_policy_for_testing(&policy);
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int j = 0; j < 6; j++) {
        tester_t t;
        int graph = j % 2;
        tester_init(&t, graph ? dgrad_op_convolution_backward_data
                              : dgrad_op_conv_transpose, 1 + j % 3);
        t.channels_last = graph;
        t.weights_xio = graph;
        t.N = 2;
        t.Cin = 5;
        t.Cout = 3 + j;
        t.dt = dts[j % 3];
        t.bias = !graph;
        t.constant_weights = j >= 3;
        t.executions = 2;
        for (int i = 0; i < t.nsp; i++) {
            t.X[i] = 1;
            t.K[i] = 2 + (i + j) % 3;
            t.S[i] = 1 + j % 2;
        }
        t.n_post = 3;
        t.post[0] = (tester_post_op_t)POST("Add");
        t.post[0].broadcast = 0x1;
        t.post[1] = (tester_post_op_t){"Clamp", {{"min", "-6"},
                {"max", "6"}}, 0, 0, 0};
        t.post[2] = (tester_post_op_t)POST("Add");
        t.in_place = j % 3 == 2;
        t.seed = 2300u + (unsigned)j;
        expect_pass(&t);
        tester_case_t c;
        char why[512];
        cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
        const char *carrier = dgrad_compiled_op_chain_carrier(c.compiled);
        cr_expect(!strncmp(dgrad_compiled_op_impl_name(c.compiled),
                          "matmul:", 7), "case %d: %s", j,
                dgrad_compiled_op_impl_name(c.compiled));
        /* oneDNN's binary primitive, or dgrad's loop where oneDNN has
         * none for the chain */
        cr_expect(!strcmp(carrier, "pass") || !strcmp(carrier, "own pass"),
                "case %d: chain on %s", j, carrier);
        tester_case_destroy(&c);
    }
    dgrad_api_set_policy_for_testing(NULL);
}
