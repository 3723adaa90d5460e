/*
 * The in-place sum: a chain's Add of an operand laid out as the output may
 * take the output buffer as that operand (dgrad_compiled_op_query_in_place_input
 * names the input), and the result is the reference's with the operand in
 * a buffer of its own, on every kind of plan. Any other overlap of an
 * input with the output is refused at execution, with the rule, before
 * anything is written.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assert_err.h"
#include "api_internal.h"
#include "tester.h"

#define POST(k) {(k), {{NULL, NULL}, {NULL, NULL}}, 0, 0, 0}

static void expect_pass(tester_t *t) {
    char why[512], desc[768];
    cr_expect(tester_run(t, why, sizeof why), "%s: %s",
            tester_describe(t, desc, sizeof desc), why);
}

/* ONNX 2D, 4 -> 6 channels, stride 2, bias, then @p n post-ops. */
static void onnx_problem(tester_t *t, int n, const char *const *kinds) {
    tester_init(t, dgrad_op_conv_transpose, 2);
    t->Cin = 4;
    t->Cout = 6;
    t->S[0] = t->S[1] = 2;
    t->bias = 1;
    t->n_post = n;
    for (int i = 0; i < n; i++) t->post[i] = (tester_post_op_t)POST(kinds[i]);
    t->in_place = 1;
}

/* One Add of the output's shape in each position of a chain, each type,
 * with and without a bias (the bias add carries the chain, or the pass
 * does), several executions on constant weights (the operand is put
 * back before each). */
Test(in_place, add_anywhere_in_the_chain) {
    static const char *const chains[][3] = {{"Add", NULL, NULL},
            {"Add", "ReLU", NULL}, {"ReLU", "Add", "Tanh"},
            {"Multiply", "Sigmoid", "Add"}};
    static const int lengths[] = {1, 2, 3, 3};
    const dgrad_data_type_t dts[] = {dgrad_f32, dgrad_bf16, dgrad_f16};
    for (int c = 0; c < 4; c++)
        for (int j = 0; j < 6; j++) {
            tester_t t;
            onnx_problem(&t, lengths[c], chains[c]);
            t.dt = dts[j % 3];
            t.bias = j < 3;
            t.constant_weights = j == 4;
            t.executions = j == 4 ? 3 : 1;
            if (c == 3) t.post[0].rank = 1; /* Multiply: per position */
            t.seed = 10u * (unsigned)c + (unsigned)j;
            expect_pass(&t);
        }
}

/* Every dialect, channels-first and channels-last, 1D to 3D. */
Test(in_place, every_dialect_and_rank) {
    static const dgrad_op_kind_t kinds[] = {
            dgrad_op_convolution_backward_data,
            dgrad_op_convolution_backprop_data,
            dgrad_op_group_convolution_backprop_data,
            dgrad_op_conv_transpose, dgrad_op_onednn_conv_transpose};
    for (int k = 0; k < 5; k++)
        for (int nsp = 1; nsp <= 3; nsp++) {
            tester_t t;
            tester_init(&t, kinds[k], nsp);
            if (kinds[k] == dgrad_op_group_convolution_backprop_data) {
                t.G = 2;
                t.Cin = 4;
                t.Cout = 6;
            }
            /* channels-last strides are the operand's only in the
             * oneDNN dialects' NXC (the others keep NCX dims) */
            t.channels_last = (k == 0 || k == 4) && nsp != 2;
            t.S[0] = 2;
            t.pb[0] = 1;
            t.n_post = 2;
            t.post[0] = (tester_post_op_t)POST("Add");
            t.post[1] = (tester_post_op_t)POST("Clamp");
            t.post[1].attr[0][0] = "min";
            t.post[1].attr[0][1] = "-1";
            t.post[1].attr[1][0] = "max";
            t.post[1].attr[1][1] = "2";
            t.in_place = 1;
            t.seed = 40u + 3u * (unsigned)k + (unsigned)nsp;
            expect_pass(&t);
        }
}

/* Each plan kind writes the output its own way: folded (phase reorders),
 * dgrad's own loop, backward data alone; and an output no term reaches
 * (the border only). */
Test(in_place, every_kind_of_plan) {
    for (int kind = 0; kind < 3; kind++) {
        dgrad_plan_policy_t policy = dgrad_plan_policy_default();
        policy.phase_fold = kind == 0 ? 2 : 0;
        policy.own_loop = kind == 1 ? 2 : 0;
        dgrad_api_set_policy_for_testing(&policy);
        for (int j = 0; j < 4; j++) {
            tester_t t;
            static const char *const chain[] = {"LeakyReLU", "Add"};
            onnx_problem(&t, 2, chain);
            t.post[0].attr[0][0] = "alpha";
            t.post[0].attr[0][1] = "0.2";
            t.Cin = 8;
            t.Cout = kind == 1 ? 4 : 6; /* own loop: 2 per group */
            t.G = kind == 1 ? 2 : 1;
            t.K[0] = t.K[1] = 4;
            t.pb[0] = t.pb[1] = t.pe[0] = t.pe[1] = 1;
            t.bias = j % 2;
            /* channels-last: oneDNN Graph's NXC, where a dense operand
             * has the output's layout (dgrad's own loop wants NCX) */
            if (j / 2 && kind != 1) {
                t.kind = dgrad_op_onednn_conv_transpose;
                t.channels_last = 1;
            }
            t.dt = j == 3 ? dgrad_bf16 : dgrad_f32;
            t.seed = 60u + 4u * (unsigned)kind + (unsigned)j;
            char desc[768], why[512];
            tester_describe(&t, desc, sizeof desc);
            cr_expect(tester_run(&t, why, sizeof why), "plan kind %d: %s: %s",
                    kind, desc, why);
            /* the plan kind meant */
            tester_case_t c;
            cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
            const char *impl = dgrad_compiled_op_impl_name(c.compiled);
            cr_expect(kind == 0 ? !strncmp(impl, "fold:", 5)
                    : kind == 1 ? !strcmp(impl, "dgrad:direct")
                    : strncmp(impl, "fold:", 5) && strcmp(impl, "dgrad:direct"),
                    "plan kind %d: %s: impl %s", kind, desc, impl);
            tester_case_destroy(&c);
        }
    }
    dgrad_api_set_policy_for_testing(NULL);
    tester_t t;
    tester_init_unreached(&t);
    t.n_post = 2;
    t.post[0] = (tester_post_op_t)POST("Add");
    t.post[1] = (tester_post_op_t)POST("Sigmoid");
    t.in_place = 1;
    expect_pass(&t);
}

/* A BiasAdd first becomes the op's bias: the in-place input is still
 * counted in the order the host passes inputs. Two Adds of the output's
 * shape: the first is the in-place one, the second reads its own buffer. */
Test(in_place, input_numbering) {
    static const char *const chains[][3] = {{"BiasAdd", "Add", "ReLU"},
            {"Add", "Tanh", "Add"}};
    for (int c = 0; c < 2; c++) {
        tester_t t;
        onnx_problem(&t, 3, chains[c]);
        t.bias = 0;
        t.seed = 90u + (unsigned)c;
        expect_pass(&t);
    }
}

/* ------------------------------------------------------- what is refused */

/* Compiles @p t (without running it) and returns its in-place input. */
static int64_t in_place_input_of(const tester_t *t) {
    tester_case_t c;
    char why[512];
    cr_assert(tester_case_create(&c, t, why, sizeof why), "%s", why);
    int64_t index = -2;
    cr_assert_eq(dgrad_compiled_op_query_in_place_input(c.compiled, &index),
            dgrad_success);
    tester_case_destroy(&c);
    return index;
}

Test(in_place, which_operand_may_share_the_output) {
    tester_t t;
    static const char *const add[] = {"Add"}, *const mul[] = {"Multiply"};
    onnx_problem(&t, 1, add);
    cr_expect_eq(in_place_input_of(&t), 3, "X, W, B, then the Add's");
    onnx_problem(&t, 1, mul);
    cr_expect_eq(in_place_input_of(&t), -1, "only an Add accumulates");
    onnx_problem(&t, 1, add);
    t.post[0].dt = dgrad_bf16;
    cr_expect_eq(in_place_input_of(&t), -1, "a bf16 operand of an f32 op");
    onnx_problem(&t, 1, add);
    t.post[0].broadcast = 0x1; /* one image of two */
    t.N = 2;
    cr_expect_eq(in_place_input_of(&t), -1, "a broadcast operand");
    onnx_problem(&t, 1, add);
    t.channels_last = 1; /* NCX dims, channels-last output strides */
    cr_expect_eq(in_place_input_of(&t), -1, "a dense NCX operand");
    tester_init(&t, dgrad_op_convolution_backprop_data, 2);
    t.shape_mode = tester_shape_input_deferred;
    t.n_post = 1;
    t.post[0] = (tester_post_op_t)POST("Add");
    cr_expect_eq(in_place_input_of(&t), -1, "output dims unknown");
    ASSERT_ERR(dgrad_compiled_op_query_in_place_input(NULL, NULL),
            dgrad_invalid_arguments, "NULL argument");
}

/* Runs @p c once with input @p i's buffer at @p byte_offset from the
 * output's (inside a buffer that holds both) and expects a refusal naming
 * @p substring, the output's bytes untouched. */
static void expect_overlap_refused(tester_case_t *c, size_t i,
        int64_t byte_offset, const char *substring) {
    size_t es = dgrad_data_type_size(c->t.dt);
    int64_t out_bytes = tester_case_output_count(c, c->Y) * (int64_t)es;
    size_t total = (size_t)(3 * out_bytes + 256);
    char *buf = malloc(total), *snapshot = malloc(total);
    cr_assert(buf && snapshot);
    for (size_t b = 0; b < total; b++) buf[b] = (char)(b * 7u);
    memcpy(snapshot, buf, total);
    char *out = buf + out_bytes + 128;
    int64_t shape[8];
    tester_case_shape_values(c, c->Y, shape);
    const void *bufs[8] = {c->in, c->wei, c->bias ? c->bias : shape};
    for (int k = 0; k < c->n_operands; k++)
        bufs[c->n_own_inputs + (size_t)k] = c->operands[k];
    bufs[i] = out + byte_offset;
    ASSERT_ERR(dgrad_compiled_op_execute(c->compiled, c->n_inputs, bufs, out),
            dgrad_invalid_arguments, substring);
    cr_expect_eq(memcmp(buf, snapshot, total), 0, "the buffers were written");
    free(buf);
    free(snapshot);
}

Test(in_place, other_overlaps_are_refused_before_any_write) {
    tester_t t;
    static const char *const chain[] = {"Multiply", "Add"};
    onnx_problem(&t, 2, chain);
    t.post[0].rank = 0; /* Multiply by a full tensor too */
    tester_case_t c;
    char why[512];
    cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
    /* X 1x4x5x5 f32 (400 bytes) -> Y 1x6x11x11 (2904 bytes); inputs X,
     * W, B, the Multiply's, the Add's */
    expect_overlap_refused(&c, 0, 64,
            "input 0's buffer (400 bytes, starting 64 bytes from the "
            "output's) overlaps the output's buffer (2904 bytes)");
    expect_overlap_refused(&c, 1, -8, "input 1's buffer");
    expect_overlap_refused(&c, 4, 4,
            "input 4's buffer (2904 bytes, starting 4 bytes from the "
            "output's)");
    expect_overlap_refused(&c, 4, -2900, "only input 4 may, at the "
            "output's own address");
    expect_overlap_refused(&c, 3, 0, "the operand of an Add laid out as "
            "the output");
    tester_case_destroy(&c);
    /* No Add: nothing may share it. */
    static const char *const relu[] = {"ReLU"};
    onnx_problem(&t, 1, relu);
    cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
    expect_overlap_refused(&c, 2, 0, "no input may share it here");
    tester_case_destroy(&c);
}

/* An output whose dims come with each execution: the execution decides,
 * for its own output, whether the Add's operand may share it. */
Test(in_place, decided_per_execution_when_the_shape_comes_late) {
    tester_t t;
    tester_init(&t, dgrad_op_convolution_backprop_data, 2);
    t.shape_mode = tester_shape_input_deferred;
    t.S[0] = t.S[1] = 2;
    t.n_post = 1;
    t.post[0] = (tester_post_op_t)POST("Add");
    tester_case_t c;
    char why[512];
    cr_assert(tester_case_create(&c, &t, why, sizeof why), "%s", why);
    size_t es = dgrad_data_type_size(t.dt);
    int64_t count = tester_case_output_count(&c, c.Y);
    float *out = malloc((size_t)count * es);
    cr_assert(out);
    memcpy(out, c.operands[0], (size_t)count * es);
    int64_t shape[8];
    tester_case_shape_values(&c, c.Y, shape);
    const void *bufs[4] = {c.in, c.wei, shape, out};
    dgrad_logical_tensor_t lt;
    cr_assert_eq(dgrad_compiled_op_execute_dynamic(c.compiled, 4, bufs, out,
            (size_t)count * es, &lt), dgrad_success, "%s",
            dgrad_last_error_message());
    cr_expect(tester_case_check(&c, c.Y, &lt, out, why, sizeof why), "%s",
            why);
    free(out);
    tester_case_destroy(&c);
}

/* ----------------------------------------------- which plans accumulate */

/* Compiles @p t and returns its in-place mode and impl (static buffer). */
static const char *mode_of(const tester_t *t, char *impl, size_t size) {
    tester_case_t c;
    char why[512];
    cr_assert(tester_case_create(&c, t, why, sizeof why), "%s", why);
    const char *mode = dgrad_compiled_op_in_place_mode(c.compiled);
    snprintf(impl, size, "%s", dgrad_compiled_op_impl_name(c.compiled));
    tester_case_destroy(&c);
    return mode;
}

/* The plans whose output writer takes the Add as oneDNN's sum, and those
 * that copy the operand aside, each checked against the reference in
 * place. Ranked plans (no timing), so that the plan kind is fixed. */
Test(in_place, the_output_writer_accumulates_where_it_can) {
    static const struct {
        int fold, bias, nxc, blocked, n;
        const char *chain[3];
        const char *mode;
    } cases[] = {
            /* the bias add writes the output: carries the chain */
            {0, 1, 0, 0, 1, {"Add"}, "accumulates"},
            {0, 1, 1, 0, 3, {"ReLU", "Add", "Tanh"}, "accumulates"},
            /* the output reorder from a blocked layout writes it */
            {0, 0, 0, 1, 1, {"Add"}, "accumulates"},
            /* folded: the phase copies write it */
            {2, 0, 0, 0, 1, {"Add"}, "accumulates"},
            {2, 1, 1, 0, 1, {"Add"}, "accumulates"},
            /* the backward-data convolution writes it: no post-ops */
            {0, 0, 1, 0, 1, {"Add"}, "sets aside"},
            /* unary ops then the Add: the folded convolution's twin
             * carries ReLU, the phase copies' twins add */
            {2, 0, 0, 0, 2, {"ReLU", "Add"}, "accumulates"},
            {2, 1, 1, 0, 3, {"Sigmoid", "Tanh", "Add"}, "accumulates"},
            /* a binary op before the Add: the pass, the operand aside */
            {2, 0, 0, 0, 2, {"Multiply", "Add"}, "sets aside"},
            /* the Add before a unary op: nothing after the copies */
            {2, 0, 0, 0, 2, {"Add", "Tanh"}, "sets aside"},
            {0, 1, 0, 0, 1, {"Multiply"}, "none"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dgrad_plan_policy_t policy = dgrad_plan_policy_default();
        policy.layout_search = 0;
        policy.phase_fold = cases[i].fold;
        policy.own_loop = 0;
        dgrad_api_set_policy_for_testing(&policy);
        tester_t t;
        onnx_problem(&t, cases[i].n, cases[i].chain);
        t.bias = cases[i].bias;
        if (cases[i].nxc) {
            t.kind = dgrad_op_onednn_conv_transpose;
            t.channels_last = 1;
        }
        if (cases[i].blocked) t.Cin = t.Cout = 32;
        t.in_place = strcmp(cases[i].mode, "none") != 0;
        t.seed = 120u + (unsigned)i;
        char impl[128], desc[768], why[512];
        tester_describe(&t, desc, sizeof desc);
        const char *mode = mode_of(&t, impl, sizeof impl);
        cr_expect_str_eq(mode, cases[i].mode, "%s (%s)", desc, impl);
        if (t.in_place)
            cr_expect(tester_run(&t, why, sizeof why), "%s: %s", desc, why);
    }
    dgrad_api_set_policy_for_testing(NULL);
}
