/*
 * The oneDNN layer's declarations of dgrad's own loops (direct_loops.c,
 * direct.c, direct_dw.c, direct_blocks.c, direct_row_vectors.c,
 * direct_gemm_rows.c): which loop a plan runs, whether each applies, its
 * scratch, packed weights and run. Included at the end of plan_impl.h,
 * whose plan they take; the rest of the layer sees them through it.
 */
#ifndef DGRAD_PLAN_OWN_LOOPS_H
#define DGRAD_PLAN_OWN_LOOPS_H

#include "plan_impl.h"

/* ----------------------------------------------- direct_loops.c, direct.c */

/* dgrad's own loops: along output rows of few channels per group in
 * NCX (direct.c), along the channels of depthwise channels-last
 * (direct_dw.c), over blocks of S output pixels, channels-last along a
 * block, of few groups (direct_blocks.c), or whole short output rows
 * as vectors (direct_row_vectors.c), or both phases of stride 2 of 1D
 * rows at once, each input run loaded once for every tap
 * (direct_phase_pair.c), or those rows in bf16 as products of AMX tiles
 * (direct_phase_pair_amx.c; both declared in direct_phase_pair.h), or
 * input rows of many channels as oneDNN sgemm products whose columns
 * are added into the output rows (direct_gemm_rows.c). The direct_*
 * functions serve all seven, by plan->direct (DIRECT_LAST: the last
 * kind). */
enum {
    DIRECT_ROWS = 1,
    DIRECT_DEPTHWISE_CL = 2,
    DIRECT_BLOCKS_CL = 3,
    DIRECT_ROW_VECTORS = 4,
    DIRECT_PHASE_PAIR = 5,
    DIRECT_PHASE_PAIR_AMX = 6,
    DIRECT_GEMM_ROWS = 7,
    DIRECT_LAST = DIRECT_GEMM_ROWS
};

/* The loop of @p kind (DIRECT_*; 0: the first that applies) if it
 * applies to a plan with these io descs, 0 for none. */
int direct_applicable(const dgrad_plan_t *plan, int kind);
/* Whether the plan's loop runs AVX-512 kernels unless told otherwise
 * (direct_avx2) and the CPU has AVX2 ones as well. */
int direct_avx2_differs(const dgrad_plan_t *plan);
/* The phase of stride 2 (0 even, 1 odd) with one tap where the rows
 * loop's kernels load each input run once for both phases, else -1
 * (direct.c). */
int direct_shared_phase(const dgrad_plan_t *plan);
int direct_taps_init(dgrad_plan_t *plan);
size_t direct_scratch_size(const dgrad_plan_t *plan, int *threads);
size_t direct_weights_size(const dgrad_plan_t *plan);
/* Whether direct_run with user weights leaves them packed in its
 * pack_into buffer (the blocks loop packs small ones into each thread's
 * scratch instead). */
int direct_packs_into(const dgrad_plan_t *plan);
/* What the plan's loop makes once, at plan creation, after its scratch
 * is sized. 0 where memory ran out. */
int direct_prepare(dgrad_plan_t *plan);
void direct_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed);
/* The output from @p in, packed weights @p w and f32 @p bias (or NULL);
 * with @p operands (the binary post-ops', NULL when the plan carries no
 * chain: plan->post.fused), each row then takes the chain. Where
 * @p pack_into is not NULL, @p w is the user's weights, which the loop
 * first packs there (direct_weights_size bytes). Where
 * direct_rounds_output, @p out is the f32 staging copy and @p round_into
 * the user's output, which the loop's threads write from it (else
 * @p round_into is NULL and the caller converts); where
 * direct_widens_input, @p in is the f32 staging copy, which the loop
 * widens from @p widen_from first (else NULL). */
void direct_run(const dgrad_plan_t *plan, const void *in, const void *w,
        float *pack_into, const float *bias, const void *const *operands,
        void *out, void *round_into, const void *widen_from,
        char *scratch);
/* Whether @p plan's loop rounds its staged f32 output into the user's
 * 16-bit output itself, each thread the rows it computed (no conversion
 * pass after it); planning keeps the answer in plan->direct_rounds_out,
 * which execution reads. */
int direct_rounds_output(const dgrad_plan_t *plan);
/* Whether @p plan's loop widens the user's 16-bit input into its f32
 * staging copy itself (no conversion pass before it); kept in
 * plan->direct_widens_in. */
int direct_widens_input(const dgrad_plan_t *plan);

/* Width of one entry of axis @p i's tap table (direct_taps.c). */
int64_t direct_taps_width(const dgrad_problem_t *p, int i);
/* The tap table of axis @p i (zeroed, Y[i] entries of 1 + 2*K[i]): per
 * output position, the count of taps reaching it, then (k, input
 * position) pairs. Returns the end of the table. */
int64_t *direct_position_taps(const dgrad_problem_t *p, int i, int64_t *t);
/* The entry of axis @p i's table for output position @p y (< Y[i]) in
 * plan->direct_taps, where the tables lie axis after axis: the outer
 * axes of the rows loop (its last axis holds phases: direct_last_taps),
 * every axis of the depthwise loop. */
const int64_t *direct_outer_taps(const dgrad_plan_t *plan, int i,
        int64_t y);
/* Runs @p fn over @p rows output rows on the OpenMP threads the plan's
 * scratch has room for, in tiles of @p tile positions of the last outer
 * axis where not 0 (direct_share.c; for both loops). */
typedef void (*direct_row_fn)(void *arg, int64_t rest, const int64_t *y,
        int64_t run, char *scratch);
void direct_for_rows(const dgrad_plan_t *plan, int64_t rows, int64_t tile,
        double work, size_t per_thread, char *scratch, direct_row_fn fn,
        void *arg);
/* The same, each thread first running @p first (thread th of nth) and,
 * with @p first_shared, waiting for the others to finish theirs: work
 * every row reads, shared out over the threads already running the rows
 * (a second parallel region, or one thread doing it all while the other
 * waits, would cost a wake-up or the whole of it on this work's scale);
 * without, each thread's first makes only what its own rows read. */
typedef void (*direct_first_fn)(void *arg, int th, int nth);
/* Thread @p th of @p nth's contiguous share [*@p begin, *@p end) of @p n
 * steps, as direct_for_rows_after shares them (untiled, its steps are
 * the rows). */
void direct_share_of(int64_t n, int64_t th, int64_t nth, int64_t *begin,
        int64_t *end);
void direct_for_rows_after(const dgrad_plan_t *plan, int64_t rows,
        int64_t tile, double work, size_t per_thread, char *scratch,
        direct_first_fn first, int first_shared, direct_row_fn fn,
        void *arg);
/* The OpenMP threads a parallel region would have now (1 without
 * OpenMP). */
int direct_threads_max(void);

/* The rows loop's own (direct.c), as direct_loops.c passes the calls on. */
int direct_rows_applicable(const dgrad_plan_t *plan);
int direct_rows_avx2_differs(const dgrad_plan_t *plan);
size_t direct_rows_thread_scratch(const dgrad_plan_t *plan);
size_t direct_rows_weights_size(const dgrad_problem_t *p);
/* Weights as f32 [G][Cout/G][Cin/G][K...], from the user's type and
 * strides. */
void direct_rows_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed);
int direct_rows_taps_init(dgrad_plan_t *plan);
void direct_rows_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, const void *const *operands,
        void *out, char *scratch);

/* ---------------------------------------------------------- direct_dw.c */

int direct_dw_applicable(const dgrad_plan_t *plan);
int direct_dw_taps_init(dgrad_plan_t *plan);
/* Scratch bytes of one thread. */
size_t direct_dw_thread_scratch(const dgrad_problem_t *p);
size_t direct_dw_weights_size(const dgrad_problem_t *p);
void direct_dw_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed);
void direct_dw_run(const dgrad_plan_t *plan, const void *in, const float *w,
        const float *bias, const void *const *operands, void *out,
        char *scratch);

/* ------------------------------------------------------ direct_blocks.c */

int direct_blocks_applicable(const dgrad_plan_t *plan);
/* Scratch bytes of one thread. */
size_t direct_blocks_thread_scratch(const dgrad_plan_t *plan);
/* Scratch bytes the threads share, after their parts: the spread input
 * (in the lanes form, where the input is small). */
size_t direct_blocks_shared_scratch(const dgrad_plan_t *plan);
size_t direct_blocks_weights_size(const dgrad_plan_t *plan);
/* Whether a plan of the blocks loop runs its groups in the lanes form
 * (input channels permuted into each group's lanes) rather than as
 * block-diagonal weights: 0 not, 1 permuted as the terms load them, 2
 * spread once before the rows, 3 spread and its rows' blocks run from
 * lists. */
int direct_blocks_lanes(const dgrad_plan_t *plan);
/* What a plan of the blocks loop makes once, at plan creation
 * (direct_prepare): where its rows run from lists, the lists
 * (plan->direct_lists; not where they would be large). 0 where memory
 * ran out. */
int direct_blocks_prepare(dgrad_plan_t *plan);
void direct_blocks_pack_weights(const dgrad_plan_t *plan, const void *user,
        float *packed);
/* Whether a run with user weights packs them into pack_into, shared by
 * the threads (else each packs all of them into its own scratch). */
int direct_blocks_packs_shared(const dgrad_plan_t *plan);
/* Whether a run of @p plan rounds its f32 staging output into the user's
 * 16-bit one itself (direct_blocks_run's @p round_into), each thread the
 * rows it computed. */
int direct_blocks_rounds_output(const dgrad_plan_t *plan);
/* Whether such a run also widens the user's 16-bit input into the f32
 * staging copy itself, in the region, before its rows (@p in is then the
 * staging copy, unwritten, and @p widen_from the user's input). */
int direct_blocks_widens_input(const dgrad_plan_t *plan);
/* With @p pack_into not NULL, packs the user's weights @p w there first,
 * each thread a share of the packed rows, in the region that then runs
 * the rows. With @p round_into not NULL (direct_blocks_rounds_output),
 * each row stored into the staging output @p out is rounded there too;
 * with @p widen_from not NULL (direct_blocks_widens_input), the threads
 * first widen it into the staging input @p in. */
void direct_blocks_run(const dgrad_plan_t *plan, const void *in,
        const void *w, float *pack_into, const float *bias,
        const void *const *operands, void *out, void *round_into,
        const void *widen_from, char *scratch);

/* ------------------------------------------------- direct_row_vectors.c */

int direct_row_vectors_applicable(const dgrad_plan_t *plan);
/* Scratch bytes of an execution (it runs on the calling thread). */
size_t direct_row_vectors_scratch(const dgrad_plan_t *plan);
size_t direct_row_vectors_weights_size(const dgrad_plan_t *plan);
/* Its tables (plan->direct_row_vectors), made once at plan creation.
 * 0 where memory ran out. */
int direct_row_vectors_prepare(dgrad_plan_t *plan);
void direct_row_vectors_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed);
/* The output from @p in, packed weights @p w and f32 @p bias (or NULL);
 * the chain, where the plan carries it, is the kernels' epilogue. */
void direct_row_vectors_run(const dgrad_plan_t *plan, const void *in,
        const float *w, const float *bias, void *out, char *scratch);

/* --------------------------------------------------- direct_gemm_rows.c */

int direct_gemm_rows_applicable(const dgrad_plan_t *plan);
/* Scratch bytes of each thread (the products' columns, the open output
 * rows, and a row for the post-op chain where the plan has one). */
size_t direct_gemm_rows_thread_scratch(const dgrad_plan_t *plan);
size_t direct_gemm_rows_weights_size(const dgrad_problem_t *p);
void direct_gemm_rows_pack_weights(const dgrad_plan_t *plan,
        const void *user, float *packed);
/* The f32 output from the f32 input @p in, packed weights @p w and f32
 * @p bias (or NULL), each output row then taking the post-op chain with
 * @p operands (NULL: the plan carries none). */
void direct_gemm_rows_run(const dgrad_plan_t *plan, const float *in,
        const float *w, const float *bias, const void *const *operands,
        float *out, char *scratch);

#endif
