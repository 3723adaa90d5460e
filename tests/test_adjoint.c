/*
 * The adjoint property of DESIGN.md section 1: for the oneDNN Graph dialect,
 * <Convolution(x, W), dy> == <ConvolutionBackwardData(dy, W), x>, where
 * Convolution is oneDNN's own forward primitive with the same strides,
 * dilations, pads and groups. The forward pads for SAME are computed here
 * with the forward convolution's rule, independently of src/problem.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <oneapi/dnnl/dnnl.h>

#include "plan/onednn_compat.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dgrad/dgrad.h"

typedef struct adj_case {
    const char *auto_pad; /* "explicit", "SAME_UPPER", "SAME_LOWER" */
    int nsp;
    long N, G, Cx, Cy;    /* Cx: channels of x (forward src = our output), Cy: of dy */
    long Y[3], K[3], S[3], D[3], pl[3], pr[3]; /* pads used for explicit */
} adj_case_t;

static void fill(float *v, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

#define DNNL_OK(call) cr_assert_eq((call), dnnl_success, "%s failed", #call)

/* Forward convolution with oneDNN: dst[N, Cy, X] = conv(src[N, Cx, Y]). */
static void forward(const adj_case_t *c, const long *X, const long *pl,
        const long *pr, const float *src, const float *wei, float *dst) {
    dnnl_engine_t eng;
    dnnl_stream_t strm;
    DNNL_OK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    int nd = 2 + c->nsp;
    int64_t sd[5] = {c->N, c->Cx}, dd[5] = {c->N, c->Cy}, wd[6] = {0};
    int64_t st[3] = {0}, di[3] = {0}, l[3] = {0}, r[3] = {0};
    int wn = 0;
    if (c->G > 1) wd[wn++] = c->G;
    wd[wn++] = c->Cy / c->G;
    wd[wn++] = c->Cx / c->G;
    for (int i = 0; i < c->nsp; i++) {
        sd[2 + i] = c->Y[i];
        dd[2 + i] = X[i];
        wd[wn++] = c->K[i];
        st[i] = c->S[i];
        di[i] = c->D[i] - 1;
        l[i] = pl[i];
        r[i] = pr[i];
    }
    static const dnnl_format_tag_t plain[] = {dnnl_a, dnnl_ab, dnnl_abc,
        dnnl_abcd, dnnl_abcde, dnnl_abcdef};
    md_t smd = MD_EMPTY, wmd = MD_EMPTY, dmd = MD_EMPTY;
    DNNL_OK(md_tagged(&smd, nd, sd, dnnl_f32, plain[nd - 1]));
    DNNL_OK(md_tagged(&dmd, nd, dd, dnnl_f32, plain[nd - 1]));
    DNNL_OK(md_tagged(&wmd, wn, wd, dnnl_f32, plain[wn - 1]));
    dnnl_primitive_desc_t pd;
    DNNL_OK(conv_forward_pd(&pd, eng, dnnl_forward_inference, md_ref(&smd),
            md_ref(&wmd), NULL, md_ref(&dmd), st, di, l, r, NULL));
    dnnl_primitive_t prim;
    DNNL_OK(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t ms, mw, md;
    DNNL_OK(dnnl_memory_create(&ms, md_ref(&smd), eng, (void *)src));
    DNNL_OK(dnnl_memory_create(&mw, md_ref(&wmd), eng, (void *)wei));
    DNNL_OK(dnnl_memory_create(&md, md_ref(&dmd), eng, dst));
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw},
        {DNNL_ARG_DST, md}};
    DNNL_OK(dnnl_primitive_execute(prim, strm, 3, args));
    DNNL_OK(dnnl_stream_wait(strm));
    dnnl_memory_destroy(ms);
    dnnl_memory_destroy(mw);
    dnnl_memory_destroy(md);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    md_free(&smd);
    md_free(&wmd);
    md_free(&dmd);
}

static void check_adjoint(const adj_case_t *c) {
    long X[3] = {1, 1, 1}, pl[3] = {0}, pr[3] = {0};
    for (int i = 0; i < c->nsp; i++) {
        long kr = (c->K[i] - 1) * c->D[i] + 1;
        if (!strcmp(c->auto_pad, "explicit")) {
            pl[i] = c->pl[i];
            pr[i] = c->pr[i];
            X[i] = (c->Y[i] + pl[i] + pr[i] - kr) / c->S[i] + 1;
        } else { /* forward SAME: X = ceil(Y/S), pads split, odd unit by mode */
            X[i] = (c->Y[i] + c->S[i] - 1) / c->S[i];
            long total = (X[i] - 1) * c->S[i] + kr - c->Y[i];
            if (total < 0) total = 0;
            pl[i] = !strcmp(c->auto_pad, "SAME_UPPER") ? total / 2 : (total + 1) / 2;
            pr[i] = total - pl[i];
        }
    }
    size_t nx = (size_t)(c->N * c->Cx), ny = (size_t)(c->N * c->Cy),
           nw = (size_t)(c->Cx / c->G * c->Cy);
    for (int i = 0; i < c->nsp; i++) {
        nx *= (size_t)c->Y[i];
        ny *= (size_t)X[i];
        nw *= (size_t)c->K[i];
    }
    float *x = malloc(nx * 4), *dy = malloc(ny * 4), *w = malloc(nw * 4);
    float *conv = malloc(ny * 4), *bwd = malloc(nx * 4);
    fill(x, nx, 1);
    fill(dy, ny, 2);
    fill(w, nw, 3);
    forward(c, X, pl, pr, x, w, conv);

    /* dgrad: diff_dst dy [N, Cy, X], weights OIX [Cy, Cx/G, K] (the same
     * bytes as the forward goi weights), dst_shape [N, Cx, Y]. */
    dgrad_op_t *op;
    cr_assert_eq(dgrad_op_create(&op, 0, dgrad_op_convolution_backward_data, NULL), 0);
    int64_t v[5], dims[5], wdims[5];
    int n = c->nsp;
    for (int i = 0; i < n; i++) v[i] = c->S[i];
    cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_strides, v, n), 0);
    for (int i = 0; i < n; i++) v[i] = c->D[i];
    cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_dilations, v, n), 0);
    for (int i = 0; i < n; i++) v[i] = c->pl[i];
    cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_begin, v, n), 0);
    for (int i = 0; i < n; i++) v[i] = c->pr[i];
    cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_pads_end, v, n), 0);
    cr_assert_eq(dgrad_op_set_attr_s64(op, dgrad_op_attr_groups, c->G), 0);
    cr_assert_eq(dgrad_op_set_attr_str(op, dgrad_op_attr_auto_pad, c->auto_pad), 0);
    cr_assert_eq(dgrad_op_set_attr_str(op, dgrad_op_attr_data_format, "NCX"), 0);
    cr_assert_eq(dgrad_op_set_attr_str(op, dgrad_op_attr_weights_format, "OIX"), 0);
    v[0] = c->N;
    v[1] = c->Cx;
    for (int i = 0; i < n; i++) v[2 + i] = c->Y[i];
    cr_assert_eq(dgrad_op_set_attr_s64s(op, dgrad_op_attr_dst_shape, v, n + 2), 0);
    dims[0] = c->N;
    dims[1] = c->Cy;
    wdims[0] = c->Cy;
    wdims[1] = c->Cx / c->G;
    for (int i = 0; i < n; i++) {
        dims[2 + i] = X[i];
        wdims[2 + i] = c->K[i];
    }
    dgrad_logical_tensor_t lts[2], out;
    dgrad_logical_tensor_init(&lts[0], 0, dgrad_f32, n + 2, dims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&lts[1], 1, dgrad_f32, n + 2, wdims,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_logical_tensor_init(&out, 2, dgrad_f32, n + 2, v,
            dgrad_layout_type_strided, dgrad_property_type_variable);
    dgrad_compiled_op_t *cop;
    cr_assert_eq(dgrad_compiled_op_create(&cop, op, 2, lts, &out), 0, "%s",
            dgrad_last_error_message());
    const void *bufs[] = {dy, w};
    cr_assert_eq(dgrad_compiled_op_execute(cop, 2, bufs, bwd), 0, "%s",
            dgrad_last_error_message());

    double lhs = 0, rhs = 0, mag = 0;
    for (size_t i = 0; i < ny; i++) {
        lhs += (double)conv[i] * dy[i];
        mag += fabs((double)conv[i] * dy[i]);
    }
    for (size_t i = 0; i < nx; i++) rhs += (double)bwd[i] * x[i];
    cr_expect(fabs(lhs - rhs) <= 1e-5 * mag + 1e-6,
            "%s: <conv(x),dy> = %.9g but <bwd(dy),x> = %.9g", c->auto_pad,
            lhs, rhs);
    dgrad_compiled_op_destroy(cop);
    dgrad_op_destroy(op);
    free(x);
    free(dy);
    free(w);
    free(conv);
    free(bwd);
}

Test(adjoint, explicit_pads) {
    const adj_case_t cases[] = {
        {"explicit", 2, 2, 1, 5, 7, {9, 8}, {3, 4}, {2, 3}, {1, 1}, {1, 0}, {2, 1}},
        {"explicit", 2, 1, 2, 6, 4, {11, 7}, {3, 2}, {3, 1}, {2, 2}, {2, 1}, {0, 1}},
        {"explicit", 1, 3, 1, 17, 3, {20}, {5}, {2}, {1}, {3}, {0}},
        {"explicit", 3, 1, 1, 3, 4, {6, 5, 7}, {3, 2, 3}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_adjoint(&cases[i]);
}

Test(adjoint, same_pads) {
    const adj_case_t cases[] = {
        {"SAME_UPPER", 2, 1, 1, 1, 1, {6, 6}, {4, 4}, {1, 1}, {1, 1}, {0}, {0}},
        {"SAME_LOWER", 2, 1, 1, 1, 1, {6, 6}, {4, 4}, {1, 1}, {1, 1}, {0}, {0}},
        {"SAME_UPPER", 2, 2, 1, 5, 3, {9, 10}, {3, 4}, {2, 3}, {1, 1}, {0}, {0}},
        {"SAME_LOWER", 2, 2, 1, 5, 3, {9, 10}, {3, 4}, {2, 3}, {1, 1}, {0}, {0}},
        {"SAME_UPPER", 1, 1, 2, 4, 6, {13}, {4}, {3}, {2}, {0}, {0}},
        {"SAME_LOWER", 3, 1, 1, 2, 3, {5, 6, 7}, {2, 3, 4}, {2, 2, 3}, {1, 1, 1}, {0}, {0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_adjoint(&cases[i]);
}
