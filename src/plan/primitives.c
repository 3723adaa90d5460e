/*
 * Primitive creation: the convolution backward-data descriptor and its
 * forward hint, the reorders between io and conv layouts, the bias add,
 * and the plan object that holds them.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

dnnl_status_t user_scratchpad_attr(dnnl_primitive_attr_t *attr) {
    dnnl_status_t s = ACQUIRE(dnnl_primitive_attr_create(attr));
    if (s != dnnl_success) return s;
    s = dnnl_primitive_attr_set_scratchpad_mode(*attr,
            dnnl_scratchpad_mode_user);
    if (s != dnnl_success) {
        dnnl_primitive_attr_destroy(*attr);
        *attr = NULL;
    }
    return s;
}

/* Spatial parameters in oneDNN terms for the sub-box: pl = PB + lo,
 * pr = F - hi - PB (both >= 0), dilation D - 1. */
static void conv_params(const dgrad_plan_t *plan, int64_t *strides,
        int64_t *dilates, int64_t *pl, int64_t *pr) {
    const dgrad_problem_t *p = &plan->p;
    for (int i = 0; i < p->nsp; i++) {
        strides[i] = p->S[i];
        dilates[i] = p->D[i] - 1;
        pl[i] = p->PB[i] + plan->lo[i];
        pr[i] = dgrad_problem_natural_size(p, i) - plan->hi[i] - p->PB[i];
    }
}

/* Forward convolution pd used as the backward pd's hint. Best effort: a
 * NULL hint is acceptable to oneDNN's backward-data implementations, and
 * 1x1 kernels get none where creating one can crash oneDNN
 * (onednn_defects.c). */
static dnnl_primitive_desc_t forward_hint(const dgrad_plan_t *plan,
        md_ref_t in, md_ref_t wei, md_ref_t out) {
    int64_t strides[DGRAD_MAX_SPATIAL], dilates[DGRAD_MAX_SPATIAL];
    int64_t pl[DGRAD_MAX_SPATIAL], pr[DGRAD_MAX_SPATIAL];
    dnnl_primitive_desc_t pd = NULL;
    int kernel_1x1 = 1;
    for (int i = 0; i < plan->p.nsp; i++) kernel_1x1 &= plan->p.K[i] == 1;
    if (kernel_1x1 && onednn_1x1_forward_crashes()) return NULL;
    conv_params(plan, strides, dilates, pl, pr);
    if (ACQUIRE(conv_forward_pd(&pd, engine, dnnl_forward_training, out,
                wei, NULL, in, strides, dilates, pl, pr, NULL))
            != dnnl_success)
        return NULL;
    return pd;
}

/* Backward-data pd in compute type @p dt for candidate @p lc. */
dnnl_status_t create_conv_pd(const dgrad_plan_t *plan,
        dnnl_data_type_t dt, const layout_cand_t *lc,
        dnnl_primitive_desc_t *pd) {
    md_t in = MD_EMPTY, wei = MD_EMPTY, out = MD_EMPTY;
    int64_t strides[DGRAD_MAX_SPATIAL], dilates[DGRAD_MAX_SPATIAL];
    int64_t pl[DGRAD_MAX_SPATIAL], pr[DGRAD_MAX_SPATIAL];
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t hint = NULL;
    dnnl_status_t s = md_act(&in, md_ref(&plan->in.io_md), dt, lc->act);
    *pd = NULL;
    if (s == dnnl_success)
        s = md_act(&out, md_ref(&plan->out.io_md), dt, lc->act);
    if (s == dnnl_success)
        s = lc->wei_io ? ACQUIRE(md_copy(&wei, md_ref(&plan->wei.io_md)))
                       : md_any(&wei, md_ref(&plan->wei.io_md), dt);
    conv_params(plan, strides, dilates, pl, pr);
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) {
        hint = forward_hint(plan, md_ref(&in), md_ref(&wei), md_ref(&out));
        s = ACQUIRE(conv_backward_data_pd(pd, engine, md_ref(&out),
                md_ref(&wei), md_ref(&in), strides, dilates, pl, pr, hint,
                attr));
        s = pd_trusted_or_next(pd, s);
        if (s == dnnl_success)
            s = pd_bwd_safe_for_padding(pd, plan->p.nsp, strides, dilates,
                    pl);
    }
    dnnl_primitive_desc_destroy(hint);
    dnnl_primitive_attr_destroy(attr);
    md_free(&in);
    md_free(&wei);
    md_free(&out);
    return s;
}

/* How fast an implementation is likely to be: 0 reference, 1 gemm,
 * 2 anything else (jit, brgemm ...). Used when timings are not taken. */
int impl_rank(const_dnnl_primitive_desc_t pd) {
    const char *name = pd_impl_name(pd);
    return strstr(name, "ref") ? 0 : strstr(name, "gemm") ? 1 : 2;
}

/* Turns @p pd into a step (the primitive keeps its own copy of the pd). */
dnnl_status_t make_step(step_t *step, dnnl_primitive_desc_t pd,
        size_t *scratch_size) {
    md_ref_t md = pd_md(pd, dnnl_query_scratchpad_md);
    if (!md) return dnnl_runtime_error;
    dnnl_status_t s = ACQUIRE(md_copy(&step->scratch_md, md));
    if (s != dnnl_success) return s;
    snprintf(step->impl, sizeof step->impl, "%s", pd_impl_name(pd));
    size_t size = md_size(md);
    step->scratch_bytes = size;
    if (size > *scratch_size) *scratch_size = size;
    return ACQUIRE(dnnl_primitive_create(&step->prim, pd));
}

/* Whether an implementation is oneDNN's generic (slow) one. */
int impl_is_generic(const char *impl) {
    return strstr(impl, "simple") || strstr(impl, "ref");
}

dnnl_status_t reorder_pd_with_attr(dnnl_primitive_desc_t *pd,
        md_ref_t from, md_ref_t to, const_dnnl_primitive_attr_t attr) {
    return ACQUIRE(dnnl_reorder_primitive_desc_create(pd, from, engine, to,
            engine, attr));
}

dnnl_status_t reorder_pd(dnnl_primitive_desc_t *pd, md_ref_t from,
        md_ref_t to) {
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = user_scratchpad_attr(&attr);
    if (s == dnnl_success) s = reorder_pd_with_attr(pd, from, to, attr);
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* The reorder of a path (io -> conv, or conv -> io for the output), or
 * nothing when the layouts are equal. Where oneDNN offers only its
 * generic reorder for the whole tensor, one that runs in chunks with a
 * jit implementation is taken instead, if there is one. */
dnnl_status_t make_reorder(dgrad_plan_t *plan, tensor_path_t *t,
        int to_io) {
    md_ref_t from = md_ref(to_io ? &t->conv_md : &t->io_md);
    md_ref_t to = md_ref(to_io ? &t->io_md : &t->conv_md);
    dnnl_primitive_desc_t pd = NULL, chunk_pd = NULL;
    if (md_equal(from, to)) return dnnl_success;
    dnnl_status_t s = reorder_pd(&pd, from, to);
    chunking_t ch = {0};
    int64_t limit = plan->policy.chunk_bytes;
    int too_big = (int64_t)md_size(from) >= limit
            || (int64_t)md_size(to) >= limit;
    if (s == dnnl_success && too_big
            && (impl_is_generic(pd_impl_name(pd))
                    || limit < DGRAD_PLAN_CHUNK_BYTES)
            && plan_chunks(from, to, limit, &ch)
            && reorder_pd(&chunk_pd, md_ref(&ch.from_md), md_ref(&ch.to_md))
                    == dnnl_success
            && !impl_is_generic(pd_impl_name(chunk_pd))) {
        dnnl_primitive_desc_destroy(pd);
        pd = chunk_pd;
        chunk_pd = NULL;
        chunking_free(&t->reorder.chunks);
        t->reorder.chunks = ch;
        memset(&ch, 0, sizeof ch);
        t->reorder.n_chunks = 1;
        for (int i = 0; i < t->reorder.chunks.ndims; i++)
            t->reorder.n_chunks *= t->reorder.chunks.count[i];
    }
    chunking_free(&ch);
    if (s == dnnl_success) s = make_step(&t->reorder, pd, &plan->scratch_size);
    if (s == dnnl_success) s = reorder_make_safe(&t->reorder, from, to);
    /* Small ones may run as dgrad's own copies (the scatter only into
     * the plan's conv buffer, never the user's output). */
    if (s == dnnl_success)
        s = small_copy_offer(plan, &t->reorder, from, to, to_io);
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(chunk_pd);
    return s;
}

dnnl_status_t scratch_reorder_make(scratch_reorder_t *r, const step_t *step,
        md_ref_t from, md_ref_t to) {
    memset(r, 0, sizeof *r);
    r->from = allocated(dgrad_aligned_alloc(ALIGNMENT, md_size(from) + ALIGNMENT));
    r->to = allocated(dgrad_aligned_alloc(ALIGNMENT, md_size(to) + ALIGNMENT));
    r->scratch = step->scratch_bytes ? allocated(dgrad_aligned_alloc(
            ALIGNMENT, step->scratch_bytes + ALIGNMENT)) : NULL;
    dnnl_status_t s = r->from && r->to && (r->scratch || !step->scratch_bytes)
            ? dnnl_success : dnnl_out_of_memory;
    if (s == dnnl_success)
        s = ACQUIRE(dnnl_stream_create(&r->stream, engine,
                dnnl_stream_default_flags));
    if (s == dnnl_success)
        s = ACQUIRE(dnnl_memory_create(&r->mem[0], from, engine, r->from));
    if (s == dnnl_success)
        s = ACQUIRE(dnnl_memory_create(&r->mem[1], to, engine, r->to));
    if (s == dnnl_success && r->scratch)
        s = ACQUIRE(dnnl_memory_create(&r->mem[2], md_ref(&step->scratch_md),
                engine, r->scratch));
    const int arg[3] = {DNNL_ARG_FROM, DNNL_ARG_TO, DNNL_ARG_SCRATCHPAD};
    for (int i = 0; i < 3; i++)
        r->args[i] = (dnnl_exec_arg_t){arg[i], r->mem[i]};
    r->nargs = r->scratch ? 3 : 2;
    return s;
}

dnnl_status_t scratch_reorder_run(const scratch_reorder_t *r,
        const step_t *step) {
    dnnl_status_t s = DGRAD_FALLIBLE(dnnl_primitive_execute(step->prim,
            r->stream, r->nargs, r->args));
    if (s == dnnl_success) s = dnnl_stream_wait(r->stream);
    if (s != dnnl_success) planning_fail(s);
    return s;
}

void scratch_reorder_free(scratch_reorder_t *r) {
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(r->mem[i]);
    dnnl_stream_destroy(r->stream);
    free(r->from);
    free(r->to);
    free(r->scratch);
    memset(r, 0, sizeof *r);
}

/* Candidate layouts of the [1, Cout, 1...] bias for the binary add, by
 * spatial rank. oneDNN's jit binary wants src1 in the same blocked format
 * as src0 (a plain src1 against an nChw16c src0 falls back to ref:any,
 * 500x slower: ONEDNN_VERBOSE=1 on an ONNX ConvTranspose with bias whose
 * plan is blocked, e.g. `dgrad demo`'s problems with a bias, shows the
 * binary's implementation and time). With all other dims 1, every one of these puts
 * channel c at offset c, so the bias buffer is filled the same way. */
static const dnnl_format_tag_t bias_tags[3][4] = {
        {dnnl_abc, dnnl_aBc16b, dnnl_aBc8b, dnnl_aBc4b},
        {dnnl_abcd, dnnl_aBcd16b, dnnl_aBcd8b, dnnl_aBcd4b},
        {dnnl_abcde, dnnl_aBcde16b, dnnl_aBcde8b, dnnl_aBcde4b}};

/* Binary add pd for the result layout with the bias in layout @p tag. */
static dnnl_status_t create_bias_pd(const dgrad_plan_t *plan,
        dnnl_format_tag_t tag, md_t *bias_md, dnnl_primitive_desc_t *pd) {
    md_ref_t dst = md_ref(&plan->out.conv_md);
    int64_t dims[5] = {1, plan->p.Cout, 1, 1, 1};
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = ACQUIRE(md_tagged(bias_md, md_ndims(dst), dims,
            dnnl_f32, tag));
    *pd = NULL;
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = ACQUIRE(binary_pd(pd, engine, dnnl_binary_add, dst,
                md_ref(bias_md), dst, attr));
    dnnl_primitive_attr_destroy(attr);
    return s;
}

/* The bias add over a dense channels-last result as a 2D add: the result
 * as [N * Y_0..Y_(d-2), Y_(d-1) * C] and the bias repeated along the last
 * spatial axis as [1, Y_(d-1) * C]. oneDNN 2.6's jit binary adds a
 * per-channel [1, C, 1, 1] operand to an nhwc result 2x to 6x slower than
 * that (C = 64, 3, 16: 0.124 ms against 0.0245 ms for 16x128x256 f32 on
 * the Zen 5 machine; a scalar operand takes 0.019 ms), its vector loop
 * restarting every C elements. Not with binary post-ops to carry, whose
 * operands keep the output's dims. dnnl_unimplemented when the result is
 * not such a layout. */
static dnnl_status_t make_tiled_bias_add(dgrad_plan_t *plan) {
    const dgrad_problem_t *p = &plan->p;
    md_ref_t out = md_ref(&plan->out.conv_md);
    md_layout_t l;
    for (int i = 0; i < p->n_post_ops; i++)
        if (dgrad_post_alg_is_binary(p->post_ops[i].alg))
            return dnnl_unimplemented;
    if (!md_layout(out, &l) || l.inner_nblks || l.offset0)
        return dnnl_unimplemented;
    int nd = l.ndims, last = nd - 1;
    int64_t expect = 1;
    for (int d = 0; d < nd; d++)
        if (l.padded_dims[d] != l.dims[d]) return dnnl_unimplemented;
    /* strides: C 1, then the spatial axes innermost last, then N */
    int order[2 + DGRAD_MAX_SPATIAL] = {1};
    for (int d = 0; d < nd - 2; d++) order[1 + d] = last - d;
    order[nd - 1] = 0;
    for (int k = 0; k < nd; k++) {
        if (l.dims[order[k]] > 1 && l.strides[order[k]] != expect)
            return dnnl_unimplemented;
        expect *= l.dims[order[k]];
    }
    int64_t tile = l.dims[last], row = tile * l.dims[1];
    int64_t dims[2] = {expect / row, row}, strides[2] = {row, 1};
    int64_t bdims[2] = {1, row};
    md_t bias = MD_EMPTY;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_status_t s = ACQUIRE(md_strided(&plan->bias_view_md, 2, dims,
            l.dt, strides));
    if (s == dnnl_success)
        s = ACQUIRE(md_tagged(&bias, 2, bdims, dnnl_f32, dnnl_ab));
    if (s == dnnl_success) s = user_scratchpad_attr(&attr);
    if (s == dnnl_success)
        s = ACQUIRE(binary_pd(&pd, engine, dnnl_binary_add,
                md_ref(&plan->bias_view_md), md_ref(&bias),
                md_ref(&plan->bias_view_md), attr));
    dnnl_primitive_attr_destroy(attr);
    if (s == dnnl_success && impl_rank(pd) <= 0) s = dnnl_unimplemented;
    if (s == dnnl_success) s = make_step(&plan->bias_add, pd,
            &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    if (s == dnnl_success) {
        md_move(&plan->bias_md, &bias);
        plan->bias_tile = tile;
        return s;
    }
    md_free(&bias);
    md_free(&plan->bias_view_md);
    return s == dnnl_out_of_memory ? s : dnnl_unimplemented;
}

/* In-place binary add of the per-channel bias (f32, broadcast over N and
 * space) to the convolution result, in the compute type and layout: the
 * row-tiled add over a channels-last result, else the first bias layout
 * that gets a non-reference implementation, else the first that works at
 * all. */
static dnnl_status_t make_bias_add(dgrad_plan_t *plan) {
    dnnl_status_t tiled = make_tiled_bias_add(plan);
    if (tiled != dnnl_unimplemented) return tiled;
    const dnnl_format_tag_t *tags = bias_tags[plan->p.nsp - 1];
    dnnl_primitive_desc_t pd = NULL;
    /* One channel: only the plain bias. oneDNN 2.6's in-place jit add of
     * an aBcd16b [1,1,1,1] bias to an aBcd16b result leaves the result
     * unchanged (the regression test matrix/bias_regressions
     * fails with it; 8b, 4b and every other channel count are right), and
     * with one channel every layout is the same scalar. */
    int n_tags = plan->p.Cout == 1 ? 1 : 4;
    md_t md = MD_EMPTY;
    for (int i = 0; i < n_tags; i++) {
        dnnl_primitive_desc_t cand = NULL;
        if (create_bias_pd(plan, tags[i], &md, &cand) != dnnl_success)
            continue;
        int fast = impl_rank(cand) > 0;
        if (pd && !fast) {
            dnnl_primitive_desc_destroy(cand);
            continue;
        }
        dnnl_primitive_desc_destroy(pd);
        pd = cand;
        md_move(&plan->bias_md, &md);
        if (fast) break;
    }
    md_free(&md);
    if (!pd) return dnnl_unimplemented;
    dnnl_status_t s = make_step(&plan->bias_add, pd, &plan->scratch_size);
    dnnl_primitive_desc_destroy(pd);
    return s;
}

dnnl_status_t step_replace(dgrad_plan_t *plan, step_t *step,
        dnnl_primitive_desc_t pd, dnnl_status_t s) {
    step_t made;
    memset(&made, 0, sizeof made);
    size_t scratch = plan->scratch_size;
    if (s == dnnl_success) s = make_step(&made, pd, &scratch);
    dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success) {
        step_free(&made);
        return s;
    }
    step_free(step);
    *step = made;
    plan->scratch_size = scratch;
    return dnnl_success;
}

dnnl_status_t bias_add_pd(const dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd) {
    md_ref_t dst = md_ref(plan->bias_tile ? &plan->bias_view_md
                                          : &plan->out.conv_md);
    dnnl_status_t s = ACQUIRE(binary_pd(pd, engine, dnnl_binary_add, dst,
            md_ref(&plan->bias_md), dst, attr));
    if (s == dnnl_success && impl_rank(*pd) <= 0) s = dnnl_unimplemented;
    return s;
}

dnnl_status_t bias_add_with_attr(dgrad_plan_t *plan,
        const_dnnl_primitive_attr_t attr) {
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t s = bias_add_pd(plan, attr, &pd);
    return step_replace(plan, &plan->bias_add, pd, s);
}

/* The convolution's layouts of the three tensors, kept by the plan: the
 * input (query @p in_q), the weights, the output (@p out_q). */
dnnl_status_t take_conv_mds(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, dnnl_query_t in_q,
        dnnl_query_t out_q) {
    dnnl_status_t s = ACQUIRE(md_copy(&plan->in.conv_md, pd_md(pd, in_q)));
    if (s == dnnl_success)
        s = ACQUIRE(md_copy(&plan->wei.conv_md,
                pd_md(pd, dnnl_query_weights_md)));
    if (s == dnnl_success)
        s = ACQUIRE(md_copy(&plan->out.conv_md, pd_md(pd, out_q)));
    return s;
}

/* Builds the primitives of a plan around its convolution pd: the
 * convolution, the reorders its layouts need, the bias add. Names the
 * failing step through @p what. */
dnnl_status_t build_primitives(dgrad_plan_t *plan,
        const_dnnl_primitive_desc_t pd, const char **what) {
    *what = "convolution backward data creation";
    dnnl_status_t s = take_conv_mds(plan, pd, dnnl_query_diff_dst_md,
            dnnl_query_diff_src_md);
    snprintf(plan->impl, sizeof plan->impl, "%s", pd_impl_name(pd));
    if (s == dnnl_success)
        s = make_step(&plan->conv, (dnnl_primitive_desc_t)pd,
                &plan->scratch_size);
    if (s != dnnl_success) return s;
    *what = "reorder creation";
    s = make_reorder(plan, &plan->in, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->wei, 0);
    if (s == dnnl_success) s = make_reorder(plan, &plan->out, 1);
    /* Sizes the execute path needs, computed once (oneDNN's
     * dnnl_memory_desc_get_size took 16% of a microsecond execute under
     * `perf record build/dgrad bench` on an ONNX example). */
    plan->prepared_weights_bytes = step_exists(&plan->wei.reorder) || plan->staged
            ? md_size(md_ref(&plan->wei.conv_md)) : 0;
    if (s != dnnl_success || !plan->p.has_bias) return s;
    *what = "bias binary add creation";
    s = make_bias_add(plan);
    if (s == dnnl_success)
        plan->bias_bytes = md_size(md_ref(&plan->bias_md));
    return s;
}

void step_free(step_t *step) {
    dnnl_primitive_destroy(step->prim);
    step->prim = NULL;
    dnnl_primitive_destroy(step->sum_prim);
    step->sum_prim = NULL;
    for (int a = 0; a < MAX_NDIMS; a++) {
        free(step->own_tab[a]);
        step->own_tab[a] = NULL;
    }
    free(step->own_pairs);
    step->own_pairs = NULL;
    md_free(&step->scratch_md);
    chunking_free(&step->chunks);
}

void plan_destroy(dgrad_plan_t *plan) {
    step_t *steps[] = {&plan->conv, &plan->bias_add, &plan->in.reorder,
            &plan->wei.reorder, &plan->out.reorder};
    tensor_path_t *paths[] = {&plan->in, &plan->wei, &plan->out};
    plan_drop_contexts(plan);
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        step_free(steps[i]);
    for (int i = 0; i < 3; i++) {
        md_free(&paths[i]->io_md);
        md_free(&paths[i]->conv_md);
    }
    md_free(&plan->bias_md);
    md_free(&plan->bias_view_md);
    for (int i = 0; i < plan->fold.n_copies; i++) {
        step_free(&plan->fold.copies[i].step);
        md_free(&plan->fold.copies[i].from_md);
        md_free(&plan->fold.copies[i].to_md);
    }
    free(plan->fold.copies);
    free(plan->direct_taps);
    free(plan->direct_lists);
    free(plan->direct_row_vectors);
    free(plan->direct_phase_pair);
    post_pass_free(&plan->post);
    pthread_mutex_destroy(&plan->pool_lock);
    free(plan);
    atomic_fetch_sub(&live_plans, 1);
}

/* A plan with its problem and geometry, no primitives. */
dgrad_plan_t *plan_alloc(const dgrad_problem_t *problem,
        const dgrad_plan_policy_t *policy, int extend_tail) {
    dgrad_plan_t *plan = allocated(dgrad_calloc(1, sizeof *plan));
    if (!plan) return NULL;
    if (pthread_mutex_init(&plan->pool_lock, NULL) != 0) {
        free(plan);
        return NULL;
    }
    atomic_fetch_add(&live_plans, 1);
    atomic_init(&plan->refs, 1);
    atomic_init(&plan->spare, NULL);
    plan->p = *problem;
    plan->policy = *policy;
    plan->elsize = dgrad_data_type_size(problem->dt);
    int any_output = problem->N > 0 && problem->Cout > 0;
    plan->empty = !compute_region(plan, extend_tail) || !any_output;
    return plan;
}
