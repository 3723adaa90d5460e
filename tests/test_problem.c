/*
 * Dialect layer tests: resolution of PB, Y, output dims and strides per
 * dialect (one table each), stride mapping, deferred shapes, and one test
 * per validation rule (status and message).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "assert_err.h"
#include "error.h"
#include "problem.h"

#define U DGRAD_UNKNOWN_DIM

/* ------------------------------------------------------------ helpers */

static int count_dims(const int64_t *d) {
    int n = 0;
    while (n < 7 && d[n]) n++;
    return n;
}

static dgrad_logical_tensor_t lt_strided(dgrad_data_type_t dt, int nd,
        const int64_t *dims, const int64_t *strides) {
    dgrad_logical_tensor_t t;
    memset(&t, 0, sizeof t);
    t.ndims = nd;
    t.data_type = dt;
    t.layout_type = dgrad_layout_type_strided;
    t.property = dgrad_property_type_variable;
    memcpy(t.dims, dims, (size_t)nd * sizeof *dims);
    memcpy(t.strides, strides, (size_t)nd * sizeof *strides);
    return t;
}

/* Dense row-major strides (dims must be small). */
static dgrad_logical_tensor_t lt_dense(dgrad_data_type_t dt, int nd,
        const int64_t *dims) {
    int64_t strides[DGRAD_MAX_NDIMS], s = 1;
    for (int d = nd - 1; d >= 0; d--) {
        strides[d] = s;
        s *= dims[d];
    }
    return lt_strided(dt, nd, dims, strides);
}

/* Requested output with unknown rank and layout any. */
static dgrad_logical_tensor_t lt_unknown(void) {
    dgrad_logical_tensor_t t;
    memset(&t, 0, sizeof t);
    t.ndims = DGRAD_UNKNOWN_NDIMS;
    t.layout_type = dgrad_layout_type_any;
    t.id = 42;
    t.property = dgrad_property_type_variable;
    return t;
}

typedef struct attr_text {
    const char *name, *value;
} attr_text_t;

/* One resolution case; dims lists are 0-terminated, in dialect order. */
typedef struct rcase {
    const char *name;
    dgrad_op_kind_t kind;
    int64_t data[7], wei[7];
    attr_text_t attrs[8]; /* set by name */
    int64_t shape[7];     /* values of a shape input; none when empty */
    int64_t out[7];       /* expected output dims */
    int64_t pb[3], y[3];  /* expected PB and Y */
} rcase_t;

typedef struct built {
    dgrad_op_desc_t desc;
    dgrad_logical_tensor_t in[3];
    size_t n_inputs;
    dgrad_logical_tensor_t out;
    int64_t shape[7];
    size_t n_shape;
} built_t;

static void build(const rcase_t *k, built_t *b) {
    memset(b, 0, sizeof *b);
    cr_assert_eq(dgrad_op_desc_init(&b->desc, k->kind), dgrad_success);
    for (const attr_text_t *a = k->attrs; a->name; a++)
        cr_assert_eq(dgrad_op_desc_set_by_name(&b->desc, a->name, a->value),
                dgrad_success, "%s: %s=%s: %s", k->name, a->name, a->value,
                dgrad_last_error_message());
    b->in[0] = lt_dense(dgrad_f32, count_dims(k->data), k->data);
    b->in[1] = lt_dense(dgrad_f32, count_dims(k->wei), k->wei);
    b->n_inputs = 2;
    b->n_shape = (size_t)count_dims(k->shape);
    if (b->n_shape) {
        int64_t len = (int64_t)b->n_shape;
        b->in[2] = lt_dense(dgrad_s64, 1, &len);
        memcpy(b->shape, k->shape, b->n_shape * sizeof *k->shape);
        b->n_inputs = 3;
    }
    b->out = lt_unknown();
}

/* The library resolves an output of layout any in the oneDNN layer's
 * order (dense channels-last: N, spatial, C); the tests here give the same
 * order themselves, written out, as the dialect layer only applies it. */
static const int channels_last_order[3][5] = {
        {0, 2, 1}, {0, 2, 3, 1}, {0, 2, 3, 4, 1}};

static dgrad_status_t run(const built_t *b, dgrad_resolved_t *r) {
    int nsp = b->in[0].ndims - 2;
    const int *order = nsp >= 1 && nsp <= 3 ? channels_last_order[nsp - 1]
                                            : NULL;
    return dgrad_problem_resolve_with_layout(&b->desc, b->n_inputs, b->in,
            &b->out, b->n_shape ? b->shape : NULL, b->n_shape, order, r);
}

static dgrad_status_t run_case(const rcase_t *k, dgrad_resolved_t *r) {
    built_t b;
    build(k, &b);
    return run(&b, r);
}

static void check_case(const rcase_t *k) {
    dgrad_resolved_t r;
    dgrad_status_t st = run_case(k, &r);
    cr_assert_eq(st, dgrad_success, "%s: %s", k->name,
            dgrad_last_error_message());
    cr_assert_eq(r.deferred, 0, "%s", k->name);
    int nd = count_dims(k->out);
    cr_assert_eq(r.output.ndims, nd, "%s: rank %d", k->name, r.output.ndims);
    for (int d = 0; d < nd; d++)
        cr_assert_eq(r.output.dims[d], k->out[d], "%s: dim %d is %lld",
                k->name, d, (long long)r.output.dims[d]);
    cr_assert_eq(r.problem.nsp, nd - 2, "%s", k->name);
    for (int i = 0; i < nd - 2; i++) {
        cr_assert_eq(r.problem.PB[i], k->pb[i], "%s: PB[%d] is %lld",
                k->name, i, (long long)r.problem.PB[i]);
        cr_assert_eq(r.problem.Y[i], k->y[i], "%s: Y[%d] is %lld", k->name,
                i, (long long)r.problem.Y[i]);
    }
    cr_assert_eq(r.output.data_type, dgrad_f32, "%s", k->name);
    cr_assert_eq(r.output.layout_type, dgrad_layout_type_strided, "%s",
            k->name);
    cr_assert_eq(r.output.id, 42, "%s", k->name);
}

static void check_table(const rcase_t *cases, size_t n) {
    for (size_t i = 0; i < n; i++) check_case(&cases[i]);
}

#define CHECK_TABLE(t) check_table(t, sizeof(t) / sizeof((t)[0]))

static void expect_case_error(const rcase_t *k, dgrad_status_t status,
        const char *substring) {
    dgrad_resolved_t r;
    ASSERT_ERR(run_case(k, &r), status, substring);
}

static void assert_i64s(const int64_t *got, const int64_t *want, int n,
        const char *what) {
    for (int i = 0; i < n; i++)
        cr_assert_eq(got[i], want[i], "%s[%d] is %lld, expected %lld", what, i,
                (long long)got[i], (long long)want[i]);
}

/* ---------------------------------------------------- dialect tables */

#define OV dgrad_op_convolution_backprop_data
#define GOV dgrad_op_group_convolution_backprop_data
#define ONNX dgrad_op_conv_transpose
#define GRAPH dgrad_op_convolution_backward_data

/* OpenVINO ConvolutionBackpropData: [N, Cin, X...], [Cin, Cout, K...]. */
static const rcase_t openvino_cases[] = {
        {"224 s2 p1", OV, {1, 20, 224, 224}, {20, 10, 3, 3},
                {{"strides", "2,2"}, {"pads_begin", "1,1"},
                        {"pads_end", "1,1"}},
                {0}, {1, 10, 447, 447}, {1, 1}, {447, 447}},
        /* F = 6, Y = F - 1 - 1 + 1 */
        {"1d output_padding", OV, {1, 1, 4}, {1, 1, 3},
                {{"pads_begin", "1"}, {"pads_end", "1"},
                        {"output_padding", "1"}},
                {0}, {1, 1, 5}, {1}, {5}},
        {"dilation", OV, {1, 1, 3}, {1, 1, 3}, {{"dilations", "2"}}, {0},
                {1, 1, 7}, {0}, {7}},
        /* F = 7, Y = 6: total 1, same_upper crops the odd unit first */
        {"same_upper odd total", OV, {1, 1, 4}, {1, 1, 4},
                {{"auto_pad", "same_upper"}}, {6}, {1, 1, 6}, {1}, {6}},
        {"same_lower odd total", OV, {1, 1, 4}, {1, 1, 4},
                {{"auto_pad", "same_lower"}}, {6}, {1, 1, 6}, {0}, {6}},
        {"auto_pad any case", OV, {1, 1, 4}, {1, 1, 4},
                {{"auto_pad", "Same_Upper"}}, {6}, {1, 1, 6}, {1}, {6}},
        /* total 3: explicit splits floor(3/2) first, pads are ignored */
        {"explicit with shape", OV, {1, 1, 4}, {1, 1, 4},
                {{"pads_begin", "3"}, {"pads_end", "3"}}, {4}, {1, 1, 4},
                {1}, {4}},
        {"same_upper total 3", OV, {1, 1, 4}, {1, 1, 4},
                {{"auto_pad", "same_upper"}}, {4}, {1, 1, 4}, {2}, {4}},
        {"valid with shape", OV, {1, 1, 4}, {1, 1, 4},
                {{"auto_pad", "valid"}}, {4}, {1, 1, 4}, {0}, {4}},
        /* Y above F: total clamps to 0, trailing zeros */
        {"shape larger than F", OV, {1, 1, 4}, {1, 1, 4}, {{0}}, {9},
                {1, 1, 9}, {0}, {9}},
        /* no shape: same_* means pads 0, Y = F */
        {"same_upper no shape", OV, {1, 1, 4}, {1, 1, 3},
                {{"strides", "2"}, {"auto_pad", "same_upper"},
                        {"pads_begin", "1"}},
                {0}, {1, 1, 9}, {0}, {9}},
        {"3d", OV, {1, 1, 4, 4, 4}, {1, 1, 3, 3, 3},
                {{"strides", "2,2,2"}, {"pads_begin", "2,2,2"},
                        {"pads_end", "2,2,2"}, {"dilations", "2,2,2"}},
                {0}, {1, 1, 7, 7, 7}, {2, 2, 2}, {7, 7, 7}},
        {"2 output channels", OV, {1, 1, 2, 2}, {1, 2, 3, 3}, {{0}}, {0},
                {1, 2, 4, 4}, {0, 0}, {4, 4}},
};

Test(problem_openvino, table) { CHECK_TABLE(openvino_cases); }

/* OpenVINO GroupConvolutionBackpropData: weights [G, Cin/G, Cout/G, K...]. */
static const rcase_t group_openvino_cases[] = {
        {"1d", GOV, {1, 20, 224}, {4, 5, 2, 3},
                {{"strides", "2"}, {"pads_begin", "1"}, {"pads_end", "1"}},
                {0}, {1, 8, 447}, {1}, {447}},
        {"2d", GOV, {1, 20, 224, 224}, {4, 5, 2, 3, 3},
                {{"strides", "2,2"}, {"pads_begin", "1,1"},
                        {"pads_end", "1,1"}},
                {0}, {1, 8, 447, 447}, {1, 1}, {447, 447}},
        {"3d", GOV, {1, 20, 224, 224, 224}, {4, 5, 2, 3, 3, 3},
                {{"strides", "2,2,2"}, {"pads_begin", "1,1,1"},
                        {"pads_end", "1,1,1"}},
                {0}, {1, 8, 447, 447, 447}, {1, 1, 1}, {447, 447, 447}},
        /* upstream OutShape case: F = (1, 14) equals the given shape */
        {"out shape same_upper", GOV, {1, 1, 1, 10}, {1, 1, 1, 1, 5},
                {{"auto_pad", "same_upper"}}, {1, 14}, {1, 1, 1, 14}, {0, 0},
                {1, 14}},
        {"2 groups", GOV, {1, 4, 4}, {2, 2, 1, 3}, {{0}}, {0}, {1, 2, 6},
                {0}, {6}},
};

Test(problem_group_openvino, table) { CHECK_TABLE(group_openvino_cases); }

/* ONNX ConvTranspose: weights [Cin, Cout/group, K...]; names of the ONNX
 * test cases where they come from there. */
static const rcase_t onnx_cases[] = {
        {"test_convtranspose", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3}, {{0}}, {0},
                {1, 2, 5, 5}, {0, 0}, {5, 5}},
        /* F = (9, 7), Y = (10, 8): total -1, PB = -1 - floor(-1/2) = 0 */
        {"test_convtranspose_output_shape", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
                {{"strides", "3,2"}, {"output_shape", "10,8"}}, {0},
                {1, 2, 10, 8}, {0, 0}, {10, 8}},
        {"test_convtranspose_kernel_shape", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
                {{"strides", "3,2"}, {"output_padding", "1,1"},
                        {"output_shape", "10,8"}, {"kernel_shape", "3,3"}},
                {0}, {1, 2, 10, 8}, {0, 0}, {10, 8}},
        {"test_convtranspose_pad", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
                {{"strides", "3,2"}, {"output_padding", "1,1"}}, {0},
                {1, 2, 10, 8}, {0, 0}, {10, 8}},
        {"test_convtranspose_pads", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
                {{"strides", "3,2"}, {"pads", "1,2,1,2"}}, {0}, {1, 2, 7, 3},
                {1, 2}, {7, 3}},
        /* Y = X*S = 6, total = 7 - 6 = 1 */
        {"test_convtranspose_autopad_same", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
                {{"strides", "2,2"}, {"auto_pad", "SAME_UPPER"}}, {0},
                {1, 2, 6, 6}, {0, 0}, {6, 6}},
        {"autopad same_lower", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
                {{"strides", "2,2"}, {"auto_pad", "same_lower"}}, {0},
                {1, 2, 6, 6}, {1, 1}, {6, 6}},
        /* F = 8, Y = 9, total -1: floor division gives PB -1 / 0 */
        {"same_upper negative total", ONNX, {1, 1, 3}, {1, 1, 2},
                {{"strides", "3"}, {"auto_pad", "SAME_UPPER"}}, {0},
                {1, 1, 9}, {-1}, {9}},
        {"same_lower negative total", ONNX, {1, 1, 3}, {1, 1, 2},
                {{"strides", "3"}, {"auto_pad", "SAME_LOWER"}}, {0},
                {1, 1, 9}, {0}, {9}},
        /* F = 5, Y = 8, total -3: PB = -3 - floor(-3/2) = -1 */
        {"output_shape total -3", ONNX, {1, 1, 3}, {1, 1, 3},
                {{"output_shape", "8"}}, {0}, {1, 1, 8}, {-1}, {8}},
        {"test_convtranspose_group_2", ONNX, {1, 2, 3, 3}, {2, 1, 3, 3},
                {{"group", "2"}}, {0}, {1, 2, 5, 5}, {0, 0}, {5, 5}},
        {"test_convtranspose_3d", ONNX, {1, 1, 3, 4, 5}, {1, 2, 3, 3, 3},
                {{0}}, {0}, {1, 2, 5, 6, 7}, {0, 0, 0}, {5, 6, 7}},
        {"test_convtranspose_dilations", ONNX, {1, 1, 3, 3}, {1, 1, 2, 2},
                {{"dilations", "2,2"}}, {0}, {1, 1, 5, 5}, {0, 0}, {5, 5}},
        {"valid", ONNX, {1, 1, 3}, {1, 1, 3},
                {{"auto_pad", "VALID"}, {"output_padding", "0"}}, {0},
                {1, 1, 5}, {0}, {5}},
};

Test(problem_onnx, table) { CHECK_TABLE(onnx_cases); }

/* oneDNN Graph ConvolutionBackwardData. The auto_pad example: diff_dst
 * 6x6, kernel 4, stride 1, F = 9. */
static const rcase_t graph_cases[] = {
        {"SAME_UPPER", GRAPH, {1, 1, 6, 6}, {1, 1, 4, 4},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"auto_pad", "SAME_UPPER"}, {"dst_shape", "1,1,6,6"}},
                {0}, {1, 1, 6, 6}, {1, 1}, {6, 6}},
        {"SAME_LOWER", GRAPH, {1, 1, 6, 6}, {1, 1, 4, 4},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"auto_pad", "SAME_LOWER"}, {"dst_shape", "1,1,6,6"}},
                {0}, {1, 1, 6, 6}, {2, 2}, {6, 6}},
        {"VALID", GRAPH, {1, 1, 6, 6}, {1, 1, 4, 4},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"auto_pad", "VALID"}, {"dst_shape", "1,1,9,9"}},
                {0}, {1, 1, 9, 9}, {0, 0}, {9, 9}},
        {"None with pads", GRAPH, {1, 1, 6, 6}, {1, 1, 4, 4},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"auto_pad", "none"}, {"pads_begin", "1,1"},
                        {"pads_end", "2,2"}, {"dst_shape", "1,1,6,6"}},
                {0}, {1, 1, 6, 6}, {1, 1}, {6, 6}},
        /* F - pads = 7; 8 is within one stride: an output-padding tail */
        {"explicit tail", GRAPH, {1, 1, 4, 4}, {1, 1, 3, 3},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"strides", "2,2"}, {"pads_begin", "1,1"},
                        {"pads_end", "1,1"}, {"dst_shape", "1,1,8,8"}},
                {0}, {1, 1, 8, 8}, {1, 1}, {8, 8}},
        /* defaults NXC / XIO */
        {"NXC XIO groups", GRAPH, {2, 5, 5, 16}, {3, 3, 4, 16},
                {{"groups", "2"}, {"strides", "2,2"},
                        {"dst_shape", "2,11,11,8"}},
                {0}, {2, 11, 11, 8}, {0, 0}, {11, 11}},
        {"1d NXC", GRAPH, {1, 4, 3}, {3, 2, 3}, {{"dst_shape", "1,6,2"}},
                {0}, {1, 6, 2}, {0}, {6}},
        /* the input (7x7: total 2) wins over the attribute (6x6) */
        {"dst_shape input wins", GRAPH, {1, 1, 6, 6}, {1, 1, 4, 4},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"auto_pad", "same_upper"}, {"dst_shape", "1,1,6,6"}},
                {1, 1, 7, 7}, {1, 1, 7, 7}, {1, 1}, {7, 7}},
        {"all-zero dst_shape is absent", GRAPH, {1, 6, 6, 1}, {4, 4, 1, 1},
                {{"dst_shape", "0,0,0,0"}, {"auto_pad", "VALID"}},
                {1, 9, 9, 1}, {1, 9, 9, 1}, {0, 0}, {9, 9}},
        /* oneDNN's defaults as benchdnn writes them: 12 zeros */
        {"12-zero lists are absent", GRAPH, {1, 6, 6, 1}, {4, 4, 1, 1},
                {{"dst_shape", "0,0,0,0,0,0,0,0,0,0,0,0"},
                        {"output_padding", "0,0,0,0,0,0,0,0,0,0,0,0"},
                        {"auto_pad", "VALID"}},
                {1, 9, 9, 1}, {1, 9, 9, 1}, {0, 0}, {9, 9}},
        /* benchdnn's harness line: output_padding 2 with stride 2 (F = 5,
         * Y = 6 is the stride tail); output_padding changes nothing */
        {"output_padding = stride", GRAPH, {1, 4, 3, 3}, {4, 2, 1, 1},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"strides", "2,2"}, {"output_padding", "2,2"},
                        {"dst_shape", "1,2,6,6"}},
                {0}, {1, 2, 6, 6}, {0, 0}, {6, 6}},
        /* SAME: total = max(F - Y, 0), never F + output_padding - Y: with
         * F = 5, Y = 4 total is 1 (PB 0 upper, 1 lower) whatever op is */
        {"SAME_UPPER ignores output_padding", GRAPH, {1, 4, 3, 3},
                {4, 2, 1, 1},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"strides", "2,2"}, {"output_padding", "3,1"},
                        {"auto_pad", "SAME_UPPER"}, {"dst_shape", "1,2,4,4"}},
                {0}, {1, 2, 4, 4}, {0, 0}, {4, 4}},
        {"SAME_LOWER ignores output_padding", GRAPH, {1, 4, 3, 3},
                {4, 2, 1, 1},
                {{"data_format", "NCX"}, {"weights_format", "OIX"},
                        {"strides", "2,2"}, {"output_padding", "3,1"},
                        {"auto_pad", "SAME_LOWER"}, {"dst_shape", "1,2,4,4"}},
                {0}, {1, 2, 4, 4}, {1, 1}, {4, 4}},
};

Test(problem_graph, table) { CHECK_TABLE(graph_cases); }

/* No dst_shape (or an all-zero one): the output tensor's dims, when all
 * known, are the output shape (oneDNN's infer_conv_bprop_data_output_shape
 * takes them; benchdnn's files rely on it). */
Test(problem_graph, output_dims_are_the_shape_source) {
    static const struct {
        const char *auto_pad, *dst_shape;
        int64_t out[4], pb[2];
    } k[] = {
            /* F = 7: explicit pads 0 allow Y in [7, 8) */
            {"None", NULL, {1, 7, 7, 2}, {0, 0}},
            {"None", "0,0,0,0,0,0,0,0,0,0,0,0", {1, 7, 7, 2}, {0, 0}},
            /* total = F - Y = 2 and 1 */
            {"SAME_UPPER", NULL, {1, 5, 6, 2}, {1, 0}},
            {"SAME_LOWER", "0,0,0,0", {1, 5, 6, 2}, {1, 1}},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        rcase_t c = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
                {{"auto_pad", k[i].auto_pad},
                        {k[i].dst_shape ? "dst_shape" : NULL, k[i].dst_shape}},
                {0}, {0}, {0}, {0}};
        built_t b;
        dgrad_resolved_t r;
        build(&c, &b);
        b.out = lt_dense(dgrad_f32, 4, k[i].out);
        cr_assert_eq(run(&b, &r), dgrad_success, "%zu: %s", i,
                dgrad_last_error_message());
        cr_assert_eq(r.deferred, 0);
        assert_i64s(r.output.dims, k[i].out, 4, "output dims");
        assert_i64s(r.problem.Y, k[i].out + 1, 2, "Y");
        assert_i64s(r.problem.PB, k[i].pb, 2, "PB");
        /* the caller's strides are kept */
        assert_i64s(r.output.strides, b.out.strides, 4, "strides");
    }
    /* the explicit bound still applies to them */
    rcase_t c = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4}, {{0}}, {0}, {0}, {0},
            {0}};
    built_t b;
    dgrad_resolved_t r;
    build(&c, &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 8, 7, 2});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape, "diff_src size (8) on axis "
            "0 cannot be produced");
}

/* oneDNN Graph ConvTranspose: the output shape always follows from the
 * attributes. The first cases are benchdnn's (tests/benchdnn/inputs/graph
 * of oneDNN 3.7.1): op/f32/deconv.json (F = 57, pads_end 41) with its
 * harness_f32_all variants, the post-op pattern's op and the int8
 * pattern's grouped one (IOX [Cin, Cout/G, K...]). */
#define GCT dgrad_op_onednn_conv_transpose
#define DECONV_JSON {{"data_format", "NCX"}, {"weights_format", "IOX"}, \
        {"strides", "2,2"}, {"pads_end", "41,41"}, \
        {"output_padding", "0,0,0,0,0,0,0,0,0,0,0,0"}
static const rcase_t graph_conv_transpose_cases[] = {
        {"deconv.json", GCT, {1, 32, 28, 28}, {32, 128, 3, 3},
                DECONV_JSON, {"auto_pad", "None"}}, {0}, {1, 128, 16, 16},
                {0, 0}, {16, 16}},
        /* SAME: total = max(3 - 2, 0) = 1, Y = X * stride */
        {"deconv.json SAME_UPPER", GCT, {1, 32, 28, 28}, {32, 128, 3, 3},
                DECONV_JSON, {"auto_pad", "SAME_UPPER"}}, {0},
                {1, 128, 56, 56}, {0, 0}, {56, 56}},
        {"deconv.json SAME_LOWER", GCT, {1, 32, 28, 28}, {32, 128, 3, 3},
                DECONV_JSON, {"auto_pad", "SAME_LOWER"}}, {0},
                {1, 128, 56, 56}, {1, 1}, {56, 56}},
        {"deconv.json VALID", GCT, {1, 32, 28, 28}, {32, 128, 3, 3},
                DECONV_JSON, {"auto_pad", "VALID"}}, {0}, {1, 128, 57, 57},
                {0, 0}, {57, 57}},
        {"deconv.json output_padding 1x1", GCT, {1, 32, 28, 28},
                {32, 128, 3, 3},
                {{"data_format", "NCX"}, {"weights_format", "IOX"},
                        {"strides", "2,2"}, {"pads_end", "41,41"},
                        {"output_padding", "1,1"}},
                {0}, {1, 128, 17, 17}, {0, 0}, {17, 17}},
        /* the defaults: NXC data, XOI weights */
        {"deconv.json NXC XOI", GCT, {1, 28, 28, 32}, {3, 3, 128, 32},
                {{"strides", "2,2"}, {"pads_end", "41,41"}}, {0},
                {1, 16, 16, 128}, {0, 0}, {16, 16}},
        {"convtranspose_post_ops_fusion.json", GCT, {2, 17, 5, 5},
                {17, 16, 3, 3},
                {{"data_format", "NCX"}, {"weights_format", "IOX"},
                        {"pads_begin", "1,1"}, {"pads_end", "1,1"}},
                {0}, {2, 16, 5, 5}, {1, 1}, {5, 5}},
        {"groups 4", GCT, {2, 16, 5, 5}, {16, 4, 3, 3},
                {{"data_format", "NCX"}, {"weights_format", "IOX"},
                        {"groups", "4"}, {"pads_begin", "1,1"},
                        {"pads_end", "1,1"}},
                {0}, {2, 16, 5, 5}, {1, 1}, {5, 5}},
        /* dilated kernel 5, stride 2: total 3, Y = 2X */
        {"SAME_UPPER dilated", GCT, {1, 4, 2}, {3, 2, 2},
                {{"strides", "2"}, {"dilations", "2"},
                        {"auto_pad", "same_upper"}},
                {0}, {1, 8, 2}, {1}, {8}},
        {"SAME_LOWER dilated", GCT, {1, 4, 2}, {3, 2, 2},
                {{"strides", "2"}, {"dilations", "2"},
                        {"auto_pad", "same_lower"}},
                {0}, {1, 8, 2}, {2}, {8}},
        /* kernel 1 < stride 3: total 0, Y = F = 7, output_padding adds */
        {"SAME kernel below stride", GCT, {1, 3, 2}, {1, 2, 2},
                {{"strides", "3"}, {"auto_pad", "SAME_UPPER"},
                        {"output_padding", "1"}},
                {0}, {1, 8, 2}, {0}, {8}},
        /* output_padding at or beyond the stride: oneDNN sets no bound */
        {"output_padding beyond the stride", GCT, {1, 1, 3}, {1, 1, 1},
                {{"data_format", "NCX"}, {"weights_format", "IOX"},
                        {"strides", "2"}, {"output_padding", "3"}},
                {0}, {1, 1, 8}, {0}, {8}},
        {"3d", GCT, {1, 2, 3, 4, 8}, {2, 2, 2, 3, 8},
                {{"strides", "2,1,1"}, {"pads_begin", "0,1,0"},
                        {"pads_end", "1,0,0"}},
                {0}, {1, 3, 3, 5, 3}, {0, 1, 0}, {3, 3, 5}},
};

Test(problem_graph_conv_transpose, table) {
    CHECK_TABLE(graph_conv_transpose_cases);
}

/* Output dims given in the dst tensor are checked, never taken: oneDNN's
 * shape inference validates them against the inferred ones. */
Test(problem_graph_conv_transpose, output_dims_are_checked_not_taken) {
    rcase_t c = graph_conv_transpose_cases[0];
    built_t b;
    dgrad_resolved_t r;
    build(&c, &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 128, 16, 16});
    cr_assert_eq(run(&b, &r), dgrad_success, "%s",
            dgrad_last_error_message());
    assert_i64s(r.problem.Y, (int64_t[]){16, 16}, 2, "Y");
    /* 17 would be a legal ConvolutionBackwardData output-padding tail */
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 128, 17, 16});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "onednn:ConvTranspose: requested dst dims (1,128,17,16) do "
            "not match the inferred dims (1,128,16,16)");
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 64, 16, 16});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape, "requested dst dims "
            "(1,64,16,16)");
}

Test(problem_graph_conv_transpose, bias_and_weights_layouts) {
    /* XOI [K, Cout/G, Cin] and IOX [Cin, Cout/G, K] map to the canonical
     * [G, Cin/G, Cout/G, K] strides alike; the bias has Cout values. */
    static const int64_t iox[] = {8, 3, 5}, xoi[] = {5, 3, 8};
    for (int kf = 0; kf < 2; kf++) {
        rcase_t c = {"", GCT, {1, 8, 4}, {0},
                {{"data_format", "NCX"}, {"weights_format", kf ? "XOI" : "IOX"},
                        {"groups", "2"}},
                {0}, {0}, {0}, {0}};
        memcpy(c.wei, kf ? xoi : iox, sizeof iox);
        built_t b;
        dgrad_resolved_t r;
        build(&c, &b);
        int64_t six = 6;
        b.in[2] = lt_dense(dgrad_f32, 1, &six);
        b.n_inputs = 3;
        cr_assert_eq(run(&b, &r), dgrad_success, "%s",
                dgrad_last_error_message());
        const dgrad_problem_t *p = &r.problem;
        cr_assert(p->G == 2 && p->Cin == 8 && p->Cout == 6 && p->K[0] == 5
                && p->Y[0] == 8 && p->has_bias == 1 && p->bias_stride == 1);
        /* canonical [G, Cin/G, Cout/G, K]: IOX strides {15, 5, 1}, XOI
         * {1, 8, 24} */
        const int64_t want[2][4] = {{60, 15, 5, 1}, {4, 1, 8, 24}};
        assert_i64s(p->wei_strides, want[kf], 4, "weight strides");
        int64_t five = 5;
        b.in[2] = lt_dense(dgrad_f32, 1, &five);
        ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
                "bias length (5) must equal the output channels (6)");
    }
}

Test(problem_graph_conv_transpose, errors_name_the_rule) {
    rcase_t c = graph_conv_transpose_cases[7]; /* groups 4 */
    c.attrs[2].value = "3";
    expect_case_error(&c, dgrad_invalid_arguments,
            "onednn:ConvTranspose: groups (3) does not divide src channels "
            "(16)");
    c = graph_conv_transpose_cases[6];
    c.wei[0] = 16;
    expect_case_error(&c, dgrad_invalid_shape, "weights input channels (16) "
            "do not match src channels (17)");
    c = graph_conv_transpose_cases[0];
    c.attrs[3].value = "-1,0";
    expect_case_error(&c, dgrad_invalid_arguments,
            "pads_end (-1,0) must all be non-negative");
    c = graph_conv_transpose_cases[0];
    c.attrs[4].value = "1";
    expect_case_error(&c, dgrad_invalid_arguments,
            "output_padding has 1 values, expected 2 for spatial rank 2");
    /* pads larger than the output: Y = 57 - 60 < 1 */
    c.attrs[3].value = "60,41";
    c.attrs[4].value = "0,0";
    expect_case_error(&c, dgrad_invalid_shape,
            "inferred dst size (-3) on axis 0 must be at least 1");
    /* the other op's weights formats and attributes are refused with a
     * pointer to it */
    dgrad_op_desc_t d;
    cr_assert_eq(dgrad_op_desc_init(&d, GCT), dgrad_success);
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "weights_format", "OIX"),
            dgrad_invalid_arguments, "weights_format 'OIX' is not one of "
            "XOI, IOX");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "pads", "1,1,1,1"),
            dgrad_invalid_arguments, "(ONNX's ConvTranspose is op kind "
            "ConvTranspose)");
    cr_assert_eq(dgrad_op_desc_init(&d, ONNX), dgrad_success);
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "pads_begin", "1,1"),
            dgrad_invalid_arguments, "unknown attribute 'pads_begin' (this "
            "op has: strides, pads, dilations, output_padding, auto_pad, "
            "group, output_shape, kernel_shape) (oneDNN Graph's "
            "ConvTranspose is op kind onednn:ConvTranspose)");
    cr_assert_eq(dgrad_op_desc_init(&d, GRAPH), dgrad_success);
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "weights_format", "IOX"),
            dgrad_invalid_arguments, "weights_format 'IOX' is not one of "
            "XIO, OIX");
}

/* ------------------------------------------------- strides and layouts */

Test(problem_strides, nxc_xio_mapping) {
    dgrad_resolved_t r;
    cr_assert_eq(run_case(&graph_cases[5], &r), dgrad_success, "%s",
            dgrad_last_error_message());
    const dgrad_problem_t *p = &r.problem;
    cr_assert_eq(p->N, 2);
    cr_assert_eq(p->G, 2);
    cr_assert_eq(p->Cin, 16);
    cr_assert_eq(p->Cout, 8);
    assert_i64s(p->X, (int64_t[]){5, 5}, 2, "X");
    assert_i64s(p->K, (int64_t[]){3, 3}, 2, "K");
    assert_i64s(p->S, (int64_t[]){2, 2}, 2, "S");
    /* diff_dst [2,5,5,16] dense: strides 400,80,16,1 -> [N, C, X...] */
    assert_i64s(p->in_strides, (int64_t[]){400, 1, 80, 16}, 4, "in");
    /* XIO [3,3,4,16] dense: 192,64,16,1 -> [G, Cin/G, Cout/G, K...] */
    assert_i64s(p->wei_strides, (int64_t[]){8, 1, 16, 192, 64}, 5, "wei");
    /* NXC output chosen dense channels-last: [2,11,11,8] */
    assert_i64s(r.output.strides, (int64_t[]){968, 88, 8, 1}, 4, "output");
    assert_i64s(p->out_strides, (int64_t[]){968, 1, 88, 8}, 4, "out");
}

Test(problem_strides, oix_groups_and_channels_last_under_ncx) {
    const rcase_t k = {"OIX groups", GRAPH, {1, 16, 4, 4}, {16, 4, 3, 3},
            {{"data_format", "NCX"}, {"weights_format", "OIX"},
                    {"groups", "2"}, {"dst_shape", "1,8,6,6"}},
            {0}, {1, 8, 6, 6}, {0, 0}, {6, 6}};
    check_case(&k);
    dgrad_resolved_t r;
    cr_assert_eq(run_case(&k, &r), dgrad_success);
    /* OIX [16,4,3,3] dense 36,9,3,1: g = (Cin/G) * 36 */
    assert_i64s(r.problem.wei_strides, (int64_t[]){288, 36, 9, 3, 1}, 5,
            "wei");
    assert_i64s(r.problem.in_strides, (int64_t[]){256, 16, 4, 1}, 4, "in");
    /* NCX dims, channels-last strides: C innermost, then W, H, N */
    assert_i64s(r.output.strides, (int64_t[]){288, 1, 48, 8}, 4, "output");
    assert_i64s(r.problem.out_strides, (int64_t[]){288, 1, 48, 8}, 4, "out");
}

Test(problem_strides, grouped_openvino_weights_identity) {
    dgrad_resolved_t r;
    cr_assert_eq(run_case(&group_openvino_cases[1], &r), dgrad_success);
    /* [4,5,2,3,3] dense */
    assert_i64s(r.problem.wei_strides, (int64_t[]){90, 18, 9, 3, 1}, 5, "wei");
    cr_assert_eq(r.problem.G, 4);
    cr_assert_eq(r.problem.Cin, 20);
    cr_assert_eq(r.problem.Cout, 8);
}

Test(problem_strides, requested_strided_output_is_kept) {
    built_t b;
    const rcase_t k = {"", OV, {1, 2, 3}, {2, 3, 3}, {{0}}, {0}, {0}, {0},
            {0}};
    build(&k, &b);
    b.out = lt_strided(dgrad_f32, 3, (int64_t[]){1, 3, 5},
            (int64_t[]){100, 20, 2});
    dgrad_resolved_t r;
    cr_assert_eq(run(&b, &r), dgrad_success, "%s", dgrad_last_error_message());
    assert_i64s(r.output.strides, (int64_t[]){100, 20, 2}, 3, "output");
    assert_i64s(r.problem.out_strides, (int64_t[]){100, 20, 2}, 3, "out");
    /* layout any with the same dims: channels-last chosen */
    b.out.layout_type = dgrad_layout_type_any;
    cr_assert_eq(run(&b, &r), dgrad_success);
    assert_i64s(r.output.strides, (int64_t[]){15, 1, 3}, 3, "any");
}

/* Layout any: the order the caller gives (the backend's choice), else
 * row-major in the dialect's order; an order that does not name each
 * axis once is refused. */
Test(problem_strides, any_layout_follows_the_given_order) {
    built_t b;
    const rcase_t k = {"", OV, {1, 2, 3}, {2, 3, 3}, {{0}}, {0}, {0}, {0},
            {0}};
    build(&k, &b);
    b.out = lt_unknown();
    dgrad_resolved_t r;
    const int nwc[] = {0, 2, 1}, wnc[] = {2, 0, 1}, bad[] = {0, 0, 1};
    cr_assert_eq(dgrad_problem_resolve_with_layout(&b.desc, 2, b.in, &b.out,
                         NULL, 0, nwc, &r), dgrad_success);
    assert_i64s(r.output.dims, (int64_t[]){1, 3, 5}, 3, "dims");
    assert_i64s(r.output.strides, (int64_t[]){15, 1, 3}, 3, "nwc");
    cr_assert_eq(dgrad_problem_resolve_with_layout(&b.desc, 2, b.in, &b.out,
                         NULL, 0, wnc, &r), dgrad_success);
    assert_i64s(r.output.strides, (int64_t[]){3, 1, 3}, 3, "wnc");
    cr_assert_eq(dgrad_problem_resolve(&b.desc, 2, b.in, &b.out, NULL, 0, &r),
            dgrad_success);
    assert_i64s(r.output.strides, (int64_t[]){15, 5, 1}, 3, "row-major");
    cr_assert_eq(dgrad_problem_resolve_with_layout(&b.desc, 2, b.in, &b.out,
                         NULL, 0, bad, &r), dgrad_invalid_arguments);
    cr_assert(strstr(dgrad_last_error_message(), "the axis order for output of "
                    "layout any must name each of its 3 axes once"),
            "%s", dgrad_last_error_message());
}

Test(problem_strides, user_strides_are_mapped_not_assumed) {
    built_t b;
    const rcase_t k = {"", OV, {1, 2, 3}, {2, 3, 3}, {{0}}, {0}, {0}, {0},
            {0}};
    build(&k, &b);
    /* data with channels-last strides under NCX dims, padded weights */
    b.in[0] = lt_strided(dgrad_f32, 3, (int64_t[]){1, 2, 3},
            (int64_t[]){6, 1, 2});
    b.in[1] = lt_strided(dgrad_f32, 3, (int64_t[]){2, 3, 3},
            (int64_t[]){40, 10, 1});
    dgrad_resolved_t r;
    cr_assert_eq(run(&b, &r), dgrad_success);
    assert_i64s(r.problem.in_strides, (int64_t[]){6, 1, 2}, 3, "in");
    assert_i64s(r.problem.wei_strides, (int64_t[]){80, 40, 10, 1}, 4, "wei");
}

Test(problem_strides, onnx_bias) {
    built_t b;
    const rcase_t k = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3}, {{0}}, {0},
            {0}, {0}, {0}};
    build(&k, &b);
    b.in[2] = lt_strided(dgrad_f32, 1, (int64_t[]){2}, (int64_t[]){3});
    b.n_inputs = 3;
    dgrad_resolved_t r;
    cr_assert_eq(run(&b, &r), dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_eq(r.problem.has_bias, 1);
    cr_assert_eq(r.problem.bias_stride, 3);
    b.n_inputs = 2;
    cr_assert_eq(run(&b, &r), dgrad_success);
    cr_assert_eq(r.problem.has_bias, 0);
    cr_assert_eq(r.problem.bias_stride, 0);
}

/* ----------------------------------------------------------- deferred */

static const rcase_t graph_deferred = {"deferred", GRAPH, {1, 4, 4, 3},
        {3, 3, 2, 3}, {{0}}, {1, 6, 6, 2}, {1, 6, 6, 2}, {0, 0}, {6, 6}};

Test(problem_deferred, shape_input_without_values) {
    built_t b;
    build(&graph_deferred, &b);
    dgrad_resolved_t r;
    cr_assert_eq(dgrad_problem_resolve(&b.desc, 3, b.in, &b.out, NULL, 0, &r),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_eq(r.deferred, 1);
    assert_i64s(r.output.dims, (int64_t[]){1, U, U, 2}, 4, "dims");
    cr_assert_eq(r.output.ndims, 4);
    cr_assert_eq(r.problem.N, 1);
    cr_assert_eq(r.problem.Cout, 2);
    assert_i64s(r.problem.Y, (int64_t[]){0, 0, 0}, 3, "Y");
    assert_i64s(r.problem.PB, (int64_t[]){0, 0, 0}, 3, "PB");
    /* the values at execution resolve it */
    check_case(&graph_deferred);
}

Test(problem_deferred, known_output_dims_stand_for_values) {
    built_t b;
    build(&graph_deferred, &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 6, 6, 2});
    dgrad_resolved_t r;
    cr_assert_eq(dgrad_problem_resolve(&b.desc, 3, b.in, &b.out, NULL, 0, &r),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_eq(r.deferred, 0);
    assert_i64s(r.problem.Y, (int64_t[]){6, 6}, 2, "Y");
}

/* A deferred output keeps the spatial dims the caller knows, and the
 * values at execution must agree with them. */
Test(problem_deferred, known_spatial_dims_are_kept_and_checked) {
    built_t b;
    build(&graph_deferred, &b);
    cr_assert_eq(dgrad_op_desc_set_by_name(&b.desc, "auto_pad", "SAME_UPPER"),
            dgrad_success);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 6, U, 2});
    dgrad_resolved_t r;
    cr_assert_eq(dgrad_problem_resolve(&b.desc, 3, b.in, &b.out, NULL, 0, &r),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_eq(r.deferred, 1);
    assert_i64s(r.output.dims, (int64_t[]){1, 6, U, 2}, 4, "dims");
    /* execution resolves against the compiled output */
    dgrad_logical_tensor_t compiled = r.output;
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 3, b.in, &compiled,
                       (int64_t[]){1, 7, 6, 2}, 4, &r),
            dgrad_invalid_shape, "requested diff_src dims (1,6,-1,2) do not "
                                 "match the inferred dims (1,7,6,2)");
    cr_assert_eq(dgrad_problem_resolve(&b.desc, 3, b.in, &compiled,
                         (int64_t[]){1, 6, 7, 2}, 4, &r),
            dgrad_success, "%s", dgrad_last_error_message());
    assert_i64s(r.problem.Y, (int64_t[]){6, 7}, 2, "Y");
}

Test(problem_deferred, openvino_and_known_channels_checked) {
    const rcase_t k = {"", OV, {1, 2, 3}, {2, 3, 3}, {{0}}, {7}, {0}, {0},
            {0}};
    built_t b;
    build(&k, &b);
    b.in[2].data_type = dgrad_s32;
    dgrad_resolved_t r;
    cr_assert_eq(dgrad_problem_resolve(&b.desc, 3, b.in, &b.out, NULL, 0, &r),
            dgrad_success, "%s", dgrad_last_error_message());
    cr_assert_eq(r.deferred, 1);
    assert_i64s(r.output.dims, (int64_t[]){1, 3, U}, 3, "dims");
    /* a known channel count that disagrees is still an error */
    b.out = lt_dense(dgrad_f32, 3, (int64_t[]){1, 4, U});
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 3, b.in, &b.out, NULL, 0, &r),
            dgrad_invalid_shape, "(1,4,-1) do not match the inferred dims "
                                 "(1,3,-1)");
}

/* -------------------------------------------------- result properties */

Test(problem_result, bytewise_deterministic) {
    built_t b;
    build(&graph_cases[5], &b);
    dgrad_resolved_t r1, r2;
    memset(&r1, 0xAA, sizeof r1);
    memset(&r2, 0x55, sizeof r2);
    cr_assert_eq(run(&b, &r1), dgrad_success);
    cr_assert_eq(run(&b, &r2), dgrad_success);
    cr_assert_eq(memcmp(&r1, &r2, sizeof r1), 0);
}

Test(problem_result, failure_writes_nothing) {
    built_t b;
    build(&graph_cases[5], &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){2, 12, 12, 8}); /* too big */
    dgrad_resolved_t r, before;
    memset(&r, 0x5A, sizeof r);
    memcpy(&before, &r, sizeof r);
    cr_assert_neq(run(&b, &r), dgrad_success);
    cr_assert_eq(memcmp(&r, &before, sizeof r), 0);
}

/* ------------------------------------------------------------- names */

Test(problem_names, kinds) {
    const char *names[] = {"ConvolutionBackwardData",
            "ConvolutionBackpropData", "GroupConvolutionBackpropData",
            "ConvTranspose"};
    for (int k = 1; k <= 4; k++) {
        dgrad_op_kind_t kind = dgrad_op_kind_undef;
        cr_assert_str_eq(dgrad_op_kind_name((dgrad_op_kind_t)k), names[k - 1]);
        cr_assert_eq(dgrad_op_kind_from_name(names[k - 1], &kind),
                dgrad_success);
        cr_assert_eq(kind, (dgrad_op_kind_t)k);
    }
    cr_assert_str_eq(dgrad_op_kind_name((dgrad_op_kind_t)99), "undef");
    dgrad_op_kind_t kind = dgrad_op_kind_undef;
    ASSERT_ERR(dgrad_op_kind_from_name("Deconvolution", &kind),
            dgrad_invalid_arguments, "'Deconvolution'");
    cr_assert_eq(kind, dgrad_op_kind_undef);
    ASSERT_ERR(dgrad_op_kind_from_name(NULL, &kind), dgrad_invalid_arguments,
            "NULL");
    cr_assert_eq(dgrad_op_kind_third_input(GRAPH),
            dgrad_third_input_full_shape);
    cr_assert_eq(dgrad_op_kind_third_input(OV),
            dgrad_third_input_spatial_shape);
    cr_assert_eq(dgrad_op_kind_third_input(GOV),
            dgrad_third_input_spatial_shape);
    cr_assert_eq(dgrad_op_kind_third_input(ONNX), dgrad_third_input_bias);
    cr_assert_eq(dgrad_op_kind_third_input(dgrad_op_kind_undef),
            dgrad_third_input_none);
}

Test(problem_names, attributes_and_types) {
    for (int a = 1; a < dgrad_op_attr_count; a++)
        cr_assert_eq(dgrad_op_attr_from_name(
                             dgrad_op_attr_name((dgrad_op_attr_t)a)),
                (dgrad_op_attr_t)a);
    cr_assert_str_eq(dgrad_op_attr_name(dgrad_op_attr_output_padding),
            "output_padding");
    cr_assert_eq(dgrad_op_attr_from_name("stride"), dgrad_op_attr_undef);
    cr_assert_eq(dgrad_op_attr_from_name(NULL), dgrad_op_attr_undef);
    cr_assert_str_eq(dgrad_op_attr_name(dgrad_op_attr_count), "undef");
    cr_assert_str_eq(dgrad_data_type_name(dgrad_bf16), "bf16");
    cr_assert_str_eq(dgrad_data_type_name(dgrad_s64), "s64");
    cr_assert_str_eq(dgrad_data_type_name((dgrad_data_type_t)77), "undef");
    cr_assert_eq(dgrad_data_type_size(dgrad_f32), 4);
    cr_assert_eq(dgrad_data_type_size(dgrad_f16), 2);
    cr_assert_eq(dgrad_data_type_size(dgrad_s64), 8);
    cr_assert_eq(dgrad_data_type_size(dgrad_data_type_undef), 0);
}

/* ------------------------------------------------------------ setters */

static dgrad_op_desc_t desc_of(dgrad_op_kind_t kind) {
    dgrad_op_desc_t d;
    cr_assert_eq(dgrad_op_desc_init(&d, kind), dgrad_success);
    return d;
}

Test(problem_setters, values_are_stored) {
    dgrad_op_desc_t d = desc_of(GRAPH);
    cr_assert_eq(dgrad_op_desc_set_s64(&d, dgrad_op_attr_groups, 4), 0);
    cr_assert_eq(d.attrs[dgrad_op_attr_groups].values[0], 4);
    /* a scalar may come as a list of one */
    cr_assert_eq(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_groups,
                         (int64_t[]){3}, 1), 0);
    cr_assert_eq(d.attrs[dgrad_op_attr_groups].values[0], 3);
    cr_assert_eq(dgrad_op_desc_set_str(&d, dgrad_op_attr_auto_pad,
                         "same_lower"), 0);
    cr_assert_str_eq(d.attrs[dgrad_op_attr_auto_pad].text, "same_lower");
    cr_assert_eq(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_strides, NULL, 0),
            0, "an empty list is accepted (its length is checked later)");
}

Test(problem_setters, unknown_attribute) {
    dgrad_op_desc_t d = desc_of(ONNX);
    ASSERT_ERR(dgrad_op_desc_set_s64(&d, dgrad_op_attr_groups, 2),
            dgrad_invalid_arguments,
            "ConvTranspose: unknown attribute 'groups' (this op has: strides, "
            "pads, dilations, output_padding, auto_pad, group, output_shape, "
            "kernel_shape)");
    d = desc_of(OV);
    ASSERT_ERR(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_pads,
                       (int64_t[]){0, 0}, 2),
            dgrad_invalid_arguments, "unknown attribute 'pads'");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "foo", "1"),
            dgrad_invalid_arguments, "unknown attribute 'foo'");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "data_format", "NCX"),
            dgrad_invalid_arguments, "unknown attribute 'data_format'");
    ASSERT_ERR(dgrad_op_desc_set_s64(&d, (dgrad_op_attr_t)99, 1),
            dgrad_invalid_arguments, "unknown attribute");
}

Test(problem_setters, wrong_value_type) {
    dgrad_op_desc_t d = desc_of(GRAPH);
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_strides, "2"),
            dgrad_invalid_arguments, "strides takes an integer list, not a "
                                     "string");
    ASSERT_ERR(dgrad_op_desc_set_s64(&d, dgrad_op_attr_strides, 2),
            dgrad_invalid_arguments, "strides takes an integer list");
    ASSERT_ERR(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_auto_pad,
                       (int64_t[]){1}, 1),
            dgrad_invalid_arguments, "auto_pad takes a string");
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_groups, "2"),
            dgrad_invalid_arguments, "groups takes an integer, not a string");
    ASSERT_ERR(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_groups,
                       (int64_t[]){1, 2}, 2),
            dgrad_invalid_arguments, "groups takes one value (got 2)");
}

Test(problem_setters, too_many_values) {
    dgrad_op_desc_t d = desc_of(ONNX);
    int64_t v[13] = {0};
    ASSERT_ERR(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_pads, v, 13),
            dgrad_invalid_arguments, "pads has 13 values, at most 12");
    cr_assert_eq(d.attrs[dgrad_op_attr_pads].is_set, 0);
}

Test(problem_setters, unknown_string_values) {
    dgrad_op_desc_t d = desc_of(GRAPH);
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_auto_pad, "SAME"),
            dgrad_invalid_arguments,
            "ConvolutionBackwardData: auto_pad 'SAME' is not one of None, "
            "SAME_UPPER, SAME_LOWER, VALID, explicit");
    /* formats are case-sensitive, as oneDNN Graph spells them */
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_data_format, "nxc"),
            dgrad_invalid_arguments, "data_format 'nxc' is not one of NXC, "
                                     "NCX");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "weights_format", "IOX"),
            dgrad_invalid_arguments, "weights_format 'IOX' is not one of XIO, "
                                     "OIX");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "data_format", "NHWC"),
            dgrad_invalid_arguments, "ConvolutionBackwardData: data_format "
                                     "'NHWC' is not one of NXC, NCX");
    d = desc_of(OV);
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_auto_pad, "None"),
            dgrad_invalid_arguments, "auto_pad 'None' is not one of explicit, "
                                     "notset, same_upper, same_lower, valid");
    d = desc_of(ONNX);
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_auto_pad, "explicit"),
            dgrad_invalid_arguments, "auto_pad 'explicit'");
    cr_assert_eq(dgrad_op_desc_set_str(&d, dgrad_op_attr_auto_pad, "notset"),
            dgrad_success);
}

Test(problem_setters, null_pointers) {
    dgrad_op_desc_t d = desc_of(GRAPH);
    ASSERT_ERR(dgrad_op_desc_init(NULL, GRAPH), dgrad_invalid_arguments,
            "NULL");
    ASSERT_ERR(dgrad_op_desc_init(&d, (dgrad_op_kind_t)9),
            dgrad_invalid_arguments, "unknown op kind (9)");
    ASSERT_ERR(dgrad_op_desc_set_s64(NULL, dgrad_op_attr_groups, 1),
            dgrad_invalid_arguments, "NULL");
    ASSERT_ERR(dgrad_op_desc_set_s64s(&d, dgrad_op_attr_strides, NULL, 2),
            dgrad_invalid_arguments, "values is NULL");
    ASSERT_ERR(dgrad_op_desc_set_str(&d, dgrad_op_attr_auto_pad, NULL),
            dgrad_invalid_arguments, "value is NULL");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, NULL, "1"),
            dgrad_invalid_arguments, "name is NULL");
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "strides", NULL),
            dgrad_invalid_arguments, "value is NULL");
}

/* ------------------------------------------------------------ by name */

Test(problem_by_name, accepted_forms) {
    static const struct {
        const char *text;
        int n;
        int64_t v[3];
    } forms[] = {{"2", 1, {2}}, {"2,3", 2, {2, 3}}, {"[2, 3]", 2, {2, 3}},
            {"2 3", 2, {2, 3}}, {"-1", 1, {-1}}, {" [ 4 ,5 , 6 ] ", 3,
                    {4, 5, 6}}, {"[7]", 1, {7}}, {"+3", 1, {3}},
            {"[]", 0, {0}}, {" [ ] ", 0, {0}}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        dgrad_op_desc_t d = desc_of(ONNX);
        cr_assert_eq(dgrad_op_desc_set_by_name(&d, "pads", forms[i].text),
                dgrad_success, "'%s': %s", forms[i].text,
                dgrad_last_error_message());
        const dgrad_attr_value_t *a = &d.attrs[dgrad_op_attr_pads];
        cr_assert_eq(a->is_set, 1, "'%s'", forms[i].text);
        cr_assert_eq(a->count, forms[i].n, "'%s'", forms[i].text);
        assert_i64s(a->values, forms[i].v, forms[i].n, forms[i].text);
    }
    dgrad_op_desc_t d = desc_of(ONNX);
    cr_assert_eq(dgrad_op_desc_set_by_name(&d, "group", "4"), dgrad_success);
    cr_assert_eq(d.attrs[dgrad_op_attr_group].values[0], 4);
    cr_assert_eq(dgrad_op_desc_set_by_name(&d, "auto_pad", "same_upper"),
            dgrad_success);
    cr_assert_str_eq(d.attrs[dgrad_op_attr_auto_pad].text, "same_upper");
}

Test(problem_by_name, parsing_errors) {
    static const struct {
        const char *text, *msg;
    } bad[] = {{"2x", "'2x' is not an integer list"},
            {"", "'' is empty (write [] for a list of zero values)"},
            {"  ", "is empty"}, {"[", "is empty"},
            {"[]]", "not an integer list"}, {"[],", "not an integer list"},
            {"99999999999999999999", "overflows 64 bits"},
            {"-99999999999999999999", "overflows 64 bits"},
            {"2,,2", "not an integer list"}, {"2,", "not an integer list"},
            {",2", "not an integer list"}, {"[2,2", "not an integer list"},
            {"2]", "not an integer list"}, {"[2]]", "not an integer list"},
            {"0x10", "not an integer list"}, {"2 x", "not an integer list"},
            {"- 2", "not an integer list"}, {"1.5", "not an integer list"},
            {"1,2,3,4,5,6,7,8,9,10,11,12,13", "has more than 12 values"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dgrad_op_desc_t d = desc_of(GRAPH);
        ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "strides", bad[i].text),
                dgrad_invalid_arguments, bad[i].msg);
        cr_assert_eq(d.attrs[dgrad_op_attr_strides].is_set, 0, "'%s'",
                bad[i].text);
    }
    dgrad_op_desc_t d = desc_of(GRAPH);
    ASSERT_ERR(dgrad_op_desc_set_by_name(&d, "groups", "2,2"),
            dgrad_invalid_arguments, "groups takes one value (got 2)");
    /* a failed set leaves the previous value */
    cr_assert_eq(dgrad_op_desc_set_by_name(&d, "strides", "2,2"), 0);
    cr_assert_neq(dgrad_op_desc_set_by_name(&d, "strides", "3x"), 0);
    assert_i64s(d.attrs[dgrad_op_attr_strides].values, (int64_t[]){2, 2}, 2,
            "strides");
}

/* --------------------------------------------- resolve: one per rule */

/* A valid OpenVINO 2-D problem the rules below break one at a time. */
static const rcase_t ov_base = {"ov", OV, {1, 4, 5, 5}, {4, 2, 3, 3},
        {{0}}, {0}, {1, 2, 7, 7}, {0, 0}, {7, 7}};

Test(problem_errors, base_case_is_valid) { check_case(&ov_base); }

Test(problem_errors, null_pointers_and_input_count) {
    built_t b;
    build(&ov_base, &b);
    dgrad_resolved_t r;
    ASSERT_ERR(dgrad_problem_resolve(NULL, 2, b.in, &b.out, NULL, 0, &r),
            dgrad_invalid_arguments, "desc is NULL");
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 2, NULL, &b.out, NULL, 0, &r),
            dgrad_invalid_arguments, "inputs is NULL");
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 2, b.in, NULL, NULL, 0, &r),
            dgrad_invalid_arguments, "output is NULL");
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 2, b.in, &b.out, NULL, 0, NULL),
            dgrad_invalid_arguments, "out is NULL");
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 1, b.in, &b.out, NULL, 0, &r),
            dgrad_invalid_arguments, "ConvolutionBackpropData: 1 inputs given");
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 4, b.in, &b.out, NULL, 0, &r),
            dgrad_invalid_arguments, "4 inputs given");
    b.desc.kind = (dgrad_op_kind_t)17;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments, "unknown op kind (17)");
}

Test(problem_errors, data_types) {
    built_t b;
    dgrad_resolved_t r;
    build(&ov_base, &b);
    b.in[1].data_type = dgrad_bf16;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_data_type,
            "data data type (f32) and weights data type (bf16) differ");
    build(&ov_base, &b);
    b.in[0].data_type = dgrad_s32;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_data_type,
            "data data type (s32) is not one of f32, bf16, f16");
    build(&ov_base, &b);
    b.out.data_type = dgrad_f16;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_data_type,
            "output data type (f16) differs from data data type (f32)");
    /* undef output type means "the same" */
    b.out.data_type = dgrad_data_type_undef;
    cr_assert_eq(run(&b, &r), dgrad_success);
    cr_assert_eq(r.output.data_type, dgrad_f32);
    const rcase_t shaped = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3}, {{0}},
            {7, 7}, {0}, {0}, {0}};
    build(&shaped, &b);
    b.in[2].data_type = dgrad_f32;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_data_type,
            "output_shape data type (f32) is not s32 or s64");
    const rcase_t onnx = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3}, {{0}}, {0},
            {0}, {0}, {0}};
    build(&onnx, &b);
    b.in[2] = lt_dense(dgrad_bf16, 1, (int64_t[]){2});
    b.n_inputs = 3;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_data_type,
            "B data type (bf16) differs from X data type (f32)");
}

Test(problem_errors, layouts) {
    built_t b;
    dgrad_resolved_t r;
    build(&ov_base, &b);
    b.in[1].layout_type = dgrad_layout_type_any;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments,
            "weights layout (any) must be strided");
    build(&ov_base, &b);
    b.in[0].dims[3] = U;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "data dims (1,4,5,-1) must all be known");
    build(&ov_base, &b);
    b.in[0].ndims = DGRAD_UNKNOWN_NDIMS;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape, "data rank (-1)");
    build(&ov_base, &b);
    b.in[1].strides[0] = -18;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments,
            "weights strides (-18,9,3,1) must be non-negative");
    build(&ov_base, &b);
    b.out.layout_type = dgrad_layout_type_undef;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments,
            "output layout (undef) must be strided or any");
    build(&ov_base, &b);
    b.out = lt_strided(dgrad_f32, 4, (int64_t[]){1, 2, 7, 7},
            (int64_t[]){98, 49, 7, -1});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments,
            "output strides (98,49,7,-1) must be non-negative");
}

Test(problem_errors, ranks) {
    const rcase_t data2 = {"", OV, {4, 5}, {4, 2, 3}, {{0}}, {0}, {0}, {0},
            {0}};
    expect_case_error(&data2, dgrad_invalid_shape,
            "data rank (2) must be 3, 4 or 5");
    const rcase_t group_wei = {"", GOV, {1, 4, 5, 5}, {2, 2, 3, 3}, {{0}},
            {0}, {0}, {0}, {0}};
    expect_case_error(&group_wei, dgrad_invalid_shape,
            "weights rank (4) must be 5");
    const rcase_t wei = {"", OV, {1, 4, 5, 5}, {4, 2, 3}, {{0}}, {0}, {0},
            {0}, {0}};
    expect_case_error(&wei, dgrad_invalid_shape, "weights rank (3) must be 4");
    const rcase_t shape_len = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3}, {{0}},
            {7, 7, 7}, {0}, {0}, {0}};
    expect_case_error(&shape_len, dgrad_invalid_shape,
            "output_shape length (3) must equal the spatial rank (2)");
    const rcase_t dst_len = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4}, {{0}},
            {7, 7}, {0}, {0}, {0}};
    expect_case_error(&dst_len, dgrad_invalid_shape,
            "dst_shape length (2) must equal the diff_src rank (4)");
    const rcase_t onnx4d = {"", ONNX, {1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1},
            {{0}}, {0}, {0}, {0}, {0}};
    expect_case_error(&onnx4d, dgrad_unimplemented, "X rank (6)");
    const rcase_t zero = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3}, {{0}}, {0},
            {0}, {0}, {0}};
    built_t b;
    dgrad_resolved_t r;
    build(&zero, &b);
    b.in[1].dims[1] = 0;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "weights dims (4,0,3,3) must all be at least 1");
    build(&ov_base, &b);
    b.out = lt_dense(dgrad_f32, 3, (int64_t[]){1, 2, 7});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "output rank (3) must equal data rank (4)");
    build(&ov_base, &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 2, 7, 7});
    b.out.dims[2] = -3;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape, "output dims (1,2,-3,7)");
    const rcase_t onnx = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3}, {{0}}, {0},
            {0}, {0}, {0}};
    build(&onnx, &b);
    b.in[2] = lt_dense(dgrad_f32, 2, (int64_t[]){1, 2});
    b.n_inputs = 3;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape, "B rank (2) must be 1");
}

Test(problem_errors, overflow) {
    built_t b;
    dgrad_resolved_t r;
    const int64_t big = (int64_t)1 << 31;
    build(&ov_base, &b);
    b.in[0] = lt_strided(dgrad_f32, 4, (int64_t[]){big, big, big, 2},
            (int64_t[]){0, 0, 0, 0});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "element count overflows 64 bits");
    build(&ov_base, &b);
    b.in[0].strides[0] = INT64_MAX / 2; /* only N = 1: no offset from it */
    b.in[0].strides[1] = INT64_MAX / 2;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "data (dims 1,4,5,5) largest element offset overflows 64 bits");
    build(&ov_base, &b);
    b.in[1] = lt_strided(dgrad_f32, 4, (int64_t[]){4, 2, 3, 3},
            (int64_t[]){INT64_MAX / 6, 0, 0, 0});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "weights (dims 4,2,3,3) byte size overflows 64 bits");
    /* natural size: stride * (X - 1) */
    build(&ov_base, &b);
    cr_assert_eq(dgrad_op_desc_set_s64s(&b.desc, dgrad_op_attr_strides,
                         (int64_t[]){INT64_MAX / 2, 1}, 2), 0);
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "natural output size on axis 0");
    /* explicit: F - pads_begin - pads_end */
    build(&ov_base, &b);
    cr_assert_eq(dgrad_op_desc_set_s64s(&b.desc, dgrad_op_attr_pads_begin,
                         (int64_t[]){INT64_MAX, 0}, 2), 0);
    cr_assert_eq(dgrad_op_desc_set_s64s(&b.desc, dgrad_op_attr_pads_end,
                         (int64_t[]){INT64_MAX, 0}, 2), 0);
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "output size on axis 0 overflows 64 bits");
    /* the chosen output does not fit */
    const rcase_t huge = {"", OV, {1, 1, 1 << 30, 1 << 30}, {1, 1, 1, 1},
            {{"strides", "65536,65536"}}, {0}, {0}, {0}, {0}};
    build(&huge, &b);
    b.in[0] = lt_strided(dgrad_f32, 4, huge.data, (int64_t[]){0, 0, 0, 0});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "output (dims 1,1,70368744112129,70368744112129) element count "
            "overflows 64 bits");
}

Test(problem_errors, attribute_lengths) {
    const rcase_t strides = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3},
            {{"strides", "2,2,2"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&strides, dgrad_invalid_arguments,
            "strides has 3 values, expected 2 for spatial rank 2");
    const rcase_t pads = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"pads", "1,1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&pads, dgrad_invalid_arguments,
            "pads has 2 values, expected 4 for spatial rank 2");
    const rcase_t dst = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "1,7,7"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&dst, dgrad_invalid_arguments,
            "dst_shape has 3 values, expected 4 for spatial rank 2");
    const rcase_t out_shape = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"output_shape", "10"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&out_shape, dgrad_invalid_arguments,
            "output_shape has 1 values, expected 2");
}

Test(problem_errors, strides_and_dilations) {
    const rcase_t zero = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3},
            {{"strides", "1,0"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&zero, dgrad_invalid_arguments,
            "ConvolutionBackpropData: strides (1,0) must all be at least 1");
    const rcase_t neg = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"strides", "-2,1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&neg, dgrad_invalid_arguments, "strides (-2,1)");
    const rcase_t dil = {"", GOV, {1, 4, 5, 5}, {2, 2, 1, 3, 3},
            {{"dilations", "-1,1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&dil, dgrad_invalid_arguments,
            "dilations (-1,1) must all be at least 1");
    const rcase_t dil0 = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3},
            {{"dilations", "0 1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&dil0, dgrad_invalid_arguments, "dilations (0,1)");
}

Test(problem_errors, negative_pads) {
    const rcase_t ov = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3},
            {{"pads_begin", "0,-1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&ov, dgrad_invalid_arguments,
            "pads_begin (0,-1) must all be non-negative");
    const rcase_t graph = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"pads_end", "-1,0"}, {"dst_shape", "1,7,7,2"}}, {0}, {0}, {0},
            {0}};
    expect_case_error(&graph, dgrad_invalid_arguments, "pads_end (-1,0)");
    const rcase_t onnx = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"pads", "0,0,-1,0"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&onnx, dgrad_invalid_arguments,
            "ConvTranspose: pads (0,0,-1,0) must all be non-negative");
}

Test(problem_errors, output_padding) {
    const rcase_t big = {"", ONNX, {1, 4, 5, 5}, {4, 2, 3, 3},
            {{"strides", "2,2"}, {"output_padding", "2,0"}}, {0}, {0}, {0},
            {0}};
    expect_case_error(&big, dgrad_invalid_arguments,
            "ConvTranspose: output_padding (2) on axis 0 must be smaller than "
            "the stride (2) or the dilation (1)");
    /* oneDNN Graph sets no bound either: output_padding never changes its
     * result (see problem_graph) */
    const rcase_t graph = {"oneDNN Graph op > S", GRAPH, {1, 5, 5, 4},
            {3, 3, 2, 4}, {{"output_padding", "0,3"}, {"dst_shape", "1,7,7,2"}},
            {0}, {1, 7, 7, 2}, {0, 0}, {7, 7}};
    check_case(&graph);
    const rcase_t graph_neg = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"output_padding", "0,-1"}, {"dst_shape", "1,7,7,2"}}, {0}, {0},
            {0}, {0}};
    expect_case_error(&graph_neg, dgrad_invalid_arguments,
            "ConvolutionBackwardData: output_padding (0,-1) must all be "
            "non-negative");
    /* OpenVINO sets no bound: its upstream case [3] has output_padding 1
     * with stride 1 (see openvino_cases "1d output_padding") */
    const rcase_t ov = {"OpenVINO op = S", OV, {1, 1, 4}, {1, 1, 3},
            {{"output_padding", "1"}}, {0}, {1, 1, 7}, {0}, {7}};
    check_case(&ov);
    const rcase_t neg = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"output_padding", "0,-1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&neg, dgrad_invalid_arguments,
            "output_padding (0,-1) must all be non-negative");
    /* smaller than the dilation is enough (stride 1, dilation 2) */
    const rcase_t ok = {"op < D", ONNX, {1, 1, 3}, {1, 1, 3},
            {{"dilations", "2"}, {"output_padding", "1"}}, {0}, {1, 1, 8},
            {0}, {8}};
    check_case(&ok);
}

Test(problem_errors, groups) {
    const rcase_t zero = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"groups", "0"}, {"dst_shape", "1,7,7,2"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&zero, dgrad_invalid_arguments,
            "groups (0) must be at least 1");
    const rcase_t three = {"", GRAPH, {1, 16, 5, 5}, {16, 2, 3, 3},
            {{"groups", "3"}, {"data_format", "NCX"},
                    {"weights_format", "OIX"}, {"dst_shape", "1,6,7,7"}},
            {0}, {0}, {0}, {0}};
    expect_case_error(&three, dgrad_invalid_arguments,
            "ConvolutionBackwardData: groups (3) does not divide diff_dst "
            "channels (16)");
    const rcase_t ov = {"", GOV, {1, 20, 8}, {3, 5, 2, 3}, {{0}}, {0}, {0},
            {0}, {0}};
    expect_case_error(&ov, dgrad_invalid_arguments,
            "groups (3) does not divide data channels (20)");
    const rcase_t onnx = {"", ONNX, {1, 4, 3, 3}, {4, 1, 3, 3},
            {{"group", "8"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&onnx, dgrad_invalid_arguments,
            "groups (8) does not divide X channels (4)");
}

Test(problem_errors, channel_mismatch) {
    const rcase_t ov = {"", OV, {1, 20, 8, 8}, {16, 10, 3, 3}, {{0}}, {0},
            {0}, {0}, {0}};
    expect_case_error(&ov, dgrad_invalid_shape,
            "weights input channels (16) do not match data channels (20)");
    const rcase_t gov = {"", GOV, {1, 20, 8}, {4, 4, 2, 3}, {{0}}, {0}, {0},
            {0}, {0}};
    expect_case_error(&gov, dgrad_invalid_shape,
            "weights input channels (16 over all groups) do not match data "
            "channels (20)");
    /* XIO: Cin is the last weights dim */
    const rcase_t xio = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 6},
            {{"dst_shape", "1,7,7,2"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&xio, dgrad_invalid_shape,
            "weights input channels (6) do not match diff_dst channels (4)");
    const rcase_t kshape = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"kernel_shape", "3,2"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&kshape, dgrad_invalid_shape,
            "kernel_shape (3,2) does not match W spatial dims (3,3)");
    const rcase_t onnx = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3}, {{0}}, {0},
            {0}, {0}, {0}};
    built_t b;
    dgrad_resolved_t r;
    build(&onnx, &b);
    b.in[2] = lt_dense(dgrad_f32, 1, (int64_t[]){3});
    b.n_inputs = 3;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "B length (3) must equal the output channels (2)");
}

/* No dst_shape input, no dst_shape attribute (or an all-zero one, of any
 * length) and output dims not all known: nothing gives the output shape. */
Test(problem_errors, graph_output_shape_required) {
    const rcase_t none = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4}, {{0}}, {0},
            {0}, {0}, {0}};
    expect_case_error(&none, dgrad_invalid_arguments,
            "ConvolutionBackwardData: no output shape: give a dst_shape "
            "input, a dst_shape attribute (not all zeros) or diff_src dims "
            "that are all known (got an unknown rank)");
    const rcase_t zeros = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "0,0,0,0"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&zeros, dgrad_invalid_arguments, "no output shape");
    const rcase_t twelve_zeros = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "0,0,0,0,0,0,0,0,0,0,0,0"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&twelve_zeros, dgrad_invalid_arguments,
            "no output shape");
    const rcase_t empty = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "[]"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&empty, dgrad_invalid_arguments, "no output shape");
    /* partially known output dims are not a source */
    built_t b;
    dgrad_resolved_t r;
    build(&none, &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 7, 7, 2});
    b.out.dims[2] = U;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments,
            "diff_src dims that are all known (got 1,7,-1,2)");
}

Test(problem_errors, graph_dst_shape_and_output_dims_differ) {
    const rcase_t k = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "1,7,7,2"}, {"auto_pad", "SAME_UPPER"}}, {0}, {0},
            {0}, {0}};
    built_t b;
    dgrad_resolved_t r;
    build(&k, &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 8, 8, 2});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "ConvolutionBackwardData: dst_shape attribute (1,7,7,2) and "
            "diff_src dims (1,8,8,2) differ");
    b.out.dims[1] = b.out.dims[2] = 7;
    cr_assert_eq(run(&b, &r), dgrad_success, "%s", dgrad_last_error_message());
}

/* The all-zero default is oneDNN Graph's alone, and only for dst_shape and
 * output_padding: a non-zero list of the wrong length is an error. */
Test(problem_errors, graph_list_defaults_lengths) {
    const rcase_t op3 = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"output_padding", "0,0,1"}, {"dst_shape", "1,7,7,2"}}, {0}, {0},
            {0}, {0}};
    expect_case_error(&op3, dgrad_invalid_arguments,
            "output_padding has 3 values, expected 2 for spatial rank 2");
    const rcase_t dst12 = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "1,7,7,2,0,0,0,0,0,0,0,0"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&dst12, dgrad_invalid_arguments,
            "dst_shape has 12 values, expected 4 for spatial rank 2");
    const rcase_t onnx = {"", ONNX, {1, 1, 3, 3}, {1, 2, 3, 3},
            {{"output_padding", "0,0,0,0,0,0,0,0,0,0,0,0"}}, {0}, {0}, {0},
            {0}};
    expect_case_error(&onnx, dgrad_invalid_arguments,
            "output_padding has 12 values, expected 2 for spatial rank 2");
    const rcase_t strides = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"pads_begin", "0,0,0,0"}, {"dst_shape", "1,7,7,2"}}, {0}, {0},
            {0}, {0}};
    expect_case_error(&strides, dgrad_invalid_arguments,
            "pads_begin has 4 values, expected 2");
}

Test(problem_errors, graph_output_size_out_of_bound) {
    /* F = 9, pads 1 + 1: Y must be in [7, 9) */
    const rcase_t high = {"", GRAPH, {1, 1, 4, 4}, {1, 1, 3, 3},
            {{"data_format", "NCX"}, {"weights_format", "OIX"},
                    {"strides", "2,2"}, {"pads_begin", "1,1"},
                    {"pads_end", "1,1"}, {"dst_shape", "1,1,9,8"}},
            {0}, {0}, {0}, {0}};
    expect_case_error(&high, dgrad_invalid_shape,
            "diff_src size (9) on axis 0 cannot be produced: it must be at "
            "least the natural size minus pads (7)");
    const rcase_t low = {"", GRAPH, {1, 1, 4, 4}, {1, 1, 3, 3},
            {{"data_format", "NCX"}, {"weights_format", "OIX"},
                    {"strides", "2,2"}, {"pads_begin", "1,1"},
                    {"pads_end", "1,1"}, {"dst_shape", "1,1,7,6"}},
            {0}, {0}, {0}, {0}};
    expect_case_error(&low, dgrad_invalid_shape, "diff_src size (6) on axis 1");
    const rcase_t valid = {"", GRAPH, {1, 6, 6, 1}, {4, 4, 1, 1},
            {{"auto_pad", "VALID"}, {"dst_shape", "1,6,6,1"}}, {0}, {0}, {0},
            {0}};
    expect_case_error(&valid, dgrad_invalid_shape,
            "diff_src size (6) on axis 0 cannot be produced: it must be at "
            "least the natural size minus pads (9)");
}

Test(problem_errors, graph_dst_shape_batch_and_channels) {
    const rcase_t n = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "2,7,7,2"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&n, dgrad_invalid_shape,
            "dst_shape attribute N (2) does not match diff_dst N (1)");
    const rcase_t c = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4}, {{0}},
            {1, 7, 7, 3}, {0}, {0}, {0}};
    expect_case_error(&c, dgrad_invalid_shape,
            "dst_shape input channels (3) do not match the output channels "
            "of weights (2)");
    const rcase_t zero = {"", GRAPH, {1, 5, 5, 4}, {3, 3, 2, 4},
            {{"dst_shape", "1,0,7,2"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&zero, dgrad_invalid_shape,
            "dst_shape attribute (1,0,7,2): sizes must all be at least 1");
}

Test(problem_errors, shape_values) {
    built_t b;
    dgrad_resolved_t r;
    const rcase_t shaped = {"", OV, {1, 4, 5, 5}, {4, 2, 3, 3}, {{0}},
            {7, 7}, {0}, {0}, {0}};
    build(&shaped, &b);
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 3, b.in, &b.out, b.shape, 1,
                       &r),
            dgrad_invalid_arguments,
            "1 shape values given for a output_shape input of length 2");
    b.shape[1] = -7;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "output_shape input (7,-7): sizes must all be at least 1");
    build(&ov_base, &b);
    ASSERT_ERR(dgrad_problem_resolve(&b.desc, 2, b.in, &b.out,
                       (int64_t[]){7, 7}, 2, &r),
            dgrad_invalid_arguments, "no output_shape input");
}

Test(problem_errors, inferred_size_not_positive) {
    /* F = 1, pads 1 + 1: Y = -1 */
    const rcase_t k = {"", OV, {1, 1, 1}, {1, 1, 1},
            {{"pads_begin", "1"}, {"pads_end", "1"}}, {0}, {0}, {0}, {0}};
    expect_case_error(&k, dgrad_invalid_shape,
            "inferred output size (-1) on axis 0 must be at least 1");
    const rcase_t zero = {"", ONNX, {1, 1, 1}, {1, 1, 1}, {{"pads", "1,0"}},
            {0}, {0}, {0}, {0}};
    expect_case_error(&zero, dgrad_invalid_shape, "inferred Y size (0)");
}

Test(problem_errors, known_output_dims_mismatch) {
    built_t b;
    dgrad_resolved_t r;
    build(&openvino_cases[0], &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 10, 446, 446});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "ConvolutionBackpropData: requested output dims (1,10,446,446) do "
            "not match the inferred dims (1,10,447,447)");
    /* partially known dims are compared where known */
    b.out.dims[2] = b.out.dims[3] = U;
    cr_assert_eq(run(&b, &r), dgrad_success, "%s", dgrad_last_error_message());
    b.out.dims[1] = 11;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape, "(1,11,-1,-1)");
    /* against a shape given by an attribute too */
    build(&onnx_cases[1], &b);
    b.out = lt_dense(dgrad_f32, 4, (int64_t[]){1, 2, 10, 9});
    ASSERT_ERR(run(&b, &r), dgrad_invalid_shape,
            "requested Y dims (1,2,10,9) do not match the inferred dims "
            "(1,2,10,8)");
}

Test(problem_errors, hand_written_description) {
    built_t b;
    dgrad_resolved_t r;
    build(&ov_base, &b);
    b.desc.attrs[dgrad_op_attr_auto_pad].is_set = 1;
    strcpy(b.desc.attrs[dgrad_op_attr_auto_pad].text, "bogus");
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments, "auto_pad 'bogus' is "
            "not one of explicit, notset, same_upper, same_lower, valid");
    build(&ov_base, &b);
    b.desc.attrs[dgrad_op_attr_strides].is_set = 1;
    b.desc.attrs[dgrad_op_attr_strides].count = 100;
    ASSERT_ERR(run(&b, &r), dgrad_invalid_arguments,
            "strides has a bad value count (100)");
}
