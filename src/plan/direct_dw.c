/*
 * dgrad's own loop for depthwise transposed convolutions (one input and
 * one output channel per group) on channels-last activations, in f32
 * (16-bit types read and written through f32 copies: plan->staged).
 *
 * oneDNN's depthwise backward-data kernel (jit_dw) takes no attribute:
 * with a chain after it the output is read and written once more, which
 * on these memory-bound layers costs about as much as the op itself
 * (bench/README.md, "Results with post-op chains"). Here channels are the
 * contiguous axis and the vector's lanes: each output pixel is
 *   bias[c] + sum over the taps reaching it of w[tap][c] * in[q(tap)][c],
 * 4 vectors of 16 channels per visit of the pixel's taps, a leading ReLU
 * or Clamp of the chain applied in registers and the rest of it along
 * the pixel's channels (post_chain_run) before the next pixel: each
 * output element is written once by the loop. Rows of the output (image,
 * outer positions) are shared out over the threads. One source for every
 * CPU (GCC's vector extension, compiled for AVX-512, AVX2 and the
 * baseline); chosen only where timing finds it faster (timing.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdint.h>
#include <string.h>

#include "direct_vec.h"
#include "dtype.h"

/* Limits that keep a row's tap combinations and a pixel's buffer small. */
#define DW_MAX_CHANNELS (1 << 16)
#define DW_MAX_TAPS 4096 /* taps of the kernel (a pixel's terms at most) */
/* Vectors of channels accumulated per visit of a pixel's taps. */
#define DW_VECS 4
/* Pixels of each phase computed before the next phase's: the phases of
 * a stretch of the row fill its cache lines while they are in L1. */
#define DW_CHUNK 16

/* Channels rounded up to whole vectors: the packed weights' row. */
static int64_t padded_channels(const dgrad_problem_t *p) {
    return (p->Cout + 15) / 16 * 16;
}

static int64_t outer_taps_max(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->K[i];
    return n;
}

/* Terms of one pixel at most: every tap. */
static int64_t taps_max(const dgrad_problem_t *p) {
    return outer_taps_max(p) * p->K[p->nsp - 1];
}

/* Whether the kernel has at most DW_MAX_TAPS taps, counted without
 * overflowing whatever the kernel's dims. */
static int kernel_small(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp; i++) {
        if (p->K[i] < 1 || p->K[i] > DW_MAX_TAPS / n) return 0;
        n *= p->K[i];
    }
    return 1;
}

int direct_dw_applicable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    return p->Cin == p->G && p->Cout == p->G && p->G > 1
            && (plan->staged || p->dt == dgrad_f32)
            && is[1] == 1 && os[1] == 1
            && p->Cout <= DW_MAX_CHANNELS
            && kernel_small(p);
}

/* Per thread: the row's outer tap combinations and a pixel's terms (each
 * an input offset and a weight row), and one pixel of a 16-bit post-op
 * operand. */
size_t direct_dw_thread_scratch(const dgrad_problem_t *p) {
    size_t n = (size_t)(2 * outer_taps_max(p) + 2 * taps_max(p))
                    * sizeof(int64_t)
            + (size_t)padded_channels(p) * sizeof(float);
    return (n + 63) / 64 * 64;
}

size_t direct_dw_weights_size(const dgrad_problem_t *p) {
    int64_t n = padded_channels(p);
    for (int i = 0; i < p->nsp; i++) n *= p->K[i];
    return (size_t)n * sizeof(float);
}

/* Weights as f32 [K...][channels rounded up to 16], the padding 0. */
void direct_dw_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed) {
    const dgrad_problem_t *p = &plan->p;
    int64_t cp = padded_channels(p), kn = 1;
    for (int i = 0; i < p->nsp; i++) kn *= p->K[i];
    const int64_t *ws = p->wei_strides;
    for (int64_t k = 0; k < kn; k++) {
        int64_t rest = k, off = 0;
        for (int i = p->nsp - 1; i >= 0; i--) {
            off += rest % p->K[i] * ws[3 + i];
            rest /= p->K[i];
        }
        float *row = packed + k * cp;
        for (int64_t g = 0; g < p->G; g++)
            row[g] = (float)dgrad_load(user, p->dt, off + g * ws[0]);
        for (int64_t g = p->G; g < cp; g++) row[g] = 0.0f;
    }
}

/* Tap tables, made once per plan: per axis and output position y, the
 * count of taps reaching it, then (k, input position) pairs; axis after
 * axis, each entry direct_taps_width wide. */
int direct_dw_taps_init(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int64_t n = 0;
    for (int i = 0; i < p->nsp; i++) n += p->Y[i] * direct_taps_width(p, i);
    int64_t *t = allocated(dgrad_calloc((size_t)n, sizeof *t));
    if (!t) return 0;
    plan->direct_taps = t;
    for (int i = 0; i < p->nsp; i++) t = direct_position_taps(p, i, t);
    return 1;
}

/* A run of @p count pixels with the same taps, each one input pixel
 * (@p in_step elements) and @p dst_step output elements after the last:
 * bias plus each term's weight row times input run (@p term: the first
 * pixel's input offsets in elements and weight rows), the epilogue,
 * stored to @p dst; DW_VECS vectors of W channels per visit of the terms,
 * then single vectors, then the last channels one by one. */
#define DEFINE_PIXEL_ANY(NAME, TARGET, VF, VI, W)                             \
    TARGET static void NAME##_any(const float *in, const int64_t *term,       \
            int n, const float *w, int64_t cp, const float *bias, int64_t C,  \
            const epilogue_t *epp, float *dst, int64_t in_step,               \
            int64_t dst_step, int64_t count) {                                \
      const epilogue_t e_ = *epp, *ep = &e_; /* not reloaded past stores */   \
      for (int64_t m = 0; m < count; m++, in += in_step, dst += dst_step) {   \
        int64_t c0 = 0;                                                       \
        for (; c0 + W * DW_VECS <= C; c0 += W * DW_VECS) {                    \
            VF acc[DW_VECS];                                                  \
            _Pragma("GCC unroll 4") for (int u = 0; u < DW_VECS; u++) {       \
                if (bias) V_LOAD(acc[u], bias + c0 + W * u);                  \
                else acc[u] = (VF){0};                                        \
            }                                                                 \
            for (int t = 0; t < n; t++) {                                     \
                const float *x = in + term[2 * t] + c0,                       \
                            *wr = w + term[2 * t + 1] * cp + c0;              \
                _Pragma("GCC unroll 4") for (int u = 0; u < DW_VECS; u++) {   \
                    VF xv, wv;                                                \
                    V_LOAD(xv, x + W * u);                                    \
                    V_LOAD(wv, wr + W * u);                                   \
                    acc[u] += wv * xv;                                        \
                }                                                             \
            }                                                                 \
            _Pragma("GCC unroll 4") for (int u = 0; u < DW_VECS; u++) {       \
                if (ep->on) V_EPILOGUE(VF, VI, ep, acc[u]);                   \
                V_STORE(dst + c0 + W * u, acc[u]);                            \
            }                                                                 \
        }                                                                     \
        for (; c0 + W <= C; c0 += W) {                                        \
            VF acc;                                                           \
            if (bias) V_LOAD(acc, bias + c0);                                 \
            else acc = (VF){0};                                               \
            for (int t = 0; t < n; t++) {                                     \
                VF xv, wv;                                                    \
                V_LOAD(xv, in + term[2 * t] + c0);                            \
                V_LOAD(wv, w + term[2 * t + 1] * cp + c0);                    \
                acc += wv * xv;                                               \
            }                                                                 \
            if (ep->on) V_EPILOGUE(VF, VI, ep, acc);                          \
            V_STORE(dst + c0, acc);                                           \
        }                                                                     \
        for (; c0 < C; c0++) {                                                \
            float acc = bias ? bias[c0] : 0.0f;                               \
            for (int t = 0; t < n; t++)                                       \
                acc += w[term[2 * t + 1] * cp + c0] * in[term[2 * t] + c0];   \
            dst[c0] = ep->on ? scalar_epilogue(ep, acc) : acc;                \
        }                                                                     \
      }                                                                       \
    }

/* The same for runs of NT terms, 2 vectors of channels at a time with
 * their NT weight vectors held in registers over the run (the generic
 * loop loads each weight again for every pixel: on the MobileNet
 * depthwise layers, 2x2 taps, half its loads). Returns the channels
 * done (whole pairs of vectors). */
#define DEFINE_PIXEL_FEW(NAME, TARGET, VF, VI, W, NT)                         \
    TARGET static int64_t NAME##_few##NT(const float *in,                     \
            const int64_t *term, const float *w, int64_t cp,                  \
            const float *bias, int64_t C, const epilogue_t *epp, float *dst,  \
            int64_t in_step, int64_t dst_step, int64_t count) {               \
        const epilogue_t e_ = *epp, *ep = &e_;                                \
        int64_t off[NT], c0 = 0;                                              \
        for (int t = 0; t < NT; t++) off[t] = term[2 * t];                    \
        for (; c0 + 2 * W <= C; c0 += 2 * W) {                                \
            VF wv[NT][2], b[2];                                               \
            _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {            \
                V_LOAD(wv[t][0], w + term[2 * t + 1] * cp + c0);              \
                V_LOAD(wv[t][1], w + term[2 * t + 1] * cp + c0 + W);          \
            }                                                                 \
            if (bias) {                                                       \
                V_LOAD(b[0], bias + c0);                                      \
                V_LOAD(b[1], bias + c0 + W);                                  \
            } else {                                                          \
                b[0] = b[1] = (VF){0};                                        \
            }                                                                 \
            const float *x = in + c0;                                         \
            float *d = dst + c0;                                              \
            for (int64_t m = 0; m < count; m++, x += in_step,                 \
                    d += dst_step) {                                          \
                VF a0 = b[0], a1 = b[1];                                      \
                _Pragma("GCC unroll 4") for (int t = 0; t < NT; t++) {        \
                    VF x0, x1;                                                \
                    V_LOAD(x0, x + off[t]);                                   \
                    V_LOAD(x1, x + off[t] + W);                               \
                    a0 += wv[t][0] * x0;                                      \
                    a1 += wv[t][1] * x1;                                      \
                }                                                             \
                if (ep->on) {                                                 \
                    V_EPILOGUE(VF, VI, ep, a0);                               \
                    V_EPILOGUE(VF, VI, ep, a1);                               \
                }                                                             \
                V_STORE(d, a0);                                               \
                V_STORE(d + W, a1);                                           \
            }                                                                 \
        }                                                                     \
        return c0;                                                            \
    }

/* A run: runs of 1 to 4 terms through the register-held weights, the
 * channels they leave (and longer runs) through the generic loop. */
#define DEFINE_PIXEL(NAME, TARGET, VF, VI, W)                                 \
    DEFINE_PIXEL_ANY(NAME, TARGET, VF, VI, W)                                 \
    DEFINE_PIXEL_FEW(NAME, TARGET, VF, VI, W, 1)                              \
    DEFINE_PIXEL_FEW(NAME, TARGET, VF, VI, W, 2)                              \
    DEFINE_PIXEL_FEW(NAME, TARGET, VF, VI, W, 3)                              \
    DEFINE_PIXEL_FEW(NAME, TARGET, VF, VI, W, 4)                              \
    TARGET static void NAME(const float *in, const int64_t *term, int n,      \
            const float *w, int64_t cp, const float *bias, int64_t C,         \
            const epilogue_t *ep, float *dst, int64_t in_step,                \
            int64_t dst_step, int64_t count) {                                \
        int64_t c0 = 0;                                                       \
        switch (n) {                                                          \
        case 1: c0 = NAME##_few1(in, term, w, cp, bias, C, ep, dst, in_step,  \
                        dst_step, count); break;                              \
        case 2: c0 = NAME##_few2(in, term, w, cp, bias, C, ep, dst, in_step,  \
                        dst_step, count); break;                              \
        case 3: c0 = NAME##_few3(in, term, w, cp, bias, C, ep, dst, in_step,  \
                        dst_step, count); break;                              \
        case 4: c0 = NAME##_few4(in, term, w, cp, bias, C, ep, dst, in_step,  \
                        dst_step, count); break;                              \
        default: break;                                                       \
        }                                                                     \
        if (c0 < C)                                                           \
            NAME##_any(in + c0, term, n, w + c0, cp, bias ? bias + c0 : NULL, \
                    C - c0, ep, dst + c0, in_step, dst_step, count);          \
    }

#if defined(__x86_64__) && defined(__GNUC__)
DEFINE_PIXEL(pixel_avx512, __attribute__((target("avx512f"))), v16f, v16i, 16)
DEFINE_PIXEL(pixel_avx2, __attribute__((target("avx2,fma"))), v8f, v8i, 8)
#endif
DEFINE_PIXEL(pixel_portable, , v4f, v4i, 4)

typedef void (*pixel_fn)(const float *, const int64_t *, int, const float *,
        int64_t, const float *, int64_t, const epilogue_t *, float *, int64_t,
        int64_t, int64_t);

/* The widest the CPU runs (cpu.c), or AVX2's where the plan says so. */
static pixel_fn pixel_for_plan(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512f() && !plan->direct_avx2) return pixel_avx512;
    if (cpu_has_avx2_fma()) return pixel_avx2;
#endif
    return pixel_portable;
}

/* The combinations of outer taps reaching the row at outer position
 * @p y: per combination, its input offset (elements, image @p n
 * included) and its flattened outer tap index times K of the last axis.
 * Returns their count (0 when an outer axis has none). */
static int outer_terms(const dgrad_plan_t *plan, const int64_t *y,
        int64_t in_img, int64_t *ot) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    int l = p->nsp - 1, n = 0;
    const int64_t *row[DGRAD_MAX_SPATIAL];
    for (int i = 0; i < l; i++) {
        row[i] = direct_outer_taps(plan, i, y[i]);
        if (row[i][0] == 0) return 0;
    }
    int64_t j[DGRAD_MAX_SPATIAL] = {0};
    for (;;) {
        int64_t off = in_img, k = 0;
        for (int i = 0; i < l; i++) {
            off += row[i][2 + 2 * j[i]] * is[2 + i];
            k = k * p->K[i] + row[i][1 + 2 * j[i]];
        }
        ot[2 * n] = off;
        ot[2 * n + 1] = k * p->K[l];
        n++;
        int i = l - 1;
        while (i >= 0 && ++j[i] == row[i][0]) j[i--] = 0;
        if (i < 0) break;
    }
    return n;
}

/* How many pixels of the last axis from @p x on, @p S apart, have the
 * taps of @p x one input position further each (their table entries in
 * @p xtab, @p w wide): a run the kernel computes with one term list. */
static int64_t same_taps_run(const int64_t *xtab, int64_t w, int64_t x,
        int64_t S, int64_t Y) {
    const int64_t *a = xtab + x * w;
    int64_t m = 1;
    for (int64_t z = x + S; z < Y; z += S, m++) {
        const int64_t *b = xtab + z * w;
        if (b[0] != a[0]) break;
        int64_t e = 0;
        while (e < a[0] && b[1 + 2 * e] == a[1 + 2 * e]
                && b[2 + 2 * e] == a[2 + 2 * e] + m)
            e++;
        if (e < a[0]) break;
    }
    return m;
}

/* One output row (image @p n, outer position @p y): per phase of the last
 * axis (pixels S apart), runs of pixels with the same taps, each run's
 * terms (outer combinations times the last axis's taps) made once; the
 * rest of the chain then applied to each pixel in place, while the row
 * is in cache. A pixel no tap reaches gets the bias (then the chain)
 * like any other. */
static void dw_row(const dgrad_plan_t *plan, pixel_fn pixel, const float *in,
        const float *w, const float *bias, const void *const *operands,
        float *out, int64_t n, const int64_t *y, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *os = plan->out.io_strides, *is = plan->in.io_strides;
    int l = p->nsp - 1;
    int64_t C = p->Cout, cp = padded_channels(p), S = p->S[l], Y = p->Y[l],
            tw = direct_taps_width(p, l);
    int64_t *ot = (int64_t *)scratch, *term = ot + 2 * outer_taps_max(p);
    float *tmp = (float *)(term + 2 * taps_max(p));
    int no = outer_terms(plan, y, n * is[0], ot);
    const int64_t *xtab = direct_outer_taps(plan, l, 0);
    epilogue_t ep = {0, 0, 0.0f, 0.0f};
    int from = plan->post.fused ? post_chain_epilogue(p, &ep) : 0;
    int64_t out_row = n * os[0];
    for (int i = 0; i < l; i++) out_row += y[i] * os[2 + i];
    for (int64_t xc = 0; xc < Y; xc += S * DW_CHUNK) {
      int64_t xe = xc + S * DW_CHUNK < Y ? xc + S * DW_CHUNK : Y;
      for (int64_t r = 0; r < S && xc + r < xe; r++)
        for (int64_t x = xc + r, run; x < xe; x += run * S) {
            const int64_t *xt = xtab + x * tw;
            run = same_taps_run(xtab, tw, x, S, xe);
            int nt = 0;
            for (int o = 0; o < no; o++)
                for (int64_t e = 0; e < xt[0]; e++, nt++) {
                    term[2 * nt] = ot[2 * o] + xt[2 + 2 * e] * is[2 + l];
                    term[2 * nt + 1] = ot[2 * o + 1] + xt[1 + 2 * e];
                }
            pixel(in, term, nt, w, cp, bias, C, &ep,
                    out + out_row + x * os[2 + l], is[2 + l], S * os[2 + l],
                    run);
        }
    }
    if (plan->post.fused && from < p->n_post_ops) {
        int64_t idx[2 + DGRAD_MAX_SPATIAL] = {n, 0};
        for (int i = 0; i < l; i++) idx[2 + i] = y[i];
        for (idx[2 + l] = 0; idx[2 + l] < Y; idx[2 + l]++)
            post_chain_run(p, operands, from, idx, 1, C,
                    out + out_row + idx[2 + l] * os[2 + l], tmp);
    }
}

typedef struct dw_args {
    const dgrad_plan_t *plan;
    pixel_fn pixel;
    const float *in, *w, *bias;
    const void *const *operands;
    float *out;
} dw_args_t;

/* The rows of direct_dw_run: @p n the image, @p y the outer position
 * and the @p run - 1 after it on the last outer axis. */
static void dw_row_of(void *arg, int64_t n, const int64_t *y, int64_t run,
        char *scratch) {
    const dw_args_t *a = arg;
    int l = a->plan->p.nsp - 1;
    int64_t at[DGRAD_MAX_SPATIAL];
    for (int i = 0; i < l; i++) at[i] = y[i];
    for (int64_t k = 0; k < run; k++) {
        if (k) at[l - 1]++; /* runs are longer than 1 only where l >= 1 */
        dw_row(a->plan, a->pixel, a->in, a->w, a->bias, a->operands, a->out,
                n, at, scratch);
    }
}

/* The whole output: rows (image, outer positions) shared out over the
 * OpenMP threads, each with its own scratch. */
void direct_dw_run(const dgrad_plan_t *plan, const void *in, const float *w,
        const float *bias, const void *const *operands, void *out,
        char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t outer = 1;
    for (int i = 0; i < l; i++) outer *= p->Y[i];
    int64_t rows = p->N * outer;
    dw_args_t args = {plan, pixel_for_plan(plan), in, w, bias, operands, out};
    direct_for_rows(plan, rows, 0, (double)rows * (double)p->Y[l]
                    * (double)p->Cout,
            direct_dw_thread_scratch(p), scratch, dw_row_of, &args);
}
