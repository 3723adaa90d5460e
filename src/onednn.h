/*
 * oneDNN lowering: canonical problem -> memory descriptors, primitives,
 * reorders; a process-wide plan cache. This layer knows no dialects: it sees
 * only dgrad_problem_t (problem.h).
 */
#ifndef DGRAD_ONEDNN_H
#define DGRAD_ONEDNN_H

#include <stddef.h>

#include "canonical.h"

/* An executable plan for one canonical problem. Immutable after creation
 * and shared (reference counted) between compiled ops through the cache;
 * executing it from several threads at once is safe. */
typedef struct dgrad_plan dgrad_plan_t;

/* How the caller will pass weights to dgrad_plan_execute. The layout
 * choice depends on it: converting variable weights is part of every
 * execute, constant ones are prepared once (dgrad_plan_prepare_weights)
 * and their conversion is not timed. Either plan runs either way. */
typedef enum dgrad_weights_use {
    dgrad_weights_variable = 0,
    dgrad_weights_constant = 1,
} dgrad_weights_use_t;

/*
 * What decides how a plan is chosen, beyond the problem: part of the
 * plan-cache key, so two policies give two plans for one problem (the key
 * is built field by field, so padding bytes take no part).
 */
typedef struct dgrad_plan_policy {
    /* 1: candidates are timed (choice.c); 0: implementation names are
     * ranked instead (DGRAD_LAYOUT_SEARCH=0 in the environment). */
    int32_t layout_search;
    /* Microsecond plans run on one OpenMP thread when measured faster (0),
     * whenever they build (1), or never (2). */
    int32_t threading;
    /* Problems up to max_bytes and max_macs are timed as they are; larger
     * ones on a reduced copy brought under reduced_bytes and reduced_macs;
     * under min_macs nothing is timed. */
    double max_bytes, max_macs, reduced_bytes, reduced_macs, min_macs;
    /* Reorders of tensors of this many bytes or more run in chunks
     * (oneDNN 2.6's jit reorders stop at 2^31 bytes). */
    int64_t chunk_bytes;
    /* A plan's own buffers stay within this many bytes when a leaner
     * candidate exists; 0: a quarter of physical memory. */
    int64_t workspace_budget;
    /* Phases folded into a forward convolution (phase_fold.c) are timed
     * beside the backward-data candidates (1), never offered (0), or the
     * only candidates wherever they apply (2: tests, DGRAD_PHASE_FOLD=only;
     * DGRAD_PHASE_FOLD=0 gives 0). */
    int32_t phase_fold;
    /* dgrad's own loop for few channels per group (direct.c) is timed
     * against the best oneDNN plan (1), never (0), or taken wherever it
     * applies (2: tests, DGRAD_OWN_LOOP=only; DGRAD_OWN_LOOP=0 gives 0). */
    int32_t own_loop;
    /* That loop's kernels where the CPU has AVX-512: timed against the
     * AVX2 ones (0; with own_loop 2, the AVX-512 ones), the AVX-512 ones
     * (1: DGRAD_OWN_KERNELS=widest), or the AVX2 ones (2: tests,
     * DGRAD_OWN_KERNELS=avx2). */
    int32_t own_kernels;
    /* A post-op chain the step writing the output could carry (a folded
     * forward convolution, the bias add, dgrad's own loop) is timed
     * carried and as a pass of its own (0), carried (1:
     * DGRAD_CHAIN_PASS=0), or a pass (2: tests, DGRAD_CHAIN_PASS=only). */
    int32_t chain_pass;
    /* dgrad's own loop copies its input rows (direct_stage.c) by its rule
     * (0), never (1: DGRAD_STAGE_ROWS=never), or wherever the copies fit
     * (2: DGRAD_STAGE_ROWS=always; tests). */
    int32_t stage_rows;
    /* Which of dgrad's own loops a plan of them is: each that applies,
     * timed (0; with own_loop 2, the first that applies: rows, depthwise,
     * blocks, row vectors, phase pair), or only the blocks one (3:
     * tests, DGRAD_OWN_LOOP=blocks, which sets own_loop 2 as well;
     * problems it does not apply to get the timed choice), or only the
     * row vectors one (4: DGRAD_OWN_LOOP=row_vectors, likewise), or only
     * the phase pair one (5: DGRAD_OWN_LOOP=phase_pair, likewise).
     * Internally, also the loop a search builds again for the problem its
     * reduced copy chose (1-5, plan_impl.h's DIRECT_*). */
    int32_t own_loop_kind;
    /* The blocks loop's lanes form spreads a small input first
     * (direct_blocks.c) by its rule (0), never (1:
     * DGRAD_SPREAD_INPUT=never), or wherever it can, whatever the size
     * (2: DGRAD_SPREAD_INPUT=always; tests); by the rule, each thread
     * spreads all of a very small input into its own scratch, except
     * with 3 (DGRAD_SPREAD_INPUT=shared: one copy the threads share,
     * where the rule spreads; tests). */
    int32_t spread_input;
    /* The projection (projection.c) is timed against the best plan of
     * the other strategies (1), never offered (0: DGRAD_PROJECTION=0), or
     * taken wherever it applies (2: tests, DGRAD_PROJECTION=only). */
    int32_t projection;
    /* Small reorders into the plan's buffers (weights, input) run as
     * dgrad's own scatter where it was timed faster than oneDNN's reorder
     * (1), never (0: DGRAD_SMALL_COPY=0), or wherever it can (2: tests,
     * DGRAD_SMALL_COPY=always); small_copy.c. */
    int32_t small_copy;
} dgrad_plan_policy_t;

/* The defaults; layout_search is 0 when DGRAD_LAYOUT_SEARCH=0 is in the
 * environment, phase_fold follows DGRAD_PHASE_FOLD (both read once per
 * process). */
dgrad_plan_policy_t dgrad_plan_policy_default(void);

/*
 * Returns a plan for @p problem, @p weights and @p policy, from the cache
 * when an identical request was planned before, else newly created and
 * inserted. The caller owns one reference: release it with
 * dgrad_plan_release(). Fails with dgrad_unimplemented when oneDNN has no
 * implementation, with a message naming the oneDNN status, and with
 * dgrad_out_of_memory when planning runs out of memory.
 */
dgrad_status_t dgrad_plan_get(const dgrad_problem_t *problem,
        dgrad_weights_use_t weights, const dgrad_plan_policy_t *policy,
        dgrad_plan_t **plan);

/* How an output of layout any is best laid out for the plans: its
 * canonical axes ([N, C, Y...], numbered 0..nsp+1) outermost first, for
 * dgrad_problem_resolve_with_layout. Dense channels-last: what oneDNN's
 * fastest kernels write directly. */
void dgrad_plan_output_order(int nsp, int *order);

/* Drops one reference; NULL accepted. */
void dgrad_plan_release(dgrad_plan_t *plan);

/* oneDNN implementation name, e.g. "jit:avx512_core" (or "none" when the
 * output receives no term and no primitive runs). */
const char *dgrad_plan_impl_name(const dgrad_plan_t *plan);

/* Bytes of the weights in the primitive's own layout and type, or 0 when
 * the primitive reads the user's weights directly. */
size_t dgrad_plan_prepared_weights_size(const dgrad_plan_t *plan);

/* Converts user weights (problem layout and type) into @p prepared
 * (dgrad_plan_prepared_weights_size bytes, 64-byte aligned). Used once for
 * constant weights. */
dgrad_status_t dgrad_plan_prepare_weights(const dgrad_plan_t *plan,
        const void *user_weights, void *prepared);

/*
 * Executes the plan.
 * @param in, bias, out  User buffers in the problem's layouts (bias NULL
 *     unless the problem has one).
 * @param weights  User weights, or prepared weights when
 *     @p weights_prepared is non-zero.
 */
dgrad_status_t dgrad_plan_execute(const dgrad_plan_t *plan, const void *in,
        const void *weights, int weights_prepared, const void *bias,
        void *out);

/* dgrad_plan_execute for a problem with post-ops: @p operands holds one
 * buffer per binary post-op, in chain order. The operand of the in-place
 * Add (dgrad_problem_in_place_post_op) may be @p out itself; no other
 * operand or input may overlap @p out. */
dgrad_status_t dgrad_plan_execute_fused(const dgrad_plan_t *plan,
        const void *in, const void *weights, int weights_prepared,
        const void *bias, const void *const *operands, void *out);

/* How the plan's layout was chosen: "timed", "reduced copy", "untimed",
 * "ranking" or "none" (nothing to compute). For tests. */
const char *dgrad_plan_choice(const dgrad_plan_t *plan);

/* How an execution whose output is the in-place Add's operand runs:
 * "accumulates" (the steps writing the output add onto it), "sets aside"
 * (the operand is copied first) or "none" (no such Add). For tests. */
const char *dgrad_plan_in_place_mode(const dgrad_plan_t *plan);

/* What applies the post-op chain: "bias add" or "convolution" (that
 * oneDNN step, with the chain as its post-ops), "own loop" (dgrad's loop
 * on each row it writes), "pass" (oneDNN's binary primitive over the
 * output after the plan), "own pass" (dgrad's loop after the plan), or
 * "none" (no chain). For tests. */
const char *dgrad_plan_chain_carrier(const dgrad_plan_t *plan);

/* What brings the user's weights into the plan's layout at each
 * execution: a oneDNN reorder's implementation name, "dgrad:scatter"
 * (small_copy.c), "dgrad:channel_blocks" (channel_blocks.c), "dgrad:fold
 * scatter" (the fold's own, fused), or "none"
 * (the weights are read as given, or the plan packs them in its own
 * loop). For tests. */
const char *dgrad_plan_weights_step(const dgrad_plan_t *plan);

/* Whether the plan runs on one OpenMP thread (microsecond problems where
 * that measured faster). For tests. */
int dgrad_plan_single_thread(const dgrad_plan_t *plan);

/* Chunks the plan's reorders run in, summed (a reorder in one piece
 * counts 1; 0 without reorders). For tests. */
int64_t dgrad_plan_reorder_chunks(const dgrad_plan_t *plan);

/* Bytes of the buffers one execution of the plan uses besides the user's
 * (intermediate copies of tensors, scratchpad); each thread executing the
 * plan at the same time has its own. */
size_t dgrad_plan_workspace_size(const dgrad_plan_t *plan);

/* Drops the cache's references to every plan (holders keep theirs); the
 * next request for any problem plans it afresh. */
void dgrad_plan_cache_clear(void);

/* Number of plans currently cached and the number of cache hits so far
 * (for tests). */
size_t dgrad_plan_cache_size(void);
size_t dgrad_plan_cache_hits(void);

#endif
