/*
 * `dgrad bench`'s arbiter (bench/arbiter.c): where dgrad and a baseline
 * differ, the reference reads the same buffers in the user's layouts and
 * says who is wrong. The right output here comes from a loop written in
 * the user's own axis order (not the canonical strides the arbiter
 * derives), for every data and weights layout, with groups, padding and
 * dilation; one side is then spoiled and must be the one blamed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "bench.h"

enum { N = 2, G = 2, CIG = 3, COG = 2, XH = 3, XW = 4, KH = 3, KW = 2,
    S = 2, PH = 1, DW = 2 };
/* Output: H = (XH-1)*S + KH - PH (no end pad), W = (XW-1)*S + (KW-1)*DW + 1. */
enum { YH = (XH - 1) * S + KH - PH, YW = (XW - 1) * S + (KW - 1) * DW + 1 };
enum { CIN = G * CIG, COUT = G * COG };

static float in[N * CIN * XH * XW], wei[CIN * COG * KH * KW],
        right[N * COUT * YH * YW], spoiled[N * COUT * YH * YW];

static size_t act(bench_layout_t l, int64_t C, int64_t H, int64_t W,
        int64_t n, int64_t c, int64_t h, int64_t w) {
    return (size_t)(l == bench_nxc ? ((n * H + h) * W + w) * C + c
                                   : ((n * C + c) * H + h) * W + w);
}

/* OIX: [Cin][Cout/G][KH][KW]; XIO: [KH][KW][Cout/G][Cin]. */
static size_t wix(bench_wlayout_t wl, int64_t ci, int64_t co, int64_t kh,
        int64_t kw) {
    return (size_t)(wl == bench_oix ? ((ci * COG + co) * KH + kh) * KW + kw
                                    : ((kh * KW + kw) * COG + co) * CIN + ci);
}

static void compute_right(bench_layout_t l, bench_wlayout_t wl) {
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        in[i] = (float)((int)(i * 7 % 11) - 5);
    for (size_t i = 0; i < sizeof wei / sizeof wei[0]; i++)
        wei[i] = (float)((int)(i * 5 % 7) - 3);
    memset(right, 0, sizeof right);
    for (int n = 0; n < N; n++)
    for (int g = 0; g < G; g++)
    for (int ci = 0; ci < CIG; ci++)
    for (int co = 0; co < COG; co++)
    for (int h = 0; h < XH; h++)
    for (int w = 0; w < XW; w++)
    for (int kh = 0; kh < KH; kh++)
    for (int kw = 0; kw < KW; kw++) {
        int yh = h * S - PH + kh, yw = w * S + kw * DW;
        if (yh < 0 || yh >= YH || yw < 0 || yw >= YW) continue;
        right[act(l, COUT, YH, YW, n, g * COG + co, yh, yw)] +=
                in[act(l, CIN, XH, XW, n, g * CIG + ci, h, w)]
                * wei[wix(wl, g * CIG + ci, co, kh, kw)];
    }
}

static bench_desc_t desc(void) {
    char text[256], err[256];
    snprintf(text, sizeof text, "g%dmb%dic%dih%diw%doc%doh%dow%dkh%dkw%d"
            "sh%dsw%dph%dpw0dh0dw%d", G, N, CIN, XH, XW, COUT, YH, YW, KH,
            KW, S, S, PH, DW - 1);
    bench_desc_t d;
    cr_assert_eq(bench_desc_parse(text, &d, err, sizeof err), 0, "%s", err);
    return d;
}

Test(bench_arbiter, blames_the_side_that_differs_from_the_reference) {
    bench_desc_t d = desc();
    size_t n = sizeof right / sizeof right[0];
    for (int l = 0; l < 2; l++)
        for (int wl = 0; wl < 2; wl++) {
            compute_right((bench_layout_t)l, (bench_wlayout_t)wl);
            memcpy(spoiled, right, sizeof right);
            /* Three elements off, one of them in the second image. */
            spoiled[1] += 3.0f;
            spoiled[n / 2 + 5] -= 2.0f;
            spoiled[n - 1] = 100.0f;
            bench_verdict_t v = bench_arbiter_decide(&d, dgrad_f32,
                    (bench_layout_t)l, (bench_wlayout_t)wl, in, wei, right,
                    spoiled, dgrad_f32, n, 1e-3, NULL, NULL);
            cr_expect_eq(v.checked, 3, "layout %d/%d", l, wl);
            cr_expect_eq(v.dgrad_wrong, 0, "layout %d/%d", l, wl);
            cr_expect_eq(v.baseline_wrong, 3, "layout %d/%d", l, wl);
            v = bench_arbiter_decide(&d, dgrad_f32, (bench_layout_t)l,
                    (bench_wlayout_t)wl, in, wei, spoiled, right, dgrad_f32,
                    n, 1e-3, NULL, NULL);
            cr_expect_eq(v.checked, 3, "layout %d/%d", l, wl);
            cr_expect_eq(v.dgrad_wrong, 3, "layout %d/%d", l, wl);
            cr_expect_eq(v.baseline_wrong, 0, "layout %d/%d", l, wl);
        }
}

Test(bench_arbiter, checks_nothing_within_the_tolerance) {
    bench_desc_t d = desc();
    size_t n = sizeof right / sizeof right[0];
    compute_right(bench_nxc, bench_xio);
    memcpy(spoiled, right, sizeof right);
    spoiled[4] += 1e-4f;
    bench_verdict_t v = bench_arbiter_decide(&d, dgrad_f32, bench_nxc,
            bench_xio, in, wei, right, spoiled, dgrad_f32, n, 1e-3, NULL, NULL);
    cr_expect_eq(v.checked, 0);
}
