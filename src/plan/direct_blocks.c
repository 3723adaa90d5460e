/*
 * dgrad's own loop for transposed convolutions of one group (or up to
 * BLOCKS_MAX_GROUPS, as one with block-diagonal weights) without
 * dilation, on channels-last or NCX activations, in f32, bf16 or f16: the
 * up-sampling layers of U-Net, ESPNet and ENet (k2s2, k3s2), FCN-8s's
 * k4s2 and k16s8 at 21 classes, HiFi-GAN's k16s8. 16-bit types go through
 * f32 copies of whole tensors (plan->staged) or, on channels-last, row by
 * row through f32 rows in the thread's scratch (each input row widened
 * once for the output rows that read it, widened_t), or, where the input
 * is spread, widened as it is spread and
 * rounded from f32 rows a run of rows at a time (deconv_ci_3d:grouped in
 * f16 over raw oneDNN's f32 on its preferred layouts: +8.7-9.0 -> +1.0-1.1
 * us in NXC, +8.1-8.4 -> +0.9-2.2 in NCX, with the lists made once;
 * bench/README.md, twenty-first look): timing picks. Groups of few
 * channels, 4 and more, run in the lanes form with AVX-512
 * (blocks_lanes_form: the input's channels permuted into each group's
 * lanes, or a small input spread first and
 * its rows run from lists: direct_blocks_spread.c), else as
 * block-diagonal weights (G times the FMAs). The specification's
 * grouped 2D example in NXC: oneDNN jit 1.14 ms, block-diagonal 0.89
 * (bench/README.md, sixteenth look), lanes 0.62-0.68;
 * deconv_ci_3d:grouped (4 x 4 channels, 5^3, k3s1) 50-88 -> 11-12 us
 * with constant weights (seventeenth look), spread 9.8-10.5 us with
 * variable weights in NXC, 10.2-10.7 in NCX (13.3 and 18.8 before;
 * eighteenth look).
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

#include "direct_blocks_impl.h"
#include "dtype.h"

/* Whether the loop reads and writes the user's 16-bit tensors itself,
 * through f32 rows: each input row (X pixels by Cin) that an output row
 * reads widened into the thread's scratch (widened_t: kept there for the
 * next output rows that read it), and the output row computed, chained
 * and rounded a stretch at a time in scratch. */
static int rows_in_f32(const dgrad_plan_t *plan) {
    return !plan->staged && plan->p.dt != dgrad_f32;
}

/* Whether output pixels along the last axis are Cout contiguous
 * channels apart (channels-last): blocks are stored straight into it;
 * other layouts (NCX) get each row through a channels-last row in
 * scratch, stored channel by channel (blocks_store_row). */
int blocks_output_cl(const dgrad_plan_t *plan) {
    const int64_t *os = plan->out.io_strides;
    return os[1] == 1 && os[2 + plan->p.nsp - 1] == plan->p.Cout;
}

/* At 2 groups the permutations cost what the block diagonal's FMAs
 * did: g2mb1ic16ih56iw56oc16oh112ow112kh3kw3sh2sw2ph1pw1 82 -> 90 us,
 * and at 4 and 8 groups the lanes form gains 1.4x and 2.2x (k2s2, k3s2
 * on 56x56 NXC, `DGRAD_OWN_LOOP=blocks DGRAD_OWN_KERNELS=widest dgrad
 * bench --no-raw`, Sapphire Rapids VM). */
#define LANES_MIN_GROUPS 4
/* Calls of at most this many blocks take the kernels of 4 pixels: a
 * row of 5 pixels (3 interior blocks) otherwise runs 8 pixels' FMAs in
 * the lanes form, 12 in the others. */
#define SHORT_BLOCKS 4

/* Where the input is small, the lanes form spreads it first: each input
 * pixel as Cin / G vectors of 16 lanes, vector i holding channel i of
 * each lane's group, made once by the threads before the rows (as the
 * packing is), so that the kernels load input vectors where they would
 * permute a pixel's channels for every term, on the FMAs' port
 * (deconv_ci_3d:grouped with constant weights, NXC, row by row: 10.8-10.9
 * -> 10.4-10.5 us; its rows from lists gain more, blocks_listed). The
 * input's channels may then be a plane apart (NCX): the spread gathers
 * them (there 48 -> 14 us, row by row, against block-diagonal weights).
 * Bytes of the spread copy at most: it stays in L2 beside the weights
 * and output. */
#define LANES_SPREAD_MAX_BYTES ((int64_t)1 << 20)

/* Each spread pixel replaces a permutation per channel of a group for
 * each block and term that reads it, and costs its vectors' stores and
 * loads: with channels contiguous (NXC) the spread pays only where a
 * block has this many terms. The 1D grouped example (k3s2: 2 terms)
 * took 3.2-3.5 us spread against 2.1 permuted; ci:2d_grouped (k3s2,
 * 4 terms) 3.3 against 4.0 (NXC, `dgrad bench --no-raw`, alternating
 * builds). */
#define LANES_SPREAD_MIN_TERMS 4

/* In 1D and 2D, rows of at least this many blocks whose taps the lanes
 * taps kernels take (taps_take_rows) run faster permuted than spread:
 * with channels contiguous (NXC), the grouped example's k3s2 at 14^2,
 * 28^2 and 56^2 input pixels took 5.2-5.8, 12-14 and 38-45 us permuted
 * against 6.7-7.2, 17-18 and 56-61 spread, and k3s1, k4s2, k5s2 and k6s2
 * at 28^2 (4 to 9 terms) 13-18, 15-19, 22-26 and 29-32 us against 20-21,
 * 22-23, 30-31 and 39-41; rows of 7 pixels (k3s2, 6 blocks) 5.1-5.2
 * against 4.1-4.6, where the spread's lists put the blocks of several
 * rows in one call. In 3D the spread still won at rows of 14 (k3s2, 8
 * terms: 0.135-0.147 ms permuted against 0.109) and 5 (k3s1, 27 terms:
 * 17-18 us against 11.5), where the lists save each output row's
 * terms (`DGRAD_OWN_LOOP=blocks dgrad bench --no-raw --data-format NXC`
 * with DGRAD_SPREAD_INPUT unset and `=never`, three alternating rounds,
 * AMD EPYC Zen 4 VM; bench/README.md, thirty-fourth look). */
#define TAPS_MIN_ROW_BLOCKS 12

/* Whether the lanes taps kernels take the interior blocks of a row: 2 or
 * 3 taps of the last axis (LANES_TAPS_*), at most LANES_TAPS_NV vectors
 * of columns, and rows of at least TAPS_MIN_ROW_BLOCKS blocks whose taps
 * all reach the row. */
static int taps_take_rows(const dgrad_problem_t *p) {
    int64_t T = axis_taps(p, p->nsp - 1);
    return T >= LANES_TAPS_MIN && T < LANES_TAPS_MIN + LANES_TAPS_COUNT
            && padded_cols(p) <= LANES_TAPS_NV * 16
            && p->X[p->nsp - 1] - (T - 1) >= TAPS_MIN_ROW_BLOCKS;
}

/* Where the policy has the input spread whatever its size (tests), it
 * is still at most this many floats. */
#define LANES_SPREAD_ALWAYS_MAX_FLOATS ((int64_t)1 << 30)

/* Floats of the spread input: N x X pixels of Cin / G vectors;
 * INT64_MAX past LANES_SPREAD_ALWAYS_MAX_FLOATS. */
static int64_t spread_floats(const dgrad_problem_t *p) {
    int64_t n = p->N * (p->Cin / p->G) * 16,
            most = LANES_SPREAD_ALWAYS_MAX_FLOATS;
    if (n > most) return INT64_MAX;
    for (int i = 0; i < p->nsp; i++) {
        if (p->X[i] > most / n) return INT64_MAX;
        n *= p->X[i];
    }
    return n;
}

/* Whether the rows of a spread input can run from lists (blocks_listed):
 * the list kernels take every column in one call (padded_cols <= NV_MAX
 * x 16) and apply no chain past their epilogue (the loop always carries
 * the chain, post_pass_init: that is decided after the plan is built, so
 * the problem's chain is what counts); they store f32 straight into a
 * channels-last output, else scatter columns with 32-bit offsets, else
 * (16-bit) into f32 rows that are then rounded into the output. */
static int listable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *os = plan->out.io_strides;
    int l = p->nsp - 1;
    epilogue_t ep;
    return padded_cols(p) <= NV_MAX * 16
            && (p->n_post_ops == 0
                    || post_chain_epilogue(p, &ep) >= p->n_post_ops)
            && (blocks_output_cl(plan) || rows_in_f32(plan)
                    || (p->S[l] - 1) * os[2 + l] + (p->Cout - 1) * os[1]
                            <= INT32_MAX);
}

/* Whether the lanes form (if it applies) spreads the input: small
 * enough, its channel stride within the 32-bit gather indices, and a
 * 16-bit input (widened as it is spread) only where the rows then run
 * from lists (the rows otherwise read it as f32); by the rule, where the
 * channels are contiguous (else only the spread input gives the lanes
 * form), only where a block has LANES_SPREAD_MIN_TERMS terms or more and,
 * in 1D and 2D, the taps kernels do not take the rows
 * (TAPS_MIN_ROW_BLOCKS). */
static int spread_fits(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int64_t cs = plan->in.io_strides[1];
    int rule = plan->policy.spread_input;
    int pays = cs != 1
            || (outer_taps(p) * axis_taps(p, p->nsp - 1)
                            >= LANES_SPREAD_MIN_TERMS
                    && (p->nsp >= 3 || !taps_take_rows(p)));
    return rule != 1 && (!rows_in_f32(plan) || listable(plan))
            && (rule == 2
                    || (spread_floats(p) <= LANES_SPREAD_MAX_BYTES
                                            / (int64_t)sizeof(float)
                            && pays))
            && cs >= 0 && cs <= INT32_MAX / LANES_MAX_CIN;
}

/* Whether groups run in the lanes form (AVX-512 only): each vector of
 * output columns holds several groups' channels, and input channel i of
 * every group reaches its lanes through one permutation of the input
 * pixel's channels (two vectors at most), so a term costs Cin / G
 * permutations and FMAs per pixel where block-diagonal weights cost Cin
 * FMAs. Every vector of columns has the same lane pattern: S * Cout
 * within one vector, or Cout dividing 16 (columns start at a pixel's
 * first; either way Cout / G <= 4). The input's channels are contiguous
 * (read as vectors), or the input is spread first. */
int blocks_lanes_form(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
#if defined(__x86_64__) && defined(__GNUC__)
    return p->G >= LANES_MIN_GROUPS && cpu_has_avx512f() && !plan->direct_avx2
            && p->Cin / p->G <= LANES_MAX_GROUP_CHANNELS
            && p->Cin <= LANES_MAX_CIN
            && (cols(p) <= 16 || 16 % p->Cout == 0)
            && (rows_in_f32(plan) || plan->in.io_strides[1] == 1
                    || spread_fits(plan));
#else
    (void)p;
    return 0;
#endif
}

/* Whether the lanes form spreads the input first. */
int blocks_lanes_spread(const dgrad_plan_t *plan) {
    return blocks_lanes_form(plan) && spread_fits(plan);
}

/* Where the spread input takes at most this many bytes, each thread
 * spreads all of it into its own scratch: no line of it then passes
 * between the cores, and the threads need not wait for each other
 * before the rows (nor at all, with the weights given packed or packed
 * by each thread). On an AMD EPYC Zen 5 the shared copy cost more than
 * the second thread gained (deconv_ci_3d:grouped, 64,000 bytes spread,
 * constant weights, NXC: 13.1 us on one thread, 13.9 on two); each
 * thread's own took it to 12.7-13.2 us, against 14.0-14.2 shared, and
 * in NCX to 14.6-15.0 against 15.5-16.0 (16.3 against 17.9-18.1 with
 * variable weights; `dgrad bench --no-raw` with DGRAD_SPREAD_INPUT
 * unset and `=shared`, alternating runs). */
#define SPREAD_PRIVATE_MAX_BYTES ((int64_t)64 << 10)

/* Whether each thread spreads the whole input into its own scratch
 * (blocks_lanes_spread, few bytes, and the policy not asking for one
 * shared copy). */
static int spread_private(const dgrad_plan_t *plan) {
    return blocks_lanes_spread(plan) && plan->policy.spread_input != 3
            && spread_floats(&plan->p) * (int64_t)sizeof(float)
                    <= SPREAD_PRIVATE_MAX_BYTES;
}

/* Whether the spread rows run from lists (blocks_listed). */
int blocks_spread_listed(const dgrad_plan_t *plan) {
    return blocks_lanes_spread(plan) && listable(plan);
}

/* Rows of a run blocks_listed takes at a time: LIST_MAX_ROWS, and where
 * it rounds them into a 16-bit output, as many f32 rows as
 * LIST_MAX_ROUNDED_FLOATS hold (one at least). */
static int64_t list_rows(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int64_t n = LIST_MAX_ROUNDED_FLOATS / (p->Y[p->nsp - 1] * p->Cout);
    if (!rows_in_f32(plan) || n > LIST_MAX_ROWS) return LIST_MAX_ROWS;
    return n > 0 ? n : 1;
}

int direct_blocks_lanes(const dgrad_plan_t *plan) {
    if (plan->direct != DIRECT_BLOCKS_CL || !blocks_lanes_form(plan)) return 0;
    return blocks_spread_listed(plan) ? 3 : blocks_lanes_spread(plan) ? 2 : 1;
}

int64_t blocks_term_rows(const dgrad_plan_t *plan) {
    return blocks_lanes_form(plan) ? plan->p.Cin / plan->p.G : plan->p.Cin;
}

int direct_blocks_applicable(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = plan->in.io_strides;
    int l = p->nsp - 1;
    if (p->G > BLOCKS_MAX_GROUPS || p->Cin > BLOCKS_MAX_CHANNELS
            || p->Cout > BLOCKS_MAX_CHANNELS
            || p->S[l] > BLOCKS_MAX_COLS / p->Cout
            || (!blocks_output_cl(plan)
                    && p->Y[l] > BLOCKS_MAX_ROW_VALUES / p->Cout))
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
    /* 16-bit tensors are read and written by the loop where the input is
     * spread (widened as it is) and its rows run from lists (rounded
     * from f32 rows, BLOCKS_MAX_ROW_VALUES each at most), or where
     * channels-last input rows are widened into f32 rows (at most
     * WIDENED_MAX_ROWS of them) and rounded into a channels-last output;
     * other layouts go through f32 copies of the whole tensors
     * (plan->staged) */
    if (rows_in_f32(plan) && blocks_spread_listed(plan))
        return p->Y[l] <= BLOCKS_MAX_ROW_VALUES / p->Cout
                && phases * terms * p->Cin
                <= BLOCKS_MAX_WEIGHTS / padded_cols(p);
    if (rows_in_f32(plan)
            && (is[1] != 1 || !blocks_output_cl(plan)
                    || widened_rows(p) > WIDENED_MAX_ROWS
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

/* Where the user's weights are packed on each execution and take at
 * most this many bytes, each thread packs all of them into its own
 * scratch: no cache line of them then passes between the cores (packed
 * by one, read by the other, written again by the first on the next
 * execution). deconv_ci_3d:grouped (6.9 KB packed) with variable
 * weights, NXC, time over raw oneDNN's on its preferred layouts in the
 * same run: +2.9-3.5 us shared, +2.2-2.6 private (three runs each). */
#define PACK_PRIVATE_MAX_BYTES ((size_t)64 << 10)

/* Bytes of a thread's own packed weights, of @p weights bytes packed:
 * 0 where they are many. */
static size_t private_weights(size_t weights) {
    return weights <= PACK_PRIVATE_MAX_BYTES ? (weights + 63) / 64 * 64 : 0;
}

int direct_blocks_packs_shared(const dgrad_plan_t *plan) {
    return private_weights(plan->prepared_weights_bytes) == 0;
}

/* Bytes of a thread's scratch before its own packed weights:
 * row_buffers, then where the rows from lists are rounded into a 16-bit
 * output list_rows f32 output rows and room for twice as many more
 * (blocks_round_rows), where the loop widens rows itself the input row
 * and a stretch of output, where the output is not channels-last a
 * channels-last output row. */
static size_t thread_rows_scratch(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t n = row_buffers(p);
    if (rows_in_f32(plan) && blocks_spread_listed(plan))
        n += 3 * list_rows(plan) * p->Y[l] * p->Cout;
    else if (rows_in_f32(plan))
        n += widened_rows(p) * p->X[l] * p->Cin + stretch_pixels(p) * cols(p);
    else if (!blocks_output_cl(plan))
        n += p->Y[l] * p->Cout;
    return ((size_t)n * sizeof(float) + 63) / 64 * 64;
}

/* Bytes of the spread input (blocks_lanes_spread; 0 without it). */
static size_t spread_bytes(const dgrad_plan_t *plan) {
    return blocks_lanes_spread(plan)
            ? ((size_t)spread_floats(&plan->p) * sizeof(float) + 63) / 64
                    * 64
            : 0;
}

/* Per thread: thread_rows_scratch, then its own packed weights where
 * they are few, then its own spread input where that is small. */
size_t direct_blocks_thread_scratch(const dgrad_plan_t *plan) {
    return thread_rows_scratch(plan)
            + private_weights(direct_blocks_weights_size(plan))
            + (spread_private(plan) ? spread_bytes(plan) : 0);
}

size_t direct_blocks_shared_scratch(const dgrad_plan_t *plan) {
    return spread_private(plan) ? 0 : spread_bytes(plan);
}

size_t direct_blocks_weights_size(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    return (size_t)(outer_phases(p) * outer_taps(p) * axis_taps(p, l)
                           * blocks_term_rows(plan) * padded_cols(p)
                   + BLOCKS_READ_SLACK)
            * sizeof(float);
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

/* The rest of the chain after the kernels' epilogue on the output pixels
 * of blocks_pixels' call (@p count blocks, columns @p c0 on, @p ncols of
 * them; output pixel @p o0 at block x's column 0), while they are in
 * cache. */
static void chain_after_kernels(const blocks_args_t *a, const row_work_t *r,
        float *out, int64_t o_base, int64_t o0, int64_t count, int64_t c0,
        int64_t ncols) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
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
    int64_t nc = a->nc, np = a->np, T = a->T;
    int64_t o0 = x * p->S[l] - p->PB[l]; /* output pixel of column 0 */
    float *dst = out + ((o0 - o_base) * p->Cout + c0);
    /* nv_max and w are powers of two: masks and shifts, not divisions
     * (whose latency took a quarter of this function's time on
     * onnx:convtranspose_3d, 5 calls a row, `perf annotate`) */
    int64_t chunk = a->k->nv_max * a->k->w, ncols = c1 - c0;
    int64_t whole = ncols & ~(chunk - 1), rest_nv =
            ((ncols - whole + a->k->w - 1)
                    >> __builtin_ctzll((unsigned long long)a->k->w)) - 1;
    /* where every tap of the last axis reaches these blocks (their input
     * pixels x - T + 1 .. x + count - 1 all in the row), the taps
     * kernels permute each pixel once for all of them (one call of at
     * most LANES_TAPS_NV vectors of columns) */
    int64_t nt = T - LANES_TAPS_MIN, nv = (ncols + a->k->w - 1) / a->k->w;
    if (a->lanes && a->by != LANES_BY_SPREAD && count > SHORT_BLOCKS
            && x >= T - 1 && x + count <= p->X[l] && nt >= 0
            && nt < LANES_TAPS_COUNT && nv <= LANES_TAPS_NV
            && a->k->lanes_taps[0][0][0]) {
        const float *base[BLOCKS_MAX_TERMS];
        for (int64_t u = 0; u < r->nterms; u++)
            base[u] = in + (r->in_off[u] + x * in_step);
        a->k->lanes_taps[a->by == LANES_BY_TWO][nt][nv - 1](base, r->nterms,
                in_step, p->Cin, a->rows, &a->pattern[0][0], r->w,
                a->rows * np, np, c0, r->brow, ncols, &r->ep, dst, nc, count);
        chain_after_kernels(a, r, out, o_base, o0, count, c0, ncols);
        return;
    }
    /* the terms: each tap t whose input pixels x - t .. x + count - 1 - t
     * are all in the row, each combination of outer taps */
    const float *src[BLOCKS_MAX_TERMS], *w[BLOCKS_MAX_TERMS];
    int64_t n = 0;
    for (int64_t t = 0; t < T; t++) {
        if (x - t < 0 || x + count - 1 - t >= p->X[l]) continue;
        for (int64_t u = 0; u < r->nterms; u++) {
            src[n] = in + r->in_off[u] + (x - t) * in_step;
            w[n++] = r->w[u] + t * a->rows * np;
        }
    }
    if (a->lanes) {
        int by = a->by;
        const lanes_fn *of = count == 1 ? a->k->lanes_single[by]
                : count <= SHORT_BLOCKS ? a->k->lanes_short[by]
                                              : a->k->lanes_of[by];
        if (whole)
            of[a->k->nv_max - 1](src, n, in_step, p->Cin, a->rows,
                    &a->pattern[0][0], w, np, c0, r->brow, whole, &r->ep,
                    dst, nc, count);
        if (whole < ncols)
            of[rest_nv](src, n, in_step, p->Cin, a->rows, &a->pattern[0][0],
                    w, np, c0 + whole, r->brow, ncols - whole, &r->ep,
                    dst + whole, nc, count);
    } else {
        const block_fn *of = count == 1 ? a->k->single
                : count <= SHORT_BLOCKS ? a->k->short_of
                                        : a->k->of;
        if (whole)
            of[a->k->nv_max - 1](src, n, in_step, r->c_step, p->Cin, w, np,
                    c0, r->brow, whole, &r->ep, dst, nc, count);
        if (whole < ncols)
            of[rest_nv](src, n, in_step, r->c_step, p->Cin, w, np,
                    c0 + whole, r->brow, ncols - whole, &r->ep, dst + whole,
                    nc, count);
    }
    chain_after_kernels(a, r, out, o_base, o0, count, c0, ncols);
}

/* Blocks [@p x0, @p x1] of a row (output pixel o at (o - @p o_base) x
 * Cout of @p out): those whose columns are all in the output and whose
 * taps all reach input pixels in one call, the others (at the row's
 * ends) one by one with the columns and taps they have. */
static void blocks_span(const blocks_args_t *a, const row_work_t *r,
        const float *in, int64_t in_step, float *out, int64_t o_base,
        int64_t x0, int64_t x1) {
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t S = p->S[l], PB = p->PB[l], C = p->Cout, lo = a->lo, hi = a->hi;
    for (int64_t x = x0; x <= x1; x++) {
        if (x >= lo && x <= hi) {
            int64_t end = hi < x1 ? hi : x1;
            blocks_pixels(a, r, in, in_step, out, o_base, x, end - x + 1, 0,
                    S * C);
            x = end;
            continue;
        }
        int64_t b0 = PB - S * x, b1 = p->Y[l] + PB - S * x;
        if (b0 < 0) b0 = 0;
        if (b1 > S) b1 = S;
        blocks_pixels(a, r, in, in_step, out, o_base, x, 1, b0 * C, b1 * C);
    }
}

/* One output row (image @p n, outer output position @p y), the bias row
 * already at the start of @p scratch. Its terms are the combinations of
 * outer taps whose input rows are in the input; a row none reaches (K <
 * S, or padding) gets the bias (then the chain) like any other. The
 * blocks go straight into a channels-last output, else into a
 * channels-last row in scratch that blocks_store_row then writes. Where
 * the loop widens rows itself (rows_in_f32), @p wd holds the rows
 * widened in scratch, and the output is computed into scratch a stretch
 * of blocks at a time and rounded into the user's. */
static void blocks_row(const blocks_args_t *a, const char *in,
        const float *w, int64_t n, const int64_t *y, char *scratch,
        widened_t *wd) {
    const dgrad_plan_t *plan = a->plan;
    const dgrad_problem_t *p = &plan->p;
    const int64_t *is = a->is, *os = plan->out.io_strides;
    int l = p->nsp - 1;
    int64_t np = a->np, ot = a->ot, T = a->T;
    float *brow = (float *)scratch;
    /* the term arrays are filled up to nterms, not zeroed (1 KiB a row) */
    row_work_t r;
    r.nterms = 0;
    r.brow = brow;
    r.ep = a->ep;
    r.from = a->from;
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
        q[i] = p->S[i] == 1 ? nat : div_floor(nat, p->S[i]);
        phase[i] = nat - q[i] * p->S[i];
        taps[i] = a->taps[i];
        ta[i] = 0;
        out_off += y[i] * os[2 + i];
        ph = ph * p->S[i] + phase[i];
        r.idx[2 + i] = y[i];
    }
    const float *wu = w + ph * ot * T * a->rows * np;
    for (int64_t u = 0; u < ot; u++, wu += T * a->rows * np) {
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
    int64_t x0 = a->x0, x1 = a->x1;
    if (!a->in_f32) {
        r.c_step = is[1];
        if (a->out_cl) {
            blocks_span(a, &r, (const float *)in, is[2 + l],
                    (float *)a->out + out_off, 0, x0, x1);
            return;
        }
        float *row = brow + a->row_buf;
        blocks_span(a, &r, (const float *)in, is[2 + l], row, 0, x0, x1);
        blocks_store_row(a, row, (float *)a->out + out_off);
        if (a->round_into) blocks_round_row(a, n, y, out_off);
        return;
    }
    /* the terms' rows widened (X pixels of Cin channels), each term at
     * its slot */
    r.c_step = 1;
    int64_t row_floats = p->X[l] * p->Cin, S = p->S[l], PB = p->PB[l],
            Y = p->Y[l], C = p->Cout;
    float *rows = brow + a->row_buf,
          *stretch = rows + widened_rows(p) * row_floats;
    wd->clock++;
    for (int64_t u = 0; u < r.nterms; u++)
        r.in_off[u] = blocks_widened_slot(a, in, r.in_off[u], wd, rows)
                * row_floats;
    int64_t step = stretch_pixels(p);
    for (int64_t x = x0; x <= x1; x += step) {
        int64_t xe = x1 - x < step ? x1 : x + step - 1;
        /* the stretch holds the output pixels of blocks x .. xe */
        int64_t o0 = S * x - PB, o1 = S * xe - PB + S - 1;
        if (o0 < 0) o0 = 0;
        if (o1 > Y - 1) o1 = Y - 1;
        blocks_span(a, &r, rows, p->Cin, stretch, o0, x, xe);
        convert_run_from_f32(p->dt, stretch,
                a->out + (size_t)(out_off + o0 * C) * a->esize,
                (o1 - o0 + 1) * C);
    }
}

/* The rows of direct_blocks_run: @p n the image, @p y the outer position
 * and the @p run - 1 after it on the last outer axis (rows that read the
 * same input rows one after the other: each is widened once for them). */
static void blocks_row_of(void *arg, int64_t n, const int64_t *y,
        int64_t run, char *scratch) {
    const blocks_args_t *a = arg;
    const dgrad_problem_t *p = &a->plan->p;
    int l = p->nsp - 1;
    int64_t at[DGRAD_MAX_SPATIAL], nc = a->nc, C = p->Cout;
    widened_t wd;
    if (a->in_f32) blocks_widened_reset(&wd);
    const float *w = a->private_off
            ? (const float *)(scratch + a->private_off)
            : a->w;
    const char *in = a->spread_private_off
            ? scratch + a->spread_private_off
            : a->in;
    /* the bias along a row's columns, the same for every row */
    float *brow = (float *)scratch;
    for (int64_t j = 0, co = 0; j < a->np + BLOCKS_READ_SLACK;
            j++, co = co + 1 == C ? 0 : co + 1)
        brow[j] = a->bias && j < nc ? a->bias[co] : 0.0f;
    if (a->listed) {
        blocks_listed(a, in, w, n, y, run, brow, brow + a->row_buf);
        return;
    }
    for (int i = 0; i < l; i++) at[i] = y[i];
    for (int64_t k = 0; k < run; k++) {
        if (k) at[l - 1]++; /* runs are longer than 1 only where l >= 1 */
        blocks_row(a, in, w, n, at, scratch, &wd);
    }
}

/* Thread @p th of @p nth's part of what precedes the rows: its share of
 * the spread input's pixels (or, into its own scratch, those of the
 * images its rows are in) and of the packed weights' rows (or all of
 * them, into its own). Spreading only its images took
 * deconv_ci_3d:grouped (2 images) on 2 threads from 10.4-10.7 to
 * 9.2-9.4 us (the blocks loop alone, f32 NXC, alternating builds,
 * minimum of each process; a Sapphire Rapids VM whose 2-thread times
 * also came in a slower mode, 13-19 us, in either build). */
static void before_rows_share(void *arg, int th, int nth) {
    const blocks_args_t *a = arg;
    if (a->widen_from) blocks_widen_share(a, th, nth);
#if defined(__x86_64__) && defined(__GNUC__)
    const dgrad_problem_t *p = &a->plan->p;
    int64_t px = spread_floats(p) / (a->rows * 16);
    if (a->spread_private_off) {
        /* the rows go out untiled, image by image (direct_blocks_run) */
        int64_t outer = 1, r0, r1, image_px = px / p->N;
        for (int i = 0; i < p->nsp - 1; i++) outer *= p->Y[i];
        direct_share_of(p->N * outer, th, nth, &r0, &r1);
        if (r1 > r0)
            blocks_spread_pixels(a,
                    (float *)(a->scratch + a->per_thread * (size_t)th
                            + a->spread_private_off),
                    r0 / outer * image_px,
                    ((r1 - 1) / outer + 1) * image_px);
    } else if (a->spread_into) {
        int64_t i0, i1;
        direct_share_of(px, th, nth, &i0, &i1);
        blocks_spread_pixels(a, a->spread_into, i0, i1);
    }
#endif
    if (a->pack_into) {
        int64_t rows = blocks_packed_rows(a->plan);
        if (a->private_off)
            blocks_pack_rows(a->plan, a->user_w,
                    (float *)(a->scratch + a->per_thread * (size_t)th
                            + a->private_off),
                    0, rows);
        else {
            int64_t r0, r1;
            direct_share_of(rows, th, nth, &r0, &r1);
            blocks_pack_rows(a->plan, a->user_w, a->pack_into, r0, r1);
        }
    }
}

/* What a run of @p plan needs of its geometry (no buffers): the
 * kernels, the strides the rows read the input at (the spread copy's
 * where the input is spread), the blocks of a row, the lanes form's
 * pattern, the chain's epilogue, the list settings. */
static void blocks_args_geometry(blocks_args_t *args,
        const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1, spread = blocks_lanes_spread(plan);
    /* in place: a compound literal assigned to *args zeroes a stack copy
     * of the whole struct (1.7 KB) and copies it over, at every run */
    memset(args, 0, sizeof *args);
    args->plan = plan;
    args->k = direct_blocks_kernels(plan);
    args->is = plan->in.io_strides;
    args->esize = rows_in_f32(plan) ? dgrad_data_type_size(p->dt)
                                    : sizeof(float);
    args->rows = blocks_term_rows(plan);
    args->lanes = blocks_lanes_form(plan);
    args->list_rows = list_rows(plan);
    args->nc = cols(p);
    args->np = padded_cols(p);
    args->T = axis_taps(p, l);
    args->ot = outer_taps(p);
    args->x0 = div_floor(p->PB[l], p->S[l]);
    args->x1 = div_floor(p->Y[l] - 1 + p->PB[l], p->S[l]);
    args->lo = -div_floor(-p->PB[l], p->S[l]);
    args->hi = div_floor(p->Y[l] + p->PB[l], p->S[l]) - 1;
    args->in_f32 = rows_in_f32(plan);
    args->round_into = NULL; /* direct_blocks_run's to set */
    args->widen_from = NULL;
    args->out_cl = blocks_output_cl(plan);
    args->row_buf = row_buffers(p);
    if (args->lanes)
        args->by = spread ? LANES_BY_SPREAD
                : p->Cin > 16 ? LANES_BY_TWO
                              : LANES_BY_ONE;
    for (int i = 0; i <= l; i++) args->taps[i] = axis_taps(p, i);
    /* blocks whose taps all reach the input row */
    if (args->lo < args->T - 1) args->lo = args->T - 1;
    if (args->hi > p->X[l] - 1) args->hi = p->X[l] - 1;
    if (plan->post.fused) args->from = post_chain_epilogue(p, &args->ep);
    args->listed = args->lanes && blocks_spread_listed(plan);
    if (args->listed && !args->out_cl && !args->in_f32) {
        /* column j = (b, co), co fastest: counted, not divided */
        const int64_t *os = plan->out.io_strides;
        for (int64_t j = 0, b = 0, co = 0; j < NV_MAX * 16; j++) {
            args->colidx[j] = (int32_t)(j < args->nc
                            ? b * os[2 + l] + co * os[1]
                            : 0);
            if (++co == p->Cout) co = 0, b++;
        }
    }
    if (args->lanes) {
        /* lane L of a vector of columns is channel L % Cout's (columns
         * start at a pixel's first channel): group (L % Cout) / (Cout /
         * G), whose channel i is input channel g * Cin / G + i */
        int64_t cig = p->Cin / p->G, cog = p->Cout / p->G;
        for (int64_t i = 0; i < cig; i++)
            for (int64_t L = 0; L < 16; L++)
                args->pattern[i][L] =
                        (int32_t)((L % p->Cout) / cog * cig + i);
    }
    if (spread) {
        args->is = args->spread_strides;
        int64_t step = args->rows * 16;
        args->spread_strides[1] = 1;
        for (int i = l; i >= 0; i--) {
            args->spread_strides[2 + i] = step;
            step *= p->X[i];
        }
        args->spread_strides[0] = step;
    }
}

int direct_blocks_prepare(dgrad_plan_t *plan) {
    if (!blocks_spread_listed(plan)) return 1;
    blocks_args_t args;
    blocks_args_geometry(&args, plan);
    return blocks_lists_make(&args, &plan->direct_lists);
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
        const void *const *operands, void *out, void *round_into,
        const void *widen_from, char *scratch) {
    const dgrad_problem_t *p = &plan->p;
    int l = p->nsp - 1;
    int64_t outer = 1;
    for (int i = 0; i < l; i++) outer *= p->Y[i];
    int64_t rows = p->N * outer;
    int spread = blocks_lanes_spread(plan);
    size_t rows_scratch = thread_rows_scratch(plan),
           private = private_weights(plan->prepared_weights_bytes),
           own_spread = spread && spread_private(plan) ? spread_bytes(plan)
                                                       : 0;
    blocks_args_t args;
    blocks_args_geometry(&args, plan);
    args.in = in;
    args.w = pack_into ? pack_into : (const float *)w;
    args.bias = bias;
    args.operands = operands;
    args.out = out;
    args.round_into = round_into;
    args.widen_from = widen_from;
    args.user_w = pack_into ? w : NULL;
    args.pack_into = pack_into;
    args.user_in = in;
    args.scratch = scratch;
    args.per_thread = rows_scratch + private + own_spread;
    args.private_off = pack_into && private ? rows_scratch : 0;
    args.spread_private_off = own_spread ? rows_scratch + private : 0;
    size_t per_thread = args.per_thread;
    /* the spread copy after every thread's part
     * (direct_blocks_shared_scratch), or in each thread's own
     * (blocks_row_of) */
    if (spread && !own_spread) {
        args.spread_into =
                (float *)(scratch + per_thread * (size_t)plan->direct_threads);
        args.in = (const char *)args.spread_into;
    }
    /* the threads wait for each other only where they share what they
     * made first */
    int shares = args.spread_into || (pack_into && !args.private_off)
            || widen_from;
    direct_for_rows_after(plan, rows, 0,
            (double)rows * (double)p->X[l] * (double)cols(p)
                    * (double)args.rows
                    * (double)(outer_taps(p) * axis_taps(p, l)),
            per_thread, scratch,
            pack_into || spread || widen_from ? before_rows_share : NULL,
            shares, blocks_row_of, &args);
}
