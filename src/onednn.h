/*
 * oneDNN lowering: canonical problem -> memory descriptors, primitives,
 * reorders; a process-wide plan cache. This layer knows no dialects: it sees
 * only dgrad_problem_t (problem.h).
 */
#ifndef DGRAD_ONEDNN_H
#define DGRAD_ONEDNN_H

#include <stddef.h>

#include "problem.h"

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
 * Returns a plan for @p problem and @p weights, from the cache when an
 * identical problem (bytewise equal dgrad_problem_t) with the same weights
 * use was planned before, else newly created and inserted. The caller owns
 * one reference: release it with dgrad_plan_release(). Fails with
 * dgrad_unimplemented when oneDNN has no implementation, with a message
 * naming the oneDNN status.
 */
dgrad_status_t dgrad_plan_get(const dgrad_problem_t *problem,
        dgrad_weights_use_t weights, dgrad_plan_t **plan);

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

/* How the plan's layout was chosen: "timed", "reduced copy", "untimed",
 * "ranking" or "none" (nothing to compute). For tests. */
const char *dgrad_plan_choice(const dgrad_plan_t *plan);

/* Whether the plan runs on one OpenMP thread (microsecond problems where
 * that measured faster). For tests. */
int dgrad_plan_single_thread(const dgrad_plan_t *plan);

/* For tests: microsecond plans are kept on one thread when measured
 * faster (0, the default), whenever it builds (1), or never (2). */
void dgrad_plan_set_threading_for_testing(int mode);

/* Chunks the plan's reorders run in, summed (a reorder in one piece
 * counts 1; 0 without reorders). For tests. */
int64_t dgrad_plan_reorder_chunks(const dgrad_plan_t *plan);

/* For tests: plans created afterwards run every reorder whose tensors
 * take @p bytes or more in chunks, as they do beyond oneDNN's 2^31-byte
 * limit; 0 restores the default. Not part of any cache key: use problems
 * not planned before. */
void dgrad_plan_set_chunk_limit_for_testing(int64_t bytes);

/* Bytes of the buffers one execution of the plan uses besides the user's
 * (intermediate copies of tensors, scratchpad); each thread executing the
 * plan at the same time has its own. */
size_t dgrad_plan_workspace_size(const dgrad_plan_t *plan);

/* For tests: the workspace budget (a quarter of physical memory by
 * default) that plans created afterwards respect when a leaner candidate
 * exists; 0 restores the default. */
void dgrad_plan_set_workspace_budget_for_testing(int64_t bytes);

/* For tests: the sizes that decide how plans created afterwards choose
 * their layouts (bytes and multiply-adds up to which a problem is timed
 * as it is, the size its reduced copy is brought under beyond those, and
 * the multiply-adds under which nothing is timed). Zero @p max_bytes
 * restores the defaults. Not part of any cache key. */
void dgrad_plan_set_search_limits_for_testing(double max_bytes,
        double max_macs, double reduced_bytes, double reduced_macs,
        double min_macs);

/* Drops the cache's references to every plan (holders keep theirs); the
 * next request for any problem plans it afresh. */
void dgrad_plan_cache_clear(void);

/* Number of plans currently cached and the number of cache hits so far
 * (for tests). */
size_t dgrad_plan_cache_size(void);
size_t dgrad_plan_cache_hits(void);

#endif
