/*
 * Reorders checked before use and dgrad's own copy (src/plan/
 * onednn_defects.c). The copy is compared with ABcd16a16b addresses written
 * out by hand here (not through the layer's own addressing), padding
 * included; the check passes oneDNN's correct reorders and, on oneDNN
 * 3.7.0-3.8.0, catches the defective one (1x1x2x2 f32 weights into
 * ABcd16a16b keep one element of four, oneDNN issue #3280), which
 * reorder_make_safe then replaces by the copy. Convolutions given an
 * output whose batch stride is not the dense one (the box of a plan that
 * computes its tail) either compute right or are distrusted (pd_untrusted),
 * and so is 2.6's AMX brgemm forward convolution, which reads past a heap
 * block as it is created. The predicate that fences 3.x's brgemm backward
 * data off results with positions no tap reaches is checked on shapes
 * worked out by hand.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "plan/plan_impl.h"

/* Offset of [a][b][h][w] in ABcd16a16b with dims A x B x H x W. */
static int64_t abcd16a16b(int64_t B, int64_t H, int64_t W, int64_t a,
        int64_t b, int64_t h, int64_t w) {
    int64_t bb = (B + 15) / 16;
    return (((a / 16 * bb + b / 16) * H + h) * W + w) * 256 + a % 16 * 16
            + b % 16;
}

/* A step reordering plain @p dims (abcd) into ABcd16a16b. */
static void make_blocked_step(const int64_t *dims, md_t *from, md_t *to,
        step_t *step) {
    cr_assert_eq(engine_init(), dnnl_success);
    cr_assert_eq(md_tagged(from, 4, dims, dnnl_f32, dnnl_abcd), dnnl_success);
    cr_assert_eq(md_tagged(to, 4, dims, dnnl_f32, dnnl_ABcd16a16b),
            dnnl_success);
    dnnl_primitive_desc_t pd = NULL;
    size_t scratch = 0;
    memset(step, 0, sizeof *step);
    cr_assert_eq(reorder_pd(&pd, md_ref(from), md_ref(to)), dnnl_success);
    cr_assert_eq(make_step(step, pd, &scratch), dnnl_success);
    dnnl_primitive_desc_destroy(pd);
}

static void free_step(step_t *step, md_t *from, md_t *to) {
    for (int a = 0; a < MAX_NDIMS; a++) free(step->own_tab[a]);
    dnnl_primitive_destroy(step->prim);
    md_free(&step->scratch_md);
    md_free(from);
    md_free(to);
}

/* dgrad's copy of the step against the hand-written addresses, padding
 * zero. */
static void check_copy(const step_t *step, const int64_t *d) {
    int64_t n = d[0] * d[1] * d[2] * d[3];
    int64_t blocked = (d[0] + 15) / 16 * 16 * ((d[1] + 15) / 16 * 16) * d[2]
            * d[3];
    float *src = malloc((size_t)n * 4), *dst = malloc((size_t)blocked * 4);
    for (int64_t i = 0; i < n; i++) src[i] = (float)(i + 1);
    for (int64_t i = 0; i < blocked; i++) dst[i] = NAN;
    own_reorder_run(step, src, dst);
    int64_t seen = 0;
    for (int64_t a = 0; a < d[0]; a++)
        for (int64_t b = 0; b < d[1]; b++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++) {
                    float want = src[((a * d[1] + b) * d[2] + h) * d[3] + w];
                    float got = dst[abcd16a16b(d[1], d[2], d[3], a, b, h, w)];
                    cr_assert_eq(got, want, "[%ld][%ld][%ld][%ld]", (long)a,
                            (long)b, (long)h, (long)w);
                    seen++;
                }
    for (int64_t i = 0; i < blocked; i++)
        if (dst[i] == 0) seen++;
    cr_assert_eq(seen, blocked, "padding not zero");
    free(src);
    free(dst);
}

/* Whether oneDNN's reorder of @p step puts every element of plain dims
 * @p d at its hand-written ABcd16a16b address: the test's own judgement
 * of the reorder, independent of reorder_check. */
static int onednn_reorder_right(const step_t *step, md_ref_t from,
        md_ref_t to, const int64_t *d) {
    int64_t n = d[0] * d[1] * d[2] * d[3];
    float *src = malloc((size_t)n * 4), *dst = malloc(md_size(to));
    void *scratch = step->scratch_bytes ? malloc(step->scratch_bytes) : NULL;
    cr_assert(src && dst);
    for (int64_t i = 0; i < n; i++) src[i] = (float)(i + 1);
    for (size_t i = 0; i < md_size(to) / 4; i++) dst[i] = NAN;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t m[3] = {NULL, NULL, NULL};
    cr_assert_eq(dnnl_stream_create(&stream, engine,
                         dnnl_stream_default_flags), dnnl_success);
    cr_assert_eq(dnnl_memory_create(&m[0], from, engine, src), dnnl_success);
    cr_assert_eq(dnnl_memory_create(&m[1], to, engine, dst), dnnl_success);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, m[0]}, {DNNL_ARG_TO, m[1]}};
    int nargs = 2;
    if (scratch) {
        cr_assert_eq(dnnl_memory_create(&m[2], md_ref(&step->scratch_md),
                             engine, scratch), dnnl_success);
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, m[2]};
    }
    cr_assert_eq(dnnl_primitive_execute(step->prim, stream, nargs, args),
            dnnl_success);
    cr_assert_eq(dnnl_stream_wait(stream), dnnl_success);
    int right = 1;
    for (int64_t a = 0; a < d[0]; a++)
        for (int64_t b = 0; b < d[1]; b++)
            for (int64_t h = 0; h < d[2]; h++)
                for (int64_t w = 0; w < d[3]; w++)
                    right &= dst[abcd16a16b(d[1], d[2], d[3], a, b, h, w)]
                            == src[((a * d[1] + b) * d[2] + h) * d[3] + w];
    for (int i = 0; i < 3; i++) dnnl_memory_destroy(m[i]);
    dnnl_stream_destroy(stream);
    free(src);
    free(dst);
    free(scratch);
    return right;
}

Test(reorder_check, own_copy_writes_blocked_weights_and_zero_padding) {
    const int64_t shapes[3][4] = {{1, 1, 2, 2}, {1, 1, 3, 3}, {20, 3, 2, 5}};
    for (int s = 0; s < 3; s++) {
        md_t from = MD_EMPTY, to = MD_EMPTY;
        step_t step;
        make_blocked_step(shapes[s], &from, &to, &step);
        /* Made into dgrad's copy whatever oneDNN's reorder does. */
        cr_assert_eq(own_copy_make(&step, md_ref(&from), md_ref(&to)),
                dnnl_success);
        check_copy(&step, shapes[s]);
        free_step(&step, &from, &to);
    }
}

Test(reorder_check, passes_a_right_reorder_and_catches_a_wrong_one) {
    /* Plain to channels-last: right in every oneDNN dgrad was tried on. */
    const int64_t dims[4] = {2, 5, 3, 4};
    md_t from = MD_EMPTY, to = MD_EMPTY;
    cr_assert_eq(engine_init(), dnnl_success);
    cr_assert_eq(md_tagged(&from, 4, dims, dnnl_f32, dnnl_abcd), dnnl_success);
    cr_assert_eq(md_tagged(&to, 4, dims, dnnl_f32, dnnl_acdb), dnnl_success);
    dnnl_primitive_desc_t pd = NULL;
    size_t scratch = 0;
    step_t step;
    memset(&step, 0, sizeof step);
    cr_assert_eq(reorder_pd(&pd, md_ref(&from), md_ref(&to)), dnnl_success);
    cr_assert_eq(make_step(&step, pd, &scratch), dnnl_success);
    dnnl_primitive_desc_destroy(pd);
    cr_assert_eq(reorder_check(&step, md_ref(&from), md_ref(&to)),
            dnnl_success);
    free_step(&step, &from, &to);

    /* The defective case: wrong on 3.7.0-3.8.0 where oneDNN picks its
     * jit reorder for it (AVX-512 machines; an AVX2-only EPYC gets a
     * right one), caught there and made safe. */
    const int64_t w[4] = {1, 1, 2, 2};
    make_blocked_step(w, &from, &to, &step);
    const dnnl_version_t *v = dnnl_version();
    int defective = !onednn_reorder_right(&step, md_ref(&from), md_ref(&to),
            w);
    cr_log_info("oneDNN's %s reorder of 1x1x2x2 weights: %s", step.impl,
            defective ? "wrong" : "right");
    cr_expect(!defective || reorder_check_wanted(), "a wrong reorder on "
            "oneDNN %d.%d.%d, which is not checked", v->major, v->minor,
            v->patch);
    dnnl_status_t s = reorder_check(&step, md_ref(&from), md_ref(&to));
    if (!defective) {
        cr_assert_eq(s, dnnl_success, "oneDNN %d.%d.%d", v->major, v->minor,
                v->patch);
        free_step(&step, &from, &to);
        return;
    }
    cr_assert_eq(s, dnnl_unimplemented);
    cr_assert_eq(reorder_make_safe(&step, md_ref(&from), md_ref(&to)),
            dnnl_success);
    cr_assert(step.own);
    cr_assert_null(step.prim);
    cr_assert_str_eq(step.impl, "dgrad:copy");
    check_copy(&step, w);
    free_step(&step, &from, &to);
}

/* A grouped backward-data convolution in channels-last whose diff_src
 * images are one row taller than the box oneDNN writes (batch stride
 * 168 for a dense 144), the layouts of an output-tail plan, in @p dt with
 * weights given as @p wtag (format_tag_any: oneDNN's choice, reordered
 * from plain): whichever implementation oneDNN picks, dgrad either
 * distrusts it or its result is right in every element of the box and
 * untouched outside it. On oneDNN 3.7.1 the picks are gemm:jit (f32,
 * decab weights) and brgconv_strided (bf16), both of which write the
 * second image at the dense offset. */
static void relaxed_batch_stride_case(dgrad_data_type_t dt,
        dnnl_format_tag_t wtag) {
    enum { N = 2, G = 2, OC = 2, IC = 3, H = 3, W = 2, KH = 3, KW = 2, S = 2,
        IH = 5, IW = 4, ROWS = IH + 1 };
    enum { NX = N * H * W * G * OC, NW = G * OC * IC * KH * KW,
        NY = N * ROWS * IW * G * IC };
    const dnnl_data_type_t odt = dt == dgrad_f32 ? dnnl_f32 : dnnl_bf16;
    const int64_t pad_l[2] = {1, 0};
    const int64_t pad_r[2] = {(H - 1) * S + KH - IH - pad_l[0],
            (W - 1) * S + KW - IW - pad_l[1]};
    const int64_t strides[2] = {S, S}, dilates[2] = {0, 0};
    const int64_t dd[4] = {N, G * OC, H, W}, sd[4] = {N, G * IC, IH, IW},
            wd[5] = {G, OC, IC, KH, KW};
    const int64_t s_str[4] = {(int64_t)ROWS * IW * G * IC, 1, IW * G * IC,
            G * IC};
    md_t dmd = MD_EMPTY, smd = MD_EMPTY, wmd = MD_EMPTY, wplain = MD_EMPTY;
    cr_assert_eq(engine_init(), dnnl_success);
    cr_assert_eq(md_tagged(&dmd, 4, dd, odt, dnnl_acdb), dnnl_success);
    cr_assert_eq(md_strided(&smd, 4, sd, odt, s_str), dnnl_success);
    cr_assert_eq(md_tagged(&wmd, 5, wd, odt, wtag), dnnl_success);
    cr_assert_eq(md_tagged(&wplain, 5, wd, odt, dnnl_decab), dnnl_success);
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    dnnl_status_t st = conv_forward_pd(&hint, engine, dnnl_forward_training,
            md_ref(&smd), md_ref(&wmd), NULL, md_ref(&dmd), strides, dilates,
            pad_l, pad_r, NULL);
    if (st == dnnl_success)
        st = conv_backward_data_pd(&pd, engine, md_ref(&smd), md_ref(&wmd),
                md_ref(&dmd), strides, dilates, pad_l, pad_r, hint, NULL);
    dnnl_primitive_desc_destroy(hint);
    {
        /* The same problem on a dense output stays trusted: the guard
         * refuses the relaxed stride, not the implementation. */
        md_t dense = MD_EMPTY;
        dnnl_primitive_desc_t h = NULL, dpd = NULL;
        cr_assert_eq(md_tagged(&dense, 4, sd, odt, dnnl_acdb), dnnl_success);
        if (conv_forward_pd(&h, engine, dnnl_forward_training,
                    md_ref(&dense), md_ref(&wmd), NULL, md_ref(&dmd),
                    strides, dilates, pad_l, pad_r, NULL) == dnnl_success
                && conv_backward_data_pd(&dpd, engine, md_ref(&dense),
                        md_ref(&wmd), md_ref(&dmd), strides, dilates, pad_l,
                        pad_r, h, NULL) == dnnl_success)
            cr_expect_not(pd_untrusted(dpd), "%s on a dense output",
                    pd_impl_name(dpd));
        dnnl_primitive_desc_destroy(dpd);
        dnnl_primitive_desc_destroy(h);
        md_free(&dense);
    }
    if (st != dnnl_success || pd_untrusted(pd)) {
        /* Refused by oneDNN or by dgrad: nothing to run. */
        cr_log_info("%s: %s", dgrad_data_type_name(dt), st != dnnl_success
                        ? "no primitive" : pd_impl_name(pd));
        dnnl_primitive_desc_destroy(pd);
        md_free(&dmd), md_free(&smd), md_free(&wmd), md_free(&wplain);
        return;
    }
    static float want[NY];
    static char x[NX * 4], w[NW * 4], y[NY * 4];
    /* w in decab order: [kh][kw][ic][g][oc]. */
    for (int i = 0; i < NX; i++) dgrad_store(x, dt, i, i * 7 % 11 - 5);
    for (int i = 0; i < NW; i++) dgrad_store(w, dt, i, i * 5 % 7 - 3);
    for (int i = 0; i < NY; i++) {
        dgrad_store(y, dt, i, -7.0);
        want[i] = -7.0f;
    }
    for (int n = 0; n < N; n++)
        for (int ih = 0; ih < IH; ih++)
            for (int iw = 0; iw < IW; iw++)
                for (int c = 0; c < G * IC; c++)
                    want[((n * ROWS + ih) * IW + iw) * G * IC + c] = 0.0f;
    for (int n = 0; n < N; n++) for (int g = 0; g < G; g++)
    for (int oc = 0; oc < OC; oc++) for (int h = 0; h < H; h++)
    for (int ww = 0; ww < W; ww++) for (int ic = 0; ic < IC; ic++)
    for (int kh = 0; kh < KH; kh++) for (int kw = 0; kw < KW; kw++) {
        int ih = h * S - (int)pad_l[0] + kh, iw = ww * S - (int)pad_l[1] + kw;
        if (ih < 0 || ih >= IH || iw < 0 || iw >= IW) continue;
        want[((n * ROWS + ih) * IW + iw) * G * IC + g * IC + ic] += (float)(
                dgrad_load(x, dt, ((n * H + h) * W + ww) * G * OC + g * OC + oc)
                * dgrad_load(w, dt,
                        (((kh * KW + kw) * IC + ic) * G + g) * OC + oc));
    }
    md_ref_t pwmd = pd_md(pd, dnnl_query_weights_md);
    void *wbuf = calloc(1, md_size(pwmd) + 64);
    cr_assert(wbuf);
    dnnl_primitive_t prim = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_memory_t mx = NULL, mw0 = NULL, mw = NULL, my = NULL;
    cr_assert_eq(dnnl_stream_create(&stream, engine,
            dnnl_stream_default_flags), dnnl_success);
    cr_assert_eq(dnnl_memory_create(&mx, md_ref(&dmd), engine, x),
            dnnl_success);
    cr_assert_eq(dnnl_memory_create(&mw0, md_ref(&wplain), engine, w),
            dnnl_success);
    cr_assert_eq(dnnl_memory_create(&mw, pwmd, engine, wbuf), dnnl_success);
    cr_assert_eq(dnnl_memory_create(&my, md_ref(&smd), engine, y),
            dnnl_success);
    if (md_equal(pwmd, md_ref(&wplain))) {
        memcpy(wbuf, w, md_size(pwmd));
    } else {
        /* dgrad's own copy (oneDNN 3.7's reorders may leave elements
         * out; the copy is checked above). */
        step_t step;
        memset(&step, 0, sizeof step);
        cr_assert_eq(own_copy_make(&step, md_ref(&wplain), pwmd),
                dnnl_success);
        own_reorder_run(&step, w, wbuf);
        for (int a = 0; a < MAX_NDIMS; a++) free(step.own_tab[a]);
    }
    cr_assert_eq(dnnl_primitive_create(&prim, pd), dnnl_success);
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_DIFF_DST, mx},
            {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_SRC, my}};
    cr_assert_eq(dnnl_primitive_execute(prim, stream, 3, args), dnnl_success);
    cr_assert_eq(dnnl_stream_wait(stream), dnnl_success);
    int bad = 0, first = -1;
    for (int i = 0; i < NY; i++)
        if (dgrad_load(y, dt, i) != want[i] && bad++ == 0) first = i;
    cr_expect_eq(bad, 0, "%s %s, trusted by dgrad, got %d of %d elements "
            "wrong (first at %d: %g, want %g)", dgrad_data_type_name(dt),
            pd_impl_name(pd), bad, NY, first,
            first >= 0 ? dgrad_load(y, dt, first) : 0.0,
            first >= 0 ? want[first] : 0.0);
    dnnl_memory_destroy(mx), dnnl_memory_destroy(mw0);
    dnnl_memory_destroy(mw), dnnl_memory_destroy(my);
    free(wbuf);
    dnnl_stream_destroy(stream);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    md_free(&dmd), md_free(&smd), md_free(&wmd), md_free(&wplain);
}

Test(pd_untrusted, relaxed_batch_stride_computes_right_or_is_refused) {
    relaxed_batch_stride_case(dgrad_f32, dnnl_decab);
    relaxed_batch_stride_case(dgrad_bf16, dnnl_format_tag_any);
}

/* Where oneDNN's first implementation is one dgrad distrusts (on 3.7,
 * plain NCHW data gets the jit_uni_ncsp_convolution wrapper), the next one
 * oneDNN offers is taken (on 3.7.1: gemm:jit), with the forward hint
 * still alive; a trusted first pick is kept as it is. */
Test(pd_untrusted, an_untrusted_pick_gives_way_to_the_next) {
    const int64_t dd[4] = {1, 1, 3, 3}, sd[4] = {1, 2, 5, 5},
            wd[4] = {1, 2, 3, 3};
    const int64_t strides[2] = {1, 1}, dilates[2] = {0, 0},
            pad[2] = {0, 0};
    md_t dmd = MD_EMPTY, smd = MD_EMPTY, wmd = MD_EMPTY;
    cr_assert_eq(engine_init(), dnnl_success);
    cr_assert_eq(md_tagged(&dmd, 4, dd, dnnl_f32, dnnl_abcd), dnnl_success);
    cr_assert_eq(md_tagged(&smd, 4, sd, dnnl_f32, dnnl_abcd), dnnl_success);
    /* Weights [O=diff_dst channels][I=diff_src channels][kh][kw]. */
    cr_assert_eq(md_tagged(&wmd, 4, wd,
            dnnl_f32, dnnl_format_tag_any), dnnl_success);
    dnnl_primitive_desc_t hint = NULL, pd = NULL;
    cr_assert_eq(conv_forward_pd(&hint, engine, dnnl_forward_training,
            md_ref(&smd), md_ref(&wmd), NULL, md_ref(&dmd), strides, dilates,
            pad, pad, NULL), dnnl_success);
    cr_assert_eq(conv_backward_data_pd(&pd, engine, md_ref(&smd),
            md_ref(&wmd), md_ref(&dmd), strides, dilates, pad, pad, hint,
            NULL), dnnl_success);
    char first[128];
    snprintf(first, sizeof first, "%s", pd_impl_name(pd));
    int was_untrusted = pd_untrusted(pd);
    cr_assert_eq(pd_trusted_or_next(&pd, dnnl_success), dnnl_success,
            "no trusted implementation after %s", first);
    dnnl_primitive_desc_destroy(hint);
    cr_log_info("first %s, taken %s", first, pd_impl_name(pd));
    cr_expect_not(pd_untrusted(pd), "%s", pd_impl_name(pd));
    if (was_untrusted)
        cr_expect_str_neq(pd_impl_name(pd), first);
    else
        cr_expect_str_eq(pd_impl_name(pd), first);
    const dnnl_version_t *v = dnnl_version();
    /* 3.7's plain-layout wrappers are distrusted wherever it picks
     * them (AVX-512 machines; an AVX2-only EPYC gets other kernels). */
    if (v->major == 3 && v->minor == 7 && strstr(first,
                "jit_uni_ncsp_convolution"))
        cr_expect(was_untrusted, "3.7 picked %s for plain data", first);
    dnnl_primitive_desc_destroy(pd);
    md_free(&dmd), md_free(&smd), md_free(&wmd);
}

/* oneDNN 2.6.3's AMX brgemm forward convolution reads past a heap block
 * as it is created (onednn_defects.c, amx_brgemm_over_reads): on 2.x,
 * every implementation oneDNN offers for a bf16 channels-last 3x3
 * convolution is trusted except that one, and pd_trusted_or_next moves
 * from it to the next; the crash it guards against needs a guard page
 * after the block (Electric Fence), so the test checks the steering.
 * Where the CPU has no AMX, oneDNN never offers it and the test says so. */
/* The bf16 channels-last 3x3 forward convolution of the AMX check: its
 * first implementation, or NULL where oneDNN has none. oneDNN's bf16
 * convolutions need AVX-512 (avx512_core: F, BW, VL, DQ) or, on 3.x, the
 * AVX2 VNNI-NE extension; an AVX2-only CPU (AMD EPYC Zen 3) gets none on
 * 2.6 or 3.7, so NULL is accepted only where the CPU lacks AVX-512 BW. */
static dnnl_primitive_desc_t amx_case_pd(void) {
    const int64_t sd[4] = {1, 32, 8, 8}, wd[4] = {32, 32, 3, 3},
            dd[4] = {1, 32, 8, 8};
    const int64_t strides[2] = {1, 1}, dilates[2] = {0, 0},
            pad[2] = {1, 1};
    md_t smd = MD_EMPTY, wmd = MD_EMPTY, dmd = MD_EMPTY;
    cr_assert_eq(engine_init(), dnnl_success);
    cr_assert_eq(md_tagged(&smd, 4, sd, dnnl_bf16, dnnl_acdb), dnnl_success);
    cr_assert_eq(md_tagged(&wmd, 4, wd, dnnl_bf16, dnnl_format_tag_any),
            dnnl_success);
    cr_assert_eq(md_tagged(&dmd, 4, dd, dnnl_bf16, dnnl_acdb), dnnl_success);
    dnnl_primitive_desc_t pd = NULL;
    dnnl_status_t st = conv_forward_pd(&pd, engine, dnnl_forward_inference,
            md_ref(&smd), md_ref(&wmd), NULL, md_ref(&dmd), strides, dilates,
            pad, pad, NULL);
    md_free(&smd), md_free(&wmd), md_free(&dmd);
    if (st == dnnl_unimplemented && !cpu_has_avx512bw()) return NULL;
    cr_assert_eq(st, dnnl_success, "bf16 convolution: status %d", (int)st);
    return pd;
}

#define AMX_CASE_IMPLS 32

/* The implementations oneDNN lists for @p pd's operation, by 2.x's own
 * iterator (the walk pd_next_impl must make there); 0 on 3.x. */
static int listed_impls(const_dnnl_primitive_desc_t pd,
        char names[AMX_CASE_IMPLS][128]) {
    int n = 0;
#if DNNL_VERSION_MAJOR < 3
    const_dnnl_op_desc_t op = NULL;
    dnnl_engine_t eng = NULL;
    const_dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_iterator_t it = NULL;
    cr_assert_eq(dnnl_primitive_desc_query(pd, dnnl_query_op_d, 0, &op),
            dnnl_success);
    cr_assert_eq(dnnl_primitive_desc_query(pd, dnnl_query_engine, 0, &eng),
            dnnl_success);
    cr_assert_eq(dnnl_primitive_desc_get_attr(pd, &attr), dnnl_success);
    cr_assert_eq(dnnl_primitive_desc_iterator_create(&it, op, attr, eng,
                         NULL), dnnl_success);
    do {
        dnnl_primitive_desc_t c = dnnl_primitive_desc_iterator_fetch(it);
        if (!c || n == AMX_CASE_IMPLS) break;
        snprintf(names[n++], 128, "%s", pd_impl_name(c));
        dnnl_primitive_desc_destroy(c);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    dnnl_primitive_desc_iterator_destroy(it);
#else
    (void)pd;
    (void)names;
#endif
    return n;
}

Test(pd_untrusted, amx_brgemm_forward_gives_way_on_2_6) {
    dnnl_primitive_desc_t pd = amx_case_pd();
    if (!pd)
        cr_skip_test("oneDNN offers no bf16 convolution on this CPU "
                     "(no AVX-512 BW)");
    int two = dnnl_version()->major == 2, amx_seen = 0;
    char first[128], second[128] = "", listed[AMX_CASE_IMPLS][128];
    int n_listed = listed_impls(pd, listed);
    snprintf(first, sizeof first, "%s", pd_impl_name(pd));
    for (int k = 0;; k++) {
        const char *impl = pd_impl_name(pd);
        if (k == 1) snprintf(second, sizeof second, "%s", impl);
        /* on 2.x, every implementation in the iterator's order */
        if (k < n_listed)
            cr_expect_str_eq(impl, listed[k], "implementation %d", k);
        int amx = !strncmp(impl, "brgconv:avx512_core_amx", 23);
        amx_seen |= amx;
        cr_expect_eq(pd_untrusted(pd), two && amx, "%s on oneDNN %d: %s",
                impl, dnnl_version()->major,
                pd_untrusted(pd) ? "distrusted" : "trusted");
        if (pd_next_impl(&pd) != dnnl_success) break;
    }
    dnnl_primitive_desc_destroy(pd);
    pd = amx_case_pd();
    int first_untrusted = pd_untrusted(pd);
    cr_assert_eq(pd_trusted_or_next(&pd, dnnl_success), dnnl_success);
    cr_log_info("first %s, taken %s", first, pd_impl_name(pd));
    if (two)
        cr_expect(strncmp(pd_impl_name(pd), "brgconv:avx512_core_amx", 23),
                "took %s", pd_impl_name(pd));
    /* the implementation oneDNN lists right after the distrusted one */
    if (first_untrusted)
        cr_expect_str_eq(pd_impl_name(pd), second);
    dnnl_primitive_desc_destroy(pd);
    if (!amx_seen)
        cr_skip_test("no AMX brgemm convolution offered (first: %s)", first);
}

/* The probe behind eltwise_params_shared, as measured on the versions
 * dgrad was tried with: oneDNN 2.6.3 mixes up the parameters (its
 * jit:uni binary kernel), 3.7.1 does not. Other versions are measured
 * at run time and logged here. */
Test(eltwise_params, the_probe_matches_the_measured_versions) {
    cr_assert_eq(engine_init(), dnnl_success);
    const dnnl_version_t *v = dnnl_version();
    int shared = eltwise_params_shared();
    cr_log_info("oneDNN %d.%d.%d: eltwise post-op parameters %s", v->major,
            v->minor, v->patch, shared ? "shared" : "kept apart");
    if (v->major == 2 && v->minor == 6 && v->patch == 3)
        cr_expect_eq(shared, 1);
    if (v->major == 3 && v->minor == 7 && v->patch == 1)
        cr_expect_eq(shared, 0);
}

/* Whether plain f32 backward-data pd of 3D result @p Y (3 channels) from
 * input @p X (2 channels) under window @p K, strides @p S, oneDNN
 * dilations @p di and pads @p pl / @p pr has a result position no tap
 * reaches, as pd_bwd_safe_for_padding reads it. */
static int no_tap_case(const int64_t *Y, const int64_t *X, const int64_t *K,
        const int64_t *S, const int64_t *di, const int64_t *pl,
        const int64_t *pr) {
    cr_assert_eq(engine_init(), dnnl_success);
    int64_t sd[5] = {1, 3, Y[0], Y[1], Y[2]}, dd[5] = {1, 2, X[0], X[1], X[2]};
    int64_t wd[5] = {2, 3, K[0], K[1], K[2]};
    md_t smd = MD_EMPTY, dmd = MD_EMPTY, wmd = MD_EMPTY;
    cr_assert_eq(md_tagged(&smd, 5, sd, dnnl_f32, dnnl_abcde), dnnl_success);
    cr_assert_eq(md_tagged(&dmd, 5, dd, dnnl_f32, dnnl_abcde), dnnl_success);
    cr_assert_eq(md_tagged(&wmd, 5, wd, dnnl_f32, dnnl_abcde), dnnl_success);
    dnnl_primitive_desc_t pd = NULL;
    cr_assert_eq(conv_backward_data_pd(&pd, engine, md_ref(&smd),
                         md_ref(&wmd), md_ref(&dmd), S, di, pl, pr, NULL,
                         NULL),
            dnnl_success);
    int none = pd_positions_without_taps(pd, 3, S, di, pl);
    dnnl_primitive_desc_destroy(pd);
    md_free(&smd);
    md_free(&dmd);
    md_free(&wmd);
    return none;
}

/* The predicate behind the fence on 3.x's brgemm backward data, on
 * every machine (the crash it guards against needs AMX): sweep-full#2574's
 * shape, where depth position 0 reads positions -1 and 1 of an axis of
 * 1; the same with no front padding, where it reads 0; and a window of 1
 * at stride 2, where odd positions of the last axis have no tap. */
Test(pd_bwd_safe_for_padding, finds_result_positions_no_tap_reaches) {
    const int64_t one[3] = {1, 1, 1}, zero[3] = {0, 0, 0};
    const int64_t Y[3] = {1, 1, 5}, X[3] = {1, 1, 2}, K[3] = {2, 1, 4};
    const int64_t di[3] = {1, 1, 0};
    const int64_t pl_front[3] = {1, 0, 0}, pr_front[3] = {1, 0, 0};
    const int64_t pr_back[3] = {2, 0, 0};
    cr_expect_eq(no_tap_case(Y, X, K, one, di, pl_front, pr_front), 1,
            "depth position 0 reads -1 and 1 of an axis of 1");
    cr_expect_eq(no_tap_case(Y, X, K, one, di, zero, pr_back), 0,
            "depth position 0 reads position 0");
    const int64_t Xs[3] = {1, 1, 3}, S2[3] = {1, 1, 2};
    cr_expect_eq(no_tap_case(Y, Xs, one, S2, zero, zero, zero), 1,
            "a window of 1 at stride 2 leaves odd positions without taps");
    const int64_t K2[3] = {1, 1, 2}, Y6[3] = {1, 1, 6};
    cr_expect_eq(no_tap_case(Y6, Xs, K2, S2, zero, zero, zero), 0,
            "a window of 2 at stride 2 reaches every position");
}
