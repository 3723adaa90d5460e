/*
 * Layout candidates: for one problem, the convolution primitives oneDNN
 * offers on the user's layouts, on the layouts it prefers (format_tag_any)
 * and on dense channels-last, each with the weights in the primitive's
 * preferred layout or the user's; when the output has a tail past the
 * natural size (output padding), also for the geometry that computes the
 * tail (negative right padding) instead of filling it; and the folded
 * forward convolution (phase_fold.c), grouped and dense, its source on the
 * io layout or channels-last. Duplicates are dropped, and reference
 * implementations kept only when nothing else exists. Building a
 * candidate's plan, on all threads or on one.
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

/* Source layouts of the folded forward convolution (phase_fold.c), each
 * in both fold modes: index i is act fold_acts[i / 2], mode 1 + i % 2. */
static const act_mode_t fold_acts[N_FOLD_CANDS / 2] = {ACT_IO, ACT_NXC};

static int same_pd(const_dnnl_primitive_desc_t a, const_dnnl_primitive_desc_t b,
        int fold) {
    static const dnnl_query_t bwd[] = {dnnl_query_diff_dst_md,
            dnnl_query_weights_md, dnnl_query_diff_src_md};
    static const dnnl_query_t fwd[] = {dnnl_query_src_md,
            dnnl_query_weights_md, dnnl_query_dst_md};
    const dnnl_query_t *q = fold ? fwd : bwd;
    if (strcmp(pd_impl_name(a), pd_impl_name(b))) return 0;
    for (size_t i = 0; i < 3; i++)
        if (!md_equal(pd_md(a, q[i]), pd_md(b, q[i])))
            return 0;
    return 1;
}

/* Whether a candidate is oneDNN's primitive on the user's own activation
 * layouts (weights as given or prepared), what a plain oneDNN user runs. */
int cand_on_user_layouts(const cand_pd_t *c) {
    return !c->fold && !c->extend_tail && layout_cands[c->cand].act == ACT_IO;
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

/* Whether channels-last is @p io already (oneDNN ignores the strides of
 * size-1 dims), so that it is no candidate of its own. */
static int nxc_is_io(md_ref_t io, dnnl_data_type_t dt) {
    md_t a = MD_EMPTY;
    int same = md_nxc(&a, io, dt) != dnnl_success || md_equal(md_ref(&a), io);
    md_free(&a);
    return same;
}

/* The pd of layout candidate @p ci (of the folded forward convolution
 * when @p fold) for @p problem, or NULL (with the oneDNN status). */
static dnnl_status_t candidate_pd(const dgrad_plan_t *tmpl, int staged,
        int ci, fold_mode_t fold, dnnl_primitive_desc_t *pd) {
    dnnl_data_type_t dt = staged ? dnnl_f32 : to_dnnl_dt(tmpl->p.dt);
    act_mode_t act = fold ? fold_acts[ci] : layout_cands[ci].act;
    *pd = NULL;
    if (act == ACT_NXC && nxc_is_io(md_ref(&tmpl->in.io_md), dt)
            && (fold || nxc_is_io(md_ref(&tmpl->out.io_md), dt)))
        return dnnl_unimplemented;
    dnnl_status_t s = fold ? create_fold_pd(tmpl, dt, act, pd)
                           : create_conv_pd(tmpl, dt, &layout_cands[ci], pd);
    if (layout_search_verbose())
        fprintf(stderr, "dgrad layout search: candidate %s%d/%d%s%s: %s\n",
                fold == FOLD_GROUPED ? "fold grouped " : fold ? "fold dense " : "",
                (int)act, fold ? 0 : layout_cands[ci].wei_io,
                staged ? " staged" : "",
                !fold && tmpl->full_box && has_tail(&tmpl->p) ? " tail" : "",
                s == dnnl_success ? pd_impl_name(*pd) : dnnl_status2str(s));
    return s;
}

/* A plan whose output box is the whole output: the fold and dgrad's own
 * loop compute every output element themselves (zero or the bias where
 * no term reaches), so nothing is left to fill. */
dgrad_plan_t *plan_alloc_whole_box(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy) {
    dgrad_plan_t *plan = plan_alloc(problem, policy, 0);
    if (!plan) return NULL;
    for (int i = 0; i < problem->nsp; i++) {
        plan->lo[i] = 0;
        plan->hi[i] = problem->Y[i];
    }
    plan->full_box = 1;
    plan->out_offset = 0;
    return plan;
}

/* A plan of the folded strategy in mode @p fold; NULL when the fold does
 * not apply (or out of memory). */
static dgrad_plan_t *fold_plan_alloc(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, fold_mode_t fold) {
    dgrad_plan_t *plan = plan_alloc_whole_box(problem, policy);
    if (!plan) return NULL;
    if (plan->empty || !fold_init(plan, fold)) {
        plan_destroy(plan);
        return NULL;
    }
    return plan;
}

/* A template plan (geometry and io descs, no primitives) for candidates
 * of one kind; NULL with the status in @p s. */
static dgrad_plan_t *template_plan(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, fold_mode_t fold,
        int extend_tail, dnnl_status_t *s) {
    dgrad_plan_t *tmpl = fold ? fold_plan_alloc(problem, policy, fold)
                              : plan_alloc(problem, policy, extend_tail);
    *s = tmpl ? init_io_mds(tmpl, staged)
              : fold ? dnnl_unimplemented : dnnl_out_of_memory;
    if (tmpl && *s != dnnl_success) {
        plan_destroy(tmpl);
        tmpl = NULL;
    }
    return tmpl;
}

/* Appends to @p pds the pds of the distinct candidates for one output
 * geometry, in the compute type of the problem, or in f32 through staging
 * copies. Returns the new count. */
static int candidate_pds(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, fold_mode_t fold,
        int extend_tail, cand_pd_t *pds, int n, dnnl_status_t *first_error) {
    dnnl_status_t s;
    dgrad_plan_t *tmpl = template_plan(problem, policy, staged, fold,
            extend_tail, &s);
    if (!tmpl) {
        /* A fold that does not apply is no error of the problem's. */
        if (!fold && *first_error == dnnl_success) *first_error = s;
        return n;
    }
    int count = fold ? N_FOLD_CANDS / 2 : N_CANDS;
    for (int i = 0; i < count; i++) {
        dnnl_primitive_desc_t pd = NULL;
        dnnl_status_t cs = candidate_pd(tmpl, staged, i, fold, &pd);
        if (cs != dnnl_success) {
            if (*first_error == dnnl_success && !fold
                    && layout_cands[i].act != ACT_NXC)
                *first_error = cs;
            continue;
        }
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = pds[j].extend_tail == extend_tail && pds[j].fold == fold
                    && same_pd(pd, pds[j].pd, fold);
        if (dup || n == MAX_CAND_PDS) {
            dnnl_primitive_desc_destroy(pd);
        } else {
            const dnnl_query_t q[2] = {
                    fold ? dnnl_query_src_md : dnnl_query_diff_dst_md,
                    fold ? dnnl_query_dst_md : dnnl_query_diff_src_md};
            md_ref_t io[2] = {md_ref(&tmpl->in.io_md),
                    md_ref(&tmpl->out.io_md)};
            /* the fields not named start at zero: a candidate's chain
             * is carried until search times it as a pass */
            pds[n] = (cand_pd_t){.pd = pd, .cand = i, .fold = fold,
                    .extend_tail = extend_tail};
            for (int t = 0; t < 2; t++)
                pds[n].reorders += !md_equal(io[t], pd_md(pd, q[t]));
            pds[n].wei_reorder = fold || !md_equal(md_ref(&tmpl->wei.io_md),
                    pd_md(pd, dnnl_query_weights_md));
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
    int n = candidate_pds(problem, policy, staged, FOLD_NONE, 0, pds, 0,
            first_error);
    if (has_tail(problem))
        n = candidate_pds(problem, policy, staged, FOLD_NONE, 1, pds, n,
                first_error);
    int n_bwd = n;
    if (policy->phase_fold) {
        /* One group: the two modes are the same. */
        if (problem->G > 1)
            n = candidate_pds(problem, policy, staged, FOLD_GROUPED, 0, pds,
                    n, first_error);
        n = candidate_pds(problem, policy, staged, FOLD_DENSE, 0, pds, n,
                first_error);
    }
    if (policy->phase_fold == 2 && n > n_bwd) {
        /* Only the fold, where it applies (tests). */
        destroy_pds(pds, n_bwd);
        memmove(pds, pds + n_bwd, (size_t)(n - n_bwd) * sizeof *pds);
        n -= n_bwd;
    }
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
    dnnl_status_t s;
    dgrad_plan_t *plan = template_plan(problem, policy, staged, c->fold,
            c->extend_tail, &s);
    if (s == dnnl_success)
        s = c->fold ? build_fold_primitives(plan, c->pd, what)
                    : build_primitives(plan, c->pd, what);
    if (s == dnnl_success) {
        plan->post.passed = c->chain_passed || policy->chain_pass == 2;
        return plan;
    }
    if (*err == dnnl_success) *err = s;
    if (plan) plan_destroy(plan);
    return NULL;
}

/* Layout candidate @p cand (output geometry @p extend_tail) built afresh
 * for @p problem: its pd is created now, for the caller's current thread
 * count. NULL when oneDNN does not offer it. */
dgrad_plan_t *rebuild_candidate(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, const cand_pd_t *like,
        dnnl_status_t *err,
        const char **what) {
    cand_pd_t c = {NULL, like->cand, like->fold, like->extend_tail, 0, 0,
            like->chain_passed};
    dnnl_status_t s;
    dgrad_plan_t *tmpl = template_plan(problem, policy, staged, c.fold,
            c.extend_tail, &s), *plan = NULL;
    if (tmpl && candidate_pd(tmpl, staged, c.cand, c.fold, &c.pd)
                    == dnnl_success)
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
        plan = rebuild_candidate(problem, policy, staged, c, &err, &what);
        if (plan) plan->single_thread = 1;
    }
    threads_leave(threads);
    return plan;
}

/* The plan of one of dgrad's own loops (direct*.c) on the user's
 * buffers, or (@p staged) on f32 copies of them; with @p avx2, on
 * AVX2 kernels where it would otherwise run AVX-512 ones (NULL where it
 * would not). */
static dgrad_plan_t *direct_plan(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int avx2) {
    dgrad_plan_t *plan = plan_alloc_whole_box(problem, policy);
    if (!plan) return NULL;
    if (plan->empty
            || init_io_mds(plan, staged) != dnnl_success
            || !(plan->direct = direct_applicable(plan,
                         policy->own_loop_kind))
            || (avx2 && !direct_avx2_differs(plan))) {
        plan_destroy(plan);
        return NULL;
    }
    plan->direct_avx2 = avx2;
    plan->post.passed = policy->chain_pass == 2;
    /* on the AVX2 kernels the loop must still apply (the blocks loop
     * reads a 16-bit NCX input itself only in the lanes form, AVX-512) */
    if (avx2 && direct_applicable(plan, policy->own_loop_kind)
                    != plan->direct) {
        plan_destroy(plan);
        return NULL;
    }
    const char *name = plan->direct == DIRECT_ROWS ? "dgrad:direct"
            : plan->direct == DIRECT_DEPTHWISE_CL      ? "dgrad:direct_dw"
            : plan->direct == DIRECT_BLOCKS_CL     ? "dgrad:direct_blocks"
            : plan->direct == DIRECT_ROW_VECTORS ? "dgrad:direct_row_vectors"
            : plan->direct == DIRECT_PHASE_PAIR  ? "dgrad:direct_phase_pair"
            : plan->direct == DIRECT_PHASE_PAIR_AMX
            ? "dgrad:direct_phase_pair_amx"
            : "dgrad:gemm_rows";
    snprintf(plan->impl, sizeof plan->impl, "%s", name);
    if (!direct_taps_init(plan)) {
        plan_destroy(plan);
        return NULL;
    }
    plan->direct_rounds_out = direct_rounds_output(plan);
    plan->direct_widens_in = direct_widens_input(plan);
    /* Buffers the execution sizes by these descs: the activations as
     * they are, the packed weights as one f32 run. */
    int64_t wn = (int64_t)(direct_weights_size(plan) / sizeof(float));
    if (ACQUIRE(md_copy(&plan->in.conv_md, md_ref(&plan->in.io_md)))
                    != dnnl_success
            || ACQUIRE(md_copy(&plan->out.conv_md, md_ref(&plan->out.io_md)))
                    != dnnl_success
            || ACQUIRE(md_tagged(&plan->wei.conv_md, 1, &wn, dnnl_f32,
                       dnnl_a)) != dnnl_success) {
        plan_destroy(plan);
        return NULL;
    }
    plan->prepared_weights_bytes = direct_weights_size(plan);
    plan->scratch_size = direct_scratch_size(plan, &plan->direct_threads);
    if (!direct_prepare(plan)) {
        plan_destroy(plan);
        return NULL;
    }
    if (problem->has_bias) {
        int64_t bd = problem->Cout;
        if (ACQUIRE(md_tagged(&plan->bias_md, 1, &bd, dnnl_f32, dnnl_a))
                != dnnl_success) {
            plan_destroy(plan);
            return NULL;
        }
        plan->bias_bytes = (size_t)problem->Cout * sizeof(float);
    }
    return plan;
}

/* The plan of dgrad's own loop for @p problem, or NULL where none
 * applies: no oneDNN primitive; the whole output box. @p staged 0: on the
 * user's tensors (the rows loop reads and writes 16-bit types itself
 * where the CPU has AVX-512BW or AVX2, adding the bias in f32 before the
 * one rounding); 1: on f32 copies (16-bit types, and layouts oneDNN's
 * descriptors cannot hold); DIRECT_EITHER: the first of the two that
 * applies. @p avx2: on the AVX2 kernels of a CPU with AVX-512 (NULL
 * where the plan would run AVX2 ones anyway). */
dgrad_plan_t *build_direct(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int staged, int avx2) {
    int nested = layouts_nested(problem);
    dgrad_plan_t *plan = nested && staged != 1
            ? direct_plan(problem, policy, 0, avx2) : NULL;
    if (!plan && staged != 0 && (!nested || problem->dt != dgrad_f32))
        plan = direct_plan(problem, policy, 1, avx2);
    return plan;
}
