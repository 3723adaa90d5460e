/*
 * One problem, measured: buffers of random values exact in every type,
 * dgrad's cold compile and first execution with their peak memory, cached
 * compiles, the raw baseline, interleaved timing of the participants, and
 * dgrad's output checked against the baseline's.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "canonical.h"
#include "dtype.h"

/* ---------------------------------------------------------------- values */

/* Random multiples of 1/32 in [-1, 1]: exact in every type. */
static void fill_random(void *buf, dgrad_data_type_t dt, size_t n,
        uint64_t seed) {
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        dgrad_store(buf, dt, (int64_t)i, (double)((int)(x % 65) - 32) / 32.0);
    }
}

static void to_f32(const void *src, dgrad_data_type_t dt, float *dst,
        size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = (float)dgrad_load(src, dt, (int64_t)i);
}

/* The chain's operands: random multiples of 1/32 in [-1, 1], a divisor's
 * in [1/2, 3/2] (1 + a multiple of 1/64: exact in every type, never 0),
 * and the baseline's copy where it reads another type. Returns -1 when
 * out of memory. */
static int make_operands(const bench_chain_t *c, const bench_desc_t *d,
        dgrad_data_type_t dt, dgrad_data_type_t raw_dt, void **operand,
        void **raw_operand) {
    for (int i = 0; i < c->n; i++) {
        const bench_post_op_t *op = &c->ops[i];
        if (op->operand == bench_operand_none) continue;
        size_t n = (size_t)bench_operand_elems(op, d);
        dgrad_data_type_t odt = bench_operand_dt(op, dt),
                          rdt = bench_raw_operand_dt(op, raw_dt);
        operand[i] = bench_alloc(n * dgrad_data_type_size(odt));
        if (!operand[i]) return -1;
        fill_random(operand[i], odt, n, 10 + (uint64_t)i);
        if (op->alg == dgrad_post_div)
            for (size_t k = 0; k < n; k++)
                dgrad_store(operand[i], odt, (int64_t)k, 1.0
                        + dgrad_load(operand[i], odt, (int64_t)k) / 2);
        if (rdt == odt) {
            raw_operand[i] = operand[i];
            continue;
        }
        raw_operand[i] = bench_alloc(n * dgrad_data_type_size(rdt));
        if (!raw_operand[i]) return -1;
        for (size_t k = 0; k < n; k++)
            dgrad_store(raw_operand[i], rdt, (int64_t)k,
                    dgrad_load(operand[i], odt, (int64_t)k));
    }
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bench_stats_t stats_of(double *v, int n) {
    bench_stats_t s = {NAN, NAN, NAN};
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

/* ------------------------------------------------------- interleaved timing */

typedef struct participant {
    int (*run)(void *);
    void *ctx;
    int inner;
    double *samples;
} participant_t;

static int run_raw(void *raw) { return bench_raw_execute(raw); }
static int run_graph(void *g) { return bench_graph_execute(g); }

/* The unfused chain: dgrad's bare op, then one oneDNN pass per post-op. */
typedef struct unfused {
    bench_op_t *bare;
    bench_passes_t *passes;
} unfused_t;

static int run_unfused(void *p) {
    unfused_t *u = p;
    return bench_op_execute(u->bare) || bench_passes_execute(u->passes);
}

/* Warm-up, then @p reps samples per participant in rotating order. Each
 * sample times `inner` back-to-back executions (enough to last
 * min_sample_ms) and records the time per execution. */
static int time_interleaved(participant_t *p, int np, const bench_options_t *o,
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

typedef struct buffers {
    void *in, *wei, *out;          /* user type */
    void *wei_other;               /* --changing-weights: wei negated */
    float *wei32_other;
    float *in32, *wei32, *f32_out; /* 16-bit types: f32 copies */
    void *raw_out_dt;              /* raw output in the user type */
    void *graph_out;               /* oneDNN Graph's output (user type) */
    /* --post-ops: each binary post-op's operand at its position in the
     * chain, as dgrad reads it and as the baseline does (the same buffer
     * unless that is an f32 copy), and the unfused chain's output. */
    void *operand[BENCH_MAX_POST_OPS], *raw_operand[BENCH_MAX_POST_OPS];
    void *unfused_out;
} buffers_t;

static void buffers_free(buffers_t *b) {
    for (int i = 0; i < BENCH_MAX_POST_OPS; i++) {
        if (b->raw_operand[i] != b->operand[i]) free(b->raw_operand[i]);
        free(b->operand[i]);
    }
    free(b->unfused_out);
    free(b->in);
    free(b->wei);
    free(b->wei_other);
    free(b->wei32_other);
    free(b->out);
    free(b->in32);
    free(b->wei32);
    free(b->f32_out);
    free(b->raw_out_dt);
    free(b->graph_out);
}

/* Median of @p reps compiles of the same op and tensors again (plan
 * cache hits), in microseconds. */
static int time_cached_compiles(const bench_op_t *op, int reps,
        double *median_us, char *err, size_t err_size) {
    int n = reps > 0 ? reps : 1;
    double *v = malloc(sizeof(double) * n);
    if (!v) return -1;
    for (int i = 0; i < n; i++) {
        dgrad_compiled_op_t *c = NULL;
        double t0 = bench_now_ms();
        int bad = bench_op_compile(op, &c, err, err_size);
        v[i] = (bench_now_ms() - t0) * 1e3;
        op->be->api->compiled_op_destroy(c);
        if (bad) {
            free(v);
            return -1;
        }
    }
    *median_us = stats_of(v, n).med;
    free(v);
    return 0;
}

/* dgrad's output against the baseline's: the largest difference relative
 * to the largest baseline value (at least 1), within 1e-5 in f32 and 2e-2
 * in 16-bit types. Where they differ by more, the reference decides
 * (arbiter.c): the check fails only where dgrad is wrong; a wrong
 * baseline is reported on stderr and marked in @p base_wrong. */
static void check_output(bench_result_t *res, const bench_problem_t *pr,
        const bench_options_t *o, const buffers_t *b, dgrad_data_type_t dt,
        const void *base_out, dgrad_data_type_t base_dt, size_t n,
        const char *baseline, int *base_wrong) {
    double maxref = 0, maxdiff = 0;
    for (size_t i = 0; i < n; i++) {
        double ref = dgrad_load(base_out, base_dt, (int64_t)i);
        double got = dgrad_load(b->out, dt, (int64_t)i);
        double diff = fabs(got - ref);
        if (isnan(got) && isnan(ref)) continue; /* a chain's Log of < 0 */
        if (!(diff <= maxdiff)) maxdiff = diff; /* NaN sticks */
        if (fabs(ref) > maxref) maxref = fabs(ref);
    }
    double scale = maxref > 1 ? maxref : 1, err = maxdiff / scale;
    double tol = dt == dgrad_f32 ? 1e-5 : 2e-2;
    if (!(err <= tol)) {
        bench_verdict_t v = bench_arbiter_decide(&pr->d, dt, o->layout,
                o->wlayout, b->in, b->wei, b->out, base_out, base_dt, n,
                tol * scale, &o->chain, (const void *const *)b->operand);
        if (v.checked > 0 && v.dgrad_wrong == 0) {
            if (v.baseline_wrong > 0) {
                fprintf(stderr, "dgrad bench: %s: %s's output is wrong "
                        "(relative error %.3g; the reference agrees with "
                        "dgrad at the %d elements of the largest "
                        "differences, with %s at %d)\n", pr->text,
                        baseline, err, v.checked, baseline,
                        v.checked - v.baseline_wrong);
                *base_wrong = 1;
            }
            if (res->check != 0) res->check = 1;
            return;
        }
        res->check = 0;
        snprintf(res->error, sizeof res->error, "output differs from %s: "
                "relative error %.3g > %.3g; the reference disagrees with "
                "dgrad at %d of the %d elements of the largest differences",
                baseline, err, tol, v.dgrad_wrong, v.checked);
    } else if (res->check != 0) {
        res->check = 1;
    }
    if (!(err <= res->max_err)) res->max_err = err;
}

void bench_run_problem(const bench_problem_t *pr, const bench_backend_t *be,
        const bench_options_t *o, const bench_machine_t *m,
        bench_result_t *res) {
    const bench_desc_t *d = &pr->d;
    dgrad_data_type_t dt = o->dt, raw_dt = dt == dgrad_f16 ? dgrad_f32 : dt;
    size_t es = dgrad_data_type_size(dt);
    /* Exact: bench_problem_fits bounded them by the memory size. */
    const bench_chain_t *chain = &o->chain;
    int fused = chain->n > 0;
    bench_problem_size_t z = bench_problem_size(d, dt, chain);
    size_t n_in = (size_t)z.n_in, n_wei = (size_t)z.n_wei,
           n_out = (size_t)z.n_out;
    buffers_t b = {0};
    bench_op_t main_op = {0}, f32_op = {0}, bare_op = {0};
    bench_raw_t *raw = NULL;
    bench_graph_t *graph = NULL;
    bench_passes_t *passes = NULL;
    unfused_t unfused = {&bare_op, NULL};
    char err[512] = "";
    participant_t parts[6];
    double *samples = NULL;
    int np = 0;

    memset(res, 0, sizeof *res);
    res->check = -1;
    res->dg = res->raw = res->f32 = res->graph = res->bare = res->unfused =
            (bench_stats_t){NAN, NAN, NAN};
    res->compile_ms = res->cached_us = res->raw_compile_ms = NAN;
    res->mem_mb = res->raw_mem_mb = NAN;
    res->flops = bench_desc_flops(d);
    res->bytes = (double)(n_in + n_wei + n_out) * (double)es;
    /* Memory-bound: the bare op's bytes take longer than its FLOPs. */
    res->memory_bound = res->bytes / (m->gbs * 1e6)
            > res->flops / (m->gflops * 1e6);
    for (int i = 0; i < chain->n; i++)
        res->bytes += bench_operand_elems(&chain->ops[i], d)
                * (double)dgrad_data_type_size(bench_operand_dt(
                        &chain->ops[i], dt));
    double roof_ms = fmax(res->flops / (m->gflops * 1e6),
            res->bytes / (m->gbs * 1e6));
    res->roof_gflops = res->flops / (roof_ms * 1e6);
    res->roof_ms = roof_ms;

    b.in = bench_alloc(n_in * es);
    b.wei = bench_alloc(n_wei * es);
    b.out = bench_alloc(n_out * es);
    b.raw_out_dt = bench_alloc(n_out * dgrad_data_type_size(raw_dt));
    /* oneDNN Graph's anchor is its ConvolutionBackwardData, which takes
     * no post-ops. */
    int want_graph = bench_graph_available() && !o->no_graph && !fused;
    if (want_graph) b.graph_out = bench_alloc(n_out * es);
    if (fused) b.unfused_out = bench_alloc(n_out * es);
    if ((fused && !b.unfused_out)
            || make_operands(chain, d, dt, raw_dt, b.operand, b.raw_operand)) {
        snprintf(res->error, sizeof res->error, "out of memory for buffers");
        goto done;
    }
    /* f32 copies: f16's baseline reads them, and without a chain f16 and
     * bf16 also time dgrad in f32 on them. */
    int f32_copies = dt == dgrad_f16 || (dt == dgrad_bf16 && !fused);
    if (f32_copies) {
        b.in32 = bench_alloc(n_in * 4);
        b.wei32 = bench_alloc(n_wei * 4);
        b.f32_out = bench_alloc(n_out * 4);
    }
    if (!b.in || !b.wei || !b.out || !b.raw_out_dt
            || (want_graph && !b.graph_out) || (f32_copies && (!b.in32 || !b.wei32 || !b.f32_out))) {
        snprintf(res->error, sizeof res->error, "out of memory for buffers");
        goto done;
    }
    /* Weights are generated in OIX element order; the layouts differ only
     * in how the same random stream is placed, which does not matter. */
    fill_random(b.in, dt, n_in, 1);
    fill_random(b.wei, dt, n_wei, 2);
    memset(b.out, 0, n_out * es);
    memset(b.raw_out_dt, 0, n_out * dgrad_data_type_size(raw_dt));
    if (f32_copies) {
        to_f32(b.in, dt, b.in32, n_in);
        to_f32(b.wei, dt, b.wei32, n_wei);
        memset(b.f32_out, 0, n_out * 4);
    }
    /* --changing-weights: the same weights negated, every element's
     * bytes different (zeros too: their sign bit) */
    if (o->changing_weights) {
        b.wei_other = bench_alloc(n_wei * es);
        b.wei32_other = f32_copies ? bench_alloc(n_wei * 4) : NULL;
        if (!b.wei_other || (f32_copies && !b.wei32_other)) {
            snprintf(res->error, sizeof res->error,
                    "out of memory for buffers");
            goto done;
        }
        for (size_t i = 0; i < n_wei; i++)
            dgrad_store(b.wei_other, dt, (int64_t)i,
                    -dgrad_load(b.wei, dt, (int64_t)i));
        if (f32_copies) to_f32(b.wei_other, dt, b.wei32_other, n_wei);
    }

    /* dgrad: cold compile and first execution, with their peak memory;
     * before the baseline so that oneDNN's primitive cache is cold. */
    if (bench_op_build(&main_op, be, d, dt, o, chain, err, sizeof err))
        goto fail;
    main_op.inputs[0] = b.in;
    main_op.inputs[1] = b.wei;
    for (int i = 0, k = 2; i < chain->n; i++)
        if (b.operand[i]) main_op.inputs[k++] = b.operand[i];
    main_op.out = b.out;
    long mark = mem_mark();
    double t0 = bench_now_ms();
    if (bench_op_compile(&main_op, &main_op.compiled, err, sizeof err))
        goto fail;
    res->compile_ms = bench_now_ms() - t0;
    snprintf(res->impl, sizeof res->impl, "%s",
            be->api->compiled_op_impl_name(main_op.compiled));
    /* --in-place: the output buffer holds the operand and is passed as
     * it (each timed run then adds onto the last result: the same work). */
    const void *in_place_operand = NULL;
    if (o->in_place) {
        int64_t k = -1;
        if (!DGRAD_PLUGIN_API_HAS(be->api, compiled_op_query_in_place_input)
                || be->api->compiled_op_query_in_place_input(
                           main_op.compiled, &k) != dgrad_success
                || k < 0) {
            snprintf(err, sizeof err, "--in-place: no input of the op may "
                    "share its output's buffer (it takes an Add of the "
                    "output's shape in the op's type: add:%s:per_tensor)",
                    dgrad_data_type_name(dt));
            goto fail;
        }
        in_place_operand = main_op.inputs[k];
        memcpy(b.out, in_place_operand, n_out * es);
        main_op.inputs[k] = b.out;
    }
    if (bench_op_execute(&main_op)) {
        snprintf(err, sizeof err, "execute: %s", be->api->last_error_message());
        goto fail;
    }
    res->mem_mb = mem_peak_mb(mark);

    /* Cached compiles: the same op and tensors again. */
    if (time_cached_compiles(&main_op, o->cached_reps, &res->cached_us, err,
                sizeof err))
        goto fail;

    /* The raw oneDNN baseline on the same user buffers (f32 copies for
     * f16) and its own output. */
    mark = mem_mark();
    t0 = bench_now_ms();
    if (!o->no_raw)
        raw = bench_raw_create(d, raw_dt, o->layout, o->wlayout,
                o->raw_layout, o->raw_prepacked,
                dt == dgrad_f16 ? (void *)b.in32 : b.in,
                dt == dgrad_f16 ? (void *)b.wei32 : b.wei, b.raw_out_dt,
                chain, b.raw_operand, err, sizeof err);
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

    /* The anchor: oneDNN Graph's own partition on the same user buffers
     * (the user's type) and its own output. */
    if (want_graph) {
        memset(b.graph_out, 0, n_out * es);
        graph = bench_graph_create(d, dt, o->layout, o->wlayout,
                o->constant_weights, b.in, b.wei, b.graph_out, err,
                sizeof err);
        if (graph && bench_graph_execute(graph) == 0) {
            res->graph_ok = 1;
        } else {
            fprintf(stderr, "dgrad bench: %s: no oneDNN Graph anchor: %s\n",
                    pr->text, graph ? "its execution failed" : err);
            err[0] = 0;
        }
    }

    /* The same chain unfused: dgrad's bare op into an output of its own,
     * then one oneDNN pass per post-op; where oneDNN builds no pass (f16
     * on 2.6) the column stays empty. */
    if (fused) {
        if (bench_op_build(&bare_op, be, d, dt, o, NULL, err, sizeof err)
                || bench_op_compile(&bare_op, &bare_op.compiled, err,
                        sizeof err))
            goto fail;
        bare_op.inputs[0] = b.in;
        bare_op.inputs[1] = b.wei;
        bare_op.out = b.unfused_out;
        passes = bench_passes_create(chain, d, dt, o->layout == bench_nxc,
                b.unfused_out, b.operand, err, sizeof err);
        unfused.passes = passes;
        if (passes && run_unfused(&unfused) == 0) {
            res->unfused_ok = 1;
        } else {
            fprintf(stderr, "dgrad bench: %s: no unfused chain: %s\n",
                    pr->text, passes ? "its execution failed" : err);
            err[0] = 0;
        }
    }

    /* f16 and bf16: dgrad in f32 on the same values, for the f16/f32 or
     * bf16/f32 ratio within one run (of the bare op: not measured with
     * --post-ops). */
    if (dt != dgrad_f32 && !fused) {
        if (bench_op_build(&f32_op, be, d, dgrad_f32, o, NULL, err, sizeof err)
                || bench_op_compile(&f32_op, &f32_op.compiled, err,
                        sizeof err))
            goto fail;
        f32_op.inputs[0] = b.in32;
        f32_op.inputs[1] = b.wei32;
        f32_op.out = b.f32_out;
        res->has_f32 = 1;
    }

    samples = malloc(sizeof(double) * 6 * (size_t)o->reps);
    if (!samples) goto fail;
    parts[np++] = (participant_t){bench_op_execute, &main_op, 1, samples};
    if (res->raw_ok)
        parts[np++] = (participant_t){run_raw, raw, 1, samples + o->reps};
    if (res->has_f32)
        parts[np++] = (participant_t){bench_op_execute, &f32_op, 1,
                samples + 2 * o->reps};
    if (res->graph_ok)
        parts[np++] = (participant_t){run_graph, graph, 1,
                samples + 3 * o->reps};
    if (fused)
        parts[np++] = (participant_t){bench_op_execute, &bare_op, 1,
                samples + 4 * o->reps};
    if (res->unfused_ok)
        parts[np++] = (participant_t){run_unfused, &unfused, 1,
                samples + 5 * o->reps};
    int reps = o->reps;
    main_op.other_weights = b.wei_other;
    bare_op.other_weights = b.wei_other;
    f32_op.other_weights = b.wei32_other;
    int timed = time_interleaved(parts, np, o, &reps);
    /* each op's own weights again, for the checks below */
    bench_op_own_weights(&main_op);
    bench_op_own_weights(&bare_op);
    bench_op_own_weights(&f32_op);
    if (timed) {
        snprintf(err, sizeof err, "execute failed while timing: %s",
                be->api->last_error_message());
        goto fail;
    }
    /* the output the checks read: from the user's weights */
    if (o->changing_weights && o->check && !in_place_operand
            && bench_op_execute(&main_op)) {
        snprintf(err, sizeof err, "execute: %s",
                be->api->last_error_message());
        goto fail;
    }
    res->ran = 1;
    res->reps = reps;
    res->dg = stats_of(parts[0].samples, reps);
    for (int i = 1; i < np; i++) {
        if (parts[i].run == run_raw) res->raw = stats_of(parts[i].samples, reps);
        else if (parts[i].run == run_graph)
            res->graph = stats_of(parts[i].samples, reps);
        else if (parts[i].run == run_unfused)
            res->unfused = stats_of(parts[i].samples, reps);
        else if (parts[i].ctx == &bare_op)
            res->bare = stats_of(parts[i].samples, reps);
        else res->f32 = stats_of(parts[i].samples, reps);
    }
    res->gflops = res->flops / (res->dg.med * 1e6);
    res->raw_gflops = res->flops / (res->raw.med * 1e6);
    res->roof_pct = 100.0 * roof_ms / res->dg.med;

    /* In place, the timed runs added up: once more from the operand. */
    if (o->check && in_place_operand) {
        memcpy(b.out, in_place_operand, n_out * es);
        if (bench_op_execute(&main_op)) {
            snprintf(err, sizeof err, "execute in place: %s",
                    be->api->last_error_message());
            goto fail;
        }
    }
    /* On the preferred layouts the baseline's output is in its own
     * buffer: reordered into the user's layout here, after the timing. */
    if (o->check && res->raw_ok) {
        if (bench_raw_copy_out(raw)) {
            snprintf(err, sizeof err, "raw baseline: reordering its output "
                    "into the user's layout failed");
            goto fail;
        }
        check_output(res, pr, o, &b, dt, b.raw_out_dt, raw_dt, n_out,
                "raw oneDNN", &res->raw_wrong);
    }
    if (o->check && res->graph_ok)
        check_output(res, pr, o, &b, dt, b.graph_out, dt, n_out,
                "oneDNN Graph", &res->graph_wrong);
    /* The bare op may have run last into the unfused output: once more. */
    if (o->check && res->unfused_ok) {
        if (run_unfused(&unfused)) {
            snprintf(err, sizeof err, "the unfused chain failed after the "
                    "timing");
            goto fail;
        }
        check_output(res, pr, o, &b, dt, b.unfused_out, dt, n_out,
                "the unfused chain", &res->unfused_wrong);
    }
    goto done;
fail:
    snprintf(res->error, sizeof res->error, "%s", err[0] ? err : "failed");
done:
    free(samples);
    bench_op_destroy(&main_op);
    bench_op_destroy(&f32_op);
    bench_op_destroy(&bare_op);
    bench_passes_destroy(passes);
    bench_raw_destroy(raw);
    bench_graph_destroy(graph);
    buffers_free(&b);
}
