/*
 * The in-place sum (canonical.h, dgrad_problem_in_place_post_op): an
 * execution may pass the output buffer as the operand of an Add laid out
 * as the output, and the output must end as the chain applied with that
 * operand's old values.
 *
 * Where one step writes every element of the output after everything
 * else has run (the whole output, no border, no conversion after it),
 * oneDNN can accumulate onto the old values itself: that step gets a twin
 * whose post-ops have a sum in the Add's place (step_t.sum_prim), and
 * in-place executions run the twin. The writer is the bias add (carrying
 * the chain, or with a chain that is the Add alone), or, for a chain that
 * is the Add alone, the reorders into the user's layout (a backward-data
 * plan's output reorder, a folded plan's phase copies); a folded plan's
 * chain of unary ops then the Add also has its convolution's twin carry
 * the unary ops (they commute with the copies' moving). A backward-data
 * convolution cannot be the writer: oneDNN takes no post-ops there.
 *
 * Every other plan writes the output before its chain reads the operand:
 * in-place executions copy the operand aside first (execute.c), one more
 * read and write of the output.
 */
#include "plan_impl.h"

/* A twin of @p step from @p pd (destroyed here, after @p s, its
 * creation): only on the step's scratchpad (the contexts' memory
 * objects are made for that) and not a generic implementation where the
 * step has a better one (a convolution's must be the same kernel:
 * fold_conv_pd). */
static dnnl_status_t make_twin(step_t *step, dnnl_primitive_desc_t pd,
        dnnl_status_t s) {
    if (s == dnnl_success && step->own) s = dnnl_unimplemented;
    if (s == dnnl_success) {
        md_ref_t scratch = pd_md(pd, dnnl_query_scratchpad_md);
        if (!scratch || md_size(scratch) != step->scratch_bytes
                || (impl_is_generic(pd_impl_name(pd))
                        && !impl_is_generic(step->impl)))
            s = dnnl_unimplemented;
    }
    if (s == dnnl_success)
        s = ACQUIRE(dnnl_primitive_create(&step->sum_prim, pd));
    dnnl_primitive_desc_destroy(pd);
    return s;
}

/* The user scratchpad and post-ops: the chain carried by the bias add
 * with its in-place Add as a sum, or (@p sum_only) that sum alone. */
static dnnl_status_t twin_attr(dgrad_plan_t *plan, int sum_only,
        dnnl_primitive_attr_t *attr) {
    dnnl_status_t s = user_scratchpad_attr(attr);
    if (s != dnnl_success || !sum_only)
        return s == dnnl_success
                ? post_chain_attr(plan, *attr, plan->post.in_place_at,
                          plan->p.n_post_ops)
                : s;
    dnnl_post_ops_t po = NULL;
    s = ACQUIRE(dnnl_post_ops_create(&po));
    if (s == dnnl_success) s = post_ops_append_sum(po);
    if (s == dnnl_success) s = dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    return s;
}

static dnnl_status_t reorder_twin(step_t *step, md_ref_t from, md_ref_t to,
        const_dnnl_primitive_attr_t attr) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = reorder_pd_with_attr(&pd, from, to, attr);
    return make_twin(step, pd, s);
}

/* The twins of the steps that write the output, with @p attr. */
static dnnl_status_t make_twins(dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr) {
    dnnl_status_t s = dnnl_success;
    if (plan->fold.mode) {
        for (int i = 0; i < plan->fold.n_copies && s == dnnl_success; i++) {
            phase_copy_t *pc = &plan->fold.copies[i];
            s = reorder_twin(&pc->step, md_ref(&pc->from_md),
                    md_ref(&pc->to_md), attr);
        }
        return s;
    }
    step_t *r = &plan->out.reorder;
    if (step_exists(r)) {
        int chunked = r->n_chunks > 1;
        return reorder_twin(r,
                md_ref(chunked ? &r->chunks.from_md : &plan->out.conv_md),
                md_ref(chunked ? &r->chunks.to_md : &plan->out.io_md), attr);
    }
    dnnl_primitive_desc_t pd = NULL;
    s = bias_add_pd(plan, attr, &pd);
    return make_twin(&plan->bias_add, pd, s);
}

/* A folded plan's chain of unary ops and then the Add: the
 * convolution's twin carries the unary ops (as the plan's pass would
 * have applied them, before the Add). */
static int fold_prefix_then_add(const dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    if (!plan->fold.mode || plan->post.in_place_at != p->n_post_ops - 1
            || p->n_post_ops < 2)
        return 0;
    for (int i = 0; i < p->n_post_ops - 1; i++)
        if (dgrad_post_alg_is_binary(p->post_ops[i].alg)) return 0;
    return 1;
}

static dnnl_status_t conv_twin(dgrad_plan_t *plan) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = post_chain_attr(plan, attr, -1, plan->p.n_post_ops - 1);
    if (s == dnnl_success) s = fold_conv_pd(plan, attr, &pd);
    dnnl_primitive_attr_destroy(attr);
    return make_twin(&plan->conv, pd, s);
}

static void drop_twins(dgrad_plan_t *plan) {
    step_t *steps[] = {&plan->out.reorder, &plan->bias_add, &plan->conv};
    for (int i = 0; i < 3; i++) {
        dnnl_primitive_destroy(steps[i]->sum_prim);
        steps[i]->sum_prim = NULL;
    }
    for (int i = 0; i < plan->fold.n_copies; i++) {
        dnnl_primitive_destroy(plan->fold.copies[i].step.sum_prim);
        plan->fold.copies[i].step.sum_prim = NULL;
    }
}

dnnl_status_t in_place_init(dgrad_plan_t *plan) {
    post_pass_t *pp = &plan->post;
    const dgrad_problem_t *p = &plan->p;
    pp->in_place_at = dgrad_problem_in_place_post_op(p);
    pp->accumulates = 0;
    if (pp->in_place_at < 0 || plan->empty || !plan->full_box
            || plan->staged || plan->direct)
        return dnnl_success;
    /* The writer: the phase copies, the output reorder, or the bias add
     * when nothing follows it. */
    int bias_writes = !plan->fold.mode && !step_exists(&plan->out.reorder)
            && p->has_bias && plan->bias_add.prim;
    int carried = pp->fused && pp->fused_into == &plan->bias_add;
    int writer = plan->fold.mode ? plan->fold.n_copies > 0
            : step_exists(&plan->out.reorder) || bias_writes;
    int prefix = !pp->fused && fold_prefix_then_add(plan);
    if (!writer
            || !(carried || prefix || (!pp->fused && p->n_post_ops == 1)))
        return dnnl_success;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = twin_attr(plan, !carried, &attr);
    if (s == dnnl_success) s = make_twins(plan, attr);
    if (s == dnnl_success && prefix) s = conv_twin(plan);
    dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success) {
        pp->accumulates = 1;
        return s;
    }
    drop_twins(plan);
    return s == dnnl_out_of_memory ? s : dnnl_success;
}

const char *dgrad_plan_in_place_mode(const dgrad_plan_t *plan) {
    if (!plan || dgrad_problem_in_place_post_op(&plan->p) < 0) return "none";
    return plan->post.accumulates ? "accumulates" : "sets aside";
}
