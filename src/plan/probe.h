/*
 * What timing candidates needs besides the plans (timing.c), shared by
 * the search there and by the challenges of its winner with dgrad's own
 * loops and the projection (challenge.c): scratch user buffers, the
 * weights a candidate runs with, one candidate's time, alternating runs
 * of two, the reduced copy of a problem.
 */
#ifndef DGRAD_PLAN_PROBE_H
#define DGRAD_PLAN_PROBE_H

#include "plan_impl.h"

/* Scratch user buffers for timing candidates (contents irrelevant:
 * zeros, touched so that every page is real), the post-ops' operands
 * included (one per binary post-op, in chain order). */
typedef struct probe_bufs {
    void *in, *wei, *bias, *out;
    void *operands[DGRAD_MAX_POST_OPS];
    size_t out_bytes;
} probe_bufs_t;

/* The weights a timed candidate runs with: the scratch user weights, or,
 * for a plan chosen for constant weights, those weights prepared once in
 * the primitive's layout (their conversion is not part of an execute). */
typedef struct probe_wei {
    const void *ptr;
    int prepared;
    void *own;
} probe_wei_t;

/* How much faster a plan with its chain as a pass must run than the
 * one it would replace (carrying the chain, or the best so far) to be
 * kept: the pass reads and writes the output once more, which the
 * timing's runs find in the cache (the grouped 2D example's 6.4 MB)
 * where a graph's next op seldom does, and a ReLU dgrad's loop applies
 * in registers tied with its pass (0.504 against 0.506 ms in one of five
 * plannings, `DGRAD_LAYOUT_SEARCH=verbose dgrad bench --post-ops relu
 * --data-format NCX g4mb1ic20ih224oc8oh447kh3sh2ph1`). */
#define PASS_MARGIN 0.95

/* The scratch buffers of @p p (@p policy's budget); 0, or -1 when out
 * of memory (nothing held). */
int probe_init(probe_bufs_t *b, const dgrad_problem_t *p,
        const dgrad_plan_policy_t *policy);
void probe_free(probe_bufs_t *b);
/* The weights @p plan runs with (prepared where @p weights_constant);
 * 0, or -1 when they cannot be made (w->own freed by the caller). */
int probe_wei_init(probe_wei_t *w, const dgrad_plan_t *plan,
        const probe_bufs_t *b, int weights_constant);
/* @p plan's chain made before it is timed; -1 when it cannot be. */
int chain_ready(dgrad_plan_t *plan);
/* One execution's typical time, INFINITY when a run fails. */
double time_plan(const dgrad_plan_t *plan, const probe_bufs_t *b,
        const probe_wei_t *w, double best);
/* Alternating runs of two plans, their typical times in @p t; 0 when a
 * run failed. */
int runoff(const dgrad_plan_t *const pl[2], const probe_wei_t w[2],
        const probe_bufs_t *b, int rounds, int runs, double t[2]);
/* Runs per round of a runoff between plans of about @p ms each. */
int runoff_runs(double ms);
/* A copy of @p p within @p bytes and @p macs (keeping its rows where
 * @p keep_rows); -1 when there is none. */
int reduce_within(const dgrad_problem_t *p, double bytes, double macs,
        int keep_rows, dgrad_problem_t *r);

#endif
