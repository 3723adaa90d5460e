/*
 * The raw oneDNN baseline and the machine calibration.
 *
 * The baseline is what a direct, competent but plain oneDNN user writes:
 * one convolution backward-data primitive created on the user's own memory
 * (format tags from the user's layout: ncw/nchw/ncdhw or nwc/nhwc/ndhwc for
 * the data, oihw/goihw-style or hwio/hwigo-style weights as the user has
 * them), the forward primitive descriptor as the hint (as a training
 * framework has it), memory objects and a stream created once, default
 * attributes (library-managed scratchpad).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

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

static dnnl_engine_t engine;

static dnnl_status_t get_engine(void) {
    if (engine) return dnnl_success;
    return dnnl_engine_create(&engine, dnnl_cpu, 0);
}

struct bench_raw {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_memory_t in, wei, out;
    void *packed; /* weights in the primitive's layout (prepack mode) */
    char impl[128];
};

/* Reorders the user's weights once into the primitive's layout. */
static dnnl_status_t prepack(bench_raw_t *raw, const dnnl_memory_desc_t *user_md,
        void *user, const dnnl_memory_desc_t *md) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t r = NULL;
    dnnl_memory_t from = NULL;
    size_t size = dnnl_memory_desc_get_size(md);
    raw->packed = bench_alloc(size);
    if (!raw->packed) return dnnl_out_of_memory;
    dnnl_status_t s = dnnl_reorder_primitive_desc_create(&pd, user_md, engine,
            md, engine, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&r, pd);
    if (s == dnnl_success) s = dnnl_memory_create(&from, user_md, engine, user);
    if (s == dnnl_success) s = dnnl_memory_create(&raw->wei, md, engine, raw->packed);
    if (s == dnnl_success) {
        dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, raw->wei}};
        s = dnnl_primitive_execute(r, raw->stream, 2, args);
        if (s == dnnl_success) s = dnnl_stream_wait(raw->stream);
    }
    dnnl_memory_destroy(from);
    dnnl_primitive_destroy(r);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

/* Format tags of the user's layouts, by spatial rank. */
static const dnnl_format_tag_t data_tags[2][3] = {
        {dnnl_ncw, dnnl_nchw, dnnl_ncdhw}, {dnnl_nwc, dnnl_nhwc, dnnl_ndhwc}};
/* OIX: [Cin, Cout/G, K...] = oneDNN's (g)oi... with o = Cin (the conv's
 * output channels are the op's data input). XIO: [K..., Cout/G, Cin] =
 * (w|hw|dhw)io, and with groups (Cin = G x Cin/G, g outer) ...igo. */
static const dnnl_format_tag_t wei_tags[2][2][3] = {
        {{dnnl_oiw, dnnl_oihw, dnnl_oidhw}, {dnnl_wio, dnnl_hwio, dnnl_dhwio}},
        {{dnnl_goiw, dnnl_goihw, dnnl_goidhw},
                {dnnl_wigo, dnnl_hwigo, dnnl_dhwigo}}};

bench_raw_t *bench_raw_create(const bench_desc_t *d, dgrad_data_type_t dt,
        bench_layout_t layout, bench_wlayout_t wlayout, int prepacked,
        void *in, void *wei, void *out, char *err, size_t err_size) {
    dnnl_data_type_t ddt = dt == dgrad_bf16 ? dnnl_bf16 : dnnl_f32;
    dnnl_dims_t in_dims = {d->mb, d->ic}, out_dims = {d->mb, d->oc},
                wei_dims = {0}, strides, dilates, pl, pr;
    int g = d->g > 1, nd = 2 + d->nsp;
    if (g) wei_dims[0] = d->g;
    wei_dims[g] = d->ic / d->g;
    wei_dims[g + 1] = d->oc / d->g;
    for (int a = 0; a < d->nsp; a++) {
        in_dims[2 + a] = d->i[a];
        out_dims[2 + a] = d->o[a];
        wei_dims[g + 2 + a] = d->k[a];
        strides[a] = d->s[a];
        dilates[a] = d->d[a];
        pl[a] = d->p[a];
        pr[a] = bench_desc_pad_end(d, a);
    }
    dnnl_memory_desc_t in_md, wei_md, out_md, wei_any;
    dnnl_convolution_desc_t fwd, bwd;
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    bench_raw_t *raw = calloc(1, sizeof *raw);
    const char *what = "engine creation";
    dnnl_status_t s = raw ? get_engine() : dnnl_out_of_memory;
    if (s == dnnl_success) {
        what = "memory descriptors";
        s = dnnl_memory_desc_init_by_tag(&in_md, nd, in_dims, ddt,
                data_tags[layout][d->nsp - 1]);
    }
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&out_md, nd, out_dims, ddt,
                data_tags[layout][d->nsp - 1]);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&wei_md, nd + g, wei_dims, ddt,
                wei_tags[g][wlayout][d->nsp - 1]);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&wei_any, nd + g, wei_dims, ddt,
                dnnl_format_tag_any);
    const dnnl_memory_desc_t *wmd = prepacked ? &wei_any : &wei_md;
    if (s == dnnl_success) {
        what = "forward hint";
        if (dnnl_dilated_convolution_forward_desc_init(&fwd,
                    dnnl_forward_training, dnnl_convolution_direct, &out_md,
                    wmd, NULL, &in_md, strides, dilates, pl, pr)
                        == dnnl_success)
            dnnl_primitive_desc_create(&hint, &fwd, NULL, engine, NULL);
        what = "convolution backward data descriptor";
        s = dnnl_dilated_convolution_backward_data_desc_init(&bwd,
                dnnl_convolution_direct, &out_md, wmd, &in_md, strides,
                dilates, pl, pr);
    }
    if (s == dnnl_success) {
        what = "primitive descriptor";
        s = dnnl_primitive_desc_create(&pd, &bwd, NULL, engine, hint);
    }
    if (s == dnnl_success) {
        const char *impl = NULL;
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        snprintf(raw->impl, sizeof raw->impl, "%s", impl ? impl : "?");
        what = "primitive";
        s = dnnl_primitive_create(&raw->prim, pd);
    }
    if (s == dnnl_success) {
        what = "memory objects";
        s = dnnl_memory_create(&raw->in, &in_md, engine, in);
    }
    if (s == dnnl_success)
        s = dnnl_memory_create(&raw->out, &out_md, engine, out);
    if (s == dnnl_success) {
        what = "stream";
        s = dnnl_stream_create(&raw->stream, engine,
                dnnl_stream_default_flags);
    }
    if (s == dnnl_success && !prepacked)
        s = dnnl_memory_create(&raw->wei, &wei_md, engine, wei);
    if (s == dnnl_success && prepacked) {
        what = "weights prepacking";
        s = prepack(raw, &wei_md, wei,
                dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(hint);
    if (s != dnnl_success) {
        snprintf(err, err_size, "oneDNN %s failed (%s)", what,
                dnnl_status2str(s));
        bench_raw_destroy(raw);
        return NULL;
    }
    return raw;
}

int bench_raw_execute(bench_raw_t *raw) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, raw->in},
            {DNNL_ARG_WEIGHTS, raw->wei}, {DNNL_ARG_DIFF_SRC, raw->out}};
    if (dnnl_primitive_execute(raw->prim, raw->stream, 3, args)
            != dnnl_success)
        return -1;
    return dnnl_stream_wait(raw->stream) == dnnl_success ? 0 : -1;
}

const char *bench_raw_impl(const bench_raw_t *raw) { return raw->impl; }

void bench_raw_destroy(bench_raw_t *raw) {
    if (!raw) return;
    dnnl_primitive_destroy(raw->prim);
    dnnl_stream_destroy(raw->stream);
    dnnl_memory_destroy(raw->in);
    dnnl_memory_destroy(raw->wei);
    dnnl_memory_destroy(raw->out);
    free(raw->packed);
    free(raw);
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
    dnnl_dims_t dims = {n, n};
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_matmul_desc_t mm;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t a = NULL, b = NULL, c = NULL;
    double best = 0;
    dnnl_status_t s = get_engine();
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&a_md, 2, dims, dnnl_bf16, dnnl_ab);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&b_md, 2, dims, dnnl_bf16, dnnl_ab);
    if (s == dnnl_success)
        s = dnnl_memory_desc_init_by_tag(&c_md, 2, dims, dnnl_f32, dnnl_ab);
    if (s == dnnl_success) s = dnnl_matmul_desc_init(&mm, &a_md, &b_md, NULL, &c_md);
    if (s == dnnl_success) s = dnnl_primitive_desc_create(&pd, &mm, NULL, engine, NULL);
    if (s == dnnl_success) s = dnnl_primitive_create(&prim, pd);
    if (s == dnnl_success) s = dnnl_memory_create(&a, &a_md, engine, DNNL_MEMORY_ALLOCATE);
    if (s == dnnl_success) s = dnnl_memory_create(&b, &b_md, engine, DNNL_MEMORY_ALLOCATE);
    if (s == dnnl_success) s = dnnl_memory_create(&c, &c_md, engine, DNNL_MEMORY_ALLOCATE);
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
