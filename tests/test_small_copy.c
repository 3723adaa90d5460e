/*
 * Small reorders as dgrad's scatter (src/plan/small_copy.c). Where the
 * policy takes it, every byte of its destination, padding included (the
 * destination poisoned first), must equal what oneDNN's reorder between
 * the same layouts writes: weights from the user's layouts into blocked
 * ones (masknet's into AMX's bf16 blocks, 2D and grouped 3D into 16x16
 * blocks, both dims padded) and an input into channel blocks, from a
 * source with gaps between its images. It does not stand in where it
 * must not: policy 0, the timed knob under untimed planning, a tensor
 * past the size limit, a reorder between two types. Timed, whichever
 * wins is right. The plans it enters are checked against the reference
 * in test_onednn.c (onednn/small_copy_*).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_impl.h"

typedef struct copy_case {
    int nd;
    int64_t dims[6];
    int64_t from_strides[6]; /* all 0: from_tag */
    dnnl_format_tag_t from_tag, to_tag;
    dnnl_data_type_t from_dt, to_dt;
    int64_t to_strides[6]; /* all 0: to_tag */
} copy_case_t;

static const copy_case_t fitting[] = {
        /* masknet's weights [OC, IC, K], given K-first (XIO) */
        {3, {64, 3, 7}, {3, 1, 192}, 0, dnnl_ABc16a16b2a, dnnl_bf16,
                dnnl_bf16, {0}},
        {4, {20, 3, 2, 5}, {0}, dnnl_abcd, dnnl_ABcd16a16b, dnnl_f32,
                dnnl_f32, {0}},
        {6, {2, 3, 5, 2, 3, 2}, {0}, dnnl_abcdef, dnnl_aBCdef16c16b,
                dnnl_f32, dnnl_f32, {0}},
        /* NXC input of 2 images 7 elements apart beyond their 3x5x20 */
        {4, {2, 20, 3, 5}, {307, 1, 100, 20}, 0, dnnl_aBcd16b, dnnl_bf16,
                dnnl_bf16, {0}},
};

static void make_mds(const copy_case_t *c, md_t *from, md_t *to) {
    int strided = 0;
    for (int a = 0; a < c->nd; a++) strided |= c->from_strides[a] != 0;
    cr_assert_eq(strided ? md_strided(from, c->nd, c->dims, c->from_dt,
                                   c->from_strides)
                         : md_tagged(from, c->nd, c->dims, c->from_dt,
                                   c->from_tag),
            dnnl_success);
    int to_strided = 0;
    for (int a = 0; a < c->nd; a++) to_strided |= c->to_strides[a] != 0;
    cr_assert_eq(to_strided
                    ? md_strided(to, c->nd, c->dims, c->to_dt, c->to_strides)
                    : md_tagged(to, c->nd, c->dims, c->to_dt, c->to_tag),
            dnnl_success);
}

/* oneDNN's reorder from @p from to @p to as a plan's step. */
static void make_reorder_step(md_ref_t from, md_ref_t to, step_t *step) {
    dnnl_primitive_desc_t pd = NULL;
    size_t scratch = 0;
    memset(step, 0, sizeof *step);
    cr_assert_eq(reorder_pd(&pd, from, to), dnnl_success);
    cr_assert_eq(make_step(step, pd, &scratch), dnnl_success);
    dnnl_primitive_desc_destroy(pd);
}

/* A plan carrying only the policy small_copy_offer reads. */
static dgrad_plan_t *plan_with(int32_t knob, int32_t layout_search) {
    dgrad_plan_t *plan = calloc(1, sizeof *plan);
    cr_assert_not_null(plan);
    plan->policy = dgrad_plan_policy_default();
    plan->policy.small_copy = knob;
    plan->policy.layout_search = layout_search;
    return plan;
}

/* Distinct non-zero bit patterns in every element of the source (gaps
 * included). */
static void *filled_source(md_ref_t from) {
    size_t bytes = md_size(from), es = dnnl_data_type_size(md_data_type(from));
    unsigned char *b = malloc(bytes);
    cr_assert_not_null(b);
    for (size_t i = 0; i < bytes / es; i++) {
        uint32_t v = 0x3f80u + (uint32_t)(i % 0x3000u);
        if (es == 4) v = v << 16 | (uint32_t)(i & 0xffffu);
        memcpy(b + i * es, &v, es);
    }
    return b;
}

/* What @p step writes from @p src, into a destination poisoned with
 * 0xff bytes. */
static void *run_step(const step_t *step, md_ref_t from, md_ref_t to,
        const void *src) {
    unsigned char *dst = malloc(md_size(to));
    cr_assert_not_null(dst);
    memset(dst, 0xff, md_size(to));
    if (step->own) {
        own_reorder_run(step, src, dst);
        return dst;
    }
    void *scratch = step->scratch_bytes ? malloc(step->scratch_bytes) : NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t m[3] = {NULL, NULL, NULL};
    cr_assert_eq(dnnl_stream_create(&stream, engine,
                         dnnl_stream_default_flags), dnnl_success);
    cr_assert_eq(dnnl_memory_create(&m[0], from, engine, (void *)src),
            dnnl_success);
    cr_assert_eq(dnnl_memory_create(&m[1], to, engine, dst), dnnl_success);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}};
    int n = 2;
    if (scratch) {
        cr_assert_eq(dnnl_memory_create(&m[2], md_ref(&step->scratch_md),
                             engine, scratch), dnnl_success);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[2]};
    }
    cr_assert_eq(dnnl_primitive_execute(step->prim, stream, n, args),
            dnnl_success);
    cr_assert_eq(dnnl_stream_wait(stream), dnnl_success);
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(m[i]);
    dnnl_stream_destroy(stream);
    free(scratch);
    return dst;
}

/* Offers dgrad's own copies for case @p c under @p plan's policy, into
 * the user's output where @p into_user; returns which the step became
 * (0: oneDNN's reorder stayed), after checking its bytes against
 * oneDNN's reorder's. */
static int offer_into(const dgrad_plan_t *plan, const copy_case_t *c,
        int into_user) {
    md_t from = MD_EMPTY, to = MD_EMPTY;
    step_t onednn, step;
    cr_assert_eq(engine_init(), dnnl_success);
    make_mds(c, &from, &to);
    /* The bytes to match: oneDNN's reorder where it is right, and where
     * it leaves elements out (3.7.1's jit:uni on AMD Zen 5 with this
     * file's 4-d case: onednn_defects.c) dgrad's copy, which
     * test_onednn_defects.c checks against hand-written addresses. The
     * scatter is offered in place of oneDNN's reorder itself (plans
     * offer it after reorder_make_safe, which on such a version leaves
     * a wrong reorder no scatter to stand in for). */
    make_reorder_step(md_ref(&from), md_ref(&to), &onednn);
    cr_assert_eq(reorder_make_safe(&onednn, md_ref(&from), md_ref(&to)),
            dnnl_success);
    make_reorder_step(md_ref(&from), md_ref(&to), &step);
    cr_assert_eq(small_copy_offer(plan, &step, md_ref(&from), md_ref(&to),
                         into_user),
            dnnl_success);
    int taken = step.own;
    if (taken) {
        cr_assert_null(step.prim);
        cr_assert(taken == OWN_COPY_SCATTER
                || taken == OWN_COPY_CHANNEL_BLOCKS);
        cr_assert(!into_user || taken == OWN_COPY_CHANNEL_BLOCKS,
                "the scatter into the user's output");
        cr_assert_str_eq(step.impl, taken == OWN_COPY_SCATTER
                        ? "dgrad:scatter" : "dgrad:channel_blocks");
    } else {
        cr_assert_not_null(step.prim);
        cr_assert_eq(reorder_make_safe(&step, md_ref(&from), md_ref(&to)),
                dnnl_success);
    }
    void *src = filled_source(md_ref(&from));
    unsigned char *want = run_step(&onednn, md_ref(&from), md_ref(&to), src);
    unsigned char *got = run_step(&step, md_ref(&from), md_ref(&to), src);
    size_t bytes = md_size(md_ref(&to));
    size_t first = 0;
    while (first < bytes && got[first] == want[first]) first++;
    cr_assert_eq(first, bytes, "%d-d case: byte %zu of %zu differs (%s)",
            c->nd, first, bytes, step.impl);
    free(src);
    free(want);
    free(got);
    step_free(&onednn);
    step_free(&step);
    md_free(&from);
    md_free(&to);
    return taken;
}

/* The same into a plan's own buffer. */
static int offer_and_compare(const dgrad_plan_t *plan, const copy_case_t *c) {
    return offer_into(plan, c, 0);
}

Test(small_copy, the_scatter_writes_what_onednn_reorders) {
    dgrad_plan_t *plan = plan_with(2, 1);
    for (size_t i = 0; i < sizeof fitting / sizeof fitting[0]; i++)
        cr_assert_eq(offer_and_compare(plan, &fitting[i]), OWN_COPY_SCATTER,
                "case %zu", i);
    free(plan);
}

Test(small_copy, timed_whichever_wins_is_right) {
    dgrad_plan_t *plan = plan_with(1, 1);
    for (size_t i = 0; i < sizeof fitting / sizeof fitting[0]; i++)
        cr_log_info("case %zu: %s", i,
                offer_and_compare(plan, &fitting[i]) ? "scatter" : "oneDNN");
    free(plan);
}

Test(small_copy, not_where_it_must_not_stand_in) {
    /* policy 0; the timed knob when planning is untimed */
    dgrad_plan_t *never = plan_with(0, 1), *untimed = plan_with(1, 0);
    for (size_t i = 0; i < sizeof fitting / sizeof fitting[0]; i++) {
        cr_assert_not(offer_and_compare(never, &fitting[i]), "case %zu", i);
        cr_assert_not(offer_and_compare(untimed, &fitting[i]), "case %zu", i);
    }
    /* past the size limit (64 KiB a side): 128x129 f32 into 16x16
     * blocks is 66 KB; and a conversion between two types */
    dgrad_plan_t *always = plan_with(2, 1);
    const copy_case_t big = {2, {128, 129}, {0}, dnnl_ab, dnnl_AB16a16b,
            dnnl_f32, dnnl_f32, {0}};
    const copy_case_t edge = {2, {128, 128}, {0}, dnnl_ab, dnnl_AB16a16b,
            dnnl_f32, dnnl_f32, {0}};
    const copy_case_t types = {4, {20, 3, 2, 5}, {0}, dnnl_abcd,
            dnnl_ABcd16a16b, dnnl_f32, dnnl_bf16, {0}};
    cr_assert_not(offer_and_compare(always, &big));
    cr_assert(offer_and_compare(always, &edge)); /* 64 KiB exactly */
    cr_assert_not(offer_and_compare(always, &types));
    free(never);
    free(untimed);
    free(always);
}

/* Plain activations into 16-channel blocks and back (channel_blocks.c):
 * 1D to 3D, every type, channels past the last whole block (20, 40) and
 * pixel runs past the last 16 (27, 60, 9), images with gaps between
 * them on the plain side. */
static const copy_case_t channel_blocked[] = {
        {3, {2, 256, 27}, {0}, dnnl_abc, dnnl_aBc16b, dnnl_bf16, dnnl_bf16,
                {0}},
        {3, {2, 20, 27}, {20 * 27 + 7, 27, 1}, 0, dnnl_aBc16b, dnnl_f16,
                dnnl_f16, {0}},
        {4, {2, 40, 6, 10}, {0}, dnnl_abcd, dnnl_aBcd16b, dnnl_f32,
                dnnl_f32, {0}},
        {5, {1, 20, 3, 1, 3}, {0}, dnnl_abcde, dnnl_aBcde16b, dnnl_bf16,
                dnnl_bf16, {0}},
        {4, {3, 17, 3, 3}, {17 * 9 + 5, 9, 3, 1}, 0, dnnl_aBcd16b,
                dnnl_f32, dnnl_f32, {0}},
};

/* Case @p c the other way: from its blocks into its plain layout. */
static copy_case_t unblocked(const copy_case_t *c) {
    copy_case_t u = *c;
    u.from_tag = c->to_tag;
    u.to_tag = c->from_tag;
    memset(u.from_strides, 0, sizeof u.from_strides);
    memcpy(u.to_strides, c->from_strides, sizeof u.to_strides);
    return u;
}

/* Whether this CPU runs the channel blocks copy of type @p dt. */
static int cpu_runs_channel_blocks(dnnl_data_type_t dt) {
    return cpu_has_avx512f()
            && (dnnl_data_type_size(dt) == 4 || cpu_has_avx512bw());
}

Test(small_copy, channel_blocks_write_what_onednn_reorders) {
    dgrad_plan_t *always = plan_with(2, 1), *timed = plan_with(1, 1);
    for (size_t i = 0; i < sizeof channel_blocked / sizeof *channel_blocked;
            i++) {
        const copy_case_t *c = &channel_blocked[i];
        copy_case_t back = unblocked(c);
        int runs = cpu_runs_channel_blocks(c->from_dt);
        /* into a plan's buffer the scatter where the CPU has no AVX-512 */
        cr_assert_eq(offer_into(always, c, 0),
                runs ? OWN_COPY_CHANNEL_BLOCKS : OWN_COPY_SCATTER,
                "case %zu", i);
        /* into the user's output only the channel blocks, which leave
         * the bytes between its images as they were */
        cr_assert_eq(offer_into(always, &back, 1),
                runs ? OWN_COPY_CHANNEL_BLOCKS : 0, "case %zu back", i);
        cr_log_info("case %zu timed: %d, back %d", i,
                offer_into(timed, c, 0), offer_into(timed, &back, 1));
    }
    /* a channels-last tensor does not fit, into the user's output the
     * scatter is not offered */
    cr_assert_eq(offer_into(always, &fitting[3], 0), OWN_COPY_SCATTER);
    copy_case_t nxc_back = unblocked(&fitting[3]);
    cr_assert_eq(offer_into(always, &nxc_back, 1), 0);
    free(always);
    free(timed);
}
