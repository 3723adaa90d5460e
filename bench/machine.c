/*
 * The machine `dgrad bench` runs on: peak GFLOP/s and memory bandwidth for
 * the roofline (measured unless given), the load other processes put on
 * its CPUs, the clock and aligned buffers.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>

#include "plan/onednn_compat.h"

#include "bench.h"

double bench_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

void *bench_alloc(size_t bytes) {
    size_t n = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, n ? n : 64);
}

/* ------------------------------------------------------------------ peaks */

int bench_machine_measure(const bench_options_t *o, bench_machine_t *m) {
    *m = (bench_machine_t){o->peak_gflops, o->peak_gbs, "given", "given"};
    if (!(m->gbs > 0)) {
        m->gbs = bench_calibrate_stream();
        m->gbs_source = "triad";
    }
    if (!(m->gflops > 0)) {
        m->gflops = o->dt == dgrad_bf16 ? bench_calibrate_bf16() : 0;
        m->gflops_source = "bf16 matmul";
        if (!(m->gflops > 0)) {
            m->gflops = bench_calibrate_sgemm();
            m->gflops_source = "dnnl_sgemm";
        }
    }
    return m->gflops > 0 && m->gbs > 0 ? 0 : -1;
}

/* ------------------------------------------------------------ calibration */

/* Best of several runs of C = A x B (M = N = K = n) with dnnl_sgemm. */
double bench_calibrate_sgemm(void) {
    const dnnl_dim_t n = 2048;
    float *a = bench_alloc(sizeof(float) * n * n);
    float *b = bench_alloc(sizeof(float) * n * n);
    float *c = bench_alloc(sizeof(float) * n * n);
    double best = 0;
    if (a && b && c) {
        for (dnnl_dim_t i = 0; i < n * n; i++) {
            a[i] = (float)(i % 7) * 0.25f;
            b[i] = (float)(i % 5) * 0.5f;
        }
        for (int r = 0; r < 9; r++) {
            double t0 = bench_now_ms();
            if (dnnl_sgemm('N', 'N', n, n, n, 1.f, a, n, b, n, 0.f, c, n)
                    != dnnl_success)
                break;
            double ms = bench_now_ms() - t0;
            double gf = 2.0 * n * n * n / (ms * 1e6);
            if (r > 0 && gf > best) best = gf; /* run 0 warms up */
        }
    }
    free(a);
    free(b);
    free(c);
    return best;
}

/* Best of several runs of a bf16 x bf16 -> f32 oneDNN matmul (AMX or
 * AVX512-BF16 when the CPU has them). 0 when oneDNN has none. */
double bench_calibrate_bf16(void) {
    const dnnl_dim_t n = 2048;
    int64_t dims[2] = {n, n};
    md_t a_md = MD_EMPTY, b_md = MD_EMPTY, c_md = MD_EMPTY;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t a = NULL, b = NULL, c = NULL;
    dnnl_engine_t engine = NULL;
    double best = 0;
    dnnl_status_t s = dnnl_engine_create(&engine, dnnl_cpu, 0);
    if (s == dnnl_success)
        s = md_tagged(&a_md, 2, dims, dnnl_bf16, dnnl_ab);
    if (s == dnnl_success) s = md_tagged(&b_md, 2, dims, dnnl_bf16, dnnl_ab);
    if (s == dnnl_success) s = md_tagged(&c_md, 2, dims, dnnl_f32, dnnl_ab);
    if (s == dnnl_success)
        s = matmul_pd(&pd, engine, md_ref(&a_md), md_ref(&b_md), NULL,
                md_ref(&c_md), NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&prim, pd);
    if (s == dnnl_success)
        s = dnnl_memory_create(&a, md_ref(&a_md), engine, DNNL_MEMORY_ALLOCATE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&b, md_ref(&b_md), engine, DNNL_MEMORY_ALLOCATE);
    if (s == dnnl_success)
        s = dnnl_memory_create(&c, md_ref(&c_md), engine, DNNL_MEMORY_ALLOCATE);
    if (s == dnnl_success) s = dnnl_stream_create(&stream, engine, dnnl_stream_default_flags);
    if (s == dnnl_success) {
        void *pa = NULL, *pb = NULL;
        dnnl_memory_get_data_handle(a, &pa);
        dnnl_memory_get_data_handle(b, &pb);
        uint16_t *ua = pa, *ub = pb;
        for (dnnl_dim_t i = 0; i < n * n; i++) {
            ua[i] = 0x3f80; /* 1.0 */
            ub[i] = 0x3f00; /* 0.5 */
        }
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b},
                {DNNL_ARG_DST, c}};
        for (int r = 0; r < 9; r++) {
            double t0 = bench_now_ms();
            if (dnnl_primitive_execute(prim, stream, 3, args) != dnnl_success
                    || dnnl_stream_wait(stream) != dnnl_success)
                break;
            double ms = bench_now_ms() - t0;
            double gf = 2.0 * n * n * n / (ms * 1e6);
            if (r > 0 && gf > best) best = gf;
        }
    }
    dnnl_memory_destroy(a);
    dnnl_memory_destroy(b);
    dnnl_memory_destroy(c);
    dnnl_stream_destroy(stream);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_engine_destroy(engine);
    md_free(&a_md);
    md_free(&b_md);
    md_free(&c_md);
    return best;
}

typedef struct triad_arg {
    double *a;
    const double *b, *c;
    size_t n;
} triad_arg_t;

static void *triad(void *p) {
    triad_arg_t *t = p;
    for (size_t i = 0; i < t->n; i++) t->a[i] = t->b[i] + 3.0 * t->c[i];
    return NULL;
}

/* STREAM-style triad a = b + 3c on arrays far larger than the caches, one
 * thread per online CPU; bytes counted as STREAM does (two reads, one
 * write per element). Best of several runs, in GB/s. */
double bench_calibrate_stream(void) {
    const size_t n = (size_t)8 << 20; /* 64 MiB per array */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = ncpu < 1 ? 1 : ncpu > 64 ? 64 : (int)ncpu;
    double *a = bench_alloc(n * 8), *b = bench_alloc(n * 8),
           *c = bench_alloc(n * 8);
    double best = 0;
    if (a && b && c) {
        pthread_t th[64];
        triad_arg_t args[64];
        size_t chunk = (n + nt - 1) / nt;
        /* First touch from the threads that use the pages. */
        for (size_t i = 0; i < n; i++) {
            a[i] = 0;
            b[i] = 1;
            c[i] = 2;
        }
        for (int r = 0; r < 9; r++) {
            double t0 = bench_now_ms();
            int joined[64];
            for (int t = 0; t < nt; t++) {
                size_t lo = t * chunk, hi = lo + chunk > n ? n : lo + chunk;
                args[t] = (triad_arg_t){a + lo, b + lo, c + lo,
                        hi > lo ? hi - lo : 0};
                joined[t] = pthread_create(&th[t], NULL, triad, &args[t]) == 0;
                if (!joined[t]) triad(&args[t]);
            }
            for (int t = 0; t < nt; t++)
                if (joined[t]) pthread_join(th[t], NULL);
            double ms = bench_now_ms() - t0;
            double gbs = 3.0 * 8.0 * (double)n / (ms * 1e6);
            if (r > 0 && gbs > best) best = gbs;
        }
    }
    free(a);
    free(b);
    free(c);
    return best;
}

/* ------------------------------------------------------------------ load */

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
double bench_other_load(int ms) {
    double b0, t0, b1, t1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpu_times(&b0, &t0)) return -1;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    if (cpu_times(&b1, &t1) || t1 <= t0) return -1;
    return (b1 - b0) / (t1 - t0) * (double)(ncpu > 0 ? ncpu : 1);
}
