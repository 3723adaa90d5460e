/*
 * `dgrad bench`: times dgrad against a raw oneDNN primitive on
 * benchdnn deconvolution descriptors, in one run and interleaved, with
 * GFLOP/s, the roofline fraction, cold and cached compile times and peak
 * memory; writes a table, a CSV file and a gnuplot plot.
 *
 * dgrad is reached the way a graph compiler reaches it: through the plugin
 * table (loaded with the loader), building a oneDNN Graph
 * ConvolutionBackwardData op with the user's data and weights formats.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "tool.h"

#define MAX_PROBLEMS 4096
#define MAX_REPS 100000

static const char *usage_text =
        "usage: dgrad bench [options] [PROBLEM...] [--batch FILE...]\n"
        "\n"
        "Times dgrad (through the plugin, as a graph compiler runs it) against\n"
        "one raw oneDNN convolution-backward-data primitive created on the same\n"
        "user memory layout, measured interleaved in the same run.\n"
        "\n"
        "PROBLEM is a benchdnn deconvolution descriptor, e.g.\n"
        "  g4mb1ic20ih224oc8oh447kh3sh2ph1n\"spec:group2d\"\n"
        "ic/i[dhw] describe the op's data input (diff_dst), oc/o[dhw] its output,\n"
        "g groups, mb batch (default 2), k/s/p kernel, stride, begin pad, d the\n"
        "dilation in oneDNN's 0-based form; w/h/d axes for 1D/2D/3D. A missing\n"
        "output size or pad is computed as benchdnn does.\n"
        "\n"
        "options:\n"
        "  --batch FILE            problems from FILE (one per line, '#' comments,\n"
        "                          --batch=OTHER lines include files relative to it)\n"
        "  --dt f32|bf16|f16       data type (default f32); f16 runs the raw\n"
        "                          baseline in f32 (oneDNN 2.6 has no f16 CPU\n"
        "                          convolution) and also times dgrad in f32\n"
        "  --data-format NXC|NCX   user layout of data and output (default NXC)\n"
        "  --weights-format XIO|OIX  user layout of the weights (default XIO\n"
        "                          with NXC data, OIX with NCX data)\n"
        "  --constant-weights      weights logical tensor marked constant\n"
        "  --reps N                timed samples per participant (default 15)\n"
        "  --warmup N              untimed executions first (default 3)\n"
        "  --min-sample-ms T       executions per sample grow until one sample\n"
        "                          lasts T ms (default 1)\n"
        "  --cached-reps N         cached compiles timed (default 50)\n"
        "  --max-problem-s T       fewer samples when one problem would take\n"
        "                          longer than T s to time (default 20, >= 3)\n"
        "  --peak-gflops G         peak GFLOP/s for the roofline (default: measured\n"
        "                          with dnnl_sgemm, or a bf16 matmul for bf16)\n"
        "  --peak-gbs B            memory bandwidth in GB/s (default: measured with\n"
        "                          a streaming triad)\n"
        "  --csv FILE              write the results as CSV\n"
        "  --plot FILE.png         plot dgrad, raw oneDNN and the roofline (gnuplot)\n"
        "  --backend auto|plugin|core  how dgrad is reached (default auto: the\n"
        "                          plugin, else libdgrad.so with a note)\n"
        "  --core-lib PATH         libdgrad.so for --backend core\n"
        "  --no-check              skip the dgrad vs raw oneDNN output comparison\n"
        "  --no-raw                time dgrad alone (profiling); no baseline\n"
        "  --raw-weights user|prepacked  the baseline reads the user's weights\n"
        "                          (default), or weights reordered once into the\n"
        "                          primitive's preferred layout (format_tag_any),\n"
        "                          as a user with constant weights would (compare\n"
        "                          with --constant-weights)\n"
        "  -q, --quiet             no per-problem progress on stderr\n"
        "\n"
        "Columns: dgrad and raw execute time (median of the samples, with min and\n"
        "max), ratio dgrad/raw, dgrad GFLOP/s, roofline fraction (time at the\n"
        "roofline / dgrad time), cold compile (first compile of the problem) and\n"
        "cached compile (median, same op compiled again), peak extra memory of\n"
        "dgrad's compile + first execute (VmHWM), and the output check.\n"
        "Exit status: 0 when every problem ran and checked, 1 otherwise (also\n"
        "when the plugin, a batch file, the CSV or the plot cannot be used), 2 on\n"
        "usage errors (unknown option, bad value, a problem that is malformed or\n"
        "whose buffers do not fit in physical memory), before anything runs.\n";

typedef struct options {
    dgrad_data_type_t dt;
    bench_layout_t layout;
    bench_wlayout_t wlayout;
    int constant_weights;
    int reps, warmup, cached_reps;
    double min_sample_ms, max_problem_s;
    double peak_gflops, peak_gbs;
    int wlayout_given;
    const char *csv, *plot;
    bench_backend_kind_t backend;
    const char *core_lib;
    int check, quiet, no_raw, raw_prepacked;
} options_t;

typedef struct problem {
    bench_desc_t d;
    char text[BENCH_DESC_MAX]; /* canonical descriptor (+ n name) */
} problem_t;

typedef struct stats {
    double med, min, max;
} stats_t;

typedef struct result {
    int ran;        /* dgrad ran */
    int reps;       /* samples taken */
    int raw_ok;     /* the baseline ran */
    int check;      /* 1 ok, 0 failed, -1 not checked */
    double max_err;
    stats_t dg, raw, f32;
    int has_f32;
    double flops, bytes, gflops, raw_gflops, roof_gflops, roof_pct;
    double compile_ms, cached_us, raw_compile_ms;
    double mem_mb, raw_mem_mb;
    char impl[96], raw_impl[96];
    char error[512];
} result_t;

/* --------------------------------------------------------------- helpers */

static const char *dt_str(dgrad_data_type_t dt) {
    return dt == dgrad_bf16 ? "bf16" : dt == dgrad_f16 ? "f16" : "f32";
}

static size_t dt_size(dgrad_data_type_t dt) { return dt == dgrad_f32 ? 4 : 2; }

static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Exact for the values the bench generates (k/32, |k| <= 32) and zero. */
static uint16_t f32_to_f16_exact(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t absu = u & 0x7fffffffu;
    if (absu == 0) return sign;
    return sign | (uint16_t)((((absu >> 23) - 112u) << 10) | ((absu >> 13) & 0x3ffu));
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu,
             man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (!man) {
        u = sign;
    } else {
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static float load(const void *buf, dgrad_data_type_t dt, size_t i) {
    if (dt == dgrad_f32) return ((const float *)buf)[i];
    uint16_t h = ((const uint16_t *)buf)[i];
    return dt == dgrad_bf16 ? bf16_to_f32(h) : f16_to_f32(h);
}

/* Random multiples of 1/32 in [-1, 1]: exact in every type. */
static void fill_random(void *buf, dgrad_data_type_t dt, size_t n,
        uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        float v = (float)((int)(x % 65) - 32) / 32.0f;
        if (dt == dgrad_f32) ((float *)buf)[i] = v;
        else if (dt == dgrad_bf16) ((uint16_t *)buf)[i] = f32_to_bf16(v);
        else ((uint16_t *)buf)[i] = f32_to_f16_exact(v);
    }
}

static void to_f32(const void *src, dgrad_data_type_t dt, float *dst,
        size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = load(src, dt, i);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static stats_t stats_of(double *v, int n) {
    stats_t s = {NAN, NAN, NAN};
    if (n <= 0) return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    return s;
}

/* ---------------------------------------------------------------- memory */

static long read_status_kb(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(key);
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) {
            kb = strtol(line + n, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

/* Resets the peak resident set (VmHWM) to the current one; returns the
 * current RSS in kB, or -1 when the kernel does not allow the reset (then
 * ru_maxrss deltas are used). */
static int hwm_resettable = -1;

static long mem_mark(void) {
    if (hwm_resettable != 0) {
        FILE *f = fopen("/proc/self/clear_refs", "w");
        int ok = f && fputs("5", f) >= 0;
        if (f && fclose(f) != 0) ok = 0;
        hwm_resettable = ok;
    }
    if (hwm_resettable) return read_status_kb("VmRSS:");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* Peak growth in MB since @p mark. */
static double mem_peak_mb(long mark) {
    long peak;
    if (hwm_resettable) {
        peak = read_status_kb("VmHWM:");
    } else {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        peak = ru.ru_maxrss;
    }
    if (peak < 0 || mark < 0) return NAN;
    return peak > mark ? (double)(peak - mark) / 1024.0 : 0.0;
}

/* ------------------------------------------------------------- the op */

typedef struct dgrad_run {
    const bench_backend_t *be;
    dgrad_op_t *op;
    dgrad_logical_tensor_t lts[2], out_lt;
    dgrad_compiled_op_t *compiled;
    const void *inputs[2];
    void *out;
    dgrad_status_t status;
} dgrad_run_t;

static void dense_strides(int nd, const int64_t *dims, int64_t *strides) {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i] ? dims[i] : 1;
    }
}

/* Data dims in the user's order: NXC [N, X..., C], NCX [N, C, X...]. */
static int data_dims(const bench_desc_t *d, bench_layout_t layout, int64_t c,
        const int64_t *sp, int64_t *dims) {
    dims[0] = d->mb;
    if (layout == bench_nxc) {
        for (int a = 0; a < d->nsp; a++) dims[1 + a] = sp[a];
        dims[1 + d->nsp] = c;
    } else {
        dims[1] = c;
        for (int a = 0; a < d->nsp; a++) dims[2 + a] = sp[a];
    }
    return 2 + d->nsp;
}

/* Weights dims: OIX [Cin, Cout/G, K...], XIO [K..., Cout/G, Cin]. */
static int wei_dims(const bench_desc_t *d, bench_wlayout_t wl, int64_t *dims) {
    if (wl == bench_oix) {
        dims[0] = d->ic;
        dims[1] = d->oc / d->g;
        for (int a = 0; a < d->nsp; a++) dims[2 + a] = d->k[a];
    } else {
        for (int a = 0; a < d->nsp; a++) dims[a] = d->k[a];
        dims[d->nsp] = d->oc / d->g;
        dims[d->nsp + 1] = d->ic;
    }
    return 2 + d->nsp;
}

#define BE_TRY(call)                                                        \
    do {                                                                    \
        dgrad_status_t st_ = (call);                                        \
        if (st_ != dgrad_success) {                                         \
            snprintf(err, err_size, "%s: %s", #call, be->last_error());     \
            return -1;                                                      \
        }                                                                   \
    } while (0)

/* Builds the ConvolutionBackwardData op of @p d and its logical tensors. */
static int build_op(dgrad_run_t *r, const bench_backend_t *be,
        const bench_desc_t *d, dgrad_data_type_t dt, const options_t *o,
        char *err, size_t err_size) {
    int64_t dims[8], strides[8], v[3], pe[3];
    int nsp = d->nsp;
    memset(r, 0, sizeof *r);
    r->be = be;
    for (int a = 0; a < nsp; a++) {
        pe[a] = bench_desc_pad_end(d, a);
        if (pe[a] < 0) {
            /* Output padding: Y - (F - PB - PE) must stay below S. */
            if (-pe[a] >= d->s[a]) {
                snprintf(err, err_size, "output padding %lld on axis %d is not "
                        "below the stride (%lld): not a ConvolutionBackwardData "
                        "problem", (long long)-pe[a], a, (long long)d->s[a]);
                return -1;
            }
            pe[a] = 0;
        }
    }
    BE_TRY(be->op_create(&r->op, 1, dgrad_op_convolution_backward_data,
            "bench"));
    BE_TRY(be->op_set_s64s(r->op, dgrad_op_attr_strides, d->s, nsp));
    BE_TRY(be->op_set_s64s(r->op, dgrad_op_attr_pads_begin, d->p, nsp));
    BE_TRY(be->op_set_s64s(r->op, dgrad_op_attr_pads_end, pe, nsp));
    for (int a = 0; a < nsp; a++) v[a] = d->d[a] + 1;
    BE_TRY(be->op_set_s64s(r->op, dgrad_op_attr_dilations, v, nsp));
    BE_TRY(be->op_set_s64(r->op, dgrad_op_attr_groups, d->g));
    BE_TRY(be->op_set_str(r->op, dgrad_op_attr_data_format,
            o->layout == bench_nxc ? "NXC" : "NCX"));
    BE_TRY(be->op_set_str(r->op, dgrad_op_attr_weights_format,
            o->wlayout == bench_xio ? "XIO" : "OIX"));
    int nd = data_dims(d, o->layout, d->oc, d->o, dims);
    BE_TRY(be->op_set_s64s(r->op, dgrad_op_attr_dst_shape, dims, nd));
    dense_strides(nd, dims, strides);
    BE_TRY(be->lt_init_with_strides(&r->out_lt, 3, dt, nd, dims, strides,
            dgrad_property_type_variable));
    nd = data_dims(d, o->layout, d->ic, d->i, dims);
    dense_strides(nd, dims, strides);
    BE_TRY(be->lt_init_with_strides(&r->lts[0], 1, dt, nd, dims, strides,
            dgrad_property_type_variable));
    nd = wei_dims(d, o->wlayout, dims);
    dense_strides(nd, dims, strides);
    BE_TRY(be->lt_init_with_strides(&r->lts[1], 2, dt, nd, dims, strides,
            o->constant_weights ? dgrad_property_type_constant
                                : dgrad_property_type_variable));
    return 0;
}

static int compile_op(dgrad_run_t *r, dgrad_compiled_op_t **c, char *err,
        size_t err_size) {
    const bench_backend_t *be = r->be;
    dgrad_logical_tensor_t out = r->out_lt;
    BE_TRY(be->compile(be, r->op, 2, r->lts, &out, c));
    return 0;
}

static void run_destroy(dgrad_run_t *r) {
    if (!r->be) return;
    r->be->compiled_destroy(r->compiled);
    r->be->op_destroy(r->op);
    r->compiled = NULL;
    r->op = NULL;
}

static int run_dgrad(void *p) {
    dgrad_run_t *r = p;
    r->status = r->be->execute(r->be, r->compiled, 2, r->inputs, r->out);
    return r->status == dgrad_success ? 0 : -1;
}

static int run_raw(void *p) { return bench_raw_execute(p); }

/* ------------------------------------------------------- interleaved timing */

typedef struct participant {
    int (*run)(void *);
    void *ctx;
    int inner;
    double *samples;
} participant_t;

/* Warm-up, then @p reps samples per participant in rotating order. Each
 * sample times `inner` back-to-back executions (enough to last
 * min_sample_ms) and records the time per execution. */
static int time_interleaved(participant_t *p, int np, const options_t *o,
        int *reps) {
    double per_round = 0;
    for (int i = 0; i < np; i++) {
        double t0 = bench_now_ms();
        int w = o->warmup > 0 ? o->warmup : 1;
        for (int k = 0; k < w; k++)
            if (p[i].run(p[i].ctx)) return -1;
        double per = (bench_now_ms() - t0) / w;
        int inner = per > 0 ? (int)ceil(o->min_sample_ms / per) : 1000;
        p[i].inner = inner < 1 ? 1 : inner > 10000 ? 10000 : inner;
        per_round += per * p[i].inner;
    }
    /* A slow participant (oneDNN's reference path) gets fewer samples:
     * the whole timing stays within --max-problem-s, with at least 3. */
    *reps = o->reps;
    double budget_ms = o->max_problem_s * 1e3;
    if (per_round * *reps > budget_ms) {
        int r = (int)(budget_ms / per_round);
        *reps = r < 3 ? (o->reps < 3 ? o->reps : 3) : r;
    }
    for (int r = 0; r < *reps; r++)
        for (int j = 0; j < np; j++) {
            participant_t *q = &p[(r + j) % np];
            double t0 = bench_now_ms();
            for (int k = 0; k < q->inner; k++)
                if (q->run(q->ctx)) return -1;
            q->samples[r] = (bench_now_ms() - t0) / q->inner;
        }
    return 0;
}

/* --------------------------------------------------------- one problem */

typedef struct machine {
    double gflops, gbs;
} machine_t;

typedef struct buffers {
    void *in, *wei, *out;          /* user type */
    float *in32, *wei32, *f32_out; /* f16: f32 copies */
    void *raw_out_dt;              /* raw output in the user type */
} buffers_t;

static void buffers_free(buffers_t *b) {
    free(b->in);
    free(b->wei);
    free(b->out);
    free(b->in32);
    free(b->wei32);
    free(b->f32_out);
    free(b->raw_out_dt);
}

/* Elements of the data input, weights and output, and the bytes of every
 * buffer run_problem allocates for them in @p dt, in floating point so that
 * no size overflows before it is checked. */
typedef struct problem_size {
    double n_in, n_wei, n_out, bytes;
} problem_size_t;

static problem_size_t problem_size(const bench_desc_t *d, dgrad_data_type_t dt) {
    problem_size_t z = {(double)d->mb * (double)d->ic,
            (double)d->ic * (double)(d->oc / d->g), (double)d->mb * (double)d->oc,
            0};
    for (int a = 0; a < d->nsp; a++) {
        z.n_in *= (double)d->i[a];
        z.n_wei *= (double)d->k[a];
        z.n_out *= (double)d->o[a];
    }
    /* Input, weights and output in dt, the baseline's output (f32 for f16)
     * and, for f16, f32 copies of all three. */
    double es = (double)dt_size(dt), raw_es = dt == dgrad_f16 ? 4.0 : es;
    z.bytes = (z.n_in + z.n_wei + z.n_out) * es + z.n_out * raw_es;
    if (dt == dgrad_f16) z.bytes += (z.n_in + z.n_wei + z.n_out) * 4.0;
    return z;
}

/* A problem runs only when its buffers fit in physical memory; checked for
 * every problem before anything runs, so a mistyped size is refused at
 * once instead of failing (or swapping) after the calibration. */
static int check_problem_fits(const problem_t *p, dgrad_data_type_t dt) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int known = pages > 0 && page > 0;
    /* Unknown memory size: the 48-bit address space still bounds it. */
    double memory = known ? (double)pages * (double)page : 0x1p48;
    problem_size_t z = problem_size(&p->d, dt);
    if (z.bytes <= memory) return 0;
    fprintf(stderr, "dgrad bench: %s: its buffers need %.4g GB (input %.4g, "
            "weights %.4g, output %.4g elements in %s, and the baseline's "
            "output), more than %s (%.4g GB): a problem's buffers must fit in "
            "physical memory\n", p->text, z.bytes / 1e9, z.n_in, z.n_wei,
            z.n_out, dt_str(dt), known ? "this machine's physical memory"
            : "the 48-bit address space", memory / 1e9);
    return -1;
}

static void run_problem(const problem_t *pr, const bench_backend_t *be,
        const options_t *o, const machine_t *m, result_t *res) {
    const bench_desc_t *d = &pr->d;
    dgrad_data_type_t dt = o->dt, raw_dt = dt == dgrad_f16 ? dgrad_f32 : dt;
    size_t es = dt_size(dt);
    /* Exact: check_problem_fits bounded them by the memory size. */
    problem_size_t z = problem_size(d, dt);
    size_t n_in = (size_t)z.n_in, n_wei = (size_t)z.n_wei,
           n_out = (size_t)z.n_out;
    buffers_t b = {0};
    dgrad_run_t main_run = {0}, f32_run = {0};
    bench_raw_t *raw = NULL;
    char err[512] = "";
    participant_t parts[3];
    double *samples = NULL;
    int np = 0;

    memset(res, 0, sizeof *res);
    res->check = -1;
    res->dg = res->raw = res->f32 = (stats_t){NAN, NAN, NAN};
    res->compile_ms = res->cached_us = res->raw_compile_ms = NAN;
    res->mem_mb = res->raw_mem_mb = NAN;
    res->flops = bench_desc_flops(d);
    res->bytes = (double)(n_in + n_wei + n_out) * (double)es;
    double roof_ms = fmax(res->flops / (m->gflops * 1e6),
            res->bytes / (m->gbs * 1e6));
    res->roof_gflops = res->flops / (roof_ms * 1e6);

    b.in = bench_alloc(n_in * es);
    b.wei = bench_alloc(n_wei * es);
    b.out = bench_alloc(n_out * es);
    b.raw_out_dt = bench_alloc(n_out * dt_size(raw_dt));
    if (dt == dgrad_f16) {
        b.in32 = bench_alloc(n_in * 4);
        b.wei32 = bench_alloc(n_wei * 4);
        b.f32_out = bench_alloc(n_out * 4);
    }
    if (!b.in || !b.wei || !b.out || !b.raw_out_dt
            || (dt == dgrad_f16 && (!b.in32 || !b.wei32 || !b.f32_out))) {
        snprintf(res->error, sizeof res->error, "out of memory for buffers");
        goto done;
    }
    /* Weights are generated in OIX element order; the layouts differ only
     * in how the same random stream is placed, which does not matter. */
    fill_random(b.in, dt, n_in, 1);
    fill_random(b.wei, dt, n_wei, 2);
    memset(b.out, 0, n_out * es);
    memset(b.raw_out_dt, 0, n_out * dt_size(raw_dt));
    if (dt == dgrad_f16) {
        to_f32(b.in, dt, b.in32, n_in);
        to_f32(b.wei, dt, b.wei32, n_wei);
        memset(b.f32_out, 0, n_out * 4);
    }

    /* dgrad: cold compile and first execution, with their peak memory;
     * before the baseline so that oneDNN's primitive cache is cold. */
    if (build_op(&main_run, be, d, dt, o, err, sizeof err)) goto fail;
    main_run.inputs[0] = b.in;
    main_run.inputs[1] = b.wei;
    main_run.out = b.out;
    long mark = mem_mark();
    double t0 = bench_now_ms();
    if (compile_op(&main_run, &main_run.compiled, err, sizeof err)) goto fail;
    res->compile_ms = bench_now_ms() - t0;
    snprintf(res->impl, sizeof res->impl, "%s",
            be->impl_name(main_run.compiled));
    if (run_dgrad(&main_run)) {
        snprintf(err, sizeof err, "execute: %s", be->last_error());
        goto fail;
    }
    res->mem_mb = mem_peak_mb(mark);

    /* Cached compiles: the same op and tensors again. */
    {
        int n = o->cached_reps > 0 ? o->cached_reps : 1;
        double *v = malloc(sizeof(double) * n);
        if (!v) goto fail;
        for (int i = 0; i < n; i++) {
            dgrad_compiled_op_t *c = NULL;
            t0 = bench_now_ms();
            int bad = compile_op(&main_run, &c, err, sizeof err);
            v[i] = (bench_now_ms() - t0) * 1e3;
            be->compiled_destroy(c);
            if (bad) {
                free(v);
                goto fail;
            }
        }
        res->cached_us = stats_of(v, n).med;
        free(v);
    }

    /* The raw oneDNN baseline on the same user buffers (f32 copies for
     * f16) and its own output. */
    mark = mem_mark();
    t0 = bench_now_ms();
    if (!o->no_raw)
        raw = bench_raw_create(d, raw_dt, o->layout, o->wlayout,
                o->raw_prepacked,
                dt == dgrad_f16 ? (void *)b.in32 : b.in,
                dt == dgrad_f16 ? (void *)b.wei32 : b.wei, b.raw_out_dt, err,
                sizeof err);
    else
        snprintf(err, sizeof err, "--no-raw");
    res->raw_compile_ms = bench_now_ms() - t0;
    if (raw && bench_raw_execute(raw) == 0) {
        res->raw_ok = 1;
        res->raw_mem_mb = mem_peak_mb(mark);
        snprintf(res->raw_impl, sizeof res->raw_impl, "%s", bench_raw_impl(raw));
    } else {
        snprintf(res->raw_impl, sizeof res->raw_impl, "n/a");
        if (!raw && !o->no_raw)
            fprintf(stderr, "dgrad bench: %s: no raw baseline: %s\n",
                    pr->text, err);
        else if (raw)
            fprintf(stderr, "dgrad bench: %s: raw baseline failed to "
                    "execute\n", pr->text);
        res->raw_compile_ms = NAN;
        err[0] = 0;
    }

    /* f16: dgrad in f32 on the same values, for the f16/f32 ratio. */
    if (dt == dgrad_f16) {
        if (build_op(&f32_run, be, d, dgrad_f32, o, err, sizeof err)
                || compile_op(&f32_run, &f32_run.compiled, err, sizeof err))
            goto fail;
        f32_run.inputs[0] = b.in32;
        f32_run.inputs[1] = b.wei32;
        f32_run.out = b.f32_out;
        res->has_f32 = 1;
    }

    samples = malloc(sizeof(double) * 3 * (size_t)o->reps);
    if (!samples) goto fail;
    parts[np++] = (participant_t){run_dgrad, &main_run, 1, samples};
    if (res->raw_ok)
        parts[np++] = (participant_t){run_raw, raw, 1, samples + o->reps};
    if (res->has_f32)
        parts[np++] = (participant_t){run_dgrad, &f32_run, 1,
                samples + 2 * o->reps};
    int reps = o->reps;
    if (time_interleaved(parts, np, o, &reps)) {
        snprintf(err, sizeof err, "execute failed while timing: %s",
                be->last_error());
        goto fail;
    }
    res->ran = 1;
    res->reps = reps;
    res->dg = stats_of(parts[0].samples, reps);
    for (int i = 1; i < np; i++) {
        if (parts[i].run == run_raw) res->raw = stats_of(parts[i].samples, reps);
        else res->f32 = stats_of(parts[i].samples, reps);
    }
    res->gflops = res->flops / (res->dg.med * 1e6);
    res->raw_gflops = res->flops / (res->raw.med * 1e6);
    res->roof_pct = 100.0 * roof_ms / res->dg.med;

    /* dgrad's output against the baseline's. */
    if (o->check && res->raw_ok) {
        double maxref = 0, maxdiff = 0;
        for (size_t i = 0; i < n_out; i++) {
            double ref = load(b.raw_out_dt, raw_dt, i);
            double got = load(b.out, dt, i);
            double diff = fabs(got - ref);
            if (!(diff <= maxdiff)) maxdiff = diff; /* NaN sticks */
            if (fabs(ref) > maxref) maxref = fabs(ref);
        }
        res->max_err = maxdiff / (maxref > 1 ? maxref : 1);
        double tol = dt == dgrad_f32 ? 1e-5 : 2e-2;
        res->check = res->max_err <= tol;
        if (!res->check)
            snprintf(res->error, sizeof res->error, "output differs from raw "
                    "oneDNN: relative error %.3g > %.3g", res->max_err, tol);
    }
    goto done;
fail:
    snprintf(res->error, sizeof res->error, "%s", err[0] ? err : "failed");
done:
    free(samples);
    run_destroy(&main_run);
    run_destroy(&f32_run);
    bench_raw_destroy(raw);
    buffers_free(&b);
}

/* ------------------------------------------------------------- batch files */

typedef struct problem_list {
    problem_t *v;
    int n;
} problem_list_t;

static int add_problem(problem_list_t *l, const char *text, const char *where) {
    char err[512];
    if (l->n >= MAX_PROBLEMS) {
        fprintf(stderr, "dgrad bench: more than %d problems\n", MAX_PROBLEMS);
        return -1;
    }
    problem_t *p = &l->v[l->n];
    if (bench_desc_parse(text, &p->d, err, sizeof err)) {
        fprintf(stderr, "dgrad bench: %s%s\n", where, err);
        return -1;
    }
    bench_desc_format(&p->d, p->text, sizeof p->text);
    if (p->d.name[0]) {
        size_t n = strlen(p->text);
        snprintf(p->text + n, sizeof p->text - n, "n%s", p->d.name);
    }
    l->n++;
    return 0;
}

/* Adds the problems of a batch file. Returns 0, or the exit status: 1
 * when a file cannot be read, 2 when one is malformed. */
static int read_batch(problem_list_t *l, const char *path, int depth) {
    if (depth > 8) {
        fprintf(stderr, "dgrad bench: --batch nesting too deep at %s\n", path);
        return 2;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dgrad bench: cannot open batch file %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    char line[1024], where[1200];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *save = NULL;
        for (char *tok = strtok_r(line, " \t\r\n", &save); tok && rc == 0;
                tok = strtok_r(NULL, " \t\r\n", &save)) {
            if (!strncmp(tok, "--batch=", 8)) {
                char sub[2048];
                const char *slash = strrchr(path, '/');
                if (tok[8] == '/' || !slash)
                    snprintf(sub, sizeof sub, "%s", tok + 8);
                else
                    snprintf(sub, sizeof sub, "%.*s/%s",
                            (int)(slash - path), path, tok + 8);
                rc = read_batch(l, sub, depth + 1);
                continue;
            }
            snprintf(where, sizeof where, "%.1000s:%d: ", path, lineno);
            rc = add_problem(l, tok, where) ? 2 : 0;
        }
    }
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ output */

static const char *short_name(const problem_t *p) {
    return p->d.name[0] ? p->d.name : p->text;
}

static void print_header(FILE *f, const options_t *o) {
    fprintf(f, "%-30s %-22s %9s %17s %-22s %9s %6s %8s %6s %9s %9s %7s",
            "problem", "dgrad impl", "dgrad ms", "[min..max]", "raw impl",
            "raw ms",
            "ratio", "GFLOP/s", "roof%", "compile", "cached", "mem MB");
    if (o->dt == dgrad_f16) fprintf(f, " %7s", "f16/f32");
    fprintf(f, "  %s\n", "check");
}

static void fmt_ms(char *buf, size_t n, double v) {
    if (isnan(v)) snprintf(buf, n, "n/a");
    else if (v < 1) snprintf(buf, n, "%.4f", v);
    else if (v < 100) snprintf(buf, n, "%.3f", v);
    else snprintf(buf, n, "%.1f", v);
}

static void print_row(FILE *f, const problem_t *p, const result_t *r,
        const options_t *o) {
    char name[31], impl[23], med[16], lo[16], hi[16], range[40], raw[16],
            comp[16], cached[16];
    snprintf(name, sizeof name, "%.30s", short_name(p));
    snprintf(impl, sizeof impl, "%s", r->impl[0] ? r->impl : "-");
    if (!r->ran) {
        fprintf(f, "%-30s %-22s FAILED: %s\n", name, impl, r->error);
        return;
    }
    fmt_ms(med, sizeof med, r->dg.med);
    fmt_ms(lo, sizeof lo, r->dg.min);
    fmt_ms(hi, sizeof hi, r->dg.max);
    snprintf(range, sizeof range, "[%s..%s]", lo, hi);
    fmt_ms(raw, sizeof raw, r->raw.med);
    fmt_ms(comp, sizeof comp, r->compile_ms);
    snprintf(cached, sizeof cached, "%.1fus", r->cached_us);
    size_t n = strlen(comp);
    snprintf(comp + n, sizeof comp - n, "ms");
    char rimpl[23];
    snprintf(rimpl, sizeof rimpl, "%s", r->raw_impl);
    fprintf(f, "%-30s %-22s %9s %17s %-22s %9s %6.3f %8.1f %6.1f %9s %9s %7.1f",
            name, impl, med, range, rimpl, raw, r->dg.med / r->raw.med, r->gflops,
            r->roof_pct, comp, cached, r->mem_mb);
    if (o->dt == dgrad_f16) fprintf(f, " %7.3f", r->dg.med / r->f32.med);
    fprintf(f, "  %s\n", r->check < 0 ? "-" : r->check ? "ok" : "FAIL");
}

static void csv_num(FILE *f, double v, const char *fmt) {
    if (isnan(v) || isinf(v)) fputs("nan", f);
    else fprintf(f, fmt, v);
}

static int write_csv(const char *path, const problem_t *p, const result_t *r,
        int n, const options_t *o) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "dgrad bench: cannot write %s: %s\n", path,
                strerror(errno));
        return -1;
    }
    fputs("problem,dt,data_format,weights_format,dgrad_ms,onednn_ms,ratio,"
          "gflops,roofline_pct,compile_ms,compile_cached_us\n", f);
    for (int i = 0; i < n; i++) {
        const result_t *x = &r[i];
        double nan_ = NAN;
        fprintf(f, "%s,%s,%s,%s,", p[i].text, dt_str(o->dt),
                o->layout == bench_nxc ? "NXC" : "NCX",
                o->wlayout == bench_xio ? "XIO" : "OIX");
        csv_num(f, x->ran ? x->dg.med : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->raw.med : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->dg.med / x->raw.med : nan_, "%.5g");
        fputc(',', f);
        csv_num(f, x->ran ? x->gflops : nan_, "%.6g");
        fputc(',', f);
        csv_num(f, x->ran ? x->roof_pct : nan_, "%.5g");
        fputc(',', f);
        csv_num(f, x->compile_ms, "%.5g");
        fputc(',', f);
        csv_num(f, x->cached_us, "%.5g");
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "dgrad bench: error writing %s\n", path);
        return -1;
    }
    return 0;
}

static int have_program(const char *name) {
    const char *path = getenv("PATH");
    char buf[4096];
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, n ? path : ".", name);
        if (access(buf, X_OK) == 0) return 1;
        path += n + (colon != NULL);
    }
    return 0;
}

static int write_plot(const char *png, const problem_t *p, const result_t *r,
        int n, const options_t *o, const bench_backend_t *be) {
    if (!have_program("gnuplot")) {
        fprintf(stderr, "dgrad bench: --plot %s: gnuplot is not installed "
                "(apt-get install -y gnuplot-nox); the table%s were written, "
                "the plot was not\n", png, o->csv ? " and the CSV" : "");
        return -1;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        fprintf(stderr, "dgrad bench: cannot run gnuplot: %s\n",
                strerror(errno));
        return -1;
    }
    int rows = 0;
    for (int i = 0; i < n; i++) rows += r[i].ran;
    int width = 300 + 28 * (rows > 10 ? rows : 10);
    fprintf(g, "set terminal pngcairo noenhanced size %d,760 font ',9'\n"
               "set output '%s'\n", width > 4000 ? 4000 : width, png);
    fprintf(g, "set title 'dgrad bench: %s %s/%s%s, dgrad through the %s; "
               "roofline = min(peak, bytes/time x bandwidth)'\n",
            dt_str(o->dt), o->layout == bench_nxc ? "NXC" : "NCX",
            o->wlayout == bench_xio ? "XIO" : "OIX",
            o->constant_weights ? " constant weights" : "", be->name);
    fputs("set logscale y\nset ylabel 'GFLOP/s'\nset grid ytics\n"
          "set xtics rotate by 60 right\n"
          "set key outside top center horizontal\n"
          "set bmargin 14\nset xrange [-1:*]\n", g);
    fputs("$data << EOD\n", g);
    int x = 0;
    for (int i = 0; i < n; i++) {
        if (!r[i].ran) continue;
        fprintf(g, "%d \"%s\" %.6g %.6g %.6g\n", x++, short_name(&p[i]),
                r[i].gflops, r[i].raw_ok ? r[i].raw_gflops : NAN,
                r[i].roof_gflops);
    }
    fputs("EOD\n", g);
    fputs("plot $data using 1:5:($1-0.4):($1+0.4):xtic(2) with xerrorbars "
          "pt 0 lw 2 lc rgb '#999999' title 'roofline', "
          "'' using 1:4 with points pt 6 ps 1.2 lc rgb '#d62728' "
          "title 'raw oneDNN (user layout)', "
          "'' using 1:3 with points pt 7 ps 1.0 lc rgb '#1f77b4' "
          "title 'dgrad'\n", g);
    int rc = pclose(g);
    if (rc != 0) {
        fprintf(stderr, "dgrad bench: gnuplot failed (status %d); no plot "
                "written to %s\n", rc, png);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------- main */

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0)) return -1;
    *out = v;
    return 0;
}

/* Busy and total jiffies of all CPUs (/proc/stat), or -1. */
static int cpu_times(double *busy, double *total) {
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int n = f ? fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                        &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7])
              : 0;
    if (f) fclose(f);
    if (n < 4) return -1;
    *total = 0;
    for (int i = 0; i < 8; i++) *total += (double)v[i];
    *busy = *total - (double)v[3] - (double)v[4]; /* minus idle, iowait */
    return 0;
}

/* How many CPUs other processes keep busy, sampled over @p ms while this
 * one sleeps; -1 when unknown. */
static double other_load(int ms) {
    double b0, t0, b1, t1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpu_times(&b0, &t0)) return -1;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    if (cpu_times(&b1, &t1) || t1 <= t0) return -1;
    return (b1 - b0) / (t1 - t0) * (double)(ncpu > 0 ? ncpu : 1);
}

static double geomean(const double *v, int n) {
    double s = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] > 0 && isfinite(v[i])) {
            s += log(v[i]);
            k++;
        }
    return k ? exp(s / k) : NAN;
}

int dgrad_bench_main(int argc, char **argv) {
    options_t o = {.dt = dgrad_f32, .layout = bench_nxc, .wlayout = bench_xio,
            .reps = 15, .warmup = 3, .cached_reps = 50, .min_sample_ms = 1.0,
            .max_problem_s = 20,
            .backend = bench_backend_auto, .check = 1};
    problem_list_t list = {calloc(MAX_PROBLEMS, sizeof(problem_t)), 0};
    int rc = 0;
    if (!list.v) {
        fprintf(stderr, "dgrad bench: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        char key[64];
        /* --opt=value or --opt value */
        if (!strncmp(a, "--", 2)) {
            const char *eq = strchr(a, '=');
            size_t n = eq ? (size_t)(eq - a) : strlen(a);
            snprintf(key, sizeof key, "%.*s", (int)n, a);
            if (eq) val = eq + 1;
        } else {
            snprintf(key, sizeof key, "%s", a);
        }
        static const char *flags[] = {"--constant-weights", "--no-check",
                "--no-raw", "--quiet", "-q", "--help", "-h"};
        static const char *valued[] = {"--batch", "--dt", "--data-format",
                "--weights-format", "--reps", "--warmup", "--cached-reps",
                "--max-problem-s", "--min-sample-ms", "--peak-gflops",
                "--peak-gbs", "--csv", "--plot", "--backend", "--raw-weights",
                "--core-lib"};
        int is_flag = 0, is_valued = 0;
        for (size_t f = 0; f < sizeof flags / sizeof flags[0]; f++)
            is_flag |= !strcmp(key, flags[f]);
        for (size_t f = 0; f < sizeof valued / sizeof valued[0]; f++)
            is_valued |= !strcmp(key, valued[f]);
        if (key[0] == '-' && !is_flag && !is_valued) {
            fprintf(stderr, "dgrad bench: unknown option '%s' (see --help)\n",
                    key);
            rc = 2;
            goto out;
        }
        if (is_valued && !val) {
            if (i + 1 >= argc) {
                fprintf(stderr, "dgrad bench: %s needs a value\n", key);
                rc = 2;
                goto out;
            }
            val = argv[++i];
        }
        int bad = 0;
        if (!strcmp(key, "--help") || !strcmp(key, "-h")) {
            fputs(usage_text, stdout);
            goto out;
        } else if (!strcmp(key, "--constant-weights")) {
            o.constant_weights = 1;
        } else if (!strcmp(key, "--no-check")) {
            o.check = 0;
        } else if (!strcmp(key, "--no-raw")) {
            o.no_raw = 1;
        } else if (!strcmp(key, "--quiet") || !strcmp(key, "-q")) {
            o.quiet = 1;
        } else if (!strcmp(key, "--batch")) {
            rc = read_batch(&list, val, 0);
            if (rc) goto out;
        } else if (!strcmp(key, "--dt")) {
            if (!strcmp(val, "f32")) o.dt = dgrad_f32;
            else if (!strcmp(val, "bf16")) o.dt = dgrad_bf16;
            else if (!strcmp(val, "f16")) o.dt = dgrad_f16;
            else bad = 1;
        } else if (!strcmp(key, "--data-format")) {
            if (!strcasecmp(val, "NXC")) o.layout = bench_nxc;
            else if (!strcasecmp(val, "NCX")) o.layout = bench_ncx;
            else bad = 1;
        } else if (!strcmp(key, "--weights-format")) {
            if (!strcasecmp(val, "XIO")) o.wlayout = bench_xio;
            else if (!strcasecmp(val, "OIX")) o.wlayout = bench_oix;
            else bad = 1;
            o.wlayout_given = 1;
        } else if (!strcmp(key, "--reps")) {
            bad = parse_int(val, 1, MAX_REPS, &o.reps);
        } else if (!strcmp(key, "--warmup")) {
            bad = parse_int(val, 0, MAX_REPS, &o.warmup);
        } else if (!strcmp(key, "--cached-reps")) {
            bad = parse_int(val, 1, MAX_REPS, &o.cached_reps);
        } else if (!strcmp(key, "--max-problem-s")) {
            bad = parse_double(val, &o.max_problem_s);
        } else if (!strcmp(key, "--min-sample-ms")) {
            bad = parse_double(val, &o.min_sample_ms);
        } else if (!strcmp(key, "--peak-gflops")) {
            bad = parse_double(val, &o.peak_gflops);
        } else if (!strcmp(key, "--peak-gbs")) {
            bad = parse_double(val, &o.peak_gbs);
        } else if (!strcmp(key, "--csv")) {
            o.csv = val;
        } else if (!strcmp(key, "--plot")) {
            o.plot = val;
        } else if (!strcmp(key, "--backend")) {
            if (!strcmp(val, "auto")) o.backend = bench_backend_auto;
            else if (!strcmp(val, "plugin")) o.backend = bench_backend_plugin;
            else if (!strcmp(val, "core")) o.backend = bench_backend_core;
            else bad = 1;
        } else if (!strcmp(key, "--raw-weights")) {
            if (!strcmp(val, "user")) o.raw_prepacked = 0;
            else if (!strcmp(val, "prepacked")) o.raw_prepacked = 1;
            else bad = 1;
        } else if (!strcmp(key, "--core-lib")) {
            o.core_lib = val;
        } else if (key[0] == '-') {
            fprintf(stderr, "dgrad bench: unknown option '%s' (see --help)\n",
                    key);
            rc = 2;
            goto out;
        } else if (add_problem(&list, a, "")) {
            rc = 2;
            goto out;
        }
        if (bad) {
            fprintf(stderr, "dgrad bench: bad value '%s' for %s\n", val, key);
            rc = 2;
            goto out;
        }
    }
    if (!o.wlayout_given)
        o.wlayout = o.layout == bench_nxc ? bench_xio : bench_oix;
    if (list.n == 0) {
        fprintf(stderr, "dgrad bench: no problems given (see --help)\n");
        rc = 2;
        goto out;
    }
    for (int i = 0; i < list.n; i++)
        if (check_problem_fits(&list.v[i], o.dt)) {
            rc = 2;
            goto out;
        }

    bench_backend_t be;
    if (bench_backend_open(&be, o.backend, o.core_lib)) {
        rc = 1;
        goto out;
    }

    double load_start = other_load(300);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    /* The machine: peaks measured unless given. */
    machine_t m = {o.peak_gflops, o.peak_gbs};
    const char *peak_src = "given", *bw_src = "given";
    if (!(m.gbs > 0)) {
        m.gbs = bench_calibrate_stream();
        bw_src = "triad";
    }
    if (!(m.gflops > 0)) {
        m.gflops = o.dt == dgrad_bf16 ? bench_calibrate_bf16() : 0;
        peak_src = "bf16 matmul";
        if (!(m.gflops > 0)) {
            m.gflops = bench_calibrate_sgemm();
            peak_src = "dnnl_sgemm";
        }
    }
    if (!(m.gflops > 0) || !(m.gbs > 0)) {
        fprintf(stderr, "dgrad bench: calibration failed (peak %.1f GFLOP/s, "
                "%.1f GB/s); give --peak-gflops and --peak-gbs\n", m.gflops,
                m.gbs);
        bench_backend_close(&be);
        rc = 1;
        goto out;
    }
    printf("dgrad bench: %d problem%s, %s, data %s, weights %s%s; dgrad via "
           "%s [%s]\n", list.n, list.n == 1 ? "" : "s", dt_str(o.dt),
           o.layout == bench_nxc ? "NXC" : "NCX",
           o.wlayout == bench_xio ? "XIO" : "OIX",
           o.constant_weights ? " (constant)" : "", be.name, be.detail);
    printf("machine: %ld CPUs, peak %.1f GFLOP/s (%s), %.1f GB/s (%s), "
           "%.2f CPUs busy with other work at start; %d samples of >= %.2g ms "
           "after %d warm-up, interleaved; raw baseline on %s weights\n",
           ncpu, m.gflops,
           peak_src, m.gbs, bw_src, load_start, o.reps, o.min_sample_ms,
           o.warmup, o.raw_prepacked ? "prepacked" : "the user's");
    if (load_start > 0.25)
        printf("note: other processes are running (%.2f CPUs busy): timings "
               "are noisy; ratios measured in this run remain comparable\n",
               load_start);
    printf("\n");
    print_header(stdout, &o);
    fflush(stdout);

    result_t *results = calloc((size_t)list.n, sizeof *results);
    double *ratios = calloc((size_t)list.n * 4, sizeof(double));
    if (!results || !ratios) {
        fprintf(stderr, "dgrad bench: out of memory\n");
        free(results);
        free(ratios);
        bench_backend_close(&be);
        rc = 1;
        goto out;
    }
    double t_start = bench_now_ms();
    int failed = 0, nr = 0, nd = 0, nf = 0, nroof = 0;
    double *r_all = ratios, *r_dw = ratios + list.n, *r_f16 = ratios + 2 * list.n,
           *roofs = ratios + 3 * list.n;
    double cached_max = 0;
    for (int i = 0; i < list.n; i++) {
        if (!o.quiet && isatty(2)) {
            fprintf(stderr, "\r\033[K[%d/%d] %s", i + 1, list.n,
                    short_name(&list.v[i]));
            fflush(stderr);
        }
        run_problem(&list.v[i], &be, &o, &m, &results[i]);
        if (!o.quiet && isatty(2)) fprintf(stderr, "\r\033[K");
        print_row(stdout, &list.v[i], &results[i], &o);
        fflush(stdout);
        const result_t *r = &results[i];
        if (!r->ran || r->check == 0) failed++;
        if (!r->ran) continue;
        if (r->raw_ok) {
            r_all[nr++] = r->dg.med / r->raw.med;
            if (bench_desc_is_depthwise(&list.v[i].d))
                r_dw[nd++] = r->dg.med / r->raw.med;
        }
        if (r->has_f32) r_f16[nf++] = r->dg.med / r->f32.med;
        roofs[nroof++] = r->roof_pct;
        if (r->cached_us > cached_max) cached_max = r->cached_us;
    }
    printf("\nsummary (%d problems, %d failed, %.1f s):\n", list.n, failed,
            (bench_now_ms() - t_start) / 1e3);
    printf("  geomean dgrad/raw oneDNN time ratio: %.3f (%d problems)\n",
            geomean(r_all, nr), nr);
    if (nd)
        printf("  geomean dgrad/raw on depthwise problems: %.3f (%d)\n",
                geomean(r_dw, nd), nd);
    if (nf)
        printf("  geomean dgrad f16/f32 time ratio: %.3f (%d)\n",
                geomean(r_f16, nf), nf);
    printf("  geomean roofline fraction: %.1f%%\n", geomean(roofs, nroof));
    printf("  cached compile: largest median %.1f us\n", cached_max);
    printf("  CPUs busy with other work at the end: %.2f\n", other_load(300));

    if (o.csv && write_csv(o.csv, list.v, results, list.n, &o)) rc = 1;
    if (o.plot && write_plot(o.plot, list.v, results, list.n, &o, &be))
        rc = 1;
    if (failed) rc = 1;
    free(results);
    free(ratios);
    bench_backend_close(&be);
out:
    free(list.v);
    return rc;
}
