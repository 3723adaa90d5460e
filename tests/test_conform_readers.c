/*
 * The conformance readers (conformance/reader_*.c): a valid file of each
 * kind gives the cases it describes; each malformed form (truncated, wrong
 * types, missing fields, unknown attribute, huge dims, ...) gives one clear
 * error with the file name and the position, and never a crash.
 */
#define _GNU_SOURCE /* mkstemps */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conform.h"

/* A sink that keeps what it is given (cases without their values). */
typedef struct collect {
    cf_sink_t sink;
    int n_cases, n_skips, n_errors;
    cf_case_t cases[8];
    char skips[8][512];
    char errors[8][CF_MESSAGE];
} collect_t;

static void on_case(cf_sink_t *s, const cf_case_t *c) {
    collect_t *k = (collect_t *)s;
    if (k->n_cases < 8) {
        cf_case_t *copy = &k->cases[k->n_cases];
        *copy = *c;
        /* Values belong to the reader; keep a private copy of a few. */
        cf_tensor_t *t[] = {&copy->data, &copy->weights, &copy->bias,
                &copy->output, &copy->expected};
        for (int i = 0; i < 5 + copy->n_post; i++) {
            cf_tensor_t *x = i < 5 ? t[i] : &copy->post[i - 5].operand;
            if (!x->data) continue;
            double *d = malloc(x->count * sizeof *d + 1);
            memcpy(d, x->data, x->count * sizeof *d);
            x->data = d;
        }
        copy->graph = NULL; /* the reader's, gone after the call */
    }
    k->n_cases++;
}

static void on_skip(cf_sink_t *s, const char *suite, const char *name,
        const char *reason) {
    collect_t *k = (collect_t *)s;
    if (k->n_skips < 8)
        snprintf(k->skips[k->n_skips], sizeof k->skips[0], "%s: %s", name, reason);
    k->n_skips++;
}

static void on_error(cf_sink_t *s, const char *suite, const char *message) {
    collect_t *k = (collect_t *)s;
    if (k->n_errors < 8)
        snprintf(k->errors[k->n_errors], sizeof k->errors[0], "%s", message);
    k->n_errors++;
}

static void collect_init(collect_t *k) {
    memset(k, 0, sizeof *k);
    k->sink.on_case = on_case;
    k->sink.on_skip = on_skip;
    k->sink.on_error = on_error;
}

static void collect_free(collect_t *k) {
    for (int i = 0; i < k->n_cases && i < 8; i++) cf_case_free(&k->cases[i]);
}

/* Writes @p text to a fresh temporary file with @p suffix. */
static char *temp_file(const char *suffix, const char *text) {
    char *path = malloc(64);
    snprintf(path, 64, "/tmp/dgrad_conform_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    cr_assert_geq(fd, 0);
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
    return path;
}

typedef int (*reader_fn)(const char *path, cf_sink_t *sink);

/* Reads @p text as a file; returns the collected result. */
static void read_text(reader_fn read, const char *suffix, const char *text,
        collect_t *k, char **path) {
    collect_init(k);
    *path = temp_file(suffix, text);
    read(*path, &k->sink);
}

/* One error, naming the file, the position and the words given. */
static void expect_one_error(const collect_t *k, const char *path,
        const char *position, const char *what, const char *rule) {
    cr_assert_eq(k->n_errors, 1, "%d errors, first: %s", k->n_errors,
            k->errors[0]);
    char prefix[256];
    snprintf(prefix, sizeof prefix, "%s:%s: %s: ", path, position, what);
    cr_expect(!strncmp(k->errors[0], prefix, strlen(prefix)),
            "error '%s' does not start with '%s'", k->errors[0], prefix);
    cr_expect(strstr(k->errors[0], rule), "error '%s' lacks '%s'",
            k->errors[0], rule);
}

static void cleanup(collect_t *k, char *path) {
    collect_free(k);
    unlink(path);
    free(path);
}

/* ================================================================ vectors */

static const char *valid_vectors =
        "{\n"
        " \"source\": \"test\",\n"
        " \"cases\": [\n"
        "  {\"name\": \"onnx\", \"op\": \"ConvTranspose\", \"dtype\": \"f32\",\n"
        "   \"attrs\": {\"strides\": [2], \"pads_begin\": [1], \"pads_end\": [0],\n"
        "             \"auto_pad\": \"explicit\", \"groups\": 1},\n"
        "   \"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1.0, 2.0]},\n"
        "   \"weights\": {\"shape\": [1, 1, 2], \"data\": [1.0, -1.0]},\n"
        "   \"bias\": {\"shape\": [1], \"data\": [0.5]},\n"
        "   \"output_shape\": null,\n"
        "   \"expected\": {\"shape\": [1, 1, 3], \"data\": [-0.5, 2.5, -1.5]}},\n"
        "  {\"name\": \"ov\", \"op\": \"ConvolutionBackpropData\",\n"
        "   \"attrs\": {\"strides\": [1]},\n"
        "   \"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1, 2]},\n"
        "   \"weights\": {\"shape\": [1, 1, 1], \"data\": [3]},\n"
        "   \"output_shape\": [4],\n"
        "   \"expected\": {\"shape\": [1, 1, 4], \"data\": [0, 3, 6, 0]}},\n"
        "  {\"name\": \"bad\", \"op\": \"ConvTranspose\", \"attrs\": {},\n"
        "   \"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1]},\n"
        "   \"weights\": {\"shape\": [1, 1, 1], \"data\": [3]},\n"
        "   \"expected\": {\"shape\": [1, 1, 2], \"data\": [3, 6]}},\n"
        "  {\"name\": \"rejected\", \"op\": \"ConvolutionBackwardData\",\n"
        "   \"attrs\": {\"strides\": [0], \"data_format\": \"NCX\"},\n"
        "   \"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1, 2]},\n"
        "   \"weights\": {\"shape\": [1, 1, 1], \"data\": [3]},\n"
        "   \"dst_shape_input\": [1, 1, 2],\n"
        "   \"expect_error\": \"invalid_arguments\"}\n"
        " ],\n"
        " \"skipped\": [{\"name\": \"later\", \"reason\": \"not yet\"}]\n"
        "}\n";

Test(conform_vectors, valid_file_gives_its_cases) {
    collect_t k;
    char *path;
    read_text(cf_read_vectors_file, ".json", valid_vectors, &k, &path);
    /* The bad case is reported on its own; the others still come. */
    cr_assert_eq(k.n_cases, 3);
    cr_assert_eq(k.n_skips, 1);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], "$.cases[2].diff_dst.data: inconsistent: "
                                  "1 values for shape of 2 elements"),
            "%s", k.errors[0]);
    cr_expect(strstr(k.skips[0], "#later: not yet"), "%s", k.skips[0]);

    const cf_case_t *onnx = &k.cases[0];
    cr_expect_eq(onnx->kind, dgrad_op_conv_transpose);
    /* ONNX names: pads = begin ++ end, auto_pad NOTSET, group. */
    cr_expect_str_eq(cf_case_attr(onnx, "pads"), "1,0");
    cr_expect_str_eq(cf_case_attr(onnx, "auto_pad"), "NOTSET");
    cr_expect_str_eq(cf_case_attr(onnx, "group"), "1");
    cr_expect_null(cf_case_attr(onnx, "pads_begin"));
    cr_expect_eq(onnx->third, cf_third_bias);
    cr_expect_eq(onnx->bias.data[0], 0.5);
    cr_expect_eq(onnx->expected.count, 3);
    cr_expect_eq(onnx->expected.data[1], 2.5);
    cr_expect_eq(onnx->output.ndims, DGRAD_UNKNOWN_NDIMS);
    cr_expect(strstr(onnx->name, "#onnx") != NULL);

    const cf_case_t *ov = &k.cases[1];
    cr_expect_eq(ov->third, cf_third_shape); /* OpenVINO: an input */
    cr_expect_eq(ov->n_shape, 1);
    cr_expect_eq(ov->shape_values[0], 4);

    const cf_case_t *rej = &k.cases[2];
    cr_expect_str_eq(rej->expect_error, "invalid_arguments");
    cr_expect_str_eq(cf_case_attr(rej, "strides"), "0"); /* kept for dgrad */
    cr_expect_eq(rej->n_shape, 3);
    cleanup(&k, path);
}

/* The post_ops field: kinds, attributes (numbers as text that reads back
 * the same), operands with their own type and strides. */
static const char *post_op_vectors =
        "{\"cases\": [{\"name\": \"chain\", \"op\": \"ConvTranspose\",\n"
        " \"attrs\": {\"strides\": [2]},\n"
        " \"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1, 2]},\n"
        " \"weights\": {\"shape\": [1, 2, 2], \"data\": [1, 1, 1, 1]},\n"
        " \"post_ops\": [{\"kind\": \"LeakyReLU\", \"attrs\": {\"alpha\": 0.1}},\n"
        "   {\"kind\": \"Add\", \"attrs\": {\"auto_broadcast\": \"numpy\"},\n"
        "    \"operand\": {\"shape\": [2, 1], \"data\": [1, 2], \"dtype\": \"bf16\",\n"
        "                \"strides\": [3, 1]}}],\n"
        " \"expected\": {\"shape\": [1, 2, 4], \"data\": [2, 2, 3, 3, 3, 3, 4, 4]}}]}\n";

Test(conform_vectors, post_ops) {
    collect_t k;
    char *path;
    read_text(cf_read_vectors_file, ".json", post_op_vectors, &k, &path);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 1);
    const cf_case_t *c = &k.cases[0];
    cr_assert_eq(c->n_post, 2);
    cr_expect_str_eq(c->post[0].kind, "LeakyReLU");
    cr_expect_str_eq(c->post[0].attrs[0].name, "alpha");
    cr_expect_eq(strtod(c->post[0].attrs[0].value, NULL), 0.1);
    cr_expect_not(c->post[0].has_operand);
    cr_expect_str_eq(c->post[1].attrs[0].value, "numpy");
    cr_expect(c->post[1].has_operand);
    cr_expect_eq(c->post[1].operand_dt, dgrad_bf16);
    cr_expect_eq(c->post[1].operand.ndims, 2);
    cr_expect_eq(c->post[1].operand.data[1], 2);
    cr_expect(c->post[1].operand.has_strides);
    cr_expect_eq(c->post[1].operand.strides[0], 3);
    cleanup(&k, path);

    /* Malformed post-ops name their position. */
    static const struct { const char *from, *to, *where, *what, *rule; } bad[] = {
            {"\"kind\": \"LeakyReLU\", ", "\"knd\": \"LeakyReLU\", ",
                    "$.cases[0].post_ops[0]", "missing field", "kind"},
            {"\"attrs\": {\"alpha\": 0.1}", "\"alpha\": 0.1",
                    "$.cases[0].post_ops[0].alpha", "unknown field",
                    "'kind', 'attrs' and 'operand'"},
            {"[3, 1]", "[3]", "$.cases[0].post_ops[1].operand.strides",
                    "inconsistent", "1 strides for 2 dims"},
            {"\"bf16\"", "\"f64\"", "$.cases[0].post_ops[1].operand.dtype",
                    "bad value", "'f64'"},
            {"{\"alpha\": 0.1}", "{\"alpha\": [0.1]}",
                    "$.cases[0].post_ops[0].attrs.alpha", "wrong type",
                    "a number or a string"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[2048];
        const char *at = strstr(post_op_vectors, bad[i].from);
        cr_assert_not_null(at, "%s", bad[i].from);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - post_op_vectors),
                post_op_vectors, bad[i].to, at + strlen(bad[i].from));
        read_text(cf_read_vectors_file, ".json", text, &k, &path);
        expect_one_error(&k, path, bad[i].where, bad[i].what, bad[i].rule);
        cr_expect_eq(k.n_cases, 0);
        cleanup(&k, path);
    }
}

Test(conform_vectors, truncated_file) {
    collect_t k;
    char *path;
    char text[600];
    snprintf(text, sizeof text, "%.300s", valid_vectors);
    read_text(cf_read_vectors_file, ".json", text, &k, &path);
    cr_expect_eq(k.n_cases, 0);
    cr_assert_eq(k.n_errors, 1);
    /* The error is at the end of the input: its last line. */
    int line = 1;
    for (const char *p = text; *p; p++) line += *p == '\n';
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s:%d:", path, line);
    cr_expect(!strncmp(k.errors[0], prefix, strlen(prefix)), "%s", k.errors[0]);
    cr_expect(strstr(k.errors[0], ": malformed JSON: "), "%s", k.errors[0]);
    cleanup(&k, path);
}

static const char *one_case_fmt =
        "{\"cases\": [{\"name\": \"c\", \"op\": \"ConvolutionBackpropData\",\n"
        " \"attrs\": {%s},\n"
        " %s\n"
        " \"expected\": {\"shape\": [1, 1, 3], \"data\": [0, 0, 0]}}]}\n";
static const char *good_tensors =
        "\"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1, 2]},"
        " \"weights\": {\"shape\": [1, 1, 2], \"data\": [1, 1]},";

static void read_one_case(const char *attrs, const char *tensors, collect_t *k,
        char **path) {
    char text[2048];
    snprintf(text, sizeof text, one_case_fmt, attrs, tensors);
    read_text(cf_read_vectors_file, ".json", text, k, path);
}

Test(conform_vectors, wrong_types) {
    collect_t k;
    char *path;
    read_one_case("\"strides\": \"1\"", good_tensors, &k, &path);
    expect_one_error(&k, path, "$.cases[0].attrs.strides", "wrong type",
            "expected a list of integers, got a string");
    cleanup(&k, path);
    read_one_case("\"strides\": [1.5]", good_tensors, &k, &path);
    expect_one_error(&k, path, "$.cases[0].attrs.strides[0]", "wrong type",
            "expected an integer, got a real number");
    cleanup(&k, path);
    read_one_case("", "\"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1, \"x\"]},"
            " \"weights\": {\"shape\": [1, 1, 2], \"data\": [1, 1]},", &k, &path);
    expect_one_error(&k, path, "$.cases[0].diff_dst.data[1]", "wrong type",
            "expected a number, got a string");
    cleanup(&k, path);
}

Test(conform_vectors, missing_fields) {
    collect_t k;
    char *path;
    read_one_case("", "\"diff_dst\": {\"shape\": [1, 1, 2], \"data\": [1, 2]},",
            &k, &path);
    expect_one_error(&k, path, "$.cases[0]", "missing field", "'weights'");
    cleanup(&k, path);
    read_text(cf_read_vectors_file, ".json", "{\"cases\": [{\"op\": \"x\"}]}",
            &k, &path);
    expect_one_error(&k, path, "$.cases[0]", "missing field", "'name'");
    cleanup(&k, path);
}

Test(conform_vectors, unknown_attribute) {
    collect_t k;
    char *path;
    read_one_case("\"padding\": [1]", good_tensors, &k, &path);
    expect_one_error(&k, path, "$.cases[0].attrs.padding", "unknown attribute",
            "'padding' is not an attribute");
    cleanup(&k, path);
    /* An attribute of another dialect. */
    read_one_case("\"data_format\": \"NCX\"", good_tensors, &k, &path);
    expect_one_error(&k, path, "$.cases[0].attrs.data_format",
            "unknown attribute", "does not apply to ConvolutionBackpropData");
    cleanup(&k, path);
}

Test(conform_vectors, huge_dims) {
    collect_t k;
    char *path;
    read_one_case("", "\"diff_dst\": {\"shape\": [1, 1, 4294967296, 4294967296],"
            " \"data\": []}, \"weights\": {\"shape\": [1, 1, 2], \"data\": [1, 1]},",
            &k, &path);
    expect_one_error(&k, path, "$.cases[0].diff_dst.shape", "too large",
            "more than 2^40 elements");
    cleanup(&k, path);
    /* Beyond 64 bits: jansson's own error, with its position. */
    read_one_case("", "\"diff_dst\": {\"shape\": [1, 1, 99999999999999999999],"
            " \"data\": []}, \"weights\": {\"shape\": [1, 1, 2], \"data\": [1, 1]},",
            &k, &path);
    expect_one_error(&k, path, "3:50", "malformed JSON", "too big integer");
    cleanup(&k, path);
    read_one_case("", "\"diff_dst\": {\"shape\": [1, 1, 1, 1, 1, 1, 1, 1, 1],"
            " \"data\": [1]}, \"weights\": {\"shape\": [1, 1, 2], \"data\": [1, 1]},",
            &k, &path);
    expect_one_error(&k, path, "$.cases[0].diff_dst.shape", "too large",
            "9 values, at most 8");
    cleanup(&k, path);
}

Test(conform_vectors, not_a_vector_file) {
    collect_t k;
    char *path;
    read_text(cf_read_vectors_file, ".json", "[1, 2]", &k, &path);
    expect_one_error(&k, path, "$", "wrong type", "expected an object");
    cleanup(&k, path);
    read_text(cf_read_vectors_file, ".json", "", &k, &path);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], "malformed JSON"), "%s", k.errors[0]);
    cleanup(&k, path);
    collect_init(&k);
    cf_read_vectors_file("/nonexistent/dir/v.json", &k.sink);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(!strncmp(k.errors[0], "/nonexistent/dir/v.json: unreadable: ",
                      37), "%s", k.errors[0]);
}

Test(conform_vectors, duplicate_keys_are_rejected) {
    collect_t k;
    char *path;
    read_one_case("\"strides\": [1], \"strides\": [2]", good_tensors, &k, &path);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], "malformed JSON: duplicate object key"),
            "%s", k.errors[0]);
    cleanup(&k, path);
}

/* ================================================================= graphs */

static const char *valid_graph =
        "{\"version\": \"3.0.0\", \"engine_kind\": \"cpu\", \"fpmath_mode\": \"strict\",\n"
        " \"input_ports\": [0, 1, 3], \"output_ports\": [2],\n"
        " \"graph\": [\n"
        "  {\"id\": 7, \"name\": \"relu\", \"kind\": \"ReLU\", \"attrs\": {},\n"
        "   \"inputs\": [], \"outputs\": []},\n"
        "  {\"id\": 0, \"name\": \"bwd\", \"kind\": \"ConvolutionBackwardData\",\n"
        "   \"attrs\": {\"strides\": {\"type\": \"s64[]\", \"value\": [2, 2]},\n"
        "             \"groups\": {\"type\": \"s64\", \"value\": 1},\n"
        "             \"auto_pad\": {\"type\": \"string\", \"value\": \"SAME_UPPER\"},\n"
        "             \"output_padding\": {\"type\": \"s64[]\", \"value\": [0,0,0,0,0,0,0,0,0,0,0,0]},\n"
        "             \"data_format\": {\"type\": \"string\", \"value\": \"NCX\"}},\n"
        "   \"inputs\": [\n"
        "     {\"id\": 0, \"dtype\": \"bf16\", \"shape\": [1, 4, 3, 3],\n"
        "      \"stride\": [36, 1, 12, 4], \"layout_type\": \"strided\", \"property_type\": \"undef\"},\n"
        "     {\"id\": 1, \"dtype\": \"bf16\", \"shape\": [3, 3, 2, 4],\n"
        "      \"stride\": [], \"layout_type\": \"strided\", \"property_type\": \"constant\"},\n"
        "     {\"id\": 3, \"dtype\": \"s32\", \"shape\": [4], \"stride\": [1],\n"
        "      \"layout_type\": \"strided\", \"property_type\": \"undef\"}],\n"
        "   \"outputs\": [\n"
        "     {\"id\": 2, \"dtype\": \"bf16\", \"shape\": [1, 2, 6, 6], \"stride\": [],\n"
        "      \"layout_type\": \"any\", \"property_type\": \"undef\"}]}\n"
        " ]}\n";

Test(conform_graph, valid_file_gives_its_ops) {
    collect_t k;
    char *path;
    read_text(cf_read_graph_file, ".json", valid_graph, &k, &path);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 1);
    cr_assert_eq(k.n_skips, 1);
    cr_expect(strstr(k.skips[0], "#op7:relu: op kind ReLU is not run"), "%s",
            k.skips[0]);
    const cf_case_t *c = &k.cases[0];
    cr_expect(strstr(c->name, "#op0:bwd") != NULL, "%s", c->name);
    cr_expect_eq(c->kind, dgrad_op_convolution_backward_data);
    cr_expect_str_eq(cf_case_attr(c, "strides"), "2,2");
    cr_expect_str_eq(cf_case_attr(c, "groups"), "1");
    cr_expect_str_eq(cf_case_attr(c, "auto_pad"), "SAME_UPPER");
    /* benchdnn's 12 zeros are passed on: "not given" is the dialect's
     * rule (and the model's), not the reader's. */
    cr_expect_str_eq(cf_case_attr(c, "output_padding"),
            "0,0,0,0,0,0,0,0,0,0,0,0");
    cr_expect(c->data.has_strides);
    cr_expect_eq(c->data.strides[1], 1);
    cr_expect(!c->weights.has_strides); /* empty stride: dense */
    cr_expect(c->constant_weights);
    cr_expect(c->output.layout_any);
    /* The dst_shape input's values are the output dims. */
    cr_expect_eq(c->third, cf_third_shape);
    cr_expect_eq(c->shape_dt, dgrad_s32);
    cr_expect_eq(c->n_shape, 4);
    cr_expect_eq(c->shape_values[2], 6);
    cleanup(&k, path);
}

Test(conform_graph, truncated_file) {
    collect_t k;
    char *path;
    char text[400];
    snprintf(text, sizeof text, "%.350s", valid_graph);
    read_text(cf_read_graph_file, ".json", text, &k, &path);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], ": malformed JSON: "), "%s", k.errors[0]);
    cr_expect(!strncmp(k.errors[0], path, strlen(path)));
    cr_expect_eq(k.n_cases, 0);
    cleanup(&k, path);
}

/* A graph with one ConvolutionBackwardData op: @p attrs, @p in0 (the
 * diff_dst logical tensor) given by the test. */
static void read_graph_op(const char *attrs, const char *in0, collect_t *k,
        char **path) {
    char text[2048];
    snprintf(text, sizeof text,
            "{\"graph\": [{\"id\": 0, \"name\": \"op\", \"kind\": "
            "\"ConvolutionBackwardData\", \"attrs\": {%s},\n"
            "\"inputs\": [%s,\n"
            "{\"id\": 1, \"dtype\": \"f32\", \"shape\": [1, 1, 2, 2]}],\n"
            "\"outputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 1, 3, 3]}]}]}",
            attrs, in0);
    read_text(cf_read_graph_file, ".json", text, k, path);
}

static const char *good_in0 =
        "{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 1, 2, 2]}";

Test(conform_graph, wrong_types) {
    collect_t k;
    char *path;
    read_graph_op("\"strides\": {\"type\": \"string\", \"value\": \"1\"}",
            good_in0, &k, &path);
    expect_one_error(&k, path, "$.graph[0].attrs.strides.type", "wrong type",
            "strides is s64[], not 'string'");
    cleanup(&k, path);
    read_graph_op("\"groups\": {\"type\": \"s64\", \"value\": [1]}", good_in0,
            &k, &path);
    expect_one_error(&k, path, "$.graph[0].attrs.groups.value", "wrong type",
            "expected an integer, got an array");
    cleanup(&k, path);
    read_graph_op("", "{\"id\": 0, \"dtype\": \"f32\", \"shape\": \"1x1\"}",
            &k, &path);
    expect_one_error(&k, path, "$.graph[0].inputs[0].shape", "wrong type",
            "expected a list of integers, got a string");
    cleanup(&k, path);
    read_graph_op("", "{\"id\": 0, \"dtype\": \"u8\", \"shape\": [1, 1, 2, 2]}",
            &k, &path);
    expect_one_error(&k, path, "$.graph[0].inputs[0].dtype", "bad value",
            "'u8' is not one of f32, bf16, f16, s32, s64");
    cleanup(&k, path);
}

Test(conform_graph, missing_fields) {
    collect_t k;
    char *path;
    read_graph_op("", "{\"id\": 0, \"dtype\": \"f32\"}", &k, &path);
    expect_one_error(&k, path, "$.graph[0].inputs[0]", "missing field",
            "'shape'");
    cleanup(&k, path);
    read_text(cf_read_graph_file, ".json", "{\"graph\": [{\"id\": 1}]}", &k,
            &path);
    expect_one_error(&k, path, "$.graph[0]", "missing field", "'kind'");
    cleanup(&k, path);
    read_text(cf_read_graph_file, ".json", "{\"version\": \"3.0.0\"}", &k,
            &path);
    expect_one_error(&k, path, "$", "missing field", "'graph'");
    cleanup(&k, path);
}

Test(conform_graph, unknown_attribute) {
    collect_t k;
    char *path;
    read_graph_op("\"padding\": {\"type\": \"s64[]\", \"value\": [1, 1]}",
            good_in0, &k, &path);
    expect_one_error(&k, path, "$.graph[0].attrs.padding", "unknown attribute",
            "'padding' is not an attribute of ConvolutionBackwardData");
    cleanup(&k, path);
}

Test(conform_graph, huge_dims) {
    collect_t k;
    char *path;
    read_graph_op("", "{\"id\": 0, \"dtype\": \"f32\", \"shape\": "
            "[1, 1, 1099511627776, 1099511627776]}", &k, &path);
    expect_one_error(&k, path, "$.graph[0].inputs[0].shape", "too large",
            "more than 2^40 elements");
    cleanup(&k, path);
    read_graph_op("", "{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, -5, 2, 2]}",
            &k, &path);
    expect_one_error(&k, path, "$.graph[0].inputs[0].shape[1]", "bad value",
            "-5 is below the smallest allowed (0)");
    cleanup(&k, path);
}

Test(conform_graph, dst_shape_input_needs_known_output_dims) {
    collect_t k;
    char *path;
    read_text(cf_read_graph_file, ".json",
            "{\"graph\": [{\"id\": 0, \"kind\": \"ConvolutionBackwardData\",\n"
            "\"inputs\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 2, 2, 1]},\n"
            "{\"id\": 1, \"dtype\": \"f32\", \"shape\": [2, 2, 1, 1]},\n"
            "{\"id\": 3, \"dtype\": \"s64\", \"shape\": [4]}],\n"
            "\"outputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, -1, -1, 1]}]}]}",
            &k, &path);
    expect_one_error(&k, path, "$.graph[0].inputs[2]", "inconsistent",
            "the output dims are unknown");
    cleanup(&k, path);
}

/* ===================================================================== IR */

static const char *valid_ir =
        "<?xml version=\"1.0\"?>\n"
        "<net name=\"n\" version=\"11\">\n"
        " <layers>\n"
        "  <layer id=\"0\" name=\"in\" type=\"Parameter\" version=\"opset1\"/>\n"
        "  <layer id=\"1\" name=\"up\" type=\"GroupConvolutionBackpropData\">\n"
        "   <data strides=\"2,2\" pads_begin=\"1,0\" pads_end=\"0,1\" auto_pad=\"same_lower\""
        " output_padding=\"\"/>\n"
        "   <input>\n"
        "    <port id=\"0\"><dim>1</dim><dim>4</dim><dim>3</dim><dim>3</dim></port>\n"
        "    <port id=\"1\"><dim>2</dim><dim>2</dim><dim>1</dim><dim>3</dim><dim>3</dim></port>\n"
        "    <port id=\"2\" precision=\"I32\"><dim>2</dim></port>\n"
        "   </input>\n"
        "   <output><port id=\"3\" precision=\"FP32\"><dim>1</dim><dim>2</dim>"
        "<dim>6</dim><dim>5</dim></port></output>\n"
        "  </layer>\n"
        " </layers>\n"
        "</net>\n";

Test(conform_ir, valid_net_gives_its_layers) {
    collect_t k;
    char *path;
    read_text(cf_read_ir_file, ".xml", valid_ir, &k, &path);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 1);
    cr_assert_eq(k.n_skips, 1);
    cr_expect(strstr(k.skips[0], "#layer0:in: layer kind Parameter is not run"),
            "%s", k.skips[0]);
    const cf_case_t *c = &k.cases[0];
    cr_expect_eq(c->kind, dgrad_op_group_convolution_backprop_data);
    cr_expect_str_eq(cf_case_attr(c, "strides"), "2,2");
    cr_expect_str_eq(cf_case_attr(c, "auto_pad"), "same_lower");
    cr_expect_null(cf_case_attr(c, "output_padding")); /* "" = unset */
    cr_expect_eq(c->weights.ndims, 5);
    cr_expect_eq(c->output.dims[3], 5);
    /* output_shape's values are the output port's spatial dims. */
    cr_expect_eq(c->third, cf_third_shape);
    cr_expect_eq(c->shape_dt, dgrad_s32);
    cr_expect_eq(c->n_shape, 2);
    cr_expect_eq(c->shape_values[0], 6);
    cr_expect_eq(c->shape_values[1], 5);
    cr_expect(strstr(c->where, ":5") != NULL, "%s", c->where);
    cleanup(&k, path);
}

Test(conform_ir, bare_layer) {
    collect_t k;
    char *path;
    read_text(cf_read_ir_file, ".xml",
            "<layer id=\"5\" name=\"up\" type=\"ConvolutionBackpropData\">\n"
            " <data strides=\"2\"/>\n"
            " <input><port id=\"0\"><dim>1</dim><dim>2</dim><dim>3</dim></port>\n"
            "  <port id=\"1\"><dim>2</dim><dim>1</dim><dim>2</dim></port></input>\n"
            " <output><port id=\"2\"><dim>1</dim><dim>1</dim><dim>6</dim></port></output>\n"
            "</layer>\n", &k, &path);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 1);
    cr_expect(strstr(k.cases[0].name, "#layer5:up") != NULL);
    cr_expect_eq(k.cases[0].third, cf_third_none);
    cleanup(&k, path);
}

Test(conform_ir, truncated_file) {
    collect_t k;
    char *path;
    char text[300];
    snprintf(text, sizeof text, "%.250s", valid_ir);
    read_text(cf_read_ir_file, ".xml", text, &k, &path);
    cr_assert_eq(k.n_errors, 1);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s:6:", path);
    cr_expect(!strncmp(k.errors[0], prefix, strlen(prefix)), "%s", k.errors[0]);
    cr_expect(strstr(k.errors[0], ": malformed XML: "), "%s", k.errors[0]);
    cr_expect_eq(k.n_cases, 0);
    cleanup(&k, path);
}

/* A bare layer with the given <data> attributes and first port's dims. */
static void read_layer(const char *data, const char *dims, collect_t *k,
        char **path) {
    char text[1024];
    snprintf(text, sizeof text,
            "<layer id=\"1\" type=\"ConvolutionBackpropData\">\n"
            " <data %s/>\n"
            " <input>\n"
            "  <port id=\"0\">%s</port>\n"
            "  <port id=\"1\"><dim>1</dim><dim>1</dim><dim>2</dim></port>\n"
            " </input>\n"
            " <output><port id=\"2\"><dim>1</dim><dim>1</dim><dim>4</dim></port></output>\n"
            "</layer>\n", data, dims);
    read_text(cf_read_ir_file, ".xml", text, k, path);
}

static const char *good_dims = "<dim>1</dim><dim>1</dim><dim>3</dim>";

Test(conform_ir, wrong_types) {
    collect_t k;
    char *path;
    read_layer("strides=\"a,b\"", good_dims, &k, &path);
    expect_one_error(&k, path, "2", "wrong type",
            "strides 'a,b' is not a comma-separated integer list");
    cleanup(&k, path);
    read_layer("", "<dim>1</dim><dim>x</dim><dim>3</dim>", &k, &path);
    expect_one_error(&k, path, "4", "wrong type", "dim 'x' is not an integer");
    cleanup(&k, path);
    read_layer("", "<dim>1</dim><shape>1</shape>", &k, &path);
    expect_one_error(&k, path, "4", "unknown element", "<shape> in a <port>");
    cleanup(&k, path);
}

Test(conform_ir, missing_fields) {
    collect_t k;
    char *path;
    read_text(cf_read_ir_file, ".xml", "<net>\n<layers>\n<layer id=\"3\"/>\n"
            "</layers>\n</net>\n", &k, &path);
    expect_one_error(&k, path, "3", "missing field", "a <layer> has a 'type'");
    cleanup(&k, path);
    read_text(cf_read_ir_file, ".xml", "<layer id=\"3\" "
            "type=\"ConvolutionBackpropData\">\n<input/>\n</layer>\n", &k, &path);
    expect_one_error(&k, path, "1", "missing element", "has <output>");
    cleanup(&k, path);
    read_text(cf_read_ir_file, ".xml", "<net name=\"x\"/>\n", &k, &path);
    expect_one_error(&k, path, "1", "missing element", "a <net> has <layers>");
    cleanup(&k, path);
}

Test(conform_ir, unknown_attribute) {
    collect_t k;
    char *path;
    read_layer("strides=\"1\" group=\"2\"", good_dims, &k, &path);
    expect_one_error(&k, path, "2", "unknown attribute",
            "'group' is not an attribute of ConvolutionBackpropData");
    cleanup(&k, path);
}

Test(conform_ir, huge_dims) {
    collect_t k;
    char *path;
    read_layer("", "<dim>1099511627776</dim><dim>1099511627776</dim><dim>3</dim>",
            &k, &path);
    expect_one_error(&k, path, "4", "too large", "more than 2^40 elements");
    cleanup(&k, path);
    read_layer("", "<dim>99999999999999999999</dim>", &k, &path);
    expect_one_error(&k, path, "4", "wrong type", "is not an integer");
    cleanup(&k, path);
    read_layer("", "<dim>-1</dim><dim>1</dim><dim>3</dim>", &k, &path);
    expect_one_error(&k, path, "4", "bad value", "sizes are >= 1");
    cleanup(&k, path);
}

Test(conform_ir, wrong_root_and_unreadable) {
    collect_t k;
    char *path;
    read_text(cf_read_ir_file, ".xml", "<model/>", &k, &path);
    expect_one_error(&k, path, "1", "unknown element", "root <model>");
    cleanup(&k, path);
    collect_init(&k);
    cf_read_ir_file("/nonexistent/ir.xml", &k.sink);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(!strncmp(k.errors[0], "/nonexistent/ir.xml", 19), "%s",
            k.errors[0]);
}

/* ========================================================== path walking */

Test(conform_paths, directories_and_dispatch) {
    char dir[] = "/tmp/dgrad_conform_dir_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p1[128], p2[128], p3[128], p4[128];
    snprintf(p1, sizeof p1, "%s/b.json", dir);
    snprintf(p2, sizeof p2, "%s/a.xml", dir);
    snprintf(p3, sizeof p3, "%s/notes.txt", dir);
    snprintf(p4, sizeof p4, "%s/c.json", dir);
    FILE *f = fopen(p1, "w");
    fputs(valid_graph, f);
    fclose(f);
    f = fopen(p2, "w");
    fputs(valid_ir, f);
    fclose(f);
    f = fopen(p3, "w");
    fputs("not read", f);
    fclose(f);
    f = fopen(p4, "w");
    fputs("{\"neither\": 1}", f);
    fclose(f);
    collect_t k;
    collect_init(&k);
    cf_read_path(dir, NULL, &k.sink);
    cr_expect_eq(k.n_cases, 2); /* a.xml, then b.json */
    cr_expect_eq(k.cases[0].kind, dgrad_op_group_convolution_backprop_data);
    cr_expect_eq(k.cases[1].kind, dgrad_op_convolution_backward_data);
    cr_expect_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], "c.json:$: missing field: neither a vector "
                                  "file"), "%s", k.errors[0]);
    collect_free(&k);
    /* A file named on the command line is read whatever its name. */
    collect_init(&k);
    cf_read_path(p3, NULL, &k.sink);
    cr_expect_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], "unreadable: neither JSON, XML nor a "
            "benchdnn batch file"), "%s", k.errors[0]);
    unlink(p1), unlink(p2), unlink(p3), unlink(p4);
    rmdir(dir);
}

/* ============================================================ batch files */

/* A oneDNN Graph case as benchdnn's op files are written: NCX/OIX, stride
 * 2, dst_shape given, output_padding as oneDNN's 12 zeros. F = 5, Y = 6. */
static const char *batch_conv_case =
        "{\"version\": \"3.7.0\", \"engine_kind\": \"cpu\", \"fpmath_mode\": \"strict\",\n"
        " \"input_ports\": [0, 1], \"output_ports\": [2], \"graph\": [\n"
        " {\"id\": 0, \"name\": \"bwd\", \"kind\": \"ConvolutionBackwardData\", \"attrs\": {\n"
        "  \"strides\": {\"type\": \"s64[]\", \"value\": [2, 2]},\n"
        "  \"pads_begin\": {\"type\": \"s64[]\", \"value\": [0, 0]},\n"
        "  \"pads_end\": {\"type\": \"s64[]\", \"value\": [0, 0]},\n"
        "  \"dilations\": {\"type\": \"s64[]\", \"value\": [1, 1]},\n"
        "  \"auto_pad\": {\"type\": \"string\", \"value\": \"None\"},\n"
        "  \"groups\": {\"type\": \"s64\", \"value\": 1},\n"
        "  \"data_format\": {\"type\": \"string\", \"value\": \"NCX\"},\n"
        "  \"weights_format\": {\"type\": \"string\", \"value\": \"OIX\"},\n"
        "  \"dst_shape\": {\"type\": \"s64[]\", \"value\": [1, 2, 6, 6]},\n"
        "  \"output_padding\": {\"type\": \"s64[]\", \"value\": [0,0,0,0,0,0,0,0,0,0,0,0]}},\n"
        "  \"inputs\": [\n"
        "   {\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 4, 3, 3], \"stride\": [36, 9, 3, 1],\n"
        "    \"layout_type\": \"strided\", \"property_type\": \"undef\"},\n"
        "   {\"id\": 1, \"dtype\": \"f32\", \"shape\": [4, 2, 1, 1], \"stride\": [2, 1, 1, 1],\n"
        "    \"layout_type\": \"strided\", \"property_type\": \"constant\"}],\n"
        "  \"outputs\": [\n"
        "   {\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 6, 6], \"stride\": [72, 36, 6, 1],\n"
        "    \"layout_type\": \"strided\", \"property_type\": \"undef\"}]}]}\n";

static const char *batch_relu_case =
        "{\"graph\": [{\"id\": 0, \"name\": \"relu\", \"kind\": \"ReLU\", \"attrs\": {},\n"
        " \"inputs\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 4]}],\n"
        " \"outputs\": [{\"id\": 1, \"dtype\": \"f32\", \"shape\": [1, 4]}]}]}\n";

/* A folder holding cases/ (conv.json, relu.json, typo.json) and
 * harness/ for the batch files a test writes. */
typedef struct batch_dir {
    char root[64];
    char paths[16][160];
    int n;
} batch_dir_t;

static const char *bd_write(batch_dir_t *d, const char *name,
        const char *text) {
    char root[sizeof d->root], *p = d->paths[d->n++];
    memcpy(root, d->root, sizeof root);
    snprintf(p, sizeof d->paths[0], "%s/%s", root, name);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
    return p;
}

static void bd_init(batch_dir_t *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->root, sizeof d->root, "/tmp/dgrad_batch_XXXXXX");
    cr_assert_not_null(mkdtemp(d->root));
    char sub[128];
    snprintf(sub, sizeof sub, "%s/cases", d->root);
    cr_assert_eq(mkdir(sub, 0700), 0);
    snprintf(sub, sizeof sub, "%s/harness", d->root);
    cr_assert_eq(mkdir(sub, 0700), 0);
    bd_write(d, "cases/conv.json", batch_conv_case);
    bd_write(d, "cases/relu.json", batch_relu_case);
    char typo[4096];
    snprintf(typo, sizeof typo, "%s", batch_conv_case);
    char *k = strstr(typo, "ConvolutionBackwardData");
    memmove(k + 20, k + 21, strlen(k + 21) + 1); /* ...BackwardDta */
    bd_write(d, "cases/typo.json", typo);
}

static void bd_free(batch_dir_t *d) {
    for (int i = d->n - 1; i >= 0; i--) unlink(d->paths[i]);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/cases", d->root);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/harness", d->root);
    rmdir(sub);
    rmdir(d->root);
}

static void expect_dims(const cf_tensor_t *t, int nd, const int64_t *want,
        const char *what) {
    cr_expect_eq(t->ndims, nd, "%s rank %d", what, (int)t->ndims);
    for (int i = 0; i < nd; i++)
        cr_expect_eq(t->dims[i], want[i], "%s dim %d is %lld, expected %lld",
                what, i, (long long)t->dims[i], (long long)want[i]);
}

static void expect_strides(const cf_tensor_t *t, int nd, const int64_t *want,
        const char *what) {
    cr_expect(t->has_strides, "%s has no strides", what);
    for (int i = 0; i < nd; i++)
        cr_expect_eq(t->strides[i], want[i], "%s stride %d is %lld, expected "
                "%lld", what, i, (long long)t->strides[i], (long long)want[i]);
}

/* Lines, relative paths (--inputs-dir, the batch file's folder), nesting,
 * alternatives, ignored options, and the rewrites with benchdnn's output
 * re-inference. */
Test(conform_batch, lines_cases_and_rewrites) {
    batch_dir_t d;
    bd_init(&d);
    bd_write(&d, "harness/nested",
            "--reset --op-attrs=0:auto_pad:SAME_UPPER,0:auto_pad:VALID \\\n"
            "    --case=../cases/conv.json\n");
    const char *batch = bd_write(&d, "harness/main",
            "# benchdnn --graph harness --case=not_this.json\n"
            "--reset --mode=P -v2 --engine=cpu --case=cases/conv.json\n"
            "--reset --dt=bf16 --op-attrs=0:output_padding:2x2 --case=cases/conv.json\n"
            "--reset --in-shapes=0:2x4x3x3*acdb --case=cases/conv.json\n"
            "--reset --in-shapes=0:1x4x5x5 --case=cases/conv.json # X 5: F = 9\n"
            "--reset --in-shapes=0:1x5x5x4 --op-attrs=0:data_format:NXC*dst_shape:1x10x10x2"
            " --case=cases/conv.json\n"
            "--reset --mb=3 --case=cases/conv.json\n"
            "--reset --case=cases/relu.json\n"
            "--batch=nested\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_batch_file(batch, d.root, &k.sink), 0);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 8);
    cr_assert_eq(k.n_skips, 1);
    char want[512];
    snprintf(want, sizeof want, "%s:8:cases/relu.json: the case holds no op "
            "dgrad runs (ReLU; dgrad runs ConvolutionBackwardData and "
            "ConvTranspose)", batch);
    cr_expect_str_eq(k.skips[0], want);

    /* line 2: as the file has it, every --dtypes type */
    const cf_case_t *c = &k.cases[0];
    snprintf(want, sizeof want, "%s:2:cases/conv.json#op0:bwd", batch);
    cr_expect_str_eq(c->name, want);
    cr_expect_str_eq(c->suite, batch);
    cr_expect_eq(c->run_dt, dgrad_data_type_undef);
    expect_dims(&c->data, 4, (int64_t[]){1, 4, 3, 3}, "line 2 data");
    expect_dims(&c->output, 4, (int64_t[]){1, 2, 6, 6}, "line 2 output");
    cr_expect_str_eq(cf_case_attr(c, "output_padding"), "0,0,0,0,0,0,0,0,0,0,0,0");
    /* line 3: --dt and --op-attrs */
    c = &k.cases[1];
    cr_expect_eq(c->run_dt, dgrad_bf16);
    cr_expect_str_eq(cf_case_attr(c, "output_padding"), "2,2");
    cr_expect_str_eq(cf_case_attr(c, "dst_shape"), "1,2,6,6");
    /* line 4: N and a tag; the output follows N, keeps its spatial sizes
     * and takes the data's tag (a layout changed) */
    c = &k.cases[2];
    expect_dims(&c->data, 4, (int64_t[]){2, 4, 3, 3}, "line 4 data");
    expect_strides(&c->data, 4, (int64_t[]){36, 1, 12, 4}, "line 4 data");
    expect_dims(&c->output, 4, (int64_t[]){2, 2, 6, 6}, "line 4 output");
    expect_strides(&c->output, 4, (int64_t[]){72, 1, 12, 2}, "line 4 output");
    cr_expect_str_eq(cf_case_attr(c, "dst_shape"), "2,2,6,6");
    expect_strides(&c->weights, 4, (int64_t[]){2, 1, 1, 1}, "line 4 weights");
    /* line 5: new spatial sizes: the natural output F = 2 * 4 + 1 */
    c = &k.cases[3];
    expect_dims(&c->output, 4, (int64_t[]){1, 2, 9, 9}, "line 5 output");
    expect_strides(&c->output, 4, (int64_t[]){162, 81, 9, 1}, "line 5 output");
    cr_expect_str_eq(cf_case_attr(c, "dst_shape"), "1,2,9,9");
    /* line 6: the line's own dst_shape is the output shape */
    c = &k.cases[4];
    cr_expect_str_eq(cf_case_attr(c, "data_format"), "NXC");
    expect_dims(&c->data, 4, (int64_t[]){1, 5, 5, 4}, "line 6 data");
    expect_dims(&c->output, 4, (int64_t[]){1, 10, 10, 2}, "line 6 output");
    cr_expect_str_eq(cf_case_attr(c, "dst_shape"), "1,10,10,2");
    /* line 7: --mb */
    c = &k.cases[5];
    expect_dims(&c->data, 4, (int64_t[]){3, 4, 3, 3}, "line 7 data");
    expect_dims(&c->output, 4, (int64_t[]){3, 2, 6, 6}, "line 7 output");
    /* line 9: a nested file, a path relative to it, two alternatives,
     * a continued line */
    char nested[200];
    snprintf(nested, sizeof nested, "%s/harness/nested", d.root);
    snprintf(want, sizeof want, "%s:1.1:../cases/conv.json#op0:bwd", nested);
    cr_expect_str_eq(k.cases[6].name, want);
    cr_expect_str_eq(cf_case_attr(&k.cases[6], "auto_pad"), "SAME_UPPER");
    snprintf(want, sizeof want, "%s:1.2:../cases/conv.json#op0:bwd", nested);
    cr_expect_str_eq(k.cases[7].name, want);
    cr_expect_str_eq(cf_case_attr(&k.cases[7], "auto_pad"), "VALID");
    collect_free(&k);
    bd_free(&d);
}

/* Settings persist until --reset (also across lines), as in benchdnn. */
Test(conform_batch, settings_persist_until_reset) {
    batch_dir_t d;
    bd_init(&d);
    const char *batch = bd_write(&d, "harness/persist",
            "--dt=f16\n"
            "--op-attrs=0:auto_pad:SAME_LOWER --case=../cases/conv.json\n"
            "--case=../cases/conv.json\n"
            "--reset --case=../cases/conv.json\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_batch_file(batch, NULL, &k.sink), 0);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 3);
    for (int i = 0; i < 2; i++) {
        cr_expect_eq(k.cases[i].run_dt, dgrad_f16, "case %d", i);
        cr_expect_str_eq(cf_case_attr(&k.cases[i], "auto_pad"), "SAME_LOWER");
    }
    cr_expect_eq(k.cases[2].run_dt, dgrad_data_type_undef);
    cr_expect_str_eq(cf_case_attr(&k.cases[2], "auto_pad"), "None");
    collect_free(&k);
    bd_free(&d);
}

/* Every malformed line is one error naming the batch file and line; the
 * lines after it still run. */
Test(conform_batch, errors_name_file_and_line) {
    batch_dir_t d;
    bd_init(&d);
    const char *batch = bd_write(&d, "harness/bad",
            "--reset --frobnicate=1 --case=../cases/conv.json\n"
            "--reset --case=../cases/missing.json\n"
            "--reset --in-shapes=2:1x2x6x6 --case=../cases/conv.json\n"
            "--reset --op-attrs=0:padding:1x1 --case=../cases/conv.json\n"
            "--reset --in-shapes=0:1x4x3x3*abce --case=../cases/conv.json\n"
            "stray\n"
            "--reset --dt=f64 --case=../cases/conv.json\n"
            "--reset --case=../cases/typo.json\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_batch_file(batch, NULL, &k.sink), 8);
    cr_expect_eq(k.n_cases, 1); /* line 1 runs after its unknown option */
    cr_assert_eq(k.n_errors, 8);
    static const struct {
        int line;
        const char *what, *rule;
    } want[] = {
            {1, "unknown option", "'--frobnicate=1' is not a benchdnn graph "
                                  "option dgrad conform knows"},
            {2, "unreadable", "--case=../cases/missing.json: found neither"},
            {3, "bad value", "--in-shapes: tensor 2 is not an input of the graph"},
            {4, "bad value", "--op-attrs: op 0 has no attribute 'padding'"},
            {5, "bad value", "tag 'abce' of tensor 0 is not a permutation"},
            {6, "unexpected word", "'stray' (a case is given as --case=FILE)"},
            {7, "bad value", "--dt 'f64': expected f32, bf16, f16 or undef"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        char prefix[300];
        snprintf(prefix, sizeof prefix, "%s:%d: %s: ", batch, want[i].line,
                want[i].what);
        cr_expect(!strncmp(k.errors[i], prefix, strlen(prefix)),
                "error '%s' does not start with '%s'", k.errors[i], prefix);
        cr_expect(strstr(k.errors[i], want[i].rule), "error '%s' lacks '%s'",
                k.errors[i], want[i].rule);
    }
    /* a misspelt op kind in a case: an error at the case's JSON path */
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s:8:../cases/typo.json:$.graph[0].kind: "
            "unknown op kind: 'ConvolutionBackwardDta'", batch);
    cr_expect(!strncmp(k.errors[7], prefix, strlen(prefix)), "'%s' vs '%s'",
            k.errors[7], prefix);
    cr_expect(strstr(k.errors[7], "did you mean ConvolutionBackwardData?"),
            "%s", k.errors[7]);
    collect_free(&k);
    bd_free(&d);
}

/* Lists longer than the reader holds are errors, not silently dropped. */
Test(conform_batch, overlong_lists_are_errors) {
    batch_dir_t d;
    bd_init(&d);
    char text[4096] = "--reset --op-attrs=0:strides:2x2";
    for (int i = 0; i < 64; i++)
        strcat(text, "*strides:2x2");
    strcat(text, " --case=../cases/conv.json\n--reset --dt=0:f32");
    for (int i = 1; i <= 64; i++) {
        char item[16];
        snprintf(item, sizeof item, "+%d:f32", i);
        strcat(text, item);
    }
    strcat(text, " --case=../cases/conv.json\n");
    const char *batch = bd_write(&d, "harness/long", text);
    collect_t k;
    collect_init(&k);
    cf_read_batch_file(batch, NULL, &k.sink);
    cr_expect_eq(k.n_cases, 0);
    cr_assert_eq(k.n_errors, 2);
    cr_expect(strstr(k.errors[0], ":1: too large: --op-attrs: more than 64 "
                    "attributes for op 0"), "%s", k.errors[0]);
    cr_expect(strstr(k.errors[1], ":2: too large: --dt: more than 64 "
                    "tensors"), "%s", k.errors[1]);
    collect_free(&k);
    bd_free(&d);
}

Test(conform_batch, nesting_is_bounded) {
    batch_dir_t d;
    bd_init(&d);
    const char *batch = bd_write(&d, "harness/self", "--batch=self\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_batch_file(batch, NULL, &k.sink), 1);
    cr_assert_eq(k.n_errors, 1);
    cr_expect(strstr(k.errors[0], ":1: too deep: --batch files nested deeper "
                                  "than 16"), "%s", k.errors[0]);
    collect_free(&k);
    bd_free(&d);
}

/* A batch file is recognised by its content when named; a directory walk
 * reads .json and .xml files only (a folder of batch files also holds the
 * cases they name). */
Test(conform_batch, recognised_by_content_not_found_in_folders) {
    batch_dir_t d;
    bd_init(&d);
    const char *batch = bd_write(&d, "harness/harness_x",
            "\n# comment first\n--reset --case=../cases/conv.json\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_path(batch, NULL, &k.sink), 0);
    cr_expect_eq(k.n_cases, 1);
    collect_free(&k);
    collect_init(&k);
    char harness[128];
    snprintf(harness, sizeof harness, "%s/harness", d.root);
    cr_expect_eq(cf_read_path(harness, NULL, &k.sink), 0);
    cr_expect_eq(k.n_cases + k.n_skips + k.n_errors, 0);
    collect_free(&k);
    bd_free(&d);
}

Test(conform_graph, misspelt_kinds_are_errors) {
    static const char *const known[] = {"ConvolutionBackpropData",
            "GroupConvolutionBackpropData"};
    cr_expect_str_eq(cf_near_kind("ConvolutionBackpropDta", known, 2),
            "ConvolutionBackpropData");
    cr_expect_str_eq(cf_near_kind("convolutionbackpropdata", known, 2),
            "ConvolutionBackpropData"); /* case only */
    cr_expect_str_eq(cf_near_kind("GroupConvolutionBackpropDat", known, 2),
            "GroupConvolutionBackpropData");
    cr_expect_str_eq(cf_near_kind("ConvolutionBakpropDta", known, 2),
            "ConvolutionBackpropData"); /* two edits */
    cr_expect_null(cf_near_kind("ConvolutionBakprpDta", known, 2)); /* three */
    cr_expect_null(cf_near_kind("ConvolutionBackpropData", known, 2));
    cr_expect_null(cf_near_kind("Convolution", known, 2));
    collect_t k;
    char *path;
    read_graph_op("", good_in0, &k, &path); /* kind spelt right: a case */
    cr_expect_eq(k.n_cases, 1);
    cleanup(&k, path);
    static const char *text =
            "{\"graph\": [{\"id\": 3, \"name\": \"x\", \"kind\": "
            "\"ConvolutionBackwardDta\", \"inputs\": [], \"outputs\": []},"
            "{\"id\": 4, \"name\": \"y\", \"kind\": \"ConvTransposeBackwardData\","
            " \"inputs\": [], \"outputs\": []}]}";
    read_text(cf_read_graph_file, ".json", text, &k, &path);
    expect_one_error(&k, path, "$.graph[0].kind", "unknown op kind",
            "'ConvolutionBackwardDta' is not a oneDNN Graph op kind dgrad "
            "knows; did you mean ConvolutionBackwardData?");
    cr_expect_eq(k.n_skips, 1); /* a kind dgrad does not run, far from both */
    cleanup(&k, path);
    static const char *ir =
            "<layer id=\"2\" name=\"up\" type=\"ConvolutionBackpropDta\">"
            "<data strides=\"1\"/></layer>";
    read_text(cf_read_ir_file, ".xml", ir, &k, &path);
    expect_one_error(&k, path, "1", "unknown layer kind",
            "did you mean ConvolutionBackpropData?");
    cleanup(&k, path);
}

/* benchdnn's convtranspose post-ops pattern, as the suite holds it: the
 * ConvTranspose and its chain (BiasAdd, ReLU) are one case, the fused
 * partition, carrying the graph; nothing is skipped. */
Test(conform_graph, chains_run_with_their_op) {
    collect_t k;
    collect_init(&k);
    cf_read_graph_file(DGRAD_CONFORM_SUITES_DIR "/graph/conv_transpose_post_ops.json",
            &k.sink);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 1);
    cr_expect_eq(k.n_skips, 0, "%s", k.skips[0]);
    const cf_case_t *c = &k.cases[0];
    cr_expect(strstr(c->name, "#op0:ct+op1:BiasAdd+op2:ReLU"), "%s", c->name);
    cr_assert_eq(c->n_post, 2);
    cr_expect_str_eq(c->post[0].kind, "BiasAdd");
    cr_expect_eq(c->post[0].operand_id, 3);
    cr_expect_eq(c->post[0].graph_id, 1);
    cr_expect_str_eq(c->post[1].kind, "ReLU");
    cr_expect_eq(c->graph_op_id, 0);
    cr_expect_eq(c->graph_output_id, 5);
    const int64_t out[] = {1, 4, 5, 5};
    expect_dims(&c->output, 4, out, "the chain's output");
    collect_free(&k);
}

/* Where the fusion rules stop a chain: a second reader of the chain's
 * output, the chain second into a non-commutative op. */
Test(conform_graph, chains_stop_where_the_rules_say) {
    static const char *fmt =
            "{\"graph\": [\n"
            " {\"id\": 0, \"name\": \"ct\", \"kind\": \"ConvTranspose\", \"attrs\": {\n"
            "   \"strides\": {\"type\": \"s64[]\", \"value\": [1]},\n"
            "   \"pads_begin\": {\"type\": \"s64[]\", \"value\": [0]},\n"
            "   \"pads_end\": {\"type\": \"s64[]\", \"value\": [0]},\n"
            "   \"data_format\": {\"type\": \"string\", \"value\": \"NCX\"},\n"
            "   \"weights_format\": {\"type\": \"string\", \"value\": \"IOX\"}},\n"
            "  \"inputs\": [{\"id\": 0, \"dtype\": \"f32\", \"shape\": [1, 2, 3]},\n"
            "   {\"id\": 1, \"dtype\": \"f32\", \"shape\": [2, 2, 1]}],\n"
            "  \"outputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 3]}]},\n"
            " {\"id\": 1, \"name\": \"a\", \"kind\": \"Clamp\", \"attrs\": {\n"
            "   \"min\": {\"type\": \"f32\", \"value\": -1.5},\n"
            "   \"max\": {\"type\": \"f32\", \"value\": 2}},\n"
            "  \"inputs\": [{\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 3]}],\n"
            "  \"outputs\": [{\"id\": 3, \"dtype\": \"f32\", \"shape\": [1, 2, 3]}]},\n"
            " {\"id\": 2, \"name\": \"b\", \"kind\": \"%s\", \"attrs\": {},\n"
            "  \"inputs\": [{\"id\": 9, \"dtype\": \"f32\", \"shape\": [2, 1]},\n"
            "   {\"id\": %d, \"dtype\": \"f32\", \"shape\": [1, 2, 3]}],\n"
            "  \"outputs\": [{\"id\": 4, \"dtype\": \"f32\", \"shape\": [1, 2, 3]}]}]}\n";
    static const struct { const char *kind; int second, links; } t[] = {
            {"Add", 3, 2},      /* commutative: the chain may come second */
            {"Subtract", 3, 1}, /* not: the chain stops after Clamp */
            {"Add", 2, 0},      /* the op's output read twice: no chain */
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char text[4096];
        snprintf(text, sizeof text, fmt, t[i].kind, t[i].second);
        collect_t k;
        char *path;
        read_text(cf_read_graph_file, ".json", text, &k, &path);
        cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
        cr_assert_geq(k.n_cases, 1);
        cr_expect_eq(k.cases[0].n_post, t[i].links, "%s second: %d links",
                t[i].kind, k.cases[0].n_post);
        cr_expect_eq(k.n_skips, 2 - t[i].links, "%s", k.skips[0]);
        if (t[i].links == 2)
            cr_expect_eq(k.cases[0].post[1].chain_input, 1);
        cleanup(&k, path);
    }
}

/* A quantized pattern on a line that rewrites its graph inputs: the
 * Dequantize outputs, the ConvTranspose's and the chain's are inferred
 * again, so the fused ConvTranspose runs; the skip names the quantization
 * ops alone. */
Test(conform_batch, quantized_pattern_with_new_shapes) {
    static const char *pattern =
            "{\"graph\": [\n"
            " {\"id\": 1, \"name\": \"dq\", \"kind\": \"Dequantize\", \"attrs\": {},\n"
            "  \"inputs\": [{\"id\": 0, \"dtype\": \"s8\", \"shape\": [2, 4, 3, 3]}],\n"
            "  \"outputs\": [{\"id\": 10, \"dtype\": \"f32\", \"shape\": [2, 4, 3, 3]}]},\n"
            " {\"id\": 5, \"name\": \"ct\", \"kind\": \"ConvTranspose\", \"attrs\": {\n"
            "   \"strides\": {\"type\": \"s64[]\", \"value\": [1, 1]},\n"
            "   \"pads_begin\": {\"type\": \"s64[]\", \"value\": [0, 0]},\n"
            "   \"pads_end\": {\"type\": \"s64[]\", \"value\": [0, 0]},\n"
            "   \"data_format\": {\"type\": \"string\", \"value\": \"NCX\"},\n"
            "   \"weights_format\": {\"type\": \"string\", \"value\": \"IOX\"}},\n"
            "  \"inputs\": [{\"id\": 10, \"dtype\": \"f32\", \"shape\": [2, 4, 3, 3]},\n"
            "   {\"id\": 1, \"dtype\": \"f32\", \"shape\": [4, 2, 1, 1]}],\n"
            "  \"outputs\": [{\"id\": 11, \"dtype\": \"f32\", \"shape\": [2, 2, 3, 3]}]},\n"
            " {\"id\": 6, \"name\": \"add\", \"kind\": \"Add\", \"attrs\": {},\n"
            "  \"inputs\": [{\"id\": 11, \"dtype\": \"f32\", \"shape\": [2, 2, 3, 3]},\n"
            "   {\"id\": 2, \"dtype\": \"f32\", \"shape\": [1, 2, 1, 1]}],\n"
            "  \"outputs\": [{\"id\": 12, \"dtype\": \"f32\", \"shape\": [2, 2, 3, 3]}]},\n"
            " {\"id\": 7, \"name\": \"q\", \"kind\": \"Quantize\", \"attrs\": {},\n"
            "  \"inputs\": [{\"id\": 12, \"dtype\": \"f32\", \"shape\": [2, 2, 3, 3]}],\n"
            "  \"outputs\": [{\"id\": 13, \"dtype\": \"s8\", \"shape\": [2, 2, 3, 3]}]}]}\n";
    batch_dir_t d;
    bd_init(&d);
    bd_write(&d, "cases/pattern.json", pattern);
    const char *batch = bd_write(&d, "harness/int8",
            "--reset --in-shapes=0:1x4x5x5+1:4x3x1x1+2:1x3x1x1 "
            "--case=../cases/pattern.json\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_batch_file(batch, NULL, &k.sink), 0);
    cr_assert_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_assert_eq(k.n_cases, 1, "%s", k.skips[0]);
    const cf_case_t *c = &k.cases[0];
    const int64_t in[] = {1, 4, 5, 5}, out[] = {1, 3, 5, 5}, op[] = {1, 3, 1, 1};
    expect_dims(&c->data, 4, in, "the Dequantize output");
    expect_dims(&c->output, 4, out, "the chain's output");
    cr_assert_eq(c->n_post, 1);
    expect_dims(&c->post[0].operand, 4, op, "the Add operand");
    cr_assert_eq(k.n_skips, 1);
    cr_expect(strstr(k.skips[0], "not run (Dequantize, Quantize)"), "%s",
            k.skips[0]);
    collect_free(&k);
    bd_free(&d);
}

/* A case with ops of other kinds beside the ones dgrad runs: the cases run,
 * and one skip per line names the other kinds. */
Test(conform_batch, other_kinds_beside_runs) {
    batch_dir_t d;
    bd_init(&d);
    const char *batch = bd_write(&d, "harness/training",
            "--reset --case=" DGRAD_CONFORM_SUITES_DIR "/graph/training_graph.json\n");
    collect_t k;
    collect_init(&k);
    cr_expect_eq(cf_read_batch_file(batch, NULL, &k.sink), 0);
    cr_expect_eq(k.n_errors, 0, "%s", k.errors[0]);
    cr_expect_eq(k.n_cases, 2);
    cr_assert_eq(k.n_skips, 1);
    cr_expect(strstr(k.skips[0], "training_graph.json: ops of other kinds in "
                                 "the case are not run (ReLUBackward, "
                                 "BiasAddBackward)"), "%s", k.skips[0]);
    collect_free(&k);
    bd_free(&d);
}
