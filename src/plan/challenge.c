/*
 * The search's winner (timing.c) challenged by each plan of dgrad's own
 * loops that applies, with its chain carried or as a pass, and on the
 * AVX2 kernels where the CPU has wider ones, and by the projection
 * (choice.c): each timed against it on the same scratch buffers, the
 * faster kept.
 */
#include "plan_impl.h"
#include "probe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* @p best (timed at @p best_ms), or @p own (a plan of dgrad's own loop,
 * direct.c, or the projection, projection.c) where it runs faster than
 * @p margin times @p best's time on scratch buffers (a close call decided
 * by alternating runs, as in search); frees the other. */
static dgrad_plan_t *challenge_within(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        dgrad_plan_t *best, dgrad_plan_t *own, double *best_ms,
        double margin) {
    probe_bufs_t bufs;
    probe_wei_t w[2] = {{NULL, 0, NULL}, {NULL, 0, NULL}};
    const dgrad_plan_t *pl[2] = {best, own};
    double t[2] = {*best_ms, INFINITY};
    int have_bufs = probe_init(&bufs, problem, policy) == 0, ok = have_bufs;
    for (int j = 0; ok && j < 2; j++)
        ok = probe_wei_init(&w[j], pl[j], &bufs, weights_constant) == 0;
    if (ok) ok = chain_ready(best) == 0 && chain_ready(own) == 0;
    if (ok) t[1] = time_plan(own, &bufs, &w[1], t[0]);
    if (ok && t[1] < 1.15 * t[0]) {
        int runs = runoff_runs(t[0]);
        t[0] = t[1] = INFINITY;
        ok = runoff(pl, w, &bufs, 3, runs, t);
    }
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: %s%s%s (chain: %s) %.4f ms, "
                "%s%s%s (chain: %s) %.4f ms\n", best->impl,
                best->direct && best->staged ? " (f32 copies)" : "",
                best->direct_avx2 ? " (AVX2 kernels)" : "",
                dgrad_plan_chain_carrier(best), t[0],
                own->direct ? "dgrad's own loop" : own->impl,
                own->staged ? " (f32 copies)" : "",
                own->direct_avx2 ? " (AVX2 kernels)" : "",
                dgrad_plan_chain_carrier(own), t[1]);
    free(w[0].own);
    free(w[1].own);
    if (have_bufs) probe_free(&bufs);
    int keep_own = ok && t[1] < margin * t[0];
    plan_destroy(keep_own ? best : own);
    if (keep_own) *best_ms = t[1];
    return keep_own ? own : best;
}

/* challenge_within, @p own kept wherever it runs faster. */
dgrad_plan_t *challenge_with(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        dgrad_plan_t *best, dgrad_plan_t *own, double *best_ms) {
    return challenge_within(problem, policy, weights_constant, best, own,
            best_ms, 1.0);
}


/* Whether dgrad's own loop of @p problem (@p staged as built) runs faster
 * on its AVX2 kernels than on AVX-512's, timed on a copy that keeps its
 * rows, and its copies of them where the problem's loop has them
 * (build_direct_as_problem), and is larger than the last-level cache
 * (up to the policy's max_bytes and max_macs), where @p problem is too
 * large to time as it is: a reduced copy's rows are short and its
 * output stays in the cache, where the two sets tied (the full 3D
 * specification example's copy: 3.06 against 3.14 ms) while on the
 * problem the AVX2 ones took 275 ms against 345-352
 * (`DGRAD_OWN_KERNELS=avx2|widest dgrad demo`, AMD EPYC Zen 4). @p
 * chosen (the reduced copy's) where the policy fixes the set or that
 * copy cannot be made or run. */
int own_kernels_on_rows_copy(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        int staged, int chosen) {
    if (policy->own_kernels) return chosen; /* fixed: the copy's choice */
    return_freed_memory();
    double bytes = 4.0 * (double)cpu_llc_bytes();
    if (bytes < policy->reduced_bytes) bytes = policy->reduced_bytes;
    if (bytes > policy->max_bytes) bytes = policy->max_bytes;
    dgrad_problem_t r;
    if (reduce_within(problem, bytes, policy->max_macs, 1, &r) != 0)
        return chosen;
    dgrad_plan_t *wide = build_direct_as_problem(&r, problem, policy, staged,
                         0),
                 *avx2 = build_direct_as_problem(&r, problem, policy, staged,
                         1);
    if (!wide || !avx2) {
        if (wide) plan_destroy(wide);
        if (avx2) plan_destroy(avx2);
        return chosen;
    }
    double ms = INFINITY;
    dgrad_plan_t *kept = challenge_with(&r, policy, weights_constant, wide,
            avx2, &ms);
    int on_avx2 = kept->direct_avx2;
    plan_destroy(kept);
    return on_avx2;
}

/* dgrad's own loop of @p copy, a reduced copy of @p problem, copying its
 * input rows (direct_stage.c) where the loop of @p problem does, or not
 * at all where that one does not: the rule weighs the rows' length and
 * the spacing of channel planes, which the copy changes, and a copy
 * timed on rows the problem would read in place says nothing of the
 * problem (`masknet_p1:deconv1`, 64 -> 3 channels of 512^2, f32 NCX: on
 * its copy of 128 x 256 the copies fit the L2 budget and the loop beat
 * oneDNN's gemm; on the problem they do not fit and it took 82-99 ms
 * against 50-57, `dgrad bench --data-format NCX --weights-format OIX
 * g1mb1ic64ih512iw512oc3oh1030ow1030kh7kw7sh2sw2ph0pw0`, AMD EPYC Zen 4).
 * NULL where the loop does not apply to @p problem. */
dgrad_plan_t *build_direct_as_problem(const dgrad_problem_t *copy,
        const dgrad_problem_t *problem, const dgrad_plan_policy_t *policy,
        int staged, int avx2) {
    dgrad_plan_t *own = build_direct(copy, policy, staged, avx2);
    if (!own || !problem) return own;
    /* a loop's limits are sizes, which a copy can be within where the
     * problem is not (the row vectors loop's rows of 128 values): a loop
     * that does not apply to the problem is not timed on its copy */
    dgrad_plan_t *full = build_direct(problem, policy, staged, avx2);
    if (!full) {
        plan_destroy(own);
        return NULL;
    }
    int copies = full->direct_stage.slots > 0;
    plan_destroy(full);
    if (policy->stage_rows || (own->direct_stage.slots > 0) == copies)
        return own;
    plan_destroy(own);
    dgrad_plan_policy_t as_problem = *policy;
    as_problem.stage_rows = copies ? 2 : 1;
    return build_direct(copy, &as_problem, staged, avx2);
}

/* dgrad's own loop (as build_direct_as_problem builds it) with the
 * chain as a pass of its own after it, for a loop that could carry the
 * chain (NULL without a chain, and where the policy fixes the carrier):
 * a loop applying a costly chain to each row as it writes it can lose to
 * the bare loop and one oneDNN pass over the output (the grouped 2D
 * specification example with GELU (erf), f32 NCX: 1.54-1.71 ms carried,
 * 0.90-1.23 with the pass; bench/README.md, thirty-third look). A reduced
 * copy is timed without the chain (reduce_within), and its problem's
 * loop carries it. */
static dgrad_plan_t *own_chain_passed(const dgrad_problem_t *problem,
        const dgrad_problem_t *full, const dgrad_plan_policy_t *policy,
        int staged, int avx2) {
    if (!problem->n_post_ops || policy->chain_pass) return NULL;
    dgrad_plan_t *passed = build_direct_as_problem(problem, full, policy,
            staged, avx2);
    if (passed) passed->post.passed = 1;
    return passed;
}

/* Each form of dgrad's own loop that applies (on the user's tensors, on
 * f32 copies: for 16-bit types either can win, the copies costing two
 * passes, the widening in the loop an instruction per load; on a CPU
 * with AVX-512, its kernels and the AVX2 ones, as the policy allows: an
 * AMD Zen 4 runs a 512-bit operation as two 256-bit halves, and there the
 * AVX2 kernels' tuning won, the dense 2D specification example 1.22-1.26
 * ms against 1.57-1.63 in NCX, bench/README.md) against @p best, the
 * faster kept. Where @p problem is a reduced copy of @p full (else NULL),
 * each loop is timed copying the input rows as on @p full. */
dgrad_plan_t *challenge_with_direct(const dgrad_problem_t *problem,
        const dgrad_problem_t *full, const dgrad_plan_policy_t *policy,
        int weights_constant, dgrad_plan_t *best, double *best_ms) {
    dgrad_plan_policy_t kind = *policy;
    for (int k = DIRECT_ROWS; k <= DIRECT_LAST; k++) {
        if (policy->own_loop_kind && k != policy->own_loop_kind) continue;
        kind.own_loop_kind = k;
        for (int s = 0; s < 2; s++)
            for (int avx2 = 0; avx2 < 2; avx2++) {
                if (policy->own_kernels == (avx2 ? 1 : 2)) continue;
                dgrad_plan_t *own = build_direct_as_problem(problem, full,
                        &kind, s, avx2);
                int carries = own && direct_can_carry(own);
                if (own)
                    best = challenge_with(problem, policy, weights_constant,
                            best, own, best_ms);
                dgrad_plan_t *passed = carries ? own_chain_passed(problem,
                        full, &kind, s, avx2) : NULL;
                if (passed)
                    best = challenge_within(problem, policy,
                            weights_constant, best, passed, best_ms,
                            PASS_MARGIN);
            }
    }
    return best;
}
