/*
 * What the blocks loop's files share (direct_blocks.c: where it applies,
 * its rows and their threads; direct_blocks_pack.c: its packed weights;
 * direct_blocks_spread.c: the lanes form's spread input and the blocks
 * of rows it runs from lists; direct_blocks_rows.c: the f32 rows between
 * the loop and the user's tensors): its limits, the geometry of a problem's
 * blocks and the arguments of one run.
 */
#ifndef DGRAD_PLAN_DIRECT_BLOCKS_IMPL_H
#define DGRAD_PLAN_DIRECT_BLOCKS_IMPL_H

#include <stdint.h>

#include "direct_blocks_kernels.h"
#include "plan_impl.h"

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

/* Rows of a run that blocks_listed groups at a time. */
#define LIST_MAX_ROWS 32
/* Where blocks_listed rounds into a 16-bit output, the f32 rows it takes
 * at a time take at most this many floats (at least one row): they are
 * rounded while still in L1. */
#define LIST_MAX_ROUNDED_FLOATS 8192

/* Blocks of a plan's lists at most (16 bytes each: input and output
 * offsets; rows of the last axis' blocks, the whole ones and each end
 * one, counted as X + T + 1): past it the lists are made on every
 * execution. */
#define LISTS_MAX_BLOCKS ((int64_t)1 << 17)

/* The lanes form's limits: input channels per group (the rows of its
 * permutation table), input channels in all (two vectors of a pixel). */
#define LANES_MAX_GROUP_CHANNELS 8
#define LANES_MAX_CIN 32

/* Output columns of an input pixel (S * Cout, last axis) and the packed
 * weights' row. */
static inline int64_t cols(const dgrad_problem_t *p) {
    return p->S[p->nsp - 1] * p->Cout;
}

static inline int64_t padded_cols(const dgrad_problem_t *p) {
    return (cols(p) + BLOCKS_COL_ALIGN - 1) / BLOCKS_COL_ALIGN
            * BLOCKS_COL_ALIGN;
}

/* Taps of axis @p i that one phase can have: ceil(K / S). */
static inline int64_t axis_taps(const dgrad_problem_t *p, int i) {
    return (p->K[i] + p->S[i] - 1) / p->S[i];
}

/* Combinations of taps of the outer axes that one outer phase can have,
 * and terms (input pixel offset and weights) of a block at most. */
static inline int64_t outer_taps(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= axis_taps(p, i);
    return n;
}

/* Phases of the outer axes: the product of their strides. */
static inline int64_t outer_phases(const dgrad_problem_t *p) {
    int64_t n = 1;
    for (int i = 0; i < p->nsp - 1; i++) n *= p->S[i];
    return n;
}

typedef struct blocks_args {
    const dgrad_plan_t *plan;
    const block_kernels_t *k;
    const char *in; /* the user's type, or f32 where the plan stages */
    const int64_t *is; /* in's strides: the plan's, or the spread copy's */
    const float *w, *bias;
    const void *const *operands;
    char *out;
    size_t esize; /* bytes of an element of in and out */
    /* the user's 16-bit output where the plan stages in f32 and the
     * threads round the rows they stored (direct_blocks_rounds_output),
     * else NULL */
    char *round_into;
    /* the user's 16-bit input where the threads widen it into the f32
     * staging copy (in) first, each its share of the rows
     * (direct_blocks_widens_input), else NULL */
    const char *widen_from;
    const void *user_w; /* the user's weights, packed first into */
    float *pack_into;   /* this (w), or NULL: w is packed */
    int64_t rows;       /* packed rows per term (blocks_term_rows) */
    int lanes;          /* blocks_lanes_form, with its permutation: */
    int32_t pattern[LANES_MAX_GROUP_CHANNELS][16];
    const char *user_in; /* the input (f32 or 16-bit), spread first into */
    float *spread_into;  /* this (in), or NULL */
    /* the threads' scratch, per_thread bytes each; with private_off > 0
     * each thread packs the weights into its own at that offset, with
     * spread_private_off > 0 spreads the whole input into its own at that
     * offset (and spread_into is NULL) */
    char *scratch;
    size_t per_thread, private_off, spread_private_off;
    int64_t spread_strides[2 + DGRAD_MAX_SPATIAL];
    /* what every row needs of the plan, worked out once per run (its
     * divisions, for every row, took blocks_row from 2.5% to 3.4% of a
     * `perf record` of deconv_ci_3d:grouped): cols, padded_cols,
     * axis_taps of each axis (T: the last), outer_taps; a row's blocks x0
     * .. x1, of which lo .. hi run in one call (blocks_span); the
     * kernels' epilogue and the chain's step after it; rows_in_f32,
     * blocks_output_cl, the lanes form's LANES_BY_* and row_buffers */
    int64_t nc, np, taps[DGRAD_MAX_SPATIAL], T, ot, x0, x1, lo, hi;
    epilogue_t ep;
    int from, in_f32, out_cl, by;
    /* whether the spread copy's rows run from lists (blocks_listed), the
     * rows of a run it takes at a time, and the output offsets of a
     * block's columns where it stores f32 into an output that is not
     * channels-last */
    int listed;
    int64_t list_rows;
    int32_t colidx[NV_MAX * 16];
    int64_t row_buf;
} blocks_args_t;

/* A plan's lists (blocks_lists_make): for each line of an image (its
 * outer positions but the run axis) and each chunk of list_rows rows of
 * it, the list calls blocks_listed would make, as offsets from the
 * image's input and output (16-bit: the chunk's f32 rows), the weights
 * and the bias row: made once, they serve every execution (the
 * threads' runs take them for the chunks they cover whole). Chunk i's
 * sets are [chunk_sets[i], chunk_sets[i + 1]); a set is a list of
 * terms and columns, its calls one kernel's blocks each. One
 * allocation (plan_destroy frees it). */
typedef struct list_call {
    lanes_list_fn fn;
    int64_t first, count; /* blocks [first, first + count) of pix, dst */
} list_call_t;

typedef struct list_set {
    int64_t terms_at, nterms, c0, ncols, calls_at, ncalls;
} list_set_t;

typedef struct blocks_lists {
    int64_t *chunk_sets;
    list_set_t *sets;
    list_call_t *calls;
    int64_t *soff, *woff, *pix, *dst;
    int64_t nsets, ncalls, nterms, nblocks;
} blocks_lists_t;

/* direct_blocks.c: whether groups run in the lanes form, the packed
 * rows per term (every input channel, or one per channel of a group),
 * whether the output is channels-last along its last axis (blocks go
 * straight into it), whether the lanes form spreads the input first,
 * and whether the spread rows run from lists (blocks_listed). */
int blocks_lanes_form(const dgrad_plan_t *plan);
int64_t blocks_term_rows(const dgrad_plan_t *plan);
int blocks_output_cl(const dgrad_plan_t *plan);
int blocks_lanes_spread(const dgrad_plan_t *plan);
int blocks_spread_listed(const dgrad_plan_t *plan);

/* direct_blocks_pack.c: rows of the packed weights, and rows [@p r0,
 * @p r1) of them packed from the user's weights (the zeros after them
 * too where @p r1 is the last). */
int64_t blocks_packed_rows(const dgrad_plan_t *plan);
/* Whether rows are packed by AVX-512 gathers (16-bit ones as 32-bit
 * words): few columns, column offsets within 32-bit indices, enough
 * rows to pay for the index vectors. */
int blocks_pack_gathers(const dgrad_plan_t *plan);
void blocks_pack_rows(const dgrad_plan_t *plan, const void *user,
        float *packed, int64_t r0, int64_t r1);

/* Where the loop widens 16-bit rows itself (rows_in_f32), a thread's
 * scratch holds widened_rows input rows widened: twice the rows one
 * output row reads (outer_taps), so that the rows an output row adds
 * never take the place of one it reads and the next output rows find
 * most of theirs. At most this many (past it, f32 copies of the whole
 * tensors). */
#define WIDENED_MAX_ROWS 16

static inline int64_t widened_rows(const dgrad_problem_t *p) {
    return 2 * outer_taps(p);
}

/* The input rows a thread holds widened (rows_in_f32), in slots of X x
 * Cin floats: the input row (element offset) each slot holds (-1:
 * none), the output row that last read it, and output rows begun. */
typedef struct widened {
    int64_t row[WIDENED_MAX_ROWS], last[WIDENED_MAX_ROWS], clock;
} widened_t;

/* direct_blocks_rows.c, the f32 rows between the loop and the user's
 * tensors: @p wd emptied (a thread's run of rows begins); the slot of @p
 * wd (slots of X x Cin floats at @p rows, widened_rows of them) that
 * holds input row @p in_off (elements of @p in, 16-bit) widened, widened
 * there first if none does, in place of the row read longest ago (never
 * one the current output row reads: the slots are twice its rows); and
 * an output row computed channels-last in @p row (Y pixels of Cout)
 * stored into a layout that is not, at @p out (its first pixel). */
void blocks_widened_reset(widened_t *wd);
int64_t blocks_widened_slot(const blocks_args_t *a, const char *in,
        int64_t in_off, widened_t *wd, float *rows);
void blocks_store_row(const blocks_args_t *a, const float *row, float *out);
/* Where the loop stages a 16-bit problem in f32 itself
 * (direct_blocks_rounds_output, direct_blocks_widens_input): the row of
 * image @p n at outer output position @p y, just stored into the staging
 * output at @p out_off, rounded into the user's output; and thread @p th
 * of @p nth's share of the input rows widened into the staging input. */
void blocks_round_row(const blocks_args_t *a, int64_t n, const int64_t *y,
        int64_t out_off);
void blocks_widen_share(const blocks_args_t *a, int th, int nth);

/* direct_blocks_spread.c: pixels [@p i0, @p i1) of the spread input
 * into @p into (AVX-512; a 16-bit input widened on the way), and a run
 * of rows from it by lists (@p in the spread input, @p w the packed
 * weights, @p brow the bias along the columns; where the output is
 * 16-bit, @p rounded has room for 3 x list_rows f32 output rows: the
 * rows, then what rounding them takes). */
void blocks_spread_pixels(const blocks_args_t *a, float *into, int64_t i0,
        int64_t i1);
void blocks_listed(const blocks_args_t *a, const char *in, const float *w,
        int64_t n, const int64_t *y, int64_t run, const float *brow,
        float *rounded);
/* The lists of @p a's plan (only its geometry is read) into @p lists, or
 * NULL there where they would take more than LISTS_MAX_BLOCKS blocks
 * (they are then made on every execution). 0 where memory ran out
 * (planning_failed says so). */
int blocks_lists_make(const blocks_args_t *a, blocks_lists_t **lists);

#endif
