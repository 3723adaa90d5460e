/*
 * dgrad's own loop for transposed convolutions whose windows do not
 * overlap: one group, K <= S on every axis, no padding or dilation and an
 * output exactly S times the input (the k2s2 up-sampling layers of U-Net,
 * ESPNet, ENet), on channels-last activations, in f32, bf16 or f16
 * (16-bit types either through f32 copies of whole tensors, plan->staged,
 * or row by row through f32 rows in the thread's scratch: timing picks).
 *
 * There nothing but input pixel x reaches the S-block of output pixels
 * S*x + b: along an output row of outer phase a (outer output position
 * S*x' + a), input pixel x's outputs are the S*Cout contiguous values
 *   out[S*x + b][co] = bias[co] + sum over ci of in[x][ci] * w[ci][co][a, b]
 * (no term where a or b >= K): one row of the product of the input row
 * (pixels by Cin) and the phase's weights (Cin by S*Cout). oneDNN runs it
 * as a backward-data convolution (gemm; jit on blocked copies of
 * few-channel tensors), or folded into a forward 1x1 convolution whose
 * S^d phases go to a scratch tensor and are copied out from there. On
 * ESPNet's 20-channel decoder layers in NXC, raw gemm takes 1.6-1.8x this
 * loop's time, and the fold from as fast to 2.5x, with the machine's load
 * (bench/README.md, eleventh look). Here blocks of MB input pixels times
 * NV vectors of output columns accumulate in registers over the input
 * channels (per channel one broadcast per pixel, one weight load per
 * vector), take the bias first and a leading ReLU or Clamp of the chain
 * last, and go straight to the output: each output element is written
 * once, row by row (image, outer output position), the rows shared out
 * over the threads. One source for every CPU (GCC's vector extension,
 * compiled for AVX-512, AVX2 and the baseline); chosen only where timing
 * finds it faster (timing.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "direct_vec.h"
#include "dtype.h"

/* Limits that keep the packed weights and a row's buffers small. */
#define BLOCKS_MAX_CHANNELS (1 << 16)
#define BLOCKS_MAX_ROW_VALUES ((int64_t)1 << 20) /* f32 row of a 16-bit type */
/* Where the loop rounds f32 values into a 16-bit output itself, it does
 * so for a stretch of an output row at a time, of at most this many
 * floats (or one input pixel's columns, if more) and whole pixel blocks:
 * a stretch is rounded while it is still in L1. */
#define BLOCKS_STRETCH_FLOATS 4096
#define BLOCKS_STRETCH_PIXELS_ALIGN 24 /* every kernel's MB divides it */
#define BLOCKS_MAX_COLS (1 << 16) /* S * Cout of the last axis */
#define BLOCKS_MAX_WEIGHTS ((int64_t)1 << 26) /* packed floats */
/* Packed weight rows are padded with zero columns to a multiple of this,
 * which every kernel's NV vectors divide. */
#define BLOCKS_COL_ALIGN 64

/* Output columns of an input pixel (S * Cout, last axis) and the packed
 * weights' row. */
static int64_t cols(const dgrad_problem_t *p) {
    return p->S[p->nsp - 1] * p->Cout;
}

static int64_t padded_cols(const dgrad_problem_t *p) {
    return (cols(p) + BLOCKS_COL_ALIGN - 1) / BLOCKS_COL_ALIGN
            * BLOCKS_COL_ALIGN;
}

/* Whether the loop reads and writes the user's 16-bit tensors itself,
 * through f32 rows: an input row (X pixels by Cin) widened once for the
 * S output rows it reaches, and the output row computed, chained and
 * rounded a stretch at a time in scratch. */
static int rows_in_f32(const dgrad_plan_t *plan) {
    return !plan->staged && plan->p.dt != dgrad_f32;
}

/* Phases of the outer axes: the product of their strides. */
static int64_t outer_phases(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->S[i];
    return n;
}

int direct_blocks_applicable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    int l = p->nsp - 1;
    if (p->G != 1 || is[1] != 1 || os[1] != 1 || os[2 + l] != p->Cout
            || p->Cin > BLOCKS_MAX_CHANNELS || p->Cout > BLOCKS_MAX_CHANNELS
            || p->S[l] > BLOCKS_MAX_COLS / p->Cout)
        return 0;
    int64_t phases = 1;
    for (int i = 0; i < p->nsp; i++) {
        if (p->PB[i] != 0 || p->D[i] != 1 || p->K[i] > p->S[i]
                || p->X[i] > INT64_MAX / p->S[i]
                || p->Y[i] != p->X[i] * p->S[i])
            return 0;
        if (i < l) {
            if (p->S[i] > BLOCKS_MAX_WEIGHTS / phases) return 0;
            phases *= p->S[i];
        }
    }
    if (rows_in_f32(plan) && p->X[l] > BLOCKS_MAX_ROW_VALUES / p->Cin)
        return 0;
    return phases * p->Cin <= BLOCKS_MAX_WEIGHTS / padded_cols(p);
}

/* Floats of a thread's scratch before its f32 rows: the bias along a
 * row of columns, and one pixel of a 16-bit post-op operand's values. */
static int64_t row_buffers(const dgrad_problem_t *p) {
    return (padded_cols(p) + p->Cout + 15) / 16 * 16;
}

/* Input pixels of a stretch of output (BLOCKS_STRETCH_FLOATS). */
static int64_t stretch_pixels(const dgrad_problem_t *p) {
    int64_t n = BLOCKS_STRETCH_FLOATS / cols(p);
    if (n >= BLOCKS_STRETCH_PIXELS_ALIGN)
        return n / BLOCKS_STRETCH_PIXELS_ALIGN * BLOCKS_STRETCH_PIXELS_ALIGN;
    return n > 0 ? n : 1;
}

/* Per thread: row_buffers, then where the loop widens rows itself the
 * input row and a stretch of output. */
size_t direct_blocks_thread_scratch(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t n = row_buffers(p);
    if (rows_in_f32(plan))
        n += p->X[l] * p->Cin + stretch_pixels(p) * cols(p);
    return ((size_t)n * sizeof(float) + 63) / 64 * 64;
}

size_t direct_blocks_weights_size(const dgrad_problem_t *p) {
    return (size_t)(outer_phases(p) * p->Cin * padded_cols(p))
            * sizeof(float);
}

/* Weights as f32 [outer phase][Cin][columns b * Cout + co, padded], 0
 * where the phase or b has no tap (K < S) and in the padding. */
void direct_blocks_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t np = padded_cols(p), nc = cols(p);
    for (int64_t ph = 0; ph < outer_phases(p); ph++) {
        int64_t rest = ph, off = 0;
        int reached = 1;
        for (int i = l - 1; i >= 0; i--) {
            int64_t a = rest % p->S[i];
            rest /= p->S[i];
            reached &= a < p->K[i];
            off += a * ws[3 + i];
        }
        for (int64_t ci = 0; ci < p->Cin; ci++) {
            float *row = packed + (ph * p->Cin + ci) * np;
            for (int64_t j = 0; j < np; j++) {
                int64_t b = j / p->Cout, co = j % p->Cout;
                row[j] = reached && j < nc && b < p->K[l]
                        ? (float)dgrad_load(user, p->dt,
                                  off + ci * ws[1] + co * ws[2] + b * ws[3 + l])
                        : 0.0f;
            }
        }
    }
}

/* @p count input pixels (@p in_step elements apart, channels contiguous)
 * times columns [0, @p ncols) of the packed weights @p w (rows @p np
 * apart, @p cin of them) onto the bias row @p brow, the epilogue applied,
 * stored to @p out (pixel m's columns at m * @p pitch): blocks of MB
 * pixels, the last block's missing pixels reading the last one's input
 * and storing nothing; columns NV vectors of W at a time, the lanes of a
 * last partial vector stored by STORE_PART. */
#define DEFINE_BLOCK_KERNEL(NAME, TARGET, VF, VI, W, MB, NV, STORE_PART)      \
    TARGET static void NAME(const float *in, int64_t in_step, int64_t cin,   \
            const float *w, int64_t np, const float *brow, int64_t ncols,     \
            const epilogue_t *epp, float *out, int64_t pitch,                 \
            int64_t count) {                                                  \
        const epilogue_t e_ = *epp, *ep = &e_; /* not reloaded past stores */ \
        for (int64_t x = 0; x < count; x += MB) {                             \
            int mb = count - x < MB ? (int)(count - x) : MB;                  \
            const float *src[MB];                                             \
            _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)             \
                src[m] = in + (x + (m < mb ? m : mb - 1)) * in_step;          \
            for (int64_t j0 = 0; j0 < ncols; j0 += NV * W) {                  \
                VF acc[MB][NV];                                               \
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {        \
                    VF b;                                                     \
                    V_LOAD(b, brow + j0 + v * W);                             \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++)     \
                        acc[m][v] = b;                                        \
                }                                                             \
                const float *wr = w + j0;                                     \
                for (int64_t c = 0; c < cin; c++, wr += np) {                 \
                    VF wv[NV];                                                \
                    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)      \
                        V_LOAD(wv[v], wr + v * W);                            \
                    _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++) {   \
                        /* x - 0 is x exactly (x + 0 is not, for -0): GCC     \
                         * broadcasts straight from memory, no add first */   \
                        VF xv = src[m][c] - (VF){0};                          \
                        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)  \
                            acc[m][v] += xv * wv[v];                          \
                    }                                                         \
                }                                                             \
                _Pragma("GCC unroll 16") for (int m = 0; m < MB; m++) {       \
                    float *d = out + (x + m) * pitch;                         \
                    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {    \
                        int64_t j = j0 + v * W;                               \
                        if (m >= mb || j >= ncols) continue;                  \
                        VF r = acc[m][v];                                     \
                        if (ep->on) V_EPILOGUE(VF, VI, ep, r);                \
                        if (j + W <= ncols)                                   \
                            V_STORE(d + j, r);                                \
                        else                                                  \
                            STORE_PART(d + j, r, ncols - j);                  \
                    }                                                         \
                }                                                             \
            }                                                                 \
        }                                                                     \
    }

/* The first @p n (< W) lanes of @p v to @p d: lane by lane at constant
 * lane numbers, or in one masked store with AVX-512. (Through a stack
 * copy of the vector instead, GCC 12 keeps every accumulator of an AVX2
 * kernel on the stack: half its registers unused, 2.3x slower.) */
#define STORE_LANES(W, d, v, n)                                               \
    do {                                                                      \
        float *d_ = (d);                                                      \
        int64_t n_ = (n);                                                     \
        _Pragma("GCC unroll 16") for (int l_ = 0; l_ < W; l_++)               \
            if (l_ < n_) d_[l_] = (v)[l_];                                    \
    } while (0)
#define STORE_PART_V4(d, v, n) STORE_LANES(4, d, v, n)
#define STORE_PART_V8(d, v, n) STORE_LANES(8, d, v, n)
#define STORE_PART_V16(d, v, n)                                               \
    _mm512_mask_storeu_ps((d), (__mmask16)((1u << (n)) - 1u), (__m512)(v))

/* Per target, kernels of 1 to NV_MAX vectors of columns (a row takes
 * chunks of NV_MAX, then one kernel for what is left): MB x NV
 * accumulators within its registers (32 for AVX-512, 16 for AVX2 and the
 * baseline), with NV weight vectors and a broadcast beside them. */
#define NV_MAX 4
#if defined(__x86_64__) && defined(__GNUC__)
#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))
DEFINE_BLOCK_KERNEL(block_avx512_4, AVX512, v16f, v16i, 16, 6, 4,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx512_3, AVX512, v16f, v16i, 16, 8, 3,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx512_2, AVX512, v16f, v16i, 16, 12, 2,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx512_1, AVX512, v16f, v16i, 16, 12, 1,
        STORE_PART_V16)
DEFINE_BLOCK_KERNEL(block_avx2_2, AVX2, v8f, v8i, 8, 6, 2, STORE_PART_V8)
DEFINE_BLOCK_KERNEL(block_avx2_1, AVX2, v8f, v8i, 8, 8, 1, STORE_PART_V8)
#endif
DEFINE_BLOCK_KERNEL(block_portable_2, , v4f, v4i, 4, 6, 2, STORE_PART_V4)
DEFINE_BLOCK_KERNEL(block_portable_1, , v4f, v4i, 4, 8, 1, STORE_PART_V4)

typedef void (*block_fn)(const float *, int64_t, int64_t, const float *,
        int64_t, const float *, int64_t, const epilogue_t *, float *, int64_t,
        int64_t);

/* A kernel set: kernel nv - 1 takes nv vectors of W columns at once. */
typedef struct block_kernels {
    block_fn of[NV_MAX];
    int nv_max;
    int64_t w;
} block_kernels_t;

/* The widest the CPU runs (cpu.c), or AVX2's where the plan says so. */
static block_kernels_t kernels_for_plan(const dgrad_plan_t *plan) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (cpu_has_avx512f() && !plan->direct_avx2)
        return (block_kernels_t){{block_avx512_1, block_avx512_2,
                                         block_avx512_3, block_avx512_4},
                4, 16};
    if (cpu_has_avx2_fma())
        return (block_kernels_t){{block_avx2_1, block_avx2_2}, 2, 8};
#endif
    (void)plan;
    return (block_kernels_t){{block_portable_1, block_portable_2}, 2, 4};
}

typedef struct blocks_args {
    const dgrad_plan_t *plan;
    block_kernels_t k;
    const char *in; /* the user's type, or f32 where the plan stages */
    const float *w, *bias;
    const void *const *operands;
    char *out;
    size_t esize; /* bytes of an element of in and out */
} blocks_args_t;

/* Input row @p in_off (elements) of a 16-bit tensor widened into
 * @p row: X pixels of Cin channels, contiguous. */
static void widen_input_row(const blocks_args_t *a, int64_t in_off,
        float *row) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t step = a->plan->in.io_strides[2 + l];
    const char *src = a->in + (size_t)in_off * a->esize;
    if (step == p->Cin) {
        convert_run_to_f32(p->dt, src, row, p->X[l] * p->Cin);
        return;
    }
    for (int64_t x = 0; x < p->X[l]; x++)
        convert_run_to_f32(p->dt, src + (size_t)(x * step) * a->esize,
                row + x * p->Cin, p->Cin);
}

/* What the row functions share for one output row. */
typedef struct row_work {
    const float *w; /* the phase's packed weights */
    const float *brow; /* the bias along the columns */
    int64_t cin; /* input channels reaching the row (0 or Cin) */
    epilogue_t ep;
    int from; /* the chain's first step left after the epilogue */
    int64_t idx[2 + DGRAD_MAX_SPATIAL]; /* the row's first output pixel */
    float *tmp; /* a pixel of a 16-bit post-op operand */
} row_work_t;

/* @p count input pixels of @p src (@p in_step apart) into their S output
 * pixels each at @p dst (C apart), the chain applied: the columns the
 * wide kernel fills, then the rest a vector at a time; then the rest of
 * the chain on each output pixel, from output pixel @p y0 of the row on,
 * while they are in cache. */
static void blocks_pixels(const blocks_args_t *a, const row_work_t *r,
        const float *src, int64_t in_step, float *dst, int64_t y0,
        int64_t count) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t nc = cols(p), np = padded_cols(p);
    int64_t chunk = a->k.nv_max * a->k.w, whole = nc / chunk * chunk;
    if (whole)
        a->k.of[a->k.nv_max - 1](src, in_step, r->cin, r->w, np, r->brow,
                whole, &r->ep, dst, nc, count);
    if (whole < nc)
        a->k.of[(nc - whole + a->k.w - 1) / a->k.w - 1](src, in_step,
                r->cin, r->w + whole, np, r->brow + whole, nc - whole, &r->ep,
                dst + whole, nc, count);
    if (!a->plan->post.fused || r->from >= p->n_post_ops) return;
    int64_t idx[2 + DGRAD_MAX_SPATIAL];
    memcpy(idx, r->idx, sizeof idx);
    for (int64_t k = 0; k < count * p->S[l]; k++) {
        idx[2 + l] = y0 + k;
        post_chain_run(p, a->operands, r->from, idx, 1, p->Cout,
                dst + k * p->Cout, r->tmp);
    }
}

/* One output row (image @p n, outer output position @p y) over all the
 * row's input pixels, the bias row already at the start of @p scratch. A
 * row of an outer phase no tap reaches (K < S) gets the bias (then the
 * chain) like any other. Output pixels are Cout apart
 * (direct_blocks_applicable). Where the loop widens rows itself
 * (rows_in_f32), @p widened is the input row the scratch holds (-1:
 * none), and the output is computed into scratch a stretch at a time and
 * rounded into the user's. */
static void blocks_row(const blocks_args_t *a, int64_t n, const int64_t *y,
        char *scratch, int64_t *widened) {
    const dgrad_plan_t *plan = a->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    int l = p->nsp - 1;
    int64_t nc = cols(p), np = padded_cols(p);
    float *brow = (float *)scratch;
    row_work_t r = {.brow = brow, .cin = p->Cin, .idx = {n},
            .tmp = brow + np};
    int64_t in_off = n * is[0], out_off = n * os[0], ph = 0;
    for (int i = 0; i < l; i++) {
        int64_t q = y[i] / p->S[i], rem = y[i] % p->S[i];
        in_off += q * is[2 + i];
        out_off += y[i] * os[2 + i];
        ph = ph * p->S[i] + rem;
        if (rem >= p->K[i]) r.cin = 0;
        r.idx[2 + i] = y[i];
    }
    r.w = a->w + ph * p->Cin * np;
    if (plan->post.fused) r.from = post_chain_epilogue(p, &r.ep);
    if (!rows_in_f32(plan)) {
        blocks_pixels(a, &r, (const float *)a->in + in_off, is[2 + l],
                (float *)a->out + out_off, 0, p->X[l]);
        return;
    }
    float *in_row = brow + row_buffers(p), *stretch = in_row + p->X[l] * p->Cin;
    if (r.cin && *widened != in_off) {
        widen_input_row(a, in_off, in_row);
        *widened = in_off;
    }
    int64_t step = stretch_pixels(p);
    for (int64_t x = 0; x < p->X[l]; x += step) {
        int64_t count = p->X[l] - x < step ? p->X[l] - x : step;
        blocks_pixels(a, &r, in_row + x * p->Cin, p->Cin, stretch,
                x * p->S[l], count);
        convert_run_from_f32(p->dt, stretch,
                a->out + (size_t)(out_off + x * nc) * a->esize, count * nc);
    }
}

/* The rows of direct_blocks_run: @p n the image, @p y the outer position
 * and the @p run - 1 after it on the last outer axis (rows of the same
 * input row one after the other: it is widened once for them). */
static void blocks_row_of(void *arg, int64_t n, const int64_t *y,
        int64_t run, char *scratch) {
    const blocks_args_t *a = arg;
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t at[DGRAD_MAX_SPATIAL], widened = -1, nc = cols(p), C = p->Cout;
    /* the bias along a row's columns, the same for every row */
    float *brow = (float *)scratch;
    for (int64_t j = 0, co = 0; j < padded_cols(p);
            j++, co = co + 1 == C ? 0 : co + 1)
        brow[j] = a->bias && j < nc ? a->bias[co] : 0.0f;
    for (int i = 0; i < l; i++) at[i] = y[i];
    for (int64_t k = 0; k < run; k++) {
        if (k) at[l - 1]++; /* runs are longer than 1 only where l >= 1 */
        blocks_row(a, n, at, scratch, &widened);
    }
}

/* The whole output: rows (image, outer output positions) shared out over
 * the OpenMP threads, each with its own scratch. */
void direct_blocks_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, const void *const *operands,
        void *out, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t outer = 1;
    for (int i = 0; i < l; i++) outer *= p->Y[i];
    int64_t rows = p->N * outer;
    blocks_args_t args = {plan, kernels_for_plan(plan), in, w, bias,
            operands, out,
            rows_in_f32(plan) ? dgrad_data_type_size(p->dt) : sizeof(float)};
    direct_for_rows(plan, rows, 0,
            (double)rows * (double)p->X[l] * (double)cols(p)
                    * (double)p->Cin,
            direct_blocks_thread_scratch(plan), scratch, blocks_row_of, &args);
}
