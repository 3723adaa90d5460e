/*
 * `dgrad bench --post-ops` (bench/post_ops.c, bench/arbiter.c): the chain
 * read from oneDNN Graph's names and benchdnn's spelling into what dgrad
 * is given (op names and attributes) and the canonical form the baselines
 * and the arbiter use; spelling errors with their messages; operand
 * shapes; and the arbiter applying the chain when it decides who is
 * wrong, on a chain computed here by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "bench.h"
#include "canonical.h"

static bench_chain_t parse_ok(const char *text) {
    bench_chain_t c;
    char err[512] = "";
    cr_assert_eq(bench_chain_parse(text, &c, err, sizeof err), 0, "%s: %s",
            text, err);
    return c;
}

static void expect_attr(const bench_post_op_t *op, int i, const char *name,
        double value) {
    cr_assert_gt(op->n_attrs, i, "%s has no attribute %d", op->kind, i);
    cr_expect_str_eq(op->names[i], name);
    cr_expect_eq(strtod(op->values[i], NULL), value, "%s %s = %s", op->kind,
            name, op->values[i]);
}

Test(bench_post_ops, reads_benchdnn_and_onednn_graph_spellings) {
    bench_chain_t c = parse_ok("bias+relu+relu:0.25+clip:0:6+Clamp:-1:1");
    cr_assert_eq(c.n, 5);
    cr_expect_str_eq(c.ops[0].kind, "BiasAdd");
    cr_expect_eq(c.ops[0].operand, bench_operand_channel);
    cr_expect_eq(c.ops[0].alg, dgrad_post_add);
    cr_expect_str_eq(c.ops[1].kind, "ReLU");
    cr_expect_eq(c.ops[1].n_attrs, 0);
    cr_expect_eq(c.ops[1].alpha, 0);
    /* benchdnn's relu:ALPHA is oneDNN Graph's LeakyReLU */
    cr_expect_str_eq(c.ops[2].kind, "LeakyReLU");
    expect_attr(&c.ops[2], 0, "alpha", 0.25);
    cr_expect_eq(c.ops[2].alg, dgrad_post_relu);
    cr_expect_eq(c.ops[2].alpha, 0.25);
    cr_expect_str_eq(c.ops[3].kind, "Clamp");
    expect_attr(&c.ops[3], 0, "min", 0);
    expect_attr(&c.ops[3], 1, "max", 6);
    cr_expect_eq(c.ops[3].alg, dgrad_post_clip);
    cr_expect_eq(c.ops[3].beta, 6);
    cr_expect_eq(c.ops[4].alpha, -1);
    cr_expect_eq(c.ops[4].beta, 1);

    c = parse_ok("gelu_tanh+GELU+soft_relu:2+logistic+hardswish:0.1666666667:0.5"
                 "+elu:0.5+Tanh");
    cr_assert_eq(c.n, 7);
    cr_expect_str_eq(c.ops[0].kind, "GELU");
    cr_expect_eq(c.ops[0].alg, dgrad_post_gelu_tanh);
    cr_expect_str_eq(c.ops[0].names[0], "mode");
    cr_expect_str_eq(c.ops[0].values[0], "gelu_tanh");
    cr_expect_eq(c.ops[1].alg, dgrad_post_gelu_erf);
    cr_expect_eq(c.ops[1].n_attrs, 0);
    /* soft_relu's alpha is SoftPlus's beta, canonical alpha */
    cr_expect_str_eq(c.ops[2].kind, "SoftPlus");
    expect_attr(&c.ops[2], 0, "beta", 2);
    cr_expect_eq(c.ops[2].alpha, 2);
    cr_expect_str_eq(c.ops[3].kind, "Sigmoid");
    cr_expect_str_eq(c.ops[4].kind, "HardSwish");
    cr_expect_eq(c.ops[4].n_attrs, 0);
    cr_expect_eq(c.ops[4].alpha, 1.0 / 6);
    cr_expect_eq(c.ops[4].beta, 0.5);
    expect_attr(&c.ops[5], 0, "alpha", 0.5);
    cr_expect_eq(c.ops[6].alg, dgrad_post_tanh);
}

Test(bench_post_ops, binary_ops_take_a_type_and_a_policy) {
    bench_chain_t c = parse_ok("add+mul:bf16:per_oc+max:common+div:per_position:f16"
                               "+sum+sub:per_tensor+bias:f32");
    cr_assert_eq(c.n, 7);
    cr_expect_str_eq(c.ops[0].kind, "Add");
    cr_expect_eq(c.ops[0].operand, bench_operand_full);
    cr_expect_eq(c.ops[0].operand_dt, dgrad_data_type_undef);
    cr_expect_str_eq(c.ops[1].kind, "Multiply");
    cr_expect_eq(c.ops[1].operand, bench_operand_channel);
    cr_expect_eq(c.ops[1].operand_dt, dgrad_bf16);
    cr_expect_eq(c.ops[2].operand, bench_operand_scalar);
    cr_expect_eq(c.ops[2].alg, dgrad_post_max);
    cr_expect_eq(c.ops[3].operand, bench_operand_position);
    cr_expect_eq(c.ops[3].operand_dt, dgrad_f16);
    cr_expect_eq(c.ops[3].alg, dgrad_post_div);
    cr_expect_str_eq(c.ops[4].kind, "Add");
    cr_expect_eq(c.ops[4].operand, bench_operand_full);
    cr_expect_eq(c.ops[5].alg, dgrad_post_sub);
    cr_expect_str_eq(c.ops[6].kind, "BiasAdd");
    cr_expect_eq(c.ops[6].operand_dt, dgrad_f32);
    cr_expect_eq(bench_operand_dt(&c.ops[0], dgrad_f16), dgrad_f16);
    cr_expect_eq(bench_operand_dt(&c.ops[1], dgrad_f16), dgrad_bf16);
    /* The baseline reads f16 operands as f32 copies. */
    cr_expect_eq(bench_raw_operand_dt(&c.ops[3], dgrad_f32), dgrad_f32);
    cr_expect_eq(bench_raw_operand_dt(&c.ops[1], dgrad_f32), dgrad_bf16);
}

static void expect_refused(const char *text, const char *message) {
    bench_chain_t c;
    char err[512] = "";
    cr_expect_eq(bench_chain_parse(text, &c, err, sizeof err), -1,
            "'%s' was accepted", text);
    cr_expect(strstr(err, message) != NULL, "'%s': got \"%s\", want \"%s\"",
            text, err, message);
}

Test(bench_post_ops, refuses_what_is_not_a_chain_naming_the_post_op) {
    expect_refused("relu+frob", "post-op 'frob': unknown name 'frob'");
    expect_refused("clip:0", "post-op 'clip:0': clip takes 2 arguments (min, max)");
    expect_refused("tanh:1", "post-op 'tanh:1': tanh takes 0 arguments (none)");
    expect_refused("relu:x", "post-op 'relu:x': argument 'x' is not a finite number");
    expect_refused("elu:inf", "argument 'inf' is not a finite number");
    expect_refused("add:per_frob", "post-op 'add:per_frob': argument 'per_frob' is "
            "not a data type (f32, bf16, f16) or a policy");
    expect_refused("sum:0.5", "post-op 'sum:0.5': argument '0.5' is not a data "
            "type or the scale 1");
    expect_refused("bias:per_oc", "argument 'per_oc' is not a data type (a bias "
            "is per channel)");
    expect_refused("elu:-1", "Elu's alpha must be non-negative");
    expect_refused("soft_relu:0", "SoftPlus's beta must not be 0");
    expect_refused("hardswish:0.2:0.5", "alpha 1/6 and beta 0.5 only");
    expect_refused("relu:1:2:3:4", "more than 3 arguments");
    expect_refused("relu,tanh", "one chain per run");
    expect_refused("+", "no post-op");
    /* not cut to a shorter number */
    expect_refused("relu:0.25000000000000000000000000000000000000000000000000"
            "000000000000000000000000000000000000000000000000000000000000000"
            "000000000000000001", "longer than 127 characters");
    expect_refused("relu+relu+relu+relu+relu+relu+relu+relu+relu",
            "more than 8 post-ops");
}

Test(bench_post_ops, operands_broadcast_over_the_users_layout) {
    bench_desc_t d;
    char err[256];
    cr_assert_eq(bench_desc_parse("mb2ic3ih4iw5oc6oh7ow9kh2kw3sh1sw2ph0pw0",
            &d, err, sizeof err), 0, "%s", err);
    bench_chain_t c = parse_ok("add:per_oc+add:per_position+add:common+add");
    int64_t dims[5], st[5];
    /* per channel: [1, C, 1, 1] */
    cr_assert_eq(bench_operand_canonical(&c.ops[0], &d, 1, dims, st), 4);
    cr_expect_arr_eq(dims, ((int64_t[]){1, 6, 1, 1}), 4 * sizeof(int64_t));
    cr_expect_eq(st[1], 1);
    cr_expect_eq(bench_operand_elems(&c.ops[0], &d), 6);
    /* per position: [1, 1, H, W], W innermost */
    bench_operand_canonical(&c.ops[1], &d, 0, dims, st);
    cr_expect_arr_eq(dims, ((int64_t[]){1, 1, 7, 9}), 4 * sizeof(int64_t));
    cr_expect_eq(st[3], 1);
    cr_expect_eq(st[2], 9);
    cr_expect_eq(bench_operand_elems(&c.ops[1], &d), 63);
    cr_expect_eq(bench_operand_elems(&c.ops[2], &d), 1);
    /* full: the output's dims, dense in NXC or NCX order */
    bench_operand_canonical(&c.ops[3], &d, 1, dims, st);
    cr_expect_arr_eq(dims, ((int64_t[]){2, 6, 7, 9}), 4 * sizeof(int64_t));
    cr_expect_arr_eq(st, ((int64_t[]){378, 1, 54, 6}), 4 * sizeof(int64_t));
    bench_operand_canonical(&c.ops[3], &d, 0, dims, st);
    cr_expect_arr_eq(st, ((int64_t[]){378, 63, 9, 1}), 4 * sizeof(int64_t));
    cr_expect_eq(bench_operand_elems(&c.ops[3], &d), 756);
    /* The memory rule counts them, in their types. */
    bench_problem_size_t bare = bench_problem_size(&d, dgrad_f32, NULL);
    bench_problem_size_t z = bench_problem_size(&d, dgrad_f32, &c);
    cr_expect_eq(z.n_operands, 6 + 63 + 1 + 756);
    cr_expect_eq(z.bytes - bare.bytes, (6 + 63 + 1 + 756) * 4.0 + 756 * 4.0,
            "operands and the unfused chain's output");
    /* bf16 without a chain: its tensors, raw's output, and f32 copies of
     * all three for dgrad timed in f32; with one, no copies. */
    bench_problem_size_t b16 = bench_problem_size(&d, dgrad_bf16, NULL);
    double io = b16.n_in + b16.n_wei + b16.n_out;
    cr_expect_eq(b16.bytes, io * 2 + b16.n_out * 2 + io * 4);
    bench_problem_size_t z16 = bench_problem_size(&d, dgrad_bf16, &c);
    cr_expect_eq(z16.bytes, io * 2 + b16.n_out * 2
            + (6 + 63 + 1 + 756) * 2.0 + 756 * 2.0,
            "with a chain: operands and the unfused output in bf16, no "
            "f32 copies");
}

/* The arbiter on a fused output: 1D, N 2, C 2 -> 3, k 3, stride 2, NXC,
 * chain bias + LeakyReLU(0.5) + Add(full) computed here by hand. */
Test(bench_post_ops, arbiter_applies_the_chain) {
    bench_desc_t d;
    char err[256];
    cr_assert_eq(bench_desc_parse("mb2ic2iw4oc3ow9kw3sw2pw0", &d, err,
            sizeof err), 0, "%s", err);
    enum { N = 2, CI = 2, CO = 3, X = 4, Y = 9, K = 3 };
    float in[N * X * CI], wei[K * CO * CI], bias[CO], full[N * Y * CO],
            right[N * Y * CO], spoiled[N * Y * CO];
    for (int i = 0; i < N * X * CI; i++) in[i] = (float)(i % 5 - 2);
    for (int i = 0; i < K * CO * CI; i++) wei[i] = (float)(i % 3 - 1);
    for (int i = 0; i < CO; i++) bias[i] = (float)i - 1.5f;
    for (int i = 0; i < N * Y * CO; i++) full[i] = (float)(i % 7) / 4;
    memset(right, 0, sizeof right);
    for (int n = 0; n < N; n++)
        for (int x = 0; x < X; x++)
            for (int k = 0; k < K; k++)
                for (int ci = 0; ci < CI; ci++)
                    for (int co = 0; co < CO; co++)
                        right[(n * Y + 2 * x + k) * CO + co] +=
                                in[(n * X + x) * CI + ci]
                                * wei[(k * CO + co) * CI + ci]; /* XIO */
    for (int i = 0; i < N * Y * CO; i++) {
        float v = right[i] + bias[i % CO];
        v = v > 0 ? v : 0.5f * v;
        right[i] = v + full[i];
    }
    bench_chain_t c = parse_ok("bias+relu:0.5+add:per_tensor");
    const void *operands[3] = {bias, NULL, full};
    size_t n = N * Y * CO;
    memcpy(spoiled, right, sizeof right);
    spoiled[4] += 1;
    spoiled[n - 2] -= 3;
    bench_verdict_t v = bench_arbiter_decide(&d, dgrad_f32, bench_nxc,
            bench_xio, in, wei, right, spoiled, dgrad_f32, n, 1e-3, &c,
            operands);
    cr_expect_eq(v.checked, 2);
    cr_expect_eq(v.dgrad_wrong, 0, "the chain's result is right");
    cr_expect_eq(v.baseline_wrong, 2);
    v = bench_arbiter_decide(&d, dgrad_f32, bench_nxc, bench_xio, in, wei,
            spoiled, right, dgrad_f32, n, 1e-3, &c, operands);
    cr_expect_eq(v.dgrad_wrong, 2);
    cr_expect_eq(v.baseline_wrong, 0);
}
