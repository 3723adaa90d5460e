/*
 * The register-blocked kernels of dgrad's blocks loop (direct_blocks.c),
 * in direct_blocks_kernels.c: per CPU target, kernels that sum a block's
 * terms (input pixels times packed weights) over blocks of MB pixels by
 * NV vectors of output columns, bias first, a leading ReLU or Clamp last,
 * each output element stored once; and, with AVX-512, the same in the
 * lanes form, where several groups share a vector of columns.
 */
#ifndef DGRAD_PLAN_DIRECT_BLOCKS_KERNELS_H
#define DGRAD_PLAN_DIRECT_BLOCKS_KERNELS_H

#include <stdint.h>

#include "plan_impl.h"

/* Per target, kernels of 1 to NV_MAX vectors of columns (a row takes
 * chunks of NV_MAX, then one kernel for what is left): MB x NV
 * accumulators within its registers (32 for AVX-512, 16 for AVX2 and the
 * baseline), with NV weight vectors and a broadcast beside them. */
#define NV_MAX 4

/* src, nterms, in_step, c_step, cin, w, np, col, brow, ncols, ep, out,
 * pitch, count: see DEFINE_BLOCK_KERNEL. */
typedef void (*block_fn)(const float *const *, int64_t, int64_t, int64_t,
        int64_t, const float *const *, int64_t, int64_t, const float *,
        int64_t, const epilogue_t *, float *, int64_t, int64_t);

/* How input channels reach the lanes form's lanes: permuted from one
 * vector of a pixel's channels, from two, or loaded from the loop's
 * spread copy of the input (a pixel's rows vectors, in_step floats). */
enum { LANES_BY_ONE, LANES_BY_TWO, LANES_BY_SPREAD, LANES_BY_COUNT };

/* src, nterms, in_step, cin, rows, pattern, w, np, col, brow, ncols, ep,
 * out, pitch, count: see DEFINE_LANES_KERNEL. */
typedef void (*lanes_fn)(const float *const *, int64_t, int64_t, int64_t,
        int64_t, const int32_t *, const float *const *, int64_t, int64_t,
        const float *, int64_t, const epilogue_t *, float *, int64_t,
        int64_t);

/* src, nu, in_step, cin, rows, pattern, w, tap_step, np, col, brow,
 * ncols, ep, out, pitch, count: see DEFINE_LANES_TAPS. */
typedef void (*lanes_taps_fn)(const float *const *, int64_t, int64_t,
        int64_t, int64_t, const int32_t *, const float *const *, int64_t,
        int64_t, int64_t, const float *, int64_t, const epilogue_t *,
        float *, int64_t, int64_t);

/* The taps of the last axis that lanes_taps kernels take at once
 * (LANES_TAPS_MIN ..), and their vectors of columns at most. */
#define LANES_TAPS_MIN 2
#define LANES_TAPS_COUNT 2
#define LANES_TAPS_NV 2

/* in, soff, nterms, pix, rows, w, woff, np, brow, ncols, colidx, ep,
 * out, dst, count: see DEFINE_LANES_LIST. */
typedef void (*lanes_list_fn)(const float *, const int64_t *, int64_t,
        const int64_t *, int64_t, const float *, const int64_t *, int64_t,
        const float *, int64_t, const int32_t *, const epilogue_t *, float *,
        const int64_t *, int64_t);

/* The list kernels' sizes: many blocks at a time, 4, 2, 1. */
enum { LIST_MANY, LIST_4, LIST_2, LIST_1, LIST_SIZES };

/* A kernel set: kernel nv - 1 takes nv vectors of W columns at once, of
 * blocks of MB pixels (of), of 4 (short: a call of few blocks, as in a
 * short row, costs 4 pixels' FMAs, not MB's), or of one (single: a block
 * at an end of a row, whose taps or columns differ from its
 * neighbours', costs one pixel's FMAs). */
typedef struct block_kernels {
    block_fn of[NV_MAX], short_of[NV_MAX], single[NV_MAX];
    /* the lanes form, AVX-512 only: blocks of 12-4 pixels, of 4 (calls
     * of few blocks: short rows), of one; the first index is how input
     * channels reach the lanes (LANES_BY_*) */
    lanes_fn lanes_of[LANES_BY_COUNT][NV_MAX],
            lanes_short[LANES_BY_COUNT][NV_MAX],
            lanes_single[LANES_BY_COUNT][NV_MAX];
    /* the spread copy's blocks from a list, of several rows: blocks of
     * list_many[NV - 1] pixels, of 4, 2 and 1 (LIST_*); AVX2 has only
     * [LIST_1][0], the row vectors loop's */
    lanes_list_fn lanes_list[LIST_SIZES][NV_MAX];
    int list_many[NV_MAX];
    int nv_max;
    int64_t w;
    /* the lanes form with every tap of the last axis in one call, its
     * input permuted from one vector of channels or two: [LANES_BY_ONE
     * or _TWO][taps - LANES_TAPS_MIN][NV - 1] (AVX-512 only) */
    lanes_taps_fn lanes_taps[2][LANES_TAPS_COUNT][LANES_TAPS_NV];
} block_kernels_t;

/* The widest set the CPU runs (cpu.c), or AVX2's where the plan says
 * so (plan->direct_avx2). */
const block_kernels_t *direct_blocks_kernels(const dgrad_plan_t *plan);

#endif
