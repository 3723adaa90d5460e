/*
 * The conformance runner (conformance/): the model's dialect rules on the
 * specification's examples, translations into oneDNN Graph's dialect, the
 * sweep's coverage, the report (lines, final line, JUnit) and the command
 * line, run over the core API (the `dgrad conform` command runs the same
 * code over the plugin, see the conform ctest).
 */
#define _GNU_SOURCE /* open_memstream, mkstemps */
#include <criterion/criterion.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "canonical.h"
#include "conform.h"

#ifndef DGRAD_CONFORM_SUITES_DIR
#define DGRAD_CONFORM_SUITES_DIR "conformance/suites"
#endif

/* ================================================================ model */

static cf_case_t onednn_example(const char *auto_pad, int64_t y) {
    /* oneDNN Graph's auto_pad example: diff_dst 1x1x6x6, weights 1x1x4x4,
     * stride 1. */
    cf_case_t c;
    cf_case_init(&c);
    c.kind = dgrad_op_convolution_backward_data;
    cf_case_add_attr(&c, "strides", "1,1");
    cf_case_add_attr(&c, "auto_pad", auto_pad);
    cf_case_add_attr(&c, "data_format", "NCX");
    cf_case_add_attr(&c, "weights_format", "OIX");
    char shape[64];
    snprintf(shape, sizeof shape, "1,1,%lld,%lld", (long long)y, (long long)y);
    cf_case_add_attr(&c, "dst_shape", shape);
    c.data.ndims = c.weights.ndims = 4;
    int64_t d[4] = {1, 1, 6, 6}, w[4] = {1, 1, 4, 4};
    memcpy(c.data.dims, d, sizeof d);
    memcpy(c.weights.dims, w, sizeof w);
    return c;
}

Test(conform_model, onednn_auto_pad_example) {
    cf_geom_t g;
    char why[256];
    cf_case_t c = onednn_example("SAME_UPPER", 6);
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.PB[0], 1); /* pads (1, 2) */
    cr_expect_eq(g.Y[1], 6);
    c = onednn_example("SAME_LOWER", 6);
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.PB[0], 2); /* pads (2, 1) */
    c = onednn_example("VALID", 9);
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.PB[0], 0);
    c = onednn_example("VALID", 11); /* F = 9: 11 - 9 >= stride */
    cr_expect_not(cf_model_resolve(&c, &g, why, sizeof why));
}

Test(conform_model, specification_examples) {
    cf_geom_t g;
    char why[256];
    cf_case_t c;
    cf_case_init(&c);
    c.kind = dgrad_op_convolution_backprop_data;
    cf_case_add_attr(&c, "strides", "2,2");
    cf_case_add_attr(&c, "pads_begin", "1,1");
    cf_case_add_attr(&c, "pads_end", "1,1");
    c.data.ndims = c.weights.ndims = 4;
    int64_t d[4] = {1, 20, 224, 224}, w[4] = {20, 10, 3, 3};
    memcpy(c.data.dims, d, sizeof d);
    memcpy(c.weights.dims, w, sizeof w);
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    int64_t out[4];
    cf_model_output_dims(&g, out);
    cr_expect_eq(out[1], 10);
    cr_expect_eq(out[2], 447);
    cr_expect_eq(g.PB[0], 1);

    /* ONNX SAME_UPPER without output_shape: Y = X * S. */
    cf_case_init(&c);
    c.kind = dgrad_op_conv_transpose;
    cf_case_add_attr(&c, "strides", "2");
    cf_case_add_attr(&c, "auto_pad", "SAME_UPPER");
    c.data.ndims = c.weights.ndims = 3;
    int64_t d1[3] = {1, 1, 3}, w1[3] = {1, 2, 3};
    memcpy(c.data.dims, d1, sizeof d1);
    memcpy(c.weights.dims, w1, sizeof w1);
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.Y[0], 6);
    cr_expect_eq(g.PB[0], 0); /* total 1: floor(1/2) */

    /* ONNX, output larger than natural: total = 7 - 10 = -3, SAME_UPPER
     * crops floor(-3/2) = -2 (a negative crop: the data shift right). */
    cf_case_add_attr(&c, "output_shape", "10");
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.PB[0], -2);
    cr_expect_eq(g.Y[0], 10);
}

Test(conform_model, openvino_same_upper_with_output_shape) {
    cf_geom_t g;
    char why[256];
    cf_case_t c;
    cf_case_init(&c);
    c.kind = dgrad_op_convolution_backprop_data;
    cf_case_add_attr(&c, "auto_pad", "same_upper");
    cf_case_add_attr(&c, "pads_begin", "5");
    c.data.ndims = c.weights.ndims = 3;
    int64_t d[3] = {1, 1, 5}, w[3] = {1, 2, 4};
    memcpy(c.data.dims, d, sizeof d);
    memcpy(c.weights.dims, w, sizeof w);
    c.third = cf_third_shape;
    c.n_shape = 1;
    c.shape_values[0] = 5; /* F = 8: total 3 */
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.PB[0], 2); /* the odd unit at the beginning */
    snprintf(c.attrs[0].value, sizeof c.attrs[0].value, "same_lower");
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_expect_eq(g.PB[0], 1);
}

Test(conform_model, translation_keeps_the_problem) {
    cf_geom_t g, t;
    char why[256];
    cf_case_t c = onednn_example("SAME_UPPER", 6), tr;
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why));
    for (int nxc = 0; nxc < 2; nxc++)
        for (int xio = 0; xio < 2; xio++) {
            cr_assert(cf_model_translate(&c, &g, nxc, xio, &tr, why, sizeof why),
                    "%s", why);
            cr_assert(cf_model_resolve(&tr, &t, why, sizeof why), "%s", why);
            cr_expect_eq(t.nxc, nxc);
            cr_expect_eq(t.xio, xio);
            cr_expect_eq(t.PB[0], g.PB[0]);
            cr_expect_eq(t.Y[1], g.Y[1]);
        }
    /* A negative crop has no oneDNN Graph form. */
    g.PB[0] = -1;
    cr_expect_not(cf_model_translate(&c, &g, 1, 1, &tr, why, sizeof why));
    cr_expect(strstr(why, "negative"), "%s", why);
}

/* A post-op on case @p c. */
static cf_post_t *add_post(cf_case_t *c, const char *kind, const char *attr,
        const char *value, int nd, const int64_t *dims) {
    cf_post_t *po = &c->post[c->n_post++];
    memset(po, 0, sizeof *po);
    snprintf(po->kind, sizeof po->kind, "%s", kind);
    if (attr) {
        po->n_attrs = 1;
        snprintf(po->attrs[0].name, sizeof po->attrs[0].name, "%s", attr);
        snprintf(po->attrs[0].value, sizeof po->attrs[0].value, "%s", value);
    }
    if (nd) {
        po->has_operand = 1;
        po->operand.ndims = nd;
        memcpy(po->operand.dims, dims, (size_t)nd * sizeof *dims);
    }
    return po;
}

/* oneDNN Graph's op names and attributes -> the reference's algorithms,
 * and operands -> broadcast views of the output [1, 1, 6, 6] (NCX). */
Test(conform_model, post_op_chains) {
    cf_geom_t g;
    char why[256];
    cf_case_t c = onednn_example("SAME_UPPER", 6);
    const int64_t chan[] = {1, 1, 1}, row[] = {6, 1}, full[] = {1, 1, 6, 6};
    add_post(&c, "LeakyReLU", "alpha", "0.25", 0, NULL);
    add_post(&c, "SoftPlus", NULL, NULL, 0, NULL);
    add_post(&c, "GELU", "mode", "gelu_tanh", 0, NULL);
    add_post(&c, "Add", NULL, NULL, 3, chan);
    add_post(&c, "Multiply", "auto_broadcast", "numpy", 2, row);
    add_post(&c, "Subtract", "auto_broadcast", "none", 4, full);
    add_post(&c, "BiasAdd", NULL, NULL, 1, &full[2]); /* NXC: the last axis */
    cr_assert(cf_model_resolve(&c, &g, why, sizeof why), "%s", why);
    cr_assert_eq(g.n_post, 7);
    cr_expect_eq(g.post[0].alg, dgrad_post_relu);
    cr_expect_eq(g.post[0].alpha, 0.25);
    cr_expect_eq(g.post[1].alpha, 1.0); /* SoftPlus beta's default */
    cr_expect_eq(g.post[2].alg, dgrad_post_gelu_tanh);
    cr_expect_eq(g.post[4].pos[2], 0); /* [6, 1] runs along Y */
    cr_expect_eq(g.post[4].pos[3], 1);
    cr_expect_eq(g.post[4].dims[2], 6);
    cr_expect_eq(g.post[4].dims[3], 1);
    cr_expect_eq(g.post[6].bias_axis, 3); /* NXC on NCX dims: X, not C */
    cr_expect_eq(g.post[6].dims[1], 1);
    /* ... and written for NXC/XIO: the BiasAdd is a full-rank Add there */
    cf_case_t tr;
    cf_geom_t t;
    cr_assert(cf_model_translate(&c, &g, 1, 1, &tr, why, sizeof why), "%s", why);
    cr_assert(cf_model_resolve(&tr, &t, why, sizeof why), "%s", why);
    cr_expect(cf_model_same_post(&g, &t));
    cr_expect_str_eq(tr.post[6].kind, "Add");
    cr_expect_eq(tr.post[6].operand.ndims, 4);

    /* What the specifications rule out. */
    static const struct { const char *kind, *attr, *value; int nd; } bad[] = {
            {"Relu", NULL, NULL, 0}, {"Clamp", "min", "0", 0},
            {"Elu", "alpha", "-1", 0}, {"SoftPlus", "beta", "0", 0},
            {"GELU", "mode", "tanh", 0}, {"Tanh", "alpha", "1", 0},
            {"ReLU", NULL, NULL, 3}, {"Add", NULL, NULL, 0},
            {"Divide", "auto_broadcast", "none", 3},
            {"BiasAdd", "data_format", "NCX", 2}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = onednn_example("SAME_UPPER", 6);
        add_post(&c, bad[i].kind, bad[i].attr, bad[i].value, bad[i].nd, chan);
        cr_expect_not(cf_model_resolve(&c, &g, why, sizeof why), "%s",
                bad[i].kind);
    }
    c = onednn_example("SAME_UPPER", 6);
    const int64_t five[] = {5};
    add_post(&c, "Maximum", NULL, NULL, 1, five); /* 5 against 6 */
    cr_expect_not(cf_model_resolve(&c, &g, why, sizeof why));
    cr_expect(strstr(why, "do not broadcast"), "%s", why);
}

/* ================================================================ sweep */

typedef struct tally {
    cf_sink_t sink;
    int valid, invalid, unresolved;
    int chains, lengths[4], chain_kinds[6], bias_adds, short_operands;
    int operand_types[4], invalid_chains, invalid_chains_resolved;
    int kinds[6], ranks[4], shape_inputs, deferred, any, bias, constant;
    int s32, padded, nxc, xio, same, valid_pad, groups2, depthwise;
    char first_unresolved[CF_MESSAGE];
} tally_t;

static void tally_case(cf_sink_t *s, const cf_case_t *c) {
    tally_t *t = (tally_t *)s;
    cf_geom_t g;
    char why[256];
    if (c->expect_error[0]) {
        t->invalid++;
        /* an invalid chain breaks the model's rules too */
        if (c->n_post) {
            t->invalid_chains++;
            t->invalid_chains_resolved += cf_model_resolve(c, &g, why, sizeof why);
        }
        return;
    }
    t->valid++;
    if (strstr(c->name, ",post=")) {
        t->chains++;
        t->lengths[c->n_post < 4 ? c->n_post : 3]++;
        if (c->n_post) t->chain_kinds[c->kind]++;
        for (int i = 0; i < c->n_post; i++) {
            const cf_post_t *po = &c->post[i];
            t->bias_adds += !strcmp(po->kind, "BiasAdd");
            t->short_operands += po->has_operand && strcmp(po->kind, "BiasAdd")
                    && po->operand.ndims < c->data.ndims;
            if (po->has_operand) t->operand_types[po->operand_dt]++;
        }
    }
    if (!cf_model_resolve(c, &g, why, sizeof why)) {
        if (!t->unresolved++)
            snprintf(t->first_unresolved, sizeof t->first_unresolved, "%s: %s",
                    c->name, why);
        return;
    }
    t->kinds[c->kind]++;
    t->ranks[g.nsp]++;
    t->shape_inputs += c->third == cf_third_shape;
    t->deferred += c->third == cf_third_shape && c->output.ndims < 0;
    t->any += c->output.layout_any;
    t->bias += c->third == cf_third_bias;
    t->constant += c->constant_weights;
    t->s32 += c->third == cf_third_shape && c->shape_dt == dgrad_s32;
    t->padded += c->data.has_strides;
    t->nxc += g.nxc;
    t->xio += g.xio;
    const char *ap = cf_case_attr(c, "auto_pad");
    t->same += ap && strstr(ap, "_") != NULL;
    t->valid_pad += ap && (!strcmp(ap, "VALID") || !strcmp(ap, "valid"));
    t->groups2 += g.G == 2;
    t->depthwise += g.G > 2 && g.G == g.Cin && g.G == g.Cout;
}

static void tally_skip(cf_sink_t *s, const char *a, const char *b, const char *c) {}
static void tally_error(cf_sink_t *s, const char *a, const char *b) {}

Test(conform_sweep, quick_covers_the_matrix) {
    tally_t t;
    memset(&t, 0, sizeof t);
    t.sink.on_case = tally_case;
    t.sink.on_skip = tally_skip;
    t.sink.on_error = tally_error;
    int n = cf_sweep_generate(cf_sweep_quick, &t.sink);
    cr_assert_eq(n, t.valid + t.invalid);
    /* the whole core matrix, then the matrix without dilation with chains */
    cr_expect_eq(t.valid, 5 * 3 * 3 * 3 * 2 + 5 * 3 * 3 * 3);
    cr_expect_geq(t.invalid, 40);
    cr_expect_eq(t.chains, 5 * 3 * 3 * 3);
    for (int l = 0; l < 4; l++) cr_expect_gt(t.lengths[l], 0, "chains of %d", l);
    for (int k = 1; k <= 5; k++) cr_expect_gt(t.chain_kinds[k], 0, "kind %d", k);
    cr_expect_gt(t.bias_adds, 0);
    cr_expect_gt(t.short_operands, 0);
    for (int dt = 0; dt < 3; dt++) /* the run's, f32, bf16 */
        cr_expect_gt(t.operand_types[dt], 0, "operand type %d", dt);
    cr_expect_geq(t.invalid_chains, 15);
    cr_expect_eq(t.invalid_chains_resolved, 0);
    cr_expect_eq(t.unresolved, 0, "%s", t.first_unresolved);
    for (int k = 1; k <= 5; k++) cr_expect_gt(t.kinds[k], 0, "kind %d", k);
    for (int r = 1; r <= 3; r++) cr_expect_gt(t.ranks[r], 0, "rank %d", r);
    cr_expect_gt(t.shape_inputs, 0);
    cr_expect_gt(t.deferred, 0);
    cr_expect_gt(t.any, 0);
    cr_expect_gt(t.bias, 0);
    cr_expect_gt(t.constant, 0);
    cr_expect_gt(t.s32, 0);
    cr_expect_gt(t.padded, 0);
    cr_expect_gt(t.nxc, 0);
    cr_expect_gt(t.xio, 0);
    cr_expect_gt(t.same, 0);
    cr_expect_gt(t.valid_pad, 0);
    cr_expect_gt(t.groups2, 0);
    cr_expect_gt(t.depthwise, 0);
}

/* ===================================================== runner and report */

/* Runs `conform ARGS` over the plugin's table linked in; returns the exit status and the
 * output (caller frees). */
static int run_cli(char **out_text, int argc, char **argv) {
    char *text = NULL, *err_text = NULL;
    size_t size = 0, err_size = 0;
    FILE *out = open_memstream(&text, &size);
    FILE *err = open_memstream(&err_text, &err_size);
    cf_cli_t cli;
    int status = cf_cli_parse(argc, argv, &cli, out, err);
    if (status < 0) {
        cf_backend_t b;
        cf_backend_core_init(&b);
        status = cf_cli_run(&cli, &b, out, err);
    }
    cf_cli_free(&cli);
    fclose(out);
    fclose(err);
    size_t n = strlen(text) + strlen(err_text) + 1;
    *out_text = malloc(n);
    snprintf(*out_text, n, "%s%s", text, err_text);
    free(text);
    free(err_text);
    return status;
}

static int matches(const char *text, const char *pattern) {
    regex_t re;
    cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0);
    int ok = regexec(&re, text, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

Test(conform_runner, committed_suites_pass_in_f32) {
    char *out;
    char *argv[] = {"conform", "--dtypes", "f32", "--max-elements", "100000",
            DGRAD_CONFORM_SUITES_DIR "/vectors", DGRAD_CONFORM_SUITES_DIR "/graph",
            DGRAD_CONFORM_SUITES_DIR "/ir/padding_rules.xml",
            DGRAD_CONFORM_SUITES_DIR "/ir/decoder_net.xml"};
    int status = run_cli(&out, 9, argv);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(matches(out, "^[1-9][0-9]* passed, 0 failed, [0-9]+ skipped$"),
            "%s", out);
    free(out);
}

Test(conform_runner, verbose_lines_and_final_line) {
    char *out;
    char *argv[] = {"conform", "-v", "--dtypes=bf16", "--formats", "native",
            "--filter", "same_upper_pads_1_2",
            DGRAD_CONFORM_SUITES_DIR "/vectors/edge_cases.json"};
    int status = run_cli(&out, 8, argv);
    cr_expect_eq(status, 0, "%s", out);
    cr_expect(matches(out, "^PASS [^ ]*edge_cases.json#onednn_same_upper_pads_1_2 "
                           "bf16 native ok max_abs=0 max_rel=0 first=- impl "),
            "%s", out);
    cr_expect(matches(out, "^1 passed, 0 failed, 0 skipped$"), "%s", out);
    free(out);
}

/* A backend that breaks one element (or a gap) of the core's output. */
static cf_backend_t core;
static int corrupt_gap;

static dgrad_status_t corrupt_execute(void *ctx, void *compiled, size_t n,
        const void *const *inputs, void *output, size_t capacity,
        dgrad_logical_tensor_t *lt) {
    dgrad_status_t st = core.execute(ctx, compiled, n, inputs, output,
            capacity, lt);
    if (st == dgrad_success && lt->data_type == dgrad_f32) {
        float *o = output;
        if (corrupt_gap) o[4] = 0.0f; /* row 0 has 4 elements, pitch 6 */
        else o[lt->strides[1] + 2 * lt->strides[2]] += 1.0f;
    }
    return st;
}

static char *graph_file(void) {
    /* NCX, padded output rows (pitch 6 for width 4): the last element of
     * the buffer is a gap. */
    static const char *text =
            "{\"graph\": [{\"id\": 0, \"name\": \"x\", \"kind\": "
            "\"ConvolutionBackwardData\", \"attrs\": {"
            "\"strides\": {\"type\": \"s64[]\", \"value\": [1, 1]},"
            "\"data_format\": {\"type\": \"string\", \"value\": \"NCX\"},"
            "\"weights_format\": {\"type\": \"string\", \"value\": \"OIX\"},"
            "\"dst_shape\": {\"type\": \"s64[]\", \"value\": [1, 2, 4, 4]}},"
            "\"inputs\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 3, 3, 3]},"
            "{\"id\": 1, \"dtype\": \"f32\", \"shape\": [3, 2, 2, 2]}],"
            "\"outputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 4, 4],"
            " \"stride\": [48, 24, 6, 1]}]}]}";
    char *path = malloc(64);
    snprintf(path, 64, "/tmp/dgrad_conform_XXXXXX.json");
    int fd = mkstemps(path, 5);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* The graph above with a chain after the op: Multiply by a per-channel
 * operand, Add of a scalar (one fused partition). */
static char *chain_file(void) {
    static const char *text =
            "{\"graph\": [{\"id\": 0, \"name\": \"x\", \"kind\": "
            "\"ConvolutionBackwardData\", \"attrs\": {"
            "\"strides\": {\"type\": \"s64[]\", \"value\": [1, 1]},"
            "\"data_format\": {\"type\": \"string\", \"value\": \"NCX\"},"
            "\"weights_format\": {\"type\": \"string\", \"value\": \"OIX\"},"
            "\"dst_shape\": {\"type\": \"s64[]\", \"value\": [1, 2, 4, 4]}},"
            "\"inputs\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 3, 3, 3]},"
            "{\"id\": 1, \"dtype\": \"f32\", \"shape\": [3, 2, 2, 2]}],"
            "\"outputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 4, 4]}]},"
            "{\"id\": 1, \"name\": \"m\", \"kind\": \"Multiply\", \"attrs\": {},"
            "\"inputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 4, 4]},"
            "{\"id\": 3, \"dtype\": \"f32\", \"shape\": [2, 1, 1]}],"
            "\"outputs\": [{\"id\": 4, \"dtype\": \"f32\", \"shape\": [1, 2, 4, 4]}]},"
            "{\"id\": 2, \"name\": \"a\", \"kind\": \"Add\", \"attrs\": {},"
            "\"inputs\": [{\"id\": 4, \"dtype\": \"f32\", \"shape\": [1, 2, 4, 4]},"
            "{\"id\": 5, \"dtype\": \"f32\", \"shape\": [1]}],"
            "\"outputs\": [{\"id\": 6, \"dtype\": \"f32\", \"shape\": [1, 2, 4, 4],"
            " \"stride\": [48, 24, 6, 1]}]}]}";
    char *path = malloc(64);
    snprintf(path, 64, "/tmp/dgrad_conform_XXXXXX.json");
    int fd = mkstemps(path, 5);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static int chain_case;
static int abi_1_1; /* the backend as over a plugin without ABI 1.2 */

static int run_corrupt(int gap, char **out_text, const char *junit) {
    cf_backend_core_init(&core);
    cf_backend_t bad = core;
    bad.execute = corrupt_execute;
    if (abi_1_1) bad.op_append_post_op = NULL, bad.partition_fused = NULL;
    corrupt_gap = gap;
    char *path = chain_case ? chain_file() : graph_file();
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    char *argv[] = {"conform", "--dtypes", "f32,bf16", "--formats", "native",
            path, "--junit", (char *)junit};
    cf_cli_t cli;
    int status = cf_cli_parse(junit ? 8 : 6, argv, &cli, out, out);
    cr_assert_eq(status, -1);
    status = cf_cli_run(&cli, &bad, out, out);
    cf_cli_free(&cli);
    fclose(out);
    unlink(path);
    free(path);
    *out_text = text;
    return status;
}

Test(conform_runner, mismatch_is_reported_with_its_index) {
    char *out;
    int status = run_corrupt(0, &out, NULL);
    cr_expect_eq(status, 1);
    /* One failing line (f32), the bf16 run passes and is not shown. */
    cr_expect(matches(out, "^FAIL [^ ]*#op0:x f32 native mismatch max_abs=1 "
                           "max_rel=[^ ]+ first=\\[0,1,2,0\\] 1 of 32 elements"),
            "%s", out);
    cr_expect(matches(out, "^1 passed, 1 failed, 0 skipped$"), "%s", out);
    free(out);
}

/* The chain's judge: an element off by one after the chain fails, at its
 * index, in the fused partition's case. */
Test(conform_runner, chain_mismatch_is_reported_with_its_index) {
    char *out;
    chain_case = 1;
    int status = run_corrupt(0, &out, NULL);
    chain_case = 0;
    cr_expect_eq(status, 1);
    cr_expect(matches(out, "^FAIL [^ ]*#op0:x\\+op1:Multiply\\+op2:Add f32 native "
                           "mismatch .*first=\\[0,1,2,0\\] 1 of 32 elements.*"
                           "post-op chain"), "%s", out);
    cr_expect(matches(out, "^1 passed, 1 failed, 0 skipped$"), "%s", out);
    free(out);
}

/* A plugin older than ABI 1.2 has no post-ops: a chain is skipped. */
Test(conform_runner, chains_need_abi_1_2) {
    char *out;
    chain_case = abi_1_1 = 1;
    int status = run_corrupt(0, &out, NULL);
    chain_case = abi_1_1 = 0;
    cr_expect_eq(status, 1, "%s", out); /* nothing ran */
    cr_expect(matches(out, "^0 passed, 0 failed, 2 skipped$"), "%s", out);
    free(out);
}

Test(conform_runner, writing_a_gap_is_a_failure) {
    char *out;
    int status = run_corrupt(1, &out, NULL);
    cr_expect_eq(status, 1);
    cr_expect(matches(out, "^FAIL [^ ]*#op0:x f32 native gap_written .* wrote "
                           "offset 4 of the output"), "%s", out);
    free(out);
}

Test(conform_runner, junit_report) {
    char junit[] = "/tmp/dgrad_conform_junit_XXXXXX.xml";
    int fd = mkstemps(junit, 4);
    close(fd);
    char *out;
    cr_expect_eq(run_corrupt(0, &out, junit), 1);
    free(out);
    xmlDocPtr doc = xmlReadFile(junit, NULL, XML_PARSE_NONET);
    cr_assert_not_null(doc);
    xmlNodePtr root = xmlDocGetRootElement(doc);
    cr_expect_str_eq((const char *)root->name, "testsuites");
    xmlNodePtr suite = root->children;
    while (suite && suite->type != XML_ELEMENT_NODE) suite = suite->next;
    cr_assert_not_null(suite);
    xmlChar *tests = xmlGetProp(suite, BAD_CAST "tests");
    xmlChar *failures = xmlGetProp(suite, BAD_CAST "failures");
    cr_expect_str_eq((const char *)tests, "2");
    cr_expect_str_eq((const char *)failures, "1");
    xmlFree(tests);
    xmlFree(failures);
    int n_failure = 0;
    for (xmlNodePtr tc = suite->children; tc; tc = tc->next)
        for (xmlNodePtr f = tc->children; f; f = f->next)
            n_failure += f->type == XML_ELEMENT_NODE
                    && !xmlStrcmp(f->name, BAD_CAST "failure");
    cr_expect_eq(n_failure, 1);
    xmlFreeDoc(doc);
    unlink(junit);
}

Test(conform_runner, unreadable_files_are_failures) {
    char *out;
    char *argv[] = {"conform", "--dtypes", "f32", "/nonexistent/case.json"};
    cr_expect_eq(run_cli(&out, 4, argv), 1);
    cr_expect(matches(out, "^FAIL /nonexistent/case.json - - unreadable .*"
                           "/nonexistent/case.json: unreadable: No such file"),
            "%s", out);
    cr_expect(matches(out, "^0 passed, 1 failed, 0 skipped$"), "%s", out);
    free(out);
}

Test(conform_runner, huge_tensors_are_compiled_not_run) {
    /* Small dims with an enormous stride, and the specification's 3D
     * example (1x8x447^3): compiled, dims checked, skipped. */
    static const char *text =
            "{\"graph\": [{\"id\": 0, \"name\": \"x\", \"kind\": "
            "\"ConvolutionBackwardData\", \"attrs\": {"
            "\"data_format\": {\"type\": \"string\", \"value\": \"NCX\"},"
            "\"weights_format\": {\"type\": \"string\", \"value\": \"OIX\"},"
            "\"dst_shape\": {\"type\": \"s64[]\", \"value\": [1, 1, 3]}},"
            "\"inputs\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 1, 2],"
            " \"stride\": [1, 1, 1099511627776]},"
            "{\"id\": 1, \"dtype\": \"f32\", \"shape\": [1, 1, 2]}],"
            "\"outputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 1, 3]}]}]}";
    char path[] = "/tmp/dgrad_conform_XXXXXX.json";
    int fd = mkstemps(path, 5);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char *out;
    char *argv[] = {"conform", "-v", "--dtypes", "f32", path,
            DGRAD_CONFORM_SUITES_DIR "/ir/spec_group_convolution_backprop_data_3d.xml"};
    /* Nothing executed: "no case ran" is not a success. */
    cr_expect_eq(run_cli(&out, 6, argv), 1, "%s", out);
    cr_expect(matches(out, "^dgrad conform: no case ran \\(2 skipped\\)$"),
            "%s", out);
    cr_expect(matches(out, "^SKIP [^ ]*#op0:x f32 native too_large .* spans "
                           "1099511627777 elements"), "%s", out);
    cr_expect(matches(out, "^SKIP [^ ]*spec_group_convolution_backprop_data_3d"
                           ".xml#layer5:upsampling_node f32 native too_large "),
            "%s", out);
    cr_expect(matches(out, "^0 passed, 0 failed, 2 skipped$"), "%s", out);
    free(out);
    unlink(path);
}

/* ===================================================================== cli */

Test(conform_cli, help_and_usage_errors) {
    char *out;
    char *help[] = {"conform", "--help"};
    cr_expect_eq(run_cli(&out, 2, help), 0);
    cr_expect(strstr(out, "usage: dgrad conform [options] PATH...") != NULL);
    cr_expect(strstr(out, "1 when something\nfailed, no case ran") != NULL,
            "%s", out);
    cr_expect(strstr(out, "are ignored (--mode, --mode-modifier, --engine,")
                    != NULL, "%s", out);
    free(out);
    struct {
        int argc;
        char *argv[4];
        const char *message;
    } bad[] = {
            {1, {"conform"}, "nothing to run"},
            {2, {"conform", "--frobnicate"}, "unknown option '--frobnicate'"},
            {3, {"conform", "--dtypes", "f64"}, "bad --dtypes 'f64'"},
            {3, {"conform", "--sweep", "medium"}, "bad --sweep 'medium'"},
            {3, {"conform", "--formats", "NXC"}, "bad --formats 'NXC'"},
            {2, {"conform", "--junit"}, "option '--junit' needs a value"},
            {3, {"conform", "--max-elements", "0"}, "bad --max-elements '0'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(run_cli(&out, bad[i].argc, bad[i].argv), 2, "%s", out);
        cr_expect(strstr(out, bad[i].message) != NULL, "'%s' lacks '%s'", out,
                bad[i].message);
        free(out);
    }
}

/* Nothing that ran is not a success: an empty folder, or files whose ops
 * are all of other kinds, exit 1 with "no case ran". */
Test(conform_cli, no_case_ran_is_a_failure) {
    char dir[] = "/tmp/dgrad_conform_empty_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *out;
    char *argv[] = {"conform", dir};
    cr_expect_eq(run_cli(&out, 2, argv), 1, "%s", out);
    cr_expect(matches(out, "^0 passed, 0 failed, 0 skipped$"), "%s", out);
    cr_expect(matches(out, "^dgrad conform: no case ran \\(0 skipped\\)$"),
            "%s", out);
    free(out);
    char path[128];
    snprintf(path, sizeof path, "%s/relu.json", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("{\"graph\": [{\"id\": 0, \"name\": \"r\", \"kind\": \"ReLU\","
          " \"inputs\": [], \"outputs\": []}]}", f);
    fclose(f);
    cr_expect_eq(run_cli(&out, 2, argv), 1, "%s", out);
    cr_expect(matches(out, "^dgrad conform: no case ran \\(1 skipped\\)$"),
            "%s", out);
    free(out);
    unlink(path);
    rmdir(dir);
}

/* A batch line's --dt chooses the one type its cases run in; a type
 * --dtypes leaves out is a skip that says so. */
Test(conform_cli, batch_dt_picks_the_type) {
    char dir[] = "/tmp/dgrad_conform_dt_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char batch[128];
    snprintf(batch, sizeof batch, "%s/harness", dir);
    FILE *f = fopen(batch, "w");
    cr_assert_not_null(f);
    fprintf(f, "--reset --dt=bf16 --case=%s/graph/output_padding_2x2_stride_2.json\n",
            DGRAD_CONFORM_SUITES_DIR);
    fclose(f);
    char *out;
    char *argv[] = {"conform", "-v", "--formats", "native", batch};
    cr_expect_eq(run_cli(&out, 5, argv), 0, "%s", out);
    cr_expect(matches(out, "^PASS [^ ]*harness:1:[^ ]*#op0:output_padding_2x2 "
                           "bf16 native ok"), "%s", out);
    cr_expect(matches(out, "^1 passed, 0 failed, 0 skipped$"), "%s", out);
    free(out);
    char *only_f32[] = {"conform", "-v", "--dtypes", "f32", batch};
    cr_expect_eq(run_cli(&out, 5, only_f32), 1, "%s", out);
    cr_expect(matches(out, "^SKIP [^ ]*#op0:output_padding_2x2 - - skipped .*"
                           "runs in bf16 only \\(its --dt\\), which --dtypes "
                           "leaves out"), "%s", out);
    free(out);
    unlink(batch);
    rmdir(dir);
}
