/*
 * dgrad's own loop for 1D and 2D problems of many input channels per
 * group and few output channels with large windows: masknet's 64 -> 3
 * channels at k7 s2, DCGAN's last layer (64 -> 3, k4 s2), the first
 * layers of GoogLeNet and AlexNet taken backwards (64 and 96 -> 3, k7
 * and k11). Each input row (all positions of the last axis at one
 * position of the other) times the group's weights is one product of
 * oneDNN's sgemm: the columns
 *   col[(co, kh, kw)][x] = sum over ci of w[ci][co][kh][kw] * in[ci][x]
 * for a few input rows at a time (COL_BYTES of them, in the thread's
 * scratch), each column then added into the output rows it reaches:
 * output position ow = S*x + kw*D - PB of phase r = ow mod S, at m = ow
 * div S, so that every add is a contiguous run of one phase's row. The
 * rows open at once (a window of (Kh - 1) * Dh + 1 output rows) are
 * kept by phase, started at the bias, and each is written out, its
 * phases interleaved, as soon as no later input row reaches it.
 *
 * oneDNN's own gemm convolution does the same products, but over a whole
 * image at a time (its columns, 147 x 262,144 floats for masknet, far
 * beyond the caches), with its threads inside each product and the
 * columns added back by one thread. Here the threads share bands of
 * output rows of each image (each band's input rows computed where they
 * reach it; at a band's edges a few rows are computed by both bands'
 * threads), each thread's products are of one input row or a few, and
 * the columns are added while they are in its L2 cache. The products
 * alone, masknet's shapes, both threads (`dgrad_sgemm_bands 147 64
 * 262144 0|512|2048`): one product over the whole image 42.1 ms (117
 * GFLOP/s), products of 512 to 2,048 columns shared out 31.4-31.9 ms
 * (155-157 GFLOP/s), on the AMD EPYC Zen 5 VM of bench/README.md's
 * thirty-first look, which also has what the loop takes against
 * oneDNN's plans.
 *
 * f32 only: 16-bit problems run it on f32 copies (plan->staged). A
 * post-op chain applies to each output row as it is written, in f32
 * (post_chain_row); on a channels-last output the row is put together
 * in the thread's scratch first. The whole output box. The input's rows
 * of one image and group are one matrix: NCX with the positions of a
 * channel contiguous (its channel stride is the leading dimension), or
 * channels-last with its pixels evenly apart (the pixel stride is; the
 * product reads it transposed).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "direct_rows.h"
#include "dtype.h"

/* Bytes of columns a thread makes per product at most (input rows of
 * the last axis, at least one): within the L2 cache with the rows they
 * are added into. */
#define COL_BYTES ((int64_t)512 << 10)
/* Floats of one input row's columns at most, and of the open output
 * rows' phases: a thread's scratch stays a few MB. */
#define ROW_COL_FLOATS_MAX ((int64_t)1 << 21)
#define OPEN_FLOATS_MAX ((int64_t)1 << 20)
/* Input channels of a group at least: fewer make products too thin for
 * sgemm to gain over the other loops (the depthwise and few-channel
 * problems have loops of their own). */
#define GEMM_MIN_GROUP_CHANNELS 16
/* Taps of an axis and output channels of a group at most (tables of
 * the loop's own on the stack). */
#define GEMM_MAX_AXIS_TAPS 64
#define GEMM_MAX_GROUP_OUT 64
/* Multiply-adds from which the threads share the work. */
#define GEMM_FORK_MACS 1e5

/* The two axes as the loop sees them: the outer one (h; 1D problems
 * have one of a single position) and the last one (w). */
typedef struct gr_axes {
    int64_t Xh, Yh, Kh, Sh, Dh, Ph;
    int64_t Xw, Yw, Kw, Sw, Dw, Pw;
} gr_axes_t;

static gr_axes_t axes_of(const dgrad_problem_t *p) {
    int l = p->nsp - 1;
    gr_axes_t a = {1, 1, 1, 1, 1, 0, p->X[l], p->Y[l], p->K[l], p->S[l],
            p->D[l], p->PB[l]};
    if (p->nsp == 2) {
        a.Xh = p->X[0];
        a.Yh = p->Y[0];
        a.Kh = p->K[0];
        a.Sh = p->S[0];
        a.Dh = p->D[0];
        a.Ph = p->PB[0];
    }
    return a;
}

static int64_t cig_of(const dgrad_problem_t *p) { return p->Cin / p->G; }
static int64_t cog_of(const dgrad_problem_t *p) { return p->Cout / p->G; }

/* Rows of the product: (co, kh, kw), kw fastest. */
static int64_t m_of(const dgrad_problem_t *p) {
    gr_axes_t a = axes_of(p);
    return cog_of(p) * a.Kh * a.Kw;
}

/* Positions of phase row r at most, in whole vectors of 16. */
static int64_t phase_pitch(const gr_axes_t *a) {
    return ((a->Yw + a->Sw - 1) / a->Sw + 15) / 16 * 16;
}

/* Output rows open at once. */
static int64_t open_rows(const gr_axes_t *a) {
    return (a->Kh - 1) * a->Dh + 1;
}

/* Input rows a product takes. */
static int64_t rows_per_product(const dgrad_problem_t *p) {
    gr_axes_t a = axes_of(p);
    int64_t row = m_of(p) * a.Xw * (int64_t)sizeof(float);
    int64_t c = COL_BYTES / row;
    return c < 1 ? 1 : c > a.Xh ? a.Xh : c;
}

static int64_t col_floats(const dgrad_problem_t *p) {
    return m_of(p) * rows_per_product(p) * axes_of(p).Xw;
}

static int64_t open_floats(const dgrad_problem_t *p) {
    gr_axes_t a = axes_of(p);
    return open_rows(&a) * cog_of(p) * a.Sw * phase_pitch(&a);
}

/* An output row put together before the chain, and the values of a
 * 16-bit operand along it (post_chain_row). */
static int64_t chain_floats(const dgrad_problem_t *p) {
    return p->n_post_ops ? 2 * axes_of(p).Yw : 0;
}

size_t direct_gemm_rows_thread_scratch(const dgrad_plan_t *plan) {
    /* 64 bytes between the parts and after them */
    return (size_t)(col_floats(&plan->p) + open_floats(&plan->p)
                   + chain_floats(&plan->p) + 48)
            * sizeof(float);
}

/* Whether the input of one image and group reads as a matrix of Cin/G
 * rows (*trans 0: NCX, positions contiguous) or Cin/G columns (*trans 1:
 * channels-last pixels evenly apart), and its leading dimension. */
static int input_matrix(const dgrad_plan_t *plan, int *trans, int64_t *ld) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    int l = p->nsp - 1;
    int64_t xw = p->X[l], xh = p->nsp == 2 ? p->X[0] : 1;
    /* the next row's first position where the row's last would be
     * followed by one more */
    int rows_dense = xh == 1 || is[2] == xw * is[2 + l];
    if (!rows_dense) return 0;
    if (is[2 + l] == 1) {
        *trans = 0;
        *ld = is[1];
        return is[1] >= xh * xw;
    }
    if (is[1] == 1) {
        *trans = 1;
        *ld = is[2 + l];
        return is[2 + l] >= cig_of(p);
    }
    return 0;
}

int direct_gemm_rows_applicable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    int trans;
    int64_t ld;
    if (p->nsp < 1 || p->nsp > 2 || !plan->full_box
            || (!plan->staged && p->dt != dgrad_f32)
            || cig_of(p) < GEMM_MIN_GROUP_CHANNELS
            || !input_matrix(plan, &trans, &ld))
        return 0;
    for (int i = 0; i < 2 + p->nsp; i++)
        if (is[i] < 0 || os[i] < 0) return 0;
    for (int i = 0; i < 3 + p->nsp; i++)
        if (p->wei_strides[i] < 0) return 0;
    gr_axes_t a = axes_of(p);
    /* each size bounded before the next multiplies it */
    if (a.Kh > GEMM_MAX_AXIS_TAPS || a.Kw > GEMM_MAX_AXIS_TAPS
            || a.Xw > ROW_COL_FLOATS_MAX || a.Yw > ROW_COL_FLOATS_MAX || a.Sw > ROW_COL_FLOATS_MAX
            || a.Dh > ROW_COL_FLOATS_MAX || cog_of(p) > GEMM_MAX_GROUP_OUT)
        return 0;
    int64_t open = open_rows(&a) * cog_of(p); /* under 2^33 */
    return m_of(p) * a.Xw <= ROW_COL_FLOATS_MAX && open <= OPEN_FLOATS_MAX
            && open * a.Sw <= OPEN_FLOATS_MAX
            && open_floats(p) <= OPEN_FLOATS_MAX;
}

size_t direct_gemm_rows_weights_size(const dgrad_problem_t *p) {
    return (size_t)(p->G * cig_of(p) * m_of(p)) * sizeof(float);
}

/* Weights as f32 [G][Cin/G][Cout/G][Kh][Kw]: per group the product's
 * left matrix, read transposed (rows (co, kh, kw), columns ci). */
void direct_gemm_rows_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    gr_axes_t a = axes_of(p);
    int l = p->nsp - 1;
    int64_t wh = p->nsp == 2 ? ws[3] : 0, ww = ws[3 + l];
    float *dst = packed;
    for (int64_t g = 0; g < p->G; g++)
        for (int64_t ci = 0; ci < cig_of(p); ci++)
            for (int64_t co = 0; co < cog_of(p); co++)
                for (int64_t kh = 0; kh < a.Kh; kh++)
                    for (int64_t kw = 0; kw < a.Kw; kw++)
                        *dst++ = (float)dgrad_load(user, p->dt,
                                g * ws[0] + ci * ws[1] + co * ws[2]
                                        + kh * wh + kw * ww);
}

/* ------------------------------------------------------------ the adds */

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void add_run_avx512(float *d,
        const float *s, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(d + i,
                _mm512_add_ps(_mm512_loadu_ps(d + i), _mm512_loadu_ps(s + i)));
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(d + i, k,
                _mm512_add_ps(_mm512_maskz_loadu_ps(k, d + i),
                        _mm512_maskz_loadu_ps(k, s + i)));
    }
}
#endif

static void add_run(float *d, const float *s, int64_t n, int avx512) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (avx512) {
        add_run_avx512(d, s, n);
        return;
    }
#endif
    (void)avx512;
    for (int64_t i = 0; i < n; i++) d[i] += s[i];
}

/* ------------------------------------------------------------ the loop */

/* One kw's phase and the input positions it takes: output position
 * S*x + kw*D - PB is position x + shift of phase r. */
typedef struct gr_tap {
    int64_t r, shift, lo, hi;
} gr_tap_t;

typedef struct gr_run {
    const dgrad_plan_t *plan;
    const float *in, *w, *bias;
    const void *const *operands; /* the chain's, NULL: none */
    float *out;
    gr_axes_t a;
    int64_t M, cig, cog, pitch, open, rows_per_product, bands, units;
    int trans, avx512;
    int64_t ld;
    gr_tap_t taps[GEMM_MAX_AXIS_TAPS]; /* per kw of the last axis */
    size_t per_thread;
    char *scratch;
} gr_run_t;

static gr_tap_t tap_of(const gr_axes_t *a, int64_t kw) {
    int64_t o = kw * a->Dw - a->Pw, r = o - div_floor(o, a->Sw) * a->Sw;
    gr_tap_t t = {r, (o - r) / a->Sw, 0, 0};
    int64_t count = r < a->Yw ? (a->Yw - r + a->Sw - 1) / a->Sw : 0;
    t.lo = t.shift < 0 ? -t.shift : 0;
    t.hi = count - t.shift < a->Xw ? count - t.shift : a->Xw;
    return t;
}

/* The phases of open output row @p oh (its slot), each started at its
 * channel's bias. */
static void open_row(const gr_run_t *r, float *open, int64_t oh,
        const float *bias) {
    float *row = open + (oh % r->open) * r->cog * r->a.Sw * r->pitch;
    for (int64_t co = 0; co < r->cog; co++)
        for (int64_t s = 0; s < r->a.Sw; s++) {
            float *ph = row + (co * r->a.Sw + s) * r->pitch;
            for (int64_t m = 0; m < r->pitch; m++) ph[m] = bias[co];
        }
}

/* The phases @p ph (pitch apart) of one output row interleaved into
 * @p dst, positions @p step floats apart. */
static void interleave_row(const gr_run_t *r, const float *ph, float *dst,
        int64_t step) {
    int64_t Sw = r->a.Sw, Yw = r->a.Yw;
#if defined(__x86_64__) && defined(__GNUC__)
    if (Sw == 2 && step == 1 && r->avx512) {
        direct_avx512_interleave2(ph, ph + r->pitch, Yw, dst);
        return;
    }
#endif
    if (Sw == 1 && step == 1) {
        memcpy(dst, ph, (size_t)Yw * sizeof *dst);
        return;
    }
    for (int64_t ow = 0; ow < Yw; ow++)
        dst[ow * step] = ph[(ow % Sw) * r->pitch + ow / Sw];
}

/* Output row @p oh of image @p n, group @p g from its phases, then the
 * chain where there is one: on the row in place where the output's
 * positions are contiguous, else on @p chained first (chain_floats). */
static void write_row(const gr_run_t *r, const float *open, int64_t n,
        int64_t g, int64_t oh, float *chained) {
    const dgrad_problem_t *p = &r->plan->p;
    const int64_t *os = r->plan->out.io_strides;
    int l = p->nsp - 1;
    const float *row = open + (oh % r->open) * r->cog * r->a.Sw * r->pitch;
    int64_t Yw = r->a.Yw, ow_stride = os[2 + l], y = p->nsp == 2 ? oh : 0;
    for (int64_t co = 0; co < r->cog; co++) {
        float *out_row = r->out + n * os[0] + (g * r->cog + co) * os[1]
                + (p->nsp == 2 ? oh * os[2] : 0);
        const float *ph = row + co * r->a.Sw * r->pitch;
        if (!r->operands) {
            interleave_row(r, ph, out_row, ow_stride);
            continue;
        }
        int apart = ow_stride != 1;
        float *dst = apart ? chained : out_row;
        interleave_row(r, ph, dst, 1);
        int64_t idx[2 + DGRAD_MAX_SPATIAL] = {n, g * r->cog + co, y};
        post_chain_row(p, r->operands, 0, idx, Yw, dst, chained + Yw);
        for (int64_t ow = 0; apart && ow < Yw; ow++)
            out_row[ow * ow_stride] = dst[ow];
    }
}

/* col = the group's weights (transposed) times @p rows input rows from
 * @p src: oneDNN's sgemm, else the same sums in plain C. sgemm reports
 * only invalid arguments (none here) and out of memory: it allocates
 * its packing buffers per call, as it does inside oneDNN's gemm
 * convolution, and an execution of an own loop has no failure to
 * report, so it computes the columns either way. */
static void product(const gr_run_t *r, const float *w, const float *src,
        int64_t rows, float *col) {
    int64_t cols = rows * r->a.Xw, M = r->M, K = r->cig;
    if (dnnl_sgemm('T', r->trans ? 'T' : 'N', M, cols, K, 1.0f, w, M, src,
                r->ld, 0.0f, col, cols)
            == dnnl_success)
        return;
    for (int64_t m = 0; m < M; m++)
        for (int64_t x = 0; x < cols; x++) {
            float s = 0;
            for (int64_t k = 0; k < K; k++)
                s += w[k * M + m]
                        * (r->trans ? src[x * r->ld + k] : src[k * r->ld + x]);
            col[m * cols + x] = s;
        }
}

/* Output rows [oh0, oh1) of image @p n, group @p g. */
static void run_band(const gr_run_t *r, int64_t n, int64_t g, int64_t oh0,
        int64_t oh1, float *col, float *open, float *chained) {
    const dgrad_problem_t *p = &r->plan->p;
    const int64_t *is = r->plan->in.io_strides;
    const gr_axes_t *a = &r->a;
    static const float zeros[GEMM_MAX_GROUP_OUT];
    const float *bias = r->bias ? r->bias + g * r->cog : zeros;
    const float *w = r->w + g * r->cig * r->M;
    const float *in = r->in + n * is[0] + g * r->cig * is[1];
    int64_t row_step = p->nsp == 2 ? is[2] : 0;
    /* input rows reaching the band */
    int64_t ih0 = div_floor(oh0 + a->Ph - (a->Kh - 1) * a->Dh + a->Sh - 1,
                    a->Sh),
            ih1 = div_floor(oh1 - 1 + a->Ph, a->Sh) + 1;
    if (ih0 < 0) ih0 = 0;
    if (ih1 > a->Xh) ih1 = a->Xh;
    for (int64_t oh = oh0; oh < oh1 && oh < oh0 + r->open; oh++)
        open_row(r, open, oh, bias);
    int64_t next = oh0; /* the first row not written yet */
    for (int64_t c0 = ih0; c0 < ih1; c0 += r->rows_per_product) {
        int64_t rows = ih1 - c0 < r->rows_per_product ? ih1 - c0
                                                      : r->rows_per_product;
        product(r, w, in + c0 * row_step, rows, col);
        int64_t cols = rows * a->Xw;
        for (int64_t j = 0; j < rows; j++) {
            int64_t ih = c0 + j;
            /* rows no input row from ih on reaches are complete */
            int64_t done = a->Sh * ih - a->Ph;
            for (; next < oh1 && next < done; next++) {
                write_row(r, open, n, g, next, chained);
                if (next + r->open < oh1)
                    open_row(r, open, next + r->open, bias);
            }
            for (int64_t kh = 0; kh < a->Kh; kh++) {
                int64_t oh = a->Sh * ih + kh * a->Dh - a->Ph;
                if (oh < oh0 || oh >= oh1) continue;
                float *row = open + (oh % r->open) * r->cog * a->Sw * r->pitch;
                for (int64_t kw = 0; kw < a->Kw; kw++) {
                    gr_tap_t t = r->taps[kw];
                    if (t.lo >= t.hi) continue;
                    for (int64_t co = 0; co < r->cog; co++)
                        add_run(row + (co * a->Sw + t.r) * r->pitch + t.lo
                                        + t.shift,
                                col + ((co * a->Kh + kh) * a->Kw + kw) * cols
                                        + j * a->Xw + t.lo,
                                t.hi - t.lo, r->avx512);
                }
            }
        }
    }
    for (; next < oh1; next++) {
        write_row(r, open, n, g, next, chained);
        if (next + r->open < oh1) open_row(r, open, next + r->open, bias);
    }
}

/* Thread @p th of @p nth: its contiguous share of the (image, group,
 * band) units. */
static void run_share(const gr_run_t *r, int th, int nth) {
    float *col = (float *)(r->scratch + r->per_thread * (size_t)th);
    float *open = col + col_floats(&r->plan->p) + 16;
    float *chained = open + open_floats(&r->plan->p) + 16;
    int64_t begin, end;
    direct_share_of(r->units, th, nth, &begin, &end);
    for (int64_t u = begin; u < end; u++) {
        int64_t b = u % r->bands, ng = u / r->bands;
        int64_t g = ng % r->plan->p.G, n = ng / r->plan->p.G;
        run_band(r, n, g, r->a.Yh * b / r->bands, r->a.Yh * (b + 1) / r->bands,
                col, open, chained);
    }
}

void direct_gemm_rows_run(const dgrad_plan_t *plan, const float *in,
        const float *w, const float *bias, const void *const *operands,
        float *out, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    int threads = direct_threads_max();
    if (threads > plan->direct_threads) threads = plan->direct_threads;
    gr_run_t r = {.plan = plan,
            .in = in,
            .w = w,
            .bias = bias,
            .operands = operands,
            .out = out,
            .a = axes_of(p),
            .M = m_of(p),
            .cig = cig_of(p),
            .cog = cog_of(p),
            .rows_per_product = rows_per_product(p),
            .avx512 = cpu_has_avx512f(),
            .per_thread = direct_gemm_rows_thread_scratch(plan),
            .scratch = scratch};
    r.pitch = phase_pitch(&r.a);
    for (int64_t kw = 0; kw < r.a.Kw; kw++) r.taps[kw] = tap_of(&r.a, kw);
    r.open = open_rows(&r.a);
    input_matrix(plan, &r.trans, &r.ld);
    double macs = (double)p->N * (double)p->Cin * (double)r.M
            * (double)r.a.Xh * (double)r.a.Xw;
    int fork = macs >= GEMM_FORK_MACS && threads > 1;
    int64_t images = p->N * p->G;
    /* bands: every thread a share of the rows where images are fewer */
    r.bands = !fork || images >= threads ? 1
            : (threads + images - 1) / images;
    if (r.bands > r.a.Yh) r.bands = r.a.Yh;
    r.units = images * r.bands;
    if (!fork) {
        run_share(&r, 0, 1);
        return;
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
    run_share(&r, omp_get_thread_num(), omp_get_num_threads());
#else
    run_share(&r, 0, 1);
#endif
}
