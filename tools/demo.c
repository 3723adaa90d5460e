/*
 * `dgrad demo`: the specification's examples end to end through the plugin,
 * as a graph compiler would run them, each checked against the reference on
 * a random sample of output points (the full 3D reference would take hours).
 *
 * The op is described once, as dialect attributes in text; the same text
 * builds the plugin's op and, through the oracle library (the dialect layer
 * and the reference, no oneDNN), the canonical problem the points are
 * checked with.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dtype.h"
#include "problem.h"
#include "reference.h"
#include "tool.h"

#define MAX_ATTRS 8

typedef struct example {
    const char *label;
    dgrad_op_kind_t kind;
    const char *attrs[MAX_ATTRS][2]; /* name, value; NULL-terminated */
    int ndims, wei_ndims;
    int64_t data[5], wei[6], out[5]; /* out: expected dims */
    int shape_input;                  /* pass dst_shape as a third input */
} example_t;

typedef struct options {
    dgrad_data_type_t dt;
    int64_t size_3d;
    int points;
    unsigned seed;
} options_t;

static const char *usage_text =
        "usage: dgrad demo [--dtype f32|bf16|f16] [--3d-size N] [--points N]\n"
        "                  [--seed N]\n\n"
        "Runs the specification's examples through the plugin and checks each\n"
        "against the reference on a random sample of output points:\n"
        "  ConvolutionBackpropData 1x20x224x224, weights 20x10x3x3, s2 p1\n"
        "  GroupConvolutionBackpropData 1x20x224^n, weights 4x5x2x3^n (n=1,2,3)\n"
        "  ConvolutionBackwardData (oneDNN Graph) of the 2D problem in NXC/XIO\n"
        "    with dst_shape given as an input tensor\n\n"
        "options:\n"
        "  --dtype T     data type of data, weights and output (default f32)\n"
        "  --3d-size N   spatial size of the 3D example's input (default 224,\n"
        "                the specification's; output 2N-1)\n"
        "  --points N    output points checked per example (default 2000)\n"
        "  --seed N      random seed (default 1)\n"
        "Exit status: 0 when every example passes, 1 when one fails or the\n"
        "plugin cannot be loaded, 2 on usage errors (unknown option, bad value).\n";

/* -------------------------------------------------------------- progress */

static int progress_on;

static void progress(const char *label, const char *stage) {
    if (!progress_on) return;
    fprintf(stderr, "\r\033[K  %s: %s", label, stage);
    fflush(stderr);
}

static void progress_done(void) {
    if (progress_on) fprintf(stderr, "\r\033[K");
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ the examples */

static int build_examples(example_t *ex, int64_t n3) {
    int n = 0;
    example_t cbd = {"ConvolutionBackpropData", dgrad_op_convolution_backprop_data,
            {{"strides", "2,2"}, {"pads_begin", "1,1"}, {"pads_end", "1,1"}},
            4, 4, {1, 20, 224, 224}, {20, 10, 3, 3}, {1, 10, 447, 447}, 0};
    ex[n++] = cbd;
    static const char *strides[] = {"2", "2,2", "2,2,2"}, *pads[] = {"1", "1,1", "1,1,1"};
    for (int nsp = 1; nsp <= 3; nsp++) {
        int64_t x = nsp == 3 ? n3 : 224;
        example_t g = {"GroupConvolutionBackpropData",
                dgrad_op_group_convolution_backprop_data,
                {{"strides", strides[nsp - 1]}, {"pads_begin", pads[nsp - 1]},
                        {"pads_end", pads[nsp - 1]}},
                2 + nsp, 3 + nsp, {1, 20}, {4, 5, 2}, {1, 8}, 0};
        for (int i = 0; i < nsp; i++) {
            g.data[2 + i] = x;
            g.wei[3 + i] = 3;
            g.out[2 + i] = 2 * x - 1;
        }
        ex[n++] = g;
    }
    example_t onednn = {"ConvolutionBackwardData", dgrad_op_convolution_backward_data,
            {{"strides", "2,2"}, {"pads_begin", "1,1"}, {"pads_end", "1,1"},
                    {"data_format", "NXC"}, {"weights_format", "XIO"}},
            4, 4, {1, 224, 224, 20}, {3, 3, 10, 20}, {1, 447, 447, 10}, 1};
    ex[n++] = onednn;
    return n;
}

static const char *dims_text(char *buf, size_t size, const int64_t *d, int n) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, i ? "x%lld" : "%lld",
                (long long)d[i]);
    return buf;
}

/* --------------------------------------------------------------- running */

typedef struct run {
    const dgrad_plugin_api_t *api;
    dgrad_op_t *op;
    dgrad_compiled_op_t *compiled;
    dgrad_logical_tensor_t inputs[3], output;
    void *data, *wei, *out;
    int64_t shape_values[5];
    dgrad_resolved_t oracle; /* the canonical problem, for the reference */
    char error[512];
} run_t;

static void fill(void *buf, dgrad_data_type_t dt, int64_t n, unsigned seed) {
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        dgrad_store(buf, dt, i, (double)((int)(s >> 61) - 3)); /* -3..4 */
    }
}

static int fail_run(run_t *r, const char *what) {
    snprintf(r->error, sizeof r->error, "%s: %s", what,
            r->api->last_error_message());
    return 0;
}

/* Builds the op through the plugin and the canonical problem through the
 * oracle from the same attribute text, then compiles. */
static int prepare(run_t *r, const example_t *ex, dgrad_data_type_t dt) {
    const dgrad_plugin_api_t *api = r->api;
    dgrad_op_desc_t desc;
    if (api->op_create(&r->op, 0, ex->kind, ex->label) != dgrad_success)
        return fail_run(r, "op creation");
    dgrad_op_desc_init(&desc, ex->kind);
    for (int i = 0; i < MAX_ATTRS && ex->attrs[i][0]; i++) {
        if (api->op_set_attr_by_name(r->op, ex->attrs[i][0], ex->attrs[i][1])
                != dgrad_success)
            return fail_run(r, "attribute");
        dgrad_op_desc_set_by_name(&desc, ex->attrs[i][0], ex->attrs[i][1]);
    }
    size_t n_inputs = 2;
    api->logical_tensor_init(&r->inputs[0], 0, dt, ex->ndims, ex->data,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    api->logical_tensor_init(&r->inputs[1], 1, dt, ex->wei_ndims, ex->wei,
            dgrad_layout_type_strided, dgrad_property_type_constant);
    if (ex->shape_input) {
        int64_t len = ex->ndims;
        api->logical_tensor_init(&r->inputs[2], 2, dgrad_s64, 1, &len,
                dgrad_layout_type_strided, dgrad_property_type_variable);
        memcpy(r->shape_values, ex->out, sizeof r->shape_values);
        n_inputs = 3;
    }
    /* Output dims are left to dgrad to infer, except where the shape input
     * decides them: then they are given, so the plan is built now. */
    if (ex->shape_input)
        api->logical_tensor_init(&r->output, 3, dt, ex->ndims, ex->out,
                dgrad_layout_type_strided, dgrad_property_type_variable);
    else
        api->logical_tensor_init(&r->output, 3, dt, DGRAD_UNKNOWN_NDIMS, NULL,
                dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_plugin_compile_args_t args = {sizeof args, r->op, n_inputs,
            r->inputs, &r->output, NULL};
    if (api->compiled_op_create(&args) != dgrad_success)
        return fail_run(r, "compile");
    r->compiled = args.compiled;
    if (dgrad_problem_resolve(&desc, n_inputs, r->inputs, &r->output,
                ex->shape_input ? r->shape_values : NULL,
                ex->shape_input ? (size_t)ex->ndims : 0, &r->oracle)
            != dgrad_success) {
        snprintf(r->error, sizeof r->error, "oracle: %s",
                dgrad_last_error_message());
        return 0;
    }
    return 1;
}

static int64_t span(const run_t *r, const dgrad_logical_tensor_t *lt) {
    int64_t n = 0;
    r->api->logical_tensor_get_span(lt, &n);
    return n;
}

/* Checks @p points random output points (corners first) against the
 * reference. Returns the largest error in units of the tolerance. */
static double check_points(const run_t *r, dgrad_data_type_t dt, int points,
        unsigned seed, double *max_abs_err) {
    const dgrad_problem_t *p = &r->oracle.problem;
    uint64_t s = seed * 0x2545f4914f6cdd1dull + 7;
    double worst = 0;
    *max_abs_err = 0;
    for (int i = 0; i < points; i++) {
        int64_t y[DGRAD_MAX_SPATIAL] = {0, 0, 0}, n, c;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        n = (int64_t)((s >> 33) % (uint64_t)p->N);
        c = (int64_t)((s >> 17) % (uint64_t)p->Cout);
        for (int a = 0; a < p->nsp; a++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            y[a] = i < (1 << p->nsp) ? ((i >> a) & 1) * (p->Y[a] - 1)
                                     : (int64_t)((s >> 33) % (uint64_t)p->Y[a]);
        }
        int64_t off = n * p->out_strides[0] + c * p->out_strides[1];
        for (int a = 0; a < p->nsp; a++) off += y[a] * p->out_strides[2 + a];
        double abs_sum;
        double want = dgrad_reference_point(p, r->data, r->wei, NULL, n, c, y,
                &abs_sum);
        double got = dgrad_load(r->out, dt, off);
        /* Output rounding to the type plus f32 accumulation. */
        double tol = dgrad_data_type_unit_roundoff(dt) * fabs(want)
                + 4.0 * 0x1p-24 * abs_sum + 1e-30;
        double err = fabs(got - want);
        if (!(err <= *max_abs_err)) *max_abs_err = err;
        if (!(err / tol <= worst)) worst = err / tol;
    }
    return worst;
}

static int run_example(const dgrad_plugin_api_t *api, const example_t *ex,
        const options_t *o) {
    run_t r;
    memset(&r, 0, sizeof r);
    r.api = api;
    char in_s[64], w_s[64], out_s[64];
    dims_text(in_s, sizeof in_s, ex->data, ex->ndims);
    dims_text(w_s, sizeof w_s, ex->wei, ex->wei_ndims);
    int ok = 0;
    double ms = 0, gflops = 0, max_err = 0, worst = 0;
    size_t es = 0;
    progress(ex->label, "compiling");
    if (!prepare(&r, ex, o->dt)) goto report;
    es = (size_t)dgrad_data_type_size(o->dt);
    progress(ex->label, "allocating and filling inputs");
    int64_t n_data = span(&r, &r.inputs[0]), n_wei = span(&r, &r.inputs[1]);
    int64_t n_out = span(&r, &r.output);
    r.data = malloc((size_t)n_data * es);
    r.wei = malloc((size_t)n_wei * es);
    r.out = malloc((size_t)n_out * es);
    if (!r.data || !r.wei || !r.out) {
        snprintf(r.error, sizeof r.error, "out of memory (%lld output elements)",
                (long long)n_out);
        goto report;
    }
    fill(r.data, o->dt, n_data, o->seed);
    fill(r.wei, o->dt, n_wei, o->seed + 1);
    const void *bufs[3] = {r.data, r.wei, r.shape_values};
    dgrad_plugin_execute_args_t args = {sizeof args, r.compiled,
            ex->shape_input ? 3 : 2, bufs, r.out, (size_t)n_out * es, NULL};
    /* One warm-up (constant weights are converted there), then the median
     * of three timed runs; the 3D example is timed once. */
    int big = n_out > 100000000;
    double t[3];
    int reps = big ? 1 : 3;
    for (int i = -1; i < reps; i++) {
        progress(ex->label, i < 0 ? "executing (warm-up)" : "executing");
        double t0 = now_ms();
        if (api->compiled_op_execute(&args) != dgrad_success) {
            fail_run(&r, "execute");
            goto report;
        }
        if (i >= 0) t[i] = now_ms() - t0;
    }
    if (reps == 3) {
        double a = t[0], b = t[1], c = t[2];
        ms = a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
    } else {
        ms = t[0];
    }
    const dgrad_problem_t *p = &r.oracle.problem;
    double flops = 2.0 * (double)p->N * (double)p->Cin * (double)(p->Cout / p->G);
    for (int a = 0; a < p->nsp; a++) flops *= (double)(p->X[a] * p->K[a]);
    gflops = flops / ms / 1e6;
    progress(ex->label, "checking sampled points against the reference");
    worst = check_points(&r, o->dt, o->points, o->seed + 2, &max_err);
    ok = worst <= 1.0;
    for (int i = 0; i < ex->ndims; i++)
        if (r.output.dims[i] != ex->out[i]) {
            ok = 0;
            snprintf(r.error, sizeof r.error, "output %s, expected %s",
                    dims_text(out_s, sizeof out_s, r.output.dims, r.output.ndims),
                    dims_text(in_s, sizeof in_s, ex->out, ex->ndims));
        }
report:
    progress_done();
    dims_text(out_s, sizeof out_s, r.output.ndims > 0 ? r.output.dims : ex->out,
            ex->ndims);
    printf("%-29s %-5s %-17s %-13s %-17s %-24s %9.2f %8.1f %9.3g  %s\n",
            ex->label, dgrad_data_type_name(o->dt), in_s, w_s, out_s,
            r.compiled ? api->compiled_op_impl_name(r.compiled) : "-", ms,
            gflops, max_err, ok ? "PASS" : "FAIL");
    if (!ok && r.error[0]) printf("    %s\n", r.error);
    if (!ok && !r.error[0])
        printf("    error %.3g times the tolerance on a sampled point\n", worst);
    fflush(stdout);
    api->compiled_op_destroy(r.compiled);
    api->op_destroy(r.op);
    free(r.data);
    free(r.wei);
    free(r.out);
    return ok;
}

static int parse_options(int argc, char **argv, options_t *o) {
    o->dt = dgrad_f32;
    o->size_3d = 224;
    o->points = 2000;
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 0;
        } else if (!strcmp(a, "--dtype") && v) {
            if (!strcmp(v, "f32")) o->dt = dgrad_f32;
            else if (!strcmp(v, "bf16")) o->dt = dgrad_bf16;
            else if (!strcmp(v, "f16")) o->dt = dgrad_f16;
            else {
                fprintf(stderr, "dgrad demo: --dtype '%s' is not one of f32, bf16, f16\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--3d-size") && v) {
            o->size_3d = strtoll(v, &end, 10);
            if (*end || o->size_3d < 2 || o->size_3d > 224) {
                fprintf(stderr, "dgrad demo: --3d-size '%s' must be 2..224\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--points") && v) {
            long n = strtol(v, &end, 10);
            if (*end || n < 1 || n > 10000000) {
                fprintf(stderr, "dgrad demo: --points '%s' must be 1..10000000\n", v);
                return -1;
            }
            o->points = (int)n;
        } else if (!strcmp(a, "--seed") && v) {
            o->seed = (unsigned)strtoul(v, &end, 10);
            if (*end) {
                fprintf(stderr, "dgrad demo: --seed '%s' is not a number\n", v);
                return -1;
            }
        } else {
            fprintf(stderr, "dgrad demo: unknown option or missing value '%s'\n%s",
                    a, usage_text);
            return -1;
        }
        i++; /* every option but --help takes a value */
    }
    return 1;
}

int dgrad_demo_main(int argc, char **argv) {
    options_t o;
    int parsed = parse_options(argc, argv, &o);
    if (parsed <= 0) return parsed == 0 ? 0 : 2;
    progress_on = isatty(STDERR_FILENO);
    dgrad_loader_plugin_t *plugin = NULL;
    const dgrad_plugin_api_t *api = tool_load_plugin(tool_plugin_path, &plugin);
    if (!api) return 1;
    printf("dgrad demo: plugin %s %s (ABI %u.%u), %d sampled points per example\n",
            api->plugin_name, api->plugin_version, api->abi_major,
            api->abi_minor, o.points);
    printf("%-29s %-5s %-17s %-13s %-17s %-24s %9s %8s %9s  %s\n", "op", "dtype",
            "input", "weights", "output", "oneDNN implementation", "time (ms)",
            "GFLOP/s", "max error", "result");
    example_t ex[5];
    int n = build_examples(ex, o.size_3d), failures = 0;
    for (int i = 0; i < n; i++) failures += !run_example(api, &ex[i], &o);
    printf("%d passed, %d failed\n", n - failures, failures);
    dgrad_loader_close(plugin);
    return failures ? 1 : 0;
}
