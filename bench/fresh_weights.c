/*
 * dgrad_fresh_weights: what writing a 1D transposed convolution's weights
 * right before each execution costs oneDNN's backward-data primitive on
 * its preferred layouts, beyond the write itself. A plan whose weights
 * are not constant packs them at every execution; the raw baseline with
 * prepacked weights does not (bench/README.md "Where the remaining gap
 * is", masknet in bf16).
 *
 *   dgrad_fresh_weights [f32|bf16 [CIN COUT IW K S]]
 *
 * Defaults: bf16 64 3 512 7 2 (masknet_p1:deconv1_1d, one image). Data
 * channels-last, weights in the layout the primitive prefers. Prints the
 * median over rounds, in microseconds per execution, of: the convolution
 * alone; a memcpy of its packed weights alone; that memcpy then the
 * convolution; oneDNN's reorder from plain K-first weights (XIO) alone;
 * that reorder then the convolution; a scatter of each user element to
 * its precomputed packed offset alone, and then the convolution.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "onednn_compat.h"

#define ROUNDS 15
#define CALLS 500

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return 1e6 * (double)t.tv_sec + 1e-3 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct probe {
    dnnl_stream_t stream;
    dnnl_primitive_t conv, reorder;
    dnnl_exec_arg_t conv_args[3], reorder_args[2];
    void *packed, *saved, *user;
    size_t packed_bytes, elsize;
    int64_t n_user;      /* user elements, in the user's order */
    int64_t *scatter_to; /* each one's offset in the packed layout */
} probe_t;

/* The packing a plan could do itself: zero the packed buffer (its
 * padding), then put each user element at its precomputed offset. */
static void scatter(const probe_t *p) {
    memset(p->packed, 0, p->packed_bytes);
    if (p->elsize == 2) {
        const uint16_t *from = p->user;
        uint16_t *to = p->packed;
        for (int64_t i = 0; i < p->n_user; i++) to[p->scatter_to[i]] = from[i];
    } else {
        const uint32_t *from = p->user;
        uint32_t *to = p->packed;
        for (int64_t i = 0; i < p->n_user; i++) to[p->scatter_to[i]] = from[i];
    }
}

/* Element offset of logical index @p idx in blocked layout @p l. */
static int64_t offset_of(const md_layout_t *l, const int64_t *idx) {
    int64_t blk[DNNL_MAX_NDIMS], off = l->offset0, inner = 0;
    for (int d = 0; d < DNNL_MAX_NDIMS; d++) blk[d] = 1;
    for (int b = 0; b < l->inner_nblks; b++)
        blk[l->inner_idxs[b]] *= l->inner_blks[b];
    for (int d = 0; d < l->ndims; d++) off += idx[d] / blk[d] * l->strides[d];
    for (int b = 0; b < l->inner_nblks; b++) {
        int d = (int)l->inner_idxs[b];
        int64_t below = 1;
        for (int j = b + 1; j < l->inner_nblks; j++)
            if (l->inner_idxs[j] == d) below *= l->inner_blks[j];
        inner = inner * l->inner_blks[b] + idx[d] / below % l->inner_blks[b];
    }
    return off + inner;
}

/* What one timed execution does: bit 0 the memcpy, bit 1 the reorder,
 * bit 3 the scatter, bit 2 the convolution. */
static dnnl_status_t run(const probe_t *p, int what) {
    dnnl_status_t s = dnnl_success;
    if (what & 1) memcpy(p->packed, p->saved, p->packed_bytes);
    if (what & 8) scatter(p);
    if (what & 2)
        s = dnnl_primitive_execute(p->reorder, p->stream, 2, p->reorder_args);
    if (s == dnnl_success && (what & 4))
        s = dnnl_primitive_execute(p->conv, p->stream, 3, p->conv_args);
    if (s == dnnl_success) s = dnnl_stream_wait(p->stream);
    return s;
}

/* Medians over ROUNDS rounds of CALLS executions of each of the @p n
 * kinds in @p what, the kinds taking turns within each round (so a drift
 * of the machine reaches them alike). */
static void medians_us(const probe_t *p, const int *what, int n, double *med) {
    double t[8][ROUNDS];
    if (n > 8) n = 8;
    for (int c = 0; c < n; c++)
        for (int i = 0; i < 200; i++) run(p, what[c]);
    for (int r = 0; r < ROUNDS; r++)
        for (int c = 0; c < n; c++) {
            double t0 = now_us();
            for (int i = 0; i < CALLS; i++) run(p, what[c]);
            t[c][r] = (now_us() - t0) / CALLS;
        }
    for (int c = 0; c < n; c++) {
        qsort(t[c], ROUNDS, sizeof t[c][0], cmp_double);
        med[c] = t[c][ROUNDS / 2];
    }
}

#define CHECK(call)                                                          \
    do {                                                                     \
        dnnl_status_t s_ = (call);                                           \
        if (s_ != dnnl_success) {                                            \
            fprintf(stderr, "dgrad_fresh_weights: %s failed (status %d)\n",  \
                    #call, (int)s_);                                         \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(int argc, char **argv) {
    const char *dt_name = argc > 1 ? argv[1] : "bf16";
    int64_t v[5] = {64, 3, 512, 7, 2}; /* CIN COUT IW K S */
    if (argc != 1 && argc != 2 && argc != 7) {
        fprintf(stderr, "usage: dgrad_fresh_weights [f32|bf16 [CIN COUT IW K S]]\n");
        return 2;
    }
    for (int i = 0; argc == 7 && i < 5; i++) {
        char *end = NULL;
        v[i] = strtoll(argv[2 + i], &end, 10);
        if (end == argv[2 + i] || *end || v[i] < 1 || v[i] > 4096) {
            fprintf(stderr, "dgrad_fresh_weights: %s is not a whole number in 1..4096\n",
                    argv[2 + i]);
            return 2;
        }
    }
    dnnl_data_type_t dt = !strcmp(dt_name, "f32") ? dnnl_f32
            : !strcmp(dt_name, "bf16")            ? dnnl_bf16
                                                  : dnnl_data_type_undef;
    if (dt == dnnl_data_type_undef) {
        fprintf(stderr, "dgrad_fresh_weights: type %s is not f32 or bf16\n",
                dt_name);
        return 2;
    }
    int64_t cin = v[0], cout = v[1], iw = v[2], k = v[3], stride = v[4];
    int64_t ow = (iw - 1) * stride + k;
    /* The transposed convolution's output is the forward convolution's
     * source: [1, COUT, OW] from [1, CIN, IW], weights [CIN, COUT, K]. */
    int64_t src_dims[3] = {1, cout, ow}, dst_dims[3] = {1, cin, iw},
            wei_dims[3] = {cin, cout, k}, xio[3] = {cout, 1, cin * cout};
    int64_t strides[1] = {stride}, dil[1] = {0}, pad[1] = {0};
    md_t src = MD_EMPTY, dst = MD_EMPTY, wei_any = MD_EMPTY, wei_user = MD_EMPTY;
    dnnl_engine_t eng;
    probe_t p = {0};
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&p.stream, eng, dnnl_stream_default_flags));
    CHECK(md_tagged(&src, 3, src_dims, dt, dnnl_acb));
    CHECK(md_tagged(&dst, 3, dst_dims, dt, dnnl_acb));
    CHECK(md_tagged(&wei_any, 3, wei_dims, dt, dnnl_format_tag_any));
    CHECK(md_strided(&wei_user, 3, wei_dims, dt, xio));
    dnnl_primitive_desc_t hint, pd, rpd;
    CHECK(conv_forward_pd(&hint, eng, dnnl_forward_training, md_ref(&src),
            md_ref(&wei_any), NULL, md_ref(&dst), strides, dil, pad, pad,
            NULL));
    CHECK(conv_backward_data_pd(&pd, eng, md_ref(&src), md_ref(&wei_any),
            md_ref(&dst), strides, dil, pad, pad, hint, NULL));
    md_ref_t packed_md = pd_md(pd, dnnl_query_weights_md);
    CHECK(dnnl_reorder_primitive_desc_create(&rpd, md_ref(&wei_user), eng,
            packed_md, eng, NULL));
    CHECK(dnnl_primitive_create(&p.conv, pd));
    CHECK(dnnl_primitive_create(&p.reorder, rpd));
    dnnl_memory_t m_src, m_dst, m_user, m_packed;
    CHECK(dnnl_memory_create(&m_src, md_ref(&src), eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&m_dst, md_ref(&dst), eng, DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&m_user, md_ref(&wei_user), eng,
            DNNL_MEMORY_ALLOCATE));
    CHECK(dnnl_memory_create(&m_packed, packed_md, eng, DNNL_MEMORY_ALLOCATE));
    /* Zero data: the timing does not depend on the values. */
    void *h;
    CHECK(dnnl_memory_get_data_handle(m_dst, &h));
    memset(h, 0, md_size(md_ref(&dst)));
    CHECK(dnnl_memory_get_data_handle(m_user, &p.user));
    CHECK(dnnl_memory_get_data_handle(m_packed, &p.packed));
    p.packed_bytes = md_size(packed_md);
    p.saved = calloc(1, p.packed_bytes);
    p.elsize = dt == dnnl_f32 ? 4 : 2;
    p.n_user = cin * cout * k;
    p.scatter_to = malloc((size_t)p.n_user * sizeof *p.scatter_to);
    md_layout_t user_l, packed_l;
    if (!md_layout(md_ref(&wei_user), &user_l) || !md_layout(packed_md, &packed_l)) {
        fprintf(stderr, "dgrad_fresh_weights: the packed weights are not blocked\n");
        return 1;
    }
    for (int64_t o = 0; p.scatter_to && o < cin; o++)
        for (int64_t i = 0; i < cout; i++)
            for (int64_t t = 0; t < k; t++) {
                int64_t idx[3] = {o, i, t};
                p.scatter_to[offset_of(&user_l, idx)] = offset_of(&packed_l, idx);
            }
    if (!p.saved || !p.scatter_to) {
        fprintf(stderr, "dgrad_fresh_weights: out of memory\n");
        return 1;
    }
    p.conv_args[0] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_DST, m_dst};
    p.conv_args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, m_packed};
    p.conv_args[2] = (dnnl_exec_arg_t){DNNL_ARG_DIFF_SRC, m_src};
    p.reorder_args[0] = (dnnl_exec_arg_t){DNNL_ARG_FROM, m_user};
    p.reorder_args[1] = (dnnl_exec_arg_t){DNNL_ARG_TO, m_packed};
    /* The scatter must pack as oneDNN's reorder does: both run on
     * distinct values, then the timed runs use zeros. */
    for (int64_t i = 0; i < p.n_user; i++) {
        uint32_t bits = 0x3f800000u + (uint32_t)(i + 1) * 0x10000u;
        if (p.elsize == 2) ((uint16_t *)p.user)[i] = (uint16_t)(bits >> 16);
        else ((uint32_t *)p.user)[i] = bits;
    }
    CHECK(run(&p, 2));
    memcpy(p.saved, p.packed, p.packed_bytes);
    memset(p.packed, 0xff, p.packed_bytes);
    scatter(&p);
    if (memcmp(p.saved, p.packed, p.packed_bytes)) {
        fprintf(stderr, "dgrad_fresh_weights: the scatter packs otherwise "
                        "than oneDNN's reorder\n");
        return 1;
    }
    memset(p.user, 0, md_size(md_ref(&wei_user)));
    CHECK(run(&p, 2));
    memcpy(p.saved, p.packed, p.packed_bytes);
    printf("%s CIN %lld COUT %lld IW %lld K %lld S %lld: %s, weights %zu "
           "bytes packed by %s\n",
            dt_name, (long long)cin, (long long)cout, (long long)iw,
            (long long)k, (long long)stride, pd_impl_name(pd), p.packed_bytes,
            pd_impl_name(rpd));
    static const int what[7] = {4, 1, 5, 2, 6, 8, 12};
    static const char *const name[7] = {"convolution, weights prepacked",
            "memcpy of the packed weights", "memcpy, then the convolution",
            "reorder from XIO", "reorder, then the convolution",
            "scatter from XIO", "scatter, then the convolution"};
    double med[7];
    medians_us(&p, what, 7, med);
    for (int c = 0; c < 7; c++) printf("  %-32s %8.2f us\n", name[c], med[c]);
    free(p.saved);
    free(p.scatter_to);
    dnnl_memory_destroy(m_src);
    dnnl_memory_destroy(m_dst);
    dnnl_memory_destroy(m_user);
    dnnl_memory_destroy(m_packed);
    dnnl_primitive_destroy(p.conv);
    dnnl_primitive_destroy(p.reorder);
    dnnl_primitive_desc_destroy(rpd);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(hint);
    md_free(&src);
    md_free(&dst);
    md_free(&wei_any);
    md_free(&wei_user);
    dnnl_stream_destroy(p.stream);
    dnnl_engine_destroy(eng);
    return 0;
}
