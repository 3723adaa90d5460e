/*
 * Layouts whose elements share addresses: an output that aliases is
 * refused at compile time (invalid_arguments naming tensor, dims, strides,
 * two elements and the rule); inputs that alias, and layouts whose strides
 * interleave without aliasing, are computed correctly. Results are checked
 * against a naive transposed convolution written here, reading and
 * writing through the strides as given.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "aliasing.h"
#include "dgrad/dgrad.h"
#include "dtype.h"

/* ------------------------------------------------------ the layout check */

/* Whether two different indices of the layout have one offset, by visiting
 * every pair. */
static int brute_force_aliases(int nd, const int64_t *dims,
        const int64_t *strides) {
    int64_t count = 1;
    for (int k = 0; k < nd; k++) count *= dims[k];
    for (int64_t a = 0; a < count; a++)
        for (int64_t b = a + 1; b < count; b++) {
            int64_t ra = a, rb = b, oa = 0, ob = 0;
            for (int k = nd - 1; k >= 0; k--) {
                oa += (ra % dims[k]) * strides[k];
                ob += (rb % dims[k]) * strides[k];
                ra /= dims[k];
                rb /= dims[k];
            }
            if (oa == ob) return 1;
        }
    return 0;
}

static int64_t offset(int nd, const int64_t *idx, const int64_t *strides) {
    int64_t o = 0;
    for (int k = 0; k < nd; k++) o += idx[k] * strides[k];
    return o;
}

Test(aliasing, agrees_with_every_pair_on_random_layouts) {
    srand(7);
    int found = 0, nested = 0, interleaved_distinct = 0;
    for (int trial = 0; trial < 4000; trial++) {
        int nd = 1 + rand() % 4;
        int64_t dims[4], strides[4], a[4], b[4];
        for (int k = 0; k < nd; k++) {
            dims[k] = 1 + rand() % 4;
            strides[k] = rand() % 13;
        }
        int want = brute_force_aliases(nd, dims, strides);
        dgrad_aliasing_t got = dgrad_layout_find_alias(nd, dims, strides, a, b);
        cr_assert_eq(got, want ? dgrad_aliasing_found : dgrad_aliasing_none,
                "trial %d: got %d, want %d", trial, (int)got, want);
        if (dgrad_layout_is_nested(nd, dims, strides)) {
            cr_assert_eq(want, 0, "trial %d: nested layout aliases", trial);
            nested++;
        } else if (!want) {
            interleaved_distinct++;
        }
        if (!want) continue;
        found++;
        cr_assert(memcmp(a, b, (size_t)nd * sizeof *a) != 0);
        for (int k = 0; k < nd; k++)
            cr_assert(a[k] >= 0 && a[k] < dims[k] && b[k] >= 0 && b[k] < dims[k]);
        cr_assert_eq(offset(nd, a, strides), offset(nd, b, strides));
    }
    /* The sample covers all three kinds. */
    cr_assert(found > 100 && nested > 100 && interleaved_distinct > 10,
            "found %d nested %d interleaved %d", found, nested,
            interleaved_distinct);
}

Test(aliasing, interleaved_layouts_beyond_the_visit_limit_are_undecided) {
    const int64_t dims[] = {3, 1 << 23}, strides[] = {2, 3};
    int64_t a[2], b[2];
    cr_assert_eq(dgrad_layout_find_alias(2, dims, strides, a, b),
            dgrad_aliasing_unknown);
    /* The same size nested, or with a stride 0, is decided at once. */
    const int64_t nested[] = {1 << 23, 1}, zero[] = {0, 3};
    cr_assert_eq(dgrad_layout_find_alias(2, dims, nested, a, b),
            dgrad_aliasing_none);
    cr_assert_eq(dgrad_layout_find_alias(2, dims, zero, a, b),
            dgrad_aliasing_found);
    cr_assert(a[0] != b[0] && a[1] == b[1]);
    /* Two axes alias on their own whatever the span: decided exactly,
     * without visiting (a bitmap over this span would take 384 GB). */
    const int64_t few[] = {3, 2}, far[] = {(int64_t)1 << 40, (int64_t)1 << 40};
    cr_assert_eq(dgrad_layout_find_alias(2, few, far, a, b),
            dgrad_aliasing_found);
    cr_assert_eq(offset(2, a, far), offset(2, b, far));
    cr_assert(a[0] != b[0] || a[1] != b[1]);
    /* Three axes that alias together (2 + 3 - 5 = 0) but no pair does,
     * over a span too large to visit: undecided, not out of memory. */
    const int64_t three[] = {2, 2, 2}, wide[] = {(int64_t)2 << 38,
            (int64_t)3 << 38, (int64_t)5 << 38};
    int64_t a3[3], b3[3];
    cr_assert_eq(dgrad_layout_find_alias(3, three, wide, a3, b3),
            dgrad_aliasing_unknown);
}

/* ------------------------------------------------------------ the ops */

/* A 2D transposed convolution, group 1, no pads or dilation, NCX data
 * and [Cin][Cout][K] weights as ONNX and oneDNN Graph NCX/OIX have them. */
typedef struct conv {
    dgrad_op_kind_t kind;
    dgrad_data_type_t dt;
    int64_t in_dims[4], wei_dims[4], out_dims[4];
    int64_t in_strides[4], wei_strides[4], out_strides[4];
    int64_t stride;
} conv_t;

static conv_t conv_make(dgrad_op_kind_t kind, dgrad_data_type_t dt,
        int64_t cin, int64_t cout, int64_t x, int64_t k, int64_t s) {
    conv_t c = {kind, dt, {1, cin, x, x}, {cin, cout, k, k},
            {1, cout, s * (x - 1) + k, s * (x - 1) + k}, {0}, {0}, {0}, s};
    for (int t = 0; t < 3; t++) {
        int64_t *d = t == 0 ? c.in_dims : t == 1 ? c.wei_dims : c.out_dims;
        int64_t *st = t == 0 ? c.in_strides : t == 1 ? c.wei_strides
                                                     : c.out_strides;
        int64_t acc = 1;
        for (int i = 3; i >= 0; i--) {
            st[i] = acc;
            acc *= d[i];
        }
    }
    return c;
}

static int64_t span(const int64_t *dims, const int64_t *strides) {
    int64_t last = 0;
    for (int i = 0; i < 4; i++) last += (dims[i] - 1) * strides[i];
    return last + 1;
}

static dgrad_status_t conv_compile(const conv_t *c,
        dgrad_compiled_op_t **compiled, dgrad_op_t **op) {
    dgrad_logical_tensor_t in[2], out;
    const int64_t st[] = {c->stride, c->stride}, zero[] = {0, 0};
    cr_assert_eq(dgrad_op_create(op, 1, c->kind, "layouts"), dgrad_success);
    cr_assert_eq(dgrad_op_set_attr_s64s(*op, dgrad_op_attr_strides, st, 2),
            dgrad_success);
    if (c->kind == dgrad_op_convolution_backward_data) {
        cr_assert_eq(dgrad_op_set_attr_str(*op, dgrad_op_attr_data_format, "NCX"), 0);
        cr_assert_eq(dgrad_op_set_attr_str(*op, dgrad_op_attr_weights_format, "OIX"), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(*op, dgrad_op_attr_pads_begin, zero, 2), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(*op, dgrad_op_attr_pads_end, zero, 2), 0);
        cr_assert_eq(dgrad_op_set_attr_s64s(*op, dgrad_op_attr_dst_shape,
                             c->out_dims, 4), 0);
    }
    cr_assert_eq(dgrad_logical_tensor_init_with_strides(&in[0], 1, c->dt, 4,
                         c->in_dims, c->in_strides, dgrad_property_type_variable), 0);
    cr_assert_eq(dgrad_logical_tensor_init_with_strides(&in[1], 2, c->dt, 4,
                         c->wei_dims, c->wei_strides, dgrad_property_type_variable), 0);
    cr_assert_eq(dgrad_logical_tensor_init_with_strides(&out, 3, c->dt, 4,
                         c->out_dims, c->out_strides, dgrad_property_type_variable), 0);
    return dgrad_compiled_op_create(compiled, *op, 2, in, &out);
}

/* The naive gather, through the strides, into a dense [N][Cout][Y][Y]
 * array of doubles. */
static void naive(const conv_t *c, const void *in, const void *wei,
        double *want) {
    int64_t cin = c->in_dims[1], cout = c->wei_dims[1], x = c->in_dims[2],
            k = c->wei_dims[2], y = c->out_dims[2];
    memset(want, 0, (size_t)(cout * y * y) * sizeof *want);
    for (int64_t ci = 0; ci < cin; ci++)
        for (int64_t co = 0; co < cout; co++)
            for (int64_t ih = 0; ih < x; ih++)
                for (int64_t iw = 0; iw < x; iw++)
                    for (int64_t kh = 0; kh < k; kh++)
                        for (int64_t kw = 0; kw < k; kw++) {
                            double a = dgrad_load(in, c->dt, ci * c->in_strides[1]
                                    + ih * c->in_strides[2] + iw * c->in_strides[3]);
                            double w = dgrad_load(wei, c->dt, ci * c->wei_strides[0]
                                    + co * c->wei_strides[1] + kh * c->wei_strides[2]
                                    + kw * c->wei_strides[3]);
                            int64_t oy = ih * c->stride + kh, ox = iw * c->stride + kw;
                            want[(co * y + oy) * y + ox] += a * w;
                        }
}

/* Compiles and runs @p c on small integers and compares every output
 * element with the naive gather (exact: all sums are small integers) and
 * every byte of the output buffer outside the tensor with its fill. */
static void check_computed(const conv_t *c) {
    size_t es = dgrad_data_type_size(c->dt);
    int64_t n_in = span(c->in_dims, c->in_strides),
            n_wei = span(c->wei_dims, c->wei_strides),
            n_out = span(c->out_dims, c->out_strides) + 8;
    unsigned char *in = malloc((size_t)n_in * es), *wei = malloc((size_t)n_wei * es),
            *out = malloc((size_t)n_out * es), *fill = malloc((size_t)n_out * es);
    for (int64_t i = 0; i < n_in; i++) dgrad_store(in, c->dt, i, (double)(i % 5 - 2));
    for (int64_t i = 0; i < n_wei; i++) dgrad_store(wei, c->dt, i, (double)(i % 3 - 1));
    memset(out, 0x7b, (size_t)n_out * es);
    memcpy(fill, out, (size_t)n_out * es);
    int64_t cout = c->out_dims[1], y = c->out_dims[2];
    double *want = malloc((size_t)(cout * y * y) * sizeof *want);
    naive(c, in, wei, want);

    dgrad_op_t *op = NULL;
    dgrad_compiled_op_t *compiled = NULL;
    dgrad_status_t st = conv_compile(c, &compiled, &op);
    cr_assert_eq(st, dgrad_success, "compile: %s", dgrad_last_error_message());
    const void *inputs[] = {in, wei};
    st = dgrad_compiled_op_execute(compiled, 2, inputs, out);
    cr_assert_eq(st, dgrad_success, "execute: %s", dgrad_last_error_message());
    unsigned char *touched = calloc((size_t)n_out, 1);
    for (int64_t co = 0; co < cout; co++)
        for (int64_t oy = 0; oy < y; oy++)
            for (int64_t ox = 0; ox < y; ox++) {
                int64_t off = co * c->out_strides[1] + oy * c->out_strides[2]
                        + ox * c->out_strides[3];
                double got = dgrad_load(out, c->dt, off);
                cr_assert_eq(got, want[(co * y + oy) * y + ox],
                        "%s %s: element [0,%lld,%lld,%lld] is %g, want %g",
                        dgrad_op_kind_name(c->kind), dgrad_data_type_name(c->dt),
                        (long long)co, (long long)oy, (long long)ox, got,
                        want[(co * y + oy) * y + ox]);
                touched[off] = 1;
            }
    for (int64_t i = 0; i < n_out; i++)
        if (!touched[i])
            cr_assert(!memcmp(out + i * (int64_t)es, fill + i * (int64_t)es, es),
                    "element offset %lld outside the tensor was written",
                    (long long)i);
    dgrad_compiled_op_destroy(compiled);
    dgrad_op_destroy(op);
    free(touched);
    free(want);
    free(in);
    free(wei);
    free(out);
    free(fill);
}

Test(layouts, aliasing_outputs_are_refused_at_compile_time) {
    /* ConvTranspose 1x2x3x3 -> 1x2x5x5: output strides that alias. */
    static const struct {
        int64_t strides[4];
        const char *text;
    } cases[] = {
            {{0, 0, 0, 0}, "Y (dims 1,2,5,5, strides 0,0,0,0) puts elements [0,0,0,0] and [0,1,0,0]"},
            {{50, 0, 5, 1}, "Y (dims 1,2,5,5, strides 50,0,5,1) puts elements [0,0,0,0] and [0,1,0,0]"},
            {{50, 25, 5, 0}, "Y (dims 1,2,5,5, strides 50,25,5,0) puts elements [0,0,0,0] and [0,0,0,1]"},
            {{50, 25, 1, 1}, "Y (dims 1,2,5,5, strides 50,25,1,1) puts elements"},
            {{50, 1, 5, 1}, "Y (dims 1,2,5,5, strides 50,1,5,1) puts elements"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        conv_t c = conv_make(dgrad_op_conv_transpose, dgrad_f32, 2, 2, 3, 3, 1);
        memcpy(c.out_strides, cases[i].strides, sizeof c.out_strides);
        dgrad_op_t *op = NULL;
        dgrad_compiled_op_t *compiled = (dgrad_compiled_op_t *)&c;
        dgrad_status_t st = conv_compile(&c, &compiled, &op);
        cr_assert_eq(st, dgrad_invalid_arguments, "case %zu: %s (%s)", i,
                dgrad_status_name(st), dgrad_last_error_message());
        const char *msg = dgrad_last_error_message();
        cr_assert(strstr(msg, cases[i].text) && strstr(msg, "ConvTranspose")
                        && strstr(msg, "an output's elements must not share addresses"),
                "case %zu: message '%s'", i, msg);
        cr_assert_eq(compiled, (dgrad_compiled_op_t *)&c, "handle written on failure");
        dgrad_op_destroy(op);
    }
}

Test(layouts, outputs_too_large_to_check_are_unimplemented) {
    /* 1x3x1x2^23 with channel stride 2 and width stride 3: interleaved
     * over 25M elements. */
    conv_t c = conv_make(dgrad_op_conv_transpose, dgrad_f32, 1, 3, 1, 1, 1);
    c.in_dims[3] = c.out_dims[3] = (int64_t)1 << 23;
    c.in_dims[2] = c.out_dims[2] = 1;
    c.in_strides[0] = c.in_strides[1] = (int64_t)1 << 23;
    const int64_t strides[] = {1 << 27, 2, 1 << 27, 3};
    memcpy(c.out_strides, strides, sizeof strides);
    dgrad_op_t *op = NULL;
    dgrad_compiled_op_t *compiled = NULL;
    dgrad_status_t st = conv_compile(&c, &compiled, &op);
    cr_assert_eq(st, dgrad_unimplemented, "%s", dgrad_last_error_message());
    cr_assert(strstr(dgrad_last_error_message(), "strides interleave over more than 16777216 elements"),
            "%s", dgrad_last_error_message());
    cr_assert_null(compiled);
    dgrad_op_destroy(op);
}

Test(layouts, interleaved_outputs_that_do_not_alias_are_computed) {
    /* Channels at stride 2, width at stride 3: offsets 0 2 4 3 5 7 (1 and
     * 6 are gaps that must stay untouched). */
    conv_t c = conv_make(dgrad_op_conv_transpose, dgrad_f32, 2, 3, 1, 1, 1);
    c.in_dims[3] = 2;
    c.out_dims[2] = 1;
    c.out_dims[3] = 2;
    c.in_strides[1] = 2;
    c.in_strides[0] = 4;
    const int64_t strides[] = {8, 2, 8, 3};
    memcpy(c.out_strides, strides, sizeof strides);
    /* The naive gather here is square; this one is 1x2, so check it by
     * hand instead. */
    dgrad_op_t *op = NULL;
    dgrad_compiled_op_t *compiled = NULL;
    cr_assert_eq(conv_compile(&c, &compiled, &op), dgrad_success, "%s",
            dgrad_last_error_message());
    const float x[4] = {1, 2, 3, 4}; /* [ci][w]: ci 0 {1,2}, ci 1 {3,4} */
    const float w[6] = {1, 2, 3, 4, 5, 6}; /* [ci][co] */
    float out[9];
    for (int i = 0; i < 9; i++) out[i] = -7.0f;
    const void *inputs[] = {x, w};
    cr_assert_eq(dgrad_compiled_op_execute(compiled, 2, inputs, out), 0, "%s",
            dgrad_last_error_message());
    for (int co = 0; co < 3; co++)
        for (int ow = 0; ow < 2; ow++) {
            float want = x[ow] * w[co] + x[2 + ow] * w[3 + co];
            cr_assert_eq(out[co * 2 + ow * 3], want, "co %d w %d: %g, want %g",
                    co, ow, out[co * 2 + ow * 3], want);
        }
    cr_assert(out[1] == -7.0f && out[6] == -7.0f && out[8] == -7.0f);
    dgrad_compiled_op_destroy(compiled);
    dgrad_op_destroy(op);
}

Test(layouts, inputs_whose_elements_share_addresses_are_read_as_given) {
    static const dgrad_data_type_t types[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    static const dgrad_op_kind_t kinds[] = {dgrad_op_conv_transpose,
            dgrad_op_convolution_backward_data};
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k < 2; k++) {
            /* The graph file case: diff_dst strides 1,1,1,1. */
            conv_t c = conv_make(kinds[k], types[t], 2, 2, 3, 3, 1);
            const int64_t ones[] = {1, 1, 1, 1};
            memcpy(c.in_strides, ones, sizeof ones);
            check_computed(&c);
            /* A broadcast: both channels read one plane (stride 0), and
             * weights shared by every output channel. */
            c = conv_make(kinds[k], types[t], 2, 3, 4, 3, 2);
            c.in_strides[0] = c.in_strides[1] = 0;
            c.wei_strides[1] = 0;
            check_computed(&c);
            /* Interleaved but distinct: offsets 0 2 3 5 4 6 7 9. */
            c = conv_make(kinds[k], types[t], 2, 2, 2, 2, 2);
            const int64_t inter[] = {0, 2, 4, 3};
            memcpy(c.in_strides, inter, sizeof inter);
            check_computed(&c);
        }
}

Test(layouts, padded_and_permuted_outputs_are_computed) {
    /* Nested layouts stay on the direct path: channels-last strides with
     * a padded row. */
    conv_t c = conv_make(dgrad_op_conv_transpose, dgrad_f32, 3, 2, 4, 3, 2);
    const int64_t cl[] = {22 * 9, 1, 22, 2};
    memcpy(c.out_strides, cl, sizeof cl);
    check_computed(&c);
}
