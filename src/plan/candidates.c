/*
 * Layout candidates: for one problem, the convolution primitives oneDNN
 * offers on the user's layouts, on the layouts it prefers (format_tag_any)
 * and on dense channels-last, each with the weights in the primitive's
 * preferred layout or the user's; when the output has a tail past the
 * natural size (output padding), also for the geometry that computes the
 * tail (negative right padding) instead of filling it. Duplicates are
 * dropped, and reference implementations kept only when nothing else
 * exists. Building a candidate's plan, on all threads or on one.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl_debug.h>

/* DGRAD_LAYOUT_SEARCH=verbose prints every candidate and its time (to
 * stderr; it changes no choice). */
int layout_search_verbose(void) {
    const char *e = getenv("DGRAD_LAYOUT_SEARCH");
    return e && !strcmp(e, "verbose");
}

/* In order of preference when timings are not taken. */
static const layout_cand_t layout_cands[N_CANDS] = {
        {ACT_IO, 0}, {ACT_ANY, 0}, {ACT_IO, 1}, {ACT_NXC, 0}, {ACT_NXC, 1}};

static int same_pd(const_dnnl_primitive_desc_t a, const_dnnl_primitive_desc_t b) {
    static const dnnl_query_t q[] = {dnnl_query_diff_dst_md,
            dnnl_query_weights_md, dnnl_query_diff_src_md};
    if (strcmp(pd_impl_name(a), pd_impl_name(b))) return 0;
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        if (!dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(a, q[i], 0),
                    dnnl_primitive_desc_query_md(b, q[i], 0)))
            return 0;
    return 1;
}

/* A bias is added after the convolution, so in a 16-bit type the result
 * would be rounded twice (convolution, then the add): with a bias the
 * convolution runs in f32 through the staging copies and is rounded once,
 * as the reference is. */
int bias_needs_f32(const dgrad_problem_t *p) {
    return p->has_bias && p->dt != dgrad_f32;
}

/* Output past the natural size on some axis (output padding). */
static int has_tail(const dgrad_problem_t *p) {
    for (int i = 0; i < p->nsp; i++)
        if (dgrad_problem_natural_size(p, i) - p->PB[i] < p->Y[i]) return 1;
    return 0;
}

/* The pd of layout candidate @p ci for @p problem, or NULL (with the
 * oneDNN status). Channels-last that is the io layout already (oneDNN
 * ignores the strides of size-1 dims) is not a candidate of its own. */
static dnnl_status_t candidate_pd(const dgrad_plan_t *tmpl, int staged,
        int ci, dnnl_primitive_desc_t *pd) {
    dnnl_data_type_t dt = staged ? dnnl_f32 : to_dnnl_dt(tmpl->p.dt);
    *pd = NULL;
    if (layout_cands[ci].act == ACT_NXC) {
        dnnl_memory_desc_t a, b;
        if (md_nxc(&a, &tmpl->in.io_md, dt) != dnnl_success
                || md_nxc(&b, &tmpl->out.io_md, dt) != dnnl_success
                || (dnnl_memory_desc_equal(&a, &tmpl->in.io_md)
                        && dnnl_memory_desc_equal(&b, &tmpl->out.io_md)))
            return dnnl_unimplemented;
    }
    dnnl_status_t s = create_conv_pd(tmpl, dt, &layout_cands[ci], pd);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: candidate %d/%d%s%s: %s\n",
                (int)layout_cands[ci].act, layout_cands[ci].wei_io,
                staged ? " staged" : "",
                tmpl->full_box && has_tail(&tmpl->p) ? " tail" : "",
                s == dnnl_success ? pd_impl_name(*pd) : dnnl_status2str(s));
    return s;
}

/* Appends to @p pds the pds of the distinct candidates for one output
 * geometry, in the compute type of the problem, or in f32 through staging
 * copies. Returns the new count. */
static int candidate_pds(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged,
        int extend_tail, cand_pd_t *pds, int n, dnnl_status_t *first_error) {
    dgrad_plan_t *tmpl = plan_alloc(problem, policy, extend_tail);
    if (!tmpl) {
        *first_error = dnnl_out_of_memory;
        return n;
    }
    dnnl_status_t s = init_io_mds(tmpl, staged);
    if (s != dnnl_success) *first_error = s;
    for (int i = 0; s == dnnl_success && i < (int)N_CANDS; i++) {
        dnnl_primitive_desc_t pd = NULL;
        dnnl_status_t cs = candidate_pd(tmpl, staged, i, &pd);
        if (cs != dnnl_success) {
            if (*first_error == dnnl_success && layout_cands[i].act != ACT_NXC)
                *first_error = cs;
            continue;
        }
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = pds[j].extend_tail == extend_tail && same_pd(pd, pds[j].pd);
        if (dup || n == MAX_CAND_PDS) {
            dnnl_primitive_desc_destroy(pd);
        } else {
            static const dnnl_query_t q[2] = {dnnl_query_diff_dst_md,
                    dnnl_query_diff_src_md};
            const dnnl_memory_desc_t *io[2] = {&tmpl->in.io_md,
                    &tmpl->out.io_md};
            pds[n].pd = pd;
            pds[n].cand = i;
            pds[n].extend_tail = extend_tail;
            pds[n].reorders = 0;
            for (int t = 0; t < 2; t++)
                pds[n].reorders += !dnnl_memory_desc_equal(io[t],
                        dnnl_primitive_desc_query_md(pd, q[t], 0));
            pds[n].wei_reorder = !dnnl_memory_desc_equal(&tmpl->wei.io_md,
                    dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0));
            n++;
        }
    }
    plan_destroy(tmpl);
    return n;
}

/* All candidates: both output geometries when there is a tail; reference
 * implementations only when nothing else exists (they are orders of
 * magnitude slower, and timing one can take minutes). */
int all_candidates(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged,
        cand_pd_t *pds, dnnl_status_t *first_error) {
    int n = candidate_pds(problem, policy, staged, 0, pds, 0, first_error);
    if (has_tail(problem))
        n = candidate_pds(problem, policy, staged, 1, pds, n, first_error);
    int fast = 0;
    for (int i = 0; i < n; i++) fast += impl_rank(pds[i].pd) > 0;
    if (fast == 0 || fast == n) return n;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (impl_rank(pds[i].pd) > 0) pds[m++] = pds[i];
        else dnnl_primitive_desc_destroy(pds[i].pd);
    }
    return m;
}

void destroy_pds(cand_pd_t *pds, int n) {
    for (int i = 0; i < n; i++) dnnl_primitive_desc_destroy(pds[i].pd);
}

/* Builds the plan of one candidate; NULL on failure (status in @p err
 * unless already set, failing step in @p what). */
dgrad_plan_t *build_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *c,
        dnnl_status_t *err,
        const char **what) {
    dgrad_plan_t *plan = plan_alloc(problem, policy, c->extend_tail);
    dnnl_status_t s = plan ? init_io_mds(plan, staged) : dnnl_out_of_memory;
    if (s == dnnl_success) s = build_primitives(plan, c->pd, what);
    if (s == dnnl_success) return plan;
    if (*err == dnnl_success) *err = s;
    if (plan) plan_destroy(plan);
    return NULL;
}

/* Layout candidate @p cand (output geometry @p extend_tail) built afresh
 * for @p problem: its pd is created now, for the caller's current thread
 * count. NULL when oneDNN does not offer it. */
dgrad_plan_t *rebuild_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int cand,
        int extend_tail, dnnl_status_t *err,
        const char **what) {
    cand_pd_t c = {NULL, cand, extend_tail, 0, 0};
    dgrad_plan_t *tmpl = plan_alloc(problem, policy, extend_tail), *plan = NULL;
    if (tmpl && init_io_mds(tmpl, staged) == dnnl_success
            && candidate_pd(tmpl, staged, cand, &c.pd) == dnnl_success)
        plan = build_candidate(problem, policy, staged, &c, err, what);
    dnnl_primitive_desc_destroy(c.pd);
    if (tmpl) plan_destroy(tmpl);
    return plan;
}

/* The plan of candidate @p c again, with its pd and primitives created
 * for one thread (see threads_enter); NULL when that fails. */
dgrad_plan_t *build_single_thread(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *c) {
    int threads = threads_enter(1);
    dgrad_plan_t *plan = NULL;
    if (threads > 1) {
        dnnl_status_t err = dnnl_success;
        const char *what = "";
        plan = rebuild_candidate(problem, policy, staged, c->cand, c->extend_tail,
                &err, &what);
        if (plan) plan->single_thread = 1;
    }
    threads_leave(threads);
    return plan;
}
