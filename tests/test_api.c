/*
 * The public API: handles, errors at compile and execute (status, message,
 * untouched output), the dst_shape input in both modes, caching, threads;
 * results are checked against the reference (tests/tester.c).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad.h"
#include "onednn.h"
#include "reference.h"
#include "tester.h"

#define ASSERT_FAILS(call, status, fragment)                                 \
    do {                                                                     \
        dgrad_status_t s_ = (call);                                          \
        cr_assert_eq(s_, status, "%s returned %s (%s)", #call,               \
                dgrad_status_name(s_), dgrad_last_error_message());          \
        cr_assert(strstr(dgrad_last_error_message(), fragment),              \
                "message '%s' lacks '%s'", dgrad_last_error_message(),       \
                fragment);                                                   \
    } while (0)

/* oneDNN Graph 2D NCX/OIX op: diff_dst 1x4x5x5, weights 4x3x3x3, stride 2,
 * pads 1, output 1x3x9x9, with a dst_shape input. */
typedef struct fixture {
    dgrad_op_t *op;
    dgrad_logical_tensor_t in[3], out;
    float dy[100], w[108], dst[300];
    int64_t shape[4];
} fixture_t;

static void fixture_init(fixture_t *f, int known_output) {
    memset(f, 0, sizeof *f);
    cr_assert_eq(dgrad_op_create(&f->op, 7, dgrad_op_convolution_backward_data, "bwd"), 0);
    const int64_t s[] = {2, 2}, p[] = {1, 1};
    cr_assert_eq(dgrad_op_set_attr_s64s(f->op, dgrad_op_attr_strides, s, 2), 0);
    cr_assert_eq(dgrad_op_set_attr_s64s(f->op, dgrad_op_attr_pads_begin, p, 2), 0);
    cr_assert_eq(dgrad_op_set_attr_s64s(f->op, dgrad_op_attr_pads_end, p, 2), 0);
    cr_assert_eq(dgrad_op_set_attr_by_name(f->op, "data_format", "NCX"), 0);
    cr_assert_eq(dgrad_op_set_attr_by_name(f->op, "weights_format", "OIX"), 0);
    const int64_t dd[] = {1, 4, 5, 5}, wd[] = {4, 3, 3, 3}, od[] = {1, 3, 9, 9}, sd[] = {4};
    dgrad_logical_tensor_init(&f->in[0], 0, dgrad_f32, 4, dd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&f->in[1], 1, dgrad_f32, 4, wd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&f->in[2], 2, dgrad_s64, 1, sd, dgrad_layout_type_strided, dgrad_property_type_variable);
    if (known_output)
        dgrad_logical_tensor_init(&f->out, 3, dgrad_f32, 4, od, dgrad_layout_type_strided, dgrad_property_type_variable);
    else
        dgrad_logical_tensor_init(&f->out, 3, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    for (int i = 0; i < 100; i++) f->dy[i] = (float)(i % 5 - 2);
    for (int i = 0; i < 108; i++) f->w[i] = (float)(i % 3 - 1);
    memcpy(f->shape, od, sizeof od);
}

/* The fixture's output for spatial size y x y (9 or 10), from the
 * reference: oneDNN Graph keeps pads_begin as the crop PB, the extra tail
 * of size 10 is output padding. */
static void fixture_reference(const fixture_t *f, int64_t y, float *ref) {
    dgrad_problem_t p;
    memset(&p, 0, sizeof p);
    p.nsp = 2;
    p.dt = dgrad_f32;
    p.N = 1;
    p.G = 1;
    p.Cin = 4;
    p.Cout = 3;
    for (int i = 0; i < 2; i++) {
        p.X[i] = 5;
        p.K[i] = 3;
        p.S[i] = 2;
        p.D[i] = 1;
        p.PB[i] = 1;
        p.Y[i] = y;
    }
    const int64_t in_s[] = {100, 25, 5, 1}, wei_s[] = {108, 27, 9, 3, 1},
                  out_s[] = {3 * y * y, y * y, y, 1};
    memcpy(p.in_strides, in_s, sizeof in_s);
    memcpy(p.wei_strides, wei_s, sizeof wei_s);
    memcpy(p.out_strides, out_s, sizeof out_s);
    dgrad_reference_compute(&p, f->dy, f->w, NULL, ref, NULL);
}

static int untouched(const float *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        if (u != 0x55555555u) return 0;
    }
    return 1;
}

Test(api, null_pointers_are_rejected_with_a_message) {
    dgrad_op_t *op = NULL;
    ASSERT_FAILS(dgrad_op_create(NULL, 0, dgrad_op_conv_transpose, NULL),
            dgrad_invalid_arguments, "op is NULL");
    cr_assert_eq(dgrad_op_create(&op, 0, dgrad_op_conv_transpose, NULL), 0);
    dgrad_logical_tensor_t lts[2], out;
    ASSERT_FAILS(dgrad_compiled_op_create(NULL, op, 2, lts, &out),
            dgrad_invalid_arguments, "compiled is NULL");
    dgrad_compiled_op_t *c = NULL;
    ASSERT_FAILS(dgrad_compiled_op_create(&c, NULL, 2, lts, &out),
            dgrad_invalid_arguments, "op is NULL");
    ASSERT_FAILS(dgrad_compiled_op_create(&c, op, 2, NULL, &out),
            dgrad_invalid_arguments, "inputs is NULL");
    ASSERT_FAILS(dgrad_op_set_attr_s64s(NULL, dgrad_op_attr_strides, NULL, 0),
            dgrad_invalid_arguments, "op is NULL");
    ASSERT_FAILS(dgrad_logical_tensor_init(NULL, 0, dgrad_f32, 1, NULL,
            dgrad_layout_type_strided, dgrad_property_type_variable),
            dgrad_invalid_arguments, "lt is NULL");
    ASSERT_FAILS(dgrad_compiled_op_execute(NULL, 2, NULL, NULL),
            dgrad_invalid_arguments, "compiled is NULL");
    cr_assert_null(c);
    cr_assert_eq(dgrad_op_destroy(op), 0);
    cr_assert_eq(dgrad_op_destroy(NULL), 0);
    cr_assert_eq(dgrad_compiled_op_destroy(NULL), 0);
}

Test(api, unknown_op_kind_and_names) {
    dgrad_op_t *op = NULL;
    ASSERT_FAILS(dgrad_op_create(&op, 0, (dgrad_op_kind_t)99, NULL),
            dgrad_invalid_arguments, "99");
    cr_assert_null(op);
    dgrad_op_kind_t k;
    cr_assert_eq(dgrad_op_kind_from_name("GroupConvolutionBackpropData", &k), 0);
    cr_assert_eq(k, dgrad_op_group_convolution_backprop_data);
    ASSERT_FAILS(dgrad_op_kind_from_name("Deconvolution", &k),
            dgrad_invalid_arguments, "Deconvolution");
    cr_assert_str_eq(dgrad_op_kind_name(dgrad_op_conv_transpose), "ConvTranspose");
    cr_assert_eq(dgrad_op_kind_from_name("ConvTranspose", &k), 0);
    cr_assert_eq(k, dgrad_op_conv_transpose);
    cr_assert_eq(dgrad_op_kind_from_name("onednn:ConvTranspose", &k), 0);
    cr_assert_eq(k, dgrad_op_onednn_conv_transpose);
    cr_assert_str_eq(dgrad_op_kind_name(dgrad_op_onednn_conv_transpose),
            "onednn:ConvTranspose");
    ASSERT_FAILS(dgrad_op_kind_from_name("Deconvolution", &k),
            dgrad_invalid_arguments, "expected ConvolutionBackwardData, "
            "ConvolutionBackpropData, GroupConvolutionBackpropData, "
            "ConvTranspose or onednn:ConvTranspose");
    cr_assert_str_eq(dgrad_op_kind_name((dgrad_op_kind_t)6), "undef");
    cr_assert_str_eq(dgrad_status_name(dgrad_invalid_shape), "invalid_shape");
}

Test(api, failed_compile_leaves_outputs_untouched) {
    fixture_t f;
    fixture_init(&f, 1);
    f.in[1].data_type = dgrad_bf16; /* mixed types */
    dgrad_logical_tensor_t before = f.out;
    dgrad_compiled_op_t *c = (dgrad_compiled_op_t *)0x1;
    ASSERT_FAILS(dgrad_compiled_op_create(&c, f.op, 3, f.in, &f.out),
            dgrad_invalid_data_type, "bf16");
    cr_assert_eq(c, (dgrad_compiled_op_t *)0x1);
    cr_assert(!memcmp(&before, &f.out, sizeof before));
    dgrad_op_destroy(f.op);
}

Test(api, input_with_layout_any_is_rejected) {
    fixture_t f;
    fixture_init(&f, 1);
    f.in[0].layout_type = dgrad_layout_type_any;
    dgrad_compiled_op_t *c = NULL;
    cr_assert_neq(dgrad_compiled_op_create(&c, f.op, 3, f.in, &f.out), 0);
    cr_assert(strstr(dgrad_last_error_message(), "ConvolutionBackwardData"),
            "%s", dgrad_last_error_message());
    cr_assert_null(c);
    dgrad_op_destroy(f.op);
}

Test(api, dst_shape_input_known_at_compile_is_checked_at_execute) {
    fixture_t f;
    fixture_init(&f, 1);
    dgrad_compiled_op_t *c;
    cr_assert_eq(dgrad_compiled_op_create(&c, f.op, 3, f.in, &f.out), 0, "%s",
            dgrad_last_error_message());
    cr_assert_eq(f.out.dims[2], 9);
    cr_assert_str_neq(dgrad_compiled_op_impl_name(c), "deferred");
    const void *bufs[] = {f.dy, f.w, f.shape};
    cr_assert_eq(dgrad_compiled_op_execute(c, 3, bufs, f.dst), 0, "%s",
            dgrad_last_error_message());
    float want[243];
    fixture_reference(&f, 9, want);
    cr_assert(!memcmp(want, f.dst, sizeof want), "differs from the reference");

    f.shape[3] = 10; /* still a valid shape for the op, but not the compiled one */
    memset(f.dst, 0x55, sizeof f.dst);
    ASSERT_FAILS(dgrad_compiled_op_execute(c, 3, bufs, f.dst),
            dgrad_invalid_shape, "dst_shape input (1,3,9,10) does not match the compiled output shape (1,3,9,9)");
    cr_assert(untouched(f.dst, 300));

    f.shape[3] = 9;
    ASSERT_FAILS(dgrad_compiled_op_execute(c, 2, bufs, f.dst),
            dgrad_invalid_arguments, "2 inputs");
    const void *null_in[] = {f.dy, NULL, f.shape};
    ASSERT_FAILS(dgrad_compiled_op_execute(c, 3, null_in, f.dst),
            dgrad_invalid_arguments, "input 1");
    cr_assert(untouched(f.dst, 300));

    /* A failed call changed nothing: the next one is still right. */
    cr_assert_eq(dgrad_compiled_op_execute(c, 3, bufs, f.dst), 0);
    cr_assert(!memcmp(want, f.dst, sizeof want), "differs from the reference");
    dgrad_compiled_op_destroy(c);
    dgrad_op_destroy(f.op);
}

Test(api, dst_shape_input_unknown_at_compile_is_planned_per_value) {
    fixture_t f;
    fixture_init(&f, 0);
    dgrad_compiled_op_t *c;
    cr_assert_eq(dgrad_compiled_op_create(&c, f.op, 3, f.in, &f.out), 0, "%s",
            dgrad_last_error_message());
    cr_assert_eq(f.out.ndims, 4);
    cr_assert_eq(f.out.dims[1], 3);
    cr_assert_eq(f.out.dims[2], DGRAD_UNKNOWN_DIM);
    cr_assert_str_eq(dgrad_compiled_op_impl_name(c), "deferred");
    const void *bufs[] = {f.dy, f.w, f.shape};
    dgrad_logical_tensor_t got;
    size_t hits = dgrad_plan_cache_hits();
    for (int round = 0; round < 2; round++) {
        for (int64_t y = 9; y <= 10; y++) { /* both valid: 9 + op < stride 2 */
            f.shape[2] = f.shape[3] = y;
            cr_assert_eq(dgrad_compiled_op_execute_dynamic(c, 3, bufs, f.dst,
                    sizeof f.dst, &got), 0, "%s", dgrad_last_error_message());
            cr_assert_eq(got.dims[2], y);
            cr_assert_eq(got.dims[3], y);
            float want[300];
            fixture_reference(&f, y, want);
            cr_assert(!memcmp(want, f.dst, (size_t)(3 * y * y) * sizeof(float)),
                    "y=%lld differs from the reference", (long long)y);
        }
    }
    /* Variants are kept per value: the second round planned nothing. */
    cr_assert_eq(dgrad_plan_cache_hits(), hits);
    /* An impossible value: 12 is two strides beyond the natural size. */
    f.shape[2] = f.shape[3] = 12;
    memset(f.dst, 0x55, sizeof f.dst);
    ASSERT_FAILS(dgrad_compiled_op_execute_dynamic(c, 3, bufs, f.dst,
            sizeof f.dst, &got), dgrad_invalid_shape, "12");
    cr_assert(untouched(f.dst, 300));
    /* Too small a buffer. */
    f.shape[2] = f.shape[3] = 10;
    ASSERT_FAILS(dgrad_compiled_op_execute_dynamic(c, 3, bufs, f.dst,
            100, &got), dgrad_invalid_arguments, "needs 1200 bytes");
    cr_assert(untouched(f.dst, 300));
    dgrad_compiled_op_destroy(c);
    dgrad_op_destroy(f.op);
}

Test(api, compiling_the_same_problem_again_hits_the_plan_cache) {
    fixture_t f;
    fixture_init(&f, 1);
    dgrad_compiled_op_t *a, *b;
    cr_assert_eq(dgrad_compiled_op_create(&a, f.op, 3, f.in, &f.out), 0);
    size_t hits = dgrad_plan_cache_hits(), size = dgrad_plan_cache_size();
    cr_assert_eq(dgrad_compiled_op_create(&b, f.op, 3, f.in, &f.out), 0);
    cr_assert_eq(dgrad_plan_cache_hits(), hits + 1);
    cr_assert_eq(dgrad_plan_cache_size(), size);
    cr_assert_str_eq(dgrad_compiled_op_impl_name(a), dgrad_compiled_op_impl_name(b));
    dgrad_compiled_op_destroy(a);
    dgrad_compiled_op_destroy(b);
    dgrad_op_destroy(f.op);
}

Test(api, specification_examples_compile_for_shape) {
    /* GroupConvolutionBackpropData 1x20x224^n with weights 4x5x2x3^n. */
    for (int nsp = 1; nsp <= 3; nsp++) {
        dgrad_op_t *op;
        cr_assert_eq(dgrad_op_create(&op, 0, dgrad_op_group_convolution_backprop_data, NULL), 0);
        int64_t s[3] = {2, 2, 2}, p[3] = {1, 1, 1}, op_[3] = {0, 0, 0}, d[3] = {1, 1, 1};
        cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_strides, s, (size_t)nsp), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_begin, p, (size_t)nsp), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_end, p, (size_t)nsp), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_output_padding, op_, (size_t)nsp), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_dilations, d, (size_t)nsp), 0);
        int64_t dd[5] = {1, 20, 224, 224, 224}, wd[6] = {4, 5, 2, 3, 3, 3};
        dgrad_logical_tensor_t lts[2], out;
        dgrad_logical_tensor_init(&lts[0], 0, dgrad_f32, 2 + nsp, dd, dgrad_layout_type_strided, dgrad_property_type_variable);
        dgrad_logical_tensor_init(&lts[1], 1, dgrad_f32, 3 + nsp, wd, dgrad_layout_type_strided, dgrad_property_type_constant);
        dgrad_logical_tensor_init(&out, 2, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_any, dgrad_property_type_variable);
        dgrad_compiled_op_t *c;
        cr_assert_eq(dgrad_compiled_op_create(&c, op, 2, lts, &out), 0, "%s", dgrad_last_error_message());
        cr_assert_eq(out.ndims, 2 + nsp);
        cr_assert_eq(out.dims[0], 1);
        cr_assert_eq(out.dims[1], 8);
        for (int i = 0; i < nsp; i++) cr_assert_eq(out.dims[2 + i], 447);
        cr_assert_eq(out.strides[1], 1, "layout any gives channels-last strides");
        dgrad_compiled_op_destroy(c);
        dgrad_op_destroy(op);
    }
}

/* Several threads executing one compiled op on different buffers; each
 * result is checked against the reference in the thread that made it. */
typedef struct thread_arg {
    const tester_case_t *c;
    const void *shape_values; /* NULL without a shape input */
    int64_t Y[3];             /* the output sizes asked for */
    int iterations;
    dgrad_status_t status;
    int passed;
    char why[256];
} thread_arg_t;

static void *thread_main(void *p) {
    thread_arg_t *a = p;
    const tester_case_t *c = a->c;
    size_t bytes = (size_t)tester_case_output_count(c, a->Y)
            * dgrad_data_type_size(c->t.dt);
    void *out = malloc(bytes);
    const void *bufs[] = {c->in, c->wei, a->shape_values};
    a->passed = out != NULL;
    for (int i = 0; i < a->iterations && a->passed; i++) {
        memset(out, i, bytes); /* each result is written afresh */
        dgrad_logical_tensor_t lt = c->output;
        a->status = c->t.shape_mode == tester_shape_input_deferred
                ? dgrad_compiled_op_execute_dynamic(c->compiled, c->n_inputs,
                        bufs, out, bytes, &lt)
                : dgrad_compiled_op_execute(c->compiled, c->n_inputs, bufs,
                        out);
        if (a->status != dgrad_success)
            snprintf(a->why, sizeof a->why, "execute: %s: %s",
                    dgrad_status_name(a->status), dgrad_last_error_message());
        a->passed = a->status == dgrad_success
                && tester_case_check(c, a->Y, &lt, out, a->why,
                        sizeof a->why);
    }
    free(out);
    return NULL;
}

Test(api, threads_executing_one_compiled_op_match_the_reference) {
    /* ONNX ConvTranspose, channels-last data, group 2, asymmetric pads,
     * constant weights (converted by whichever thread comes first), layout
     * any, f32. */
    tester_t t;
    tester_init(&t, dgrad_op_conv_transpose, 2);
    t.N = 2;
    t.G = 2;
    t.Cin = 18;
    t.Cout = 10;
    t.X[0] = 7;
    t.X[1] = 6;
    t.S[0] = t.S[1] = 2;
    t.pb[0] = 1;
    t.pe[1] = 1;
    t.channels_last = 1;
    t.constant_weights = 1;
    t.output_any = 1;
    tester_case_t c;
    char why[256];
    cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
    enum { T = 4 };
    pthread_t th[T];
    thread_arg_t args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg_t){.c = &c, .iterations = 20};
        memcpy(args[i].Y, c.Y, sizeof c.Y);
        cr_assert_eq(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        cr_expect(args[i].passed, "thread %d: %s", i, args[i].why);
    }
    tester_case_destroy(&c);
}

Test(api, threads_planning_deferred_shapes_concurrently) {
    /* oneDNN Graph NCX/OIX with a dst_shape input unknown at compile time:
     * threads ask for two shapes at once, so two variants are planned
     * concurrently. */
    tester_t t;
    tester_init(&t, dgrad_op_convolution_backward_data, 2);
    t.Cin = 4;
    t.S[0] = t.S[1] = 2;
    t.pb[0] = t.pb[1] = t.pe[0] = t.pe[1] = 1;
    t.shape_mode = tester_shape_input_deferred;
    tester_case_t c;
    char why[256];
    cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
    cr_assert_str_eq(dgrad_compiled_op_impl_name(c.compiled), "deferred");
    enum { T = 4 };
    pthread_t th[T];
    thread_arg_t args[T];
    int64_t values[T][8];
    for (int i = 0; i < T; i++) {
        args[i] = (thread_arg_t){.c = &c, .shape_values = values[i],
                .iterations = 10};
        /* 9 and 10: the natural size, and one unit of output padding */
        args[i].Y[0] = args[i].Y[1] = c.Y[0] + i % 2;
        tester_case_shape_values(&c, args[i].Y, values[i]);
        cr_assert_eq(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
    }
    for (int i = 0; i < T; i++) {
        pthread_join(th[i], NULL);
        cr_expect(args[i].passed, "thread %d: %s", i, args[i].why);
    }
    tester_case_destroy(&c);
}

Test(api, sizes_beyond_onednn_limits_are_unimplemented_not_a_crash) {
    /* A 2^32 channel count is a valid shape that crashes oneDNN 2.6's
     * primitive creation; dgrad refuses it first so a compiler can fall
     * back. Compiling for shape only allocates no data. */
    dgrad_op_t *op;
    cr_assert_eq(dgrad_op_create(&op, 0, dgrad_op_conv_transpose, NULL), 0);
    const int64_t dd[] = {1, INT64_C(1) << 32, 1, 1}, wd[] = {INT64_C(1) << 32, 1, 1, 1};
    dgrad_logical_tensor_t in[2], out;
    dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 4, dd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 4, wd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&out, 2, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_compiled_op_t *c = NULL;
    ASSERT_FAILS(dgrad_compiled_op_create(&c, op, 2, in, &out),
            dgrad_unimplemented, "a size (4294967296) exceeds 2^31-1");
    cr_assert_null(c);
    cr_assert_eq(out.ndims, DGRAD_UNKNOWN_NDIMS);
    dgrad_op_destroy(op);
}

Test(api, deferred_ops_plan_unbounded_streams_of_shapes_without_keeping_them) {
    /* OpenVINO output_shape input unknown at compile time, constant
     * weights: 100 distinct shapes, more than a compiled op keeps (those
     * beyond are planned for their execution only); each result matches
     * the reference, in both rounds. From Y = 6 on, total = F - Y is
     * negative: PB = 0 and trailing zeros. */
    tester_t t;
    tester_init(&t, dgrad_op_convolution_backprop_data, 1);
    t.Cin = 2;
    t.X[0] = 3;
    t.shape_mode = tester_shape_input_deferred;
    t.constant_weights = 1;
    tester_case_t c;
    char why[256];
    cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
    float got[3 * 100];
    for (int round = 0; round < 2; round++)
        for (int64_t y = 1; y <= 100; y++) {
            int64_t value = y;
            const void *bufs[] = {c.in, c.wei, &value};
            dgrad_logical_tensor_t lt;
            memset(got, 0x55, sizeof got);
            cr_assert_eq(dgrad_compiled_op_execute_dynamic(c.compiled, 3,
                    bufs, got, sizeof got, &lt), 0, "%s",
                    dgrad_last_error_message());
            cr_assert(tester_case_check(&c, &y, &lt, got, why, sizeof why),
                    "round %d y=%lld: %s", round, (long long)y, why);
            cr_assert(untouched(got + 3 * y, (size_t)(300 - 3 * y)),
                    "y=%lld: written beyond the output", (long long)y);
        }
    tester_case_destroy(&c);
}

/* The caller's name of an op is kept (its first DGRAD_MAX_OP_NAME_LENGTH
 * bytes) and names it in the messages of failing setters, compiles and
 * executions, also after the op itself is destroyed; an op without a name
 * keeps the plain "<kind>: " messages. */
Test(api, failures_name_the_op_the_caller_named) {
    dgrad_op_t *op;
    cr_assert_eq(dgrad_op_create(&op, 3, dgrad_op_conv_transpose, "upsample"), 0);
    ASSERT_FAILS(dgrad_op_set_attr_by_name(op, "groups", "2"),
            dgrad_invalid_arguments,
            "ConvTranspose 'upsample': unknown attribute 'groups'");

    const int64_t xd[] = {1, 1, 2, 2}, wd[] = {1, 1, 3, 3};
    dgrad_logical_tensor_t in[2], out;
    dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 4, xd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[1], 1, dgrad_bf16, 4, wd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&out, 2, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_compiled_op_t *c = NULL;
    ASSERT_FAILS(dgrad_compiled_op_create(&c, op, 2, in, &out),
            dgrad_invalid_data_type,
            "ConvTranspose 'upsample': X data type (f32) and W data type (bf16) differ");
    ASSERT_FAILS(dgrad_compiled_op_create(&c, op, 4, in, &out),
            dgrad_invalid_arguments, "ConvTranspose 'upsample': 4 inputs given");
    cr_assert_null(c);

    in[1].data_type = dgrad_f32;
    cr_assert_eq(dgrad_compiled_op_create(&c, op, 2, in, &out), 0, "%s",
            dgrad_last_error_message());
    cr_assert_str_eq(dgrad_last_error_message(), "");
    dgrad_op_destroy(op); /* the compiled op keeps its own copy */
    float x[4] = {1, 2, 3, 4}, w[9] = {0}, y[16];
    const void *bufs[] = {x, w, x};
    ASSERT_FAILS(dgrad_compiled_op_execute(c, 3, bufs, y),
            dgrad_invalid_arguments,
            "ConvTranspose 'upsample': execute got 3 inputs, the op was compiled with 2");
    ASSERT_FAILS(dgrad_compiled_op_execute_dynamic(c, 2, bufs, y, 8, NULL),
            dgrad_invalid_arguments,
            "ConvTranspose 'upsample': output (1,1,4,4) needs 64 bytes, the buffer has 8");
    cr_assert_eq(dgrad_compiled_op_execute(c, 2, bufs, y), 0, "%s",
            dgrad_last_error_message());
    dgrad_compiled_op_destroy(c);

    /* A long name is cut to DGRAD_MAX_OP_NAME_LENGTH bytes. */
    char long_name[100], kept[DGRAD_MAX_OP_NAME_LENGTH + 40];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    snprintf(kept, sizeof kept, "ConvTranspose '%.*s': unknown attribute",
            DGRAD_MAX_OP_NAME_LENGTH, long_name);
    cr_assert_eq(dgrad_op_create(&op, 4, dgrad_op_conv_transpose, long_name), 0);
    ASSERT_FAILS(dgrad_op_set_attr_by_name(op, "groups", "2"),
            dgrad_invalid_arguments, kept);
    dgrad_op_destroy(op);

    /* No name (NULL or ""): the message starts with the kind alone. */
    const char *unnamed[] = {NULL, ""};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(dgrad_op_create(&op, 5, dgrad_op_conv_transpose, unnamed[i]), 0);
        cr_assert_eq(dgrad_op_set_attr_by_name(op, "groups", "2"),
                dgrad_invalid_arguments);
        cr_assert(!strncmp(dgrad_last_error_message(),
                "ConvTranspose: unknown attribute 'groups'", 41), "%s",
                dgrad_last_error_message());
        dgrad_op_destroy(op);
    }
}

/* A zero dim makes the span 0, but an unknown dim anywhere is still the
 * documented invalid_shape (the span cannot be known). */
Test(api, span_of_a_tensor_with_an_unknown_dim_is_invalid_shape) {
    const int64_t dims[] = {0, DGRAD_UNKNOWN_DIM, 3};
    dgrad_logical_tensor_t lt;
    cr_assert_eq(dgrad_logical_tensor_init(&lt, 9, dgrad_f32, 3, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable), 0);
    int64_t n = -7;
    ASSERT_FAILS(dgrad_logical_tensor_get_span(&lt, &n), dgrad_invalid_shape,
            "tensor 9 dim 1 is unknown");
    cr_assert_eq(n, -7);
    lt.dims[1] = 2;
    lt.strides[0] = 6;
    lt.strides[1] = 3;
    lt.strides[2] = 1;
    cr_assert_eq(dgrad_logical_tensor_get_span(&lt, &n), 0);
    cr_assert_eq(n, 0);
}
