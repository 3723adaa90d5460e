/*
 * The public API: handles, errors at compile and execute (status, message,
 * untouched output), the dst_shape input in both modes, caching, threads.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad.h"
#include "onednn.h"
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
    float good[300];
    memcpy(good, f.dst, sizeof good);

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

    /* The direct result against the reference through the tester's path. */
    cr_assert_eq(dgrad_compiled_op_execute(c, 3, bufs, f.dst), 0);
    cr_assert(!memcmp(good, f.dst, 243 * sizeof(float)));
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

/* Several threads executing one compiled op on different buffers. */
typedef struct thread_arg {
    const dgrad_compiled_op_t *c;
    const void *in, *w;
    float *out;
    int iterations;
    dgrad_status_t status;
} thread_arg_t;

static void *thread_main(void *p) {
    thread_arg_t *a = p;
    const void *bufs[] = {a->in, a->w};
    for (int i = 0; i < a->iterations && a->status == dgrad_success; i++)
        a->status = dgrad_compiled_op_execute(a->c, 2, bufs, a->out);
    return NULL;
}

Test(api, threads_executing_one_compiled_op_agree_with_one_thread) {
    /* ONNX ConvTranspose, channels-last data, constant weights, f32. */
    dgrad_op_t *op;
    cr_assert_eq(dgrad_op_create(&op, 0, dgrad_op_conv_transpose, NULL), 0);
    cr_assert_eq(dgrad_op_set_attr_by_name(op, "strides", "[2, 2]"), 0);
    cr_assert_eq(dgrad_op_set_attr_by_name(op, "pads", "1,0,0,1"), 0);
    cr_assert_eq(dgrad_op_set_attr_by_name(op, "group", "2"), 0);
    const int64_t dd[] = {2, 18, 7, 6}, ds[] = {18 * 42, 1, 6 * 18, 18}, wd[] = {18, 5, 3, 3};
    dgrad_logical_tensor_t lts[2], out;
    dgrad_logical_tensor_init_with_strides(&lts[0], 0, dgrad_f32, 4, dd, ds, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&lts[1], 1, dgrad_f32, 4, wd, dgrad_layout_type_strided, dgrad_property_type_constant);
    dgrad_logical_tensor_init(&out, 2, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_any, dgrad_property_type_variable);
    dgrad_compiled_op_t *c;
    cr_assert_eq(dgrad_compiled_op_create(&c, op, 2, lts, &out), 0, "%s", dgrad_last_error_message());
    int64_t span;
    cr_assert_eq(dgrad_logical_tensor_get_span(&out, &span), 0);
    enum { T = 4 };
    size_t nin = 2 * 18 * 42, nw = 18 * 5 * 9;
    float *in = malloc(nin * 4), *w = malloc(nw * 4), *single = malloc((size_t)span * 4);
    for (size_t i = 0; i < nin; i++) in[i] = (float)((i * 7) % 11) - 5.0f;
    for (size_t i = 0; i < nw; i++) w[i] = (float)((i * 5) % 7) - 3.0f;
    const void *bufs[] = {in, w};
    cr_assert_eq(dgrad_compiled_op_execute(c, 2, bufs, single), 0);
    pthread_t th[T];
    thread_arg_t args[T];
    for (int t = 0; t < T; t++) {
        args[t] = (thread_arg_t){c, in, w, malloc((size_t)span * 4), 20, dgrad_success};
        cr_assert_eq(pthread_create(&th[t], NULL, thread_main, &args[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        cr_expect_eq(args[t].status, dgrad_success);
        cr_expect(!memcmp(args[t].out, single, (size_t)span * 4), "thread %d differs", t);
        free(args[t].out);
    }
    free(in);
    free(w);
    free(single);
    dgrad_compiled_op_destroy(c);
    dgrad_op_destroy(op);
}

typedef struct deferred_arg {
    const dgrad_compiled_op_t *c;
    const fixture_t *f;
    int64_t y;
    float out[300];
    dgrad_status_t status;
} deferred_arg_t;

static void *deferred_main(void *p) {
    deferred_arg_t *a = p;
    int64_t shape[4] = {1, 3, a->y, a->y};
    const void *bufs[] = {a->f->dy, a->f->w, shape};
    for (int i = 0; i < 10 && a->status == dgrad_success; i++)
        a->status = dgrad_compiled_op_execute_dynamic(a->c, 3, bufs, a->out,
                sizeof a->out, NULL);
    return NULL;
}

Test(api, threads_planning_deferred_shapes_concurrently) {
    fixture_t f;
    fixture_init(&f, 0);
    dgrad_compiled_op_t *c, *solo;
    cr_assert_eq(dgrad_compiled_op_create(&c, f.op, 3, f.in, &f.out), 0);
    cr_assert_eq(dgrad_compiled_op_create(&solo, f.op, 3, f.in, &f.out), 0);
    float want[2][300];
    for (int k = 0; k < 2; k++) {
        int64_t shape[4] = {1, 3, 9 + k, 9 + k};
        const void *bufs[] = {f.dy, f.w, shape};
        cr_assert_eq(dgrad_compiled_op_execute_dynamic(solo, 3, bufs,
                want[k], sizeof want[k], NULL), 0);
    }
    enum { T = 4 };
    pthread_t th[T];
    deferred_arg_t *args = calloc(T, sizeof *args);
    for (int t = 0; t < T; t++) {
        args[t].c = c;
        args[t].f = &f;
        args[t].y = 9 + t % 2;
        cr_assert_eq(pthread_create(&th[t], NULL, deferred_main, &args[t]), 0);
    }
    for (int t = 0; t < T; t++) {
        pthread_join(th[t], NULL);
        size_t n = (size_t)(3 * args[t].y * args[t].y);
        cr_expect_eq(args[t].status, dgrad_success);
        cr_expect(!memcmp(args[t].out, want[t % 2], n * 4), "thread %d differs", t);
    }
    free(args);
    dgrad_compiled_op_destroy(c);
    dgrad_compiled_op_destroy(solo);
    dgrad_op_destroy(f.op);
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
    /* OpenVINO output_shape input unknown at compile time: 100 distinct
     * shapes, more than a compiled op keeps; each result equals the op
     * compiled for that shape. */
    dgrad_op_t *op;
    cr_assert_eq(dgrad_op_create(&op, 0, dgrad_op_convolution_backprop_data, NULL), 0);
    const int64_t dd[] = {1, 2, 3}, wd[] = {2, 3, 3}, sd[] = {1};
    dgrad_logical_tensor_t in[3], out;
    dgrad_logical_tensor_init(&in[0], 0, dgrad_f32, 3, dd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&in[1], 1, dgrad_f32, 3, wd, dgrad_layout_type_strided, dgrad_property_type_constant);
    dgrad_logical_tensor_init(&in[2], 2, dgrad_s64, 1, sd, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&out, 3, dgrad_f32, DGRAD_UNKNOWN_NDIMS, NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_compiled_op_t *c;
    cr_assert_eq(dgrad_compiled_op_create(&c, op, 3, in, &out), 0, "%s", dgrad_last_error_message());
    float x[6] = {1, -2, 3, 2, 0, -1}, w[18], got[3 * 100], want[3 * 100];
    for (int i = 0; i < 18; i++) w[i] = (float)(i % 5 - 2);
    for (int round = 0; round < 2; round++)
        for (int64_t y = 1; y <= 100; y++) {
            const void *bufs[] = {x, w, &y};
            cr_assert_eq(dgrad_compiled_op_execute_dynamic(c, 3, bufs, got,
                    sizeof got, NULL), 0, "%s", dgrad_last_error_message());
            const int64_t od[] = {1, 3, y};
            dgrad_logical_tensor_t known;
            dgrad_logical_tensor_init(&known, 3, dgrad_f32, 3, od, dgrad_layout_type_strided, dgrad_property_type_variable);
            dgrad_compiled_op_t *k;
            cr_assert_eq(dgrad_compiled_op_create(&k, op, 3, in, &known), 0);
            cr_assert_eq(dgrad_compiled_op_execute(k, 3, bufs, want), 0);
            cr_assert(!memcmp(got, want, (size_t)(3 * y) * sizeof(float)), "y=%lld", (long long)y);
            dgrad_compiled_op_destroy(k);
        }
    dgrad_compiled_op_destroy(c);
    dgrad_op_destroy(op);
}
