/*
 * Why this layout: the choice policy.
 *
 * Plan creation asks oneDNN for the layout candidates (candidates.c) and,
 * when more than one remains, picks by one of three strategies:
 * - untimed, for problems without groups or post-ops under the policy's
 *   min_macs (microseconds whatever the layout): the candidate with the
 *   fewest reorders per execute, then dgrad's own loop against it in
 *   alternating runs;
 * - timed, for problems up to max_bytes and max_macs: each candidate runs
 *   on scratch buffers, reorders and conversions included (weights
 *   prepared first when the caller declares them constant, which is part
 *   of the cache key), and the fastest is kept (timing.c);
 * - on a reduced copy, beyond those: the copy's winner is built for the
 *   real problem only if every step keeps the same implementation.
 * Without timing (policy layout_search 0, DGRAD_LAYOUT_SEARCH=0), and as
 * the fallback of the others, the ranking of implementation names.
 * Plans of a few microseconds are also tried on one OpenMP thread, and a
 * plan's own buffers stay within the workspace budget when a leaner
 * candidate exists. The plan cache (cache.c) makes this a one-time cost
 * per problem.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

/* The implementations of every step of a plan, for comparing a plan
 * built for a problem with the one timed on its reduced copy. */
static void plan_signature(const dgrad_plan_t *plan, char *buf, size_t size) {
    const step_t *steps[] = {&plan->in.reorder, &plan->wei.reorder,
            &plan->conv, &plan->bias_add, &plan->out.reorder};
    size_t n = 0;
    buf[0] = 0;
    /* Reorders by class only: a chunked jit reorder (beyond 2^31 bytes)
     * stands for the whole-tensor jit one timed on the reduced copy. */
    for (size_t i = 0; i < sizeof steps / sizeof steps[0] && n < size; i++)
        n += (size_t)snprintf(buf + n, size - n, "%s|",
                !steps[i]->prim ? "-"
                        : steps[i] == &plan->conv || steps[i] == &plan->bias_add
                        ? steps[i]->impl
                        : impl_is_generic(steps[i]->impl) ? "generic" : "jit");
    /* The phase reorders as one class (how many pieces a phase takes
     * depends on the sizes). */
    int generic = 0;
    for (int i = 0; i < plan->fold.n_copies; i++)
        generic |= impl_is_generic(plan->fold.copies[i].step.impl);
    if (plan->fold.n_copies && n < size)
        snprintf(buf + n, size - n, "phases %s|", generic ? "generic" : "jit");
}

/* Whether every reorder of a plan has a jit implementation: oneDNN 2.6
 * falls back to its generic reorder (simple:any, some 50 ns per element;
 * see convert.c for the measurement) for f16 and for tensors beyond 2^31
 * bytes. */
static int reorders_fast(const dgrad_plan_t *plan) {
    const step_t *steps[] = {&plan->in.reorder, &plan->wei.reorder,
            &plan->out.reorder};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i]->prim && impl_is_generic(steps[i]->impl))
            return 0;
    for (int i = 0; i < plan->fold.n_copies; i++)
        if (impl_is_generic(plan->fold.copies[i].step.impl)) return 0;
    return 1;
}

/* Candidates in the order the ranking prefers them without timings:
 * folded ones last (their phase reorders pay only where timed faster),
 * computed tails next to last (they are checked only when timed), then by
 * implementation rank, then in order of preference. Returns how many. */
static int rank_order(const cand_pd_t *pds, int n, int *sorted) {
    int k = 0;
    for (int fold = 0; fold <= 1; fold++)
        for (int tail = 0; tail <= 1; tail++)
            for (int rank = 2; rank >= 0; rank--)
                for (int i = 0; i < n; i++)
                    if (impl_rank(pds[i].pd) == rank
                            && pds[i].extend_tail == tail
                            && !!pds[i].fold == fold)
                        sorted[k++] = i;
    return k;
}

/* The value an environment variable selects, read once per process into
 * @p cache: @p v1 for word @p w1, @p v2 for @p w2 (NULL: none), else
 * @p otherwise (unset too). */
static int env_setting(atomic_int *cache, const char *name, const char *w1,
        int v1, const char *w2, int v2, int otherwise) {
    int v = atomic_load(cache);
    if (v >= 0) return v;
    const char *e = getenv(name);
    v = e && !strcmp(e, w1) ? v1 : e && w2 && !strcmp(e, w2) ? v2 : otherwise;
    atomic_store(cache, v);
    return v;
}

dgrad_plan_policy_t dgrad_plan_policy_default(void) {
    static atomic_int search = -1, fold = -1, own = -1, kernels = -1,
                      pass = -1, stage = -1, blocks = -1, spread = -1,
                      spread_shared = -1, phase_pair = -1, projection = -1,
                      small_copy = -1, gemm_rows = -1;
    int b = env_setting(&blocks, "DGRAD_OWN_LOOP", "blocks", DIRECT_BLOCKS_CL,
            "row_vectors", DIRECT_ROW_VECTORS, 0);
    if (!b)
        b = env_setting(&phase_pair, "DGRAD_OWN_LOOP", "phase_pair",
                DIRECT_PHASE_PAIR, "phase_pair_amx", DIRECT_PHASE_PAIR_AMX,
                0);
    if (!b)
        b = env_setting(&gemm_rows, "DGRAD_OWN_LOOP", "gemm_rows",
                DIRECT_GEMM_ROWS, NULL, 0, 0);
    int v = env_setting(&search, "DGRAD_LAYOUT_SEARCH", "0", 0, NULL, 0, 1),
        f = env_setting(&fold, "DGRAD_PHASE_FOLD", "0", 0, "only", 2, 1),
        o = b ? 2 : env_setting(&own, "DGRAD_OWN_LOOP", "0", 0, "only", 2, 1),
        k = env_setting(&kernels, "DGRAD_OWN_KERNELS", "widest", 1, "avx2",
                2, 0),
        c = env_setting(&pass, "DGRAD_CHAIN_PASS", "0", 1, "only", 2, 0),
        s = env_setting(&stage, "DGRAD_STAGE_ROWS", "never", 1, "always", 2,
                0),
        sp = env_setting(&spread, "DGRAD_SPREAD_INPUT", "never", 1, "always",
                2, 0);
    if (!sp)
        sp = env_setting(&spread_shared, "DGRAD_SPREAD_INPUT", "shared", 3,
                NULL, 0, 0);
    int pr = env_setting(&projection, "DGRAD_PROJECTION", "0", 0, "only", 2,
            1),
        sc = env_setting(&small_copy, "DGRAD_SMALL_COPY", "0", 0, "always", 2,
            1);
    /* Timing costs a few executions and user-sized scratch buffers: up to
     * 128 MiB and 2e9 multiply-adds as the problem is, beyond that on a
     * copy under 32 MiB (16-bit tensors counted as f32, reduce_problem)
     * and 5e8; under 2^18 multiply-adds a problem takes
     * microseconds whatever the layout. */
    dgrad_plan_policy_t p = {v, 0, (double)(128 << 20), 2e9,
            (double)(32 << 20), 5e8, (double)(1 << 18), DGRAD_PLAN_CHUNK_BYTES,
            0, f, o, k, c, s, b, sp, pr, sc};
    return p;
}

/* A plan's own buffers (one execution context: intermediate copies of
 * the tensors, scratchpad) may take at most this much when a leaner
 * candidate exists: a quarter of physical memory. Only problems too large
 * to time as they are get near it (the 3D specification example's
 * channels-last plan takes 3.8 GB). */

static double workspace_budget(const dgrad_plan_policy_t *policy) {
    int64_t o = policy->workspace_budget;
    if (o > 0) return (double)o;
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0) return INFINITY;
    return (double)pages * (double)size / 4;
}

static int within_budget(const dgrad_plan_t *plan) {
    return (double)dgrad_plan_workspace_size(plan)
            <= workspace_budget(&plan->policy);
}

/* The plan the ranking chooses without timings: the first candidate in
 * rank order whose reorders are fast and whose buffers fit the workspace
 * budget; else the first that fits; else the leanest. Its index goes to
 * @p chosen. */
static dgrad_plan_t *rank_build(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged,
        const cand_pd_t *pds, int n, int *chosen, dnnl_status_t *err,
        const char **what) {
    int sorted[MAX_CAND_PDS];
    int k = rank_order(pds, n, sorted);
    dgrad_plan_t *fallback = NULL;
    int fallback_fits = 0;
    *chosen = -1;
    for (int i = 0; i < k; i++) {
        dgrad_plan_t *plan = build_candidate(problem, policy, staged, &pds[sorted[i]],
                err, what);
        if (!plan) continue;
        int fits = within_budget(plan);
        if (fits && reorders_fast(plan)) {
            if (fallback) plan_destroy(fallback);
            *chosen = sorted[i];
            return plan;
        }
        if (!fallback || (fits && !fallback_fits)
                || (!fits && !fallback_fits
                        && dgrad_plan_workspace_size(plan)
                                < dgrad_plan_workspace_size(fallback))) {
            if (fallback) plan_destroy(fallback);
            fallback = plan;
            fallback_fits = fits;
            *chosen = sorted[i];
        } else {
            plan_destroy(plan);
        }
    }
    return fallback;
}

/* One planning in progress: the problem, its policy and candidates, and
 * the first failure to report if no strategy yields a plan. */
typedef struct choosing {
    const dgrad_problem_t *problem;
    const dgrad_plan_policy_t *policy;
    int staged, weights_constant;
    cand_pd_t pds[MAX_CAND_PDS];
    int n;
    dnnl_status_t err;
    const char *what;
} choosing_t;

/* Variant @p v (0-3) of the projection's plan (projection.c): on f32
 * copies from 2 on, weights packed on odd ones; NULL where it does not
 * build or where copies add nothing (f32 on layouts oneDNN holds). A
 * bias rides on the matmul, which adds it before rounding, so a 16-bit
 * problem with one is tried in its type too. */
#define PROJECTION_VARIANTS 4
static dgrad_plan_t *projection_variant(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int v) {
    if (v >= 2 && problem->dt == dgrad_f32 && layouts_nested(problem))
        return NULL;
    return build_projection(problem, policy, v / 2, v % 2);
}

/* Each variant of the projection's plan timed against @p best in
 * alternating runs; the fastest kept. */
static dgrad_plan_t *challenge_with_projection(choosing_t *c,
        dgrad_plan_t *best, double *best_ms) {
    for (int v = 0; v < PROJECTION_VARIANTS; v++) {
        dgrad_plan_t *mm = projection_variant(c->problem, c->policy, v);
        if (mm)
            best = challenge_with(c->problem, c->policy, c->weights_constant,
                    best, mm, best_ms);
    }
    return best;
}

/* The projection's first variant that builds, where it applies (policy
 * projection 2). */
static dgrad_plan_t *build_projection_only(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy) {
    dgrad_plan_t *mm = NULL;
    for (int v = 0; v < PROJECTION_VARIANTS && !mm; v++)
        mm = projection_variant(problem, policy, v);
    return mm;
}

/* Untimed, without groups or post-ops: a few microseconds whatever the
 * layout. With a chain, a step more or fewer decides (the chain on the
 * step writing the output, or a pass of its own: a primitive's fork and
 * join is about a microsecond here), so such problems are timed; the
 * ONNX examples with bias + ReLU went from 1.46-1.69x their bare op to
 * 1.06-1.31x (`dgrad bench --post-ops bias+relu --batch
 * bench/suites/spec_examples.txt`). Each
 * extra primitive (an activation reorder) costs about as much as the
 * convolution, so the candidate with the fewest reorders per execute
 * (best rank among equals) wins, as bench/run-suites.sh measured on the
 * suites (bench/results; DGRAD_LAYOUT_SEARCH=verbose shows the choice) (a weights
 * reorder counts unless the weights are constant, converted once). With
 * groups such problems are timed instead (plan_choose): oneDNN's gemm
 * runs one small product per group, 3x faster on plain NCX than on NXC
 * for the specification's 1D example (17.6 us against 5.7 us, callgrind
 * and `dgrad bench --raw-layout preferred`, bench/README.md), which no
 * count of reorders predicts. With output padding, the primitive computing the
 * tail saves the border fill (one pass, the ONNX examples' largest cost):
 * taken at no more reorders, once a run has shown that it writes zeros
 * there (microseconds at this size). dgrad's own loop, which calls no
 * primitive (no argument map, no stream), then meets the choice in
 * alternating runs: the ONNX examples in NCX took 0.3-1.0 us on it
 * against 1.0-1.3 on gemm (bench/README.md "Small problems on dgrad's
 * own loop"). */
static dgrad_plan_t *choose_untimed(choosing_t *c) {
    const cand_pd_t *pds = c->pds;
    int sorted[MAX_CAND_PDS], k = rank_order(pds, c->n, sorted), few = -1;
    int cost[MAX_CAND_PDS];
    for (int i = 0; i < c->n; i++)
        cost[i] = pds[i].reorders + (c->weights_constant ? 0 : pds[i].wei_reorder);
    for (int i = 0; i < k; i++)
        if (!pds[sorted[i]].extend_tail && !pds[sorted[i]].fold
                && (few < 0 || cost[sorted[i]] < cost[few]))
            few = sorted[i];
    int tail = -1;
    for (int i = 0; few >= 0 && i < k; i++)
        if (pds[sorted[i]].extend_tail && !pds[sorted[i]].fold
                && cost[sorted[i]] <= cost[few]
                && impl_rank(pds[sorted[i]].pd) >= impl_rank(pds[few].pd)
                && (tail < 0 || cost[sorted[i]] < cost[tail]))
            tail = sorted[i];
    int chosen = -1;
    dgrad_plan_t *best = NULL;
    if (tail >= 0 && (best = checked_tail_candidate(c->problem, c->policy,
                              c->staged, &pds[tail], &c->err, &c->what)))
        chosen = tail;
    if (!best && few >= 0
            && (best = build_candidate(c->problem, c->policy, c->staged,
                        &pds[few], &c->err, &c->what)))
        chosen = few;
    if (!best)
        best = rank_build(c->problem, c->policy, c->staged, pds, c->n,
                &chosen, &c->err, &c->what);
    if (best && chosen >= 0)
        best = keep_faster_threading(c->problem, c->policy, c->staged,
                c->weights_constant, &pds[chosen], best, NULL);
    double ms = INFINITY; /* both timed by alternating runs */
    if (best && c->policy->own_loop)
        best = challenge_with_direct(c->problem, NULL, c->policy,
                c->weights_constant, best, &ms);
    if (best && c->policy->projection)
        best = challenge_with_projection(c, best, &ms);
    return best;
}

/* 16-bit problems: oneDNN's kernels in the type itself are not always
 * faster than its f32 ones behind dgrad's conversions (oneDNN 3.7 runs
 * bf16 depthwise as brgconv_strided, some 50x slower than 2.6's jit_dw),
 * so the staged candidates are timed as well and the faster plan kept. */
static dgrad_plan_t *challenge_with_staged(choosing_t *c, dgrad_plan_t *best,
        double *best_ms) {
    if (c->staged || c->problem->dt == dgrad_f32) return best;
    cand_pd_t pds[MAX_CAND_PDS];
    dnnl_status_t err = dnnl_success;
    const char *what = "";
    int n = all_candidates(c->problem, c->policy, 1, pds, &err), w = -1;
    double ms = INFINITY;
    dgrad_plan_t *staged = n > 0 ? search(c->problem, c->policy, 1,
            c->weights_constant, pds, n, &w, &ms, &err, &what) : NULL;
    if (staged && w >= 0 && ms < SINGLE_THREAD_MAX_MS)
        staged = keep_faster_threading(c->problem, c->policy, 1,
                c->weights_constant, &pds[w], staged, &ms);
    destroy_pds(pds, n);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: in the type %.4f ms, staged "
                "through f32 %.4f ms\n", *best_ms, ms);
    if (staged && ms < *best_ms) {
        plan_destroy(best);
        *best_ms = ms;
        return staged;
    }
    plan_destroy(staged);
    return best;
}

/* Timed: every candidate runs on scratch buffers, the fastest is kept;
 * up to some 100 us, one thread may beat the fork and join
 * (DGRAD_LAYOUT_SEARCH=verbose prints both times for each such plan). */
static dgrad_plan_t *choose_timed(choosing_t *c) {
    int w = -1;
    double ms = INFINITY;
    dgrad_plan_t *best = search(c->problem, c->policy, c->staged,
            c->weights_constant, c->pds, c->n, &w, &ms, &c->err, &c->what);
    if (best && w >= 0 && ms < SINGLE_THREAD_MAX_MS)
        best = keep_faster_threading(c->problem, c->policy, c->staged,
                c->weights_constant, &c->pds[w], best, &ms);
    if (best) best = challenge_with_staged(c, best, &ms);
    if (best && c->policy->own_loop)
        best = challenge_with_direct(c->problem, NULL, c->policy,
                c->weights_constant, best, &ms);
    if (best && c->policy->projection)
        best = challenge_with_projection(c, best, &ms);
    return best;
}

/* On a reduced copy: the copy's candidates are timed, and its winner is
 * built for the problem if it keeps the same implementations as the ones
 * timed (and, for a computed tail, checked) and fits the workspace
 * budget; NULL otherwise (the caller ranks). */
static dgrad_plan_t *choose_on_reduced_copy(choosing_t *c) {
    dgrad_problem_t r;
    cand_pd_t rpds[MAX_CAND_PDS];
    dnnl_status_t rerr = dnnl_success;
    const char *rwhat = "";
    int rn = reduce_problem(c->problem, c->policy, &r) == 0
            ? all_candidates(&r, c->policy, c->staged, rpds, &rerr) : 0;
    int w = -1;
    double rms = INFINITY;
    dgrad_plan_t *rbest = rn > 1
            ? search(&r, c->policy, c->staged, c->weights_constant, rpds, rn,
                      &w, &rms, &rerr, &rwhat)
            : NULL, *best = NULL;
    return_freed_memory(); /* the candidates the search dropped */
    if (rbest && c->policy->own_loop) {
        /* dgrad's own loop is the same code at any size (timed copying
         * its input rows as on the problem): where it wins on the copy,
         * it is built for the problem. */
        rbest = challenge_with_direct(&r, c->problem, c->policy,
                c->weights_constant, rbest, &rms);
        if (rbest->direct) {
            int staged = rbest->staged, avx2 = rbest->direct_avx2;
            dgrad_plan_policy_t kind = *c->policy;
            kind.own_loop_kind = rbest->direct;
            plan_destroy(rbest);
            rbest = NULL;
            avx2 = own_kernels_on_rows_copy(c->problem, &kind,
                    c->weights_constant, staged, avx2);
            best = build_direct(c->problem, &kind, staged, avx2);
            const char *why = !best ? " (not built for the problem: ranking)"
                    : !within_budget(best)
                    ? " (over the workspace budget: ranking)" : "";
            if (*why && best) {
                /* leanest_where_nothing_fits weighs it again */
                plan_destroy(best);
                best = NULL;
            }
            if (layout_search_verbose())
                fprintf(stderr, "dgrad layout search: reduced problem's "
                        "choice: dgrad's own loop%s\n", why);
        }
    }
    if (rbest) {
        best = rebuild_candidate(c->problem, c->policy, c->staged,
                &rpds[w], &c->err, &c->what);
        char sig_r[256], sig[256] = "";
        plan_signature(rbest, sig_r, sizeof sig_r);
        if (best) plan_signature(best, sig, sizeof sig);
        const char *why = best ? "built for the problem"
                               : "not available: ranking";
        if (best && strcmp(sig, sig_r)) {
            /* Another implementation somewhere: what was timed does not
             * hold. */
            why = "differs for the problem, ranking";
        } else if (best && !within_budget(best)) {
            why = "over the workspace budget, ranking";
        }
        if (best && strcmp(why, "built for the problem")) {
            plan_destroy(best);
            best = NULL;
        }
        if (layout_search_verbose())
            fprintf(stderr, "dgrad layout search: reduced problem's choice "
                    "%s: %s\n", sig_r, why);
        plan_destroy(rbest);
    }
    destroy_pds(rpds, rn);
    return_freed_memory();
    return best;
}

/* The candidates, in the problem's compute type or, where oneDNN has no
 * 16-bit kernel, in f32 through staging copies. Returns their count. */
static int gather_candidates(choosing_t *c, dnnl_status_t *first_error) {
    const dgrad_problem_t *p = c->problem;
    c->staged = bias_needs_f32(p) || !layouts_nested(p);
    c->n = all_candidates(p, c->policy, c->staged, c->pds, first_error);
    if (c->n == 0 && !c->staged && *first_error == dnnl_unimplemented
            && p->dt != dgrad_f32) {
        c->staged = 1;
        *first_error = dnnl_success;
        c->n = all_candidates(p, c->policy, 1, c->pds, first_error);
    }
    return c->n;
}

/* Where @p best does not fit the workspace budget, the leanest of it and
 * each of dgrad's own loops that applies (any kind, on the user's tensors
 * or on f32 copies): the budget's "leanest where nothing fits" weighs
 * every candidate, whatever timing or ranking picked (a reduced copy's
 * timing may pick a oneDNN plan on one run and the own loop on the next,
 * and the leanest must not depend on which). Takes @p best (NULL: no
 * oneDNN plan was built). */
static dgrad_plan_t *leanest_where_nothing_fits(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, dgrad_plan_t *best) {
    dgrad_plan_policy_t kind = *policy;
    for (int k = DIRECT_ROWS; k <= DIRECT_LAST; k++) {
        if (policy->own_loop_kind && k != policy->own_loop_kind) continue;
        kind.own_loop_kind = k;
        for (int staged = 0; staged < 2; staged++) {
            dgrad_plan_t *own = policy->own_kernels == 2
                    ? build_direct(problem, &kind, staged, 1) : NULL;
            if (!own) own = build_direct(problem, &kind, staged, 0);
            if (!own) continue;
            if (!best || dgrad_plan_workspace_size(own)
                            < dgrad_plan_workspace_size(best)) {
                if (best) plan_destroy(best);
                best = own;
            } else {
                plan_destroy(own);
            }
        }
    }
    return best;
}

/* dgrad's own loop wherever it applies (policy own_loop 2), on the AVX2
 * kernels where the policy asks for them and they differ. */
static dgrad_plan_t *build_direct_only(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy) {
    dgrad_plan_t *plan = policy->own_kernels == 2
            ? build_direct(problem, policy, DIRECT_EITHER, 1) : NULL;
    return plan ? plan : build_direct(problem, policy, DIRECT_EITHER, 0);
}

static dgrad_status_t plan_choose(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        dgrad_plan_t **out) {
    dgrad_plan_t *plan = plan_alloc(problem, policy, 0);
    if (!plan)
        return dgrad_error(dgrad_out_of_memory,
                "oneDNN lowering: cannot allocate a plan");
    if (plan->empty) {
        snprintf(plan->impl, sizeof plan->impl, "none");
        plan->weights_constant = weights_constant;
        plan->choice = "none";
        post_pass_init(plan); /* dgrad's loop: it allocates nothing */
        *out = plan;
        return dgrad_success;
    }
    plan_destroy(plan);

    choosing_t c = {problem, policy, 0, weights_constant, {{0}}, 0,
            dnnl_success, "convolution backward data creation"};
    dnnl_status_t first_error = dnnl_success;
    if (gather_candidates(&c, &first_error) == 0) {
        /* The canonical problem is valid, so oneDNN refusing to build it
         * means "not supported here": a compiler may fall back. */
        return dnnl_fail_as(problem, first_error == dnnl_success
                        ? dnnl_unimplemented : first_error,
                c.what, dgrad_unimplemented);
    }
    dgrad_plan_t *best = NULL;
    const char *choice = "ranking";
    if (policy->projection == 2
            && (best = build_projection_only(problem, policy))) {
        choice = "projection";
    } else if (policy->own_loop == 2
            && (best = build_direct_only(problem, policy))) {
        choice = "own loop";
    } else if (policy->layout_search) {
        /* A single candidate goes through the same choice: its thread
         * count, dgrad's own loop and the staged f32 path challenge it. */
        if (problem_macs(problem) < policy->min_macs && problem->G == 1
                && problem->n_post_ops == 0) {
            best = choose_untimed(&c);
            choice = "untimed";
        } else if (problem_bytes(problem) <= policy->max_bytes
                && problem_macs(problem) <= policy->max_macs) {
            best = choose_timed(&c);
            choice = "timed";
        } else {
            best = choose_on_reduced_copy(&c);
            choice = "reduced copy";
        }
    }
    if (!best) {
        int unused;
        best = rank_build(problem, policy, c.staged, c.pds, c.n, &unused,
                &c.err, &c.what);
        choice = "ranking";
    }
    if ((!best || !within_budget(best)) && policy->own_loop)
        best = leanest_where_nothing_fits(problem, policy, best);
    destroy_pds(c.pds, c.n);
    if (!best)
        return dnnl_fail_as(problem, c.err == dnnl_success
                        ? dnnl_runtime_error : c.err,
                c.what, dgrad_unimplemented);
    best->weights_constant = weights_constant;
    best->choice = choice;
    dnnl_status_t ps = post_pass_init(best);
    if (ps == dnnl_success) ps = in_place_init(best);
    if (ps != dnnl_success) {
        plan_destroy(best);
        return dnnl_fail_as(problem, ps, "post-op pass creation",
                dgrad_unimplemented);
    }
    *out = best;
    return dgrad_success;
}

/* plan_choose, failing as a whole when an acquisition or execution on the
 * way failed (see planning_failed). */
dgrad_status_t plan_create(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int weights_constant,
        dgrad_plan_t **out) {
    dgrad_plan_t *plan = NULL;
    planning_reset();
    dgrad_status_t st = plan_choose(problem, policy, weights_constant, &plan);
    if (planning_failed() == dnnl_success) {
        if (st == dgrad_success) *out = plan;
        return st;
    }
    if (plan) plan_destroy(plan);
    return dnnl_fail(problem, planning_failed(), "planning");
}
