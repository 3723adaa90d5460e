/*
 * dgrad's own loop for transposed convolutions of one group (or up to
 * BLOCKS_MAX_GROUPS, as one with block-diagonal weights) without
 * dilation, on channels-last or NCX activations, in f32, bf16 or f16: the
 * up-sampling layers of U-Net, ESPNet and ENet (k2s2, k3s2), FCN-8s's
 * k4s2 and k16s8 at 21 classes, HiFi-GAN's k16s8. 16-bit types go through
 * f32 copies of whole tensors (plan->staged) or, where windows do not
 * overlap on channels-last, row by row through f32 rows in the thread's
 * scratch: timing picks. Groups of few channels, 4 and more, run in the
 * lanes form with AVX-512 (lanes_form: the input's channels permuted
 * into each group's lanes), else as block-diagonal weights (G times the
 * FMAs). The specification's grouped 2D example in NXC: oneDNN jit 1.14
 * ms, block-diagonal 0.89 (bench/README.md, sixteenth look), lanes
 * 0.62-0.68; deconv_ci_3d:grouped (4 x 4 channels, 5^3, k3s1) 50-88 ->
 * 11-12 us with constant weights (seventeenth look).
 *
 * Along the last axis, block x of an output row is the S output pixels
 * of natural positions S*x .. S*x + S - 1, contiguous in channels-last:
 * its S*Cout values are
 *   out[S*x + b][co] = bias[co] + sum over outer taps u reaching the
 *       row, taps t < ceil(K/S) of the last axis, and ci of
 *       in[row of u][x - t][ci] * w[ci][co][outer position of u, b + S*t]
 * (no term where b + S*t >= K): the sum of ceil(K/S) * (outer taps)
 * products of an input row (pixels by Cin), shifted by t, and a packed
 * weight matrix (Cin by S*Cout). Where windows do not overlap (K <= S,
 * no padding, output S times the input) it is one product. oneDNN runs
 * these as a backward-data convolution (gemm; jit on blocked copies of
 * few-channel tensors), or folded into a forward convolution whose S^d
 * phases go to a scratch tensor and are copied out from there. On
 * ESPNet's 20-channel decoder layers in NXC, raw gemm takes 1.6-1.8x
 * this loop's time, and the fold from as fast to 2.5x, with the
 * machine's load (bench/README.md, eleventh look); on FCN-8s's upscore8,
 * raw gemm 2.8x and the best oneDNN plan 2.4x (sixteenth look). Here
 * blocks of MB input pixels times NV vectors of output columns
 * accumulate in registers over the terms and input channels (per
 * channel one broadcast per pixel, one weight load per vector), take the
 * bias first and a leading ReLU or Clamp of the chain last, and go
 * straight to the output: each output element is written once, row by
 * row (image, outer output position), the rows shared out over the
 * threads. Blocks at a row's ends whose taps or columns the input or
 * the output cut (padding, output padding, K > S) run one at a time, on
 * the columns and terms they have. The kernels are one source for every
 * CPU (direct_blocks_kernels.c: GCC's vector extension, compiled for
 * AVX-512, AVX2 and the baseline). The loop is chosen only where timing
 * finds it faster (timing.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "direct_blocks_kernels.h"
#include "dtype.h"

/* Limits that keep the packed weights, a row's term list and its
 * buffers small. */
#define BLOCKS_MAX_CHANNELS (1 << 16)
/* Groups run as one dense problem whose packed weights are zero off the
 * diagonal blocks: G times the FMAs, for few groups of few channels
 * (oneDNN's kernels fill a vector with one group's channels there). */
#define BLOCKS_MAX_GROUPS 8
#define BLOCKS_MAX_TERMS 64 /* (outer taps) x (taps of the last axis) */
/* f32 rows in scratch: a 16-bit input row, an output row of a layout
 * not channels-last */
#define BLOCKS_MAX_ROW_VALUES ((int64_t)1 << 20)
/* Where the loop rounds f32 values into a 16-bit output itself, it does
 * so for a stretch of an output row at a time, of at most this many
 * floats (or one input pixel's columns, if more) and whole pixel blocks:
 * a stretch is rounded while it is still in L1. */
#define BLOCKS_STRETCH_FLOATS 4096
#define BLOCKS_STRETCH_PIXELS_ALIGN 24 /* every kernel's MB divides it */
#define BLOCKS_MAX_COLS (1 << 16) /* S * Cout of the last axis */
#define BLOCKS_MAX_WEIGHTS ((int64_t)1 << 26) /* packed floats */
/* Packed weight rows are padded with zero columns to a multiple of this
 * (a cache line), which every kernel's vector width divides: a call
 * reads its columns in chunks of NV_MAX vectors, then the rest in as
 * few vectors as cover it. Padding to 64 columns instead made
 * deconv_ci_3d:grouped's 16 columns pack and hold 4x the floats. */
#define BLOCKS_COL_ALIGN 16
/* Floats the kernels may read past a row's last column (a partial block
 * at the end of an output row starts mid-vector): slack after the packed
 * weights and the bias row. */
#define BLOCKS_READ_SLACK 16

/* Output columns of an input pixel (S * Cout, last axis) and the packed
 * weights' row. */
static int64_t cols(const dgrad_problem_t *p) {
    return p->S[p->nsp - 1] * p->Cout;
}

static int64_t padded_cols(const dgrad_problem_t *p) {
    return (cols(p) + BLOCKS_COL_ALIGN - 1) / BLOCKS_COL_ALIGN
            * BLOCKS_COL_ALIGN;
}

/* Floor division and its remainder (natural positions before the
 * output's first are negative where the padding is). */
static int64_t div_floor(int64_t a, int64_t b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Taps of axis @p i that one phase can have: ceil(K / S). */
static int64_t axis_taps(const dgrad_problem_t *p, int i) {
    return (p->K[i] + p->S[i] - 1) / p->S[i];
}

/* Combinations of taps of the outer axes that one outer phase can have,
 * and terms (input pixel offset and weights) of a block at most. */
static int64_t outer_taps(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= axis_taps(p, i);
    return n;
}

/* Whether every output block is the product of one input pixel: one tap
 * per phase on every axis, no padding, an output S times the input. */
static int windows_disjoint(const dgrad_problem_t *p) {
    for (int i = 0; i < p->nsp; i++)
        if (p->K[i] > p->S[i] || p->PB[i] != 0
                || p->Y[i] != p->X[i] * p->S[i])
            return 0;
    return 1;
}

/* Whether the loop reads and writes the user's 16-bit tensors itself,
 * through f32 rows: an input row (X pixels by Cin) widened once for the
 * S output rows it reaches, and the output row computed, chained and
 * rounded a stretch at a time in scratch. */
static int rows_in_f32(const dgrad_plan_t *plan) {
    return !plan->staged && plan->p.dt != dgrad_f32;
}

/* Whether output pixels along the last axis are Cout contiguous
 * channels apart (channels-last): blocks are stored straight into it;
 * other layouts (NCX) get each row through a channels-last row in
 * scratch, stored channel by channel (store_row). */
static int output_cl(const dgrad_plan_t *plan) {
    const int64_t *os = plan->out.io_strides;
    return os[1] == 1 && os[2 + plan->p.nsp - 1] == plan->p.Cout;
}

/* Phases of the outer axes: the product of their strides. */
static int64_t outer_phases(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->S[i];
    return n;
}

/* The lanes form's limits: input channels per group (the rows of its
 * permutation table), input channels in all (two vectors of a pixel). */
#define LANES_MAX_GROUP_CHANNELS 8
#define LANES_MAX_CIN 32
/* At 2 groups the permutations cost what the block diagonal's FMAs
 * did: g2mb1ic16ih56iw56oc16oh112ow112kh3kw3sh2sw2ph1pw1 82 -> 90 us,
 * and at 4 and 8 groups the lanes form gains 1.4x and 2.2x (k2s2, k3s2
 * on 56x56 NXC, `DGRAD_OWN_LOOP=blocks DGRAD_OWN_KERNELS=widest dgrad
 * bench --no-raw`, Sapphire Rapids VM). */
#define LANES_MIN_GROUPS 4
/* Calls of at most this many blocks take the kernels of 4 pixels: a
 * row of 5 pixels (3 interior blocks) otherwise runs 8 pixels' FMAs. */
#define LANES_SHORT_BLOCKS 4

/* Whether groups run in the lanes form (AVX-512 only): each vector of
 * output columns holds several groups' channels, and input channel i of
 * every group reaches its lanes through one permutation of the input
 * pixel's channels (two vectors at most), so a term costs Cin / G
 * permutations and FMAs per pixel where block-diagonal weights cost Cin
 * FMAs. Every vector of columns has the same lane pattern: S * Cout
 * within one vector, or Cout dividing 16 (columns start at a pixel's
 * first; either way Cout / G <= 4). The input's channels are contiguous
 * (read as vectors). */
static int lanes_form(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
#if defined(__x86_64__) && defined(__GNUC__)
    return p->G >= LANES_MIN_GROUPS && cpu_has_avx512f() && !plan->direct_avx2
            && p->Cin / p->G <= LANES_MAX_GROUP_CHANNELS
            && p->Cin <= LANES_MAX_CIN
            && (cols(p) <= 16 || 16 % p->Cout == 0)
            && (rows_in_f32(plan) || plan->in.io_strides[1] == 1);
#else
    (void)p;
    return 0;
#endif
}

int direct_blocks_lanes(const dgrad_plan_t *plan) {
    return plan->direct == DIRECT_BLOCKS_CL && lanes_form(plan);
}

/* Packed weight rows per term: every input channel (block-diagonal
 * weights), or in the lanes form one per channel of a group. */
static int64_t term_rows(const dgrad_plan_t *plan) {
    return lanes_form(plan) ? plan->p.Cin / plan->p.G : plan->p.Cin;
}

int direct_blocks_applicable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    int l = p->nsp - 1;
    if (p->G > BLOCKS_MAX_GROUPS || p->Cin > BLOCKS_MAX_CHANNELS
            || p->Cout > BLOCKS_MAX_CHANNELS
            || p->S[l] > BLOCKS_MAX_COLS / p->Cout
            || (!output_cl(plan) && p->Y[l] > BLOCKS_MAX_ROW_VALUES / p->Cout))
        return 0;
    int64_t phases = 1, terms = 1;
    for (int i = 0; i < p->nsp; i++) {
        if (p->D[i] != 1 || p->X[i] > INT64_MAX / 4 / p->S[i]
                || p->Y[i] > INT64_MAX / 4 || p->PB[i] > INT64_MAX / 4
                || p->PB[i] < -(INT64_MAX / 4))
            return 0;
        terms *= axis_taps(p, i);
        if (terms > BLOCKS_MAX_TERMS) return 0;
        if (i < l) {
            if (p->S[i] > BLOCKS_MAX_WEIGHTS / phases) return 0;
            phases *= p->S[i];
        }
    }
    /* rows widened in f32 hold one channels-last input row, and are
     * rounded into a channels-last output: windows that overlap and other
     * layouts go through f32 copies of the whole tensors (plan->staged) */
    if (rows_in_f32(plan)
            && (!windows_disjoint(p) || is[1] != 1 || !output_cl(plan)
                    || p->X[l] > BLOCKS_MAX_ROW_VALUES / p->Cin))
        return 0;
    return phases * terms * p->Cin <= BLOCKS_MAX_WEIGHTS / padded_cols(p);
}

/* Floats of a thread's scratch before its f32 rows: the bias along a
 * row of columns (and the kernels' slack past it), and one pixel of a
 * 16-bit post-op operand's values. */
static int64_t row_buffers(const dgrad_problem_t *p) {
    return (padded_cols(p) + BLOCKS_READ_SLACK + p->Cout + 15) / 16 * 16;
}

/* Input pixels of a stretch of output (BLOCKS_STRETCH_FLOATS). */
static int64_t stretch_pixels(const dgrad_problem_t *p) {
    int64_t n = BLOCKS_STRETCH_FLOATS / cols(p);
    if (n >= BLOCKS_STRETCH_PIXELS_ALIGN)
        return n / BLOCKS_STRETCH_PIXELS_ALIGN * BLOCKS_STRETCH_PIXELS_ALIGN;
    return n > 0 ? n : 1;
}

/* Per thread: row_buffers, then where the loop widens rows itself the
 * input row and a stretch of output, where the output is not
 * channels-last a channels-last output row. */
size_t direct_blocks_thread_scratch(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t n = row_buffers(p);
    if (rows_in_f32(plan))
        n += p->X[l] * p->Cin + stretch_pixels(p) * cols(p);
    else if (!output_cl(plan))
        n += p->Y[l] * p->Cout;
    return ((size_t)n * sizeof(float) + 63) / 64 * 64;
}

size_t direct_blocks_weights_size(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    return (size_t)(outer_phases(p) * outer_taps(p) * axis_taps(p, l)
                           * term_rows(plan) * padded_cols(p)
                   + BLOCKS_READ_SLACK)
            * sizeof(float);
}

/* @p n weights from element @p i of @p user on, @p step apart, as f32
 * into @p dst (weights may vary on every execution: the f32 copy is a
 * plain strided one). */
static void weights_run(const void *user, dgrad_data_type_t dt, int64_t i,
        int64_t step, int64_t n, float *dst) {
    if (dt == dgrad_f32) {
        const float *src = (const float *)user + i;
        for (int64_t j = 0; j < n; j++) dst[j] = src[j * step];
        return;
    }
    for (int64_t j = 0; j < n; j++)
        dst[j] = (float)dgrad_load(user, dt, i + j * step);
}

/* Rows (of padded_cols floats) of the packed weights. */
static int64_t packed_rows(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    return outer_phases(p) * outer_taps(p) * axis_taps(p, p->nsp - 1)
            * term_rows(plan);
}

/* Packed rows [@p r0, @p r1) of direct_blocks_pack_weights, and the
 * zeros after them where @p r1 is the last. */
static void pack_rows(const dgrad_plan_t *plan, const void *user,
        float *packed, int64_t r0, int64_t r1) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *ws = p->wei_strides;
    int l = p->nsp - 1;
    int64_t np = padded_cols(p), nc = cols(p), T = axis_taps(p, l);
    int64_t ot = outer_taps(p), C = p->Cout, cig = p->Cin / p->G,
            cog = p->Cout / p->G, R = term_rows(plan);
    int lanes = lanes_form(plan);
    float *row = packed + r0 * np;
    /* row r is (ph, u, t, ci), ci fastest: counted, not divided (the
     * divisions took most of deconv_ci_3d:grouped's packing); the outer
     * kernel offset is decoded where (ph, u) changes */
    int64_t ci = r0 % R, t = r0 / R % T, u = r0 / R / T % ot,
            ph = r0 / R / T / ot, off = 0;
    int reached = 0, decoded = 0;
    for (int64_t r = r0; r < r1; r++, row += np) {
        if (!decoded) {
            int64_t rest = ph, urest = u;
            off = 0;
            reached = 1;
            for (int i = l - 1; i >= 0; i--) {
                int64_t k = rest % p->S[i]
                        + p->S[i] * (urest % axis_taps(p, i));
                rest /= p->S[i];
                urest /= axis_taps(p, i);
                reached &= k < p->K[i];
                off += k * ws[3 + i];
            }
            decoded = 1;
        }
        /* block-diagonal: input channel ci of group g reaches that
         * group's columns; lanes: row ci is channel ci of every group */
        int64_t g0 = lanes ? 0 : ci / cig, g1 = lanes ? p->G : g0 + 1,
                i = lanes ? ci : ci - g0 * cig;
        for (int64_t b = 0; b < p->S[l]; b++) {
            int64_t k = b + p->S[l] * t;
            memset(row + b * C, 0, (size_t)C * sizeof(float));
            if (!reached || k >= p->K[l]) continue;
            for (int64_t g = g0; g < g1; g++)
                weights_run(user, p->dt,
                        off + g * ws[0] + i * ws[1] + k * ws[3 + l], ws[2],
                        cog, row + b * C + g * cog);
        }
        memset(row + nc, 0, (size_t)(np - nc) * sizeof(float));
        if (++ci < R) continue;
        ci = 0;
        if (++t < T) continue;
        t = 0;
        decoded = 0;
        if (++u == ot) u = 0, ph++;
    }
    if (r1 == packed_rows(plan))
        memset(row, 0, BLOCKS_READ_SLACK * sizeof(float));
}

/* Weights as f32 [outer phase][outer taps][tap t of the last axis][Cin]
 * [columns b * Cout + co, padded], then BLOCKS_READ_SLACK zeros: column
 * b of tap t holds kernel position b + S * t of the last axis, and outer
 * tap combination u of phase a holds positions a + S * u; 0 where that
 * passes the kernel, off the group of the row's input channel, and in
 * the padding. */
void direct_blocks_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed) {
    pack_rows(plan, user, packed, 0, packed_rows(plan));
}

typedef struct blocks_args {
    const dgrad_plan_t *plan;
    block_kernels_t k;
    const char *in; /* the user's type, or f32 where the plan stages */
    const float *w, *bias;
    const void *const *operands;
    char *out;
    size_t esize; /* bytes of an element of in and out */
    const void *user_w; /* the user's weights, packed first into */
    float *pack_into;   /* this (w), or NULL: w is packed */
    int64_t rows;       /* packed rows per term (term_rows) */
    int lanes;          /* lanes_form, with its permutation per row: */
    int32_t pattern[LANES_MAX_GROUP_CHANNELS][16];
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

/* What the row functions share for one output row: its terms, each an
 * input row (an element offset, of pixel 0) and the packed weights of
 * its outer taps (tap 0 of the last axis; tap t follows t * Cin rows on). */
typedef struct row_work {
    int64_t nterms, c_step; /* c_step: input channels apart */
    int64_t in_off[BLOCKS_MAX_TERMS];
    const float *w[BLOCKS_MAX_TERMS];
    const float *brow; /* the bias along the columns */
    epilogue_t ep;
    int from; /* the chain's first step left after the epilogue */
    int64_t idx[2 + DGRAD_MAX_SPATIAL]; /* the row's first output pixel */
    float *tmp; /* a pixel of a 16-bit post-op operand */
} row_work_t;

/* @p count blocks of the last axis from block @p x on (the S output
 * pixels that input pixel x reaches with tap 0), columns [@p c0, @p c1)
 * of each, of input @p in (pixels @p in_step apart) into @p out (output
 * pixel o at (o - @p o_base) * Cout), the chain applied: for each term
 * and tap t of the last axis whose input pixels x - t .. x + count - 1 -
 * t are all in the row, a term of the kernels; the columns the wide
 * kernel fills, then the rest a vector at a time; then the rest of the
 * chain on each output pixel while they are in cache. A call of several
 * blocks has every column (blocks_span). */
static void blocks_pixels(const blocks_args_t *a, const row_work_t *r,
        const float *in, int64_t in_step, float *out, int64_t o_base,
        int64_t x, int64_t count, int64_t c0, int64_t c1) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t nc = cols(p), np = padded_cols(p), T = axis_taps(p, l);
    const float *src[BLOCKS_MAX_TERMS], *w[BLOCKS_MAX_TERMS];
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++) {
        if (x - t < 0 || x + count - 1 - t >= p->X[l]) continue;
        for (int64_t u = 0; u < r->nterms; u++) {
            src[n] = in + r->in_off[u] + (x - t) * in_step;
            w[n++] = r->w[u] + t * a->rows * np;
        }
    }
    int64_t o0 = x * p->S[l] - p->PB[l]; /* output pixel of column 0 */
    float *dst = out + ((o0 - o_base) * p->Cout + c0);
    int64_t chunk = a->k.nv_max * a->k.w, ncols = c1 - c0;
    int64_t whole = ncols / chunk * chunk;
    if (a->lanes) {
        int two = p->Cin > 16;
        const lanes_fn *of = count == 1 ? a->k.lanes_single[two]
                : count <= LANES_SHORT_BLOCKS ? a->k.lanes_short[two]
                                              : a->k.lanes_of[two];
        if (whole)
            of[a->k.nv_max - 1](src, n, in_step, p->Cin, a->rows,
                    &a->pattern[0][0], w, np, c0, r->brow, whole, &r->ep,
                    dst, nc, count);
        if (whole < ncols)
            of[(ncols - whole + a->k.w - 1) / a->k.w - 1](src, n, in_step,
                    p->Cin, a->rows, &a->pattern[0][0], w, np, c0 + whole,
                    r->brow, ncols - whole, &r->ep, dst + whole, nc, count);
    } else {
        const block_fn *of = count > 1 ? a->k.of : a->k.single;
        if (whole)
            of[a->k.nv_max - 1](src, n, in_step, r->c_step, p->Cin, w, np,
                    c0, r->brow, whole, &r->ep, dst, nc, count);
        if (whole < ncols)
            of[(ncols - whole + a->k.w - 1) / a->k.w - 1](src, n, in_step,
                    r->c_step, p->Cin, w, np, c0 + whole, r->brow,
                    ncols - whole, &r->ep, dst + whole, nc, count);
    }
    if (!a->plan->post.fused || r->from >= p->n_post_ops) return;
    int64_t idx[2 + DGRAD_MAX_SPATIAL];
    memcpy(idx, r->idx, sizeof idx);
    int64_t first = o0 + c0 / p->Cout,
            pixels = count > 1 ? count * p->S[l] : ncols / p->Cout;
    for (int64_t k = 0; k < pixels; k++) {
        idx[2 + l] = first + k;
        post_chain_run(p, a->operands, r->from, idx, 1, p->Cout,
                out + (first + k - o_base) * p->Cout, r->tmp);
    }
}

/* Blocks [@p x0, @p x1] of a row: those whose columns are all in the
 * output and whose taps all reach input pixels in one call, the others
 * (at the row's ends) one by one with the columns and taps they have. */
static void blocks_span(const blocks_args_t *a, const row_work_t *r,
        const float *in, int64_t in_step, float *out_row, int64_t x0,
        int64_t x1) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t S = p->S[l], PB = p->PB[l], C = p->Cout;
    int64_t lo = -div_floor(-PB, S), hi = div_floor(p->Y[l] + PB, S) - 1;
    if (lo < axis_taps(p, l) - 1) lo = axis_taps(p, l) - 1;
    if (hi > p->X[l] - 1) hi = p->X[l] - 1;
    for (int64_t x = x0; x <= x1; x++) {
        if (x >= lo && x <= hi) {
            int64_t end = hi < x1 ? hi : x1;
            blocks_pixels(a, r, in, in_step, out_row, 0, x, end - x + 1, 0,
                    S * C);
            x = end;
            continue;
        }
        int64_t b0 = PB - S * x, b1 = p->Y[l] + PB - S * x;
        if (b0 < 0) b0 = 0;
        if (b1 > S) b1 = S;
        blocks_pixels(a, r, in, in_step, out_row, 0, x, 1, b0 * C, b1 * C);
    }
}

/* An output row computed channels-last in @p row (Y pixels of Cout) into
 * the output at @p out (its first pixel), channel by channel: 16 pixels
 * of a channel gathered at a time with AVX-512, else one by one (the row
 * is in L1 or L2; the user's rows are written in order). */
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx512f"))) static void store_row_avx512(
        const float *row, int64_t pixels, int64_t C, float *out,
        int64_t c_stride) {
    __m512i idx = _mm512_mullo_epi32(_mm512_set1_epi32((int)C),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                    14, 15));
    for (int64_t co = 0; co < C; co++) {
        const float *src = row + co;
        float *dst = out + co * c_stride;
        int64_t y = 0;
        for (; y + 16 <= pixels; y += 16)
            _mm512_storeu_ps(dst + y,
                    _mm512_i32gather_ps(idx, src + y * C, 4));
        if (y < pixels) {
            __mmask16 m = (__mmask16)((1u << (pixels - y)) - 1u);
            _mm512_mask_storeu_ps(dst + y, m,
                    _mm512_mask_i32gather_ps(_mm512_setzero_ps(), m, idx,
                            src + y * C, 4));
        }
    }
}
#endif

static void store_row(const blocks_args_t *a, const float *row, float *out) {
    const dgrad_problem_t *p = &a->plan->p;
    const int64_t *os = a->plan->out.io_strides;
    int l = p->nsp - 1;
    int64_t C = p->Cout, Y = p->Y[l];
#if defined(__x86_64__) && defined(__GNUC__)
    /* gather indices are 32-bit: Y * C < 2^31 (BLOCKS_MAX_ROW_VALUES) */
    if (os[2 + l] == 1 && cpu_has_avx512f() && !a->plan->direct_avx2) {
        store_row_avx512(row, Y, C, out, os[1]);
        return;
    }
#endif
    for (int64_t co = 0; co < C; co++)
        for (int64_t y = 0; y < Y; y++)
            out[co * os[1] + y * os[2 + l]] = row[y * C + co];
}

/* One output row (image @p n, outer output position @p y), the bias row
 * already at the start of @p scratch. Its terms are the combinations of
 * outer taps whose input rows are in the input; a row none reaches (K <
 * S, or padding) gets the bias (then the chain) like any other. The
 * blocks go straight into a channels-last output, else into a
 * channels-last row in scratch that store_row then writes. Where the
 * loop widens rows itself (rows_in_f32: windows that do not overlap,
 * one term), @p widened is the input row the scratch holds (-1: none),
 * and the output is computed into scratch a stretch at a time and
 * rounded into the user's. */
static void blocks_row(const blocks_args_t *a, int64_t n, const int64_t *y,
        char *scratch, int64_t *widened) {
    const dgrad_plan_t *plan = a->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides, *os = plan->out.io_strides;
    int l = p->nsp - 1;
    int64_t nc = cols(p), np = padded_cols(p), ot = outer_taps(p);
    float *brow = (float *)scratch;
    /* the term arrays are filled up to nterms, not zeroed (1 KiB a row) */
    row_work_t r;
    r.nterms = 0;
    r.brow = brow;
    r.ep = (epilogue_t){0};
    r.from = 0;
    memset(r.idx, 0, sizeof r.idx);
    r.idx[0] = n;
    r.tmp = brow + np + BLOCKS_READ_SLACK;
    int64_t in_off = n * is[0], out_off = n * os[0], ph = 0;
    /* per outer axis: the input position of tap 0, the phase, the taps
     * and the tap of the combination u (an odometer, the last axis
     * fastest: a row's terms cost no divisions, which took a third of
     * deconv_ci_3d:grouped's time) */
    int64_t q[DGRAD_MAX_SPATIAL], phase[DGRAD_MAX_SPATIAL],
            taps[DGRAD_MAX_SPATIAL], ta[DGRAD_MAX_SPATIAL];
    for (int i = 0; i < l; i++) {
        int64_t nat = y[i] + p->PB[i];
        q[i] = div_floor(nat, p->S[i]);
        phase[i] = nat - q[i] * p->S[i];
        taps[i] = axis_taps(p, i);
        ta[i] = 0;
        out_off += y[i] * os[2 + i];
        ph = ph * p->S[i] + phase[i];
        r.idx[2 + i] = y[i];
    }
    const float *wu = a->w + ph * ot * axis_taps(p, l) * a->rows * np;
    for (int64_t u = 0; u < ot; u++, wu += axis_taps(p, l) * a->rows * np) {
        int64_t off = in_off;
        int reached = 1;
        for (int i = 0; i < l; i++) {
            int64_t xi = q[i] - ta[i];
            reached &= phase[i] + p->S[i] * ta[i] < p->K[i] && xi >= 0
                    && xi < p->X[i];
            off += xi * is[2 + i];
        }
        for (int i = l - 1; i >= 0 && ++ta[i] == taps[i]; i--) ta[i] = 0;
        if (!reached) continue;
        r.in_off[r.nterms] = off;
        r.w[r.nterms++] = wu;
    }
    if (plan->post.fused) r.from = post_chain_epilogue(p, &r.ep);
    int64_t x0 = div_floor(p->PB[l], p->S[l]),
            x1 = div_floor(p->Y[l] - 1 + p->PB[l], p->S[l]);
    if (!rows_in_f32(plan)) {
        r.c_step = is[1];
        if (output_cl(plan)) {
            blocks_span(a, &r, (const float *)a->in, is[2 + l],
                    (float *)a->out + out_off, x0, x1);
            return;
        }
        float *row = brow + row_buffers(p);
        blocks_span(a, &r, (const float *)a->in, is[2 + l], row, x0, x1);
        store_row(a, row, (float *)a->out + out_off);
        return;
    }
    /* one term at most, of input row r.in_off[0] */
    r.c_step = 1;
    float *in_row = brow + row_buffers(p), *stretch = in_row + p->X[l] * p->Cin;
    if (r.nterms && *widened != r.in_off[0]) {
        widen_input_row(a, r.in_off[0], in_row);
        *widened = r.in_off[0];
    }
    r.in_off[0] = 0;
    int64_t step = stretch_pixels(p);
    for (int64_t x = 0; x < p->X[l]; x += step) {
        int64_t count = p->X[l] - x < step ? p->X[l] - x : step;
        /* the stretch holds output pixels from S * x on */
        blocks_pixels(a, &r, in_row, p->Cin, stretch, x * p->S[l], x,
                count, 0, nc);
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
    for (int64_t j = 0, co = 0; j < padded_cols(p) + BLOCKS_READ_SLACK;
            j++, co = co + 1 == C ? 0 : co + 1)
        brow[j] = a->bias && j < nc ? a->bias[co] : 0.0f;
    for (int i = 0; i < l; i++) at[i] = y[i];
    for (int64_t k = 0; k < run; k++) {
        if (k) at[l - 1]++; /* runs are longer than 1 only where l >= 1 */
        blocks_row(a, n, at, scratch, &widened);
    }
}

/* Thread @p th of @p nth's share of the packed weights' rows. */
static void pack_share(void *arg, int th, int nth) {
    const blocks_args_t *a = arg;
    int64_t rows = packed_rows(a->plan);
    pack_rows(a->plan, a->user_w, a->pack_into, rows * th / nth,
            rows * (th + 1) / nth);
}

/* The whole output: rows (image, outer output positions) shared out over
 * the OpenMP threads, each with its own scratch; the weights packed
 * first where they are the user's, by the same threads. FCN-8s's
 * upscore2 (21 channels, 16x16 to 34x34; 43 KB packed) with variable
 * weights: 26.2 us with the weights packed on one thread before the
 * region, 24.5 us packed in it (2 threads, Sapphire Rapids VM,
 * `DGRAD_OWN_LOOP=only dgrad bench --no-raw`; 16.4 us with
 * --constant-weights, packed once). */
void direct_blocks_run(const dgrad_plan_t *plan, const void *in,
        const void *w, float *pack_into, const float *bias,
        const void *const *operands, void *out, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t outer = 1;
    for (int i = 0; i < l; i++) outer *= p->Y[i];
    int64_t rows = p->N * outer;
    blocks_args_t args = {plan, direct_blocks_kernels(plan), in,
            pack_into ? pack_into : (const float *)w, bias, operands, out,
            rows_in_f32(plan) ? dgrad_data_type_size(p->dt) : sizeof(float),
            pack_into ? w : NULL, pack_into, term_rows(plan),
            lanes_form(plan), {{0}}};
    if (args.lanes) {
        /* lane L of a vector of columns is channel L % Cout's (columns
         * start at a pixel's first channel): group (L % Cout) / (Cout /
         * G), whose channel i is input channel g * Cin / G + i */
        int64_t cig = p->Cin / p->G, cog = p->Cout / p->G;
        for (int64_t i = 0; i < cig; i++)
            for (int64_t L = 0; L < 16; L++)
                args.pattern[i][L] = (int32_t)((L % p->Cout) / cog * cig + i);
    }
    direct_for_rows_after(plan, rows, 0,
            (double)rows * (double)p->X[l] * (double)cols(p)
                    * (double)args.rows
                    * (double)(outer_taps(p) * axis_taps(p, l)),
            direct_blocks_thread_scratch(plan), scratch,
            pack_into ? pack_share : NULL, blocks_row_of, &args);
}
