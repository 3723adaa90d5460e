/*
 * Out-of-memory testing in the way SQLite does it: in the fault-injection
 * build (src/alloc.h), the Nth resource dgrad acquires — a heap
 * allocation or a oneDNN memory, primitive or primitive-descriptor
 * creation — or the Nth oneDNN primitive execution fails, for N = 1, 2,
 * ... until the operation runs without reaching N. Every run that hit its
 * failure must return out_of_memory or runtime_error with a message, leave the caller's output buffer and
 * handles byte-identical, leak nothing (LeakSanitizer in the sanitizer
 * build), and the same call made again without a failure must succeed
 * with results equal to the reference (src/reference.c).
 *
 * DGRAD_FAULT_STRIDE=k in the environment tests N = 1..8 and then every
 * k-th N (the sanitizer run samples; scripts/fault-sweep.sh runs all).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "dgrad/dgrad_loader.h"
#include "dtype.h"
#include "fault_injection.h"
#include "onednn.h"
#include "plan/plan_impl.h"
#include "problem.h"
#include "reference.h"

/* ------------------------------------------------------------ controls */

/* The counter of one copy of dgrad: the one linked into this program, or
 * the plugin's own (reached through dlsym). */
typedef struct controls {
    void (*arm)(long n);
    long (*count)(void);
    int (*fired)(void);
    void (*reset_caches)(void);
} controls_t;

static const controls_t host = {dgrad_fault_arm, dgrad_fault_count,
        dgrad_fault_fired, dgrad_fault_reset_caches};

static long sweep_stride(void) {
    const char *e = getenv("DGRAD_FAULT_STRIDE");
    long k = e ? atol(e) : 1;
    return k >= 1 ? k : 1;
}

static long next_n(long n) {
    long k = sweep_stride();
    return n < 8 || k == 1 ? n + 1 : n + k;
}

/* ------------------------------------------------------------ problems */

/* One op with its data: the op is described by attribute text, run on
 * small integers, and checked against the reference on the canonical
 * problem of its resolved tensors. */
typedef struct spec {
    dgrad_op_kind_t kind;
    dgrad_data_type_t dt;
    const char *attrs[8][2];
    int64_t in_dims[5], wei_dims[5];
    int nd;
    int bias;           /* ONNX: a bias input */
    int shape_input;    /* oneDNN Graph: dst_shape input */
    int deferred;       /* ... with output dims unknown at compile time */
    int constant_weights;
    int64_t out_dims[5]; /* the output (dims known unless deferred) */
    int channels_last;   /* NCX dims with channels-last strides */
} spec_t;

typedef struct run {
    spec_t s;
    dgrad_op_t *op;
    dgrad_logical_tensor_t in[3], out_req, out;
    dgrad_compiled_op_t *compiled;
    void *x, *w, *third;
    int64_t shape[5];
    unsigned char *y, *fill;
    size_t y_bytes;
    dgrad_logical_tensor_t dyn_lt;
    /* plugin */
    const dgrad_plugin_api_t *api;
    dgrad_plugin_partitions_t *partitions;
    dgrad_loader_plugin_t *loaded;
} run_t;

static int64_t count_of(const int64_t *d, int n) {
    int64_t c = 1;
    for (int i = 0; i < n; i++) c *= d[i];
    return c;
}

static void *filled(dgrad_data_type_t dt, int64_t n, int mod, int off) {
    void *p = malloc((size_t)n * dgrad_data_type_size(dt));
    for (int64_t i = 0; i < n; i++) dgrad_store(p, dt, i, (double)(i % mod - off));
    return p;
}

/* Channels-last strides for NCX dims. */
static void channels_last(dgrad_logical_tensor_t *lt) {
    int nd = lt->ndims;
    int64_t acc = lt->dims[1];
    lt->strides[1] = 1;
    for (int i = nd - 1; i >= 2; i--) {
        lt->strides[i] = acc;
        acc *= lt->dims[i];
    }
    lt->strides[0] = acc;
}

static void run_init(run_t *r, const spec_t *s) {
    memset(r, 0, sizeof *r);
    r->s = *s;
    int nd = s->nd, wnd = s->nd + (s->kind == dgrad_op_group_convolution_backprop_data);
    dgrad_logical_tensor_init(&r->in[0], 1, s->dt, nd, s->in_dims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&r->in[1], 2, s->dt, wnd, s->wei_dims,
            dgrad_layout_type_strided, s->constant_weights
                    ? dgrad_property_type_constant : dgrad_property_type_variable);
    r->x = filled(s->dt, count_of(s->in_dims, nd), 5, 2);
    r->w = filled(s->dt, count_of(s->wei_dims, wnd), 3, 1);
    if (s->bias) {
        const int64_t bd[] = {s->out_dims[1]};
        dgrad_logical_tensor_init(&r->in[2], 3, s->dt, 1, bd,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        r->third = filled(s->dt, bd[0], 7, 3);
    }
    if (s->shape_input) {
        const int64_t sd[] = {nd};
        dgrad_logical_tensor_init(&r->in[2], 3, dgrad_s64, 1, sd,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        memcpy(r->shape, s->out_dims, (size_t)nd * sizeof *r->shape);
        r->third = r->shape;
    }
    if (s->deferred)
        dgrad_logical_tensor_init(&r->out_req, 4, s->dt, DGRAD_UNKNOWN_NDIMS,
                NULL, dgrad_layout_type_strided, dgrad_property_type_variable);
    else
        dgrad_logical_tensor_init(&r->out_req, 4, s->dt, nd, s->out_dims,
                dgrad_layout_type_strided, dgrad_property_type_variable);
    if (s->channels_last) {
        channels_last(&r->in[0]);
        channels_last(&r->out_req);
    }
    r->y_bytes = (size_t)count_of(s->out_dims, nd) * dgrad_data_type_size(s->dt);
    r->y = malloc(r->y_bytes);
    r->fill = malloc(r->y_bytes);
    for (size_t i = 0; i < r->y_bytes; i++) r->fill[i] = (unsigned char)(i * 37 + 11);
    memcpy(r->y, r->fill, r->y_bytes);
}

static size_t n_inputs(const run_t *r) {
    return r->s.bias || r->s.shape_input ? 3 : 2;
}

/* The op, through the core API (the plugin scenarios build theirs). */
/* A unary post-op the scenario's op gets (NULL: none); the reference
 * applies it too. Piecewise linear ones keep check_output's tolerance. */
static const char *scenario_post_op;

static void op_build(run_t *r) {
    cr_assert_eq(dgrad_op_create(&r->op, 5, r->s.kind, "faults"), dgrad_success);
    for (int i = 0; i < 8 && r->s.attrs[i][0]; i++)
        cr_assert_eq(dgrad_op_set_attr_by_name(r->op, r->s.attrs[i][0],
                             r->s.attrs[i][1]), dgrad_success, "%s",
                dgrad_last_error_message());
    if (scenario_post_op)
        cr_assert_eq(dgrad_op_append_post_op(r->op, scenario_post_op, 0, NULL,
                             NULL), dgrad_success, "%s",
                dgrad_last_error_message());
}

static void run_free(run_t *r) {
    dgrad_compiled_op_destroy(r->compiled);
    dgrad_op_destroy(r->op);
    free(r->x);
    free(r->w);
    if (r->s.bias) free(r->third);
    free(r->y);
    free(r->fill);
    memset(r, 0, sizeof *r);
}

/* The output equals the reference, within the type's rounding; with
 * @p without_post_ops, the reference of the op alone (what the output
 * holds when the post-op pass, which runs after it, fails). */
static void check_output_ex(const run_t *r, int without_post_ops) {
    dgrad_resolved_t res;
    dgrad_logical_tensor_t out = r->out_req;
    const int64_t *vals = r->s.shape_input ? r->shape : NULL;
    cr_assert_eq(dgrad_problem_resolve(dgrad_op_get_desc(r->op), n_inputs(r),
                         r->in, &out, vals, vals ? (size_t)r->s.nd : 0, &res),
            dgrad_success, "%s", dgrad_last_error_message());
    dgrad_problem_t *p = &res.problem;
    if (without_post_ops) p->n_post_ops = 0;
    int64_t n = count_of(r->s.out_dims, r->s.nd);
    cr_assert_eq(count_of(res.output.dims, r->s.nd), n);
    void *want = malloc(r->y_bytes);
    double *abs_sum = malloc((size_t)n * sizeof *abs_sum);
    dgrad_reference_compute(p, r->x, r->w, r->s.bias ? r->third : NULL, want,
            abs_sum); /* the unary post-op included */
    double u = dgrad_data_type_unit_roundoff(p->dt);
    int64_t idx[5] = {0}, dims[5] = {p->N, p->Cout};
    for (int i = 0; i < p->nsp; i++) dims[2 + i] = p->Y[i];
    for (int64_t i = 0; i < n; i++) {
        /* abs_sum is dense canonical; both outputs use p->out_strides. */
        int64_t off = 0;
        for (int d = 0; d < 2 + p->nsp; d++) off += idx[d] * p->out_strides[d];
        double got = dgrad_load(r->y, p->dt, off), ref = dgrad_load(want, p->dt, off);
        cr_assert(fabs(got - ref) <= 2 * u * (abs_sum[i] + fabs(ref)),
                "element %lld: %g, reference %g", (long long)i, got, ref);
        for (int d = 1 + p->nsp; d >= 0 && ++idx[d] == dims[d]; d--) idx[d] = 0;
    }
    free(abs_sum);
    free(want);
}

static void check_output(const run_t *r) { check_output_ex(r, 0); }

static void assert_untouched(const run_t *r, const char *what, long n) {
    cr_assert(!memcmp(r->y, r->fill, r->y_bytes),
            "%s, failure %ld: the output buffer was written", what, n);
}

/* --------------------------------------------------------------- sweep */

typedef enum expect {
    EXPECT_FAILURES = 0,  /* something to fail */
    EXPECT_RUNTIME_ONLY,  /* executions only: allocates nothing */
    EXPECT_NOTHING,       /* neither allocates nor executes */
    /* executions only, the last of them a post-op pass over the output
     * the op has written: its failure leaves the op's result there (an
     * execution failure may write the output, dgrad.h), no other does */
    EXPECT_RUNTIME_POST_PASS,
} expect_t;

/* One operation under test: prepare (fresh state, no injection), act
 * (injected), undo (release what act made; act must release what it
 * made on failure itself). */
typedef struct scenario {
    const char *name;
    const controls_t *ctl;
    void (*prepare)(run_t *r);
    dgrad_status_t (*act)(run_t *r);
    void (*verify)(run_t *r); /* after a successful act */
    void (*undo)(run_t *r);
    expect_t expect;
} scenario_t;

static long sweep(const scenario_t *sc, run_t *r) {
    long failures = 0, written_at = -1, last_failure = -1;
    for (long n = 1;; n = next_n(n)) {
        sc->prepare(r);
        dgrad_compiled_op_t *handle_before = r->compiled;
        sc->ctl->arm(n);
        dgrad_status_t st = sc->act(r);
        int fired = sc->ctl->fired();
        long counted = sc->ctl->count();
        sc->ctl->arm(0);
        if (!fired) {
            cr_assert_eq(st, dgrad_success, "%s, no failure injected (N %ld "
                    "of %ld): %s (%s)", sc->name, n, counted,
                    dgrad_status_name(st), r->api ? r->api->last_error_message()
                                                  : dgrad_last_error_message());
            if (sc->expect == EXPECT_NOTHING)
                cr_assert_eq(counted, 0, "%s acquired %ld resources", sc->name,
                        counted);
            sc->verify(r);
            sc->undo(r);
            break;
        }
        const char *msg = r->api ? r->api->last_error_message()
                                 : dgrad_last_error_message();
        int runtime_only = sc->expect == EXPECT_RUNTIME_ONLY
                || sc->expect == EXPECT_RUNTIME_POST_PASS;
        cr_assert(st == dgrad_runtime_error || (st == dgrad_out_of_memory
                          && !runtime_only),
                "%s, failure %ld: status %s (%s)", sc->name, n,
                dgrad_status_name(st), msg);
        cr_assert(msg && strlen(msg) > 10, "%s, failure %ld: message '%s'",
                sc->name, n, msg ? msg : "(null)");
        cr_assert_eq(r->compiled, handle_before, "%s, failure %ld: the "
                "handle was written", sc->name, n);
        if (sc->expect == EXPECT_RUNTIME_POST_PASS
                && memcmp(r->y, r->fill, r->y_bytes)) {
            cr_assert_lt(written_at, 0, "%s, failures %ld and %ld both wrote "
                    "the output", sc->name, written_at, n);
            written_at = n;
            check_output_ex(r, 1);
        } else {
            assert_untouched(r, sc->name, n);
        }
        /* The same call again, without a failure. */
        st = sc->act(r);
        cr_assert_eq(st, dgrad_success, "%s, after failure %ld: %s (%s)",
                sc->name, n, dgrad_status_name(st), r->api
                        ? r->api->last_error_message() : dgrad_last_error_message());
        sc->verify(r);
        sc->undo(r);
        failures++;
        last_failure = n;
    }
    cr_assert(written_at < 0 || written_at == last_failure, "%s: failure %ld "
            "wrote the output, and a later step could fail (%ld)", sc->name,
            written_at, last_failure);
    if (sc->expect != EXPECT_NOTHING)
        cr_assert(failures > 0, "%s had nothing to fail", sc->name);
    return failures;
}

/* ------------------------------------------------------ core scenarios */

static void fresh(run_t *r) {
    host.reset_caches();
    dgrad_compiled_op_destroy(r->compiled);
    r->compiled = NULL;
    memcpy(r->y, r->fill, r->y_bytes);
    r->out = r->out_req;
}

static void compiled_fresh(run_t *r) {
    fresh(r);
    dgrad_logical_tensor_t out = r->out_req;
    cr_assert_eq(dgrad_compiled_op_create(&r->compiled, r->op, n_inputs(r),
                         r->in, &out), dgrad_success, "%s",
            dgrad_last_error_message());
}

static void compiled_warm(run_t *r) {
    if (!r->compiled) {
        compiled_fresh(r);
        const void *inputs[] = {r->x, r->w, r->third};
        cr_assert_eq(dgrad_compiled_op_execute(r->compiled, n_inputs(r),
                             inputs, r->y), dgrad_success);
    }
    memcpy(r->y, r->fill, r->y_bytes);
}

static dgrad_status_t act_compile(run_t *r) {
    dgrad_logical_tensor_t out = r->out_req;
    /* A sentinel, so that a failure writing any value (NULL included)
     * shows. */
    dgrad_compiled_op_t *const unset = (dgrad_compiled_op_t *)&out;
    dgrad_compiled_op_t *c = unset;
    dgrad_status_t st = dgrad_compiled_op_create(&c, r->op, n_inputs(r),
            r->in, &out);
    if (st != dgrad_success) {
        cr_assert_eq(c, unset, "compile failed but wrote its handle");
        cr_assert(!memcmp(&out, &r->out_req, sizeof out),
                "compile failed but wrote its output tensor");
        return st;
    }
    dgrad_compiled_op_destroy(r->compiled);
    r->compiled = c;
    return st;
}

static dgrad_status_t act_execute(run_t *r) {
    const void *inputs[] = {r->x, r->w, r->third};
    if (!r->s.deferred)
        return dgrad_compiled_op_execute(r->compiled, n_inputs(r), inputs, r->y);
    dgrad_logical_tensor_t lt;
    memset(&lt, 0x3c, sizeof lt);
    dgrad_logical_tensor_t before = lt;
    dgrad_status_t st = dgrad_compiled_op_execute_dynamic(r->compiled,
            n_inputs(r), inputs, r->y, r->y_bytes, &lt);
    if (st != dgrad_success)
        cr_assert(!memcmp(&lt, &before, sizeof lt),
                "execute failed but wrote the output tensor");
    return st;
}

/* Compile and the first execute as one operation (conversion paths). */
static dgrad_status_t act_compile_execute(run_t *r) {
    dgrad_compiled_op_t *saved = r->compiled;
    r->compiled = NULL;
    dgrad_status_t st = act_compile(r);
    if (st == dgrad_success) {
        st = act_execute(r);
        if (st != dgrad_success) {
            dgrad_compiled_op_destroy(r->compiled);
            r->compiled = NULL;
        }
    }
    if (st != dgrad_success) r->compiled = saved;
    else dgrad_compiled_op_destroy(saved);
    return st;
}

static void verify_by_executing(run_t *r) {
    memcpy(r->y, r->fill, r->y_bytes);
    cr_assert_eq(act_execute(r), dgrad_success, "%s", dgrad_last_error_message());
    check_output(r);
}

static void verify_output(run_t *r) { check_output(r); }

static void undo_none(run_t *r) { (void)r; }

static void undo_compiled(run_t *r) {
    dgrad_compiled_op_destroy(r->compiled);
    r->compiled = NULL;
}

/* The problems: ONNX with output padding (untimed, tail computed), with
 * a bias; a timed one; oneDNN Graph with a deferred dst_shape. */
static const spec_t onnx_small = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2,2"}, {"pads", "1,1,1,1"}, {"output_padding", "1,1"}},
        {1, 4, 5, 5}, {4, 4, 3, 3}, 4, 0, 0, 0, 0, {1, 4, 10, 10}, 0};
static const spec_t onnx_timed = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2,2"}, {"pads", "1,1,1,1"}},
        {2, 32, 12, 12}, {32, 32, 3, 3}, 4, 0, 0, 0, 0, {2, 32, 23, 23}, 0};
/* Stride 1: a folded plan's one phase is the output, which its
 * convolution writes itself (phase_fold.c, fold_writes_output). */
static const spec_t onnx_stride_1 = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "1,1"}, {"pads", "1,1,1,1"}},
        {1, 4, 5, 5}, {4, 4, 3, 3}, 4, 1, 0, 0, 0, {1, 4, 5, 5}, 0};
/* Depthwise on channels-last strides: dgrad's channels-last depthwise
 * loop (direct_dw.c) where the policy takes the own loop. */
static const spec_t onnx_depthwise_cl = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2,2"}, {"pads", "1,1,1,1"}, {"group", "20"}},
        {1, 20, 5, 5}, {20, 1, 4, 4}, 4, 1, 0, 0, 0, {1, 20, 10, 10}, 1};
/* Windows that do not overlap (k2 s2, no padding), channels-last with a
 * bias: dgrad's blocks loop (direct_blocks.c) where the policy takes the
 * own loops. */
static const spec_t onnx_blocks_cl = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2,2"}}, {1, 6, 5, 7}, {6, 10, 2, 2}, 4, 1, 0, 0, 0,
        {1, 10, 10, 14}, 1};
/* 4 groups of 4 channels on NCX, stride 1, a bias: with the blocks loop
 * asked for, its lanes form, the input spread and the rows' lists made
 * at compile (direct_blocks_spread.c), with AVX-512. */
static const spec_t onnx_blocks_lists = {dgrad_op_conv_transpose, dgrad_f32,
        {{"group", "4"}, {"pads", "1,1,1,1"}}, {1, 16, 5, 7},
        {16, 4, 3, 3}, 4, 1, 0, 0, 0, {1, 16, 5, 7}, 0};
/* Rows of 5 pixels of 2 channels on NCX, stride 2, padding, a bias: with
 * the row vectors loop asked for, its tables made at compile
 * (direct_row_vectors.c), with AVX-512 or AVX2. */
static const spec_t onnx_row_vectors = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2,2"}, {"pads", "1,1,1,1"}}, {1, 3, 3, 3},
        {3, 2, 3, 3}, 4, 1, 0, 0, 0, {1, 2, 5, 5}, 0};
/* masknet's taps (k7, stride 2) on a row of 40 of 8 -> 3 channels, NCX,
 * a bias: with the phase pair loop asked for, its weights' table made at
 * compile (direct_phase_pair.c), with AVX-512. */
static const spec_t onnx_phase_pair = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2"}}, {1, 8, 40}, {8, 3, 7}, 3, 1, 0, 0, 0,
        {1, 3, 85}, 0};
/* 16 input channels to 3 at k4 s2: the gemm rows loop
 * (direct_gemm_rows.c). */
static const spec_t onnx_gemm_rows = {dgrad_op_conv_transpose, dgrad_f32,
        {{"strides", "2,2"}}, {1, 16, 6, 7}, {16, 3, 4, 4}, 4, 1, 0, 0, 0,
        {1, 3, 14, 16}, 0};
/* One input position, the output the kernel's footprint: the
 * projection (projection.c). */
static const spec_t onnx_projection = {dgrad_op_conv_transpose, dgrad_f32,
        {{NULL, NULL}}, {2, 6, 1, 1}, {6, 5, 4, 4}, 4, 1, 0, 0, 0,
        {2, 5, 4, 4}, 0};
static const spec_t graph_deferred = {dgrad_op_convolution_backward_data,
        dgrad_f32, {{"strides", "2,2"}, {"pads_begin", "1,1"}, {"pads_end", "1,1"},
                {"data_format", "NCX"}, {"weights_format", "OIX"}},
        {1, 4, 5, 5}, {4, 3, 3, 3}, 4, 0, 1, 1, 0, {1, 3, 9, 9}, 0};

/* oneDNN Graph's ConvTranspose with a bias: its own dialect over the same
 * lowering. */
static const spec_t graph_conv_transpose = {dgrad_op_onednn_conv_transpose,
        dgrad_f32, {{"strides", "2,2"}, {"pads_begin", "1,1"},
                {"pads_end", "1,1"}, {"data_format", "NCX"},
                {"weights_format", "IOX"}},
        {1, 4, 5, 5}, {4, 3, 3, 3}, 4, 1, 0, 0, 0, {1, 3, 9, 9}, 0};

static spec_t nhwc(spec_t s) {
    s.channels_last = 1;
    return s;
}

static spec_t with(spec_t s, dgrad_data_type_t dt, int bias, int constant) {
    s.dt = dt;
    s.bias = bias;
    s.constant_weights = constant;
    return s;
}

static void sweep_core(const char *name, spec_t s, void (*prepare)(run_t *),
        dgrad_status_t (*act)(run_t *), void (*verify)(run_t *),
        void (*undo)(run_t *), expect_t expect) {
    run_t r;
    run_init(&r, &s);
    op_build(&r);
    scenario_t sc = {name, &host, prepare, act, verify, undo, expect};
    long failures = sweep(&sc, &r);
    cr_log_info("%s: %ld injected failures", name, failures);
    run_free(&r);
}

Test(faults, compile_untimed) {
    sweep_core("compile (untimed, tail)", onnx_small, fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
}

Test(faults, compile_and_execute_onednn_conv_transpose) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 0; /* a cached execute with primitives to fail */
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("compile (oneDNN Graph ConvTranspose)", graph_conv_transpose,
            fresh, act_compile, verify_by_executing, undo_compiled,
            EXPECT_FAILURES);
    sweep_core("cached execute (oneDNN Graph ConvTranspose)",
            graph_conv_transpose, compiled_warm, act_execute, verify_output,
            undo_none, EXPECT_RUNTIME_ONLY);
    /* with a post-op: its pass is made at compile, run last */
    scenario_post_op = "ReLU";
    sweep_core("compile (ConvTranspose -> ReLU)", graph_conv_transpose,
            fresh, act_compile, verify_by_executing, undo_compiled,
            EXPECT_FAILURES);
    sweep_core("cached execute (ConvTranspose -> ReLU)", graph_conv_transpose,
            compiled_warm, act_execute, verify_output, undo_none,
            EXPECT_RUNTIME_POST_PASS);
    scenario_post_op = NULL;
    dgrad_api_set_policy_for_testing(NULL);
}

Test(faults, compile_timed, .timeout = 600) {
    sweep_core("compile (timed)", onnx_timed, fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
    /* Constant weights are prepared before candidates are timed. */
    sweep_core("compile (timed, constant weights)",
            with(onnx_timed, dgrad_f32, 0, 1), fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
}

Test(faults, compile_on_a_reduced_copy, .timeout = 600) {
    /* Limits low enough that onnx_timed is timed on a reduced copy. */
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.max_bytes = 1 << 16;
    policy.max_macs = 1e5;
    policy.reduced_bytes = 1 << 15;
    policy.reduced_macs = 5e4;
    policy.min_macs = 1e3;
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("compile (reduced copy)", onnx_timed, fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
    dgrad_api_set_policy_for_testing(NULL);
}

Test(faults, first_execute) {
    /* No layout search: the plan's first execution context is made by
     * the execute itself. */
    setenv("DGRAD_LAYOUT_SEARCH", "0", 1);
    sweep_core("first execute", onnx_small, compiled_fresh, act_execute,
            verify_output, undo_none, EXPECT_FAILURES);
    sweep_core("first execute with bias", with(onnx_small, dgrad_f32, 1, 0),
            compiled_fresh, act_execute, verify_output, undo_none, EXPECT_FAILURES);
}

/* Once warm, an execute allocates nothing: only its primitive executions
 * can fail, and the output stays untouched when any of them does. The
 * timed choice may pick dgrad's own loop, which runs no primitive (its
 * own scenario is own_loop below): not offered here. */
Test(faults, cached_execute_allocates_nothing) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 0;
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("cached execute", onnx_small, compiled_warm, act_execute,
            verify_output, undo_none, EXPECT_RUNTIME_ONLY);
    sweep_core("cached execute, timed", onnx_timed, compiled_warm, act_execute,
            verify_output, undo_none, EXPECT_RUNTIME_ONLY);
    sweep_core("cached execute with bias", with(onnx_timed, dgrad_f32, 1, 0),
            compiled_warm, act_execute, verify_output, undo_none,
            EXPECT_RUNTIME_ONLY);
    /* Channels-last: the primitive's own layout, no output reorder (the
     * bias add is the step that writes the output). */
    sweep_core("cached execute with bias, channels-last",
            nhwc(with(onnx_timed, dgrad_f32, 1, 0)), compiled_warm, act_execute,
            verify_output, undo_none, EXPECT_RUNTIME_ONLY);
    sweep_core("cached execute, f16 with bias", with(onnx_small, dgrad_f16, 1, 0),
            compiled_warm, act_execute, verify_output, undo_none,
            EXPECT_RUNTIME_ONLY);
    dgrad_api_set_policy_for_testing(NULL);
}

Test(faults, dynamic_shape_execute) {
    sweep_core("dynamic-shape execute", graph_deferred, compiled_fresh,
            act_execute, verify_output, undo_none, EXPECT_FAILURES);
}

Test(faults, constant_weights_preparation) {
    /* Untimed, the weights stay in the primitive's preferred layout:
     * prepared at the first execute. */
    setenv("DGRAD_LAYOUT_SEARCH", "0", 1);
    sweep_core("constant weights, first execute",
            with(onnx_small, dgrad_f32, 0, 1), compiled_fresh, act_execute,
            verify_output, undo_none, EXPECT_FAILURES);
    sweep_core("constant weights, 32 channels", with(onnx_timed, dgrad_f32, 0, 1),
            compiled_fresh, act_execute, verify_output, undo_none, EXPECT_FAILURES);
}

Test(faults, f16_and_bf16_conversions) {
    static const dgrad_data_type_t types[] = {dgrad_f16, dgrad_bf16};
    for (int t = 0; t < 2; t++) {
        sweep_core("compile and execute, 16-bit", with(onnx_small, types[t], 0, 0),
                fresh, act_compile_execute, verify_output, undo_compiled, EXPECT_FAILURES);
        sweep_core("compile and execute, 16-bit with bias",
                with(onnx_small, types[t], 1, 1), fresh, act_compile_execute,
                verify_output, undo_compiled, EXPECT_FAILURES);
    }
}

/* ----------------------------------------------------- plugin and loader */

static controls_t plugin_ctl;

static void plugin_open(run_t *r) {
    char error[512];
    cr_assert_eq(dgrad_loader_open(DGRAD_FAULT_PLUGIN_PATH, &r->loaded, error,
                         sizeof error), dgrad_success, "%s", error);
    r->api = dgrad_loader_api(r->loaded);
    void *h = dlopen(DGRAD_FAULT_PLUGIN_PATH, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h);
    *(void **)&plugin_ctl.arm = dlsym(h, "dgrad_fault_arm");
    *(void **)&plugin_ctl.count = dlsym(h, "dgrad_fault_count");
    *(void **)&plugin_ctl.fired = dlsym(h, "dgrad_fault_fired");
    *(void **)&plugin_ctl.reset_caches = dlsym(h, "dgrad_fault_reset_caches");
    cr_assert(plugin_ctl.arm && plugin_ctl.count && plugin_ctl.fired
            && plugin_ctl.reset_caches);
    dlclose(h); /* the loader keeps its own reference */
}

/* A graph of a transposed convolution (ONNX, as onnx_small) and a ReLU. */
typedef struct graph {
    dgrad_plugin_attr_t attrs[3];
    dgrad_plugin_graph_op_t ops[2];
} graph_t;

static void graph_of(run_t *r, graph_t *g) {
    memset(g, 0, sizeof *g);
    for (int i = 0; i < 3; i++)
        g->attrs[i] = (dgrad_plugin_attr_t){sizeof g->attrs[i],
                r->s.attrs[i][0], r->s.attrs[i][1]};
    g->ops[0] = (dgrad_plugin_graph_op_t){sizeof g->ops[0], 10, "ConvTranspose",
            3, g->attrs, 2, r->in, 1, &r->out_req};
    g->ops[1] = (dgrad_plugin_graph_op_t){sizeof g->ops[1], 11, "ReLU", 0, NULL,
            1, &r->out_req, 1, &r->out_req};
}

static void plugin_fresh(run_t *r) {
    plugin_ctl.reset_caches();
    r->api->partitions_destroy(r->partitions);
    r->partitions = NULL;
    r->api->compiled_op_destroy(r->compiled);
    r->compiled = NULL;
    memcpy(r->y, r->fill, r->y_bytes);
}

static dgrad_status_t act_query(run_t *r) {
    dgrad_plugin_support_args_t q = {sizeof q, "ConvTranspose", 2, r->in,
            dgrad_plugin_unsupported, NULL};
    dgrad_status_t st = r->api->query_support(&q);
    cr_assert(st != dgrad_success || q.support == dgrad_plugin_supported,
            "%s", q.reason ? q.reason : "");
    return st;
}

static dgrad_status_t act_partition(run_t *r) {
    graph_t g;
    graph_of(r, &g);
    dgrad_plugin_partition_args_t args = {sizeof args, 2, g.ops, NULL, 0};
    dgrad_status_t st = r->api->graph_partition(&args);
    if (st != dgrad_success) {
        cr_assert_null(args.partitions, "partitioning failed but returned a handle");
        return st;
    }
    r->partitions = args.partitions;
    return st;
}

static void verify_partitions(run_t *r) {
    dgrad_plugin_partition_info_t info = {sizeof info, 0, 0, NULL, NULL, NULL, 0, NULL, 0};
    cr_assert_eq(r->api->partitions_get(r->partitions, 0, &info), dgrad_success);
    cr_assert(info.claimed && info.op);
    cr_assert_eq(r->api->partitions_get(r->partitions, 1, &info), dgrad_success);
    cr_assert(!info.claimed && strstr(info.reason, "ReLU"), "%s", info.reason);
}

static void undo_partitions(run_t *r) {
    r->api->partitions_destroy(r->partitions);
    r->partitions = NULL;
}

/* Partition, compile the claimed op and execute it: a host's whole use. */
static dgrad_status_t act_plugin_run(run_t *r) {
    graph_t g;
    graph_of(r, &g);
    dgrad_plugin_partition_args_t args = {sizeof args, 2, g.ops, NULL, 0};
    dgrad_status_t st = r->api->graph_partition(&args);
    if (st != dgrad_success) return st;
    dgrad_plugin_partition_info_t info = {sizeof info, 0, 0, NULL, NULL, NULL, 0, NULL, 0};
    st = r->api->partitions_get(args.partitions, 0, &info);
    dgrad_logical_tensor_t out = r->out_req;
    dgrad_compiled_op_t *const unset = (dgrad_compiled_op_t *)&out;
    dgrad_plugin_compile_args_t c = {sizeof c, info.op, 2, r->in, &out, unset};
    if (st == dgrad_success) {
        st = r->api->compiled_op_create(&c);
        if (st != dgrad_success)
            cr_assert_eq(c.compiled, unset, "compile failed but wrote its handle");
    }
    if (c.compiled == unset) c.compiled = NULL;
    if (st == dgrad_success) {
        const void *inputs[] = {r->x, r->w};
        dgrad_plugin_execute_args_t e = {sizeof e, c.compiled, 2, inputs, r->y,
                r->y_bytes, NULL};
        st = r->api->compiled_op_execute(&e);
    }
    r->api->compiled_op_destroy(c.compiled);
    r->api->partitions_destroy(args.partitions);
    return st;
}

static void sweep_plugin(const char *name, dgrad_status_t (*act)(run_t *),
        void (*verify)(run_t *), void (*undo)(run_t *), expect_t expect) {
    run_t r;
    run_init(&r, &onnx_small);
    op_build(&r); /* for the reference's problem */
    plugin_open(&r);
    scenario_t sc = {name, &plugin_ctl, plugin_fresh, act, verify, undo,
            expect};
    long failures = sweep(&sc, &r);
    cr_log_info("%s: %ld injected failures", name, failures);
    plugin_fresh(&r);
    dgrad_loader_close(r.loaded);
    r.api = NULL;
    run_free(&r);
}

Test(faults, plugin_query_acquires_nothing) {
    sweep_plugin("plugin query_support", act_query, undo_none, undo_none,
            EXPECT_NOTHING);
}

Test(faults, plugin_partition) {
    sweep_plugin("plugin graph_partition", act_partition, verify_partitions,
            undo_partitions, EXPECT_FAILURES);
}

Test(faults, plugin_partition_compile_execute) {
    sweep_plugin("plugin partition, compile, execute", act_plugin_run,
            verify_output, undo_none, EXPECT_FAILURES);
}

static void loader_prepare(run_t *r) { r->loaded = NULL; }

static dgrad_status_t act_load(run_t *r) {
    char error[512] = "";
    dgrad_loader_plugin_t *p = NULL;
    dgrad_status_t st = dgrad_loader_open(DGRAD_FAULT_PLUGIN_PATH, &p, error,
            sizeof error);
    if (st != dgrad_success) {
        cr_assert_null(p);
        cr_assert(strstr(error, "cannot load plugin") && strstr(error, "out of memory"),
                "%s", error);
        return st;
    }
    r->loaded = p;
    return st;
}

static void verify_loaded(run_t *r) {
    cr_assert_not_null(dgrad_loader_api(r->loaded));
}

static void undo_loaded(run_t *r) {
    dgrad_loader_close(r->loaded);
    r->loaded = NULL;
}

Test(faults, loader_open) {
    run_t r;
    run_init(&r, &onnx_small);
    long failures = 0;
    for (long n = 1;; n++) {
        loader_prepare(&r);
        host.arm(n);
        dgrad_status_t st = act_load(&r);
        int fired = host.fired();
        host.arm(0);
        if (!fired) {
            cr_assert_eq(st, dgrad_success);
            verify_loaded(&r);
            undo_loaded(&r);
            break;
        }
        cr_assert_eq(st, dgrad_out_of_memory);
        cr_assert_eq(act_load(&r), dgrad_success);
        verify_loaded(&r);
        undo_loaded(&r);
        failures++;
    }
    cr_assert(failures > 0);
    run_free(&r);
}

/* What @p query says of @p s (with scenario_post_op) once compiled,
 * into @p buf: dgrad_compiled_op_chain_carrier, where the chain rides,
 * or dgrad_compiled_op_impl_name. */
static const char *compiled_says(spec_t s,
        const char *(*query)(const dgrad_compiled_op_t *), char *buf,
        size_t size) {
    run_t r;
    run_init(&r, &s);
    op_build(&r);
    compiled_fresh(&r);
    snprintf(buf, size, "%s", query(r.compiled));
    run_free(&r);
    return buf;
}

/* The folded forward convolution (phase_fold.c) as the only strategy:
 * its phase reorders and folded weights fail over like every other
 * step, at compile, first and cached execute, with a bias and with
 * constant weights. */
Test(faults, phase_fold, .timeout = 600) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.phase_fold = 2;
    policy.own_loop = 0;
    policy.chain_pass = 1; /* the carrier below is the one swept */
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("compile (folded)", onnx_timed, fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
    sweep_core("first execute (folded, bias)", with(onnx_small, dgrad_f32, 1, 0),
            compiled_fresh, act_execute, verify_output, undo_none,
            EXPECT_FAILURES);
    sweep_core("cached execute (folded, bias)", with(onnx_timed, dgrad_f32, 1, 0),
            compiled_warm, act_execute, verify_output, undo_none,
            EXPECT_RUNTIME_ONLY);
    sweep_core("cached execute (folded, f16 bias)",
            with(onnx_small, dgrad_f16, 1, 0), compiled_warm, act_execute,
            verify_output, undo_none, EXPECT_RUNTIME_ONLY);
    sweep_core("constant weights (folded)", with(onnx_timed, dgrad_f32, 0, 1),
            fresh, act_compile_execute, verify_output, undo_compiled,
            EXPECT_FAILURES);
    /* The convolution writing the output with the bias and the chain:
     * the one step that writes it, so a failure leaves it untouched.
     * Where oneDNN's kernel for it takes no ReLU attribute (oneDNN 3.7
     * on some CPUs), the pass runs after it, last, and a failure of the
     * pass may leave the op's result (EXPECT_RUNTIME_POST_PASS). */
    scenario_post_op = "ReLU";
    char carrier[32];
    compiled_says(onnx_stride_1, dgrad_compiled_op_chain_carrier, carrier,
            sizeof carrier);
    cr_log_info("the stride-1 fold's chain rides on %s", carrier);
    cr_assert(!strcmp(carrier, "convolution") || !strcmp(carrier, "pass"),
            "the stride-1 fold's chain rides on '%s'", carrier);
    sweep_core("compile (folded, writes the output, ReLU)", onnx_stride_1,
            fresh, act_compile, verify_by_executing, undo_compiled,
            EXPECT_FAILURES);
    sweep_core("cached execute (folded, writes the output, ReLU)",
            onnx_stride_1, compiled_warm, act_execute, verify_output,
            undo_none, !strcmp(carrier, "convolution")
                    ? EXPECT_RUNTIME_ONLY : EXPECT_RUNTIME_POST_PASS);
    /* The same compiled with carrying timed against a pass of its own
     * (timing.c, try_chain_passed): that candidate's build and runs fail
     * over too. */
    policy.chain_pass = 0;
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("compile (folded, ReLU carried or passed)", onnx_stride_1,
            fresh, act_compile, verify_by_executing, undo_compiled,
            EXPECT_FAILURES);
    scenario_post_op = NULL;
    dgrad_api_set_policy_for_testing(NULL);
}

/* Under @p policy with own loop kind @p kind (DGRAD_OWN_LOOP=blocks: 3,
 * =row_vectors: 4, =phase_pair: 5, =phase_pair_amx: 6, =gemm_rows: 7),
 * @p spec compiles to @p impl where the CPU runs that loop (@p cpu),
 * else to another plan; then its compile and warm execution are
 * swept in each of the @p n types @p dts, with a bias and the scenario's
 * chain if any (@p what names them). */
static void sweep_own_loop_kind(dgrad_plan_policy_t *policy, int kind,
        int cpu, spec_t spec, const char *impl, const char *what,
        const dgrad_data_type_t *dts, int n) {
    char got[64], name[160];
    policy->own_loop_kind = kind;
    dgrad_api_set_policy_for_testing(policy);
    compiled_says(with(spec, dts[0], 1, 0), dgrad_compiled_op_impl_name, got,
            sizeof got);
    if (!cpu) {
        cr_assert_str_neq(got, impl, "%s without the CPU it needs", what);
        return;
    }
    cr_assert_str_eq(got, impl);
    for (int i = 0; i < n; i++) {
        spec_t s = with(spec, dts[i], 1, 0);
        const char *type = dts[i] == dgrad_f16 ? ", f16"
                : dts[i] == dgrad_bf16         ? ", bf16"
                                               : "";
        const char *chain = scenario_post_op ? scenario_post_op : "";
        const char *comma = scenario_post_op ? ", " : "";
        snprintf(name, sizeof name, "compile (%s%s, bias%s%s)", what, type,
                comma, chain);
        sweep_core(name, s, fresh, act_compile, verify_by_executing,
                undo_compiled, EXPECT_FAILURES);
        snprintf(name, sizeof name, "cached execute (%s%s, bias%s%s)", what,
                type, comma, chain);
        sweep_core(name, s, compiled_warm, act_execute, verify_output,
                undo_none, EXPECT_NOTHING);
    }
}

/* dgrad's own loops (direct*.c) wherever they apply: their workspace and
 * packed weights fail over like every other acquisition. */
Test(faults, own_loop, .timeout = 600) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 2;
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("compile (own loop)", onnx_timed, fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
    sweep_core("first execute (own loop, bias)",
            with(onnx_small, dgrad_f32, 1, 0), compiled_fresh, act_execute,
            verify_output, undo_none, EXPECT_FAILURES);
    /* Warm, it acquires nothing and runs no oneDNN primitive: nothing
     * can fail. */
    sweep_core("cached execute (own loop, f16 bias)",
            with(onnx_small, dgrad_f16, 1, 0), compiled_warm, act_execute,
            verify_output, undo_none, EXPECT_NOTHING);
    sweep_core("constant weights (own loop)", with(onnx_timed, dgrad_f32, 0, 1),
            fresh, act_compile_execute, verify_output, undo_compiled,
            EXPECT_FAILURES);
    /* Carrying a chain, warm, it still acquires and runs nothing that
     * can fail. */
    scenario_post_op = "ReLU";
    sweep_core("cached execute (own loop, bias, ReLU)",
            with(onnx_small, dgrad_f32, 1, 0), compiled_warm, act_execute,
            verify_output, undo_none, EXPECT_NOTHING);
    /* The channels-last depthwise loop likewise, its chain in registers
     * (bf16: on f32 copies of the tensors, made at compile). */
    char impl[64];
    cr_assert_str_eq(compiled_says(onnx_depthwise_cl,
                         dgrad_compiled_op_impl_name, impl, sizeof impl),
            "dgrad:direct_dw");
    sweep_core("compile (depthwise channels-last loop, bias, ReLU)",
            onnx_depthwise_cl, fresh, act_compile, verify_by_executing,
            undo_compiled, EXPECT_FAILURES);
    sweep_core("cached execute (depthwise channels-last loop, bias, ReLU)",
            onnx_depthwise_cl, compiled_warm, act_execute, verify_output,
            undo_none, EXPECT_NOTHING);
    sweep_core("cached execute (depthwise channels-last loop, bf16 bias, "
            "ReLU)", with(onnx_depthwise_cl, dgrad_bf16, 1, 0), compiled_warm,
            act_execute, verify_output, undo_none, EXPECT_NOTHING);
    /* And the channels-last loop of windows that do not overlap. */
    cr_assert_str_eq(compiled_says(onnx_blocks_cl,
                         dgrad_compiled_op_impl_name, impl, sizeof impl),
            "dgrad:direct_blocks");
    sweep_core("compile (blocks channels-last loop, bias, ReLU)",
            onnx_blocks_cl, fresh, act_compile, verify_by_executing,
            undo_compiled, EXPECT_FAILURES);
    sweep_core("cached execute (blocks channels-last loop, bias, ReLU)",
            onnx_blocks_cl, compiled_warm, act_execute, verify_output,
            undo_none, EXPECT_NOTHING);
    sweep_core("cached execute (blocks channels-last loop, f16 bias, ReLU)",
            with(onnx_blocks_cl, dgrad_f16, 1, 0), compiled_warm,
            act_execute, verify_output, undo_none, EXPECT_NOTHING);
    /* Its lanes form, with the rows' lists made at compile, and the row
     * vectors loop, its tables made at compile (f16: the input widened
     * by the loop, the output rounded by it). */
    const dgrad_data_type_t f32_f16[] = {dgrad_f32, dgrad_f16};
    sweep_own_loop_kind(&policy, 3, 1, onnx_blocks_lists,
            "dgrad:direct_blocks", "blocks lanes from lists", f32_f16, 2);
    sweep_own_loop_kind(&policy, 4, cpu_has_avx512f() || cpu_has_avx2_fma(),
            onnx_row_vectors, "dgrad:direct_row_vectors", "row vectors",
            f32_f16, 2);
    /* The phase pair loop, its table made at compile (f16: the input
     * widened into the execution's scratch, the output rounded by it). */
    sweep_own_loop_kind(&policy, 5,
            cpu_has_avx512f() && cpu_has_avx512bw() && cpu_has_avx512vl(),
            onnx_phase_pair, "dgrad:direct_phase_pair", "phase pair",
            f32_f16, 2);
    /* Its AMX form in bf16 where the CPU has AMX (its table made at
     * compile, the input interleaved into the execution's scratch);
     * elsewhere the kind applies to nothing (onednn/own_loop_phase_pair_amx
     * asserts where it applies). */
    policy.own_loop_kind = 6;
    dgrad_api_set_policy_for_testing(&policy);
    char amx[64];
    compiled_says(with(onnx_phase_pair, dgrad_bf16, 1, 0),
            dgrad_compiled_op_impl_name, amx, sizeof amx);
    const dgrad_data_type_t bf16[] = {dgrad_bf16};
    if (!strcmp(amx, "dgrad:direct_phase_pair_amx"))
        sweep_own_loop_kind(&policy, 6, 1, onnx_phase_pair,
                "dgrad:direct_phase_pair_amx", "phase pair on AMX", bf16, 1);
    /* The gemm rows loop, which carries no chain (f16: on f32 copies of
     * the tensors): its columns and open rows in the execution's
     * scratch, its products oneDNN's sgemm. */
    scenario_post_op = NULL;
    sweep_own_loop_kind(&policy, 7, 1, onnx_gemm_rows, "dgrad:gemm_rows",
            "gemm rows", f32_f16, 2);
    dgrad_api_set_policy_for_testing(NULL);
}

/* The projection (projection.c) wherever it applies: its matmul and the
 * f32 copies around it fail over like every other step, at compile and
 * at first and cached execute, with a bias, a chain (a pass after it,
 * which may leave the op's result where it fails) and constant
 * weights. */
Test(faults, projection, .timeout = 600) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.projection = 2;
    dgrad_api_set_policy_for_testing(&policy);
    char impl[64];
    compiled_says(onnx_projection, dgrad_compiled_op_impl_name, impl,
            sizeof impl);
    cr_assert(!strncmp(impl, "matmul:", 7), "%s", impl);
    sweep_core("compile (projection, bias)", onnx_projection, fresh,
            act_compile, verify_by_executing, undo_compiled,
            EXPECT_FAILURES);
    sweep_core("first execute (projection, bias)", onnx_projection,
            compiled_fresh, act_execute, verify_output, undo_none,
            EXPECT_FAILURES);
    sweep_core("cached execute (projection, bias)", onnx_projection,
            compiled_warm, act_execute, verify_output, undo_none,
            EXPECT_RUNTIME_ONLY);
    sweep_core("cached execute (projection, f16 bias)",
            with(onnx_projection, dgrad_f16, 1, 0), compiled_warm,
            act_execute, verify_output, undo_none, EXPECT_RUNTIME_ONLY);
    sweep_core("constant weights (projection)",
            with(onnx_projection, dgrad_f32, 0, 1), fresh,
            act_compile_execute, verify_output, undo_compiled,
            EXPECT_FAILURES);
    scenario_post_op = "ReLU";
    char carrier[32];
    cr_assert_str_eq(compiled_says(onnx_projection,
                             dgrad_compiled_op_chain_carrier, carrier,
                             sizeof carrier),
            "pass");
    sweep_core("compile (projection, bias, ReLU)", onnx_projection, fresh,
            act_compile, verify_by_executing, undo_compiled,
            EXPECT_FAILURES);
    sweep_core("cached execute (projection, bias, ReLU)", onnx_projection,
            compiled_warm, act_execute, verify_output, undo_none,
            EXPECT_RUNTIME_POST_PASS);
    scenario_post_op = NULL;
    dgrad_api_set_policy_for_testing(NULL);
}

/* Small reorders as dgrad's scatter (small_copy.c): timed against
 * oneDNN's at compile (its scratch buffers, stream and memory objects),
 * and forced into a folded plan, where it folds the weights itself; each
 * fails over at compile, first and cached execute, with constant
 * weights. */
Test(faults, small_copy, .timeout = 600) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 0;
    policy.projection = 0;
    policy.phase_fold = 0;
    policy.small_copy = 1;
    dgrad_api_set_policy_for_testing(&policy);
    sweep_core("compile (reorders timed against the scatter)",
            nhwc(onnx_timed), fresh, act_compile, verify_by_executing,
            undo_compiled, EXPECT_FAILURES);
    policy.phase_fold = 2;
    policy.small_copy = 2;
    dgrad_api_set_policy_for_testing(&policy);
    char step[64];
    cr_assert_str_eq(compiled_says(onnx_small,
                             dgrad_compiled_op_weights_step, step,
                             sizeof step),
            "dgrad:fold scatter");
    sweep_core("compile (fold scatter)", onnx_small, fresh, act_compile,
            verify_by_executing, undo_compiled, EXPECT_FAILURES);
    sweep_core("first execute (fold scatter, bias)",
            with(onnx_small, dgrad_f32, 1, 0), compiled_fresh, act_execute,
            verify_output, undo_none, EXPECT_FAILURES);
    sweep_core("cached execute (fold scatter)", onnx_small, compiled_warm,
            act_execute, verify_output, undo_none, EXPECT_RUNTIME_ONLY);
    sweep_core("constant weights (fold scatter)",
            with(onnx_small, dgrad_f32, 0, 1), fresh, act_compile_execute,
            verify_output, undo_compiled, EXPECT_FAILURES);
    dgrad_api_set_policy_for_testing(NULL);
}

/* ------------------------------------------------------------ in place */

/* The output buffer as the operand of an Add (dgrad.h,
 * dgrad_compiled_op_query_in_place_input), on a warm compiled op of each
 * in-place mode, warmed by one execution with the operand in its own
 * buffer: a plan whose convolution writes the output (channels-last, no
 * bias) sets the operand aside, in a buffer its context makes at the
 * first in-place execution (its allocation failing: out_of_memory, the
 * output, which holds the operand, untouched); a plan with a bias
 * accumulates through the bias add's summing twin and allocates nothing
 * (only primitive executions fail). Each failure's call repeated must
 * give the reference. */
Test(faults, in_place_executions) {
    dgrad_plan_policy_t policy = dgrad_plan_policy_default();
    policy.own_loop = 0;
    policy.layout_search = 0;
    dgrad_api_set_policy_for_testing(&policy);
    for (int bias = 0; bias < 2; bias++) {
        run_t r;
        /* channels-last without a bias: jit writes the output itself */
        spec_t s = with(onnx_small, dgrad_f32, bias, 0);
        if (!bias) s = nhwc(s);
        run_init(&r, &s);
        op_build(&r);
        cr_assert_eq(dgrad_op_append_post_op(r.op, "Add", 0, NULL, NULL),
                dgrad_success, "%s", dgrad_last_error_message());
        size_t n_own = n_inputs(&r);
        dgrad_logical_tensor_t in[4] = {r.in[0], r.in[1], r.in[2]};
        dgrad_logical_tensor_init(&in[n_own], 6, s.dt, s.nd, s.out_dims,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        if (s.channels_last) channels_last(&in[n_own]);
        void *operand = filled(s.dt, count_of(s.out_dims, s.nd), 9, 4);
        cr_assert_eq(dgrad_compiled_op_create(&r.compiled, r.op, n_own + 1,
                             in, &r.out_req), dgrad_success, "%s",
                dgrad_last_error_message());
        cr_assert_str_eq(dgrad_compiled_op_in_place_mode(r.compiled),
                bias ? "accumulates" : "sets aside");
        /* the reference, from the operand in its own buffer */
        dgrad_resolved_t res;
        cr_assert_eq(dgrad_problem_resolve(dgrad_op_get_desc(r.op), n_own + 1,
                             in, &r.out_req, NULL, 0, &res), dgrad_success);
        void *want = malloc(r.y_bytes);
        const void *ops[1] = {operand};
        dgrad_reference_compute_fused(&res.problem, r.x, r.w,
                bias ? r.third : NULL, ops, want, NULL);
        const void *bufs[4] = {r.x, r.w, r.third};
        bufs[n_own] = operand;
        cr_assert_eq(dgrad_compiled_op_execute(r.compiled, n_own + 1, bufs,
                             r.y), dgrad_success, "%s",
                dgrad_last_error_message());
        bufs[n_own] = r.y;
        long failures = 0, out_of_memory = 0;
        for (long n = 1;; n++) {
            memcpy(r.y, operand, r.y_bytes);
            dgrad_fault_arm(n);
            dgrad_status_t st = dgrad_compiled_op_execute(r.compiled,
                    n_own + 1, bufs, r.y);
            int fired = dgrad_fault_fired();
            dgrad_fault_arm(0);
            if (!fired) {
                cr_assert_eq(st, dgrad_success, "%s",
                        dgrad_last_error_message());
                break;
            }
            failures++;
            cr_assert(st == dgrad_runtime_error || st == dgrad_out_of_memory,
                    "failure %ld: %s", n, dgrad_status_name(st));
            if (st == dgrad_out_of_memory) {
                out_of_memory++;
                cr_assert(!bias, "failure %ld: the accumulating plan "
                        "allocated", n);
                cr_assert(!memcmp(r.y, operand, r.y_bytes),
                        "failure %ld: the output was written", n);
            }
        }
        cr_assert(failures > 0, "nothing to fail");
        cr_assert_eq(out_of_memory, bias ? 0 : 1, "bias %d: %ld allocations "
                "failed", bias, out_of_memory);
        for (int64_t i = 0; i < count_of(s.out_dims, s.nd); i++)
            cr_assert_float_eq(dgrad_load(r.y, s.dt, i),
                    dgrad_load(want, s.dt, i), 1e-4, "bias %d, element %lld",
                    bias, (long long)i);
        free(want);
        free(operand);
        run_free(&r);
    }
    dgrad_api_set_policy_for_testing(NULL);
}
